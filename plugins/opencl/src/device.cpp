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

}  // namespace axl::opencl
