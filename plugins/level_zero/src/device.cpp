// Devices: found by discovery (plugin.cpp); properties, peer access.
#include <algorithm>
#include <cstring>

#include "axl/common/slot_checks.hpp"
#include "l0_backend.hpp"

namespace axl::l0 {

axl_status device_get(uint32_t index, axl_pdevice* out_device) noexcept {
  return guarded("device_get", [&]() -> axl_status {
    return common::get_discovered_device(fail, discover, backend().devices,
                                         "Level Zero GPU device(s)", index, out_device);
  });
}

axl_status device_get_properties(axl_pdevice device, axl_device_properties* props) noexcept {
  return guarded("device_get_properties", [&]() -> axl_status {
    return common::copy_device_properties(fail, from(device)->props, props);
  });
}

axl_status device_can_access_peer(axl_pdevice device, axl_pdevice peer, uint8_t* out) noexcept {
  return guarded("device_can_access_peer", [&]() -> axl_status {
    if (out == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_can_access_peer: out is NULL");
    Device* d = from(device);
    Device* p = from(peer);
    *out = 0;
    // MAX's rule: a device and itself answer 0. Devices of two drivers have
    // two contexts, and memory does not cross contexts.
    if (d == p || d->driver != p->driver) return AXL_SUCCESS;
    ze_bool_t can = 0;
    if (ze_result_t r = ze().zeDeviceCanAccessPeer(d->handle, p->handle, &can))
      return ze_fail("zeDeviceCanAccessPeer", r);
    *out = can ? 1 : 0;
    return AXL_SUCCESS;
  });
}

axl_status device_enable_peer_access(axl_pdevice device, axl_pdevice peer) noexcept {
  return guarded("device_enable_peer_access", [&]() -> axl_status {
    if (device == nullptr || peer == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_enable_peer_access: a device is NULL");
    // Level Zero has no enable step: within one context, a device reads
    // another's memory whenever zeDeviceCanAccessPeer says it can. So this
    // only answers whether access works.
    uint8_t can = 0;
    if (axl_status s = device_can_access_peer(device, peer, &can)) return s;
    if (!can && device != peer)
      return fail(AXL_ERROR_UNSUPPORTED,
                  common::str("Level Zero device ", from(device)->index, " cannot access device ",
                              from(peer)->index, "'s memory (zeDeviceCanAccessPeer answered 0, "
                              "or the devices belong to different drivers)"));
    return AXL_SUCCESS;
  });
}

}  // namespace axl::l0
