file(REMOVE_RECURSE
  "CMakeFiles/csgi-cgi.dir/main.cpp.o"
  "CMakeFiles/csgi-cgi.dir/main.cpp.o.d"
  "csgi-cgi"
  "csgi-cgi.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/csgi-cgi.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
