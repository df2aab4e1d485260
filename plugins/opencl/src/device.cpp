// Devices: found by discovery (plugin.cpp); properties.
#include "axl/common/slot_checks.hpp"
#include "cl_backend.hpp"

namespace axl::opencl {

axl_status device_get(uint32_t index, axl_pdevice* out_device) noexcept {
  return guarded("device_get", [&]() -> axl_status {
    return common::get_discovered_device(fail, discover, backend().devices, "OpenCL device(s)",
                                         index, out_device);
  });
}

axl_status device_get_properties(axl_pdevice device, axl_device_properties* props) noexcept {
  return guarded("device_get_properties", [&]() -> axl_status {
    return common::copy_device_properties(fail, from(device)->props, props);
  });
}

// OpenCL has no free-memory query (CL_DEVICE_GLOBAL_MEM_SIZE is the total),
// so free is the total less what this process allocated on the device
// through axl: right for a device the process has to itself, an upper bound
// when others share it (docs/backends.md, opencl).
axl_status device_get_memory_info(axl_pdevice device, uint64_t* out_free, uint64_t* out_total) noexcept {
  return guarded("device_get_memory_info", [&]() -> axl_status {
    if (out_free == nullptr || out_total == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get_memory_info: an output pointer is NULL");
    Device& d = *from(device);
    uint64_t used = 0;
    {
      std::lock_guard<std::mutex> lk(d.mem_mu);
      for (const auto& [address, b] : d.buffers) used += b.bytes;
    }
    const uint64_t total = d.props.total_memory_bytes;
    *out_total = total;
    *out_free = total > used ? total - used : 0;
    return AXL_SUCCESS;
  });
}

}  // namespace axl::opencl
