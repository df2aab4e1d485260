// Internal state of the Level Zero backend and the declarations of its table
// slots. Handles given to the core are pointers to the structs below, cast to
// the opaque axl_p* types of plugin.h.
//
// Mapping (docs/backends.md has the full table): one ze_context per driver;
// a queue is one immediate command list on the device's compute queue group,
// kept in order with barriers; an event record is a barrier (or, with timing,
// a global-timestamp write) signalling a fresh ze_event; host callbacks and
// flag waits run on a host thread per queue that hands over to the device
// through host-signalled events. Nothing here was run on Intel hardware.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "axl/common/census.hpp"
#include "axl/common/discovery.hpp"
#include "axl/common/driver_result.hpp"
#include "axl/common/handles.hpp"
#include "axl/common/kernel_cache.hpp"
#include "axl/common/launch_args.hpp"
#include "axl/common/live_queues.hpp"
#include "axl/common/plugin_support.hpp"
#include "axl/common/ref_counted.hpp"
#include "axl/common/slots.hpp"
#include "axl/common/trace.hpp"
#include "axl/common/work_queue.hpp"
#include "axl/plugin.h"
#include "ze_loader.hpp"

namespace axl::l0 {

// plugin.h: device memory aligned to at least 256 bytes, pinned to 64.
constexpr size_t kDeviceAlign = 256;
constexpr size_t kPinnedAlign = 64;

struct Driver {
  ze_driver_handle_t handle = nullptr;
  ze_context_handle_t context = nullptr;  // created by backend_init
};

struct Device {
  uint32_t index = 0;
  ze_device_handle_t handle = nullptr;
  Driver* driver = nullptr;
  axl_device_properties props{};  // fixed at discovery
  uint32_t compute_ordinal = 0;   // command queue group with COMPUTE
  uint32_t max_group_size = 0;    // threads per group, all dimensions
  uint32_t max_group_size_xyz[3] = {0, 0, 0};
  uint32_t max_group_count_xyz[3] = {0, 0, 0};
  double ns_per_tick = 1.0;        // ze_device_properties_t.timerResolution
  uint32_t timestamp_bits = 64;    // ze_device_properties_t.timestampValidBits

  std::mutex mem_mu;  // guards kinds
  // How each live allocation was made, so memory_free can tell a device
  // address it never handed out from one of its own.
  std::unordered_map<uint64_t, uint8_t> allocations;

  ze_context_handle_t context() const noexcept { return driver->context; }
};

// One ze_event in a pool of its own, optionally with 8 bytes of host memory
// the device writes a global timestamp into. Shared by reference between
// the axl object that made it and the queue work that signals or waits on
// it, so an axl event or flag can be destroyed while that work is pending.
class Signal : public common::RefCounted<Signal> {
 public:
  ze_event_handle_t event = nullptr;
  uint64_t* timestamp = nullptr;  // device-written global timestamp, or NULL
  // Creates the pool and event on `device`; `with_timestamp` also allocates
  // the timestamp word. Reports and returns a status; *out stays NULL on error.
  static axl_status create(Device& device, bool with_timestamp, common::Ref<Signal>* out);

 private:
  friend class common::RefCounted<Signal>;
  ~Signal();
  Device* device_ = nullptr;
  ze_event_pool_handle_t pool_ = nullptr;
};

// A completion flag: 8 bytes of Level Zero host memory (zeMemAllocHost), so
// the device can write it and the host reads and writes it directly.
class Flag : public common::RefCounted<Flag> {
 public:
  uint64_t* value = nullptr;
  static axl_status create(Device& device, common::Ref<Flag>* out);
  // Acquire load of the value.
  uint64_t load() const noexcept;

 private:
  friend class common::RefCounted<Flag>;
  ~Flag();
  Device* device_ = nullptr;
};

class Module;

struct Kernel {
  std::string name;
  ze_kernel_handle_t handle = nullptr;
  Module* module = nullptr;
  // Arguments are kernel state in Level Zero (zeKernelSetArgumentValue), so
  // set-arguments-then-append must not interleave between two queues.
  std::mutex launch_mu;
};

// A loaded SPIR-V module and the kernels handed out from it. Launches still
// pending hold references, so module_unload defers the zeModuleDestroy.
class Module : public common::RefCounted<Module> {
 public:
  Device* device = nullptr;
  ze_module_handle_t handle = nullptr;
  common::KernelCache<Kernel> kernels;

 private:
  friend class common::RefCounted<Module>;
  ~Module();
};

// What work still in flight on a queue needs kept alive. `marker` entries are
// signalled by a barrier after everything enqueued before them, so once one
// is complete every entry before it can go.
struct Pending {
  common::Ref<Signal> signal;
  common::Ref<Module> module;  // a launch's kernel's module
  common::Ref<Flag> flag;
  std::unique_ptr<uint64_t> pattern;  // a fill's pattern (see queue_fill)
  bool marker = false;
};

struct Queue {
  Device* device = nullptr;
  uint64_t trace_id = 0;
  ze_command_list_handle_t list = nullptr;
  std::mutex mu;  // guards everything below and the list's append order
  // Level Zero 1.4 does not promise that commands of a list run in order, so
  // a barrier goes in before any command that follows device work.
  bool need_barrier = false;
  std::deque<Pending> pending;
  // Host callbacks and flag waits: started on first use.
  std::unique_ptr<common::WorkQueue> host;
};

struct Event {
  Device* device = nullptr;
  bool timing = false;
  std::mutex mu;                // guards current
  common::Ref<Signal> current;  // the last record, or NULL if never recorded
};

struct FlagHandle {
  common::Ref<Flag> flag;
};

// Everything global to the backend, never destroyed (plugin.h: no static
// destructors joining threads or calling the driver at exit).
struct Backend {
  common::HostServices host;
  common::Tracer tracer{host};

  std::once_flag census_once;
  common::Census census;  // Intel render nodes, before initialisation
  std::once_flag open_once;
  common::Discovery opened;              // the loader loaded and resolved, nothing initialised
  std::atomic<bool> initialised{false};  // backend_init began: count from the driver
  std::once_flag discover_once;
  // What discovery found, once per process (backend_device_count and
  // backend_init share it).
  common::Discovery discovery;
  ZeApi ze;
  void* library = nullptr;
  std::string library_path;
  std::string library_note;  // " (AXL_LEVEL_ZERO_LOADER_PATH)" when the override named it
  std::vector<std::unique_ptr<Driver>> drivers;
  std::vector<std::unique_ptr<Device>> devices;

  // backend_set_option("memory_kind", "device" | "shared").
  std::atomic<bool> shared_memory{false};

  common::LiveQueues<Queue> queues;  // stopped at shutdown
};

Backend& backend() noexcept;
inline const ZeApi& ze() noexcept { return backend().ze; }

// Runs discovery once (zeInitDrivers): only from backend_init on; returns
// its status (reported on this thread).
axl_status discover();
// The Intel GPUs Level Zero will see, counted from sysfs (census.cpp).
common::Census census();

inline common::HostServices& host() noexcept { return backend().host; }

// The objects behind the handles (axl/common/handles.hpp).
inline constexpr common::Handles<Device, Queue, Event, FlagHandle, Module, Kernel> from{};
// Runs `body` under the plugin's exception firewall (plugin_support.hpp).
inline constexpr common::Guarded<host> guarded{};

// Reports `status` with `message` (no native code): fail(status, message).
inline constexpr auto fail = common::report_through<host>;
// The axl status a Level Zero result maps to.
axl_status status_of(ze_result_t result) noexcept;
// Level Zero results in messages (axl/common/driver_result.hpp), the code in
// hex. ze_fail(call, r[, context[, status]]) reports a failed call:
// "<call> failed: <NAME> (0x<code>)<: context>".
using ZeResult =
    common::DriverResult<ze_result_t, result_name, status_of, common::CodeStyle::kHex, host>;
inline constexpr ZeResult ze_fail{};

// ---- queue internals (queue.cpp) ----------------------------------------------
// Appends the barrier that keeps `q` in order if device work came before.
// Needs q.mu.
axl_status order(Queue& q);
// Drops the pending entries whose work has completed. Needs q.mu.
void trim(Queue& q);
// The queue's host thread (host callbacks, flag waits), started on first
// use. Needs q.mu.
common::WorkQueue& host_queue(Queue& q);

// ---- table slots (one .cpp per concept) ---------------------------------------
// Their contracts are the comments on the slots in axl/plugin.h; the
// declarations carry plugin.h's signatures (axl/common/slots.hpp).
AXL_DECLARE_PLUGIN_SLOTS()

}  // namespace axl::l0
