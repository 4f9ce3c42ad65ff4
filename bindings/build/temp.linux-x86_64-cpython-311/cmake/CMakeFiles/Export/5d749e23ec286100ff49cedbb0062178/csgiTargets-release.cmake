#----------------------------------------------------------------
# Generated CMake target import file for configuration "Release".
#----------------------------------------------------------------

# Commands may need to know the format version.
set(CMAKE_IMPORT_FILE_VERSION 1)

# Import target "csgi::core" for configuration "Release"
set_property(TARGET csgi::core APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(csgi::core PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELEASE "CXX"
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libcsgi_core.a"
  )

list(APPEND _cmake_import_check_targets csgi::core )
list(APPEND _cmake_import_check_files_for_csgi::core "${_IMPORT_PREFIX}/lib/libcsgi_core.a" )

# Import target "csgi::middleware" for configuration "Release"
set_property(TARGET csgi::middleware APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(csgi::middleware PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELEASE "CXX"
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libcsgi_middleware.a"
  )

list(APPEND _cmake_import_check_targets csgi::middleware )
list(APPEND _cmake_import_check_files_for_csgi::middleware "${_IMPORT_PREFIX}/lib/libcsgi_middleware.a" )

# Import target "csgi::bundler" for configuration "Release"
set_property(TARGET csgi::bundler APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(csgi::bundler PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELEASE "CXX"
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libcsgi_bundler.a"
  )

list(APPEND _cmake_import_check_targets csgi::bundler )
list(APPEND _cmake_import_check_files_for_csgi::bundler "${_IMPORT_PREFIX}/lib/libcsgi_bundler.a" )

# Import target "csgi::standalone" for configuration "Release"
set_property(TARGET csgi::standalone APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(csgi::standalone PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELEASE "CXX"
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libcsgi_standalone.a"
  )

list(APPEND _cmake_import_check_targets csgi::standalone )
list(APPEND _cmake_import_check_files_for_csgi::standalone "${_IMPORT_PREFIX}/lib/libcsgi_standalone.a" )

# Import target "csgi::fastcgi" for configuration "Release"
set_property(TARGET csgi::fastcgi APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(csgi::fastcgi PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELEASE "CXX"
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libcsgi_fastcgi.a"
  )

list(APPEND _cmake_import_check_targets csgi::fastcgi )
list(APPEND _cmake_import_check_files_for_csgi::fastcgi "${_IMPORT_PREFIX}/lib/libcsgi_fastcgi.a" )

# Import target "csgi::cgi" for configuration "Release"
set_property(TARGET csgi::cgi APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(csgi::cgi PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELEASE "CXX"
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libcsgi_cgi.a"
  )

list(APPEND _cmake_import_check_targets csgi::cgi )
list(APPEND _cmake_import_check_files_for_csgi::cgi "${_IMPORT_PREFIX}/lib/libcsgi_cgi.a" )

# Commands beyond this point should not need to know the version.
set(CMAKE_IMPORT_FILE_VERSION)
