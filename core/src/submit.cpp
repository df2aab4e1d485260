// The one submission path (submit.hpp): the only caller of the plugins'
// enqueue slots, and the copy routes between any two kinds of memory.
#include "submit.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace axl::core {

void note_first_use(Buffer* a, Queue* q) {
  std::lock_guard<std::mutex> lk(a->use_mu);
  a->last_use.store(q, std::memory_order_relaxed);
  if (std::find(a->used_by.begin(), a->used_by.end(), q) != a->used_by.end()) return;
  retain(q);
  a->used_by.push_back(q);
}

End end_of(Buffer* b, uint64_t offset) {
  // Wrapped user memory on a host device (a numpy array) is host memory to
  // the caller: copies from it into a buffer are HtoD, as they are traced.
  Buffer* a = b->allocation();
  const bool devmem = !b->pinned && !(a->external && b->device->props.is_host);
  return End{b->device, b->address + offset, b->host ? static_cast<char*>(b->host) + offset : nullptr, devmem};
}

namespace {

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

// Host bytes to host bytes in queue order, on any backend.
axl_status enqueue_host_copy(Queue* q, void* dst, const void* src, uint64_t bytes) {
  if (q->device->props.is_host)
    return Submission::dtod(q, reinterpret_cast<axl_devaddr>(dst), reinterpret_cast<axl_devaddr>(src), bytes);
  auto* c = new HostCopy{dst, src, bytes};
  axl_status s = Submission::enqueue_host_fn(q, host_copy, c);
  if (s) delete c;
  return s;
}

}  // namespace

axl_status copy_operands(axl_queue_t queue, axl_buffer_t dst, axl_buffer_t src, Queue** q, Buffer** d,
                         Buffer** s) {
  if (axl_status st = usable_queue(queue, q)) return st;
  *d = as<Buffer>(dst, Kind::buffer, "destination buffer");
  if (!*d) return AXL_ERROR_INVALID_HANDLE;
  *s = as<Buffer>(src, Kind::buffer, "source buffer");
  if (!*s) return AXL_ERROR_INVALID_HANDLE;
  return AXL_SUCCESS;
}

axl_status staging_oom(uint64_t bytes) {
  return fail(AXL_ERROR_OUT_OF_HOST_MEMORY, "no host memory for a %llu-byte staging copy",
              (unsigned long long)bytes);
}

void Submission::add_past_inline(BufferUse u) {
  if (heap_.empty()) heap_.assign(inline_, inline_ + kInline);
  heap_.push_back(u);
}

axl_status Submission::record_and_wait() {
  const BufferUse* const u = uses();
  for (uint32_t i = 0; i < n_; ++i) note_use_of_allocation(u[i].buffer->allocation(), q_);
  return tracked_ ? wait_for_writers(q_, u, n_) : AXL_SUCCESS;
}

axl_status Submission::copy_steps(End dst, End src, uint64_t bytes) {
  Queue* q = q_;
  Device* Q = q->device;
  // Host memory on both sides (host devices' memory is host memory too).
  if (dst.host && src.host) {
    if (Q->props.is_host && (dst.devmem != src.devmem)) {
      // Report the direction the caller sees (a host array into a cpu buffer
      // is HtoD), which is also what the launch trace records.
      if (dst.devmem) return htod(q, dst.addr, src.host, bytes);
      return dtoh(q, dst.host, src.addr, bytes);
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
      return dtod(q, dst.addr, src.addr, bytes);
    }
    if (Q != dst.dev && Q != src.dev)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "copy from %s to %s enqueued on a queue of %s; use a queue of either device",
                  dev_name(src.dev).c_str(), dev_name(dst.dev).c_str(), dev_name(Q).c_str());
    if (dst.dev->backend == src.dev->backend && Q->backend->table.queue_copy_peer)
      return q->submit([&] {
        return AXL_CALL(Q->backend, queue_copy_peer, q->pq, dst.dev->pdev, dst.addr, src.dev->pdev, src.addr,
                        bytes);
      });
  }
  // Device <-> host on the device's own queue.
  if (dst.host && !src.host && Q == src.dev) return dtoh(q, dst.host, src.addr, bytes);
  if (src.host && !dst.host && Q == dst.dev) return htod(q, dst.addr, src.host, bytes);

  // Everything else goes through host memory on the devices' default queues,
  // chained to `q` so the copy still completes in q's order.
  Queue* qs = src.host ? q : (Q == src.dev ? q : src.dev->default_queue);
  Queue* qd = dst.host ? q : (Q == dst.dev ? q : dst.dev->default_queue);
  void* staging = nullptr;
  const void* from = src.host;
  if (!src.host) {
    if (!dst.host) {
      staging = aligned_alloc(64, (bytes + 63) / 64 * 64);
      if (!staging) return staging_oom(bytes);
    }
    if (axl_status s = queue_wait_internal(qs, q)) {
      free(staging);
      return s;
    }
    void* land = dst.host ? dst.host : staging;
    if (axl_status s = step(dtoh(qs, land, src.addr, bytes))) {
      free(staging);
      return s;
    }
    from = land;
    if (dst.host) return queue_wait_internal(q, qs);
  }
  if (axl_status s = queue_wait_internal(qd, qs)) return s;
  if (axl_status s = step(htod(qd, dst.addr, from, bytes))) return s;
  if (staging && enqueue_host_fn(qd, free_host, staging) != AXL_SUCCESS) {
    // Cannot free in order: wait, then free.
    qd->submit([&] { return AXL_CALL(qd->device->backend, queue_synchronize, qd->pq); });
    free(staging);
  }
  return queue_wait_internal(q, qd);
}

axl_status Submission::copy_bytes(Buffer* dst, uint64_t dst_offset, Buffer* src, uint64_t src_offset,
                                  uint64_t bytes) {
  return copy(end_of(dst, dst_offset), end_of(src, src_offset), bytes);
}

axl_status Submission::copy_host_bytes(void* dst_host, Buffer* dst, uint64_t dst_offset, const void* src_host,
                                       Buffer* src, uint64_t src_offset, uint64_t bytes) {
  return copy(dst ? end_of(dst, dst_offset) : host_end(dst_host), src ? end_of(src, src_offset) : host_end(src_host),
              bytes);
}

axl_status Submission::fill(Buffer* dst, uint64_t offset, uint64_t bytes, uint32_t pattern, uint32_t pattern_size) {
  if (dst->host && !q_->device->props.is_host) {
    // Pinned host memory: an accelerator's fill needs a device address
    // (the virtual backend has none for it); the host fills it in order.
    auto* f = new HostFill{static_cast<char*>(dst->host) + offset, bytes, pattern, pattern_size};
    axl_status s = host_fn(host_fill, f);
    if (s) delete f;
    return s;
  }
  return step(q_->submit([&] {
    return AXL_CALL(q_->device->backend, queue_fill, q_->pq, dst->address + offset, bytes, pattern, pattern_size);
  }));
}

axl_status Submission::synchronize() { return AXL_CALL(q_->device->backend, queue_synchronize, q_->pq); }

axl_status Submission::enqueue_host_fn(Queue* q, void (*fn)(void*), void* data) {
  return q->submit([&] { return AXL_CALL(q->device->backend, queue_enqueue_host_fn, q->pq, fn, data); });
}

axl_status Submission::record_event(Queue* q, axl_pevent ev) {
  return q->submit([&] { return AXL_CALL(q->device->backend, queue_record_event, q->pq, ev); });
}

axl_status Submission::wait_event(Queue* q, axl_pevent ev) {
  return q->submit([&] { return AXL_CALL(q->device->backend, queue_wait_event, q->pq, ev); });
}

axl_status Submission::wait_flag(Queue* q, axl_pflag pf, uint64_t value, const void* flag) {
  return q->submit([&] {
    axl_status s = AXL_CALL(q->device->backend, queue_wait_flag, q->pq, pf, value);
    if (!s && flag) {
      // Named by the exit drain if the queue never gets past it.
      std::lock_guard<std::mutex> lk(q->gate_mu);
      q->gate_flag = flag;
      q->gate_value = value;
      q->gate_seq = q->submitted.load(std::memory_order_relaxed);
    }
    return s;
  });
}

axl_status Submission::write_flag(Queue* q, axl_pflag pf, uint64_t value) {
  return q->submit([&] { return AXL_CALL(q->device->backend, queue_write_flag, q->pq, pf, value); });
}

}  // namespace axl::core
