// The Metal stub backend, and the template to copy for a new backend.
//
// It negotiates like any plugin, reports zero devices and answers
// AXL_ERROR_BACKEND_UNAVAILABLE from backend_init, so on Linux "metal_stub"
// loads, contributes no device, and says why whenever it is asked to
// initialise. Every slot of the 1.0 table is
// filled in: each one that a real backend must write says, in a TODO(port)
// comment, which Metal call does the work and which part of plugin.h's
// contract it has to keep. README.md in this folder explains how to copy and
// rename it. It depends on axl/plugin.h and axl/status.h only.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <new>

#include "axl/plugin.h"

namespace {

// The name must equal the <name> in libaxl_plugin_<name>.so: the core refuses
// a plugin whose info.name differs from its file name.
constexpr const char* kName = "metal_stub";
constexpr const char* kApi = "metal";

// Set once by negotiate; read by every slot. Atomic because nothing in the
// ABI forbids the core (or a conformance kit) from negotiating again while
// another thread is inside a slot.
std::atomic<const axl_host_services*> g_host{nullptr};

// The core prefixes every message with the backend name; messages here do
// not repeat it.
void host_log(int32_t level, const char* message) noexcept {
  const axl_host_services* h = g_host.load(std::memory_order_acquire);
  if (h != nullptr && h->log != nullptr) h->log(h->ctx, level, message);
}

// Records the detail of an error and returns its status, so a slot reads
// `return fail(...)`. report_error must run on the thread that returns.
axl_status fail(axl_status status, int64_t native_code, const char* native_name,
                const char* message) noexcept {
  const axl_host_services* h = g_host.load(std::memory_order_acquire);
  if (h != nullptr && h->report_error != nullptr)
    h->report_error(h->ctx, status, native_code, native_name, message);
  return status;
}

// What every slot that is not ported yet answers. The slot name is in the
// message so that axl_last_error() tells the user which operation is missing.
axl_status not_ported(const char* slot) noexcept {
  char message[160];
  std::snprintf(message, sizeof message,
                "%s: not implemented (the Metal backend is a stub)", slot);
  return fail(AXL_ERROR_UNSUPPORTED, 0, nullptr, message);
}

// No C++ exception may cross the ABI. A real backend runs every slot body
// through this: std::bad_alloc becomes OUT_OF_HOST_MEMORY, anything else
// INTERNAL, each with a message naming the slot.
template <typename Body>
axl_status guarded(const char* slot, Body&& body) noexcept {
  char message[256];
  try {
    return body();
  } catch (const std::bad_alloc&) {
    std::snprintf(message, sizeof message, "%s: out of host memory", slot);
    return fail(AXL_ERROR_OUT_OF_HOST_MEMORY, 0, nullptr, message);
  } catch (const std::exception& e) {
    std::snprintf(message, sizeof message, "%s: internal error: %s", slot, e.what());
  } catch (...) {
    std::snprintf(message, sizeof message, "%s: internal error: unknown exception",
                  slot);
  }
  return fail(AXL_ERROR_INTERNAL, 0, nullptr, message);
}

// ---------------------------------------------------------------- backend --

axl_status backend_init() {
  return guarded("backend_init", []() -> axl_status {
    // TODO(port): MTLCopyAllDevices() (macOS; MTLCreateSystemDefaultDevice()
    // on iOS), keep the devices for backend_shutdown, start any backend
    // thread here and not earlier. No device: BACKEND_UNAVAILABLE with a
    // message saying so. The core calls this once and serialises it.
    host_log(AXL_LOG_DEBUG, "backend_init: not an Apple platform");
    return fail(AXL_ERROR_BACKEND_UNAVAILABLE, 0, nullptr,
                "unavailable: Metal needs an Apple platform");
  });
}

axl_status backend_shutdown() {
  // TODO(port): wait for every queue to drain, release command queues,
  // libraries and devices, join the threads backend_init started. Called at
  // most once, only after backend_init succeeded, never during process exit.
  return not_ported("backend_shutdown");
}

axl_status backend_device_count(uint32_t* out_count) {
  return guarded("backend_device_count", [&]() -> axl_status {
    if (out_count == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, 0, nullptr,
                  "backend_device_count: out_count is NULL");
    // TODO(port): the size of MTLCopyAllDevices(). It may run before
    // backend_init, so cache the array rather than creating queues or
    // anything that starts GPU work; the count must not change afterwards.
    // The stub can tell at once that it cannot run: saying so here (not only
    // in backend_init) lets discovery list it as unavailable with the reason.
    *out_count = 0;
    return fail(AXL_ERROR_BACKEND_UNAVAILABLE, 0, nullptr,
                "unavailable: Metal needs an Apple platform");
  });
}

axl_status backend_set_tracing(uint8_t /*enabled*/) {
  // TODO(port): store the flag in a std::atomic<bool>; every enqueue slot
  // loads it (relaxed) and, when set, calls host->trace_record on the
  // enqueuing thread with the Metal call's name, e.g.
  // "dispatchThreadgroups:threadsPerThreadgroup:" or "copyFromBuffer:...".
  return not_ported("backend_set_tracing");
}

axl_status backend_set_option(const char* key, const char* /*value*/) {
  return guarded("backend_set_option", [&]() -> axl_status {
    // TODO(port): recognise the backend's own keys here. plugin.h fixes the
    // answer for any other key: AXL_ERROR_NOT_FOUND, not UNSUPPORTED, and it
    // may come before backend_init. The stub knows no key.
    char message[192];
    std::snprintf(message, sizeof message,
                  "backend_set_option: unknown option '%.100s'", key ? key : "(null)");
    return fail(AXL_ERROR_NOT_FOUND, 0, nullptr, message);
  });
}

// ----------------------------------------------------------------- device --

axl_status device_get(uint32_t /*index*/, axl_pdevice* /*out_device*/) {
  // TODO(port): a pointer to the backend's record for device `index`
  // (holding its id<MTLDevice>), created in backend_init and valid until
  // backend_shutdown. index >= count: OUT_OF_RANGE.
  return not_ported("device_get");
}

axl_status device_get_properties(axl_pdevice /*device*/,
                                 axl_device_properties* /*props*/) {
  // TODO(port): label "gpu", api "metal"; model_name from MTLDevice.name;
  // architecture_name from MTLDevice.architecture.name (macOS 14) or "";
  // total_memory_bytes from recommendedMaxWorkingSetSize;
  // max_single_alloc_bytes from maxBufferLength; is_host_unified from
  // hasUnifiedMemory; is_compatible = supportsFamily(MTLGPUFamilyMetal3),
  // which the gpuAddress-based port below relies on. Write only the fields
  // inside props->struct_size: the caller may be an older core.
  return not_ported("device_get_properties");
}

axl_status device_get_memory_info(axl_pdevice /*device*/, uint64_t* /*out_free*/,
                                  uint64_t* /*out_total*/) {
  // TODO(port): total = recommendedMaxWorkingSetSize,
  // free = total - currentAllocatedSize (clamped at 0).
  return not_ported("device_get_memory_info");
}

axl_status device_can_access_peer(axl_pdevice /*device*/, axl_pdevice /*peer*/,
                                  uint8_t* /*out*/) {
  // TODO(port): 1 when both devices report the same non-zero peerGroupID
  // (multi-GPU Macs); 0 otherwise, and 0 for device == peer.
  return not_ported("device_can_access_peer");
}

axl_status device_enable_peer_access(axl_pdevice /*device*/, axl_pdevice /*peer*/) {
  // TODO(port): Metal needs no enabling within a peer group; return SUCCESS
  // when can_access_peer says 1 (idempotent), UNSUPPORTED otherwise.
  return not_ported("device_enable_peer_access");
}

// ----------------------------------------------------------------- memory --

axl_status memory_alloc(axl_pdevice /*device*/, uint64_t /*bytes*/,
                        axl_devaddr* /*out_address*/) {
  // TODO(port): newBufferWithLength:options: (StorageModePrivate, or Shared
  // on unified memory); the axl_devaddr is MTLBuffer.gpuAddress, which must
  // be a multiple of 256. Keep an address -> (buffer, base) map: blit and
  // compute encoders take buffers plus offsets, not addresses. nil buffer:
  // OUT_OF_DEVICE_MEMORY.
  return not_ported("memory_alloc");
}

axl_status memory_free(axl_pdevice /*device*/, axl_devaddr /*address*/) {
  // TODO(port): drop the map entry and release the MTLBuffer. The core
  // guarantees no queued work still uses it.
  return not_ported("memory_free");
}

axl_status pinned_alloc(axl_pdevice /*device*/, uint64_t /*bytes*/,
                        void** /*out_host*/) {
  // TODO(port): page-aligned host memory (posix_memalign) wrapped with
  // newBufferWithBytesNoCopy:length:options:deallocator: in StorageModeShared,
  // so blits read it in place instead of through a staging copy.
  return not_ported("pinned_alloc");
}

axl_status pinned_free(axl_pdevice /*device*/, void* /*host*/) {
  // TODO(port): release the wrapping MTLBuffer, then free the memory.
  return not_ported("pinned_free");
}

// ------------------------------------------------------------------ queue --

axl_status queue_create(axl_pdevice /*device*/, const axl_queue_desc* /*desc*/,
                        axl_pqueue* /*out_queue*/) {
  // TODO(port): newCommandQueue. Refuse desc == NULL, a struct_size below
  // sizeof(axl_queue_desc) as of 1.0, or unknown flag bits with
  // INVALID_ARGUMENT. Keep desc->trace_id for trace records. Enqueues encode
  // into one open MTLCommandBuffer that is committed on synchronize, on
  // record_event and when it grows large; command buffers of one queue run
  // in commit order, which gives the in-order guarantee.
  return not_ported("queue_create");
}

axl_status queue_destroy(axl_pqueue /*queue*/) {
  // TODO(port): commit the open command buffer, waitUntilCompleted, then
  // release the queue.
  return not_ported("queue_destroy");
}

axl_status queue_synchronize(axl_pqueue /*queue*/) {
  // TODO(port): commit the open command buffer and waitUntilCompleted on the
  // last one. Return the first failure since the previous synchronize:
  // a command buffer whose status is MTLCommandBufferStatusError
  // (MTLCommandBufferErrorDeviceRemoved maps to DEVICE_LOST).
  return not_ported("queue_synchronize");
}

axl_status queue_copy_htod(axl_pqueue /*queue*/, axl_devaddr /*dst*/,
                           const void* /*src*/, uint64_t /*bytes*/) {
  // TODO(port): blit copyFromBuffer:sourceOffset:toBuffer:destinationOffset:
  // size: from a Shared buffer over src (pinned memory) or from a staging
  // copy made with newBufferWithBytes:length:options:. Must not block.
  return not_ported("queue_copy_htod");
}

axl_status queue_copy_dtoh(axl_pqueue /*queue*/, void* /*dst*/, axl_devaddr /*src*/,
                           uint64_t /*bytes*/) {
  // TODO(port): blit into a Shared buffer over dst (pinned memory), or into a
  // staging buffer copied to dst by the command buffer's completion handler.
  return not_ported("queue_copy_dtoh");
}

axl_status queue_copy_dtod(axl_pqueue /*queue*/, axl_devaddr /*dst*/,
                           axl_devaddr /*src*/, uint64_t /*bytes*/) {
  // TODO(port): blit copyFromBuffer:...toBuffer:... after resolving both
  // addresses to (buffer, offset).
  return not_ported("queue_copy_dtod");
}

axl_status queue_copy_peer(axl_pqueue /*queue*/, axl_pdevice /*dst_device*/,
                           axl_devaddr /*dst*/, axl_pdevice /*src_device*/,
                           axl_devaddr /*src*/, uint64_t /*bytes*/) {
  // TODO(port): within a peer group, blit from
  // newRemoteBufferViewForDevice: of the source buffer; otherwise stage
  // through a Shared host buffer with two blits.
  return not_ported("queue_copy_peer");
}

axl_status queue_fill(axl_pqueue /*queue*/, axl_devaddr /*dst*/, uint64_t /*bytes*/,
                      uint32_t /*pattern*/, uint32_t /*pattern_size*/) {
  // TODO(port): fillBuffer:range:value: repeats one byte only, so it covers
  // pattern_size 1; sizes 2 and 4 need a small compute kernel.
  return not_ported("queue_fill");
}

axl_status queue_record_event(axl_pqueue /*queue*/, axl_pevent /*event*/) {
  // TODO(port): bump the event's target value and encodeSignalEvent:value:
  // on the queue's command buffer, then commit it so the signal is not held
  // back by a buffer nobody commits.
  return not_ported("queue_record_event");
}

axl_status queue_wait_event(axl_pqueue /*queue*/, axl_pevent /*event*/) {
  // TODO(port): encodeWaitForEvent:value: with the event's current target
  // value. The host must not block.
  return not_ported("queue_wait_event");
}

axl_status queue_wait_flag(axl_pqueue /*queue*/, axl_pflag /*flag*/,
                           uint64_t /*value*/) {
  // TODO(port): Metal has no wait-on-memory command. Pair the flag with an
  // MTLSharedEvent, encodeWaitForEvent:value: on it, and let a backend thread
  // (started in backend_init) watch the host word and setSignaledValue: once
  // it reaches `value`.
  return not_ported("queue_wait_flag");
}

axl_status queue_write_flag(axl_pqueue /*queue*/, axl_pflag /*flag*/,
                            uint64_t /*value*/) {
  // TODO(port): a one-thread compute kernel that stores `value`, or a release
  // store from the command buffer's completion handler; either runs after
  // earlier work, as the contract asks.
  return not_ported("queue_write_flag");
}

axl_status queue_enqueue_host_fn(axl_pqueue /*queue*/, axl_host_fn /*fn*/,
                                 void* /*user_data*/) {
  // TODO(port): commit the open command buffer with addCompletedHandler:
  // calling fn(user_data). It runs on a Metal thread, which the contract
  // allows; fn must not call blocking axl functions.
  return not_ported("queue_enqueue_host_fn");
}

axl_status queue_get_native_handle(axl_pqueue /*queue*/, uint64_t* /*out_handle*/) {
  // TODO(port): the id<MTLCommandQueue> as an integer
  // ((uint64_t)(uintptr_t)(__bridge void*)queue), not retained.
  return not_ported("queue_get_native_handle");
}

axl_status queue_launch(axl_pqueue /*queue*/, axl_pkernel /*kernel*/,
                        const axl_launch_config* /*config*/,
                        const axl_kernel_arg* /*args*/, uint32_t /*num_args*/) {
  // TODO(port): a compute encoder: setComputePipelineState:; per argument,
  // DEVADDR -> setBuffer:offset:atIndex: after resolving the address (or
  // useResource:usage: plus the raw gpuAddress), SCALAR ->
  // setBytes:length:atIndex: (args are read during this call only);
  // setThreadgroupMemoryLength:atIndex: for shared_mem_bytes;
  // dispatchThreadgroups:threadsPerThreadgroup:(grid, block). A block above
  // maxTotalThreadsPerThreadgroup is INVALID_ARGUMENT.
  return not_ported("queue_launch");
}

// ------------------------------------------------------------------ event --

axl_status event_create(axl_pdevice /*device*/, uint32_t /*flags*/,
                        axl_pevent* /*out_event*/) {
  // TODO(port): newSharedEvent plus a target value starting at 0, so an
  // event never recorded counts as complete. AXL_EVENT_FLAG_TIMING: also
  // keep the command buffer of each record to read its GPUEndTime (or sample
  // an MTLCounterSampleBuffer). Unknown flag bits: INVALID_ARGUMENT.
  return not_ported("event_create");
}

axl_status event_destroy(axl_pevent /*event*/) {
  // TODO(port): may arrive while a signal or a wait on the event is still
  // queued; hold the MTLSharedEvent until that work completed (a completion
  // handler drops the last reference).
  return not_ported("event_destroy");
}

axl_status event_synchronize(axl_pevent /*event*/) {
  // TODO(port): block until signaledValue >= the target value of the last
  // record, e.g. notifyListener:atValue:block: waking a condition variable.
  return not_ported("event_synchronize");
}

axl_status event_query(axl_pevent /*event*/) {
  // TODO(port): signaledValue >= target value ? SUCCESS : NOT_READY.
  return not_ported("event_query");
}

axl_status event_elapsed_ms(axl_pevent /*start*/, axl_pevent /*end*/,
                            float* /*out_ms*/) {
  // TODO(port): (end GPUEndTime - start GPUEndTime) * 1000 from the command
  // buffers of the two records. The core already checked both completed
  // with timing on.
  return not_ported("event_elapsed_ms");
}

// -------------------------------------------------------- completion flag --

axl_status flag_create(axl_pdevice /*device*/, axl_pflag* /*out_flag*/) {
  // TODO(port): an 8-byte, zeroed slot in a StorageModeShared MTLBuffer, so
  // the host and the GPU see the same word.
  return not_ported("flag_create");
}

axl_status flag_destroy(axl_pflag /*flag*/) {
  // TODO(port): may arrive while a wait on or write to the flag is queued;
  // release the slot only once that work completed.
  return not_ported("flag_destroy");
}

axl_status flag_get_device_address(axl_pflag /*flag*/, axl_devaddr* /*out*/) {
  // TODO(port): MTLBuffer.gpuAddress + the slot's offset.
  return not_ported("flag_get_device_address");
}

axl_status flag_get_host_address(axl_pflag /*flag*/, uint64_t** /*out*/) {
  // TODO(port): MTLBuffer.contents + the slot's offset, 8-byte aligned: the
  // core reads and writes it with atomics.
  return not_ported("flag_get_host_address");
}

// ------------------------------------------------------- module and kernel --

axl_status module_load(axl_pdevice /*device*/, const axl_module_desc* /*desc*/,
                       axl_pmodule* /*out_module*/) {
  // TODO(port): newLibraryWithData:error: over desc->data (a .metallib), or
  // newLibraryWithURL:error: for desc->path. ABI 1.0 has no METALLIB format
  // value: accept AUTO and check the "MTLB" magic; other formats are
  // INVALID_ARGUMENT. A nil library: INVALID_ARGUMENT with the NSError text.
  return not_ported("module_load");
}

axl_status module_unload(axl_pmodule /*module*/) {
  // TODO(port): release the MTLLibrary and its pipeline states, deferred
  // until launches of its kernels that are still queued have run.
  return not_ported("module_unload");
}

axl_status module_get_kernel(axl_pmodule /*module*/, const char* /*name*/,
                             axl_pkernel* /*out_kernel*/) {
  // TODO(port): newFunctionWithName: (nil: NOT_FOUND), then
  // newComputePipelineStateWithFunction:error:; cache per name, owned by the
  // module.
  return not_ported("module_get_kernel");
}

axl_status device_get_test_kernel(axl_pdevice /*device*/, int32_t /*which*/,
                                  axl_pkernel* /*out_kernel*/) {
  // TODO(port): compile AXL_TEST_KERNEL_INCREMENT_U32 and _FILL_U32 from
  // embedded MSL with newLibraryWithSource:options:error: on first use; keep
  // them until backend_shutdown. Unknown `which`: INVALID_ARGUMENT.
  return not_ported("device_get_test_kernel");
}

axl_status module_compile(axl_pdevice /*device*/, const axl_compile_desc* /*desc*/,
                          axl_pmodule* /*out_module*/) {
  // TODO(port): AXL_SOURCE_LANGUAGE_* has no Metal Shading Language yet; a
  // port that adds one compiles it with newLibraryWithSource:options:error:
  // and puts the NSError's text in the INVALID_ARGUMENT message. Until then
  // this slot becomes NULL (the core answers UNSUPPORTED).
  return not_ported("module_compile");
}

// Every slot is present, in declaration order (C++20 designated initialisers
// must follow it), so a copy starts with a complete table and replaces the
// bodies one by one. A slot a port cannot support should become NULL here
// rather than answer UNSUPPORTED by hand: the core then says so itself.
// The slots and their order are plugin.h's AXL_PLUGIN_SLOTS list; in this
// tree tests/plugins/metal_stub_slots_test.cpp compiles this table against
// the list and fails to build, naming the slot, for a listed slot missing
// here (an optional slot left NULL on purpose is named in its kLeftOut).
constexpr axl_plugin_table kTable = {
    .struct_size = sizeof(axl_plugin_table),
    .backend_init = backend_init,
    .backend_shutdown = backend_shutdown,
    .backend_device_count = backend_device_count,
    .backend_set_tracing = backend_set_tracing,
    .backend_set_option = backend_set_option,
    .device_get = device_get,
    .device_get_properties = device_get_properties,
    .device_get_memory_info = device_get_memory_info,
    .device_can_access_peer = device_can_access_peer,
    .device_enable_peer_access = device_enable_peer_access,
    .memory_alloc = memory_alloc,
    .memory_free = memory_free,
    .pinned_alloc = pinned_alloc,
    .pinned_free = pinned_free,
    .queue_create = queue_create,
    .queue_destroy = queue_destroy,
    .queue_synchronize = queue_synchronize,
    .queue_copy_htod = queue_copy_htod,
    .queue_copy_dtoh = queue_copy_dtoh,
    .queue_copy_dtod = queue_copy_dtod,
    .queue_copy_peer = queue_copy_peer,
    .queue_fill = queue_fill,
    .queue_record_event = queue_record_event,
    .queue_wait_event = queue_wait_event,
    .queue_wait_flag = queue_wait_flag,
    .queue_write_flag = queue_write_flag,
    .queue_enqueue_host_fn = queue_enqueue_host_fn,
    .queue_get_native_handle = queue_get_native_handle,
    .queue_launch = queue_launch,
    .event_create = event_create,
    .event_destroy = event_destroy,
    .event_synchronize = event_synchronize,
    .event_query = event_query,
    .event_elapsed_ms = event_elapsed_ms,
    .flag_create = flag_create,
    .flag_destroy = flag_destroy,
    .flag_get_device_address = flag_get_device_address,
    .flag_get_host_address = flag_get_host_address,
    .module_load = module_load,
    .module_unload = module_unload,
    .module_get_kernel = module_get_kernel,
    .device_get_test_kernel = device_get_test_kernel,
    .module_compile = module_compile,
};

constexpr axl_plugin_info kInfo = {
    .struct_size = sizeof(axl_plugin_info),
    .name = kName,
    .api = kApi,
    .version = "0.1.0",
    // TODO(port): a real Metal backend is not fork-safe (no flag). Add
    // AXL_PLUGIN_FLAG_EXPERIMENTAL until axl-cts passes against it, and
    // AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE only once every queue slot takes
    // concurrent calls on one queue (plugin.h; this stub's do not).
    .flags = 0,
    .reserved = 0,
};

// The fields negotiate writes end at `table`; a core whose args struct is
// shorter than that cannot be served without writing past its end.
constexpr size_t kArgsMinSize =
    offsetof(axl_negotiate_args, table) + sizeof(axl_negotiate_args::table);
// log and report_error are the services this plugin calls unconditionally;
// a service appended in a later minor must be checked against struct_size
// before each use instead.
constexpr size_t kHostMinSize =
    offsetof(axl_host_services, report_error) + sizeof(axl_host_services::report_error);

}  // namespace

// The one exported symbol (the version script hides everything else). No
// side effects: no Metal call, no thread, nothing that outlives the call.
extern "C" AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args) {
  // Until the major is known to match, the only fields that may be read are
  // the leading struct_size and core_abi_major, and the host services may
  // not be touched: their layout belongs to the core's major.
  if (args == nullptr || args->struct_size < offsetof(axl_negotiate_args, core_abi_minor))
    return AXL_ERROR_INVALID_ARGUMENT;
  if (args->core_abi_major != AXL_PLUGIN_ABI_MAJOR) return AXL_ERROR_VERSION_MISMATCH;
  if (args->struct_size < kArgsMinSize || args->host == nullptr ||
      args->host->struct_size < kHostMinSize)
    return AXL_ERROR_INVALID_ARGUMENT;

  g_host.store(args->host, std::memory_order_release);
  // A newer core gets this plugin's minor; an older core gets its own, and
  // the plugin must then behave as that minor specifies.
  const uint32_t minor =
      std::min(args->core_abi_minor, static_cast<uint32_t>(AXL_PLUGIN_ABI_MINOR));
  args->plugin_abi_minor = minor;
  args->info = &kInfo;
  args->table = &kTable;

  char message[128];
  std::snprintf(message, sizeof message, "negotiated plugin ABI %d.%u (core %u.%u)",
                AXL_PLUGIN_ABI_MAJOR, minor, args->core_abi_major, args->core_abi_minor);
  host_log(AXL_LOG_DEBUG, message);
  return AXL_SUCCESS;
}
