// The virtual backend's entry point, its function table and the backend
// slots (backend_set_option lives with the rest of the configuration).
#include <array>
#include <sys/mman.h>

#include "axl/common/host_queue_slots.hpp"
#include "virtual_backend.hpp"
#include "axl/common/slots.hpp"

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
    common::stop_leftover_queues(b.host, b.queues, [](Queue& q) { q.work.stop(); });
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
    // poisons the backend there once it was initialised. QUEUE_THREAD_SAFE:
    // as on cpu, every queue slot appends to a WorkQueue under its own lock
    // (fault injection and the cost model lock their own state).
    AXL_PLUGIN_FLAG_VIRTUAL | AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE,
    0u,
};

// Slots left NULL: the virtual backend compiles nothing at run time (a
// Program on a virtual device is UNSUPPORTED, as launches are compile-only).
constexpr std::array<std::string_view, 1> kOmitted{"module_compile"};
// constexpr: the table is in read-only data, complete before any caller.
constexpr axl_plugin_table kTable = AXL_PLUGIN_TABLE(kOmitted);

}  // namespace

}  // namespace axl::virt

extern "C" AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args) {
  return axl::common::negotiate(args, axl::virt::backend().host, &axl::virt::kInfo,
                                &axl::virt::kTable);
}
