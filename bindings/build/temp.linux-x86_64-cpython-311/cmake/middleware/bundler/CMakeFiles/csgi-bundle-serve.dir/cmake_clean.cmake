file(REMOVE_RECURSE
  "CMakeFiles/csgi-bundle-serve.dir/serve_tool.cpp.o"
  "CMakeFiles/csgi-bundle-serve.dir/serve_tool.cpp.o.d"
  "csgi-bundle-serve"
  "csgi-bundle-serve.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/csgi-bundle-serve.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
