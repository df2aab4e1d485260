// The backend logic shared by the plugins over CUDA-style driver APIs (cuda,
// hip): the objects behind the plugin handles, the backend state, the
// helpers every slot uses (errors, current device, deferred release) and,
// in driver_plugin_slots.hpp, the slot bodies and the plugin table. HIP
// mirrors the CUDA Driver API call for call, so one template serves both;
// the plugin supplies a traits class `D` that names its types and calls.
//
// What `D` provides (plugins/cuda/src/cuda_backend.hpp is the reference;
// driver_traits.hpp has the building blocks):
//  * types (DriverTypes): Api (the resolved entry points, members named
//    after the generic operation: stream_create, copy_htod, ...), Names (the
//    same members as the vendor's call names, for messages and launch
//    traces, as the static member `names`), Result, DevicePtr, DeviceId,
//    Context (CUcontext; HIP: the device ordinal), Stream, EventH, ModuleH,
//    Function, Pool, AccessDesc;
//  * result codes and flag values (DriverValues), `text` (DriverText: the
//    words of its messages), kArgLimits, kHasCompiler, kLanguage;
//  * functions: load (dlopen + probe), errors (the result-code table),
//    error_name / error_string (NULL when unknown), retain / release of the
//    device's context, pool_create (a pool of axl's own on a device),
//    allow_dynamic_shared (the opt-in above kSharedWithoutOptIn bytes of
//    dynamic shared memory), wait_geq (a 64-bit stream wait for >=), host_fn,
//    ptr / addr (axl_devaddr <-> DevicePtr), accepts_format, describe (fill
//    the device's properties and capabilities), load_image, load_test_module,
//    and compile (or kHasCompiler = false);
//  * multicast groups (kHasMulticast; false leaves the four slots NULL):
//    MemHandle, kMulticastAttribute, has_multicast, multicast_attribute, multicast_granularity,
//    multicast_object and physical_memory (driver_plugin/multicast.hpp).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "axl/common/census.hpp"
#include "axl/common/deferred_release.hpp"
#include "axl/common/driver_errors.hpp"
#include "axl/common/driver_library.hpp"
#include "axl/common/handles.hpp"
#include "axl/common/immortal.hpp"
#include "axl/common/kernel_cache.hpp"
#include "axl/common/launch_args.hpp"
#include "axl/common/plugin_support.hpp"
#include "axl/common/slots.hpp"
#include "axl/common/trace.hpp"
#include "axl/plugin.h"

namespace axl::common {

// What loading and initialising a driver found: ok, or the status and
// message that make the backend unavailable.
struct DriverProbe {
  axl_status status = AXL_SUCCESS;
  int64_t native_code = 0;  // the vendor's result code, e.g. 100
  std::string native_name;  // its name, e.g. "hipErrorNoDevice"
  std::string message;
  int driver_version = 0;  // as the driver reports it, e.g. 12080
  int device_count = 0;

  // AXL_ERROR_BACKEND_UNAVAILABLE with `message` and the vendor's code.
  static DriverProbe unavailable(std::string message, int64_t code = 0, std::string name = {}) {
    DriverProbe p;
    p.status = AXL_ERROR_BACKEND_UNAVAILABLE;
    p.native_code = code;
    p.native_name = std::move(name);
    p.message = std::move(message);
    return p;
  }
};

// What one run-time compilation (NVRTC) produced.
struct CompileResult {
  axl_status status = AXL_SUCCESS;  // INVALID_ARGUMENT: the program has errors
  std::string message;              // why it failed, with the compiler log
  std::string log;                  // the compiler's log (warnings too), may be empty
  std::vector<char> image;          // the loadable image on success
  bool is_ptx = false;              // image is PTX text (NUL-terminated)
};

// The objects behind the plugin handles (plugin.h's opaque types are
// pointers to these), parameterised by the driver traits `D`.
template <class D>
struct DriverModule;

template <class D>
struct DriverKernel {
  typename D::Function fn = nullptr;
  std::string name;
  const KernelParam* params = nullptr;  // test kernels only
  int32_t param_count = -1;             // -1: not checked
  // The dynamic shared memory the driver was told this kernel may use
  // (D::allow_dynamic_shared): only ever raised, under shared_mu, and
  // stored after the driver accepted it, so a launch that reads a value
  // here may use that much.
  std::atomic<uint32_t> shared_allowed{0};
  std::mutex shared_mu;
};

template <class D>
struct DriverDevice {
  uint32_t index = 0;
  typename D::DeviceId dev{};
  typename D::Context ctx{};  // retained primary context (HIP: the ordinal)
  axl_device_properties props{};
  bool pools = false;           // axl's own pool exists: stream-ordered allocation set up
  bool stream_mem_ops = false;  // 64-bit stream wait/write usable
  // axl's own pool when `pools` (never the device's default pool: that one
  // is process-wide, shared with the CUDA runtime, PyTorch and CuPy, whose
  // release threshold is theirs to choose).
  typename D::Pool pool = nullptr;
  typename D::Stream alloc_stream = nullptr;  // orders pool allocations and frees
  uint32_t max_dynamic_shared = 0;  // per block, with the opt-in (0: unknown)

  // Cleared when the driver refuses stream-ordered allocation at run time
  // (NOT_SUPPORTED although the device reports pools: some virtualised
  // GPUs): memory_alloc then uses the plain allocator for good. Frees still
  // go to the pool, except for the addresses in `plain`, the allocations
  // made after the switch (per-allocation bookkeeping, not a pointer
  // query: it costs nothing before the switch and needs no driver support).
  std::atomic<bool> pool_alloc{false};
  std::mutex plain_mu;
  std::unordered_set<axl_devaddr> plain;

  std::mutex test_mu;  // guards the test-kernel module
  DriverModule<D>* test_module = nullptr;
  DriverKernel<D> test_kernels[2];
};

template <class D>
struct DriverQueue {
  DriverDevice<D>* device = nullptr;
  typename D::Stream stream = nullptr;
  uint64_t trace_id = 0;
};

template <class D>
struct DriverEvent {
  DriverDevice<D>* device = nullptr;
  typename D::EventH event = nullptr;
};

template <class D>
struct DriverFlag {
  DriverDevice<D>* device = nullptr;
  uint64_t* host = nullptr;  // pinned, portable and device-mapped
  typename D::DevicePtr address{};
};

template <class D>
struct DriverModule {
  DriverDevice<D>* device = nullptr;
  typename D::ModuleH module = nullptr;
  KernelCache<DriverKernel<D>> kernels;
};

// A multicast group (plugin ABI 1.4; only for a driver with D::kHasMulticast,
// so D::MemHandle is named only there): the driver's multicast object and,
// per member, physical memory bound to it, that memory's own (unicast)
// mapping and the member's mapping of the object. Each flag records a step
// that succeeded, so a failed create and destroy undo exactly those, in
// reverse (driver_plugin/multicast.hpp).
template <class D>
struct DriverMulticast {
  struct Member {
    DriverDevice<D>* device = nullptr;
    typename D::MemHandle memory{};
    typename D::DevicePtr unicast{};
    typename D::DevicePtr multicast{};
    bool created = false, bound = false;
    bool unicast_reserved = false, unicast_mapped = false;
    bool multicast_reserved = false, multicast_mapped = false;
  };
  typename D::MemHandle object{};
  bool object_created = false;
  uint64_t bytes = 0;        // per member: the request rounded up to the granularity
  uint64_t granularity = 0;  // the driver's recommended multicast granularity
  std::vector<Member> members;
};

template <class D>
class DriverPlugin {
 public:
  using Api = typename D::Api;
  using Result = typename D::Result;

  using Kernel = DriverKernel<D>;
  using Device = DriverDevice<D>;
  using Queue = DriverQueue<D>;
  using Event = DriverEvent<D>;
  using Flag = DriverFlag<D>;
  using Module = DriverModule<D>;
  using Multicast = DriverMulticast<D>;

  // Never destroyed: the core may call in from any thread until exit, and
  // the driver library is never unloaded.
  struct State {
    HostServices host;
    Tracer tracer{host};

    std::once_flag census_once;
    Census census;  // written once under census_once
    std::once_flag open_once;
    DriverProbe opened;  // the library loaded and resolved; written once under open_once
    std::once_flag probe_once;
    DriverProbe probe;  // the driver initialised; written once under probe_once
    std::atomic<bool> probed{false};
    pid_t probe_pid = 0;
    DriverLibrary lib;
    Api api;

    std::mutex dev_mu;                             // serialises device setup
    std::vector<std::unique_ptr<Device>> devices;  // sized at init, filled lazily
    // Devices of earlier inits, released by backend_shutdown but kept: a
    // queue the core destroys after shutdown still names its device, so a
    // late handle must not dangle. Owned here, not leaked (one set per
    // init/shutdown cycle).
    std::vector<std::unique_ptr<Device>> retired;

    std::mutex queues_mu;
    std::unordered_set<Queue*> queues;  // live queues, for deferred releases

    DeferredReleases graveyard;  // modules and flags waiting for work
  };

  // Constructed at negotiate and never destroyed (immortal.hpp): see State.
  static State& state() noexcept { return immortal<State>(); }
  static const Api& api() noexcept { return state().api; }

  static constexpr Handles<Device, Queue, Event, Flag, Module, Kernel, Multicast> from{};

  template <class F>
  static axl_status guarded(const char* slot, F&& body) noexcept {
    return guard(state().host, slot, std::forward<F>(body));
  }

  // Discovery in three steps, each once, the cheap ones first:
  //  * census: the devices the machine has, read from what the kernel driver
  //    publishes (NVML, sysfs), with nothing of the vendor's runtime loaded
  //    (axl/common/census.hpp): what backend_device_count answers;
  //  * open: the vendor library loaded and checked, still initialising
  //    nothing (an absent, stub or too-old library is reported here);
  //  * probe: the driver initialised (cuInit, hipInit) and its own count,
  //    at the first use of a device (backend_init).
  static const Census& census() {
    State& s = state();
    std::call_once(s.census_once, [&s] { s.census = D::census(); });
    return s.census;
  }
  static const DriverProbe& opened() {
    State& s = state();
    // Not logged here: a failure reaches the log once, through probe() or
    // through the core's "plugin ... is unavailable" at discovery.
    std::call_once(s.open_once, [&s] { s.opened = D::open(s.lib, s.api); });
    return s.opened;
  }
  // Initialises the driver once; the result is what every slot reports
  // when the backend cannot run.
  static const DriverProbe& probe() {
    State& s = state();
    std::call_once(s.probe_once, [&s] {
      const DriverProbe& o = opened();
      s.probe = o.status == AXL_SUCCESS ? D::init(s.lib, s.api, o) : o;
      s.probe_pid = getpid();
      s.host.log(s.probe.status == AXL_SUCCESS ? AXL_LOG_DEBUG : AXL_LOG_INFO, s.probe.message);
      s.probed.store(true, std::memory_order_release);
    });
    return s.probe;
  }

  // AXL_SUCCESS, or reports `p`'s failure with the vendor's code.
  static axl_status report_probe(const DriverProbe& p) {
    if (p.status == AXL_SUCCESS) return AXL_SUCCESS;
    return state().host.report(p.status, p.message, p.native_code,
                               p.native_name.empty() ? nullptr : p.native_name.c_str());
  }

  // AXL_SUCCESS, or reports why the backend is unavailable (or forked).
  static axl_status require_driver() {
    if (axl_status s = report_probe(probe())) return s;
    // Neither CUDA nor HIP survives fork(): a child must not touch the
    // parent's contexts, and initialising there fails in ways that explain
    // nothing.
    if (state().probe_pid != getpid())
      return fail(AXL_ERROR_FORKED,
                  str("the ", D::text.vendor, " driver was initialised in the parent process before "
                      "fork(); the child cannot use it: start workers with spawn instead"));
    return AXL_SUCCESS;
  }

  static axl_status fail(axl_status status, const std::string& message) noexcept {
    return state().host.report(status, message);
  }

  // Reports a failed driver call `call` with the vendor's name and
  // description of `r`; `status` overrides the table's mapping.
  static axl_status fail_driver(Result r, const char* call, const std::string& context = {},
                                axl_status status = AXL_SUCCESS) noexcept {
    const Api& a = api();
    return D::errors().report(state().host, static_cast<int64_t>(r), call, D::error_name(a, r),
                              D::error_string(a, r), context, status);
  }
  // fail_driver unless r is success.
  static axl_status check(Result r, const char* call, const std::string& context = {}) noexcept {
    return r == D::kSuccess ? AXL_SUCCESS : fail_driver(r, call, context);
  }

  // Makes the device's primary context (HIP: the device) current on the
  // calling thread; the plugin leaves it current, as the runtimes do.
  static axl_status make_current(const Device& d) noexcept {
    typename D::Context cur{};
    if (api().get_current(&cur) == D::kSuccess && cur == d.ctx) return AXL_SUCCESS;
    return check(api().set_current(d.ctx), D::names.set_current,
                 str("making device ", d.index, "'s primary context current"));
  }

  // Parks `release` until every queue alive now has finished the work it
  // holds (an event recorded on each), so modules and flags outlive
  // launches and waits already enqueued.
  static axl_status release_after_queued_work(Device& d, std::function<void()> release) {
    State& s = state();
    const Api& a = api();
    std::vector<typename D::EventH> marks;
    {
      std::lock_guard<std::mutex> lk(s.queues_mu);
      for (Queue* q : s.queues) {
        if (make_current(*q->device) != AXL_SUCCESS) continue;
        typename D::EventH e = nullptr;
        if (a.event_create(&e, D::kEventDisableTiming) != D::kSuccess) continue;
        if (a.event_record(e, q->stream) != D::kSuccess) {
          (void)a.event_destroy(e);
          continue;
        }
        marks.push_back(e);
      }
    }
    Device* dev = &d;
    auto done = [marks] {
      for (typename D::EventH e : marks)
        if (api().event_query(e) == D::kNotReady) return false;
      return true;
    };
    auto free_all = [marks, dev, release = std::move(release)] {
      for (typename D::EventH e : marks) (void)api().event_destroy(e);
      if (make_current(*dev) == AXL_SUCCESS) release();
    };
    s.graveyard.add(std::move(done), std::move(free_all));
    s.graveyard.sweep();
    return AXL_SUCCESS;
  }

  // ---- table slots: every slot of plugin.h's list, with its signature
  // (contracts in axl/plugin.h; bodies in driver_plugin_slots.hpp).
  // backend_set_option has no options: it refuses every key by name.
  AXL_DECLARE_PLUGIN_STATIC_SLOTS()

  // The plugin table with every slot above (module_compile NULL when the
  // backend has no run-time compiler, the multicast ones when it has no
  // multicast objects).
  static constexpr axl_plugin_table table() noexcept;
  // axl_plugin_negotiate for the backend named D::text.plugin.
  static axl_status negotiate(axl_negotiate_args* args) noexcept;

 private:
  static axl_status set_up(uint32_t index, std::unique_ptr<Device>& out);
  static axl_status require_mem_ops(const Queue& q, const char* call);
  static axl_status allow_shared(const Device& d, Kernel& k, uint64_t bytes);
  // driver_plugin/multicast.hpp.
  static axl_status multicast_supported(const Device& d, bool* out);
  // A template so that a driver without D::MemHandle (kHasMulticast false)
  // never names it.
  template <class MemHandle>
  static axl_status map_for(const Device& d, MemHandle handle, uint64_t bytes, uint64_t alignment,
                            typename D::DevicePtr* out, bool* reserved, bool* mapped, const std::string& what);
  static axl_status undo_multicast(Multicast& g, bool report) noexcept;
};

}  // namespace axl::common
