file(REMOVE_RECURSE
  "CMakeFiles/csgi_cli.dir/demo.cpp.o"
  "CMakeFiles/csgi_cli.dir/demo.cpp.o.d"
  "CMakeFiles/csgi_cli.dir/main.cpp.o"
  "CMakeFiles/csgi_cli.dir/main.cpp.o.d"
  "CMakeFiles/csgi_cli.dir/modes.cpp.o"
  "CMakeFiles/csgi_cli.dir/modes.cpp.o.d"
  "CMakeFiles/csgi_cli.dir/options.cpp.o"
  "CMakeFiles/csgi_cli.dir/options.cpp.o.d"
  "csgi"
  "csgi.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/csgi_cli.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
