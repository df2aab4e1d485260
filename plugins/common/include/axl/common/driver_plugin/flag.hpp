// The flag_* slots of DriverPlugin<D>: 8 bytes of pinned, device-mapped host memory.
// Part of driver_plugin_slots.hpp, which includes every part; included by
// exactly one translation unit of each driver-API plugin (its plugin.cpp).
#pragma once

#include <cstring>

#include "axl/common/driver_plugin.hpp"
#include "axl/common/slot_checks.hpp"

namespace axl::common {

// ---- completion flags: 8 bytes of pinned, device-mapped host memory; the
// host uses atomics (the core), the device the 64-bit stream wait/write.

template <class D>
axl_status DriverPlugin<D>::flag_create(axl_pdevice device, axl_pflag* out_flag) noexcept {
  return guarded("flag_create", [&]() -> axl_status {
    if (out_flag == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "flag_create: out_flag is NULL");
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    const Api& a = api();
    auto f = std::make_unique<Flag>();
    f->device = &d;
    void* p = nullptr;
    if (axl_status s = check(a.host_alloc(&p, sizeof(uint64_t), D::kHostAllocFlags), D::names.host_alloc,
                             "an 8-byte completion flag"))
      return s;
    f->host = static_cast<uint64_t*>(p);
    std::memset(p, 0, sizeof(uint64_t));
    if (axl_status s = check(a.host_get_device_pointer(&f->address, p, 0), D::names.host_get_device_pointer)) {
      (void)a.host_free(p);
      return s;
    }
    state().graveyard.sweep();
    *out_flag = reinterpret_cast<axl_pflag>(f.release());
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::flag_destroy(axl_pflag flag) noexcept {
  return guarded("flag_destroy", [&]() -> axl_status {
    Flag* f = from(flag);
    // A stream may still be waiting on or writing to it.
    return release_after_queued_work(*f->device, [f] {
      (void)api().host_free(f->host);
      delete f;
    });
  });
}

template <class D>
axl_status DriverPlugin<D>::flag_get_device_address(axl_pflag flag, axl_devaddr* out) noexcept {
  return guarded("flag_get_device_address",
                 [&] { return give(fail, "flag_get_device_address", out, D::addr(from(flag)->address)); });
}

template <class D>
axl_status DriverPlugin<D>::flag_get_host_address(axl_pflag flag, uint64_t** out) noexcept {
  return guarded("flag_get_host_address", [&] { return give(fail, "flag_get_host_address", out, from(flag)->host); });
}

}  // namespace axl::common
