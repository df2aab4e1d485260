# ctest checks of the one-exported-symbol rule (docs/abi.md), run with
# check_exports.cmake. Included from tests/CMakeLists.txt after
# CMakeLists_matrix.cmake. Optional input:
#   AXL_SHIPPED_PLUGIN_TARGETS  plugin targets to check one by one (e.g.
#                               axl_plugin_cpu), so a failure names the target
#
# Tests (label "plugin_exports"):
#   plugin_exports_shipped        every libaxl_plugin_*.so in ${AXL_PLUGIN_DIR}
#   plugin_exports_<target>       each shipped target and each well-formed
#                                 matrix variant
#   plugin_exports_rejects_<v>    the check must fail on extra_export (naming
#                                 axl_test_extra_symbol) and on no_entry:
#                                 proof that it can fail

if(NOT CMAKE_NM)
  message(FATAL_ERROR "CMakeLists_exports.cmake: no nm found (CMAKE_NM is empty)")
endif()
set(_axl_exports_script ${CMAKE_CURRENT_LIST_DIR}/check_exports.cmake)

function(_axl_exports_test name plugin)
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM}
           -DPLUGIN=${plugin} -P ${_axl_exports_script})
  set_tests_properties(${name} PROPERTIES LABELS plugin_exports)
endfunction()

_axl_exports_test(plugin_exports_shipped ${AXL_PLUGIN_DIR})

foreach(_t IN LISTS AXL_SHIPPED_PLUGIN_TARGETS AXL_TEST_PLUGIN_TARGETS)
  if(NOT _t IN_LIST AXL_TEST_PLUGIN_BAD_EXPORT_TARGETS)
    _axl_exports_test(plugin_exports_${_t} $<TARGET_FILE:${_t}>)
  endif()
endforeach()

# Negative checks: pass only when the check fails for the intended reason
# (PASS_REGULAR_EXPRESSION replaces the exit-code verdict).
_axl_exports_test(plugin_exports_rejects_extra_export
                  $<TARGET_FILE:axl_test_plugin_extra_export>)
set_tests_properties(plugin_exports_rejects_extra_export PROPERTIES
  PASS_REGULAR_EXPRESSION "FAIL [^\n]*unexpected exported symbol\\(s\\): axl_test_extra_symbol")
_axl_exports_test(plugin_exports_rejects_no_entry
                  $<TARGET_FILE:axl_test_plugin_no_entry>)
set_tests_properties(plugin_exports_rejects_no_entry PROPERTIES
  PASS_REGULAR_EXPRESSION "FAIL [^\n]*does not export axl_plugin_negotiate")
