// The event_* slots of DriverPlugin<D>: the vendor's events.
// Part of driver_plugin_slots.hpp, which includes every part; included by
// exactly one translation unit of each driver-API plugin (its plugin.cpp).
#pragma once

#include "axl/common/driver_plugin.hpp"
#include "axl/common/slot_checks.hpp"

namespace axl::common {

// ---- events -----------------------------------------------------------------

// Timing only when asked (both runtimes time by default, axl does not:
// untimed events are cheaper to record and wait on).
template <class D>
axl_status DriverPlugin<D>::event_create(axl_pdevice device, uint32_t flags, axl_pevent* out_event) noexcept {
  return guarded("event_create", [&]() -> axl_status {
    if (axl_status s = check_event_create(fail, flags, out_event)) return s;
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    auto e = std::make_unique<Event>();
    e->device = &d;
    const unsigned native = (flags & AXL_EVENT_FLAG_TIMING) ? D::kEventDefault : D::kEventDisableTiming;
    if (axl_status s = check(api().event_create(&e->event, native), D::names.event_create)) return s;
    *out_event = reinterpret_cast<axl_pevent>(e.release());
    return AXL_SUCCESS;
  });
}

template <class D>
axl_status DriverPlugin<D>::event_destroy(axl_pevent event) noexcept {
  return guarded("event_destroy", [&]() -> axl_status {
    std::unique_ptr<Event> e(from(event));
    if (axl_status s = make_current(*e->device)) return s;
    // Destroying an event with a record or wait still pending is allowed:
    // the driver frees it once that work is done, as plugin.h asks.
    return check(api().event_destroy(e->event), D::names.event_destroy);
  });
}

template <class D>
axl_status DriverPlugin<D>::event_synchronize(axl_pevent event) noexcept {
  return guarded("event_synchronize", [&]() -> axl_status {
    // The core calls this from threads of its own (the reaper among them)
    // where no context need be current.
    Event& e = *from(event);
    if (axl_status s = make_current(*e.device)) return s;
    return check(api().event_synchronize(e.event), D::names.event_synchronize);
  });
}

template <class D>
axl_status DriverPlugin<D>::event_query(axl_pevent event) noexcept {
  return guarded("event_query", [&]() -> axl_status {
    Event& e = *from(event);
    if (axl_status s = make_current(*e.device)) return s;
    const Result r = api().event_query(e.event);
    if (r == D::kNotReady) return AXL_ERROR_NOT_READY;  // not a failure: no report
    return check(r, D::names.event_query);
  });
}

template <class D>
axl_status DriverPlugin<D>::event_elapsed_ms(axl_pevent start, axl_pevent end, float* out_ms) noexcept {
  return guarded("event_elapsed_ms", [&]() -> axl_status {
    if (out_ms == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "event_elapsed_ms: out_ms is NULL");
    if (axl_status s = make_current(*from(start)->device)) return s;
    return check(api().event_elapsed_time(out_ms, from(start)->event, from(end)->event),
                 D::names.event_elapsed_time);
  });
}

}  // namespace axl::common
