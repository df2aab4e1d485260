// The slots of axl_plugin_table, listed once for every plugin built on
// plugins/common: their declarations (with the table's own signatures, so a
// definition that drifts from plugin.h fails to compile) and the table fill.
//
//   namespace axl::mybackend { AXL_DECLARE_PLUGIN_SLOTS() }      // header
//   constexpr std::array<std::string_view, 1> kOmitted{"device_get_memory_info"};
//   constexpr axl_plugin_table kTable = AXL_PLUGIN_TABLE(kOmitted);  // plugin.cpp
//
// A slot named in the omitted list stays NULL (the core then answers
// AXL_ERROR_UNSUPPORTED naming it) and needs no definition: its assignment
// sits in a discarded `if constexpr` branch, so it is never odr-used. Every
// other slot must be defined by the plugin, or linking fails.
#pragma once

#include <string_view>

#include "axl/plugin.h"

// X(name) for every slot, in table order (ABI 1.1).
#define AXL_PLUGIN_SLOTS(X)                                                                        \
  X(backend_init) X(backend_shutdown) X(backend_device_count) X(backend_set_tracing)              \
  X(backend_set_option) X(device_get) X(device_get_properties) X(device_get_memory_info)          \
  X(device_can_access_peer) X(device_enable_peer_access) X(memory_alloc) X(memory_free)           \
  X(pinned_alloc) X(pinned_free) X(queue_create) X(queue_destroy) X(queue_synchronize)            \
  X(queue_copy_htod) X(queue_copy_dtoh) X(queue_copy_dtod) X(queue_copy_peer) X(queue_fill)       \
  X(queue_record_event) X(queue_wait_event) X(queue_wait_flag) X(queue_write_flag)                \
  X(queue_enqueue_host_fn) X(queue_get_native_handle) X(queue_launch) X(event_create)             \
  X(event_destroy) X(event_synchronize) X(event_query) X(event_elapsed_ms) X(flag_create)         \
  X(flag_destroy) X(flag_get_device_address) X(flag_get_host_address) X(module_load)              \
  X(module_unload) X(module_get_kernel) X(device_get_test_kernel) X(module_compile)

namespace axl::common {

// The function type behind a slot's pointer, noexcept: a slot must never
// let an exception reach the core.
template <typename P>
struct SlotFunction;
template <typename R, typename... A>
struct SlotFunction<R (*)(A...)> {
  using type = R(A...) noexcept;
};

template <typename Names>
constexpr bool slot_listed(std::string_view name, const Names& names) {
  for (std::string_view n : names)
    if (n == name) return true;
  return false;
}

}  // namespace axl::common

#define AXL_DECLARE_PLUGIN_SLOT_(name) \
  ::axl::common::SlotFunction<decltype(axl_plugin_table::name)>::type name;
// Declares every slot function in the enclosing namespace.
#define AXL_DECLARE_PLUGIN_SLOTS() AXL_PLUGIN_SLOTS(AXL_DECLARE_PLUGIN_SLOT_)

#define AXL_FILL_PLUGIN_SLOT_(name) \
  if constexpr (!::axl::common::slot_listed(#name, omitted_)) t.name = name;
// A constexpr axl_plugin_table with every slot but those named in `omitted`
// (a std::array of std::string_view, possibly empty). Use it in the plugin's
// namespace.
#define AXL_PLUGIN_TABLE(omitted)                      \
  []<int = 0>() constexpr {                            \
    constexpr const auto& omitted_ = omitted;          \
    axl_plugin_table t{};                              \
    t.struct_size = sizeof(axl_plugin_table);          \
    AXL_PLUGIN_SLOTS(AXL_FILL_PLUGIN_SLOT_)            \
    return t;                                          \
  }()
