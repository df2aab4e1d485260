// Events: a record is a marker (clEnqueueMarkerWithWaitList) whose event is
// kept; a wait is a barrier on it (clEnqueueBarrierWithWaitList); timing is
// the markers' CL_PROFILING_COMMAND_END, nanoseconds converted to ms.
#include "axl/common/slot_checks.hpp"
#include "cl_backend.hpp"

namespace axl::opencl {

namespace {

// The event's last record, retained for the caller (NULL if never recorded).
cl_event current(Event& e) {
  std::lock_guard<std::mutex> lk(e.mu);
  if (e.current != nullptr) cl().clRetainEvent(e.current);
  return e.current;
}

// The marker's state: AXL_SUCCESS (complete), NOT_READY, or the error it
// ended with (work before the record failed), reported.
axl_status state(cl_event ev) {
  cl_int status = CL_COMPLETE;
  if (cl_int r = cl().clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr))
    return cl_fail("clGetEventInfo", r);
  if (status == CL_COMPLETE) return AXL_SUCCESS;
  if (status < 0)
    return cl_fail("a command before the event's record", status, "it failed on the device");
  return AXL_ERROR_NOT_READY;
}

}  // namespace

axl_status event_create(axl_pdevice device, uint32_t flags, axl_pevent* out_event) noexcept {
  return guarded("event_create", [&]() -> axl_status {
    if (axl_status s = common::check_event_create(fail, flags, out_event)) return s;
    auto* e = new Event;
    e->device = from(device);
    e->timing = (flags & AXL_EVENT_FLAG_TIMING) != 0;
    *out_event = common::to_handle<axl_pevent>(e);
    return AXL_SUCCESS;
  });
}

axl_status event_destroy(axl_pevent event) noexcept {
  return guarded("event_destroy", [&]() -> axl_status {
    Event* e = from(event);
    // A pending marker or barrier holds its own reference to the cl_event.
    if (e->current != nullptr) cl().clReleaseEvent(e->current);
    delete e;
    return AXL_SUCCESS;
  });
}

axl_status queue_record_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_record_event", [&]() -> axl_status {
    Queue& q = *from(queue);
    Event& e = *from(event);
    if (e.device->context() != q.device->context())
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("queue_record_event: the event was made on OpenCL device ", e.device->index,
                              ", of another platform than the queue's device ", q.device->index));
    cl_event marker = nullptr;
    if (cl_int r = cl().clEnqueueMarkerWithWaitList(q.queue, 0, nullptr, &marker))
      return cl_fail("clEnqueueMarkerWithWaitList", r);
    // Flushed so that a wait on it, from another queue or the host, sees it run.
    cl().clFlush(q.queue);
    cl_event old = nullptr;
    {
      std::lock_guard<std::mutex> lk(e.mu);
      old = e.current;
      e.current = marker;
    }
    if (old != nullptr) cl().clReleaseEvent(old);
    return AXL_SUCCESS;
  });
}

axl_status queue_wait_event(axl_pqueue queue, axl_pevent event) noexcept {
  return guarded("queue_wait_event", [&]() -> axl_status {
    Queue& q = *from(queue);
    Event& e = *from(event);
    cl_event ev = current(e);
    if (ev == nullptr) return AXL_SUCCESS;  // never recorded: nothing to wait for (as CUDA)
    if (e.device->context() != q.device->context()) {
      cl().clReleaseEvent(ev);
      return fail(AXL_ERROR_UNSUPPORTED,
                  common::str("queue_wait_event: the event is of OpenCL device ", e.device->index,
                              ", on another platform (context) than the queue's device ",
                              q.device->index, "; OpenCL waits do not cross contexts"));
    }
    const cl_int r = cl().clEnqueueBarrierWithWaitList(q.queue, 1, &ev, nullptr);
    cl().clReleaseEvent(ev);
    if (r != CL_SUCCESS) return cl_fail("clEnqueueBarrierWithWaitList", r);
    cl().clFlush(q.queue);
    return AXL_SUCCESS;
  });
}

axl_status event_synchronize(axl_pevent event) noexcept {
  return guarded("event_synchronize", [&]() -> axl_status {
    cl_event ev = current(*from(event));
    if (ev == nullptr) return AXL_SUCCESS;
    cl_int r = cl().clWaitForEvents(1, &ev);
    // CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST: the marker failed; state()
    // names that.
    axl_status s = r == CL_SUCCESS || r == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
                       ? state(ev)
                       : cl_fail("clWaitForEvents", r);
    cl().clReleaseEvent(ev);
    return s;
  });
}

axl_status event_query(axl_pevent event) noexcept {
  return guarded("event_query", [&]() -> axl_status {
    cl_event ev = current(*from(event));
    if (ev == nullptr) return AXL_SUCCESS;
    const axl_status s = state(ev);
    cl().clReleaseEvent(ev);
    return s;
  });
}

axl_status event_elapsed_ms(axl_pevent start, axl_pevent end, float* out_ms) noexcept {
  return guarded("event_elapsed_ms", [&]() -> axl_status {
    if (out_ms == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "event_elapsed_ms: out_ms is NULL");
    cl_event evs[2] = {current(*from(start)), current(*from(end))};
    cl_ulong ns[2] = {0, 0};
    axl_status s = AXL_SUCCESS;
    for (int i = 0; i < 2 && s == AXL_SUCCESS; ++i) {
      if (evs[i] == nullptr) {
        s = fail(AXL_ERROR_INVALID_STATE, "event_elapsed_ms: an event was never recorded");
      } else if (cl_int r = cl().clGetEventProfilingInfo(evs[i], CL_PROFILING_COMMAND_END,
                                                         sizeof ns[i], &ns[i], nullptr)) {
        s = cl_fail("clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)", r);
      }
    }
    for (cl_event ev : evs)
      if (ev != nullptr) cl().clReleaseEvent(ev);
    if (s != AXL_SUCCESS) return s;
    // Signed: the end event may have completed first.
    *out_ms = static_cast<float>(static_cast<double>(static_cast<int64_t>(ns[1] - ns[0])) / 1e6);
    return AXL_SUCCESS;
  });
}

}  // namespace axl::opencl
