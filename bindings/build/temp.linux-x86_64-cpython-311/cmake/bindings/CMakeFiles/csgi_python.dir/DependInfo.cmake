
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/bindings/src/from_wsgi.cpp" "bindings/CMakeFiles/csgi_python.dir/src/from_wsgi.cpp.o" "gcc" "bindings/CMakeFiles/csgi_python.dir/src/from_wsgi.cpp.o.d"
  "/work/main/bindings/src/gil.cpp" "bindings/CMakeFiles/csgi_python.dir/src/gil.cpp.o" "gcc" "bindings/CMakeFiles/csgi_python.dir/src/gil.cpp.o.d"
  "/work/main/bindings/src/middleware.cpp" "bindings/CMakeFiles/csgi_python.dir/src/middleware.cpp.o" "gcc" "bindings/CMakeFiles/csgi_python.dir/src/middleware.cpp.o.d"
  "/work/main/bindings/src/module.cpp" "bindings/CMakeFiles/csgi_python.dir/src/module.cpp.o" "gcc" "bindings/CMakeFiles/csgi_python.dir/src/module.cpp.o.d"
  "/work/main/bindings/src/py_streams.cpp" "bindings/CMakeFiles/csgi_python.dir/src/py_streams.cpp.o" "gcc" "bindings/CMakeFiles/csgi_python.dir/src/py_streams.cpp.o.d"
  "/work/main/bindings/src/to_wsgi.cpp" "bindings/CMakeFiles/csgi_python.dir/src/to_wsgi.cpp.o" "gcc" "bindings/CMakeFiles/csgi_python.dir/src/to_wsgi.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/bindings/build/temp.linux-x86_64-cpython-311/cmake/core/CMakeFiles/csgi_core.dir/DependInfo.cmake"
  "/work/main/bindings/build/temp.linux-x86_64-cpython-311/cmake/middleware/CMakeFiles/csgi_middleware.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
