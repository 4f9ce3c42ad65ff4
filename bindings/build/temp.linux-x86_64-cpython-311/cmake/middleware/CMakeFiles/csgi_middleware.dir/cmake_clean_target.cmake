file(REMOVE_RECURSE
  "libcsgi_middleware.a"
)
