file(REMOVE_RECURSE
  "CMakeFiles/csgi_standalone.dir/connection.cpp.o"
  "CMakeFiles/csgi_standalone.dir/connection.cpp.o.d"
  "CMakeFiles/csgi_standalone.dir/listen.cpp.o"
  "CMakeFiles/csgi_standalone.dir/listen.cpp.o.d"
  "CMakeFiles/csgi_standalone.dir/options.cpp.o"
  "CMakeFiles/csgi_standalone.dir/options.cpp.o.d"
  "CMakeFiles/csgi_standalone.dir/server.cpp.o"
  "CMakeFiles/csgi_standalone.dir/server.cpp.o.d"
  "libcsgi_standalone.a"
  "libcsgi_standalone.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/csgi_standalone.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
