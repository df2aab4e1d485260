// Events: common::Event. Its marker runs on the queue's worker after the
// simulated time of everything before it, so its steady-clock timestamp is
// the virtual device's completion time and every event can time.
#include "axl/common/host_queue_slots.hpp"

#include "virtual_backend.hpp"

namespace axl::virt {

axl_status event_create(axl_pdevice, uint32_t flags, axl_pevent* out_event) noexcept {
  return guarded("event_create", [&] { return common::create_event(fail, flags, out_event); });
}

axl_status event_destroy(axl_pevent event) noexcept { return common::destroy_event(event); }

axl_status event_synchronize(axl_pevent event) noexcept {
  return guarded("event_synchronize", [&]() -> axl_status {
    common::SyncResult r = from(event)->synchronize();
    if (std::optional<FaultHit> hit = backend().faults.check(FaultOp::kEventSync)) return fail(*hit);
    return common::report_event_sync(fail, std::move(r));
  });
}

axl_status event_query(axl_pevent event) noexcept { return common::query_event(event); }

axl_status event_elapsed_ms(axl_pevent start, axl_pevent end, float* out_ms) noexcept {
  return guarded("event_elapsed_ms", [&] { return common::event_elapsed(fail, start, end, out_ms); });
}

}  // namespace axl::virt
