// Devices: found by discovery (plugin.cpp); properties.
#include "axl/common/slot_checks.hpp"
#include "cl_backend.hpp"

namespace axl::opencl {

axl_status device_get(uint32_t index, axl_pdevice* out_device) noexcept {
  return guarded("device_get", [&]() -> axl_status {
    if (out_device == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "device_get: out_device is NULL");
    if (axl_status s = discover()) return s;
    Backend& b = backend();
    if (index >= b.devices.size())
      return fail(AXL_ERROR_OUT_OF_RANGE, common::str("device index ", index, " is out of range: ",
                                                      b.devices.size(), " OpenCL device(s)"));
    *out_device = common::to_handle<axl_pdevice>(b.devices[index].get());
    return AXL_SUCCESS;
  });
}

axl_status device_get_properties(axl_pdevice device, axl_device_properties* props) noexcept {
  return guarded("device_get_properties", [&]() -> axl_status {
    return common::copy_device_properties(fail, from(device)->props, props);
  });
}

}  // namespace axl::opencl
