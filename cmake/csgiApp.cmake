# csgi_add_app(<name> <source>... [LINK <library>...])
#
# An app library: a shared object with one CSGI_APP(factory) entry point (csgi/core/app_library.hpp),
# served by `csgi serve --app lib<name>.so`, the FastCGI and CGI adapters and Python's csgi.load_app().
# Makes a MODULE library lib<name>.so linked with csgi::middleware (which brings csgi::core), plus the
# LINK libraries. Compiled with hidden visibility, and the symbols of static libraries it links are kept
# out of its dynamic symbol table: the only exports are the entry points CSGI_APP defines
# (csgi_app_v1, and csgi_log_files_v1 through which the server reopens the library's log files).
# Without CMAKE_BUILD_TYPE the app is compiled with the Release flags (CMAKE_CXX_FLAGS_RELEASE).
#
#   find_package(csgi REQUIRED)       # installed with csgi's package config; in csgi's tree, included
#   csgi_add_app(myapp myapp.cpp)
#
# csgi_add_server(<name> <source>... [LINK <library>...] [STATIC_LIBSTDCXX])
#
# One file to deploy: an executable that serves itself, its main() returning csgi::run(app, argc, argv)
# (csgi/adapters/runner/runner.hpp), so it takes the options of `csgi serve` (--listen, --threads,
# --workers, --fastcgi, ...). csgi's libraries are linked statically (csgi's default build; one built with
# BUILD_SHARED_LIBS is refused), unused sections are dropped (--gc-sections), and with STATIC_LIBSTDCXX
# libstdc++ and libgcc are linked statically too, so that the file runs on any machine with the C library
# and the shared libraries csgi uses (libnghttp2, libfcgi). TLS (--tls-cert) loads csgi's libcsgi_tls.so:
# beside the executable, in ../lib/csgi, or where csgi is installed. Release flags without a build type,
# as csgi_add_app. `strip <name>` leaves ~2.5 MB for a hello world (docs/packaging.md).
#
#   csgi_add_server(hello hello.cpp STATIC_LIBSTDCXX)    # ./hello --listen 127.0.0.1:8080
include_guard(GLOBAL)

# Without a build type CMake compiles with no optimisation at all (code several times larger and slower):
# the target then gets the Release flags. A build type given, or a multi-config generator, decides.
function(_csgi_release_flags_by_default target)
  get_property(multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(NOT multi_config AND NOT CMAKE_BUILD_TYPE)
    separate_arguments(release_flags UNIX_COMMAND "${CMAKE_CXX_FLAGS_RELEASE}")
    target_compile_options(${target} PRIVATE ${release_flags})
  endif()
endfunction()

function(csgi_add_app name)
  cmake_parse_arguments(A "" "" "LINK" ${ARGN})
  if(NOT A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "csgi_add_app(${name}): give the app's source files")
  endif()
  add_library(${name} MODULE ${A_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE csgi::middleware ${A_LINK})
  set_target_properties(${name} PROPERTIES PREFIX "lib" CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_link_options(${name} PRIVATE "LINKER:--exclude-libs,ALL")
  _csgi_release_flags_by_default(${name})
endfunction()

function(csgi_add_server name)
  cmake_parse_arguments(A "STATIC_LIBSTDCXX" "" "LINK" ${ARGN})
  if(NOT A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "csgi_add_server(${name}): give the server's source files")
  endif()
  foreach(lib csgi::runner csgi::middleware)
    get_target_property(type ${lib} TYPE)
    if(NOT type STREQUAL "STATIC_LIBRARY")
      message(FATAL_ERROR "csgi_add_server(${name}): ${lib} is a ${type} here (csgi built with "
                          "BUILD_SHARED_LIBS=ON); one self-serving file needs csgi's static libraries")
    endif()
  endforeach()
  add_executable(${name} ${A_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE csgi::runner csgi::middleware ${A_LINK})
  target_compile_options(${name} PRIVATE -ffunction-sections -fdata-sections)
  target_link_options(${name} PRIVATE "LINKER:--gc-sections")
  if(A_STATIC_LIBSTDCXX)
    target_link_options(${name} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
  _csgi_release_flags_by_default(${name})
endfunction()
