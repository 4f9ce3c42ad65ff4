file(REMOVE_RECURSE
  "libcsgi_fastcgi.a"
)
