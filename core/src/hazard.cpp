// Host hazard tracking: completions, per-allocation records, and the host
// waits that read them (MAX: HostHazardCompletion and the binding's stamps).
//
// Why events and not whole-queue waits: a host read of a staging buffer must
// not wait for unrelated work queued after its producer (a gated queue would
// block it forever), so each stamp marks the exact point after the op.
#include <algorithm>

#include "internal.hpp"

namespace axl::core {

Completion::~Completion() {
  if (pe && device && !device->backend->poisoned.load()) AXL_CALL(device->backend, event_destroy, pe);
  if (device) release(device);
}

void Completion::poison(const std::string& why) {
  {
    std::lock_guard<std::mutex> lk(mu);
    message = why;
  }
  poisoned.store(true, std::memory_order_release);
}

axl_status Completion::wait() {
  if (poisoned.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lk(mu);
    return fail(AXL_ERROR_HOST_HAZARD, "%s", message.c_str());
  }
  if (ready.load(std::memory_order_acquire) || !pe) return AXL_SUCCESS;
  if (axl_status s = AXL_CALL(device->backend, event_synchronize, pe)) return s;
  ready.store(true, std::memory_order_release);
  // Poisoned while we waited: the failure outranks the completed event.
  if (poisoned.load(std::memory_order_acquire)) return wait();
  return AXL_SUCCESS;
}

bool Completion::query() {
  if (poisoned.load(std::memory_order_acquire) || ready.load(std::memory_order_acquire) || !pe) return true;
  if (AXL_CALL(device->backend, event_query, pe) != AXL_SUCCESS) return false;
  ready.store(true, std::memory_order_release);
  return true;
}

axl_status completion_record(Queue* q, Completion** out) {
  Device* d = q->device;
  axl_pevent pe = nullptr;
  if (axl_status s = AXL_CALL(d->backend, event_create, d->pdev, 0, &pe)) return s;
  if (axl_status s = q->submit([&] { return AXL_CALL(d->backend, queue_record_event, q->pq, pe); })) {
    AXL_CALL(d->backend, event_destroy, pe);
    return s;
  }
  auto* c = new Completion();
  c->device = d;
  c->pe = pe;
  retain(d);
  *out = c;
  return AXL_SUCCESS;
}

HazardRecord::~HazardRecord() {
  if (last_write) release(last_write);
  for (Completion* c : readers) release(c);
}

void stamp(Buffer* b, Completion* c, uint32_t access) {
  Buffer* a = b->allocation();
  if (!a->tracked()) return;
  HazardRecord& h = a->hazards;
  std::vector<Completion*> dropped;
  {
    std::lock_guard<std::mutex> lk(h.mu);
    if (access & AXL_ACCESS_WRITE) {
      retain(c);
      if (h.last_write) dropped.push_back(h.last_write);
      h.last_write = c;
      dropped.insert(dropped.end(), h.readers.begin(), h.readers.end());
      h.readers.clear();
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
  for (Completion* d : dropped) release(d);
}

void stamp_op(Queue* q, axl_status enqueue_status, Buffer* const* writes, size_t nw, Buffer* const* reads,
              size_t nr) {
  bool any = false;
  for (size_t i = 0; i < nw && !any; ++i) any = writes[i] && writes[i]->allocation()->tracked();
  for (size_t i = 0; i < nr && !any; ++i) any = reads[i] && reads[i]->allocation()->tracked();
  if (!any) return;
  Completion* c = nullptr;
  if (enqueue_status != AXL_SUCCESS) {
    // The producer failed: whoever reads what it should have written learns
    // why instead of reading stale bytes.
    if (nw == 0) return;
    c = new Completion();
    c->poison(axl_last_error_message());
  } else if (completion_record(q, &c) != AXL_SUCCESS) {
    // Without a marker the record would point at an older writer; waiting
    // for the queue here keeps host reads correct at the cost of blocking.
    logf(AXL_LOG_WARN, "hazard tracking: no completion could be recorded (%s); synchronizing the queue",
         axl_last_error_message());
    AXL_CALL(q->device->backend, queue_synchronize, q->pq);
    return;
  }
  for (size_t i = 0; i < nw; ++i)
    if (writes[i]) stamp(writes[i], c, AXL_ACCESS_WRITE);
  if (enqueue_status == AXL_SUCCESS)
    for (size_t i = 0; i < nr; ++i)
      if (reads[i]) stamp(reads[i], c, AXL_ACCESS_READ);
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
    *out = reinterpret_cast<axl_completion_t>(c);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_completion_create_poisoned(const char* message, axl_completion_t* out) {
  return guard([&]() -> axl_status {
    if (!message) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_completion_create_poisoned: message is NULL");
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_completion_create_poisoned: out is NULL");
    auto* c = new Completion();
    c->poison(message);
    *out = reinterpret_cast<axl_completion_t>(c);
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
    return c->wait();
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
      axl_status s = c->wait();
      if (s && !first) first = s;
      release(c);
    }
    return first;
  });
}

}  // extern "C"
