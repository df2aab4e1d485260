// Events are CUevents; timing only when asked (CUDA times by default, axl
// does not, because untimed events are cheaper to record and wait on).
#include "cuda_backend.hpp"

namespace axl::cuda {

axl_status event_create(axl_pdevice device, uint32_t flags, axl_pevent* out_event) noexcept {
  return guarded("event_create", [&]() -> axl_status {
    if (out_event == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "event_create: out_event is NULL");
    if ((flags & ~uint32_t{AXL_EVENT_FLAG_TIMING}) != 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("event_create: unknown flags 0x", std::hex, flags,
                              "; only AXL_EVENT_FLAG_TIMING (1) is defined"));
    Device& d = *from(device);
    if (axl_status s = make_current(d)) return s;
    auto e = std::make_unique<Event>();
    e->device = &d;
    const unsigned cu_flags = (flags & AXL_EVENT_FLAG_TIMING) ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING;
    if (axl_status s = check(api().cuEventCreate(&e->event, cu_flags), "cuEventCreate")) return s;
    *out_event = reinterpret_cast<axl_pevent>(e.release());
    return AXL_SUCCESS;
  });
}

axl_status event_destroy(axl_pevent event) noexcept {
  return guarded("event_destroy", [&]() -> axl_status {
    std::unique_ptr<Event> e(from(event));
    if (axl_status s = make_current(*e->device)) return s;
    // cuEventDestroy may be called with a record or wait still pending: the
    // driver frees the event once that work is done, as plugin.h asks.
    return check(api().cuEventDestroy(e->event), "cuEventDestroy");
  });
}

axl_status event_synchronize(axl_pevent event) noexcept {
  return guarded("event_synchronize", [&]() -> axl_status {
    return check(api().cuEventSynchronize(from(event)->event), "cuEventSynchronize");
  });
}

axl_status event_query(axl_pevent event) noexcept {
  return guarded("event_query", [&]() -> axl_status {
    const CUresult r = api().cuEventQuery(from(event)->event);
    if (r == CUDA_ERROR_NOT_READY) return AXL_ERROR_NOT_READY;  // not a failure: no report
    return check(r, "cuEventQuery");
  });
}

axl_status event_elapsed_ms(axl_pevent start, axl_pevent end, float* out_ms) noexcept {
  return guarded("event_elapsed_ms", [&]() -> axl_status {
    if (out_ms == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "event_elapsed_ms: out_ms is NULL");
    return check(api().cuEventElapsedTime(out_ms, from(start)->event, from(end)->event),
                 "cuEventElapsedTime");
  });
}

}  // namespace axl::cuda
