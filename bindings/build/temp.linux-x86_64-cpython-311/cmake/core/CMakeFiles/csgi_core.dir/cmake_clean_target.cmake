file(REMOVE_RECURSE
  "libcsgi_core.a"
)
