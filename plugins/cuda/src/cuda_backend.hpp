// Internal state of the cuda backend and its table slots. Handles are
// pointers to the structs below cast to plugin.h's opaque types.
//
// Devices run on their primary contexts (the ones the CUDA runtime, and so
// PyTorch and CuPy, use), queues are non-blocking streams, events are
// CUevents, completion flags are 8 bytes of mapped pinned memory driven by
// the stream memory operations, kernels come from cuModuleLoadDataEx (PTX,
// cubin, fatbin) or from NVRTC (module_compile). docs/backends.md maps every
// slot to the driver call behind it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "axl/common/deferred_release.hpp"
#include "axl/common/launch_args.hpp"
#include "axl/common/plugin_support.hpp"
#include "axl/common/trace.hpp"
#include "axl/plugin.h"
#include "cuda_driver.hpp"

namespace axl::cuda {

struct Module;

struct Kernel {
  CUfunction fn = nullptr;
  std::string name;
  const common::KernelParam* params = nullptr;  // test kernels only
  int32_t param_count = -1;                       // -1: not checked
};

struct Device {
  uint32_t index = 0;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;  // retained primary context
  axl_device_properties props{};
  bool pools = false;        // cuMemAllocAsync usable
  bool stream_mem_ops = false;  // cuStreamWaitValue64/WriteValue64 usable
  CUmemoryPool pool = nullptr;  // the device's default pool when `pools`
  CUstream alloc_stream = nullptr;  // orders pool allocations and frees

  std::mutex test_mu;  // guards the test-kernel module
  Module* test_module = nullptr;
  Kernel test_kernels[2];
};

struct Queue {
  Device* device = nullptr;
  CUstream stream = nullptr;
  uint64_t trace_id = 0;
};

struct Event {
  Device* device = nullptr;
  CUevent event = nullptr;
};

struct Flag {
  Device* device = nullptr;
  uint64_t* host = nullptr;  // cuMemHostAlloc'ed, PORTABLE | DEVICEMAP
  CUdeviceptr address = 0;
};

struct Module {
  Device* device = nullptr;
  CUmodule module = nullptr;
  std::mutex mu;  // guards kernels
  std::unordered_map<std::string, std::unique_ptr<Kernel>> kernels;
};

// Never destroyed: the core may call in from any thread until exit, and the
// driver library is never unloaded.
struct Backend {
  common::HostServices host;
  common::Tracer tracer{host};

  std::once_flag probe_once;
  DriverProbe probe;  // written once under probe_once
  pid_t probe_pid = 0;
  common::DriverLibrary lib;
  DriverApi api;

  std::mutex dev_mu;  // serialises device setup
  std::vector<std::unique_ptr<Device>> devices;  // sized at init, filled lazily

  std::mutex queues_mu;
  std::unordered_set<Queue*> queues;  // live queues, for deferred releases

  common::DeferredReleases graveyard;  // modules and flags waiting for work
};

Backend& backend() noexcept;
// Loads and probes the driver once; the result is what every slot reports
// when the backend cannot run.
const DriverProbe& probe();
// AXL_SUCCESS, or reports why the backend is unavailable (or forked).
axl_status require_driver();

inline const DriverApi& api() noexcept { return backend().api; }
inline Device* from(axl_pdevice d) noexcept { return reinterpret_cast<Device*>(d); }
inline Queue* from(axl_pqueue q) noexcept { return reinterpret_cast<Queue*>(q); }
inline Event* from(axl_pevent e) noexcept { return reinterpret_cast<Event*>(e); }
inline Flag* from(axl_pflag f) noexcept { return reinterpret_cast<Flag*>(f); }
inline Module* from(axl_pmodule m) noexcept { return reinterpret_cast<Module*>(m); }
inline Kernel* from(axl_pkernel k) noexcept { return reinterpret_cast<Kernel*>(k); }

template <class F>
axl_status guarded(const char* slot, F&& body) noexcept {
  return common::guard(backend().host, slot, std::forward<F>(body));
}

// Reports a failed driver call `call` with its CUDA name and description.
axl_status fail_cu(CUresult r, const char* call, const std::string& context = {},
                   axl_status status = AXL_SUCCESS) noexcept;
axl_status fail(axl_status status, const std::string& message) noexcept;
// fail_cu unless r is CUDA_SUCCESS.
inline axl_status check(CUresult r, const char* call, const std::string& context = {}) noexcept {
  return r == CUDA_SUCCESS ? AXL_SUCCESS : fail_cu(r, call, context);
}

// Makes the device's primary context current on the calling thread (the
// plugin leaves it current, as the CUDA runtime does).
axl_status make_current(const Device& d) noexcept;

// Parks `release` until every queue alive now has finished the work it
// holds (an event recorded on each), so modules and flags outlive launches
// and waits already enqueued.
axl_status release_after_queued_work(Device& d, std::function<void()> release);

// Loads a module image (PTX text, cubin, fatbin) on `d`; on failure the JIT
// log is in the reported message.
axl_status load_image(Device& d, const void* image, size_t size, const char* what,
                      Module** out);

// ---- table slots: contracts in axl/plugin.h --------------------------------
axl_status backend_init() noexcept;
axl_status backend_shutdown() noexcept;
axl_status backend_device_count(uint32_t* out_count) noexcept;
axl_status backend_set_tracing(uint8_t enabled) noexcept;
axl_status device_get(uint32_t index, axl_pdevice* out_device) noexcept;
axl_status device_get_properties(axl_pdevice device, axl_device_properties* props) noexcept;
axl_status device_get_memory_info(axl_pdevice device, uint64_t* out_free,
                                  uint64_t* out_total) noexcept;
axl_status device_can_access_peer(axl_pdevice device, axl_pdevice peer, uint8_t* out) noexcept;
axl_status device_enable_peer_access(axl_pdevice device, axl_pdevice peer) noexcept;
axl_status memory_alloc(axl_pdevice device, uint64_t bytes, axl_devaddr* out_address) noexcept;
axl_status memory_free(axl_pdevice device, axl_devaddr address) noexcept;
axl_status pinned_alloc(axl_pdevice device, uint64_t bytes, void** out_host) noexcept;
axl_status pinned_free(axl_pdevice device, void* host) noexcept;
axl_status queue_create(axl_pdevice device, const axl_queue_desc* desc,
                        axl_pqueue* out_queue) noexcept;
axl_status queue_destroy(axl_pqueue queue) noexcept;
axl_status queue_synchronize(axl_pqueue queue) noexcept;
axl_status queue_copy_htod(axl_pqueue queue, axl_devaddr dst, const void* src,
                           uint64_t bytes) noexcept;
axl_status queue_copy_dtoh(axl_pqueue queue, void* dst, axl_devaddr src, uint64_t bytes) noexcept;
axl_status queue_copy_dtod(axl_pqueue queue, axl_devaddr dst, axl_devaddr src,
                           uint64_t bytes) noexcept;
axl_status queue_copy_peer(axl_pqueue queue, axl_pdevice dst_device, axl_devaddr dst,
                           axl_pdevice src_device, axl_devaddr src, uint64_t bytes) noexcept;
axl_status queue_fill(axl_pqueue queue, axl_devaddr dst, uint64_t bytes, uint32_t pattern,
                      uint32_t pattern_size) noexcept;
axl_status queue_record_event(axl_pqueue queue, axl_pevent event) noexcept;
axl_status queue_wait_event(axl_pqueue queue, axl_pevent event) noexcept;
axl_status queue_wait_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept;
axl_status queue_write_flag(axl_pqueue queue, axl_pflag flag, uint64_t value) noexcept;
axl_status queue_enqueue_host_fn(axl_pqueue queue, axl_host_fn fn, void* user_data) noexcept;
axl_status queue_get_native_handle(axl_pqueue queue, uint64_t* out_handle) noexcept;
axl_status queue_launch(axl_pqueue queue, axl_pkernel kernel, const axl_launch_config* config,
                        const axl_kernel_arg* args, uint32_t num_args) noexcept;
axl_status event_create(axl_pdevice device, uint32_t flags, axl_pevent* out_event) noexcept;
axl_status event_destroy(axl_pevent event) noexcept;
axl_status event_synchronize(axl_pevent event) noexcept;
axl_status event_query(axl_pevent event) noexcept;
axl_status event_elapsed_ms(axl_pevent start, axl_pevent end, float* out_ms) noexcept;
axl_status flag_create(axl_pdevice device, axl_pflag* out_flag) noexcept;
axl_status flag_destroy(axl_pflag flag) noexcept;
axl_status flag_get_device_address(axl_pflag flag, axl_devaddr* out) noexcept;
axl_status flag_get_host_address(axl_pflag flag, uint64_t** out) noexcept;
axl_status module_load(axl_pdevice device, const axl_module_desc* desc,
                       axl_pmodule* out_module) noexcept;
axl_status module_unload(axl_pmodule module) noexcept;
axl_status module_get_kernel(axl_pmodule module, const char* name,
                             axl_pkernel* out_kernel) noexcept;
axl_status device_get_test_kernel(axl_pdevice device, int32_t which,
                                  axl_pkernel* out_kernel) noexcept;
axl_status module_compile(axl_pdevice device, const axl_compile_desc* desc,
                          axl_pmodule* out_module) noexcept;

}  // namespace axl::cuda
