file(REMOVE_RECURSE
  "libcsgi_standalone.a"
)
