// The cpu backend's entry point, its function table and the backend slots.
#include <cerrno>
#include <cstdlib>
#include <string>

#include "cpu_backend.hpp"

namespace axl::cpu {

namespace {

// Highest value "cpu_threads" accepts: far above any real core count, low
// enough that a typo cannot ask for millions of threads.
constexpr unsigned long kMaxCpuThreads = 4096;

}  // namespace

axl_status backend_init() noexcept {
  return guarded("backend_init", []() -> axl_status {
    // Nothing to start: queue workers start with their queue and the kernel
    // pool with the first launch, so a process that only lists devices never
    // creates a thread. Building the state here keeps the first enqueue from
    // paying for it.
    backend();
    return AXL_SUCCESS;
  });
}

axl_status backend_shutdown() noexcept {
  return guarded("backend_shutdown", []() -> axl_status {
    Backend& b = backend();
    std::unordered_set<Queue*> leftover;
    {
      std::lock_guard<std::mutex> lk(b.mu);
      leftover = b.queues;
    }
    if (!leftover.empty()) {
      // The core destroys its queues first; if some survive, their workers
      // must still be joined here. The Queue objects stay allocated so a late
      // queue_destroy is harmless.
      b.host.log(AXL_LOG_WARN, common::str("backend_shutdown found ", leftover.size(),
                                           " queue(s) still alive; draining and stopping them"));
      for (Queue* q : leftover) q->work.stop();
    }
    b.pool.shutdown();
    return AXL_SUCCESS;
  });
}

axl_status backend_device_count(uint32_t* out_count) noexcept {
  if (out_count == nullptr) return AXL_ERROR_INVALID_ARGUMENT;
  *out_count = 1;
  return AXL_SUCCESS;
}

axl_status backend_set_tracing(uint8_t enabled) noexcept {
  backend().tracer.set_enabled(enabled != 0);
  return AXL_SUCCESS;
}

axl_status backend_set_option(const char* key, const char* value) noexcept {
  return guarded("backend_set_option", [&]() -> axl_status {
    Backend& b = backend();
    if (key == nullptr) {
      return b.host.report(AXL_ERROR_INVALID_ARGUMENT, "backend_set_option: key is NULL");
    }
    const std::string k = key;
    if (k == "cpu_threads") {
      // Threads that run kernel blocks, the launching queue's worker
      // included; "0" restores the default (the CPUs this process may use).
      const std::string v = value != nullptr ? value : "";
      char* end = nullptr;
      errno = 0;
      const unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || v[0] == '-' || errno != 0 || n > kMaxCpuThreads) {
        return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                             common::str("option cpu_threads expects an integer from 0 (one "
                                         "per CPU) to ", kMaxCpuThreads, ", got '", v, "'"));
      }
      if (!b.pool.set_participants(static_cast<unsigned>(n))) {
        return b.host.report(AXL_ERROR_INVALID_STATE,
                             "option cpu_threads must be set before the first kernel launch "
                             "(the thread pool is already running)");
      }
      return AXL_SUCCESS;
    }
    return b.host.report(AXL_ERROR_NOT_FOUND,
                         common::str("unknown option '", k, "' (known: cpu_threads)"));
  });
}

namespace {

const axl_plugin_info kInfo = {
    sizeof(axl_plugin_info),
    "cpu",
    "cpu",
    "0.1.0",
    // HOST: the device is the host CPU (label "cpu"), known without init.
    // Not FORK_SAFE: a child inherits neither the queue workers nor the pool
    // threads, so the core poisons the backend there once it was initialised.
    AXL_PLUGIN_FLAG_HOST,
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
  // No peers exist (one host device), so there is nothing to enable; the
  // core answers UNSUPPORTED naming the slot.
  t.device_enable_peer_access = nullptr;
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

}  // namespace axl::cpu

extern "C" AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args) {
  return axl::common::negotiate(args, axl::cpu::backend().host, &axl::cpu::kInfo,
                                &axl::cpu::kTable);
}
