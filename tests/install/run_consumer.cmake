# cmake -DBUILD_DIR=… -DSOURCE_DIR=… -DWORK_DIR=… -DPYTHON=… -DSERVE_CHECK=… -P run_consumer.cmake
# Installs the build into WORK_DIR/prefix, builds the consumer project against it (CMAKE_PREFIX_PATH), runs
# its executable, and serves its app library (csgi_add_app) with the installed csgi command.
file(REMOVE_RECURSE ${WORK_DIR})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}\n${err}")
  endif()
  message("${out}")
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
# A layer's private headers (those in a detail/ folder) are not installed.
file(GLOB_RECURSE installed_private ${WORK_DIR}/prefix/include/csgi/*)
list(FILTER installed_private INCLUDE REGEX "/detail/")
if(installed_private)
  message(FATAL_ERROR "private headers were installed: ${installed_private}")
endif()
step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build -j2)
step(${WORK_DIR}/build/consumer)
step(${PYTHON} ${SERVE_CHECK} ${WORK_DIR}/prefix/bin/csgi ${WORK_DIR}/build/libconsumer_app.so)
