// Internal state of the cpu backend and the declarations of its table slots.
// The plugin's handles are pointers to the structs below, cast to the opaque
// axl_p* types of plugin.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "axl/common/launch_args.hpp"
#include "axl/common/plugin_support.hpp"
#include "axl/common/ref_counted.hpp"
#include "axl/common/thread_pool.hpp"
#include "axl/common/trace.hpp"
#include "axl/common/work_queue.hpp"
#include "axl/cpu_kernel.h"
#include "axl/plugin.h"

namespace axl::cpu {

// The one device: the host.
struct Device {
  std::once_flag props_once;
  axl_device_properties props{};  // complete, filled on first use
};

// An in-order queue with its own worker thread.
struct Queue {
  explicit Queue(uint64_t id)
      : work(common::WorkQueue::Options{"axl-cpu-queue", {}}), trace_id(id) {}
  common::WorkQueue work;
  const uint64_t trace_id;  // axl_queue_desc.trace_id, echoed in trace records
};

// One declared kernel parameter (built-in test kernels only).
using Param = common::KernelParam;

struct Module;

// A kernel: a function of the cpu_kernel.h signature and its name. `name`
// points at storage that lives as long as the kernel (the module's map key,
// or a literal for the built-in test kernels). A symbol from a shared object
// says nothing about its parameters, so only built-in kernels declare them
// and have launches checked against them.
struct Kernel {
  axl_cpu_kernel_fn fn;
  const char* name;
  const Param* params = nullptr;
  int32_t param_count = -1;  // -1: unknown, launches are not checked
  Module* module = nullptr;  // owner; NULL for built-in kernels
};

// A loaded ELF shared object and the kernels handed out from it. Reference
// counted: module_unload drops the handle's reference, and every queued
// launch of one of its kernels holds another, so the code is unmapped
// (dlclose, in the destructor) only after the last such launch ran.
struct Module : common::RefCounted<Module> {
  void* handle = nullptr;  // from dlopen
  std::string label;       // the path, or "<N bytes in memory>", for messages
  std::mutex mu;           // guards kernels
  std::unordered_map<std::string, std::unique_ptr<Kernel>> kernels;

 private:
  friend class common::RefCounted<Module>;
  ~Module();
};

// Everything global to the backend. Lives in storage that is never destroyed:
// the pool's threads are joined in backend_shutdown, never by a static
// destructor at exit (plugin.h), and the core may call the host services
// from any thread until the process ends.
struct Backend {
  common::HostServices host;
  common::Tracer tracer{host};
  common::ThreadPool pool{"axl-cpu-pool"};
  Device device;

  std::mutex mu;                        // guards queues
  std::unordered_set<Queue*> queues;    // live queues, stopped at shutdown

  // Pinned allocations: pinned_free gets only the pointer, but munmap and
  // munlock need the length.
  struct PinnedBlock {
    uint64_t bytes;  // mapped length, whole pages
    bool locked;     // mlock succeeded
  };
  std::mutex pinned_mu;
  std::unordered_map<void*, PinnedBlock> pinned;
  std::atomic<bool> mlock_fallback_logged{false};
};

Backend& backend() noexcept;

inline Device* from(axl_pdevice d) noexcept { return reinterpret_cast<Device*>(d); }
inline Queue* from(axl_pqueue q) noexcept { return reinterpret_cast<Queue*>(q); }
inline Module* from(axl_pmodule m) noexcept { return reinterpret_cast<Module*>(m); }
inline Kernel* from(axl_pkernel k) noexcept { return reinterpret_cast<Kernel*>(k); }

// Runs `body` under the plugin's exception firewall (plugin_support.hpp).
template <class F>
axl_status guarded(const char* slot, F&& body) noexcept {
  return common::guard(backend().host, slot, std::forward<F>(body));
}

// Host memory facts (sysconf, /proc/meminfo).
uint64_t total_memory_bytes() noexcept;
uint64_t available_memory_bytes() noexcept;

// ---- table slots (one .cpp per concept) ------------------------------------
// Their contracts are the comments on the slots in axl/plugin.h.
// backend (plugin.cpp)
axl_status backend_init() noexcept;
axl_status backend_shutdown() noexcept;
axl_status backend_device_count(uint32_t* out_count) noexcept;
axl_status backend_set_tracing(uint8_t enabled) noexcept;
axl_status backend_set_option(const char* key, const char* value) noexcept;
// device (device.cpp)
axl_status device_get(uint32_t index, axl_pdevice* out_device) noexcept;
axl_status device_get_properties(axl_pdevice device, axl_device_properties* props) noexcept;
axl_status device_get_memory_info(axl_pdevice device, uint64_t* out_free,
                                  uint64_t* out_total) noexcept;
axl_status device_can_access_peer(axl_pdevice device, axl_pdevice peer, uint8_t* out) noexcept;
// memory (memory.cpp)
axl_status memory_alloc(axl_pdevice device, uint64_t bytes, axl_devaddr* out_address) noexcept;
axl_status memory_free(axl_pdevice device, axl_devaddr address) noexcept;
axl_status pinned_alloc(axl_pdevice device, uint64_t bytes, void** out_host) noexcept;
axl_status pinned_free(axl_pdevice device, void* host) noexcept;
// queue (queue.cpp)
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
// launch (kernel.cpp)
axl_status queue_launch(axl_pqueue queue, axl_pkernel kernel, const axl_launch_config* config,
                        const axl_kernel_arg* args, uint32_t num_args) noexcept;
axl_status device_get_test_kernel(axl_pdevice device, int32_t which,
                                  axl_pkernel* out_kernel) noexcept;
// event (event.cpp)
axl_status event_create(axl_pdevice device, uint32_t flags, axl_pevent* out_event) noexcept;
axl_status event_destroy(axl_pevent event) noexcept;
axl_status event_synchronize(axl_pevent event) noexcept;
axl_status event_query(axl_pevent event) noexcept;
axl_status event_elapsed_ms(axl_pevent start, axl_pevent end, float* out_ms) noexcept;
// flag (flag.cpp)
axl_status flag_create(axl_pdevice device, axl_pflag* out_flag) noexcept;
axl_status flag_destroy(axl_pflag flag) noexcept;
axl_status flag_get_device_address(axl_pflag flag, axl_devaddr* out) noexcept;
axl_status flag_get_host_address(axl_pflag flag, uint64_t** out) noexcept;
// module (module.cpp)
axl_status module_load(axl_pdevice device, const axl_module_desc* desc,
                       axl_pmodule* out_module) noexcept;
axl_status module_unload(axl_pmodule module) noexcept;
axl_status module_get_kernel(axl_pmodule module, const char* name,
                             axl_pkernel* out_kernel) noexcept;

}  // namespace axl::cpu
