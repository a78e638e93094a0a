# CPACK_PRE_BUILD_SCRIPTS of the Debian packages (packaging.cmake): drops the debug info from
# the static libraries in CPack's staging tree, as dh_strip does for a Debian -dev package.
file(GLOB_RECURSE archives "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*.a")
foreach(a ${archives})
  execute_process(COMMAND ${CPACK_GT_STRIP} --strip-debug "${a}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "strip --strip-debug ${a} failed")
  endif()
endforeach()
