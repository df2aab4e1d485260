// Host hazard tracking: completions, per-allocation records, and the host
// waits that read them (MAX: HostHazardCompletion and the binding's stamps).
//
// Why events and not whole-queue waits: a host read of a staging buffer must
// not wait for unrelated work queued after its producer (a gated queue would
// block it forever), so each stamp marks the exact point after the op.
#include <algorithm>

#include "submit.hpp"

namespace axl::core {

namespace {

// When no event can mark the stamped work, waiting for its whole queue is
// slower but still exact (it includes everything stamped). Not when the
// record failed with AXL_ERROR_TIMEOUT: the queue is full and stuck behind a
// flag wait (a bounded queue), so that wait would never end; the failure is
// returned instead.
axl_status synchronize_instead(Queue* q, axl_status why) {
  if (why == AXL_ERROR_TIMEOUT) return why;
  logf(AXL_LOG_WARN, "hazard tracking: no completion could be recorded (%s); synchronizing the queue",
       axl_last_error_message());
  return AXL_CALL(q->device->backend, queue_synchronize, q->pq);
}

}  // namespace

Completion::~Completion() {
  if (pe && device && !device->backend->poisoned.load()) AXL_CALL(device->backend, event_destroy, pe);
  if (device) release(device);
}

void Completion::poison(const std::string& why) {
  ErrorOrigin o;
  o.message = why;
  poison(o);
}

void Completion::poison(const ErrorOrigin& why) {
  {
    std::lock_guard<std::mutex> lk(mu);
    failure = why;
  }
  poisoned.store(true, std::memory_order_release);
}

axl_status Completion::ensure_recorded() {
  if (recorded.load(std::memory_order_acquire)) return AXL_SUCCESS;
  std::lock_guard<std::mutex> rl(record_mu);
  if (recorded.load(std::memory_order_relaxed)) return AXL_SUCCESS;
  bool detached = false;
  {
    std::lock_guard<std::mutex> ll(link->mu);
    Queue* q = link->queue;
    if (!q) {
      // The queue drained and is gone: everything stamped has run.
      ready.store(true, std::memory_order_release);
    } else {
      if (axl_status s = queue_usable(q)) return s;
      {
        // Later stamps must start a new completion: this one is now fixed.
        std::lock_guard<std::mutex> ol(q->open_mu);
        if (q->open.load() == this) {
          q->open.store(nullptr);
          detached = true;
        }
      }
      Backend* b = device->backend;
      axl_status s = AXL_CALL(b, event_create, device->pdev, 0, &pe);
      if (!s) s = Submission::record_event(q, pe);
      if (s) {
        if (pe) AXL_CALL(b, event_destroy, pe);
        pe = nullptr;
        if (detached) release(this);  // the queue's reference; the caller holds one
        return s;
      }
    }
  }
  recorded.store(true, std::memory_order_release);
  // The queue's reference; the caller holds its own, so this is not the last.
  if (detached) release(this);
  return AXL_SUCCESS;
}

bool Completion::behind_running_host_func() {
  // The thread-local check first: no lock unless this thread runs a host
  // function of the device.
  if (!link || !device || !in_host_func_of(nullptr, device)) [[likely]]
    return false;
  const Queue* q = nullptr;
  {
    std::lock_guard<std::mutex> ll(link->mu);
    q = link->queue;
  }
  if (!q) return false;
  // A host function's enqueue recorded its queue's open completion first
  // (axl_queue_enqueue_host_func), so one still unrecorded was opened behind
  // it; a recorded one is behind it while its event is pending.
  if (!recorded.load(std::memory_order_acquire)) return in_host_func_of(q, nullptr);
  return pending_behind_host_func(q, device->backend, pe);
}

axl_status Completion::wait(const char* what) {
  if (poisoned.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lk(mu);
    return fail_from(AXL_ERROR_HOST_HAZARD, failure, failure.message);
  }
  if (ready.load(std::memory_order_acquire)) return AXL_SUCCESS;
  // In a child forked after the backend was initialised nothing completes
  // the parent's work: FORKED at once, as every call that needs the
  // backend answers, instead of waiting on it (or synchronizing) forever.
  if (axl_status s = device ? device_usable(device) : AXL_SUCCESS) return s;
  // Refused by the core, whatever the backend: past exit begin the wait
  // below runs on a thread of its own, where no plugin check could see it.
  if (behind_running_host_func()) return refuse_wait_for_itself(what, false);
  if (axl_status why = link ? ensure_recorded() : AXL_SUCCESS) {
    std::lock_guard<std::mutex> ll(link->mu);
    if (Queue* q = link->queue)
      if (axl_status s = synchronize_instead(q, why)) return s;
    ready.store(true, std::memory_order_release);
    return poisoned.load(std::memory_order_acquire) ? wait(what) : AXL_SUCCESS;
  }
  bool gave_up = false;
  const axl_status s =
      pe ? event_synchronize_bounded(this, device->backend, pe, "a host wait for a buffer's device work", &gave_up)
         : AXL_SUCCESS;
  if (gave_up) return s;  // neither known done nor failed: not poisoned
  if (s != AXL_SUCCESS) {
    // Work before the marker failed asynchronously (the plugin reports a
    // queue's unreported failure through the event, as CUDA does): the
    // producer failed, so every later wait raises too, without blocking.
    poison(last_error_origin());
    return wait(what);
  }
  ready.store(true, std::memory_order_release);
  // Poisoned while we waited: the failure outranks the completed event.
  if (poisoned.load(std::memory_order_acquire)) return wait(what);
  return AXL_SUCCESS;
}

bool Completion::query() {
  if (poisoned.load(std::memory_order_acquire) || ready.load(std::memory_order_acquire)) return true;
  if (device && device_usable(device) != AXL_SUCCESS) return false;  // forked: see wait()
  if (link && ensure_recorded() != AXL_SUCCESS) return false;
  if (ready.load(std::memory_order_acquire) || !pe) return true;
  if (AXL_CALL(device->backend, event_query, pe) != AXL_SUCCESS) return false;
  ready.store(true, std::memory_order_release);
  return true;
}

namespace {

Completion* new_completion(Queue* q) {
  auto* c = new Completion();
  c->device = q->device;
  c->link = q->link;
  retain(q->device);
  return c;
}

// The completion the next stamps on q join (a new reference).
Completion* open_completion(Queue* q) {
  std::lock_guard<std::mutex> lk(q->open_mu);
  Completion* c = q->open.load();
  if (!c) q->open.store(c = new_completion(q));  // the queue's reference
  retain(c);
  return c;
}

}  // namespace

axl_status completion_record(Queue* q, Completion** out) {
  Completion* c = new_completion(q);
  if (axl_status s = c->ensure_recorded()) {
    release(c);
    return s;
  }
  *out = c;
  return AXL_SUCCESS;
}

void close_open_completion(Queue* q) {
  Completion* c = nullptr;
  {
    std::lock_guard<std::mutex> lk(q->open_mu);
    c = q->open.load();
    if (!c) return;
    retain(c);
  }
  if (axl_status s = c->ensure_recorded()) {
    if (s == AXL_ERROR_TIMEOUT) {
      // The queue is full and stuck behind a flag wait (a bounded queue):
      // synchronizing would hang. The completion stays unrecorded, so a host
      // wait on its stamps records it later (covering later work too: no
      // longer exact, but never early). The caller's own enqueue fails the
      // same way, at once (WorkQueue).
      release(c);
      return;
    }
    // Without its event the stamps would be waited for by a record made
    // after the gate; waiting here keeps host waits exact (and rare).
    synchronize_instead(q, s);
    c->ready.store(true, std::memory_order_release);
    std::lock_guard<std::mutex> lk(q->open_mu);
    if (q->open.load() == c) {
      q->open.store(nullptr);
      release(c);
    }
  }
  release(c);
}

void abandon_open_completion(Queue* q) {
  Completion* c = nullptr;
  {
    std::lock_guard<std::mutex> lk(q->open_mu);
    c = q->open.exchange(nullptr);
  }
  if (!c) return;
  c->ready.store(true, std::memory_order_release);  // the queue drained
  release(c);
}

HazardRecord::~HazardRecord() {
  if (last_write) release(last_write);
  for (Completion* c : readers) release(c);
}

void stamp(Buffer* b, Completion* c, uint32_t access) {
  Buffer* a = b->allocation();
  if (!a->tracked()) return;
  HazardRecord& h = a->hazards;
  // Released after the lock. A stream of launches on one queue stamps the
  // same open completion again and again: that drops nothing and, with no
  // readers, allocates nothing (a vector per stamp was most of a tracked
  // launch's cost: benchmarks/bench_enqueue).
  Completion* old_write = nullptr;
  std::vector<Completion*> dropped;
  {
    std::lock_guard<std::mutex> lk(h.mu);
    if (access & AXL_ACCESS_WRITE) {
      if (h.last_write != c) {
        retain(c);
        old_write = h.last_write;
        h.last_write = c;
      }
      dropped.swap(h.readers);
    }
    if (access & AXL_ACCESS_READ) {
      if (std::find(h.readers.begin(), h.readers.end(), c) == h.readers.end()) {
        // Readers that finished can go: a long stream of reads of one buffer
        // must not grow the record without bound.
        if (h.readers.size() >= 8) {
          auto done = std::stable_partition(h.readers.begin(), h.readers.end(),
                                            [](Completion* r) { return !r->query(); });
          dropped.insert(dropped.end(), done, h.readers.end());
          h.readers.erase(done, h.readers.end());
        }
        retain(c);
        h.readers.push_back(c);
      }
    }
  }
  if (old_write) release(old_write);
  for (Completion* d : dropped) release(d);
}

axl_status wait_for_writers(Queue* q, const BufferUse* uses, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    Buffer* a = uses[i].buffer->allocation();
    if (!a->tracked()) continue;
    Completion* c = nullptr;
    {
      std::lock_guard<std::mutex> lk(a->hazards.mu);
      c = a->hazards.last_write;
      // No wait for: no writer; a writer finished (or failed: the op then
      // reads what there is, and the host access that follows reports the
      // failure); q's own open completion (already in order; the common
      // case of launches on one queue, told without q's link lock). The
      // record holds c while the lock is held.
      if (!c || c == q->open.load(std::memory_order_relaxed) || c->ready.load(std::memory_order_acquire) ||
          c->poisoned.load(std::memory_order_acquire) || !c->link)
        continue;
      retain(c);
    }
    Queue* producer = nullptr;
    {
      std::lock_guard<std::mutex> ll(c->link->mu);
      producer = c->link->queue;
      if (producer == q) producer = nullptr;  // same queue: already in order
      if (producer) retain(producer);
    }
    release(c);
    if (!producer) continue;
    axl_status s = queue_wait_internal(q, producer);
    release(producer);
    if (s) return s;
  }
  return AXL_SUCCESS;
}

void stamp_op(Queue* q, axl_status enqueue_status, const BufferUse* uses, size_t n, bool lazy) {
  bool any = false, writes = false;
  for (size_t i = 0; i < n; ++i) {
    if (!uses[i].buffer->allocation()->tracked()) continue;
    any = true;
    writes |= (uses[i].access & AXL_ACCESS_WRITE) != 0;
  }
  if (!any) return;
  Completion* c = nullptr;
  if (enqueue_status != AXL_SUCCESS) {
    // The producer failed: whoever reads what it should have written learns
    // why instead of reading stale bytes.
    if (!writes) return;
    c = new Completion();
    c->poison(last_error_origin());
  } else if (lazy) {
    c = open_completion(q);
  } else if (axl_status rs = completion_record(q, &c)) {
    if (rs == AXL_ERROR_TIMEOUT) {
      // Full and stuck (synchronize_instead): the open completion, recorded
      // when a host wait needs it, marks this op and maybe later ones.
      c = open_completion(q);
    } else {
      // Without a marker the record would point at an older writer.
      synchronize_instead(q, rs);
      return;
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (uses[i].access & AXL_ACCESS_WRITE) stamp(uses[i].buffer, c, AXL_ACCESS_WRITE);
  if (enqueue_status == AXL_SUCCESS)
    for (size_t i = 0; i < n; ++i)
      if (uses[i].access & AXL_ACCESS_READ) stamp(uses[i].buffer, c, AXL_ACCESS_READ);
  release(c);
}

}  // namespace axl::core

using namespace axl::core;

namespace {
Completion* as_completion(axl_completion_t h) { return as<Completion>(h, Kind::completion, "completion"); }
}  // namespace

extern "C" {

AXL_API axl_status axl_completion_record(axl_queue_t queue, axl_completion_t* out) {
  return guard([&]() -> axl_status {
    Queue* q = as<Queue>(queue, Kind::queue, "queue");
    if (!q) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_completion_record: out is NULL");
    if (axl_status s = queue_usable(q)) return s;
    Completion* c = nullptr;
    if (axl_status s = completion_record(q, &c)) return s;
    *out = to_handle<axl_completion_t>(c);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_completion_create_poisoned(const char* message, axl_completion_t* out) {
  return guard([&]() -> axl_status {
    if (!message) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_completion_create_poisoned: message is NULL");
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_completion_create_poisoned: out is NULL");
    auto* c = new Completion();
    c->poison(message);
    *out = to_handle<axl_completion_t>(c);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_completion_retain(axl_completion_t c) {
  return retain_handle(c, Kind::completion, "completion");
}

AXL_API axl_status axl_completion_release(axl_completion_t c) {
  return release_handle(c, Kind::completion, "completion");
}

AXL_API axl_status axl_completion_poison(axl_completion_t completion, const char* message) {
  return guard([&]() -> axl_status {
    Completion* c = as_completion(completion);
    if (!c) return AXL_ERROR_INVALID_HANDLE;
    if (!message) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_completion_poison: message is NULL");
    c->poison(message);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_completion_query(axl_completion_t completion) {
  return guard([&]() -> axl_status {
    Completion* c = as_completion(completion);
    if (!c) return AXL_ERROR_INVALID_HANDLE;
    return c->query() ? AXL_SUCCESS : AXL_ERROR_NOT_READY;
  });
}

AXL_API axl_status axl_completion_wait(axl_completion_t completion) {
  return guard([&]() -> axl_status {
    Completion* c = as_completion(completion);
    if (!c) return AXL_ERROR_INVALID_HANDLE;
    return c->wait("axl_completion_wait");
  });
}

AXL_API axl_status axl_buffer_stamp(axl_buffer_t buffer, axl_completion_t completion, uint32_t access) {
  return guard([&]() -> axl_status {
    Buffer* b = as<Buffer>(buffer, Kind::buffer, "buffer");
    if (!b) return AXL_ERROR_INVALID_HANDLE;
    Completion* c = as_completion(completion);
    if (!c) return AXL_ERROR_INVALID_HANDLE;
    if (!access || (access & ~uint32_t(AXL_ACCESS_READ | AXL_ACCESS_WRITE)))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_buffer_stamp: access 0x%x; expected READ (1), WRITE (2) or both",
                  access);
    stamp(b, c, access);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_buffer_host_wait(axl_buffer_t buffer, uint32_t access) {
  return guard([&]() -> axl_status {
    Buffer* b = as<Buffer>(buffer, Kind::buffer, "buffer");
    if (!b) return AXL_ERROR_INVALID_HANDLE;
    if (!access || (access & ~uint32_t(AXL_ACCESS_READ | AXL_ACCESS_WRITE)))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_buffer_host_wait: access 0x%x; expected READ (1), WRITE (2) or both", access);
    Buffer* a = b->allocation();
    if (!a->tracked()) return AXL_SUCCESS;
    // Snapshot under the lock, wait outside it: device work that finishes
    // meanwhile may stamp the same record.
    std::vector<Completion*> wait_on;
    {
      std::lock_guard<std::mutex> lk(a->hazards.mu);
      if (a->hazards.last_write) wait_on.push_back(a->hazards.last_write);
      if (access & AXL_ACCESS_WRITE)
        wait_on.insert(wait_on.end(), a->hazards.readers.begin(), a->hazards.readers.end());
      for (Completion* c : wait_on) retain(c);
    }
    axl_status first = AXL_SUCCESS;
    for (Completion* c : wait_on) {
      axl_status s = c->wait("axl_buffer_host_wait");
      if (s && !first) first = s;
      release(c);
    }
    return first;
  });
}

}  // extern "C"
