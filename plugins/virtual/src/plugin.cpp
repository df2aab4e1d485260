// The virtual backend's entry point, its function table and the backend
// slots (backend_set_option lives with the rest of the configuration).
#include <sys/mman.h>

#include "virtual_backend.hpp"

namespace axl::virt {

axl_status backend_init() noexcept {
  return guarded("backend_init", []() -> axl_status {
    config();
    if (std::optional<FaultHit> hit = backend().faults.check(FaultOp::kInit)) {
      // BACKEND_UNAVAILABLE here reads as "this machine cannot run it"; any
      // other status as a broken driver. Both are what the core must handle.
      return fail(*hit);
    }
    // Nothing else to start: each queue starts its own worker, so a process
    // that only lists devices never creates a thread.
    return AXL_SUCCESS;
  });
}

axl_status backend_shutdown() noexcept {
  return guarded("backend_shutdown", []() -> axl_status {
    Backend& b = backend();
    std::unordered_set<Queue*> leftover;
    {
      std::lock_guard<std::mutex> lk(b.queues_mu);
      leftover = b.queues;
    }
    if (!leftover.empty()) {
      // The core destroys its queues first; workers of any that survive must
      // still be joined here. The Queue objects stay allocated so a late
      // queue_destroy is harmless.
      b.host.log(AXL_LOG_WARN, common::str("backend_shutdown found ", leftover.size(),
                                           " queue(s) still alive; draining and stopping them"));
      for (Queue* q : leftover) q->work.stop();
    }
    std::lock_guard<std::mutex> lk(b.quarantine_mu);
    for (auto& [p, len] : b.quarantine) munmap(p, len);
    b.quarantine.clear();
    return AXL_SUCCESS;
  });
}

axl_status backend_device_count(uint32_t* out_count) noexcept {
  return guarded("backend_device_count", [&]() -> axl_status {
    if (out_count == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "backend_device_count: out_count is NULL");
    // Cheap and thread-free, as plugin.h requires: two reads.
    const uint32_t mode = backend().mode_count.load(std::memory_order_acquire);
    *out_count = mode != 0 ? mode : config().devices;
    return AXL_SUCCESS;
  });
}

axl_status backend_set_tracing(uint8_t enabled) noexcept {
  backend().tracer.set_enabled(enabled != 0);
  return AXL_SUCCESS;
}

namespace {

const axl_plugin_info kInfo = {
    sizeof(axl_plugin_info),
    "virtual",
    "virtual",
    "0.1.0",
    // VIRTUAL: the devices virtual-device mode hands out. Not HOST: they are
    // accelerators (label "gpu") whose memory the host cannot read. Not
    // FORK_SAFE: a child inherits no queue worker threads, so the core
    // poisons the backend there once it was initialised.
    AXL_PLUGIN_FLAG_VIRTUAL,
    0u,
};

constexpr axl_plugin_table make_table() {
  axl_plugin_table t{};
  t.struct_size = sizeof(axl_plugin_table);
  t.backend_init = backend_init;
  t.backend_shutdown = backend_shutdown;
  t.backend_device_count = backend_device_count;
  t.backend_set_tracing = backend_set_tracing;
  t.backend_set_option = backend_set_option;
  t.device_get = device_get;
  t.device_get_properties = device_get_properties;
  t.device_get_memory_info = device_get_memory_info;
  t.device_can_access_peer = device_can_access_peer;
  t.device_enable_peer_access = device_enable_peer_access;
  t.memory_alloc = memory_alloc;
  t.memory_free = memory_free;
  t.pinned_alloc = pinned_alloc;
  t.pinned_free = pinned_free;
  t.queue_create = queue_create;
  t.queue_destroy = queue_destroy;
  t.queue_synchronize = queue_synchronize;
  t.queue_copy_htod = queue_copy_htod;
  t.queue_copy_dtoh = queue_copy_dtoh;
  t.queue_copy_dtod = queue_copy_dtod;
  t.queue_copy_peer = queue_copy_peer;
  t.queue_fill = queue_fill;
  t.queue_record_event = queue_record_event;
  t.queue_wait_event = queue_wait_event;
  t.queue_wait_flag = queue_wait_flag;
  t.queue_write_flag = queue_write_flag;
  t.queue_enqueue_host_fn = queue_enqueue_host_fn;
  t.queue_get_native_handle = queue_get_native_handle;
  t.queue_launch = queue_launch;
  t.event_create = event_create;
  t.event_destroy = event_destroy;
  t.event_synchronize = event_synchronize;
  t.event_query = event_query;
  t.event_elapsed_ms = event_elapsed_ms;
  t.flag_create = flag_create;
  t.flag_destroy = flag_destroy;
  t.flag_get_device_address = flag_get_device_address;
  t.flag_get_host_address = flag_get_host_address;
  t.module_load = module_load;
  t.module_unload = module_unload;
  t.module_get_kernel = module_get_kernel;
  t.device_get_test_kernel = device_get_test_kernel;
  return t;
}

// constexpr: the table is in read-only data, complete before any caller.
constexpr axl_plugin_table kTable = make_table();

}  // namespace

}  // namespace axl::virt

extern "C" AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args) {
  return axl::common::negotiate(args, axl::virt::backend().host, &axl::virt::kInfo,
                                &axl::virt::kTable);
}
