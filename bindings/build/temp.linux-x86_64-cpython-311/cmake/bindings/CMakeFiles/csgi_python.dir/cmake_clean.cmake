file(REMOVE_RECURSE
  "CMakeFiles/csgi_python.dir/src/from_wsgi.cpp.o"
  "CMakeFiles/csgi_python.dir/src/from_wsgi.cpp.o.d"
  "CMakeFiles/csgi_python.dir/src/gil.cpp.o"
  "CMakeFiles/csgi_python.dir/src/gil.cpp.o.d"
  "CMakeFiles/csgi_python.dir/src/middleware.cpp.o"
  "CMakeFiles/csgi_python.dir/src/middleware.cpp.o.d"
  "CMakeFiles/csgi_python.dir/src/module.cpp.o"
  "CMakeFiles/csgi_python.dir/src/module.cpp.o.d"
  "CMakeFiles/csgi_python.dir/src/py_streams.cpp.o"
  "CMakeFiles/csgi_python.dir/src/py_streams.cpp.o.d"
  "CMakeFiles/csgi_python.dir/src/to_wsgi.cpp.o"
  "CMakeFiles/csgi_python.dir/src/to_wsgi.cpp.o.d"
  "python/csgi/_csgi.cpython-311-x86_64-linux-gnu.so"
  "python/csgi/_csgi.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang CXX)
  include(CMakeFiles/csgi_python.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
