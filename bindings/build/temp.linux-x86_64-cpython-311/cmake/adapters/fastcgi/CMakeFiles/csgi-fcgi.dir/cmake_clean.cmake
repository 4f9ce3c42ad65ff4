file(REMOVE_RECURSE
  "CMakeFiles/csgi-fcgi.dir/main.cpp.o"
  "CMakeFiles/csgi-fcgi.dir/main.cpp.o.d"
  "csgi-fcgi"
  "csgi-fcgi.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/csgi-fcgi.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
