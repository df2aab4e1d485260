// Queues: creation, synchronisation, copies between any two buffers, fills,
// cross-queue and cross-backend waits, host callbacks, kernel launch.
#include <algorithm>
#include <cstring>

#include "internal.hpp"

static_assert(sizeof(axl_queue_options) == 16, "axl_queue_options is ABI (1.2)");

namespace axl::core {

Queue::~Queue() {
  if (device) {
    std::lock_guard<std::mutex> lk(device->queues_mu);
    auto& v = device->queues;
    v.erase(std::remove(v.begin(), v.end(), this), v.end());
  }
  {
    // Holding the link while draining: a completion being recorded on this
    // queue either got in first or, after this, sees a drained queue.
    // At exit the drain is bounded (exit.cpp); an abandoned queue is not
    // destroyed, since queue_destroy would wait for the work that is stuck.
    const bool drained = !pq || device->backend->poisoned.load() || !exit_began() ||
                         drain_queue_for_exit(this);
    std::lock_guard<std::mutex> lk(link->mu);
    if (pq && drained && !device->backend->poisoned.load()) {
      // queue_destroy drains pending work first (plugin.h).
      AXL_CALL(device->backend, queue_destroy, pq);
    }
    link->queue = nullptr;
  }
  abandon_open_completion(this);
  if (device && !is_default) release(device);
}

axl_status queue_usable(Queue* q) { return q->device->backend->ensure_ready(); }

axl_status queue_create_internal(Device* d, bool is_default, Queue** out, uint32_t max_pending) {
  auto q = std::make_unique<Queue>();
  q->device = d;
  q->is_default = is_default;
  q->trace_id = trace_next_queue_id();
  axl_queue_desc desc{};
  desc.struct_size = sizeof desc;
  desc.trace_id = q->trace_id;
  // 0 in either field leaves the plugin's default (plugin.h).
  desc.max_pending = max_pending != 0
                         ? max_pending
                         : env_u32("AXL_QUEUE_MAX_PENDING", 1, UINT32_MAX, 0,
                                   "an integer from 1 to 4294967295");
  // 0 in the variable means no limit, which the desc spells NEVER.
  const uint32_t timeout = env_u32("AXL_QUEUE_FULL_TIMEOUT_MS", 0, UINT32_MAX - 1, UINT32_MAX,
                                   "an integer from 0 (no limit) to 4294967294 milliseconds");
  desc.full_timeout_ms = timeout == UINT32_MAX ? 0
                         : timeout == 0        ? AXL_QUEUE_FULL_TIMEOUT_NEVER
                                               : timeout;
  axl_pqueue pq = nullptr;
  if (axl_status s = AXL_CALL(d->backend, queue_create, d->pdev, &desc, &pq)) {
    q->device = nullptr;  // nothing to undo
    return s;
  }
  q->pq = pq;
  q->link->queue = q.get();
  trace_register_queue(q->trace_id, d->id, d->props.is_host);
  // The default queue is owned by its (immortal) device; other queues keep
  // their device alive.
  if (!is_default) retain(d);
  {
    std::lock_guard<std::mutex> lk(d->queues_mu);
    d->queues.push_back(q.get());
  }
  *out = q.release();
  return AXL_SUCCESS;
}

void note_use(Buffer* b, Queue* q) {
  Buffer* a = b->allocation();
  if (a->last_use.load(std::memory_order_relaxed) == q) return;
  std::lock_guard<std::mutex> lk(a->use_mu);
  a->last_use.store(q, std::memory_order_relaxed);
  if (std::find(a->used_by.begin(), a->used_by.end(), q) != a->used_by.end()) return;
  retain(q);
  a->used_by.push_back(q);
}

namespace {

struct HostSignal {
  uint64_t* address;
};

void signal_host_value(void* p) {
  auto* s = static_cast<HostSignal*>(p);
  __atomic_store_n(s->address, 1, __ATOMIC_RELEASE);
  delete s;
}

struct HostCopy {
  void* dst;
  const void* src;
  uint64_t bytes;
};

void host_copy(void* p) {
  auto* c = static_cast<HostCopy*>(p);
  memcpy(c->dst, c->src, c->bytes);
  delete c;
}

void free_host(void* p) { free(p); }

struct HostFill {
  char* dst;
  uint64_t bytes;
  uint32_t pattern, pattern_size;
};

void host_fill(void* p) {
  auto* f = static_cast<HostFill*>(p);
  if (f->pattern_size == 1) {
    memset(f->dst, static_cast<int>(f->pattern & 0xff), f->bytes);
  } else {
    for (uint64_t i = 0; i < f->bytes; i += f->pattern_size) memcpy(f->dst + i, &f->pattern, f->pattern_size);
  }
  delete f;
}

}  // namespace

axl_status queue_wait_internal(Queue* waiter, Queue* signaler) {
  if (waiter == signaler) return AXL_SUCCESS;
  close_open_completion(waiter);
  Backend* wb = waiter->device->backend;
  Backend* sb = signaler->device->backend;
  if (axl_status s = sb->ensure_ready()) return s;
  if (wb == sb) {
    // Same backend: a transient event. event_destroy may run while the wait
    // is pending (plugin.h), so it is released at once.
    axl_pevent ev = nullptr;
    if (axl_status s = AXL_CALL(sb, event_create, signaler->device->pdev, 0, &ev)) return s;
    axl_status s = signaler->submit([&] { return AXL_CALL(sb, queue_record_event, signaler->pq, ev); });
    if (!s) s = waiter->submit([&] { return AXL_CALL(wb, queue_wait_event, waiter->pq, ev); });
    AXL_CALL(sb, event_destroy, ev);
    return s;
  }
  // Across backends: the signaler's host callback raises a completion flag of
  // the waiter's backend, which the waiter's queue waits on.
  if (!sb->table.queue_enqueue_host_fn || !wb->table.queue_wait_flag || !wb->table.flag_create ||
      !wb->table.flag_get_host_address) {
    // Correct but blocks the host: no device-side way to chain the two.
    logf(AXL_LOG_DEBUG, "wait %s -> %s falls back to a host synchronize", sb->name.c_str(),
         wb->name.c_str());
    return signaler->submit([&] { return AXL_CALL(sb, queue_synchronize, signaler->pq); });
  }
  axl_pflag pf = nullptr;
  if (axl_status s = AXL_CALL(wb, flag_create, waiter->device->pdev, &pf)) return s;
  uint64_t* addr = nullptr;
  axl_status s = AXL_CALL(wb, flag_get_host_address, pf, &addr);
  if (!s) {
    auto* sig = new HostSignal{addr};
    s = signaler->submit(
        [&] { return AXL_CALL(sb, queue_enqueue_host_fn, signaler->pq, signal_host_value, sig); });
    if (s) delete sig;
  }
  if (!s) s = waiter->submit([&] { return AXL_CALL(wb, queue_wait_flag, waiter->pq, pf, 1); });
  AXL_CALL(wb, flag_destroy, pf);  // deferred by the plugin until the wait ran
  return s;
}

}  // namespace axl::core

using namespace axl::core;

namespace {

#define AXL_QUEUE(q, handle)                                    \
  Queue* q = as<Queue>(handle, Kind::queue, "queue");          \
  if (!q) return AXL_ERROR_INVALID_HANDLE;                      \
  if (axl_status s__ = queue_usable(q)) return s__;

#define AXL_BUFFER(b, handle, what)                                  \
  Buffer* b = as<Buffer>(handle, Kind::buffer, what " buffer");      \
  if (!b) return AXL_ERROR_INVALID_HANDLE;

axl_status check_range(Buffer* b, uint64_t offset, uint64_t bytes, const char* what) {
  if (bytes == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "%s: size_bytes is 0; expected > 0", what);
  if (offset > b->size || bytes > b->size - offset)
    return fail(AXL_ERROR_OUT_OF_RANGE,
                "%s: range [%llu, %llu) is past the end of a %llu-byte buffer", what,
                (unsigned long long)offset, (unsigned long long)(offset + bytes),
                (unsigned long long)b->size);
  return AXL_SUCCESS;
}


// Copy host bytes to host bytes in queue order, on any backend.
axl_status enqueue_host_copy(Queue* q, void* dst, const void* src, uint64_t bytes) {
  Backend* b = q->device->backend;
  if (q->device->props.is_host)
    return q->submit([&] {
      return AXL_CALL(b, queue_copy_dtod, q->pq, reinterpret_cast<axl_devaddr>(dst),
                      reinterpret_cast<axl_devaddr>(src), bytes);
    });
  auto* c = new HostCopy{dst, src, bytes};
  axl_status s = q->submit([&] { return AXL_CALL(b, queue_enqueue_host_fn, q->pq, host_copy, c); });
  if (s) delete c;
  return s;
}

// One endpoint of a copy: device memory of `dev`, or host memory.
struct End {
  Device* dev;     // null for plain host memory given by pointer
  axl_devaddr addr;
  void* host;      // non-null if the host can read/write it directly
  bool devmem;     // device memory (of a host device, host-readable too)
};

axl_status copy_ends(Queue* q, End dst, End src, uint64_t bytes) {
  Device* Q = q->device;
  // Host memory on both sides (host devices' memory is host memory too).
  if (dst.host && src.host) {
    if (Q->props.is_host && (dst.devmem != src.devmem)) {
      // Report the direction the caller sees (a host array into a cpu buffer
      // is HtoD), which is also what the launch trace records.
      if (dst.devmem)
        return q->submit([&] { return AXL_CALL(Q->backend, queue_copy_htod, q->pq, dst.addr, src.host, bytes); });
      return q->submit([&] { return AXL_CALL(Q->backend, queue_copy_dtoh, q->pq, dst.host, src.addr, bytes); });
    }
    return enqueue_host_copy(q, dst.host, src.host, bytes);
  }
  // From here at least one side is device memory the host cannot touch.
  if (!dst.host && !src.host) {
    if (dst.dev == src.dev) {
      if (Q != dst.dev)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    "copy within %s enqueued on a queue of %s; use a queue of that device",
                    dev_name(dst.dev).c_str(), dev_name(Q).c_str());
      return q->submit([&] { return AXL_CALL(Q->backend, queue_copy_dtod, q->pq, dst.addr, src.addr, bytes); });
    }
    if (Q != dst.dev && Q != src.dev)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "copy from %s to %s enqueued on a queue of %s; use a queue of either device",
                  dev_name(src.dev).c_str(), dev_name(dst.dev).c_str(), dev_name(Q).c_str());
    if (dst.dev->backend == src.dev->backend && Q->backend->table.queue_copy_peer)
      return q->submit([&] {
        return AXL_CALL(Q->backend, queue_copy_peer, q->pq, dst.dev->pdev, dst.addr,
                        src.dev->pdev, src.addr, bytes);
      });
  }
  // Device <-> host on the device's own queue.
  if (dst.host && !src.host && Q == src.dev)
    return q->submit([&] { return AXL_CALL(Q->backend, queue_copy_dtoh, q->pq, dst.host, src.addr, bytes); });
  if (src.host && !dst.host && Q == dst.dev)
    return q->submit([&] { return AXL_CALL(Q->backend, queue_copy_htod, q->pq, dst.addr, src.host, bytes); });

  // Everything else goes through host memory on the devices' default queues,
  // chained to `q` so the copy still completes in q's order.
  Queue* qs = src.host ? q : (Q == src.dev ? q : src.dev->default_queue);
  Queue* qd = dst.host ? q : (Q == dst.dev ? q : dst.dev->default_queue);
  void* staging = nullptr;
  const void* from = src.host;
  if (!src.host) {
    if (dst.host) {
      staging = nullptr;
    } else {
      staging = aligned_alloc(64, (bytes + 63) / 64 * 64);
      if (!staging) return fail(AXL_ERROR_OUT_OF_HOST_MEMORY, "no host memory for a %llu-byte staging copy", (unsigned long long)bytes);
    }
    if (axl_status s = queue_wait_internal(qs, q)) { free(staging); return s; }
    void* land = dst.host ? dst.host : staging;
    if (axl_status s = qs->submit([&] { return AXL_CALL(qs->device->backend, queue_copy_dtoh, qs->pq, land, src.addr, bytes); })) {
      free(staging);
      return s;
    }
    from = land;
    if (dst.host) return queue_wait_internal(q, qs);
  }
  if (axl_status s = queue_wait_internal(qd, qs)) return s;
  if (axl_status s = qd->submit([&] { return AXL_CALL(qd->device->backend, queue_copy_htod, qd->pq, dst.addr, from, bytes); }))
    return s;
  if (staging) {
    axl_status s = qd->submit([&] { return AXL_CALL(qd->device->backend, queue_enqueue_host_fn, qd->pq, free_host, staging); });
    if (s) {  // cannot free in order: wait, then free
      qd->submit([&] { return AXL_CALL(qd->device->backend, queue_synchronize, qd->pq); });
      free(staging);
    }
  }
  return queue_wait_internal(q, qd);
}

End end_of(Buffer* b, uint64_t offset) {
  // Wrapped user memory on a host device (a numpy array) is host memory to
  // the caller: copies from it into a buffer are HtoD, as they are traced.
  Buffer* a = b->allocation();
  const bool devmem = !b->pinned && !(a->external && b->device->props.is_host);
  return End{b->device, b->address + offset, b->host ? static_cast<char*>(b->host) + offset : nullptr, devmem};
}

}  // namespace

namespace axl::core {

std::string dev_name(Device* d) { return d->label + ":" + std::to_string(d->id) + " (" + d->backend->name + ")"; }

axl_status copy_bytes(Queue* q, Buffer* dst, uint64_t dst_offset, Buffer* src, uint64_t src_offset,
                      uint64_t bytes) {
  return copy_ends(q, end_of(dst, dst_offset), end_of(src, src_offset), bytes);
}

axl_status copy_host_bytes(Queue* q, void* dst_host, Buffer* dst, uint64_t dst_offset, const void* src_host,
                           Buffer* src, uint64_t src_offset, uint64_t bytes) {
  End d = dst ? end_of(dst, dst_offset) : End{nullptr, 0, dst_host, false};
  End s = src ? end_of(src, src_offset) : End{nullptr, 0, const_cast<void*>(src_host), false};
  return copy_ends(q, d, s, bytes);
}

axl_status enqueue_host_fn(Queue* q, void (*fn)(void*), void* data) {
  return q->submit([&] { return AXL_CALL(q->device->backend, queue_enqueue_host_fn, q->pq, fn, data); });
}

}  // namespace axl::core

namespace {

// After a synchronize of d's queues succeeded: memory released before it
// whose queues are now past the release point is free when it returns (the
// reaper thread might otherwise get to it later), and a release that failed
// meanwhile is reported here, since a release has no caller to tell.
axl_status after_synchronize(Device* d) {
  reclaim_deferred_frees(d);
  return take_free_failure(d);
}

}  // namespace

extern "C" {

AXL_API axl_status axl_queue_create(axl_device_t device, uint32_t flags, axl_queue_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_create: out_queue is NULL");
    if (flags != 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_create: flags 0x%x; expected 0", flags);
    if (axl_status s = device_usable(d)) return s;
    Queue* q = nullptr;
    if (axl_status s = queue_create_internal(d, false, &q)) return s;
    *out = to_handle<axl_queue_t>(q);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_queue_create_with_options(axl_device_t device,
                                                 const axl_queue_options* options,
                                                 axl_queue_t* out) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_create_with_options: out_queue is NULL");
    if (!options) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_create_with_options: options is NULL");
    // Through max_pending, the first version's last field; a larger size is
    // a newer caller's, whose extra fields this core does not know.
    constexpr size_t kMinSize = offsetof(axl_queue_options, max_pending) + sizeof options->max_pending;
    if (options->struct_size < kMinSize)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_queue_create_with_options: options->struct_size is %zu; expected at least %zu "
                  "(sizeof(axl_queue_options))",
                  options->struct_size, kMinSize);
    if (options->flags != 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_queue_create_with_options: options->flags 0x%x; expected 0 (no flags are defined)",
                  options->flags);
    if (axl_status s = device_usable(d)) return s;
    Queue* q = nullptr;
    if (axl_status s = queue_create_internal(d, false, &q, options->max_pending)) return s;
    *out = to_handle<axl_queue_t>(q);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_queue_retain(axl_queue_t queue) {
  return retain_handle(queue, Kind::queue, "queue");
}

AXL_API axl_status axl_queue_release(axl_queue_t queue) {
  return guard([&]() -> axl_status {
    Queue* q = as<Queue>(queue, Kind::queue, "queue");
    if (!q) return AXL_ERROR_INVALID_HANDLE;
    if (q->is_default && q->refs.load() <= 1)
      return fail(AXL_ERROR_INVALID_HANDLE, "the default queue of %s was released more times than obtained",
                  dev_name(q->device).c_str());
    release(q);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_queue_device(axl_queue_t queue, axl_device_t* out) {
  return guard([&]() -> axl_status {
    Queue* q = as<Queue>(queue, Kind::queue, "queue");
    if (!q) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_device: out is NULL");
    retain(q->device);
    *out = to_handle<axl_device_t>(q->device);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_queue_synchronize(axl_queue_t queue) {
  return guard([&]() -> axl_status {
    AXL_QUEUE(q, queue);
    // Not under submit_mu: other threads may keep enqueueing while we wait.
    const uint64_t seen = q->submitted.load();
    axl_status s = AXL_CALL(q->device->backend, queue_synchronize, q->pq);
    q->note_synced(seen);  // a failed synchronize still waited for everything
    if (s) return s;
    return after_synchronize(q->device);
  });
}

AXL_API axl_status axl_device_synchronize(axl_device_t device) {
  return guard([&]() -> axl_status {
    Device* d = as<Device>(device, Kind::device, "device");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (axl_status s = device_usable(d)) return s;
    std::vector<Queue*> qs;
    {
      std::lock_guard<std::mutex> lk(d->queues_mu);
      for (Queue* q : d->queues) {
        // Skip queues whose last reference is being dropped right now.
        int64_t r = q->refs.load();
        while (r > 0 && !q->refs.compare_exchange_weak(r, r + 1)) {}
        if (r > 0) qs.push_back(q);
      }
    }
    axl_status first = AXL_SUCCESS;
    for (Queue* q : qs) {
      const uint64_t seen = q->submitted.load();
      axl_status s = AXL_CALL(d->backend, queue_synchronize, q->pq);
      q->note_synced(seen);
      if (s && !first) first = s;
      release(q);
    }
    return first ? first : after_synchronize(d);
  });
}

AXL_API axl_status axl_queue_copy_from_host(axl_queue_t queue, axl_buffer_t dst, uint64_t dst_offset,
                                            const void* src, uint64_t size_bytes) {
  return guard([&]() -> axl_status {
    AXL_QUEUE(q, queue);
    AXL_BUFFER(d, dst, "destination");
    if (!src) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_copy_from_host: src is NULL");
    if (axl_status s = check_range(d, dst_offset, size_bytes, "axl_queue_copy_from_host")) return s;
    note_use(d, q);
    stamp_begin(q);
    axl_status s;
    if (d->device == q->device && !d->pinned)  // the common case: straight to the plugin
      s = q->submit([&] {
        return AXL_CALL(q->device->backend, queue_copy_htod, q->pq, d->address + dst_offset, src, size_bytes);
      });
    else
      s = copy_ends(q, end_of(d, dst_offset), End{nullptr, 0, const_cast<void*>(src), false}, size_bytes);
    stamp_op(q, s, &d, 1, nullptr, 0);
    return s;
  });
}

AXL_API axl_status axl_queue_copy_to_host(axl_queue_t queue, void* dst, axl_buffer_t src,
                                          uint64_t src_offset, uint64_t size_bytes) {
  return guard([&]() -> axl_status {
    AXL_QUEUE(q, queue);
    AXL_BUFFER(s_, src, "source");
    if (!dst) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_copy_to_host: dst is NULL");
    if (axl_status s = check_range(s_, src_offset, size_bytes, "axl_queue_copy_to_host")) return s;
    note_use(s_, q);
    stamp_begin(q);
    axl_status s;
    if (s_->device == q->device && !s_->pinned)
      s = q->submit([&] {
        return AXL_CALL(q->device->backend, queue_copy_dtoh, q->pq, dst, s_->address + src_offset, size_bytes);
      });
    else
      s = copy_ends(q, End{nullptr, 0, dst, false}, end_of(s_, src_offset), size_bytes);
    stamp_op(q, s, nullptr, 0, &s_, 1);
    return s;
  });
}

AXL_API axl_status axl_queue_copy_buffer(axl_queue_t queue, axl_buffer_t dst, uint64_t dst_offset,
                                         axl_buffer_t src, uint64_t src_offset, uint64_t size_bytes) {
  return guard([&]() -> axl_status {
    AXL_QUEUE(q, queue);
    AXL_BUFFER(d, dst, "destination");
    AXL_BUFFER(s_, src, "source");
    if (axl_status s = check_range(d, dst_offset, size_bytes, "axl_queue_copy_buffer (destination)")) return s;
    if (axl_status s = check_range(s_, src_offset, size_bytes, "axl_queue_copy_buffer (source)")) return s;
    if (axl_status s = device_usable(d->device)) return s;
    if (axl_status s = device_usable(s_->device)) return s;
    note_use(d, q);
    note_use(s_, q);
    Buffer* both[2] = {d, s_};
    if (axl_status s = wait_for_writers(q, both, 2)) return s;
    stamp_begin(q);
    axl_status s = copy_ends(q, end_of(d, dst_offset), end_of(s_, src_offset), size_bytes);
    stamp_op(q, s, &d, 1, &s_, 1);
    return s;
  });
}

AXL_API axl_status axl_queue_copy(axl_queue_t queue, axl_buffer_t dst, axl_buffer_t src) {
  return guard([&]() -> axl_status {
    AXL_BUFFER(d, dst, "destination");
    AXL_BUFFER(s_, src, "source");
    if (d->size != s_->size)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_queue_copy: destination is %llu bytes but source is %llu bytes; sizes must be equal",
                  (unsigned long long)d->size, (unsigned long long)s_->size);
    return axl_queue_copy_buffer(queue, dst, 0, src, 0, d->size);
  });
}

AXL_API axl_status axl_queue_fill(axl_queue_t queue, axl_buffer_t dst, uint64_t offset,
                                  uint64_t size_bytes, uint32_t pattern, uint32_t pattern_size) {
  return guard([&]() -> axl_status {
    AXL_QUEUE(q, queue);
    AXL_BUFFER(d, dst, "destination");
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_fill: pattern_size %u; expected 1, 2 or 4", pattern_size);
    if (axl_status s = check_range(d, offset, size_bytes, "axl_queue_fill")) return s;
    if (offset % pattern_size || size_bytes % pattern_size)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_queue_fill: offset %llu and size %llu must be multiples of pattern_size %u",
                  (unsigned long long)offset, (unsigned long long)size_bytes, pattern_size);
    if (pattern_size < 4 && (pattern >> (8 * pattern_size)) != 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_fill: pattern 0x%x does not fit in %u byte(s)",
                  pattern, pattern_size);
    Device* Q = q->device;
    if (d->device != Q && !(d->host && Q->props.is_host))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_fill: buffer is on %s but the queue on %s",
                  dev_name(d->device).c_str(), dev_name(Q).c_str());
    note_use(d, q);
    stamp_begin(q);
    axl_status s;
    if (d->host && !Q->props.is_host) {
      // Pinned host memory: an accelerator's fill needs a device address
      // (the virtual backend has none for it); the host fills it in order.
      auto* f = new HostFill{static_cast<char*>(d->host) + offset, size_bytes, pattern, pattern_size};
      s = enqueue_host_fn(q, host_fill, f);
      if (s) delete f;
    } else {
      s = q->submit([&] {
        return AXL_CALL(Q->backend, queue_fill, q->pq, d->address + offset, size_bytes, pattern, pattern_size);
      });
    }
    stamp_op(q, s, &d, 1, nullptr, 0);
    return s;
  });
}

AXL_API axl_status axl_queue_wait_queue(axl_queue_t queue, axl_queue_t other) {
  return guard([&]() -> axl_status {
    AXL_QUEUE(q, queue);
    Queue* o = as<Queue>(other, Kind::queue, "other queue");
    if (!o) return AXL_ERROR_INVALID_HANDLE;
    return queue_wait_internal(q, o);
  });
}

AXL_API axl_status axl_queue_enqueue_host_func(axl_queue_t queue, axl_host_callback fn, void* user_data) {
  return guard([&]() -> axl_status {
    AXL_QUEUE(q, queue);
    if (!fn) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_enqueue_host_func: fn is NULL");
    close_open_completion(q);  // fn may block the queue for as long as it likes
    return q->submit([&] { return AXL_CALL(q->device->backend, queue_enqueue_host_fn, q->pq, fn, user_data); });
  });
}

AXL_API axl_status axl_queue_native_handle(axl_queue_t queue, uint64_t* out) {
  return guard([&]() -> axl_status {
    AXL_QUEUE(q, queue);
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_native_handle: out is NULL");
    *out = 0;
    if (!q->device->backend->table.queue_get_native_handle) return AXL_SUCCESS;
    return AXL_CALL(q->device->backend, queue_get_native_handle, q->pq, out);
  });
}

AXL_API axl_status axl_queue_launch(axl_queue_t queue, axl_kernel_t kernel, const uint32_t grid[3],
                                    const uint32_t block[3], uint64_t shared_mem_bytes,
                                    const axl_launch_arg* args, uint32_t num_args) {
  return guard([&]() -> axl_status {
    AXL_QUEUE(q, queue);
    Kernel* k = as<Kernel>(kernel, Kind::kernel, "kernel");
    if (!k) return AXL_ERROR_INVALID_HANDLE;
    if (!grid || !block) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_launch: grid or block is NULL");
    for (int i = 0; i < 3; ++i)
      if (grid[i] == 0 || block[i] == 0)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    "axl_queue_launch: grid (%u, %u, %u) and block (%u, %u, %u) must be >= 1 in every dimension",
                    grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    if (num_args && !args) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_launch: %u args but args is NULL", num_args);
    if (k->device != q->device)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "kernel '%s' belongs to %s but the queue to %s", k->name.c_str(),
                  dev_name(k->device).c_str(), dev_name(q->device).c_str());
    // Most kernels take a handful of arguments: keep them on the stack so a
    // launch allocates nothing (the enqueue benchmark's largest core cost).
    constexpr uint32_t kInline = 16;
    axl_kernel_arg pargs_inline[kInline];
    axl_devaddr addrs_inline[kInline];
    Buffer* tracked_inline[kInline];
    std::unique_ptr<axl_kernel_arg[]> pargs_heap;
    std::unique_ptr<axl_devaddr[]> addrs_heap;
    std::unique_ptr<Buffer*[]> tracked_heap;
    axl_kernel_arg* pargs = pargs_inline;
    axl_devaddr* addrs = addrs_inline;
    Buffer** tracked = tracked_inline;
    size_t num_tracked = 0;
    if (num_args > kInline) {
      pargs_heap.reset(new axl_kernel_arg[num_args]);
      addrs_heap.reset(new axl_devaddr[num_args]);
      tracked_heap.reset(new Buffer*[num_args]);
      pargs = pargs_heap.get();
      addrs = addrs_heap.get();
      tracked = tracked_heap.get();
    }
    for (uint32_t i = 0; i < num_args; ++i) {
      const axl_launch_arg& a = args[i];
      if (a.kind == AXL_KERNEL_ARG_BUFFER) {
        AXL_BUFFER(b, a.buffer, "kernel argument");
        if (b->device != q->device && !(b->host && (q->device->props.is_host || b->pinned)))
          return fail(AXL_ERROR_INVALID_ARGUMENT, "kernel argument %u is a buffer on %s; the launch is on %s", i,
                      dev_name(b->device).c_str(), dev_name(q->device).c_str());
        addrs[i] = b->address;
        pargs[i] = {AXL_ARG_DEVADDR, sizeof(axl_devaddr), &addrs[i]};
        note_use(b, q);
        if (b->allocation()->tracked()) tracked[num_tracked++] = b;
      } else if (a.kind == AXL_KERNEL_ARG_SCALAR) {
        if (!a.value || a.size == 0 || a.size > 256)
          return fail(AXL_ERROR_INVALID_ARGUMENT,
                      "kernel argument %u: scalar of %u bytes at %p; expected 1..256 bytes at a non-NULL value", i,
                      a.size, a.value);
        pargs[i] = {AXL_ARG_SCALAR, a.size, a.value};
      } else {
        return fail(AXL_ERROR_INVALID_ARGUMENT, "kernel argument %u: kind %d is not BUFFER(0) or SCALAR(1)", i, a.kind);
      }
    }
    axl_launch_config cfg{};
    cfg.struct_size = sizeof cfg;
    memcpy(cfg.grid, grid, sizeof cfg.grid);
    memcpy(cfg.block, block, sizeof cfg.block);
    cfg.shared_mem_bytes = shared_mem_bytes;
    axl_status s = q->submit([&] {
      return AXL_CALL(q->device->backend, queue_launch, q->pq, k->pk, &cfg, pargs, num_args);
    });
    // The ABI does not say which arguments a kernel writes: each counts as
    // written, which orders host reads and writes after the launch.
    if (num_tracked) stamp_op(q, s, tracked, num_tracked, nullptr, 0, /*lazy=*/true);
    return s;
  });
}

}  // extern "C"
