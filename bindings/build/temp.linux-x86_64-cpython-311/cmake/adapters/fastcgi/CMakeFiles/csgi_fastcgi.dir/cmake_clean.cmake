file(REMOVE_RECURSE
  "CMakeFiles/csgi_fastcgi.dir/options.cpp.o"
  "CMakeFiles/csgi_fastcgi.dir/options.cpp.o.d"
  "CMakeFiles/csgi_fastcgi.dir/server.cpp.o"
  "CMakeFiles/csgi_fastcgi.dir/server.cpp.o.d"
  "libcsgi_fastcgi.a"
  "libcsgi_fastcgi.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/csgi_fastcgi.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
