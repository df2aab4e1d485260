// Events and completion flags.
#include <cstring>

#include "submit.hpp"
#include "profile.hpp"

namespace axl::core {

Event::~Event() {
  if (last_queue) release(last_queue);
  if (!device->backend->poisoned.load()) AXL_CALL(device->backend, event_destroy, pe);
  release(device);
}

Flag::~Flag() {
  if (!device->backend->poisoned.load()) AXL_CALL(device->backend, flag_destroy, pf);
  release(device);
}


}  // namespace axl::core

using namespace axl::core;

namespace {

// The event a handle names ("what" in the error), of a usable device.
axl_status usable_event(axl_event_t handle, const char* what, Event** out) {
  Event* e = as<Event>(handle, Kind::event, what);
  if (!e) return AXL_ERROR_INVALID_HANDLE;
  *out = e;
  return device_usable(e->device);
}

}  // namespace

extern "C" {

AXL_API axl_status axl_event_create(axl_device_t device, uint32_t flags, axl_event_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_event_create: out_event is NULL");
    if (flags & ~uint32_t(AXL_EVENT_TIMING))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_event_create: unknown flags 0x%x", flags);
    if (axl_status s = device_usable(d)) return s;
    axl_pevent pe = nullptr;
    uint32_t pflags = (flags & AXL_EVENT_TIMING) ? AXL_EVENT_FLAG_TIMING : 0;
    if (axl_status s = AXL_CALL(d->backend, event_create, d->pdev, pflags, &pe)) return s;
    auto* e = new Event();
    e->device = d;
    e->pe = pe;
    e->timing = flags & AXL_EVENT_TIMING;
    retain(d);
    *out = to_handle<axl_event_t>(e);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_event_retain(axl_event_t event) {
  return retain_handle(event, Kind::event, "event");
}

AXL_API axl_status axl_event_release(axl_event_t event) {
  return release_handle(event, Kind::event, "event");
}

AXL_API axl_status axl_queue_record_event(axl_queue_t queue, axl_event_t event) {
  return guard([&]() -> axl_status {
    Queue* q = as<Queue>(queue, Kind::queue, "queue");
    if (!q) return AXL_ERROR_INVALID_HANDLE;
    Event* e = nullptr;
    if (axl_status s = usable_event(event, "event", &e)) return s;
    if (e->device != q->device)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "event belongs to %s:%u but the queue to %s:%u; record events on their own device",
                  e->device->label.c_str(), e->device->id, q->device->label.c_str(), q->device->id);
    axl_status s = Submission::record_event(q, e->pe);
    if (s) return s;
    std::lock_guard<std::mutex> lk(e->mu);
    e->recorded = true;
    e->recorded_ns = e->timing && profile_recording() ? profile_now_ns() : 0;
    if (e->last_queue != q) {
      retain(q);
      if (e->last_queue) release(e->last_queue);
      e->last_queue = q;
    }
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_queue_wait_event(axl_queue_t queue, axl_event_t event) {
  return guard([&]() -> axl_status {
    Queue* q = as<Queue>(queue, Kind::queue, "queue");
    if (!q) return AXL_ERROR_INVALID_HANDLE;
    if (axl_status s = queue_usable(q)) return s;
    Event* e = nullptr;
    if (axl_status s = usable_event(event, "event", &e)) return s;
    Queue* src = nullptr;
    {
      std::lock_guard<std::mutex> lk(e->mu);
      if (!e->recorded) return AXL_SUCCESS;  // CUDA: waiting on an unrecorded event is a no-op
      src = e->last_queue;
      retain(src);
    }
    axl_status s;
    close_open_completion(q);  // the wait may gate q: stamps before it stay exact
    if (e->device->backend == q->device->backend)
      s = Submission::wait_event(q, e->pe);
    else  // conservative across backends: everything on the recording queue so far
      s = queue_wait_internal(q, src);
    release(src);
    return s;
  });
}

AXL_API axl_status axl_event_synchronize(axl_event_t event) {
  return guard([&]() -> axl_status {
    Event* e = nullptr;
    if (axl_status s = usable_event(event, "event", &e)) return s;
    const Queue* last = nullptr;
    {
      std::lock_guard<std::mutex> lk(e->mu);
      if (!e->recorded) return AXL_SUCCESS;
      last = e->last_queue;
    }
    if (last && pending_behind_host_func(last, e->device->backend, e->pe))
      return refuse_wait_for_itself("axl_event_synchronize", false);
    bool gave_up = false;
    return event_synchronize_bounded(e, e->device->backend, e->pe, "axl_event_synchronize", &gave_up);
  });
}

AXL_API axl_status axl_event_query(axl_event_t event) {
  return guard([&]() -> axl_status {
    Event* e = nullptr;
    if (axl_status s = usable_event(event, "event", &e)) return s;
    {
      std::lock_guard<std::mutex> lk(e->mu);
      if (!e->recorded) return AXL_SUCCESS;
    }
    return AXL_CALL(e->device->backend, event_query, e->pe);
  });
}

AXL_API axl_status axl_event_elapsed_ms(axl_event_t start, axl_event_t end, float* out_ms) {
  return guard([&]() -> axl_status {
    Event* a = nullptr;
    if (axl_status s = usable_event(start, "start event", &a)) return s;
    Event* b = nullptr;
    if (axl_status s = usable_event(end, "end event", &b)) return s;
    if (!out_ms) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_event_elapsed_ms: out_ms is NULL");
    if (!a->timing || !b->timing)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "elapsed time needs timing: the %s event was created without AXL_EVENT_TIMING "
                  "(enable_timing=True)", !a->timing ? "start" : "end");
    if (a->device->backend != b->device->backend)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "elapsed time between events of different backends (%s, %s)",
                  a->device->backend->name.c_str(), b->device->backend->name.c_str());
    bool ra, rb;
    {
      std::lock_guard<std::mutex> lk(a->mu);
      ra = a->recorded;
    }
    {
      std::lock_guard<std::mutex> lk(b->mu);
      rb = b->recorded;
    }
    if (!ra || !rb)
      return fail(AXL_ERROR_INVALID_STATE, "elapsed time needs recorded events: the %s event was never recorded",
                  !ra ? "start" : "end");
    for (Event* e : {a, b}) {
      axl_status s = AXL_CALL(e->device->backend, event_query, e->pe);
      if (s == AXL_ERROR_NOT_READY)
        return fail(AXL_ERROR_NOT_READY,
                    "elapsed time needs completed events: the %s event has not completed; synchronize it first",
                    e == a ? "start" : "end");
      if (s) return s;
    }
    axl_status s = AXL_CALL(a->device->backend, event_elapsed_ms, a->pe, b->pe, out_ms);
    if (s == AXL_SUCCESS) {
      uint64_t end_ns;
      {
        std::lock_guard<std::mutex> lk(b->mu);
        end_ns = b->recorded_ns;
      }
      std::lock_guard<std::mutex> lk(a->mu);
      if (a->recorded_ns && end_ns && a->last_queue)
        profile_record_device(a->last_queue->trace_id, a->device->id, a->device->backend->is_host(),
                              a->recorded_ns, end_ns, *out_ms);
    }
    return s;
  });
}

AXL_API axl_status axl_flag_create(axl_device_t device, axl_flag_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_flag_create: out_flag is NULL");
    if (axl_status s = device_usable(d)) return s;
    axl_pflag pf = nullptr;
    if (axl_status s = AXL_CALL(d->backend, flag_create, d->pdev, &pf)) return s;
    uint64_t* host = nullptr;
    if (axl_status s = AXL_CALL(d->backend, flag_get_host_address, pf, &host)) {
      AXL_CALL(d->backend, flag_destroy, pf);
      return s;
    }
    auto* f = new Flag();
    f->device = d;
    f->pf = pf;
    f->host = host;
    retain(d);
    *out = to_handle<axl_flag_t>(f);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_flag_retain(axl_flag_t flag) {
  return retain_handle(flag, Kind::flag, "flag");
}

AXL_API axl_status axl_flag_release(axl_flag_t flag) {
  return release_handle(flag, Kind::flag, "flag");
}

AXL_API axl_status axl_flag_device_address(axl_flag_t flag, uint64_t* out) {
  return guard([&]() -> axl_status {
    Flag* f = as<Flag>(flag, Kind::flag, "flag");
    if (!f) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_flag_device_address: out is NULL");
    // It asks the plugin: a forked child gets FORKED, as for every such call.
    if (axl_status s = device_usable(f->device)) return s;
    return AXL_CALL(f->device->backend, flag_get_device_address, f->pf, out);
  });
}

AXL_API axl_status axl_flag_load(axl_flag_t flag, uint64_t* out) {
  return guard([&]() -> axl_status {
    Flag* f = as<Flag>(flag, Kind::flag, "flag");
    if (!f) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_flag_load: out_value is NULL");
    *out = __atomic_load_n(f->host, __ATOMIC_ACQUIRE);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_flag_signal(axl_flag_t flag, uint64_t value) {
  return guard([&]() -> axl_status {
    Flag* f = as<Flag>(flag, Kind::flag, "flag");
    if (!f) return AXL_ERROR_INVALID_HANDLE;
    __atomic_store_n(f->host, value, __ATOMIC_RELEASE);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_flag_reset(axl_flag_t flag) {
  return guard([&]() -> axl_status {
    Flag* f = as<Flag>(flag, Kind::flag, "flag");
    if (!f) return AXL_ERROR_INVALID_HANDLE;
    __atomic_store_n(f->host, 0, __ATOMIC_RELAXED);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_queue_wait_flag(axl_queue_t queue, axl_flag_t flag, uint64_t value) {
  return guard([&]() -> axl_status {
    Queue* q = as<Queue>(queue, Kind::queue, "queue");
    if (!q) return AXL_ERROR_INVALID_HANDLE;
    if (axl_status s = queue_usable(q)) return s;
    Flag* f = as<Flag>(flag, Kind::flag, "flag");
    if (!f) return AXL_ERROR_INVALID_HANDLE;
    if (f->device->backend != q->device->backend)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "flag belongs to backend %s but the queue to %s",
                  f->device->backend->name.c_str(), q->device->backend->name.c_str());
    close_open_completion(q);  // the wait may gate q: stamps before it stay exact
    return Submission::wait_flag(q, f->pf, value, flag);
  });
}

AXL_API axl_status axl_queue_write_flag(axl_queue_t queue, axl_flag_t flag, uint64_t value) {
  return guard([&]() -> axl_status {
    Queue* q = as<Queue>(queue, Kind::queue, "queue");
    if (!q) return AXL_ERROR_INVALID_HANDLE;
    if (axl_status s = queue_usable(q)) return s;
    Flag* f = as<Flag>(flag, Kind::flag, "flag");
    if (!f) return AXL_ERROR_INVALID_HANDLE;
    if (f->device->backend != q->device->backend)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "flag belongs to backend %s but the queue to %s",
                  f->device->backend->name.c_str(), q->device->backend->name.c_str());
    return Submission::write_flag(q, f->pf, value);
  });
}

}  // extern "C"
