file(REMOVE_RECURSE
  "libcsgi_cgi.a"
)
