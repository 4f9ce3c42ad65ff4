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
include_guard(GLOBAL)

function(csgi_add_app name)
  cmake_parse_arguments(A "" "" "LINK" ${ARGN})
  if(NOT A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "csgi_add_app(${name}): give the app's source files")
  endif()
  add_library(${name} MODULE ${A_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE csgi::middleware ${A_LINK})
  set_target_properties(${name} PROPERTIES PREFIX "lib" CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_link_options(${name} PRIVATE "LINKER:--exclude-libs,ALL")
  # Without a build type CMake compiles with no optimisation at all (an app several times larger and
  # slower): the app then gets the Release flags. A build type given, or a multi-config generator, decides.
  get_property(multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(NOT multi_config AND NOT CMAKE_BUILD_TYPE)
    separate_arguments(release_flags UNIX_COMMAND "${CMAKE_CXX_FLAGS_RELEASE}")
    target_compile_options(${name} PRIVATE ${release_flags})
  endif()
endfunction()
