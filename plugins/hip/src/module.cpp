// Loading HIP modules: AMD GPU code objects (HSACO, or an offload bundle
// with one for the device) through hipModuleLoadData.
#include <memory>

#include "hip_backend.hpp"

namespace axl::hip {

axl_status HipDriver::load_image(Device& d, const void* image, size_t size, const char* what, Module** out) {
  if (axl_status s = Plugin::make_current(d)) return s;
  auto m = std::make_unique<Module>();
  m->device = &d;
  // A code object is an ELF image read by its headers; HIP has no JIT log.
  const hipError_t r = Plugin::api().module_load_data(&m->module, image);
  if (r != hipSuccess)
    return Plugin::fail_driver(r, names.module_load_data,
                               common::str("loading ", what, " (", size, " bytes) on HIP device ", d.index, " (",
                                           d.props.architecture_name, ")"),
                               r == hipErrorOutOfMemory ? AXL_ERROR_OUT_OF_DEVICE_MEMORY
                                                        : AXL_ERROR_INVALID_ARGUMENT);
  *out = m.release();
  return AXL_SUCCESS;
}

axl_status HipDriver::load_test_module(Device& d, Module**) {
  // Code objects are per gfx target and axl ships no compiler for them
  // (no hiprtc yet), so there are no built-in test kernels to load.
  return Plugin::fail(AXL_ERROR_UNSUPPORTED,
                      common::str("device_get_test_kernel: the hip backend has no built-in test kernels for ",
                                  d.props.architecture_name,
                                  " (they need a code object per gfx target); load an HSACO with module_load"));
}

}  // namespace axl::hip
