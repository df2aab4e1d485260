// What a HIP device is beyond what DriverPlugin reads (name, memory): its
// gfx architecture, whether it has stream-ordered allocation and 64-bit stream memory
// operations; and host callbacks on runtimes without hipLaunchHostFunc.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "hip_backend.hpp"

namespace axl::hip {

namespace {

int attribute(const HipDriver::Device& d, hipDeviceAttribute_t which) {
  int v = 0;
  if (Plugin::api().device_get_attribute(&v, which, d.dev) != hipSuccess) return 0;
  return v;
}

// A callback's function and argument while it waits on the stream.
struct HostCall {
  axl_host_fn fn;
  void* user;
};

// hipStreamAddCallback's callback also runs after a failed stream (with the
// error in `status`): plugin.h's host function runs once its queue reaches
// it either way, and the failure surfaces at the next synchronize.
void run_host_call(hipStream_t, hipError_t, void* p) {
  std::unique_ptr<HostCall> call(static_cast<HostCall*>(p));
  call->fn(call->user);
}

}  // namespace

hipError_t HipDriver::host_fn(const Api& a, Stream s, axl_host_fn fn, void* user, const char** call) noexcept {
  if (a.launch_host_func != nullptr) {
    // axl_host_fn and hipHostFn_t have the same signature, void(void*).
    *call = names.launch_host_func;
    return a.launch_host_func(s, fn, user);
  }
  *call = names.stream_add_callback;
  auto* pending = new (std::nothrow) HostCall{fn, user};
  if (pending == nullptr) return hipErrorOutOfMemory;
  const hipError_t r = a.stream_add_callback(s, run_host_call, pending, 0);
  if (r != hipSuccess) delete pending;
  return r;
}

axl_status HipDriver::describe(Device& d) {
  const RuntimeApi& a = Plugin::api();
  axl_device_properties& p = d.props;
  // hipDeviceProp_t grew in HIP 6 (hipGetDeviceProperties became
  // hipGetDevicePropertiesR0600, the old name keeping the old layout); the
  // buffer is larger than any layout so a newer runtime cannot overrun it.
  struct alignas(hipDeviceProp_t) PropsBuffer {
    unsigned char bytes[sizeof(hipDeviceProp_t) + 4096];
  };
  auto buffer = std::make_unique<PropsBuffer>();
  auto* props = reinterpret_cast<hipDeviceProp_t*>(buffer->bytes);
  if (axl_status s = Plugin::check(a.get_device_properties(props, d.dev), names.get_device_properties,
                                   common::str("device ", d.index)))
    return s;
  // "gfx90a:sramecc+:xnack-": the target id hipcc's --offload-arch takes.
  const std::string arch(props->gcnArchName, strnlen(props->gcnArchName, sizeof props->gcnArchName));
  std::snprintf(p.architecture_name, sizeof p.architecture_name, "%s", arch.c_str());
  p.is_host_unified = attribute(d, hipDeviceAttributeIntegrated) != 0 ? 1 : 0;
  // Code objects are built per gfx target, so any device the runtime
  // reports with one can run axl's modules.
  p.is_compatible = std::strncmp(p.architecture_name, "gfx", 3) == 0 ? 1 : 0;

  // DriverPlugin checks that the entry points exist too.
  d.stream_mem_ops = attribute(d, hipDeviceAttributeCanUseStreamWaitValue) != 0;
  d.pools = attribute(d, hipDeviceAttributeMemoryPoolsSupported) != 0;
  d.max_dynamic_shared = static_cast<uint32_t>(attribute(d, hipDeviceAttributeMaxSharedMemoryPerBlock));
  return AXL_SUCCESS;
}

}  // namespace axl::hip
