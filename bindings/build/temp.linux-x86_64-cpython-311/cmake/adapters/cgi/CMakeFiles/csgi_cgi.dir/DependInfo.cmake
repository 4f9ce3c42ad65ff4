
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/adapters/cgi/cgi.cpp" "adapters/cgi/CMakeFiles/csgi_cgi.dir/cgi.cpp.o" "gcc" "adapters/cgi/CMakeFiles/csgi_cgi.dir/cgi.cpp.o.d"
  "/work/main/adapters/cgi/gateway.cpp" "adapters/cgi/CMakeFiles/csgi_cgi.dir/gateway.cpp.o" "gcc" "adapters/cgi/CMakeFiles/csgi_cgi.dir/gateway.cpp.o.d"
  "/work/main/adapters/cgi/response_writer.cpp" "adapters/cgi/CMakeFiles/csgi_cgi.dir/response_writer.cpp.o" "gcc" "adapters/cgi/CMakeFiles/csgi_cgi.dir/response_writer.cpp.o.d"
  "/work/main/adapters/cgi/spool_input.cpp" "adapters/cgi/CMakeFiles/csgi_cgi.dir/spool_input.cpp.o" "gcc" "adapters/cgi/CMakeFiles/csgi_cgi.dir/spool_input.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/bindings/build/temp.linux-x86_64-cpython-311/cmake/core/CMakeFiles/csgi_core.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
