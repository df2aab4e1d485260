#include "axl/common/host_queue_slots.hpp"

#include "axl/common/handles.hpp"
#include "axl/common/host_fn.hpp"
#include "axl/common/slot_checks.hpp"

namespace axl::common {

namespace {

Event* event_of(axl_pevent e) noexcept { return reinterpret_cast<Event*>(e); }

}  // namespace

axl_status enqueue_result(Fail fail, axl_status status, const char* what) {
  if (status == AXL_SUCCESS) return status;
  return fail(status, str("cannot enqueue ", what, ": ", WorkQueue::refusal_message()));
}

axl_status report_sync(Fail fail, SyncResult r) {
  if (r.status == AXL_SUCCESS) return AXL_SUCCESS;
  return fail(r.status, r.message);
}

axl_status record_event(Fail fail, WorkQueue& queue, axl_pevent event) {
  return enqueue_result(fail, event_of(event)->record(queue), "an event record");
}

axl_status wait_event(Fail fail, WorkQueue& queue, axl_pevent event) {
  return enqueue_result(fail, event_of(event)->enqueue_wait(queue), "an event wait");
}

axl_status wait_flag(Fail fail, WorkQueue& queue, Flag& flag, uint64_t value) {
  return enqueue_result(fail, flag.enqueue_wait(queue, value), "a flag wait");
}

axl_status write_flag(Fail fail, WorkQueue& queue, Flag& flag, uint64_t value) {
  return enqueue_result(fail, flag.enqueue_write(queue, value), "a flag write");
}

axl_status enqueue_host_callback(Fail fail, WorkQueue& queue, axl_host_fn fn, void* user_data) {
  if (fn == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "queue_enqueue_host_fn: fn is NULL");
  return enqueue_result(fail, enqueue_host_fn(queue, fn, user_data), "a host function");
}

axl_status create_event(Fail fail, uint32_t flags, axl_pevent* out_event) {
  if (axl_status s = check_event_create(fail, flags, out_event)) return s;
  // Every event can time: its marker takes a steady-clock timestamp either way.
  *out_event = to_handle<axl_pevent>(new Event());
  return AXL_SUCCESS;
}

axl_status destroy_event(axl_pevent event) noexcept {
  event_of(event)->release();
  return AXL_SUCCESS;
}

axl_status report_event_sync(Fail fail, SyncResult r) {
  if (r.status == AXL_SUCCESS) return AXL_SUCCESS;
  return fail(r.status, "an operation enqueued before the event failed: " + r.message);
}

axl_status query_event(axl_pevent event) noexcept {
  return event_of(event)->query() ? AXL_SUCCESS : AXL_ERROR_NOT_READY;
}

axl_status event_elapsed(Fail fail, axl_pevent start, axl_pevent end, float* out_ms) {
  if (out_ms == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "event_elapsed_ms: out_ms is NULL");
  const Event* s = event_of(start);
  const Event* e = event_of(end);
  // The core checks this too; the plugin's own state is the final word.
  if (!s->has_timestamp())
    return fail(AXL_ERROR_INVALID_STATE, "event_elapsed_ms: the start event has not completed a record");
  if (!e->has_timestamp())
    return fail(AXL_ERROR_INVALID_STATE, "event_elapsed_ms: the end event has not completed a record");
  *out_ms = Event::elapsed_ms(*s, *e);
  return AXL_SUCCESS;
}

}  // namespace axl::common
