# The install test: `cmake --install` this build into a temporary prefix,
# move it, and build and run an out-of-tree consumer against it through
# find_package(axl) and through pkg-config (tests/install/run_install_test.sh).
# Included from tests/CMakeLists.txt.
#
# Not under the sanitizers: an instrumented libaxl.so needs its runtime
# loaded first, which a plain out-of-tree consumer does not do.
if(NOT AXL_SANITIZE AND NOT AXL_TSAN)
  add_test(NAME install_consumer
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run_install_test.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(install_consumer PROPERTIES
    ENVIRONMENT "CMAKE_COMMAND=${CMAKE_COMMAND};CC=${CMAKE_C_COMPILER}"
    LABELS "install;no_asan"
    SKIP_RETURN_CODE 77
    TIMEOUT 300
    # It installs from the build folder, so everything must be built; run it
    # alone to keep its compiles off the other tests' cores.
    RUN_SERIAL TRUE)
endif()
