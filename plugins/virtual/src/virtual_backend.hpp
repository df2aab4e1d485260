// Internal state of the virtual backend and the declarations of its table
// slots. The plugin's handles are pointers to the structs below, cast to the
// opaque axl_p* types of plugin.h.
//
// The virtual backend is an emulated discrete accelerator: its memory is host
// memory the core never treats as host-readable, named by device addresses in
// an address range no host pointer can be in; its queues are worker threads
// that really move bytes, optionally taking simulated device time; kernels
// are recorded, never run. docs/architecture.md ("Virtual backend") is the
// user-facing description.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
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
#include "axl/common/trace.hpp"
#include "axl/common/work_queue.hpp"
#include "axl/plugin.h"

namespace axl::virt {

// ---- the device address space ------------------------------------------------
// Device addresses are kAddressBase + device index * kDeviceStride + offset.
// The base is above 2^62: on x86-64 (4- and 5-level paging) such an address is
// non-canonical and on AArch64 it is above any virtual-address size even after
// top-byte-ignore, so dereferencing a device address as a host pointer faults
// every time instead of reading whatever happens to be mapped there.
constexpr uint64_t kAddressBase = 0x7a10'0000'0000'0000ull;
constexpr uint64_t kDeviceStride = 1ull << 44;  // 16 TiB of addresses per device
constexpr uint32_t kMaxDevices = 1024;          // as axl_set_virtual_device_count
// Completion flags get "device addresses" past the last device's range: a
// kernel would be handed one, but nothing here resolves it as memory.
constexpr uint64_t kFlagAddressBase = kAddressBase + uint64_t{kMaxDevices} * kDeviceStride;
// plugin.h: device memory is aligned to at least 256 bytes.
constexpr uint64_t kAllocAlign = 256;
// Unused addresses between two allocations: an address one past the end of
// an allocation is never the start of the next one, so off-by-one address
// math is reported instead of silently landing in a neighbour.
constexpr uint64_t kAllocGap = 4096;

constexpr uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// ---- fault injection (fault.cpp) ----------------------------------------------
// The operations AXL_VIRTUAL_FAIL can name, in the order of kFaultOpNames.
enum class FaultOp : uint8_t {
  kAlloc,
  kFree,
  kPinnedAlloc,
  kMemcpyHtoD,
  kMemcpyDtoH,
  kMemcpyDtoD,
  kMemcpyPeer,
  kMemset,
  kLaunch,
  kEventRecord,
  kEventSync,
  kQueueCreate,
  kQueueSync,
  kModuleLoad,
  kFlagCreate,
  kHostFn,
  kInit,
  kCount
};

// One injected failure that applies to the current call.
struct FaultHit {
  axl_status status;
  bool async;           // fail when the operation runs, not at enqueue
  std::string message;  // says which call, which rule and where it came from
};

class FaultInjector {
 public:
  // Replaces every rule with those of `spec` and restarts every call count
  // at 0. `source` names where the spec came from ("AXL_VIRTUAL_FAIL") for
  // messages. Malformed tokens are skipped; each is returned as a complete
  // explanation naming the token, for the caller to log or report.
  std::vector<std::string> configure(const std::string& spec, const std::string& source);

  // Counts one call of `op` and returns the failure to inject, if a rule
  // matches it. One relaxed load when no rules are set.
  std::optional<FaultHit> check(FaultOp op);

 private:
  struct Rule {
    FaultOp op;
    uint64_t call;  // 1-based call number; 0 means every call ("*")
    axl_status status;
    bool async;
    std::string text;  // the token as written, for messages
  };
  std::atomic<bool> active_{false};
  std::mutex mu_;  // guards everything below
  std::vector<Rule> rules_;
  std::string source_;
  std::array<uint64_t, static_cast<size_t>(FaultOp::kCount)> calls_{};
};

// ---- simulated device time (config.cpp) --------------------------------------
class Simulator {
 public:
  void set_latency_ns(uint64_t ns) noexcept { latency_ns_.store(ns, std::memory_order_relaxed); }
  // Bytes per nanosecond (GB/s); 0 turns the bandwidth cost off.
  void set_bandwidth_gbps(double gbps) noexcept {
    bandwidth_gbps_.store(gbps, std::memory_order_relaxed);
  }
  uint64_t latency_ns() const noexcept { return latency_ns_.load(std::memory_order_relaxed); }
  double bandwidth_gbps() const noexcept { return bandwidth_gbps_.load(std::memory_order_relaxed); }
  // Whether any operation costs simulated time right now.
  bool enabled() const noexcept { return latency_ns() != 0 || bandwidth_gbps() > 0; }
  // The work queue's cost hook: latency for every copy, fill and launch,
  // plus bytes / bandwidth for copies. Markers (events, flags) and host
  // callbacks are not device work and cost nothing.
  uint64_t cost_ns(const common::OpInfo& op) const noexcept;

 private:
  std::atomic<uint64_t> latency_ns_{0};
  std::atomic<double> bandwidth_gbps_{0.0};
};

// What the environment said, read once (config.cpp).
struct Config {
  uint32_t devices = 0;                  // AXL_VIRTUAL_DEVICES
  std::string api = "virtual";           // AXL_VIRTUAL_API
  std::string arch = "virtual";          // AXL_VIRTUAL_ARCH
  uint64_t device_memory = 16ull << 30;  // AXL_VIRTUAL_DEVICE_MEMORY
  bool guard = false;                    // AXL_VIRTUAL_GUARD
};

// ---- objects ---------------------------------------------------------------------
// One piece of device memory.
struct Allocation {
  uint64_t offset = 0;      // into the device's address range
  uint64_t bytes = 0;       // as requested
  uint64_t span = 0;        // addresses reserved: bytes rounded up, plus the gap
  unsigned char* host = nullptr;  // the backing bytes
  void* map = nullptr;      // guard mode: the whole mapping, guard pages included
  size_t map_len = 0;
  // A multicast mapping (multicast.cpp): `host` is the device's own unicast
  // memory of the group, which this entry does not own, and `mirrors` the
  // other members' unicast memory, which every write reaches too (a
  // multicast store's broadcast). Null for ordinary memory.
  std::shared_ptr<const std::vector<unsigned char*>> mirrors;
};

struct Device {
  uint32_t index = 0;
  axl_device_properties props{};  // fixed at creation
  uint64_t total_bytes = 0;

  std::mutex mem_mu;  // guards the allocation table and the counters
  std::map<uint64_t, Allocation> allocations;  // by offset
  uint64_t used_bytes = 0;    // charged to the budget (rounded sizes)
  uint64_t next_offset = 0;   // bump pointer into the address range

  uint64_t base() const noexcept { return kAddressBase + uint64_t{index} * kDeviceStride; }
};

// An in-order queue with its own worker thread.
struct Queue {
  // `desc`: the bound on pending operations (axl_queue_desc.max_pending).
  Queue(Device* d, uint64_t trace, uint64_t handle, const axl_queue_desc& desc);
  common::WorkQueue work;
  Device* const device;
  const uint64_t trace_id;       // axl_queue_desc.trace_id, echoed in trace records
  const uint64_t native_handle;  // opaque and non-zero, like a CUstream
};

// A multicast group (multicast.cpp): per member, its unicast allocation and
// its multicast mapping, each `bytes` long.
struct MulticastGroup {
  struct Member {
    Device* device = nullptr;
    axl_devaddr unicast = 0, multicast = 0;
  };
  std::vector<Member> members;
  uint64_t bytes = 0;  // the reservation: the request rounded up to kMulticastGranularity
};
// CUDA's usual multicast granularity (CU_MULTICAST_GRANULARITY_RECOMMENDED on
// Hopper), so a reservation differs from the request here as it does there.
constexpr uint64_t kMulticastGranularity = 2ull << 20;

// One declared kernel parameter (built-in test kernels only).
using Param = common::KernelParam;

struct Module;

struct Kernel {
  std::string name;
  const Param* params = nullptr;
  int32_t param_count = -1;  // -1: unknown, launches are not checked against it
  Module* module = nullptr;  // owner; NULL for built-in kernels
};

// A completion flag handle: the shared common::Flag (pending queue work holds
// its own references to it) and the flag's device-visible address.
struct FlagHandle {
  common::Ref<common::Flag> flag;
  axl_devaddr address = 0;
};

// A loaded module: its bytes, kept as given, and the kernels handed out.
struct Module {
  enum class Kind { kPtx, kKernelList, kBinary };
  Kind kind = Kind::kBinary;
  std::vector<unsigned char> bytes;
  std::set<std::string> names;  // PTX .entry names or the list's names
  common::KernelCache<Kernel> kernels;
};

// Everything global to the backend, in storage that is never destroyed: queue
// workers are joined in backend_shutdown, never by a static destructor, and
// the core may call the host services from any thread until the process ends.
struct Backend {
  common::HostServices host;
  common::Tracer tracer{host};
  Simulator sim;
  FaultInjector faults;

  std::once_flag config_once;
  Config config_;  // use config()

  // Virtual-device mode, as the core passes it through backend_set_option.
  std::mutex mode_mu;
  std::string mode_api, mode_arch;
  std::atomic<uint32_t> mode_count{0};

  std::mutex dev_mu;  // serialises device creation
  std::array<std::atomic<Device*>, kMaxDevices> devices{};

  common::LiveQueues<Queue> queues;  // stopped at shutdown
  std::atomic<uint64_t> next_native_handle{1};
  std::atomic<uint64_t> next_flag{0};

  common::PinnedPages pinned;  // pinned_alloc's blocks (never locked)

  // Guard mode: freed mappings stay inaccessible for a while, so work that
  // touches memory after its free faults instead of reading reused memory.
  // (A vector, not a deque: negotiate constructs this struct, and a deque
  // would allocate there, which negotiate must not.)
  std::mutex quarantine_mu;
  std::vector<std::pair<void*, size_t>> quarantine;  // oldest first
};

Backend& backend() noexcept;
// The environment, read on first use (not in negotiate, which must not have
// side effects, and not in a static initialiser, which would run at dlopen).
const Config& config();

inline common::HostServices& host() noexcept { return backend().host; }

// The objects behind the handles: events are common's own.
inline constexpr common::Handles<Device, Queue, common::Event, FlagHandle, Module, Kernel, MulticastGroup> from{};
// Runs `body` under the plugin's exception firewall (plugin_support.hpp).
inline constexpr common::Guarded<host> guarded{};

// ---- errors (fault.cpp) ------------------------------------------------------------
// Every error carries a "native" code and name, as a driver's would: the code
// is the axl status value and the name "VIRTUAL_ERROR_<status without
// AXL_ERROR_>", so tests can tell a virtual-backend report from a core one.
const char* native_name(axl_status status) noexcept;
axl_status fail(axl_status status, const std::string& message);
// Reports an injected failure that applies at the call itself.
axl_status fail(const FaultHit& hit);
// "AXL_ERROR_OUT_OF_DEVICE_MEMORY" -> status, accepting the name with or
// without the AXL_ERROR_ prefix. Empty when unknown.
std::optional<axl_status> status_from_name(const std::string& name);

// ---- memory (memory.cpp) --------------------------------------------------------------
// The device whose address range holds `address`, or NULL.
Device* device_of_address(axl_devaddr address) noexcept;
// Translates [address, address + bytes) of device memory on `device` into the
// backing host bytes, or reports why it cannot (another device's address, no
// live allocation there, a range past the allocation's end). `role` names the
// operand in messages ("destination of a copy"). Guard mode skips the end
// check on purpose: the overrun then hits a PROT_NONE page and faults.
// `mirrors`, given by operations that write: for a multicast mapping, the
// other members' bytes at the same offset, which the write must reach too
// (cleared for ordinary memory).
axl_status resolve(Device& device, axl_devaddr address, uint64_t bytes, const char* role,
                   unsigned char** out, std::vector<unsigned char*>* mirrors = nullptr);
// Reserves addresses on `d` for a multicast mapping over `host` (the
// device's unicast memory of the group, `bytes` long) that writes `mirrors`
// too; charges no memory. unmap_alias removes it.
axl_status map_alias(Device& d, unsigned char* host, uint64_t bytes,
                     std::shared_ptr<const std::vector<unsigned char*>> mirrors, axl_devaddr* out);
void unmap_alias(Device& d, axl_devaddr address) noexcept;
// The backing bytes of a live allocation that starts at `address` on `d`.
unsigned char* backing_of(Device& d, axl_devaddr address) noexcept;

// ---- table slots (one .cpp per concept) -------------------------------------------------
// Their contracts are the comments on the slots in axl/plugin.h.
// Every slot, with plugin.h's signatures (plugins/common/.../slots.hpp): one
// definition per .cpp of its concept (backend in plugin.cpp, device.cpp, ...).
AXL_DECLARE_PLUGIN_SLOTS()

}  // namespace axl::virt
