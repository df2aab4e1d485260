# The backend author's path of docs/plugin-guide.md, end to end: install this
# build, copy plugins/metal_stub out of the tree as a new backend "acme",
# build it against the install, and run the installed axl-cts on it
# (tests/install/cts_template_test.sh). Included from tests/CMakeLists.txt.
#
# Not under the sanitizers, for the reason CMakeLists_install.cmake gives: an
# instrumented install cannot run a plain out-of-tree build's binaries.
if(NOT AXL_SANITIZE AND NOT AXL_TSAN)
  add_test(NAME cts_template
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cts_template_test.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cts_template PROPERTIES
    ENVIRONMENT "CMAKE_COMMAND=${CMAKE_COMMAND};CXX=${CMAKE_CXX_COMPILER}"
    LABELS "install;cts;no_asan"
    SKIP_RETURN_CODE 77
    TIMEOUT 600
    # It installs from the build folder, so everything must be built first;
    # run alone so its compile does not compete with other tests.
    RUN_SERIAL TRUE)
endif()
