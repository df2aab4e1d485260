// Memory: device allocations (zeMemAllocDevice, or zeMemAllocShared when the
// memory_kind option says "shared") and pinned host memory (zeMemAllocHost).
#include "axl/common/slot_checks.hpp"
#include "l0_backend.hpp"

namespace axl::l0 {

namespace {

enum Kind : uint8_t { kDevice = 1, kShared = 2, kHost = 3 };

const char* kind_name(uint8_t k) {
  return k == kDevice ? "device memory" : k == kShared ? "shared memory" : "pinned host memory";
}

void remember(Device& d, const void* p, Kind k) {
  std::lock_guard<std::mutex> lk(d.mem_mu);
  d.allocations[reinterpret_cast<uint64_t>(p)] = k;
}

// Removes `address` if it is a live allocation of one of `kinds`; otherwise
// reports INVALID_ARGUMENT naming what it is instead.
axl_status forget(Device& d, uint64_t address, bool pinned, const char* slot) {
  std::lock_guard<std::mutex> lk(d.mem_mu);
  auto it = d.allocations.find(address);
  if (it == d.allocations.end())
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                common::str(slot, ": 0x", std::hex, address,
                            " is not an allocation of this Level Zero device"));
  if ((it->second == kHost) != pinned)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                common::str(slot, ": 0x", std::hex, address, " is ", kind_name(it->second)));
  d.allocations.erase(it);
  return AXL_SUCCESS;
}

}  // namespace

axl_status memory_alloc(axl_pdevice device, uint64_t bytes, axl_devaddr* out_address) noexcept {
  return guarded("memory_alloc", [&]() -> axl_status {
    Device& d = *from(device);
    if (axl_status s = common::check_memory_alloc(fail, d.props, bytes, out_address,
                                                  "ze_device_properties_t.maxMemAllocSize"))
      return s;
    ze_device_mem_alloc_desc_t dd{};
    dd.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
    void* p = nullptr;
    const bool shared = backend().shared_memory.load(std::memory_order_relaxed);
    ze_result_t r;
    if (shared) {
      ze_host_mem_alloc_desc_t hd{};
      hd.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
      r = ze().zeMemAllocShared(d.context(), &dd, &hd, bytes, kDeviceAlign, d.handle, &p);
    } else {
      r = ze().zeMemAllocDevice(d.context(), &dd, bytes, kDeviceAlign, d.handle, &p);
    }
    if (r != ZE_RESULT_SUCCESS || p == nullptr) {
      const char* call = shared ? "zeMemAllocShared" : "zeMemAllocDevice";
      // Every way an allocation of a valid size fails means "no memory for it".
      return ze_fail(call, r, common::str(bytes, " bytes"), AXL_ERROR_OUT_OF_DEVICE_MEMORY);
    }
    remember(d, p, shared ? kShared : kDevice);
    *out_address = reinterpret_cast<axl_devaddr>(p);
    return AXL_SUCCESS;
  });
}

axl_status memory_free(axl_pdevice device, axl_devaddr address) noexcept {
  return guarded("memory_free", [&]() -> axl_status {
    Device& d = *from(device);
    if (axl_status s = forget(d, address, false, "memory_free")) return s;
    if (ze_result_t r = ze().zeMemFree(d.context(), reinterpret_cast<void*>(address)))
      return ze_fail("zeMemFree", r);
    return AXL_SUCCESS;
  });
}

axl_status pinned_alloc(axl_pdevice device, uint64_t bytes, void** out_host) noexcept {
  return guarded("pinned_alloc", [&]() -> axl_status {
    if (axl_status s = common::check_pinned_alloc(fail, bytes, out_host)) return s;
    Device& d = *from(device);
    ze_host_mem_alloc_desc_t hd{};
    hd.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
    void* p = nullptr;
    ze_result_t r = ze().zeMemAllocHost(d.context(), &hd, bytes, kPinnedAlign, &p);
    if (r != ZE_RESULT_SUCCESS || p == nullptr)
      return ze_fail("zeMemAllocHost", r, common::str(bytes, " bytes"), AXL_ERROR_OUT_OF_HOST_MEMORY);
    remember(d, p, kHost);
    *out_host = p;
    return AXL_SUCCESS;
  });
}

axl_status pinned_free(axl_pdevice device, void* host) noexcept {
  return guarded("pinned_free", [&]() -> axl_status {
    Device& d = *from(device);
    if (axl_status s = forget(d, reinterpret_cast<uint64_t>(host), true, "pinned_free")) return s;
    if (ze_result_t r = ze().zeMemFree(d.context(), host)) return ze_fail("zeMemFree", r);
    return AXL_SUCCESS;
  });
}

}  // namespace axl::l0
