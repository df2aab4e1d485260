// Events. Each record signals a fresh ze_event (its own one-event pool), so
// a record never resets an event that an earlier record's waiters still
// watch, and the last record wins as in CUDA. Without timing the record is a
// barrier that signals it; with AXL_EVENT_FLAG_TIMING it is a global
// timestamp write (zeCommandListAppendWriteGlobalTimestamp) after the
// ordering barrier, and elapsed time is the difference of two timestamps.
#include "axl/common/slot_checks.hpp"
#include "l0_backend.hpp"

namespace axl::l0 {

axl_status Signal::create(Device& device, bool with_timestamp, common::Ref<Signal>* out) {
  const ZeApi& z = ze();
  auto s = common::Ref<Signal>::adopt(new Signal());
  s->device_ = &device;
  ze_event_pool_desc_t pd{};
  pd.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
  pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
  pd.count = 1;
  // No device list: the pool serves every device of the context, so a queue
  // of another device of the same driver can wait on it.
  if (ze_result_t r = z.zeEventPoolCreate(device.context(), &pd, 0, nullptr, &s->pool_))
    return ze_fail("zeEventPoolCreate", r);
  ze_event_desc_t ed{};
  ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
  ed.index = 0;
  ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
  ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
  if (ze_result_t r = z.zeEventCreate(s->pool_, &ed, &s->event)) return ze_fail("zeEventCreate", r);
  if (with_timestamp) {
    ze_host_mem_alloc_desc_t hd{};
    hd.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
    void* p = nullptr;
    if (ze_result_t r = z.zeMemAllocHost(device.context(), &hd, sizeof(uint64_t), sizeof(uint64_t), &p))
      return ze_fail("zeMemAllocHost", r, "for an event timestamp", AXL_ERROR_OUT_OF_HOST_MEMORY);
    s->timestamp = static_cast<uint64_t*>(p);
    *s->timestamp = 0;
  }
  *out = std::move(s);
  return AXL_SUCCESS;
}

Signal::~Signal() {
  const ZeApi& z = ze();
  if (timestamp != nullptr) z.zeMemFree(device_->context(), timestamp);
  if (event != nullptr) z.zeEventDestroy(event);
  if (pool_ != nullptr) z.zeEventPoolDestroy(pool_);
}

namespace {

common::Ref<Signal> current(Event& e) {
  std::lock_guard<std::mutex> lk(e.mu);
  return e.current;
}

}  // namespace

axl_status event_create(axl_pdevice device, uint32_t flags, axl_pevent* out_event) noexcept {
  return guarded("event_create", [&]() -> axl_status {
    if (axl_status s = common::check_event_create(fail, flags, out_event)) return s;
    auto e = std::make_unique<Event>();
    e->device = from(device);
    e->timing = (flags & AXL_EVENT_FLAG_TIMING) != 0;
    *out_event = reinterpret_cast<axl_pevent>(e.release());
    return AXL_SUCCESS;
  });
}

axl_status event_destroy(axl_pevent event) noexcept {
  // Pending records and waits hold their own references to the Signal.
  delete from(event);
  return AXL_SUCCESS;
}

axl_status queue_record_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_record_event", [&]() -> axl_status {
    Queue& q = *from(queue);
    Event& e = *from(event);
    if (e.device->driver != q.device->driver)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "queue_record_event: the event belongs to a device of another Level Zero driver");
    common::Ref<Signal> s;
    if (axl_status st = Signal::create(*q.device, e.timing, &s)) return st;
    std::lock_guard<std::mutex> lk(q.mu);
    if (e.timing) {
      if (axl_status st = order(q)) return st;
      if (ze_result_t r = ze().zeCommandListAppendWriteGlobalTimestamp(q.list, s->timestamp,
                                                                       s->event, 0, nullptr))
        return ze_fail("zeCommandListAppendWriteGlobalTimestamp", r);
      // Later work must not overtake the timestamp.
      q.need_barrier = true;
    } else {
      if (ze_result_t r = ze().zeCommandListAppendBarrier(q.list, s->event, 0, nullptr))
        return ze_fail("zeCommandListAppendBarrier", r, "recording an event");
      q.need_barrier = false;
    }
    Pending p;
    p.signal = s;
    p.marker = true;
    q.pending.push_back(std::move(p));
    {
      std::lock_guard<std::mutex> elk(e.mu);
      e.current = std::move(s);
    }
    trim(q);
    return AXL_SUCCESS;
  });
}

axl_status queue_wait_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_wait_event", [&]() -> axl_status {
    Queue& q = *from(queue);
    Event& e = *from(event);
    common::Ref<Signal> s = current(e);
    if (!s) return AXL_SUCCESS;  // never recorded: complete, as in CUDA
    if (e.device->driver != q.device->driver)
      return fail(AXL_ERROR_UNSUPPORTED,
                  "queue_wait_event: the event belongs to a device of another Level Zero driver; "
                  "events do not cross contexts");
    std::lock_guard<std::mutex> lk(q.mu);
    if (ze_result_t r = ze().zeCommandListAppendWaitOnEvents(q.list, 1, &s->event))
      return ze_fail("zeCommandListAppendWaitOnEvents", r);
    Pending p;
    p.signal = std::move(s);
    q.pending.push_back(std::move(p));
    return AXL_SUCCESS;
  });
}

axl_status event_synchronize(axl_pevent event) noexcept {
  return guarded("event_synchronize", [&]() -> axl_status {
    common::Ref<Signal> s = current(*from(event));
    if (!s) return AXL_SUCCESS;
    if (ze_result_t r = ze().zeEventHostSynchronize(s->event, UINT64_MAX))
      return ze_fail("zeEventHostSynchronize", r);
    return AXL_SUCCESS;
  });
}

axl_status event_query(axl_pevent event) noexcept {
  return guarded("event_query", [&]() -> axl_status {
    common::Ref<Signal> s = current(*from(event));
    if (!s) return AXL_SUCCESS;
    ze_result_t r = ze().zeEventQueryStatus(s->event);
    if (r == ZE_RESULT_SUCCESS) return AXL_SUCCESS;
    if (r == ZE_RESULT_NOT_READY) return AXL_ERROR_NOT_READY;
    return ze_fail("zeEventQueryStatus", r);
  });
}

axl_status event_elapsed_ms(axl_pevent start, axl_pevent end, float* out_ms) noexcept {
  return guarded("event_elapsed_ms", [&]() -> axl_status {
    if (out_ms == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "event_elapsed_ms: out_ms is NULL");
    Event& a = *from(start);
    Event& b = *from(end);
    if (!a.timing || !b.timing)
      return fail(AXL_ERROR_INVALID_STATE,
                  "event_elapsed_ms: both events need AXL_EVENT_FLAG_TIMING");
    common::Ref<Signal> sa = current(a), sb = current(b);
    if (!sa || !sb || ze().zeEventQueryStatus(sa->event) != ZE_RESULT_SUCCESS ||
        ze().zeEventQueryStatus(sb->event) != ZE_RESULT_SUCCESS)
      return fail(AXL_ERROR_INVALID_STATE, "event_elapsed_ms: an event has not completed a record");
    const Device& d = *a.device;
    // Global timestamps count ticks of timerResolution ns in the low
    // timestampValidBits bits, so the difference is taken modulo 2^bits.
    const uint64_t mask = d.timestamp_bits >= 64 ? ~0ull : (1ull << d.timestamp_bits) - 1;
    const uint64_t diff = (*sb->timestamp - *sa->timestamp) & mask;
    const double ticks = diff > mask / 2 ? -static_cast<double>(mask - diff + 1)
                                         : static_cast<double>(diff);
    *out_ms = static_cast<float>(ticks * d.ns_per_tick / 1e6);
    return AXL_SUCCESS;
  });
}

}  // namespace axl::l0
