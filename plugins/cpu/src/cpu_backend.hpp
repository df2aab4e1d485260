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
#include <vector>

#include "axl/common/event.hpp"
#include "axl/common/flag.hpp"
#include "axl/common/handles.hpp"
#include "axl/common/kernel_cache.hpp"
#include "axl/common/launch_args.hpp"
#include "axl/common/live_queues.hpp"
#include "axl/common/pinned_pages.hpp"
#include "axl/common/plugin_support.hpp"
#include "axl/common/ref_counted.hpp"
#include "axl/common/slots.hpp"
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
  // `desc`: the bound on pending operations (axl_queue_desc.max_pending).
  Queue(uint64_t id, const axl_queue_desc& desc)
      : work(common::WorkQueue::from_desc(common::WorkQueue::Options{"axl-cpu-queue", {}}, desc)),
        trace_id(id) {}
  common::WorkQueue work;
  const uint64_t trace_id;  // axl_queue_desc.trace_id, echoed in trace records
};

// One declared kernel parameter.
using Param = common::KernelParam;

// Most bytes one scalar argument may have (CUDA allows 32 KiB in total), and
// most arguments; together they keep an ArgPack's offsets within 32 bits.
// A launch (kernel.cpp) and a module's declared signature (module.cpp) are
// held to them.
constexpr uint32_t kMaxScalarBytes = 64u << 10;
constexpr uint32_t kMaxArgs = 4096;

struct Module;

// A kernel: a function of the cpu_kernel.h signature and its name. `name`
// points at storage that lives as long as the kernel (the module's map key,
// or a literal for the built-in test kernels). A symbol from a shared object
// says nothing about its parameters; the built-in kernels, and module
// kernels that export a signature (cpu_kernel.h, AXL_CPU_KERNEL_SIGNATURE),
// declare them and have every launch checked against them.
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
  common::KernelCache<Kernel> kernels;
  // The declared signatures of its kernels (Kernel::params points into
  // them), added under the kernel cache's lock. Kept here, not in the
  // kernel, so that Kernel stays trivially destructible: the built-in
  // kernels are statics that launches still read while the process exits.
  std::vector<std::unique_ptr<Param[]>> signatures;

 private:
  friend class common::RefCounted<Module>;
  ~Module();
};

// The addresses memory_alloc handed out a few bytes into their block (large
// allocations, memory.cpp), so that memory_free can find the block's start.
// Few and long-lived; while there are none a free takes no lock.
class LargeBlocks {
 public:
  void add(axl_devaddr address);              // may throw std::bad_alloc
  bool remove(axl_devaddr address) noexcept;  // false: not one of them

 private:
  std::mutex mu_;
  std::unordered_set<axl_devaddr> live_;
  std::atomic<size_t> count_{0};
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

  common::LiveQueues<Queue> queues;  // stopped at shutdown

  LargeBlocks large_blocks;    // memory_alloc's large blocks
  common::PinnedPages pinned;  // pinned_alloc's blocks, locked where mlock allows
  std::atomic<bool> mlock_fallback_logged{false};
};

Backend& backend() noexcept;

inline common::HostServices& host() noexcept { return backend().host; }

// The objects behind the handles: events and flags are common's own.
inline constexpr common::Handles<Device, Queue, common::Event, common::Flag, Module, Kernel> from{};
// Runs `body` under the plugin's exception firewall (plugin_support.hpp).
inline constexpr common::Guarded<host> guarded{};
// Reports `message` with `status` (no native code: the host has none).
axl_status fail(axl_status status, const std::string& message);

// Host memory facts (sysconf, /proc/meminfo).
uint64_t total_memory_bytes() noexcept;
uint64_t available_memory_bytes() noexcept;

// ---- table slots (one .cpp per concept) ------------------------------------
// Their contracts are the comments on the slots in axl/plugin.h.
// Every slot, with plugin.h's signatures (plugins/common/.../slots.hpp): one
// definition per .cpp of its concept (backend in plugin.cpp, device.cpp, ...).
AXL_DECLARE_PLUGIN_SLOTS()

}  // namespace axl::cpu
