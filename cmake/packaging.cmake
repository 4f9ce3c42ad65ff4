# The Debian package (make deb; docs/packaging.md): cpack -G DEB in the build tree writes
# csgi_<version>_<arch>.deb with everything `cmake --install` installs, under /usr: the csgi programs, the
# headers, static libraries and CMake package config, the TLS module, the Python package in
# /usr/lib/python3/dist-packages, the man pages and the systemd units of docs/deploy/systemd.
# Depends: is computed by dpkg-shlibdeps from the programs and modules; what find_package(csgi) needs to
# build an app is Recommends: (apt installs it; --no-install-recommends gives a server-only install).

# The man page, written from `csgi --help` (one option table for both); csgi-fcgi and csgi-cgi point to it.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(TARGET csgi_cli AND Python3_Interpreter_FOUND)
  set(CSGI_MAN_DIR ${PROJECT_BINARY_DIR}/man)
  add_custom_command(OUTPUT ${CSGI_MAN_DIR}/csgi.1.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CSGI_MAN_DIR}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/cmake/help2roff.py $<TARGET_FILE:csgi_cli> ${PROJECT_VERSION}
            ${CSGI_MAN_DIR}/csgi.1.gz
    DEPENDS csgi_cli ${PROJECT_SOURCE_DIR}/cmake/help2roff.py VERBATIM)
  add_custom_target(csgi_man ALL DEPENDS ${CSGI_MAN_DIR}/csgi.1.gz)
  install(FILES ${CSGI_MAN_DIR}/csgi.1.gz DESTINATION share/man/man1)
  foreach(alias csgi-fcgi csgi-cgi)
    if(TARGET ${alias})
      file(WRITE ${CSGI_MAN_DIR}/${alias}.1 ".so man1/csgi.1\n")
      install(FILES ${CSGI_MAN_DIR}/${alias}.1 DESTINATION share/man/man1)
    endif()
  endforeach()
endif()

# The systemd units of docs/deploy/systemd with the installed programs' paths; the app is /srv/app/libapp.so
# (csgi-web.service's), to be changed with `systemctl edit`. Installed, not enabled.
set(CSGI_UNIT_DIR ${PROJECT_BINARY_DIR}/systemd)
file(GLOB csgi_units CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/deploy/systemd/*.service
                                      ${PROJECT_SOURCE_DIR}/docs/deploy/systemd/*.socket)
foreach(unit IN LISTS csgi_units)
  get_filename_component(unit_name ${unit} NAME)
  file(READ ${unit} text)
  foreach(pair "@CSGI@=/usr/bin/csgi" "/usr/local/bin/csgi=/usr/bin/csgi" "@FCGI@=/usr/bin/csgi-fcgi"
               "@APP@=/srv/app/libapp.so" " --app-arg @APP_ARG@=" "@LOGS@=/var/log/csgi" "@SOCKET@=/run/csgi-app.sock")
    string(FIND "${pair}" "=" eq)
    string(SUBSTRING "${pair}" 0 ${eq} from)
    math(EXPR eq "${eq} + 1")
    string(SUBSTRING "${pair}" ${eq} -1 to)
    string(REPLACE "${from}" "${to}" text "${text}")
  endforeach()
  if(text MATCHES "@[A-Z_]+@")
    message(FATAL_ERROR "docs/deploy/systemd/${unit_name}: ${CMAKE_MATCH_0} has no installed value (cmake/packaging.cmake)")
  endif()
  file(CONFIGURE OUTPUT ${CSGI_UNIT_DIR}/${unit_name} CONTENT "${text}" @ONLY)
  install(FILES ${CSGI_UNIT_DIR}/${unit_name} DESTINATION lib/systemd/system)
endforeach()

# A package carries no debug information: the programs and shared objects are stripped (CPACK_STRIP_FILES),
# and so are the static libraries' and the Python package's, which install(TARGETS) leaves alone.
install(CODE [[
  if(CMAKE_INSTALL_DO_STRIP)
    file(GLOB_RECURSE csgi_unstripped "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/libcsgi_*.a"
                                      "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/python3/dist-packages/csgi/*.so")
    foreach(f IN LISTS csgi_unstripped)
      execute_process(COMMAND strip --strip-debug ${f} COMMAND_ERROR_IS_FATAL ANY)
    endforeach()
  endif()
]])

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME csgi)
set(CPACK_PACKAGE_VENDOR csgi)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "C++ Server Gateway Interface: web apps, middleware and servers")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "csgi is to C++ what PSGI/Plack is to Perl: one interface between web servers and apps.\n\
This package holds the csgi command (an HTTP/1.1, HTTP/2, TLS and WebSocket server, FastCGI and CGI),\n\
csgi-fcgi and csgi-cgi, the Python module (WSGI/ASGI), and the headers, static libraries and CMake\n\
package config to build apps with find_package(csgi).")
set(CSGI_DEB_MAINTAINER "csgi developers <csgi@localhost>" CACHE STRING "The Maintainer: field of make deb's package")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CSGI_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION web)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The Python package is built for one Python version (its extension's ABI tag).
if(CSGI_PYTHON_EXECUTABLE)
  execute_process(COMMAND ${CSGI_PYTHON_EXECUTABLE} -c "import sys; print('%d.%d %d.%d' % (sys.version_info[0], sys.version_info[1], sys.version_info[0], sys.version_info[1] + 1))"
                  OUTPUT_VARIABLE csgi_py_versions OUTPUT_STRIP_TRAILING_WHITESPACE)
  separate_arguments(csgi_py_versions)
  list(GET csgi_py_versions 0 csgi_py_version)
  list(GET csgi_py_versions 1 csgi_py_next)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3 (>= ${csgi_py_version}), python3 (<< ${csgi_py_next})")
endif()
# --psgi dlopen()s libperl, which dpkg-shlibdeps cannot see (bindings/perl/CMakeLists.txt names it).
if(TARGET csgi_perl AND CSGI_PERL_DEB_DEPENDS)
  string(JOIN ", " CPACK_DEBIAN_PACKAGE_DEPENDS ${CPACK_DEBIAN_PACKAGE_DEPENDS} ${CSGI_PERL_DEB_DEPENDS})
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "g++, cmake, libboost-dev, nlohmann-json3-dev, zlib1g-dev, libssl-dev, libnghttp2-dev, libbrotli-dev, libfcgi-dev, libhiredis-dev")
include(CPack)

# What the package holds, for `make deb` to build without the rest of the tree.
add_custom_target(csgi_package_parts)
get_property(csgi_layers GLOBAL PROPERTY CSGI_LAYERS)
foreach(t IN LISTS csgi_layers)
  add_dependencies(csgi_package_parts csgi_${t})
endforeach()
foreach(t csgi_cli csgi-fcgi csgi-cgi csgi_tls csgi_python csgi_python_host csgi_perl csgi_rack_host csgi_man)
  if(TARGET ${t})
    add_dependencies(csgi_package_parts ${t})
  endif()
endforeach()
