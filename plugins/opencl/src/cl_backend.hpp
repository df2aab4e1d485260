// Internal state of the OpenCL backend and the declarations of its table
// slots. Handles given to the core are pointers to the structs below, cast to
// the opaque axl_p* types of plugin.h.
//
// Mapping (docs/backends.md, opencl, has the slot table): one cl_context per platform, made by
// backend_init over the devices discovery chose; a queue is one in-order
// cl_command_queue with profiling; device memory is one cl_mem per
// allocation, named to the core by a synthetic device address (below); an
// event record is a marker, a wait a barrier on it; a host callback is a
// marker's completion callback that releases a user event later work waits on.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "axl/common/discovery.hpp"
#include "axl/common/driver_result.hpp"
#include "axl/common/handles.hpp"
#include "axl/common/kernel_cache.hpp"
#include "axl/common/live_queues.hpp"
#include "axl/common/plugin_support.hpp"
#include "axl/common/slots.hpp"
#include "axl/common/trace.hpp"
#include "axl/common/work_queue.hpp"
#include "axl/plugin.h"
#include "cl_loader.hpp"

namespace axl::opencl {

// Environment variable choosing which OpenCL device types are accelerators:
// unset means GPU and ACCELERATOR devices only (a CPU-only machine reports
// no accelerator); "all", or a comma-separated list of "gpu",
// "accelerator", "cpu", "custom", widens it (CI sets "all" to run on PoCL).
inline constexpr const char* kDeviceTypesEnv = "AXL_OPENCL_DEVICE_TYPES";

// plugin.h: device addresses aligned to at least 256 bytes.
constexpr uint64_t kDeviceAlign = 256;
// plugin.h: pinned host memory aligned to at least 64 bytes.
constexpr uintptr_t kPinnedAlign = 64;

struct Platform {
  cl_platform_id id = nullptr;
  std::string name;
  cl_context context = nullptr;  // made by backend_init over its devices
};

// One allocation: a cl_mem of `bytes`, known to the core as `base`.
struct Buffer {
  cl_mem mem = nullptr;
  uint64_t bytes = 0;
  bool flag = false;  // a completion flag's: freed by flag_destroy, not memory_free
};

// Where a device address lies: the buffer and the byte offset in it.
struct Located {
  cl_mem mem = nullptr;
  uint64_t offset = 0;
};

class Module;

struct Device {
  uint32_t index = 0;
  cl_device_id id = nullptr;
  Platform* platform = nullptr;
  axl_device_properties props{};  // fixed at discovery
  cl_device_type type = 0;
  size_t max_work_group_size = 0;     // CL_DEVICE_MAX_WORK_GROUP_SIZE
  size_t max_work_item_sizes[3] = {0, 0, 0};  // CL_DEVICE_MAX_WORK_ITEM_SIZES
  std::string il_version;  // CL_DEVICE_IL_VERSION (OpenCL 2.1+): "" when it takes no SPIR-V
  // The test kernels' module, built at first use, living until shutdown.
  std::once_flag test_once;
  Module* test_module = nullptr;
  axl_status test_status = AXL_ERROR_INTERNAL;

  // OpenCL memory is handles, the ABI's device memory is addresses: every
  // cl_mem gets a range of a synthetic address space (never dereferenced by
  // the core, plugin.h), and copies, fills and launches find the buffer and
  // offset from the address. Ranges are spaced apart so that one past the end
  // of one allocation is never the start of the next.
  std::mutex mem_mu;                    // guards buffers
  std::map<uint64_t, Buffer> buffers;  // by base address

  // Pinned host memory: CL_MEM_ALLOC_HOST_PTR buffers kept mapped, by host
  // pointer; mapped and unmapped through a queue of the device's own.
  std::unordered_map<void*, cl_mem> pinned;  // guarded by mem_mu
  cl_command_queue map_queue = nullptr;      // made by the first pinned_alloc, under mem_mu

  cl_context context() const noexcept { return platform->context; }
  // The buffer holding [address, address + bytes), or reports
  // INVALID_ARGUMENT naming the address (`slot` is for the message).
  axl_status locate(uint64_t address, uint64_t bytes, const char* slot, Located* out);
  // Gives `mem` (of `bytes`) a range of the address space; returns its base.
  axl_devaddr adopt(cl_mem mem, uint64_t bytes, bool flag = false);
  // Takes the buffer at base `address` out of the address space; NULL if
  // there is none, or it is not of the kind `flag` says.
  cl_mem forget(axl_devaddr address, bool flag = false);
};

struct Queue {
  Device* device = nullptr;
  uint64_t trace_id = 0;
  cl_command_queue queue = nullptr;
  // Host callbacks: run on a thread of the queue's own, started on first use.
  std::mutex host_mu;  // guards host's creation
  std::unique_ptr<common::WorkQueue> host;
};

struct Event {
  Device* device = nullptr;
  bool timing = false;
  std::mutex mu;              // guards current
  cl_event current = nullptr; // the last record's marker (retained), or NULL
};

// A completion flag's storage: 8 bytes of host memory the host reads and
// writes directly, wrapped in a CL_MEM_USE_HOST_PTR buffer with a device
// address of its own so a kernel can take it as an argument. Shared by the
// handle and the queue work that waits on or writes it, so flag_destroy may
// come while that work is pending (plugin.h).
struct FlagStorage {
  Device* device = nullptr;
  uint64_t* value = nullptr;  // 64-byte aligned, own cache line
  cl_mem mem = nullptr;
  axl_devaddr address = 0;
  ~FlagStorage();
};

struct Flag {
  std::shared_ptr<FlagStorage> storage;
};

struct Kernel {
  std::string name;
  cl_kernel kernel = nullptr;
  Module* module = nullptr;
  cl_uint num_args = 0;  // CL_KERNEL_NUM_ARGS
  // Per parameter, its CL_KERNEL_ARG_ADDRESS_QUALIFIER (global, constant,
  // local or private); empty when the driver has no argument info (a
  // program built from a binary). A launch checks each argument's kind
  // against it: a scalar at a __global parameter would otherwise be taken
  // as a cl_mem by the driver and dereferenced.
  std::vector<cl_kernel_arg_address_qualifier> arg_spaces;
  // Arguments are kernel state in OpenCL (clSetKernelArg), so
  // set-arguments-then-enqueue must not interleave between two queues.
  std::mutex launch_mu;
};

// A built cl_program and the kernels handed out from it. Enqueued kernels
// hold their own references (OpenCL retains a kernel, and the kernel its
// program, for each command), so module_unload releases at once.
class Module {
 public:
  Device* device = nullptr;
  cl_program program = nullptr;
  common::KernelCache<Kernel> kernels;
  ~Module();
};

// The one source language module_compile takes.
inline constexpr int32_t kSourceLanguageOpenclC = AXL_SOURCE_LANGUAGE_OPENCL_C;

// Everything global to the backend, never destroyed (plugin.h: no static
// destructors calling the driver at exit).
struct Backend {
  common::HostServices host;
  common::Tracer tracer{host};

  std::once_flag discover_once;
  common::Discovery discovery;
  ClApi cl;
  common::DriverLibrary library;
  std::string library_note;  // " (AXL_OPENCL_LOADER_PATH)" when the override named it
  std::vector<std::unique_ptr<Platform>> platforms;
  std::vector<std::unique_ptr<Device>> devices;
  // The next synthetic device address (see Device::buffers); starts high so
  // that a small integer is never mistaken for an allocation.
  std::atomic<uint64_t> next_address{uint64_t{1} << 40};

  common::LiveQueues<Queue> queues;
};

Backend& backend() noexcept;
inline const ClApi& cl() noexcept { return backend().cl; }

// Runs discovery once: opens the loader, lists platforms and their devices
// of the chosen types, without creating a context. Returns its status
// (reported on this thread).
axl_status discover();

inline common::HostServices& host() noexcept { return backend().host; }

// The objects behind the handles (axl/common/handles.hpp).
inline constexpr common::Handles<Device, Queue, Event, Flag, Module, Kernel> from{};
// Runs `body` under the plugin's exception firewall (plugin_support.hpp).
inline constexpr common::Guarded<host> guarded{};

// Reports `status` with `message` (no native code): fail(status, message).
inline constexpr auto fail = common::report_through<host>;
// The axl status an OpenCL result maps to.
axl_status status_of(cl_int result) noexcept;
// OpenCL results in messages (axl/common/driver_result.hpp), the code in
// decimal. cl_fail(call, r[, context[, status]]) reports a failed call:
// "<call> failed: <NAME> (<code>)<: context>".
using ClResult =
    common::DriverResult<cl_int, result_name, status_of, common::CodeStyle::kDecimal, host>;
inline constexpr ClResult cl_fail{};

// The queue's host thread (host callbacks, flags), started on first use
// (queue.cpp).
common::WorkQueue& host_queue(Queue& q);

// Enqueues `step()` to run on the queue's host thread after all earlier work
// on `q`, with the queue's later work held until it returned: a marker the
// host thread waits for (clWaitForEvents), then the step, then a user event
// (clCreateUserEvent) that a barrier in the queue waits on is set complete.
// Not clSetEventCallback: PoCL runs a callback on an event that is already
// complete inside clSetEventCallback, on the enqueuing thread, and the ABI
// runs host work on a backend thread. A failed marker skips the step and
// fails the user event, so the work behind it fails as a failed stream's
// would. `slot` names the caller in messages.
template <class Step>
axl_status host_step(Queue& q, const char* slot, Step step) {
  const ClApi& c = backend().cl;
  cl_int r = CL_SUCCESS;
  cl_event gate = c.clCreateUserEvent(q.device->context(), &r);
  if (r != CL_SUCCESS) return cl_fail("clCreateUserEvent", r);
  cl_event marker = nullptr;
  if ((r = c.clEnqueueMarkerWithWaitList(q.queue, 0, nullptr, &marker)) != CL_SUCCESS) {
    c.clReleaseEvent(gate);
    return cl_fail("clEnqueueMarkerWithWaitList", r);
  }
  if ((r = c.clEnqueueBarrierWithWaitList(q.queue, 1, &gate, nullptr)) != CL_SUCCESS) {
    c.clSetUserEventStatus(gate, CL_COMPLETE);
    c.clReleaseEvent(gate);
    c.clReleaseEvent(marker);
    return cl_fail("clEnqueueBarrierWithWaitList", r);
  }
  c.clFlush(q.queue);
  const axl_status s = host_queue(q).enqueue(
      common::OpInfo{common::OpKind::kHostFn, 0},
      [marker, gate, step = std::move(step)](std::string& message) mutable -> axl_status {
        const ClApi& api = backend().cl;
        cl_int status = CL_COMPLETE;
        const cl_int w = api.clWaitForEvents(1, &marker);
        if (w == CL_SUCCESS)
          api.clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
        else
          status = w;
        if (status == CL_COMPLETE) step();
        api.clSetUserEventStatus(gate, status == CL_COMPLETE ? CL_COMPLETE : (status < 0 ? status : -1));
        api.clReleaseEvent(gate);
        api.clReleaseEvent(marker);
        if (status == CL_COMPLETE) return AXL_SUCCESS;
        message = common::str("host work skipped: the work before it failed: ", result_name(status));
        return status_of(status);
      });
  if (s != AXL_SUCCESS) {
    c.clSetUserEventStatus(gate, CL_COMPLETE);  // the queue must not wait for it
    c.clReleaseEvent(gate);
    c.clReleaseEvent(marker);
    return fail(s, common::str(slot, ": ", common::WorkQueue::refusal_message()));
  }
  return AXL_SUCCESS;
}

// ---- table slots (one .cpp per concept) ---------------------------------------
// Their contracts are the comments on the slots in axl/plugin.h; the
// declarations carry plugin.h's signatures (axl/common/slots.hpp).
AXL_DECLARE_PLUGIN_SLOTS()

}  // namespace axl::opencl
