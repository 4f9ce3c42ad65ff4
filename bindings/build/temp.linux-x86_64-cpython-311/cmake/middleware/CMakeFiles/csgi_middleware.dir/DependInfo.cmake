
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/middleware/accept_encoding.cpp" "middleware/CMakeFiles/csgi_middleware.dir/accept_encoding.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/accept_encoding.cpp.o.d"
  "/work/main/middleware/access.cpp" "middleware/CMakeFiles/csgi_middleware.dir/access.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/access.cpp.o.d"
  "/work/main/middleware/access_log.cpp" "middleware/CMakeFiles/csgi_middleware.dir/access_log.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/access_log.cpp.o.d"
  "/work/main/middleware/auth_basic.cpp" "middleware/CMakeFiles/csgi_middleware.dir/auth_basic.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/auth_basic.cpp.o.d"
  "/work/main/middleware/cascade.cpp" "middleware/CMakeFiles/csgi_middleware.dir/cascade.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/cascade.cpp.o.d"
  "/work/main/middleware/cgi_bin.cpp" "middleware/CMakeFiles/csgi_middleware.dir/cgi_bin.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/cgi_bin.cpp.o.d"
  "/work/main/middleware/cidr.cpp" "middleware/CMakeFiles/csgi_middleware.dir/cidr.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/cidr.cpp.o.d"
  "/work/main/middleware/conditional_get.cpp" "middleware/CMakeFiles/csgi_middleware.dir/conditional_get.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/conditional_get.cpp.o.d"
  "/work/main/middleware/content_length.cpp" "middleware/CMakeFiles/csgi_middleware.dir/content_length.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/content_length.cpp.o.d"
  "/work/main/middleware/deflate.cpp" "middleware/CMakeFiles/csgi_middleware.dir/deflate.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/deflate.cpp.o.d"
  "/work/main/middleware/directory.cpp" "middleware/CMakeFiles/csgi_middleware.dir/directory.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/directory.cpp.o.d"
  "/work/main/middleware/discard_body.cpp" "middleware/CMakeFiles/csgi_middleware.dir/discard_body.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/discard_body.cpp.o.d"
  "/work/main/middleware/error_document.cpp" "middleware/CMakeFiles/csgi_middleware.dir/error_document.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/error_document.cpp.o.d"
  "/work/main/middleware/head.cpp" "middleware/CMakeFiles/csgi_middleware.dir/head.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/head.cpp.o.d"
  "/work/main/middleware/htpasswd.cpp" "middleware/CMakeFiles/csgi_middleware.dir/htpasswd.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/htpasswd.cpp.o.d"
  "/work/main/middleware/http_exceptions.cpp" "middleware/CMakeFiles/csgi_middleware.dir/http_exceptions.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/http_exceptions.cpp.o.d"
  "/work/main/middleware/log_writer.cpp" "middleware/CMakeFiles/csgi_middleware.dir/log_writer.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/log_writer.cpp.o.d"
  "/work/main/middleware/mime_types.cpp" "middleware/CMakeFiles/csgi_middleware.dir/mime_types.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/mime_types.cpp.o.d"
  "/work/main/middleware/path_safety.cpp" "middleware/CMakeFiles/csgi_middleware.dir/path_safety.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/path_safety.cpp.o.d"
  "/work/main/middleware/request_id.cpp" "middleware/CMakeFiles/csgi_middleware.dir/request_id.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/request_id.cpp.o.d"
  "/work/main/middleware/reverse_proxy.cpp" "middleware/CMakeFiles/csgi_middleware.dir/reverse_proxy.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/reverse_proxy.cpp.o.d"
  "/work/main/middleware/runtime.cpp" "middleware/CMakeFiles/csgi_middleware.dir/runtime.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/runtime.cpp.o.d"
  "/work/main/middleware/server_status.cpp" "middleware/CMakeFiles/csgi_middleware.dir/server_status.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/server_status.cpp.o.d"
  "/work/main/middleware/static.cpp" "middleware/CMakeFiles/csgi_middleware.dir/static.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/static.cpp.o.d"
  "/work/main/middleware/static_prefix.cpp" "middleware/CMakeFiles/csgi_middleware.dir/static_prefix.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/static_prefix.cpp.o.d"
  "/work/main/middleware/url_map.cpp" "middleware/CMakeFiles/csgi_middleware.dir/url_map.cpp.o" "gcc" "middleware/CMakeFiles/csgi_middleware.dir/url_map.cpp.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/bindings/build/temp.linux-x86_64-cpython-311/cmake/core/CMakeFiles/csgi_core.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
