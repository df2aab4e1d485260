// Queues: creation, synchronisation, copies between any two buffers, fills,
// cross-queue and cross-backend waits, host callbacks, kernel launch.
#include <algorithm>
#include <cstring>

#include "submit.hpp"

static_assert(sizeof(axl_queue_options) == 16, "axl_queue_options is ABI (1.2)");

namespace axl::core {
namespace {
void free_uncalled_host_funcs(QueueLink& link);  // below
}  // namespace

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
    const bool poisoned = device && device->backend->poisoned.load();
    const bool drained = !pq || poisoned || !exit_began() || drain_queue_for_exit(this);
    bool destroyed = poisoned;  // a forked child's backend calls nothing of the parent's
    std::lock_guard<std::mutex> lk(link->mu);
    if (pq && drained && !poisoned) {
      // queue_destroy drains pending work first (plugin.h).
      destroyed = AXL_CALL(device->backend, queue_destroy, pq) == AXL_SUCCESS;
    }
    link->queue = nullptr;
    // Host functions it never called it never will.
    if (destroyed) free_uncalled_host_funcs(*link);
  }
  abandon_open_completion(this);
  if (device && !is_default) release(device);
}

void Queue::note_submitter(uintptr_t me) {
  uintptr_t first = 0;
  if (owner.compare_exchange_strong(first, me)) return;  // the queue's first submitter
  // A second thread, marked before its first count: once its submissions
  // happened before the exit (it was joined, or synchronized with), the exit
  // drain sees the mark. One still submitting while the process exits gets
  // no promise either way, as on a serialised queue. A thread pointer is
  // reused only after its thread ended, when the old owner submits no more.
  if (first != me) shared.store(true);
}

axl_status queue_usable(Queue* q) { return q->device->backend->ensure_ready(); }

axl_status queue_create_internal(Device* d, bool is_default, Queue** out, uint32_t max_pending) {
  auto q = std::make_unique<Queue>();
  q->device = d;
  q->is_default = is_default;
  q->serialised = !d->backend->queue_thread_safe();
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

namespace {

struct HostSignal {
  uint64_t* address;
};

void signal_host_value(void* p) {
  auto* s = static_cast<HostSignal*>(p);
  __atomic_store_n(s->address, 1, __ATOMIC_RELEASE);
  delete s;
}

// The application's host function this thread is running, if any
// (run_host_func), so that a synchronize called from inside it fails at once
// on every backend: it would wait for itself. The cpu and virtual plugins
// refuse that too, but only on their own worker thread, which a bounded
// wait after exit began is not (it waits from a thread of its own); CUDA's
// host functions must not call the driver at all. Compared, never followed:
// the queue may be gone by the time the function returns.
thread_local const Queue* t_host_func_queue = nullptr;
thread_local const Device* t_host_func_device = nullptr;

}  // namespace

struct HostFuncCall {
  axl_host_callback fn;
  void* user_data;
  const Queue* queue;
  const Device* device;
  std::shared_ptr<QueueLink> link;  // whose list holds this call
  HostFuncCall* prev = nullptr;
  HostFuncCall* next = nullptr;
};

namespace {

void link_call(HostFuncCall* c) {
  std::lock_guard<std::mutex> lk(c->link->calls_mu);
  c->next = c->link->calls;
  if (c->next) c->next->prev = c;
  c->link->calls = c;
}

void unlink_call(HostFuncCall* c) {
  std::lock_guard<std::mutex> lk(c->link->calls_mu);
  if (c->prev)
    c->prev->next = c->next;
  else
    c->link->calls = c->next;
  if (c->next) c->next->prev = c->prev;
}

// Frees the calls the backend will never make (its queue is destroyed).
void free_uncalled_host_funcs(QueueLink& link) {
  HostFuncCall* c = nullptr;
  {
    std::lock_guard<std::mutex> lk(link.calls_mu);
    c = std::exchange(link.calls, nullptr);
  }
  while (c) delete std::exchange(c, c->next);
}

void run_host_func(void* p) {
  std::unique_ptr<HostFuncCall> c(static_cast<HostFuncCall*>(p));
  unlink_call(c.get());
  struct Restore {
    const Queue* q = t_host_func_queue;
    const Device* d = t_host_func_device;
    ~Restore() {
      t_host_func_queue = q;
      t_host_func_device = d;
    }
  } restore;
  t_host_func_queue = c->queue;
  t_host_func_device = c->device;
  c->fn(c->user_data);
}

}  // namespace

bool in_host_func_of(const Queue* q, const Device* d) {
  if (!t_host_func_device) [[likely]]
    return false;
  return q ? q == t_host_func_queue : d == t_host_func_device;
}

bool pending_behind_host_func(const Queue* q, Backend* b, axl_pevent pe) {
  return pe && in_host_func_of(q, nullptr) && AXL_CALL(b, event_query, pe) == AXL_ERROR_NOT_READY;
}

axl_status refuse_wait_for_itself(const char* what, bool device_wide) {
  return fail(AXL_ERROR_INVALID_STATE,
              "%s was called from a host function running on %s; it would wait for itself (a host "
              "function must not call blocking functions: axl_queue_enqueue_host_func)",
              what, device_wide ? "one of that device's queues" : "that queue");
}

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
    axl_status s = Submission::record_event(signaler, ev);
    if (!s) s = Submission::wait_event(waiter, ev);
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
    s = Submission::enqueue_host_fn(signaler, signal_host_value, sig);
    if (s) delete sig;
  }
  if (!s) s = Submission::wait_flag(waiter, pf, 1, nullptr);
  AXL_CALL(wb, flag_destroy, pf);  // deferred by the plugin until the wait ran
  return s;
}

}  // namespace axl::core

using namespace axl::core;

namespace {

axl_status check_range(Buffer* b, uint64_t offset, uint64_t bytes, const char* what) {
  if (bytes == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "%s: size_bytes is 0; expected > 0", what);
  if (offset > b->size || bytes > b->size - offset)
    return fail(AXL_ERROR_OUT_OF_RANGE,
                "%s: range [%llu, %llu) is past the end of a %llu-byte buffer", what,
                (unsigned long long)offset, (unsigned long long)(offset + bytes),
                (unsigned long long)b->size);
  return AXL_SUCCESS;
}

// ------------------------------------------------------------ fast paths --
// The enqueues an application makes most (a launch, a copy between host
// memory and a device buffer) first try a fast path: when every argument is
// valid and every buffer needs nothing of Submission::run but the body
// (Submission::needs_nothing_but_the_body), it enqueues the same op through
// the same Submission member run() would call, without building the
// Submission. Anything else (an argument the general path refuses and names,
// a tracked buffer, a buffer new to the queue, a staged or pinned copy, a
// local-memory or ninth argument) goes to the general path, from the start:
// a fast path changes nothing before it enqueues. The general paths are out
// of line, so the fast one keeps its values in registers
// (benchmarks/bench_enqueue, issue 16: core overhead).

// q, usable without a call to its backend.
__attribute__((always_inline)) inline Queue* fast_queue(axl_queue_t handle) {
  Queue* q = peek<Queue>(handle, Kind::queue);
  return q && q->device->backend->ready() ? q : nullptr;
}

// The buffer of a direct host copy on q: a byte range inside a device
// buffer of q's own device (not pinned: the general path picks its route).
__attribute__((always_inline)) inline Buffer* fast_host_copy_buffer(Queue* q, axl_buffer_t handle, uint64_t offset,
                                                                    uint64_t bytes, const void* host) {
  Buffer* b = peek<Buffer>(handle, Kind::buffer);
  if (!b || !host || bytes == 0 || offset > b->size || bytes > b->size - offset) return nullptr;
  if (b->device != q->device || b->pinned || !Submission::needs_nothing_but_the_body(b, q)) return nullptr;
  return b;
}

// A launch of up to kFastLaunchArgs buffer and scalar arguments, translated
// for the plugin into cfg and pargs: its queue and kernel when it may take
// the fast path, else {nullptr, nullptr}.
constexpr uint32_t kFastLaunchArgs = 8;
struct FastLaunch {
  Queue* q;
  Kernel* k;
};
__attribute__((always_inline)) inline FastLaunch prepare_fast_launch(axl_queue_t queue, axl_kernel_t kernel,
                                                                     const uint32_t* grid, const uint32_t* block,
                                                                     uint64_t shared_mem_bytes,
                                                                     const axl_launch_arg* args, uint32_t num_args,
                                                                     axl_launch_config& cfg, axl_kernel_arg* pargs) {
  Queue* const q = fast_queue(queue);
  Kernel* const k = peek<Kernel>(kernel, Kind::kernel);
  if (!q || !k || !grid || !block || num_args > kFastLaunchArgs || (num_args && !args)) return {};
  Device* const dev = q->device;
  if (k->device != dev) return {};
  // Each dimension >= 1, in one branch: x - 1 wraps past 2^32 only for 0.
  const uint64_t any_zero = (uint64_t(grid[0]) - 1) | (uint64_t(grid[1]) - 1) | (uint64_t(grid[2]) - 1) |
                            (uint64_t(block[0]) - 1) | (uint64_t(block[1]) - 1) | (uint64_t(block[2]) - 1);
  if (any_zero >> 32) return {};
  for (uint32_t i = 0; i < num_args; ++i) {
    const axl_launch_arg& a = args[i];
    if (a.kind == AXL_KERNEL_ARG_BUFFER) {
      Buffer* b = peek<Buffer>(a.buffer, Kind::buffer);
      if (!b || b->device != dev || !Submission::needs_nothing_but_the_body(b, q)) return {};
      pargs[i] = {AXL_ARG_DEVADDR, sizeof(axl_devaddr), &b->address};  // see the general path
    } else if (a.kind == AXL_KERNEL_ARG_SCALAR && a.value && a.size - 1u < 256u) {  // 1..256 bytes
      pargs[i] = {AXL_ARG_SCALAR, a.size, a.value};
    } else {
      return {};
    }
  }
  cfg.struct_size = sizeof cfg;
  memcpy(cfg.grid, grid, sizeof cfg.grid);
  memcpy(cfg.block, block, sizeof cfg.block);
  cfg.shared_mem_bytes = shared_mem_bytes;
  return {q, k};
}

}  // namespace

namespace axl::core {

std::string dev_name(Device* d) { return d->label + ":" + std::to_string(d->id) + " (" + d->backend->name + ")"; }

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
    Queue* q = nullptr;
    if (axl_status s = usable_queue(queue, &q)) return s;
    if (in_host_func_of(q, nullptr)) return refuse_wait_for_itself("axl_queue_synchronize", false);
    // Not under submit_mu: other threads may keep enqueueing while we wait.
    const uint64_t seen = q->submitted.load();
    bool gave_up = false;
    axl_status s = queue_synchronize_bounded(q, "axl_queue_synchronize", &gave_up);
    if (gave_up) return s;
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
    if (in_host_func_of(nullptr, d)) return refuse_wait_for_itself("axl_device_synchronize", true);
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
      bool gave_up = false;
      axl_status s = queue_synchronize_bounded(q, "axl_device_synchronize", &gave_up);
      if (!gave_up) q->note_synced(seen);
      if (s && !first) first = s;
      release(q);
    }
    return first ? first : after_synchronize(d);
  });
}

}  // extern "C"

namespace {

__attribute__((noinline)) axl_status copy_from_host_general(axl_queue_t queue, axl_buffer_t dst,
                                                            uint64_t dst_offset, const void* src,
                                                            uint64_t size_bytes) {
  return guard([&]() __attribute__((always_inline)) -> axl_status {
    Queue* q = nullptr;
    if (axl_status s = usable_queue(queue, &q)) return s;
    Buffer* d = as<Buffer>(dst, Kind::buffer, "destination buffer");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    if (!src) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_copy_from_host: src is NULL");
    if (axl_status s = check_range(d, dst_offset, size_bytes, "axl_queue_copy_from_host")) return s;
    Submission op(q);
    op.write(d);
    return op.run([&](Submission& o) { return o.copy_from_host(d, dst_offset, src, size_bytes); });
  });
}

__attribute__((noinline)) axl_status copy_to_host_general(axl_queue_t queue, void* dst, axl_buffer_t src,
                                                          uint64_t src_offset, uint64_t size_bytes) {
  return guard([&]() __attribute__((always_inline)) -> axl_status {
    Queue* q = nullptr;
    if (axl_status s = usable_queue(queue, &q)) return s;
    Buffer* sb = as<Buffer>(src, Kind::buffer, "source buffer");
    if (!sb) return AXL_ERROR_INVALID_HANDLE;
    if (!dst) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_copy_to_host: dst is NULL");
    if (axl_status s = check_range(sb, src_offset, size_bytes, "axl_queue_copy_to_host")) return s;
    Submission op(q);
    op.read(sb);
    return op.run([&](Submission& o) { return o.copy_to_host(dst, sb, src_offset, size_bytes); });
  });
}

}  // namespace

extern "C" {

AXL_API axl_status axl_queue_copy_from_host(axl_queue_t queue, axl_buffer_t dst, uint64_t dst_offset,
                                            const void* src, uint64_t size_bytes) {
  if (Queue* q = fast_queue(queue))
    if (Buffer* d = fast_host_copy_buffer(q, dst, dst_offset, size_bytes, src)) [[likely]]
      return guard([&] { return Submission::htod(q, d->address + dst_offset, src, size_bytes); });
  return copy_from_host_general(queue, dst, dst_offset, src, size_bytes);
}

AXL_API axl_status axl_queue_copy_to_host(axl_queue_t queue, void* dst, axl_buffer_t src,
                                          uint64_t src_offset, uint64_t size_bytes) {
  if (Queue* q = fast_queue(queue))
    if (Buffer* sb = fast_host_copy_buffer(q, src, src_offset, size_bytes, dst)) [[likely]]
      return guard([&] { return Submission::dtoh(q, dst, sb->address + src_offset, size_bytes); });
  return copy_to_host_general(queue, dst, src, src_offset, size_bytes);
}

AXL_API axl_status axl_queue_copy_buffer(axl_queue_t queue, axl_buffer_t dst, uint64_t dst_offset,
                                         axl_buffer_t src, uint64_t src_offset, uint64_t size_bytes) {
  return guard([&]() -> axl_status {
    Queue* q = nullptr;
    Buffer *d = nullptr, *sb = nullptr;
    if (axl_status s = copy_operands(queue, dst, src, &q, &d, &sb)) return s;
    if (axl_status s = check_range(d, dst_offset, size_bytes, "axl_queue_copy_buffer (destination)")) return s;
    if (axl_status s = check_range(sb, src_offset, size_bytes, "axl_queue_copy_buffer (source)")) return s;
    if (axl_status s = device_usable(d->device)) return s;
    if (axl_status s = device_usable(sb->device)) return s;
    Submission op(q);
    op.write(d);
    op.read(sb);
    return op.run([&](Submission& o) { return o.copy_bytes(d, dst_offset, sb, src_offset, size_bytes); });
  });
}

AXL_API axl_status axl_queue_copy(axl_queue_t queue, axl_buffer_t dst, axl_buffer_t src) {
  return guard([&]() -> axl_status {
    Buffer* d = as<Buffer>(dst, Kind::buffer, "destination buffer");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
    Buffer* sb = as<Buffer>(src, Kind::buffer, "source buffer");
    if (!sb) return AXL_ERROR_INVALID_HANDLE;
    if (d->size != sb->size)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_queue_copy: destination is %llu bytes but source is %llu bytes; sizes must be equal",
                  (unsigned long long)d->size, (unsigned long long)sb->size);
    return axl_queue_copy_buffer(queue, dst, 0, src, 0, d->size);
  });
}

AXL_API axl_status axl_queue_fill(axl_queue_t queue, axl_buffer_t dst, uint64_t offset,
                                  uint64_t size_bytes, uint32_t pattern, uint32_t pattern_size) {
  return guard([&]() -> axl_status {
    Queue* q = nullptr;
    if (axl_status s = usable_queue(queue, &q)) return s;
    Buffer* d = as<Buffer>(dst, Kind::buffer, "destination buffer");
    if (!d) return AXL_ERROR_INVALID_HANDLE;
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
    if (d->device != q->device && !(d->host && q->device->props.is_host))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_fill: buffer is on %s but the queue on %s",
                  dev_name(d->device).c_str(), dev_name(q->device).c_str());
    Submission op(q);
    op.write(d);
    return op.run([&](Submission& o) { return o.fill(d, offset, size_bytes, pattern, pattern_size); });
  });
}

AXL_API axl_status axl_queue_wait_queue(axl_queue_t queue, axl_queue_t other) {
  return guard([&]() -> axl_status {
    Queue* q = nullptr;
    if (axl_status s = usable_queue(queue, &q)) return s;
    Queue* o = as<Queue>(other, Kind::queue, "other queue");
    if (!o) return AXL_ERROR_INVALID_HANDLE;
    return queue_wait_internal(q, o);
  });
}

AXL_API axl_status axl_queue_enqueue_host_func(axl_queue_t queue, axl_host_callback fn, void* user_data) {
  return guard([&]() -> axl_status {
    Queue* q = nullptr;
    if (axl_status s = usable_queue(queue, &q)) return s;
    if (!fn) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_enqueue_host_func: fn is NULL");
    close_open_completion(q);  // fn may block the queue for as long as it likes
    auto* call = new HostFuncCall{fn, user_data, q, q->device, q->link};
    link_call(call);  // before the enqueue: the call may come at once
    const axl_status s = Submission::enqueue_host_fn(q, run_host_func, call);
    if (s != AXL_SUCCESS) {  // refused: never called
      unlink_call(call);
      delete call;
    }
    return s;
  });
}

AXL_API axl_status axl_queue_native_handle(axl_queue_t queue, uint64_t* out) {
  return guard([&]() -> axl_status {
    Queue* q = nullptr;
    if (axl_status s = usable_queue(queue, &q)) return s;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_native_handle: out is NULL");
    *out = 0;
    if (!q->device->backend->table.queue_get_native_handle) return AXL_SUCCESS;
    return AXL_CALL(q->device->backend, queue_get_native_handle, q->pq, out);
  });
}

}  // extern "C"

namespace {

__attribute__((noinline)) axl_status launch_general(axl_queue_t queue, axl_kernel_t kernel, const uint32_t grid[3],
                                                    const uint32_t block[3], uint64_t shared_mem_bytes,
                                                    const axl_launch_arg* args, uint32_t num_args) {
  // Inlined: called, the body reached every argument through the lambda's
  // captures in memory, about 30 instructions a launch (benchmarks/bench_enqueue).
  return guard([&]() __attribute__((always_inline)) -> axl_status {
    Queue* q = nullptr;
    if (axl_status s = usable_queue(queue, &q)) return s;
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
    std::unique_ptr<axl_kernel_arg[]> pargs_heap;
    axl_kernel_arg* pargs = pargs_inline;
    if (num_args > kInline) {
      pargs_heap.reset(new axl_kernel_arg[num_args]);
      pargs = pargs_heap.get();
    }
    // Stamps join the queue's open completion: consecutive launches share
    // one event, recorded only if a host wait needs it.
    Submission op(q, Submission::Stamps::lazy);
    for (uint32_t i = 0; i < num_args; ++i) {
      const axl_launch_arg& a = args[i];
      if (a.kind == AXL_KERNEL_ARG_BUFFER) {
        Buffer* b = as<Buffer>(a.buffer, Kind::buffer, "kernel argument buffer");
        if (!b) return AXL_ERROR_INVALID_HANDLE;
        if (b->device != q->device && !(b->host && (q->device->props.is_host || b->pinned)))
          return fail(AXL_ERROR_INVALID_ARGUMENT, "kernel argument %u is a buffer on %s; the launch is on %s", i,
                      dev_name(b->device).c_str(), dev_name(q->device).c_str());
        // The buffer's own field, constant while it lives, not a copy on
        // the stack: the plugin reads it at once, and a load of a store
        // still in flight, as wide as the plugin's copy of argument bytes
        // makes it, cost 3.4 ns a launch (benchmarks/bench_enqueue).
        pargs[i] = {AXL_ARG_DEVADDR, sizeof(axl_devaddr), &b->address};
        // The ABI does not say which arguments a kernel writes: each counts
        // as written, so the launch waits for other queues' writers of it
        // and host reads and writes wait for the launch.
        op.write(b);
      } else if (a.kind == AXL_KERNEL_ARG_SCALAR) {
        if (!a.value || a.size == 0 || a.size > 256)
          return fail(AXL_ERROR_INVALID_ARGUMENT,
                      "kernel argument %u: scalar of %u bytes at %p; expected 1..256 bytes at a non-NULL value", i,
                      a.size, a.value);
        pargs[i] = {AXL_ARG_SCALAR, a.size, a.value};
      } else if (a.kind == AXL_KERNEL_ARG_LOCAL) {
        if (a.size == 0)
          return fail(AXL_ERROR_INVALID_ARGUMENT, "kernel argument %u: local memory of 0 bytes", i);
        // A plugin of minor 2 or older does not know the kind.
        if (q->device->backend->abi_minor < 3)
          return fail(AXL_ERROR_UNSUPPORTED,
                      "kernel argument %u: local memory needs plugin ABI 1.3; backend '%s' answered 1.%u", i,
                      q->device->backend->name.c_str(), q->device->backend->abi_minor);
        pargs[i] = {AXL_ARG_LOCAL, a.size, nullptr};
      } else {
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    "kernel argument %u: kind %d is not BUFFER(0), SCALAR(1) or LOCAL(2)", i, a.kind);
      }
    }
    axl_launch_config cfg{};
    cfg.struct_size = sizeof cfg;
    memcpy(cfg.grid, grid, sizeof cfg.grid);
    memcpy(cfg.block, block, sizeof cfg.block);
    cfg.shared_mem_bytes = shared_mem_bytes;
    return op.run([&](Submission& o) { return o.launch(k, cfg, pargs, num_args); });
  });
}

}  // namespace

extern "C" {

AXL_API axl_status axl_queue_launch(axl_queue_t queue, axl_kernel_t kernel, const uint32_t grid[3],
                                    const uint32_t block[3], uint64_t shared_mem_bytes,
                                    const axl_launch_arg* args, uint32_t num_args) {
  axl_launch_config cfg;
  axl_kernel_arg pargs[kFastLaunchArgs];
  const FastLaunch f = prepare_fast_launch(queue, kernel, grid, block, shared_mem_bytes, args, num_args, cfg, pargs);
  if (f.q) [[likely]]
    return guard([&] { return Submission::launch_on(f.q, f.k, cfg, pargs, num_args); });
  return launch_general(queue, kernel, grid, block, shared_mem_bytes, args, num_args);
}

}  // extern "C"
