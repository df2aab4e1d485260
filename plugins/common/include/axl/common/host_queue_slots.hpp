// Slot bodies of the backends whose queues are WorkQueues on host threads
// and whose events are common::Event (cpu, virtual): the same in each, so
// written once.
// A backend's slot calls them with its own `fail` (how it reports: the
// virtual backend adds native codes) and keeps only what is its own
// (fault injection, simulated time) around the call.
#pragma once

#include <cstdint>
#include <string>

#include "axl/common/event.hpp"
#include "axl/common/flag.hpp"
#include "axl/common/live_queues.hpp"
#include "axl/common/plugin_support.hpp"
#include "axl/common/slot_checks.hpp"
#include "axl/common/work_queue.hpp"
#include "axl/plugin.h"

namespace axl::common {

// A refused enqueue (the queue was stopped by backend_shutdown, or a full
// queue could not make room: WorkQueue::refusal_message says which),
// reported as "cannot enqueue <what>: ...". AXL_SUCCESS passes through.
axl_status enqueue_result(Fail fail, axl_status status, const char* what);

// queue_synchronize: the queue's first failure since the last call.
axl_status report_sync(Fail fail, SyncResult r);

// The queue_* slots over common::Event, common::Flag and host callbacks.
axl_status record_event(Fail fail, WorkQueue& queue, axl_pevent event);
axl_status wait_event(Fail fail, WorkQueue& queue, axl_pevent event);
axl_status wait_flag(Fail fail, WorkQueue& queue, Flag& flag, uint64_t value);
axl_status write_flag(Fail fail, WorkQueue& queue, Flag& flag, uint64_t value);
axl_status enqueue_host_callback(Fail fail, WorkQueue& queue, axl_host_fn fn, void* user_data);

// The event_* slots over common::Event. A record still queued holds its own
// reference, so destroy only drops the handle's.
axl_status create_event(Fail fail, uint32_t flags, axl_pevent* out_event);
axl_status destroy_event(axl_pevent event) noexcept;
// event_synchronize's report of what the wait found.
axl_status report_event_sync(Fail fail, SyncResult r);
axl_status query_event(axl_pevent event) noexcept;
axl_status event_elapsed(Fail fail, axl_pevent start, axl_pevent end, float* out_ms);

// queue_destroy of a queue whose `work` member is its WorkQueue: refused
// from a host callback on that same queue (it cannot drain itself);
// otherwise unlisted and deleted, which drains the work and joins the worker.
template <class Queue>
axl_status destroy_queue(Fail fail, LiveQueues<Queue>& live, Queue* q) {
  if (q->work.on_worker_thread())
    return fail(AXL_ERROR_INVALID_STATE,
                "queue_destroy was called from a host callback running on that same queue; the "
                "queue cannot drain itself");
  live.remove(q);
  delete q;
  return AXL_SUCCESS;
}

// backend_shutdown: the core destroys its queues first; the workers of any
// that survive must still be joined here (never by a static destructor at
// exit). `stop(queue)` stops one; the Queue objects stay allocated, so a
// late queue_destroy is harmless.
template <class Queue, class Stop>
void stop_leftover_queues(const HostServices& host, const LiveQueues<Queue>& live, Stop&& stop) {
  const auto leftover = live.snapshot();
  if (leftover.empty()) return;
  host.log(AXL_LOG_WARN, str("backend_shutdown found ", leftover.size(),
                             " queue(s) still alive; draining and stopping them"));
  for (Queue* q : leftover) stop(*q);
}

}  // namespace axl::common
