// The backend_* slots of DriverPlugin<D>: init, shutdown, the device count (census first), tracing and options.
// Part of driver_plugin_slots.hpp, which includes every part; included by
// exactly one translation unit of each driver-API plugin (its plugin.cpp).
#pragma once

#include "axl/common/driver_plugin.hpp"

namespace axl::common {

// ---- backend ----------------------------------------------------------------

template <class D>
axl_status DriverPlugin<D>::backend_init() noexcept {
  return guarded("backend_init", []() -> axl_status {
    if (axl_status s = require_driver()) return s;
    State& b = state();
    std::lock_guard<std::mutex> lk(b.dev_mu);
    b.devices.resize(static_cast<size_t>(b.probe.device_count));
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::backend_shutdown() noexcept {
  return guarded("backend_shutdown", []() -> axl_status {
    State& b = state();
    const Api& a = api();
    for (auto& d : b.devices)
      if (d && make_current(*d) == AXL_SUCCESS) (void)a.ctx_synchronize();
    if (size_t left = b.graveyard.release_all())
      b.host.log(AXL_LOG_WARN, str("backend_shutdown released ", left,
                                   " module(s)/flag(s) whose queued work had not finished"));
    {
      std::lock_guard<std::mutex> lk(b.queues_mu);
      if (!b.queues.empty())
        b.host.log(AXL_LOG_WARN, str("backend_shutdown found ", b.queues.size(),
                                     " queue(s) still alive; destroying their streams"));
      for (Queue* q : b.queues) (void)a.stream_destroy(q->stream);
      b.queues.clear();
    }
    std::lock_guard<std::mutex> lk(b.dev_mu);
    for (auto& d : b.devices) {
      if (!d) continue;
      if (make_current(*d) == AXL_SUCCESS) {
        if (d->test_module != nullptr) (void)a.module_unload(d->test_module->module);
        if (d->alloc_stream != nullptr) (void)a.stream_destroy(d->alloc_stream);
        // After the synchronisation above no free is pending; the driver
        // releases what outstanding allocations hold once they are freed.
        if (d->pools) (void)a.pool_destroy(d->pool);
      }
      D::release(a, d->dev);
      // The Device stays allocated (State::retired says why).
      b.retired.push_back(std::move(d));
    }
    b.devices.clear();
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::backend_device_count(uint32_t* out_count) noexcept {
  return guarded("backend_device_count", [&]() -> axl_status {
    if (out_count == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "backend_device_count: out_count is NULL");
    State& b = state();
    // Before the driver is up: the census, so that counting starts no
    // driver and fork() after accelerator_count() stays safe
    // (axl/common/census.hpp).
    if (!b.probed.load(std::memory_order_acquire)) {
      const Census& c = census();
      if (c.known) {
        if (c.count == 0) return fail(AXL_ERROR_BACKEND_UNAVAILABLE, c.reason);
        // Devices exist: the library must load (reported now, not at first use).
        if (axl_status s = report_probe(opened())) return s;
        b.host.log(AXL_LOG_DEBUG, str(D::text.plugin, ": ", c.count, " device(s) by ", c.source,
                                      "; the driver is initialised at the first device use"));
        *out_count = c.count;
        return AXL_SUCCESS;
      }
      b.host.log(AXL_LOG_DEBUG, str(D::text.plugin, ": no device census here (", D::text.vendor,
                                    "'s kernel driver publishes none); counting initialises the driver"));
    }
    // The driver's own count: once it is up (the core asks again after
    // backend_init, so MIG and visible-device subtleties come out right),
    // or where only it can count.
    if (axl_status s = require_driver()) return s;
    *out_count = static_cast<uint32_t>(probe().device_count);
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::backend_set_tracing(uint8_t enabled) noexcept {
  state().tracer.set_enabled(enabled != 0);
  return AXL_SUCCESS;
}

// The driver backends take no options: every key is unknown, which plugin.h
// answers with AXL_ERROR_NOT_FOUND, and is refused by name (a NULL slot
// would only say "unsupported", not which key was wrong).
template <class D>
axl_status DriverPlugin<D>::backend_set_option(const char* key, const char* value) noexcept {
  return fail(AXL_ERROR_NOT_FOUND,
              str(D::text.plugin, ": no backend option '", key ? key : "(null)", "' (value '", value ? value : "(null)",
                  "'); the ", D::text.plugin, " backend has no options"));
}

}  // namespace axl::common
