# csgi_add_library(<name> DIR <layer dir> SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# Makes target csgi_<name>, alias csgi::<name>, exported; installs the layer's headers under
# include/csgi/<DIR>/, except those in a `detail/` folder: the layer's internals, which only its own
# sources and the tests include. The ctest `layering` checks includes against the targets' links.
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
          FILES_MATCHING PATTERN "*.hpp" PATTERN detail EXCLUDE)
  set_property(GLOBAL APPEND PROPERTY CSGI_LAYERS ${name})
  set_target_properties(csgi_${name} PROPERTIES CSGI_DIR ${A_DIR})
endfunction()

# Writes <build>/layers.tsv, one line per csgi_add_library target: name, layer directory, the targets it
# links (public and private). Called once every layer is defined.
function(csgi_write_layers)
  get_property(layers GLOBAL PROPERTY CSGI_LAYERS)
  set(content "")
  foreach(n IN LISTS layers)
    get_target_property(dir csgi_${n} CSGI_DIR)
    string(APPEND content "${n}\t${dir}\t$<JOIN:$<TARGET_PROPERTY:csgi_${n},LINK_LIBRARIES>,$<COMMA>>\n")
  endforeach()
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/layers.tsv CONTENT "${content}")
endfunction()

# csgi_add_test(<name> SOURCES ... [DEPS ...] [LABELS ...])
# One Catch2 (v2) executable per test area, registered with CTest; tests/catch_main.cpp supplies main().
# The test code itself is not optimized (-O0: half the compile time of -O2); the code under test is
# built as its libraries are.
function(csgi_add_test name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_compile_options(${name} PRIVATE -O0)
  target_link_libraries(${name} PRIVATE csgi_catch_main ${A_DEPS})
  add_test(NAME ${name} COMMAND ${name})
  if(A_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}")
  endif()
endfunction()
