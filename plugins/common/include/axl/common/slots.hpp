// The slots of axl_plugin_table for every plugin built on plugins/common,
// generated from plugin.h's slot list: their declarations (with the table's
// own signatures, so a definition that drifts from plugin.h fails to
// compile) and the table fill.
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

#include <array>
#include <cstddef>
#include <string_view>

#include "axl/plugin.h"

// The slots themselves come from plugin.h's list, AXL_PLUGIN_SLOTS(X), with
// X(name, required, minor, return type, (parameters)).

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

// The multicast-group slots (ABI 1.4), which a backend fills all or none
// (plugin.h): one without multicast groups omits them together,
// `omitted_with(kMulticastSlots, std::array<std::string_view, 1>{"x"})`.
inline constexpr std::array<std::string_view, 4> kMulticastSlots{
    "device_get_multicast_support", "multicast_create", "multicast_get_addresses", "multicast_destroy"};

// Two omitted lists as one.
template <size_t N, size_t M>
constexpr std::array<std::string_view, N + M> omitted_with(const std::array<std::string_view, N>& a,
                                                           const std::array<std::string_view, M>& b) {
  std::array<std::string_view, N + M> out{};
  for (size_t i = 0; i < N; ++i) out[i] = a[i];
  for (size_t i = 0; i < M; ++i) out[N + i] = b[i];
  return out;
}

}  // namespace axl::common

#define AXL_DECLARE_PLUGIN_SLOT_(name, req, minor, ret, params) \
  ::axl::common::SlotFunction<decltype(axl_plugin_table::name)>::type name;
// Declares every slot function in the enclosing namespace.
#define AXL_DECLARE_PLUGIN_SLOTS() AXL_PLUGIN_SLOTS(AXL_DECLARE_PLUGIN_SLOT_)

#define AXL_DECLARE_PLUGIN_STATIC_SLOT_(name, req, minor, ret, params) \
  static ::axl::common::SlotFunction<decltype(axl_plugin_table::name)>::type name;
// Declares every slot function as a static member of the enclosing class
// (DriverPlugin<D>).
#define AXL_DECLARE_PLUGIN_STATIC_SLOTS() AXL_PLUGIN_SLOTS(AXL_DECLARE_PLUGIN_STATIC_SLOT_)

#define AXL_FILL_PLUGIN_SLOT_(name, req, minor, ret, params) \
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
