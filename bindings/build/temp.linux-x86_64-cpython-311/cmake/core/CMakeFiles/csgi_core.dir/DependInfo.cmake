
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/core/app_library.cpp" "core/CMakeFiles/csgi_core.dir/app_library.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/app_library.cpp.o.d"
  "/work/main/core/builder.cpp" "core/CMakeFiles/csgi_core.dir/builder.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/builder.cpp.o.d"
  "/work/main/core/cookie.cpp" "core/CMakeFiles/csgi_core.dir/cookie.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/cookie.cpp.o.d"
  "/work/main/core/env.cpp" "core/CMakeFiles/csgi_core.dir/env.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/env.cpp.o.d"
  "/work/main/core/extensions.cpp" "core/CMakeFiles/csgi_core.dir/extensions.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/extensions.cpp.o.d"
  "/work/main/core/http_date.cpp" "core/CMakeFiles/csgi_core.dir/http_date.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/http_date.cpp.o.d"
  "/work/main/core/io.cpp" "core/CMakeFiles/csgi_core.dir/io.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/io.cpp.o.d"
  "/work/main/core/lint.cpp" "core/CMakeFiles/csgi_core.dir/lint.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/lint.cpp.o.d"
  "/work/main/core/multipart.cpp" "core/CMakeFiles/csgi_core.dir/multipart.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/multipart.cpp.o.d"
  "/work/main/core/on_response.cpp" "core/CMakeFiles/csgi_core.dir/on_response.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/on_response.cpp.o.d"
  "/work/main/core/percent.cpp" "core/CMakeFiles/csgi_core.dir/percent.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/percent.cpp.o.d"
  "/work/main/core/query.cpp" "core/CMakeFiles/csgi_core.dir/query.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/query.cpp.o.d"
  "/work/main/core/range.cpp" "core/CMakeFiles/csgi_core.dir/range.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/range.cpp.o.d"
  "/work/main/core/request.cpp" "core/CMakeFiles/csgi_core.dir/request.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/request.cpp.o.d"
  "/work/main/core/request_env.cpp" "core/CMakeFiles/csgi_core.dir/request_env.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/request_env.cpp.o.d"
  "/work/main/core/response.cpp" "core/CMakeFiles/csgi_core.dir/response.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/response.cpp.o.d"
  "/work/main/core/response_builder.cpp" "core/CMakeFiles/csgi_core.dir/response_builder.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/response_builder.cpp.o.d"
  "/work/main/core/server_stats.cpp" "core/CMakeFiles/csgi_core.dir/server_stats.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/server_stats.cpp.o.d"
  "/work/main/core/test_client.cpp" "core/CMakeFiles/csgi_core.dir/test_client.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/test_client.cpp.o.d"
  "/work/main/core/url_map.cpp" "core/CMakeFiles/csgi_core.dir/url_map.cpp.o" "gcc" "core/CMakeFiles/csgi_core.dir/url_map.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
