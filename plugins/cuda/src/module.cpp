// Loading CUDA modules: PTX, cubin or fatbin through cuModuleLoadDataEx
// (with the JIT's error log in the message), the built-in test kernels from
// embedded PTX, and CUDA C++ through NVRTC (module_compile).
#include <memory>

#include "cuda_backend.hpp"
#include "nvrtc.hpp"
#include "test_kernels_ptx.hpp"

namespace axl::cuda {

namespace {

constexpr size_t kJitLogBytes = 16 << 10;

}  // namespace

axl_status CudaDriver::load_image(Device& d, const void* image, size_t size, const char* what, Module** out) {
  if (axl_status s = Plugin::make_current(d)) return s;
  // PTX is read up to its NUL; cubin and fatbin by their headers. A copy
  // with a NUL appended serves all three without trusting the caller's
  // buffer to be terminated.
  std::vector<char> bytes(static_cast<const char*>(image), static_cast<const char*>(image) + size);
  bytes.push_back('\0');
  std::vector<char> log(kJitLogBytes, '\0');
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(log.size()))};
  auto m = std::make_unique<Module>();
  m->device = &d;
  const CUresult r = Plugin::api().module_load_data(&m->module, bytes.data(), 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    log.back() = '\0';
    std::string context = common::str("loading ", what, " (", size, " bytes) on CUDA device ", d.index,
                                      " (", d.props.architecture_name, ")");
    if (log[0] != '\0') context += common::str("; JIT log:\n", log.data());
    return Plugin::fail_driver(r, names.module_load_data, context,
                               r == CUDA_ERROR_OUT_OF_MEMORY ? AXL_ERROR_OUT_OF_DEVICE_MEMORY
                                                             : AXL_ERROR_INVALID_ARGUMENT);
  }
  *out = m.release();
  return AXL_SUCCESS;
}

axl_status CudaDriver::load_test_module(Device& d, Module** out) {
  return load_image(d, kTestKernelsPtx, sizeof kTestKernelsPtx - 1, "the built-in test kernels (PTX)", out);
}

common::CompileResult CudaDriver::compile(Device& d, const std::string& source, const std::string& name,
                                          const std::vector<std::string>& options) {
  // A cubin for the device's exact architecture: no JIT at load, and no
  // PTX newer than the driver can read.
  return Nvrtc::instance().compile(source, name, options, d.props.architecture_name);
}

}  // namespace axl::cuda
