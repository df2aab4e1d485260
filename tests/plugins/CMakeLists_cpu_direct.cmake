# axl_cpu_direct_test: drives libaxl_plugin_cpu.so through its C ABI alone,
# with the shared fake host services (tools/test-host) and no core, so the backend can be tested (and
# debugged) in isolation. Meant to be include()d from tests/CMakeLists.txt.
#
# Needs the targets axl_plugin_cpu and axl_test_cpu_kernels. The latter comes
# from tests/data; if nothing added that directory yet, it is added here.
if(NOT TARGET axl_test_cpu_kernels)
  add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../data ${CMAKE_BINARY_DIR}/tests/data-cpu-direct)
endif()

# Catch2 main: the tree's shared one (axl_catch_main, tests/CMakeLists.txt)
# when it exists; otherwise Catch2 v3's, or a v2 main compiled here (Debian
# bookworm, this project's machines, only packages Catch2 2.13).
if(TARGET axl_catch_main)
  set(AXL_CPU_DIRECT_CATCH2 axl_catch_main)
else()
  if(NOT TARGET Catch2::Catch2WithMain AND NOT TARGET Catch2::Catch2)
    find_package(Catch2 3 QUIET)
    if(NOT Catch2_FOUND)
      find_package(Catch2 2 REQUIRED)
    endif()
  endif()
  if(TARGET Catch2::Catch2WithMain)
    set(AXL_CPU_DIRECT_CATCH2 Catch2::Catch2WithMain)
  else()
    if(NOT TARGET axl_catch2_v2_main)
      file(WRITE ${CMAKE_BINARY_DIR}/generated/axl_catch2_v2_main.cpp
        "#define CATCH_CONFIG_MAIN\n#include <catch2/catch.hpp>\n")
      add_library(axl_catch2_v2_main STATIC ${CMAKE_BINARY_DIR}/generated/axl_catch2_v2_main.cpp)
      target_link_libraries(axl_catch2_v2_main PUBLIC Catch2::Catch2)
    endif()
    set(AXL_CPU_DIRECT_CATCH2 axl_catch2_v2_main)
  endif()
endif()

add_executable(axl_cpu_direct_test ${CMAKE_CURRENT_LIST_DIR}/cpu_direct_test.cpp)
target_link_libraries(axl_cpu_direct_test PRIVATE
  axl::plugin_api axl_test_host ${AXL_CPU_DIRECT_CATCH2} Threads::Threads ${CMAKE_DL_LIBS})
target_compile_features(axl_cpu_direct_test PRIVATE cxx_std_20)
# The plugin and the module are dlopen()ed by path, not linked.
add_dependencies(axl_cpu_direct_test axl_plugin_cpu axl_test_cpu_kernels)
target_compile_definitions(axl_cpu_direct_test PRIVATE
  AXL_CPU_PLUGIN_PATH="$<TARGET_FILE:axl_plugin_cpu>"
  AXL_TEST_CPU_KERNELS_PATH="$<TARGET_FILE:axl_test_cpu_kernels>")
add_test(NAME axl_cpu_direct_test COMMAND axl_cpu_direct_test)
# "threads": scripts/test.sh runs that label under TSan.
set_tests_properties(axl_cpu_direct_test PROPERTIES TIMEOUT 300 LABELS "plugins;cpu;threads")

# axl_plugin_common_test: unit tests of plugins/common itself (queue, event,
# flag, thread pool), linked statically.
add_executable(axl_plugin_common_test ${CMAKE_CURRENT_LIST_DIR}/plugin_common_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plugin_common_shape_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/work_queue_wait_test.cpp)
target_link_libraries(axl_plugin_common_test PRIVATE axl_plugin_common ${AXL_CPU_DIRECT_CATCH2})
add_test(NAME axl_plugin_common_test COMMAND axl_plugin_common_test)
set_tests_properties(axl_plugin_common_test PROPERTIES TIMEOUT 120 LABELS "plugins;threads")

# slot_append: one slot appended through plugin.h's AXL_PLUGIN_SLOTS_EXTRA
# hook must reach the table, the loader's slot table, the CTS probe list and
# plugins/common's table fill (docs/abi.md, "How to append a slot").
foreach(_variant base appended)
  add_executable(axl_slot_append_${_variant} ${CMAKE_CURRENT_LIST_DIR}/slot_append_test.cpp)
  target_link_libraries(axl_slot_append_${_variant} PRIVATE axl::plugin_api)
  target_include_directories(axl_slot_append_${_variant} PRIVATE
    ${PROJECT_SOURCE_DIR}/core/src ${PROJECT_SOURCE_DIR}/tools/axl-cts
    ${PROJECT_SOURCE_DIR}/plugins/common/include)
  target_compile_features(axl_slot_append_${_variant} PRIVATE cxx_std_20)
endforeach()
target_compile_definitions(axl_slot_append_appended PRIVATE AXL_SLOT_APPEND_TEST)
add_test(NAME slot_append COMMAND ${CMAKE_COMMAND}
  -DBASE=$<TARGET_FILE:axl_slot_append_base> -DAPPENDED=$<TARGET_FILE:axl_slot_append_appended>
  -P ${CMAKE_CURRENT_LIST_DIR}/slot_append_check.cmake)
set_tests_properties(slot_append PROPERTIES TIMEOUT 60 LABELS "plugins")

# metal_stub_slots: metal_stub.cpp's hand-written table checked against
# plugin.h's slot list at compile time (every REQUIRED slot filled, every
# OPTIONAL one filled or named as left out). metal_stub_slots_append builds
# the same check with one slot appended and requires it to fail, naming the
# slot: appending a slot without touching metal_stub.cpp fails a test.
foreach(_variant base appended)
  set(_t axl_metal_stub_slots_${_variant})
  add_executable(${_t} ${CMAKE_CURRENT_LIST_DIR}/metal_stub_slots_test.cpp)
  target_link_libraries(${_t} PRIVATE axl::plugin_api)
  target_include_directories(${_t} PRIVATE ${PROJECT_SOURCE_DIR}/plugins/metal_stub)
  target_compile_features(${_t} PRIVATE cxx_std_20)
endforeach()
target_compile_definitions(axl_metal_stub_slots_appended PRIVATE AXL_SLOT_APPEND_TEST)
set_target_properties(axl_metal_stub_slots_appended PROPERTIES EXCLUDE_FROM_ALL ON)
add_test(NAME metal_stub_slots COMMAND axl_metal_stub_slots_base)
set_tests_properties(metal_stub_slots PROPERTIES TIMEOUT 30 LABELS "plugins")
add_test(NAME metal_stub_slots_append
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target axl_metal_stub_slots_appended)
set_tests_properties(metal_stub_slots_append PROPERTIES TIMEOUT 300 LABELS "plugins"
  PASS_REGULAR_EXPRESSION "does not fill slot fake_appended_slot")

# slot_append_needs_cts_case: the same append without its CTS case must not
# build (tools/axl-cts/slot_cases.hpp asserts a case for every slot), so a
# slot can never reach a release uncertified. Built only by this test.
add_library(axl_slot_append_uncovered OBJECT EXCLUDE_FROM_ALL ${CMAKE_CURRENT_LIST_DIR}/slot_append_test.cpp)
target_link_libraries(axl_slot_append_uncovered PRIVATE axl::plugin_api)
target_include_directories(axl_slot_append_uncovered PRIVATE
  ${PROJECT_SOURCE_DIR}/core/src ${PROJECT_SOURCE_DIR}/tools/axl-cts
  ${PROJECT_SOURCE_DIR}/plugins/common/include)
target_compile_features(axl_slot_append_uncovered PRIVATE cxx_std_20)
target_compile_definitions(axl_slot_append_uncovered PRIVATE AXL_SLOT_APPEND_TEST AXL_SLOT_APPEND_NO_CTS_CASE)
add_test(NAME slot_append_needs_cts_case
  COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target axl_slot_append_uncovered)
set_tests_properties(slot_append_needs_cts_case PROPERTIES TIMEOUT 120 LABELS "plugins"
  PASS_REGULAR_EXPRESSION "plugin.h slot 'fake_appended_slot' has no CTS case")
