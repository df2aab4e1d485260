// Launch-trace collection (MAX's begin_launch_trace/take_launch_trace).
// Plugins report each operation on the enqueuing thread; the core stamps a
// global sequence number, maps queues to stream indices in first-seen order
// and computes the semantic hash, so every backend traces alike.
#include <unordered_map>

#include "internal.hpp"
#include "profile.hpp"
#include "spin_lock.hpp"
#include "trace_log.hpp"

namespace axl::core {
namespace {

struct QueueTag {
  uint32_t device_id;
  bool is_host;
};

// The queue the last record came from (a trace is mostly one queue's
// work), so that a record normally skips the map lookup.
struct LastQueue {
  bool valid = false;
  uint64_t trace_id = 0;
  QueueTag tag{};
};

struct TraceState {
  std::atomic<bool> active{false};
  // Held by every record: a spin lock, see spin_lock.hpp.
  SpinLock mu;
  bool include_host = false;
  TraceLog log;
  std::unordered_map<uint64_t, QueueTag> queues;  // all queues ever created
  LastQueue last;  // reset whenever `queues` changes
  std::atomic<uint64_t> next_queue_id{1};
};

// Leaked: plugins may report during exit. Made when the library loads, before
// any plugin is: a function-local static cost every record a guard check.
TraceState& g_state = *new TraceState();
TraceState& state() { return g_state; }

// The tag of `queue_trace_id`; makes it the cached last queue.
QueueTag tag_of(TraceState& t, uint64_t queue_trace_id) {
  if (t.last.valid && t.last.trace_id == queue_trace_id) return t.last.tag;
  auto qi = t.queues.find(queue_trace_id);
  t.last = LastQueue{true, queue_trace_id, qi == t.queues.end() ? QueueTag{0, false} : qi->second};
  return t.last.tag;
}

// Whether backend `b` must report launches: the launch trace wants it, or the
// profiler records launches (then every backend, host ones included).
bool tracing_wanted(TraceState& t, const Backend* b) {
  if (profile_launches_wanted()) return true;
  if (!t.active.load()) return false;
  std::lock_guard<SpinLock> lk(t.mu);
  return t.include_host || !b->is_host();
}

void sync_tracing_all() {
  TraceState& t = state();
  for (Backend* b : registry().backends) {
    if (b->init_state.load() != 1 || !b->table.backend_set_tracing) continue;
    bool want = tracing_wanted(t, b);
    if (b->tracing.exchange(want) != want) AXL_CALL(b, backend_set_tracing, want ? 1 : 0);
  }
}

struct TraceObj : Object {
  explicit TraceObj(std::unique_ptr<TraceRecording> r) : Object(Kind::trace), rec(std::move(r)) {}
  std::unique_ptr<TraceRecording> rec;
};

}  // namespace

uint64_t trace_next_queue_id() { return state().next_queue_id.fetch_add(1); }

void trace_register_queue(uint64_t trace_id, uint32_t device_id, bool is_host) {
  TraceState& t = state();
  std::lock_guard<SpinLock> lk(t.mu);
  t.queues[trace_id] = QueueTag{device_id, is_host};
  t.last = LastQueue{};
}

void trace_on_backend_ready(Backend* b) {
  if (!b->table.backend_set_tracing || !tracing_wanted(state(), b)) return;
  b->tracing.store(true);
  AXL_CALL(b, backend_set_tracing, 1);
}

void trace_refresh_backends() { sync_tracing_all(); }

void host_trace_record(void* ctx, const axl_trace_record* rec) {
  (void)ctx;
  TraceState& t = state();
  bool profiling = profile_launches_wanted();
  if (!rec || (!profiling && !t.active.load(std::memory_order_relaxed))) return;
  if (rec->struct_size < offsetof(axl_trace_record, args_hash)) return;
  std::lock_guard<SpinLock> lk(t.mu);
  const QueueTag tag = tag_of(t, rec->queue_trace_id);
  if (profiling) profile_record_launch(*rec, tag.device_id, tag.is_host);
  if (!t.active.load(std::memory_order_relaxed)) return;
  if (tag.is_host && !t.include_host) return;
  // The slot may hold an entry of an earlier trace: park writes every field
  // that finish_entries reads.
  park(t.log.append(), *rec, t.log.intern(rec->name ? rec->name : ""), tag.device_id);
}

}  // namespace axl::core

using namespace axl::core;

extern "C" {

AXL_API axl_status axl_launch_trace_begin(uint32_t flags) {
  return guard([&]() -> axl_status {
    if (flags & ~uint32_t(AXL_LAUNCH_TRACE_INCLUDE_HOST))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_launch_trace_begin: unknown flags 0x%x", flags);
    if (axl_status s = ensure_init()) return s;
    TraceState& t = state();
    bool include_host = flags & AXL_LAUNCH_TRACE_INCLUDE_HOST;
    {
      std::lock_guard<SpinLock> lk(t.mu);
      t.log.clear();
      t.include_host = include_host;
      t.active.store(true);
    }
    sync_tracing_all();
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_launch_trace_take(axl_launch_trace_t* out) {
  return guard([&]() -> axl_status {
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_launch_trace_take: out_trace is NULL");
    TraceState& t = state();
    TraceLog log;
    bool was_active;
    {
      std::lock_guard<SpinLock> lk(t.mu);
      was_active = t.active.exchange(false);
      std::swap(log, t.log);
    }
    if (was_active) sync_tracing_all();
    // Outside the lock: flattening and hashing a long trace take a while.
    std::unique_ptr<TraceRecording> rec = log.take();
    finish_entries(rec->entries);
    {
      std::lock_guard<SpinLock> lk(t.mu);
      t.log.adopt_spares(log);
    }
    auto obj = std::make_unique<TraceObj>(std::move(rec));
    *out = to_handle<axl_launch_trace_t>(obj.release());
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_launch_trace_size(axl_launch_trace_t trace, size_t* out) {
  return guard([&]() -> axl_status {
    auto* t = as<TraceObj>(trace, Kind::trace, "launch trace");
    if (!t) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_launch_trace_size: out_count is NULL");
    *out = t->rec->entries.size();
    return AXL_SUCCESS;
  });
}

AXL_API const axl_launch_trace_entry* axl_launch_trace_entries(axl_launch_trace_t trace) {
  auto* t = find<TraceObj>(trace, Kind::trace);
  if (!t) return nullptr;
  return t->rec->entries.data();
}

AXL_API axl_status axl_launch_trace_release(axl_launch_trace_t trace) {
  return release_handle(trace, Kind::trace, "launch trace");
}

}  // extern "C"
