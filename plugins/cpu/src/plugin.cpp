// The cpu backend's entry point, its function table and the backend slots.
#include <array>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "cpu_backend.hpp"
#include "axl/common/host_queue_slots.hpp"
#include "axl/common/slots.hpp"

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
    common::stop_leftover_queues(b.host, b.queues, [](Queue& q) { q.work.stop(); });
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
    // QUEUE_THREAD_SAFE: every queue slot appends to a WorkQueue under its
    // own lock, and nothing else per queue changes after creation.
    AXL_PLUGIN_FLAG_HOST | AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE,
    0u,
};

// Slots left NULL (the core answers UNSUPPORTED naming them): no peers exist
// (one host device), so there is nothing to enable; no run-time compiler; no
// multicast group (it needs two devices).
constexpr auto kOmitted = common::omitted_with(
    std::array<std::string_view, 2>{"device_enable_peer_access", "module_compile"}, common::kMulticastSlots);
// constexpr: the table is in read-only data, complete before any caller.
constexpr axl_plugin_table kTable = AXL_PLUGIN_TABLE(kOmitted);

}  // namespace

}  // namespace axl::cpu

extern "C" AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args) {
  return axl::common::negotiate(args, axl::cpu::backend().host, &axl::cpu::kInfo,
                                &axl::cpu::kTable);
}
