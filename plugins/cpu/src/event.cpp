// Events: common::Event, whose markers run on the queue workers and take a
// steady-clock timestamp, so every event can time (TIMING costs nothing).
#include "axl/common/event.hpp"

#include "cpu_backend.hpp"

namespace axl::cpu {

namespace {

common::Event* from_event(axl_pevent e) noexcept { return reinterpret_cast<common::Event*>(e); }

}  // namespace

axl_status event_create(axl_pdevice, uint32_t flags, axl_pevent* out_event) noexcept {
  return guarded("event_create", [&]() -> axl_status {
    Backend& b = backend();
    if (out_event == nullptr) {
      return b.host.report(AXL_ERROR_INVALID_ARGUMENT, "event_create: out_event is NULL");
    }
    if ((flags & ~static_cast<uint32_t>(AXL_EVENT_FLAG_TIMING)) != 0) {
      return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                           common::str("event_create: unknown event flags 0x", std::hex,
                                       flags, " (known: AXL_EVENT_FLAG_TIMING = 0x1)"));
    }
    *out_event = reinterpret_cast<axl_pevent>(new common::Event());
    return AXL_SUCCESS;
  });
}

axl_status event_destroy(axl_pevent event) noexcept {
  // A record still queued keeps its own reference; the event is freed when
  // the last marker has run.
  from_event(event)->release();
  return AXL_SUCCESS;
}

axl_status event_synchronize(axl_pevent event) noexcept {
  return guarded("event_synchronize", [&]() -> axl_status {
    common::SyncResult r = from_event(event)->synchronize();
    if (r.status == AXL_SUCCESS) return AXL_SUCCESS;
    return backend().host.report(r.status, "an operation enqueued before the event failed: " + r.message);
  });
}

axl_status event_query(axl_pevent event) noexcept {
  return from_event(event)->query() ? AXL_SUCCESS : AXL_ERROR_NOT_READY;
}

axl_status event_elapsed_ms(axl_pevent start, axl_pevent end, float* out_ms) noexcept {
  Backend& b = backend();
  const common::Event* s = from_event(start);
  const common::Event* e = from_event(end);
  if (out_ms == nullptr) {
    return b.host.report(AXL_ERROR_INVALID_ARGUMENT, "event_elapsed_ms: out_ms is NULL");
  }
  // The core checks this too; the plugin's own state is the final word.
  if (!s->has_timestamp()) {
    return b.host.report(AXL_ERROR_INVALID_STATE,
                         "event_elapsed_ms: the start event has not completed a record");
  }
  if (!e->has_timestamp()) {
    return b.host.report(AXL_ERROR_INVALID_STATE,
                         "event_elapsed_ms: the end event has not completed a record");
  }
  *out_ms = common::Event::elapsed_ms(*s, *e);
  return AXL_SUCCESS;
}

}  // namespace axl::cpu
