
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/adapters/standalone/connection.cpp" "adapters/standalone/CMakeFiles/csgi_standalone.dir/connection.cpp.o" "gcc" "adapters/standalone/CMakeFiles/csgi_standalone.dir/connection.cpp.o.d"
  "/work/main/adapters/standalone/listen.cpp" "adapters/standalone/CMakeFiles/csgi_standalone.dir/listen.cpp.o" "gcc" "adapters/standalone/CMakeFiles/csgi_standalone.dir/listen.cpp.o.d"
  "/work/main/adapters/standalone/options.cpp" "adapters/standalone/CMakeFiles/csgi_standalone.dir/options.cpp.o" "gcc" "adapters/standalone/CMakeFiles/csgi_standalone.dir/options.cpp.o.d"
  "/work/main/adapters/standalone/server.cpp" "adapters/standalone/CMakeFiles/csgi_standalone.dir/server.cpp.o" "gcc" "adapters/standalone/CMakeFiles/csgi_standalone.dir/server.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/bindings/build/temp.linux-x86_64-cpython-311/cmake/core/CMakeFiles/csgi_core.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
