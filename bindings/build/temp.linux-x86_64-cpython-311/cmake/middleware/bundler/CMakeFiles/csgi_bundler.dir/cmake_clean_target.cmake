file(REMOVE_RECURSE
  "libcsgi_bundler.a"
)
