// The slot bodies of DriverPlugin<D> (driver_plugin.hpp), one file per
// object under driver_plugin/, and its plugin table. Included by exactly one
// translation unit of each driver-API plugin (its plugin.cpp), after the
// traits `D` are complete. Every message names
// the vendor's call (D::names) and the vendor (D::text.vendor); launch-trace
// records use the vendor's call names for copies and fills.
#pragma once

#include <array>
#include <string_view>

#include "axl/common/driver_plugin.hpp"
#include "axl/common/driver_plugin/backend.hpp"
#include "axl/common/driver_plugin/device.hpp"
#include "axl/common/driver_plugin/event.hpp"
#include "axl/common/driver_plugin/flag.hpp"
#include "axl/common/driver_plugin/memory.hpp"
#include "axl/common/driver_plugin/module.hpp"
#include "axl/common/driver_plugin/multicast.hpp"
#include "axl/common/driver_plugin/queue.hpp"
#include "axl/common/slots.hpp"

namespace axl::common {

// ---- the table ----------------------------------------------------------------

// What a driver leaves NULL: module_compile without a run-time compiler,
// the four multicast-group slots without multicast objects (HIP).
inline constexpr std::array<std::string_view, 0> kDriverSlotsAll{};
inline constexpr std::array<std::string_view, 1> kDriverSlotsNoCompiler{"module_compile"};
inline constexpr auto kDriverSlotsNoMulticast = kMulticastSlots;
inline constexpr auto kDriverSlotsNoCompilerNoMulticast = omitted_with(kDriverSlotsNoCompiler, kMulticastSlots);

template <class D>
constexpr axl_plugin_table DriverPlugin<D>::table() noexcept {
  // A NULL slot: the core answers AXL_ERROR_UNSUPPORTED naming it
  // (axl_device_multicast_supported answers 0).
  if constexpr (D::kHasCompiler && D::kHasMulticast)
    return AXL_PLUGIN_TABLE(kDriverSlotsAll);
  else if constexpr (D::kHasCompiler)
    return AXL_PLUGIN_TABLE(kDriverSlotsNoMulticast);
  else if constexpr (D::kHasMulticast)
    return AXL_PLUGIN_TABLE(kDriverSlotsNoCompiler);
  else
    return AXL_PLUGIN_TABLE(kDriverSlotsNoCompilerNoMulticast);
}

template <class D>
axl_status DriverPlugin<D>::negotiate(axl_negotiate_args* args) noexcept {
  // Constant-initialised: negotiation allocates nothing.
  static constexpr axl_plugin_info kInfo = {
      sizeof(axl_plugin_info), D::text.plugin, D::text.plugin, "0.1.0",
      0u,  // accelerators; not fork-safe (require_driver refuses in a child)
      0u,
  };
  static constexpr axl_plugin_table kTable = table();
  return common::negotiate(args, state().host, &kInfo, &kTable);
}

}  // namespace axl::common
