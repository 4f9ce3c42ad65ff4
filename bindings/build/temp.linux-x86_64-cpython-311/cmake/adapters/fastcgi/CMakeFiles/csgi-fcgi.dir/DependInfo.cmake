
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/adapters/fastcgi/main.cpp" "adapters/fastcgi/CMakeFiles/csgi-fcgi.dir/main.cpp.o" "gcc" "adapters/fastcgi/CMakeFiles/csgi-fcgi.dir/main.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/bindings/build/temp.linux-x86_64-cpython-311/cmake/adapters/fastcgi/CMakeFiles/csgi_fastcgi.dir/DependInfo.cmake"
  "/work/main/bindings/build/temp.linux-x86_64-cpython-311/cmake/adapters/cgi/CMakeFiles/csgi_cgi.dir/DependInfo.cmake"
  "/work/main/bindings/build/temp.linux-x86_64-cpython-311/cmake/core/CMakeFiles/csgi_core.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
