# The broken-plugin matrix: test_plugin.c built once per variant (macros in
# its header comment), plus axl_matrix_direct_test, which dlopens each
# variant without the core and checks it is broken exactly as intended.
# Included from tests/CMakeLists.txt. Defines:
#   AXL_TEST_PLUGIN_DIR        folder holding libaxl_plugin_t_<variant>.so
#   AXL_TEST_PLUGIN_DUP_A_DIR  AXL_TEST_PLUGIN_DIR/dup_a: libaxl_plugin_t_dup.so
#   AXL_TEST_PLUGIN_DUP_B_DIR  AXL_TEST_PLUGIN_DIR/dup_b: libaxl_plugin_t_dup.so
#   AXL_TEST_PLUGIN_TARGETS    every variant's target (axl_test_plugin_<variant>)
#   AXL_TEST_PLUGIN_BAD_EXPORT_TARGETS  the variants that export more or other
#                              than axl_plugin_negotiate (the export check
#                              must fail on them)
#
# The two dup plugins share one file name in two folders because the core
# refuses a plugin whose info.name differs from its file name: shadowing can
# only be seen with AXL_PLUGIN_PATH=${AXL_TEST_PLUGIN_DUP_A_DIR}:${..._B_DIR}.
# They differ in info.version ("dup_a", "dup_b") and the device model name.

set(AXL_TEST_PLUGIN_DIR ${CMAKE_BINARY_DIR}/lib/test_plugins)
set(AXL_TEST_PLUGIN_DUP_A_DIR ${AXL_TEST_PLUGIN_DIR}/dup_a)
set(AXL_TEST_PLUGIN_DUP_B_DIR ${AXL_TEST_PLUGIN_DIR}/dup_b)
set(AXL_TEST_PLUGIN_TARGETS "")
set(AXL_TEST_PLUGIN_BAD_EXPORT_TARGETS "")
# CMAKE_CURRENT_LIST_DIR inside a function is the caller's; keep ours.
set(_AXL_TP_SRC ${CMAKE_CURRENT_LIST_DIR})

# _axl_test_plugin(<variant> [NAME <file name>] [INFO_NAME <info.name>]
#                  [SUBDIR <folder>] [CXX] [ALLOW_UNDEFINED]
#                  [NO_VERSION_SCRIPT] [DEFINES <macro>...])
# Builds ${AXL_TEST_PLUGIN_DIR}[/SUBDIR]/libaxl_plugin_<NAME>.so, target
# axl_test_plugin_<variant>. NAME defaults to t_<variant>, INFO_NAME to NAME.
function(_axl_test_plugin variant)
  cmake_parse_arguments(V "CXX;ALLOW_UNDEFINED;NO_VERSION_SCRIPT"
                        "NAME;INFO_NAME;SUBDIR" "DEFINES" ${ARGN})
  if(NOT V_NAME)
    set(V_NAME t_${variant})
  endif()
  if(NOT V_INFO_NAME)
    set(V_INFO_NAME ${V_NAME})
  endif()
  set(dir ${AXL_TEST_PLUGIN_DIR})
  if(V_SUBDIR)
    set(dir ${dir}/${V_SUBDIR})
  endif()
  if(V_CXX)
    set(src ${_AXL_TP_SRC}/test_plugin_throws.cpp)
  else()
    set(src ${_AXL_TP_SRC}/test_plugin.c)
  endif()
  set(extra "")
  if(V_ALLOW_UNDEFINED)
    set(extra ALLOW_UNDEFINED)
  endif()
  set(target axl_test_plugin_${variant})
  axl_add_plugin(${V_NAME} SOURCES ${src} NO_INSTALL OUTPUT_DIR ${dir}
                 TARGET ${target} ${extra})
  target_compile_definitions(${target} PRIVATE
    TP_NAME_ID=${V_INFO_NAME} TP_VARIANT_ID=${variant} ${V_DEFINES})
  if(V_NO_VERSION_SCRIPT)
    # axl_add_plugin's link options carry the version script; replace them
    # wholesale (keeping the others) so default-visibility symbols export.
    set_property(TARGET ${target} PROPERTY LINK_OPTIONS "-Wl,-Bsymbolic")
    if(NOT AXL_SANITIZE AND NOT AXL_TSAN)
      target_link_options(${target} PRIVATE "-Wl,--no-undefined")
    endif()
    set(AXL_TEST_PLUGIN_BAD_EXPORT_TARGETS ${AXL_TEST_PLUGIN_BAD_EXPORT_TARGETS}
        ${target} PARENT_SCOPE)
  endif()
  set(AXL_TEST_PLUGIN_TARGETS ${AXL_TEST_PLUGIN_TARGETS} ${target} PARENT_SCOPE)
endfunction()

_axl_test_plugin(good)
_axl_test_plugin(good2)
_axl_test_plugin(no_entry NO_VERSION_SCRIPT DEFINES TP_NO_ENTRY)
_axl_test_plugin(wrong_major DEFINES TP_WRONG_MAJOR)
_axl_test_plugin(missing_slot DEFINES TP_MISSING_SLOT)
_axl_test_plugin(size_zero DEFINES TP_TABLE_SIZE=0)
_axl_test_plugin(size_huge DEFINES TP_TABLE_SIZE=1073741824)
_axl_test_plugin(info_size_bad DEFINES TP_INFO_SIZE=0)
_axl_test_plugin(null_table DEFINES TP_NULL_TABLE)
_axl_test_plugin(negotiate_fails DEFINES TP_NEGOTIATE_FAILS)
_axl_test_plugin(negotiate_throws CXX DEFINES TP_NEGOTIATE_THROWS)
_axl_test_plugin(undefined_symbol ALLOW_UNDEFINED DEFINES TP_UNDEFINED_SYMBOL)
_axl_test_plugin(dup_a NAME t_dup SUBDIR dup_a)
_axl_test_plugin(dup_b NAME t_dup SUBDIR dup_b)
_axl_test_plugin(name_mismatch INFO_NAME something_else)
_axl_test_plugin(init_unavailable DEFINES TP_INIT_UNAVAILABLE)
_axl_test_plugin(extra_export NO_VERSION_SCRIPT DEFINES TP_EXTRA_EXPORT)
# A census of 2 that backend_init corrects to 1 (a folder of its own, next
# to a copy of good: the device ids of a later backend after the recount).
_axl_test_plugin(census_two NAME t_a_census SUBDIR census DEFINES TP_CENSUS_TWO)
_axl_test_plugin(census_good NAME t_b_good SUBDIR census)

# ------------------------------------------------------ direct matrix test --
# tests/CMakeLists.txt provides axl_catch_main (Catch2 v2, Debian's 2.13, with
# the one shared main). Without it, Catch2 v3 and its own main are used.
if(TARGET axl_catch_main)
  set(_axl_tp_catch axl_catch_main)
else()
  find_package(Catch2 3 REQUIRED)
  set(_axl_tp_catch Catch2::Catch2WithMain)
endif()

add_executable(axl_matrix_direct_test ${_AXL_TP_SRC}/matrix_direct_test.cpp)
target_link_libraries(axl_matrix_direct_test PRIVATE
  axl::plugin_api axl_test_host ${_axl_tp_catch} ${CMAKE_DL_LIBS})
if(Catch2_VERSION VERSION_LESS 3)
  target_compile_definitions(axl_matrix_direct_test PRIVATE AXL_CATCH2_V2=1)
endif()
target_compile_definitions(axl_matrix_direct_test PRIVATE
  AXL_TEST_PLUGIN_DIR="${AXL_TEST_PLUGIN_DIR}")
add_dependencies(axl_matrix_direct_test ${AXL_TEST_PLUGIN_TARGETS})
# The Metal stub is checked the same way: it is the template third parties
# copy, so its negotiate and its answers are part of what must not regress.
if(TARGET axl_plugin_metal_stub)
  target_sources(axl_matrix_direct_test PRIVATE ${_AXL_TP_SRC}/metal_stub_direct_test.cpp)
  target_compile_definitions(axl_matrix_direct_test PRIVATE
    AXL_METAL_STUB_PATH="$<TARGET_FILE:axl_plugin_metal_stub>")
  add_dependencies(axl_matrix_direct_test axl_plugin_metal_stub)
endif()
add_test(NAME plugin_matrix_direct COMMAND axl_matrix_direct_test)
set_tests_properties(plugin_matrix_direct PROPERTIES LABELS plugins)

# The shared fake host services (tools/test-host) themselves, with the
# variants above as the plugins load_plugin() opens.
add_executable(axl_test_host_test ${_AXL_TP_SRC}/test_host_test.cpp)
target_link_libraries(axl_test_host_test PRIVATE axl_test_host ${_axl_tp_catch} Threads::Threads)
if(Catch2_VERSION VERSION_LESS 3)
  target_compile_definitions(axl_test_host_test PRIVATE AXL_CATCH2_V2=1)
endif()
target_compile_definitions(axl_test_host_test PRIVATE AXL_TEST_PLUGIN_DIR="${AXL_TEST_PLUGIN_DIR}")
add_dependencies(axl_test_host_test ${AXL_TEST_PLUGIN_TARGETS})
add_test(NAME plugin_test_host COMMAND axl_test_host_test)
set_tests_properties(plugin_test_host PROPERTIES LABELS "plugins;threads")
