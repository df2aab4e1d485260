// The device_* slots of DriverPlugin<D>: lazy set-up of each device (primary context, what never changes, stream-ordered allocation), properties, memory info and peer access.
// Part of driver_plugin_slots.hpp, which includes every part; included by
// exactly one translation unit of each driver-API plugin (its plugin.cpp).
#pragma once

#include <algorithm>
#include <cstring>

#include "axl/common/driver_plugin.hpp"
#include "axl/common/slot_checks.hpp"

namespace axl::common {

// ---- devices ----------------------------------------------------------------

// Retains the primary context, reads what never changes (the vendor part in
// D::describe) and sets up stream-ordered allocation. The caller holds dev_mu.
template <class D>
axl_status DriverPlugin<D>::set_up(uint32_t index, std::unique_ptr<Device>& out) {
  const Api& a = api();
  auto d = std::make_unique<Device>();
  d->index = index;
  if (axl_status s = check(a.device_get(&d->dev, static_cast<int>(index)), D::names.device_get,
                           str("device ", index)))
    return s;
  if (axl_status s = check(D::retain(a, &d->ctx, d->dev), D::text.retain_call, str("device ", index)))
    return s;
  if (axl_status s = make_current(*d)) {
    D::release(a, d->dev);
    return s;
  }
  axl_device_properties& p = d->props;
  p.struct_size = sizeof p;
  std::snprintf(p.label, sizeof p.label, "%s", "gpu");
  std::snprintf(p.api, sizeof p.api, "%s", D::text.plugin);
  if (a.device_get_name(p.model_name, static_cast<int>(sizeof p.model_name), d->dev) != D::kSuccess)
    std::snprintf(p.model_name, sizeof p.model_name, "%s device", D::text.vendor);
  size_t total = 0;
  axl_status s = check(a.device_total_mem(&total, d->dev), D::names.device_total_mem);
  p.total_memory_bytes = total;
  // Neither API has a per-allocation cap below the device's memory.
  p.max_single_alloc_bytes = total;
  p.is_host = 0;
  // The architecture, unified memory, compatibility, pools and stream
  // memory operations: the vendor's own queries.
  if (s == AXL_SUCCESS) s = D::describe(*d);
  if (s != AXL_SUCCESS) {
    D::release(a, d->dev);
    return s;
  }
  // What the device supports, usable only where the runtime has the calls.
  d->stream_mem_ops = d->stream_mem_ops && a.stream_wait_value64 != nullptr && a.stream_write_value64 != nullptr;
  d->pools = d->pools && a.malloc_from_pool != nullptr && a.free_async != nullptr && a.pool_create != nullptr &&
             a.pool_destroy != nullptr && a.pool_set_attribute != nullptr;
  if (d->pools) {
    // A pool of axl's own: the device's default pool is process-wide (the
    // CUDA runtime's cudaMallocAsync, PyTorch and CuPy allocate from it), so
    // its release threshold is not axl's to change. This one caches freed
    // memory instead of returning it to the driver at every
    // synchronisation (what makes stream-ordered allocation cheap), and
    // gives it back when an allocation runs out of memory (memory_alloc).
    uint64_t keep = ~uint64_t{0};
    if (D::pool_create(a, &d->pool, d->dev) != D::kSuccess) {
      d->pools = false;
      d->pool = nullptr;
    } else if (a.pool_set_attribute(d->pool, D::kPoolReleaseThreshold, &keep) != D::kSuccess ||
               a.stream_create(&d->alloc_stream, D::kStreamNonBlocking) != D::kSuccess) {
      (void)a.pool_destroy(d->pool);
      d->pools = false;
      d->pool = nullptr;
    }
  }
  d->pool_alloc.store(d->pools);
  out = std::move(d);
  return AXL_SUCCESS;
}

template <class D>
axl_status DriverPlugin<D>::device_get(uint32_t index, axl_pdevice* out_device) noexcept {
  return guarded("device_get", [&]() -> axl_status {
    if (out_device == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get: out_device is NULL");
    State& b = state();
    std::lock_guard<std::mutex> lk(b.dev_mu);
    if (index >= b.devices.size())
      return fail(AXL_ERROR_OUT_OF_RANGE, str("device_get: index ", index, " is not below the ",
                                              b.devices.size(), " ", D::text.vendor, " device(s)"));
    if (!b.devices[index])
      if (axl_status s = set_up(index, b.devices[index])) return s;
    *out_device = reinterpret_cast<axl_pdevice>(b.devices[index].get());
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::device_get_properties(axl_pdevice device, axl_device_properties* props) noexcept {
  return guarded("device_get_properties", [&]() -> axl_status {
    return copy_device_properties(fail, from(device)->props, props);
  });
}

template <class D>
axl_status DriverPlugin<D>::device_get_memory_info(axl_pdevice device, uint64_t* out_free,
                                                   uint64_t* out_total) noexcept {
  return guarded("device_get_memory_info", [&]() -> axl_status {
    if (out_free == nullptr || out_total == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_memory_info: an output pointer is NULL");
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    size_t free_bytes = 0, total = 0;
    if (axl_status s = check(api().mem_get_info(&free_bytes, &total), D::names.mem_get_info)) return s;
    *out_free = free_bytes;
    *out_total = total;
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::device_can_access_peer(axl_pdevice device, axl_pdevice peer, uint8_t* out) noexcept {
  return guarded("device_can_access_peer", [&]() -> axl_status {
    if (out == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_can_access_peer: out is NULL");
    Device& d = *from(device);
    Device& p = *from(peer);
    *out = 0;
    if (&d == &p) return AXL_SUCCESS;  // MAX's rule: a device is not its own peer
    int can = 0;
    if (axl_status s = check(api().device_can_access_peer(&can, d.dev, p.dev), D::names.device_can_access_peer,
                             str("devices ", d.index, " -> ", p.index)))
      return s;
    *out = can != 0 ? 1 : 0;
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::device_enable_peer_access(axl_pdevice device, axl_pdevice peer) noexcept {
  return guarded("device_enable_peer_access", [&]() -> axl_status {
    Device& d = *from(device);
    Device& p = *from(peer);
    const std::string pair = str(D::text.vendor, " device ", d.index, " (", d.props.model_name,
                                 ") accessing device ", p.index, " (", p.props.model_name, ")");
    if (&d == &p) return AXL_SUCCESS;
    const Api& a = api();
    int can = 0;
    if (axl_status s = check(a.device_can_access_peer(&can, d.dev, p.dev), D::names.device_can_access_peer, pair))
      return s;
    if (can == 0)
      return fail(AXL_ERROR_UNSUPPORTED, str("peer access is not possible for ", pair, " (",
                                             D::names.device_can_access_peer, " answered 0)"));
    if (axl_status s = make_current(d)) return s;
    const Result r = a.enable_peer_access(p.ctx, 0);
    if (r != D::kSuccess && r != D::kPeerAlreadyEnabled)
      return fail_driver(r, D::names.enable_peer_access, pair);
    // Stream-ordered (pool) allocations ignore peer access granted above:
    // the peer's pool must grant it separately.
    if (p.pools && a.pool_set_access != nullptr) {
      typename D::AccessDesc access{};
      access.location.type = D::kLocationDevice;
      access.location.id = d.dev;
      access.flags = D::kProtReadWrite;
      if (axl_status s = check(a.pool_set_access(p.pool, &access, 1), D::names.pool_set_access, pair))
        return s;
    }
    return AXL_SUCCESS;
  });
}

}  // namespace axl::common
