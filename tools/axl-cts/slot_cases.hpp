// Which CTS cases exercise each slot of plugin.h's list (AXL_PLUGIN_SLOTS),
// so that a certified backend has had every slot it fills called.
//
// The rows are keyed by slot name and checked against the list at compile
// time: a slot of the list without a row, or a row naming no slot, fails the
// build of axl-cts. Appending a slot therefore also means writing the case
// that calls it (docs/abi.md, "How to append a slot"). At start-up axl-cts
// checks that every case named here exists (main.cpp), and
// `axl-cts --list-slots` prints the table.
//
// A header of its own, like slot_list.hpp, so that
// tests/plugins/slot_append_test.cpp can compile it with a slot appended.
#pragma once

#include <cstddef>
#include <iterator>
#include <string_view>

#include "axl/plugin.h"

// CTS_SLOT_CASES_EXTRA: rows a build appends without editing the table, for
// the slots plugin.h's AXL_PLUGIN_SLOTS_EXTRA(X) appends. Only
// tests/plugins/slot_append_test.cpp defines it. A real slot gets a real row.
#ifndef CTS_SLOT_CASES_EXTRA
#define CTS_SLOT_CASES_EXTRA
#endif

namespace cts {

struct SlotCases {
  std::string_view slot;
  std::string_view cases[3];  // the CTS cases that call it; unused entries empty
};

inline constexpr SlotCases kSlotCases[] = {
    {"backend_init", {"cts.device.properties"}},
    {"backend_shutdown", {"cts.backend.lifecycle"}},
    {"backend_device_count", {"cts.device.properties"}},
    {"backend_set_tracing", {"cts.trace.every_op_once", "cts.trace.hash_stable"}},
    {"backend_set_option", {"cts.backend.set_option"}},
    {"device_get", {"cts.device.properties"}},
    {"device_get_properties", {"cts.device.properties"}},
    {"device_get_memory_info", {"cts.device.properties"}},
    {"device_can_access_peer", {"cts.device.peer_access"}},
    {"device_enable_peer_access", {"cts.device.peer_access"}},
    {"memory_alloc", {"cts.memory.alloc_free"}},
    {"memory_free", {"cts.memory.alloc_free"}},
    {"pinned_alloc", {"cts.memory.pinned"}},
    {"pinned_free", {"cts.memory.pinned"}},
    {"queue_create", {"cts.queue.in_order"}},
    {"queue_destroy", {"cts.queue.in_order", "cts.queue.concurrent_submit_8_threads"}},
    {"queue_synchronize", {"cts.queue.in_order"}},
    {"queue_copy_htod", {"cts.copy.htod_dtoh_roundtrip"}},
    {"queue_copy_dtoh", {"cts.copy.htod_dtoh_roundtrip"}},
    {"queue_copy_dtod", {"cts.copy.htod_dtoh_roundtrip"}},
    {"queue_copy_peer", {"cts.copy.across_devices"}},
    {"queue_fill", {"cts.fill.patterns"}},
    {"queue_record_event", {"cts.event.record_query_sync"}},
    {"queue_wait_event", {"cts.event.record_query_sync", "cts.queue.cross_queue_wait"}},
    {"queue_wait_flag", {"cts.flag.gate_queue"}},
    {"queue_write_flag", {"cts.flag.gate_queue"}},
    {"queue_enqueue_host_fn", {"cts.callback.order"}},
    {"queue_get_native_handle", {"cts.queue.native_handle"}},
    {"queue_launch", {"cts.kernel.test_kernel_grids", "cts.kernel.local_arg", "cts.module.unload_while_queued"}},
    {"event_create", {"cts.event.record_query_sync"}},
    {"event_destroy", {"cts.event.record_query_sync"}},
    {"event_synchronize", {"cts.event.record_query_sync", "cts.event.async_failure"}},
    {"event_query", {"cts.event.record_query_sync"}},
    {"event_elapsed_ms", {"cts.event.elapsed_monotonic"}},
    {"flag_create", {"cts.flag.gate_queue"}},
    {"flag_destroy", {"cts.flag.gate_queue"}},
    {"flag_get_device_address", {"cts.flag.gate_queue"}},
    {"flag_get_host_address", {"cts.flag.gate_queue"}},
    {"module_load", {"cts.module.load"}},
    {"module_unload", {"cts.module.unload_while_queued"}},
    {"module_get_kernel", {"cts.module.get_kernel"}},
    {"device_get_test_kernel", {"cts.kernel.test_kernel_grids"}},
    {"module_compile", {"cts.module.compile"}},
    {"device_get_multicast_support", {"cts.multicast.broadcast"}},
    {"multicast_create", {"cts.multicast.broadcast"}},
    {"multicast_get_addresses", {"cts.multicast.broadcast"}},
    {"multicast_destroy", {"cts.multicast.broadcast"}},
    CTS_SLOT_CASES_EXTRA
};

// A bool, not the row's address: GCC under -fsanitize=address cannot compare
// a global's address with nullptr in a constant expression.
constexpr bool has_case(std::string_view slot) {
  for (const SlotCases& r : kSlotCases)
    if (r.slot == slot) return !r.cases[0].empty();
  return false;
}

#define CTS_SLOT_NAME_(name, req, minor, ret, params) std::string_view(#name),
inline constexpr std::string_view kListedSlots[] = {AXL_PLUGIN_SLOTS(CTS_SLOT_NAME_)};
#undef CTS_SLOT_NAME_

constexpr bool every_row_is_a_slot() {
  for (const SlotCases& r : kSlotCases) {
    bool listed = false;
    for (std::string_view s : kListedSlots) listed = listed || s == r.slot;
    if (!listed) return false;
  }
  return true;
}

// One assert per slot, so the error names the slot that has no case.
#define CTS_SLOT_HAS_CASE_(name, req, minor, ret, params)                           \
  static_assert(has_case(#name), "plugin.h slot '" #name "' has no CTS case: " \
                "write one (tools/axl-cts/cases_*.cpp) and name it in slot_cases.hpp");
AXL_PLUGIN_SLOTS(CTS_SLOT_HAS_CASE_)
#undef CTS_SLOT_HAS_CASE_
static_assert(every_row_is_a_slot(), "slot_cases.hpp has a row for a slot plugin.h does not list");
// With every slot covered and every row a slot, more rows than slots means
// a slot has two rows.
static_assert(std::size(kSlotCases) <= AXL_PLUGIN_SLOT_COUNT, "slot_cases.hpp lists a slot twice");

}  // namespace cts
