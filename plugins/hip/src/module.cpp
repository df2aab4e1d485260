// Loading HIP modules: AMD GPU code objects (HSACO, or an offload bundle
// with one for the device) through hipModuleLoadData; HIP C++ through
// hiprtc (module_compile) and the test kernels compiled by it.
#include <memory>

#include "hip_backend.hpp"
#include "hiprtc.hpp"

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

axl_status HipDriver::load_test_module(Device& d, Module** out) {
  // Code objects are per gfx target, so the test kernels are compiled for
  // this device's from source, once per device.
  common::CompileResult r =
      Hiprtc::instance().compile(kTestKernelsSource, "axl_test_kernels.hip", {}, d.props.architecture_name);
  if (r.status != AXL_SUCCESS)
    return Plugin::fail(r.status, "device_get_test_kernel: the test kernels could not be compiled: " + r.message);
  return load_image(d, r.image.data(), r.image.size(), "the built-in test kernels (hiprtc)", out);
}

common::CompileResult HipDriver::compile(Device& d, const std::string& source, const std::string& name,
                                         const std::vector<std::string>& options) {
  // A code object for the device's exact target id (features included).
  return Hiprtc::instance().compile(source, name, options, d.props.architecture_name);
}

}  // namespace axl::hip
