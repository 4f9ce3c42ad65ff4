# Installs pinned npm packages into PREFIX unless they are there already (cmake -P script, used as a
# CTest fixture). -DNPM=<npm> -DPREFIX=<dir> -DPACKAGES="name@version;…"
foreach(spec IN LISTS PACKAGES)
  string(REGEX MATCH "^(@?[^@]+)@(.+)$" _ "${spec}")
  set(name ${CMAKE_MATCH_1})
  set(version ${CMAKE_MATCH_2})
  set(pkg ${PREFIX}/node_modules/${name}/package.json)
  set(have "")
  if(EXISTS ${pkg})
    file(READ ${pkg} json)
    string(JSON have ERROR_VARIABLE err GET "${json}" version)
  endif()
  if(NOT have STREQUAL version)
    list(APPEND missing ${spec})
  endif()
endforeach()
if(missing)
  file(MAKE_DIRECTORY ${PREFIX})
  # All of them: npm would prune packages not named (there is no package.json to keep them).
  message(STATUS "npm install --prefix ${PREFIX} ${PACKAGES} (missing: ${missing})")
  execute_process(COMMAND ${NPM} install --prefix ${PREFIX} --no-audit --no-fund --ignore-scripts
                          --no-save --loglevel=error ${PACKAGES}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "npm install failed (${rc})")
  endif()
endif()
