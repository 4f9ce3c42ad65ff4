# Helpers shared by every layer's CMakeLists.

# csgi_add_library(<name> DIR <layer dir> SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Makes target csgi_<name>, alias csgi::<name>, exported; installs the layer's headers under
# include/csgi/<DIR>/.
function(csgi_add_library name)
  cmake_parse_arguments(A "" "DIR" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(csgi_${name} ${A_SOURCES})
  add_library(csgi::${name} ALIAS csgi_${name})
  set_target_properties(csgi_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME csgi_${name}
                        VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  target_include_directories(csgi_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
                                                 $<INSTALL_INTERFACE:include>)
  target_compile_features(csgi_${name} PUBLIC cxx_std_20)
  target_link_libraries(csgi_${name} PUBLIC ${A_PUBLIC_DEPS} PRIVATE ${A_PRIVATE_DEPS})
  install(TARGETS csgi_${name} EXPORT csgiTargets ARCHIVE DESTINATION lib LIBRARY DESTINATION lib
          RUNTIME DESTINATION bin)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${A_DIR}/ DESTINATION include/csgi/${A_DIR}
          FILES_MATCHING PATTERN "*.hpp")
endfunction()

# csgi_add_test(<name> SOURCES ... [DEPS ...] [LABELS ...])
# One Catch2 (v2) executable per test area, registered with CTest; tests/catch_main.cpp supplies main().
function(csgi_add_test name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE csgi_catch_main ${A_DEPS})
  add_test(NAME ${name} COMMAND ${name})
  if(A_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}")
  endif()
endfunction()
