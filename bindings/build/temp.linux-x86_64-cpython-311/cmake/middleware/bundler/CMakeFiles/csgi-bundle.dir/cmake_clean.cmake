file(REMOVE_RECURSE
  "CMakeFiles/csgi-bundle.dir/csgi_bundle_tool.cpp.o"
  "CMakeFiles/csgi-bundle.dir/csgi_bundle_tool.cpp.o.d"
  "csgi-bundle"
  "csgi-bundle.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/csgi-bundle.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
