// Events: common::Event, whose markers run on the queue workers and take a
// steady-clock timestamp, so every event can time (TIMING costs nothing).
// The bodies are common's (host_queue_slots.hpp).
#include "axl/common/host_queue_slots.hpp"
#include "cpu_backend.hpp"

namespace axl::cpu {

axl_status event_create(axl_pdevice, uint32_t flags, axl_pevent* out_event) noexcept {
  return guarded("event_create", [&] { return common::create_event(fail, flags, out_event); });
}

axl_status event_destroy(axl_pevent event) noexcept { return common::destroy_event(event); }

axl_status event_synchronize(axl_pevent event) noexcept {
  return guarded("event_synchronize",
                 [&] { return common::report_event_sync(fail, from(event)->synchronize()); });
}

axl_status event_query(axl_pevent event) noexcept { return common::query_event(event); }

axl_status event_elapsed_ms(axl_pevent start, axl_pevent end, float* out_ms) noexcept {
  return guarded("event_elapsed_ms", [&] { return common::event_elapsed(fail, start, end, out_ms); });
}

}  // namespace axl::cpu
