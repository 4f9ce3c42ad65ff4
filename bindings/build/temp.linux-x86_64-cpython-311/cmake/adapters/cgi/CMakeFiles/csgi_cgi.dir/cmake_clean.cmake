file(REMOVE_RECURSE
  "CMakeFiles/csgi_cgi.dir/cgi.cpp.o"
  "CMakeFiles/csgi_cgi.dir/cgi.cpp.o.d"
  "CMakeFiles/csgi_cgi.dir/gateway.cpp.o"
  "CMakeFiles/csgi_cgi.dir/gateway.cpp.o.d"
  "CMakeFiles/csgi_cgi.dir/response_writer.cpp.o"
  "CMakeFiles/csgi_cgi.dir/response_writer.cpp.o.d"
  "CMakeFiles/csgi_cgi.dir/spool_input.cpp.o"
  "CMakeFiles/csgi_cgi.dir/spool_input.cpp.o.d"
  "libcsgi_cgi.a"
  "libcsgi_cgi.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/csgi_cgi.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
