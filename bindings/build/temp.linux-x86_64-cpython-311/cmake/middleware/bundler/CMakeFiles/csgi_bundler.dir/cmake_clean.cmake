file(REMOVE_RECURSE
  "CMakeFiles/csgi_bundler.dir/bundler.cpp.o"
  "CMakeFiles/csgi_bundler.dir/bundler.cpp.o.d"
  "CMakeFiles/csgi_bundler.dir/js_scan.cpp.o"
  "CMakeFiles/csgi_bundler.dir/js_scan.cpp.o.d"
  "CMakeFiles/csgi_bundler.dir/loader_js.cpp.o"
  "CMakeFiles/csgi_bundler.dir/loader_js.cpp.o.d"
  "CMakeFiles/csgi_bundler.dir/module_graph.cpp.o"
  "CMakeFiles/csgi_bundler.dir/module_graph.cpp.o.d"
  "CMakeFiles/csgi_bundler.dir/resolver.cpp.o"
  "CMakeFiles/csgi_bundler.dir/resolver.cpp.o.d"
  "libcsgi_bundler.a"
  "libcsgi_bundler.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/csgi_bundler.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
