// Virtual devices: created on first device_get with the settings in force
// then, properties, the memory budget, peer access.
#include <algorithm>
#include <cstring>

#include "axl/common/fixed_string.hpp"
#include "axl/common/slot_checks.hpp"
#include "virtual_backend.hpp"

namespace axl::virt {

namespace {

std::unique_ptr<Device> make_device(uint32_t index) {
  Backend& b = backend();
  const Config& c = config();
  std::string api, arch;
  {
    // Virtual-device mode's api/arch win over the environment; "" (unset in
    // the core) means "not given".
    std::lock_guard<std::mutex> lk(b.mode_mu);
    api = b.mode_api.empty() ? c.api : b.mode_api;
    arch = b.mode_arch.empty() ? c.arch : b.mode_arch;
  }
  auto d = std::make_unique<Device>();
  d->index = index;
  d->total_bytes = c.device_memory;
  axl_device_properties& p = d->props;
  p.struct_size = sizeof(axl_device_properties);
  common::copy_string(p.label, sizeof p.label, "gpu");
  common::copy_string(p.api, sizeof p.api, api);
  common::copy_string(p.architecture_name, sizeof p.architecture_name, arch);
  common::copy_string(p.model_name, sizeof p.model_name, "axl virtual device (" + api + " " + arch + ")");
  p.total_memory_bytes = c.device_memory;
  p.max_single_alloc_bytes = c.device_memory;
  p.is_host = 0;
  p.is_host_unified = 0;
  p.is_compatible = 1;
  return d;
}

}  // namespace

axl_status device_get(uint32_t index, axl_pdevice* out_device) noexcept {
  return guarded("device_get", [&]() -> axl_status {
    Backend& b = backend();
    if (out_device == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get: out_device is NULL");
    uint32_t count = 0;
    backend_device_count(&count);
    if (index >= count)
      return fail(AXL_ERROR_OUT_OF_RANGE,
                  common::str("device index ", index, " is out of range: ", count,
                              " virtual device(s) (AXL_VIRTUAL_DEVICES or virtual-device mode)"));
    Device* d = b.devices[index].load(std::memory_order_acquire);
    if (d == nullptr) {
      std::lock_guard<std::mutex> lk(b.dev_mu);
      d = b.devices[index].load(std::memory_order_relaxed);
      if (d == nullptr) {
        // Devices outlive every caller (plugin.h: until backend_shutdown);
        // they stay reachable from the never-destroyed backend state.
        d = make_device(index).release();
        b.devices[index].store(d, std::memory_order_release);
      }
    }
    *out_device = common::to_handle<axl_pdevice>(d);
    return AXL_SUCCESS;
  });
}

axl_status device_get_properties(axl_pdevice device, axl_device_properties* props) noexcept {
  return guarded("device_get_properties", [&]() -> axl_status {
    return common::copy_device_properties(fail, from(device)->props, props);
  });
}

axl_status device_get_memory_info(axl_pdevice device, uint64_t* out_free,
                                  uint64_t* out_total) noexcept {
  return guarded("device_get_memory_info", [&]() -> axl_status {
    if (out_free == nullptr || out_total == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_memory_info: an output pointer is NULL");
    Device* d = from(device);
    std::lock_guard<std::mutex> lk(d->mem_mu);
    *out_total = d->total_bytes;
    *out_free = d->total_bytes - std::min(d->used_bytes, d->total_bytes);
    return AXL_SUCCESS;
  });
}

axl_status device_can_access_peer(axl_pdevice device, axl_pdevice peer, uint8_t* out) noexcept {
  return guarded("device_can_access_peer", [&]() -> axl_status {
    if (out == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_can_access_peer: out is NULL");
    // Every pair of distinct virtual devices is connected, as GPUs on one
    // NVLink switch; a device and itself answer 0 (MAX's rule).
    *out = device != peer ? 1 : 0;
    return AXL_SUCCESS;
  });
}

axl_status device_enable_peer_access(axl_pdevice device, axl_pdevice peer) noexcept {
  return guarded("device_enable_peer_access", [&]() -> axl_status {
    if (device == nullptr || peer == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_enable_peer_access: a device is NULL");
    // Access between virtual devices is always on (can_access answers 1 for
    // every distinct pair), so enabling it is a no-op and idempotent; peer
    // copies work either way, as cuMemcpyPeerAsync does without it.
    return AXL_SUCCESS;
  });
}

}  // namespace axl::virt
