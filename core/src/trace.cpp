// Launch-trace collection (MAX's begin_launch_trace/take_launch_trace).
// Plugins report each operation on the enqueuing thread; the core stamps a
// global sequence number, maps queues to stream indices in first-seen order
// and computes the semantic hash, so every backend traces alike.
#include <cstring>
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

// The semantic hash: deterministic and address-free by construction. Each
// step mixes a whole 64-bit word (xor, multiply, fold the high half down),
// so an entry takes about a dozen steps where byte-at-a-time FNV-1a took
// about 80 (15% of a traced launch); and it runs at take (take_finish), not
// per launch. Nothing stores these values across processes (they are
// compared within a program), so the function may change.
struct Hasher {
  uint64_t h = 0xcbf29ce484222325ull;
  void word(uint64_t w) {
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 32;
  }
  void pair(uint32_t lo, uint32_t hi) { word(lo | uint64_t{hi} << 32); }
  // `n` bytes, eight at a time, then their count (so "ab" + "" and "a" + "b"
  // differ).
  void bytes(const char* p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      word(w);
    }
    if (i < n) {
      uint64_t w = 0;
      std::memcpy(&w, p + i, n - i);
      word(w);
    }
    word(n);
  }
};

// What a record leaves for take to finish. A record copies the plugin's
// fields as they come, whatever the kind (a launch's record has its copy
// and fill fields zero anyway), parking the queue's trace id in `sequence`
// and the plugin's args_hash in `semantic_hash`: each field chosen by kind,
// the stream index and the hash cost a traced launch about 60 instructions
// more when the record did them (callgrind, bench_trace_on).
void park(axl_launch_trace_entry& e, const axl_trace_record& rec, const char* name, uint32_t device_id) {
  e.kind = rec.kind;
  e.memcpy_kind = rec.memcpy_kind;
  e.name = name;
  e.semantic_hash = rec.args_hash;
  std::memcpy(e.grid, rec.grid, sizeof e.grid);
  std::memcpy(e.block, rec.block, sizeof e.block);
  e.shared_mem_bytes = rec.shared_mem_bytes;
  e.device_id = device_id;
  e.memcpy_byte_size = rec.memcpy_bytes;
  e.memset_byte_size = rec.memset_bytes;
  e.memset_value = rec.memset_value;
  e.memset_value_size = rec.memset_value_size;
  e.sequence = rec.queue_trace_id;
}

// Stream indices in first-seen order, from the parked queue ids in enqueue
// order. The last queue is cached: a trace is mostly one queue's work.
class StreamIndex {
 public:
  uint32_t of(uint64_t queue_trace_id) {
    if (queue_trace_id == last_id_ && last_valid_) return last_;
    auto [it, fresh] = index_.try_emplace(queue_trace_id, static_cast<uint32_t>(index_.size()));
    (void)fresh;
    last_id_ = queue_trace_id;
    last_valid_ = true;
    return last_ = it->second;
  }

 private:
  std::unordered_map<uint64_t, uint32_t> index_;
  uint64_t last_id_ = 0;
  uint32_t last_ = 0;
  bool last_valid_ = false;
};

// Turns parked entries (park) into what axl_launch_trace_entries returns:
// fields that do not belong to an entry's kind zeroed, the stream index, the
// sequence number and the semantic hash. At take, not per launch.
void take_finish(std::vector<axl_launch_trace_entry>& entries) {
  StreamIndex streams;
  const char* last_name = nullptr;  // names are interned: runs share a pointer
  uint64_t name_hash = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    axl_launch_trace_entry& e = entries[i];
    const bool launch = e.kind == AXL_TRACE_KERNEL_LAUNCH;
    const bool copy = e.kind == AXL_TRACE_MEMCPY;
    const bool fill = e.kind == AXL_TRACE_MEMSET;
    e.struct_size = sizeof e;
    if (!copy) {
      e.memcpy_kind = AXL_MEMCPY_NONE;
      e.memcpy_byte_size = 0;
    }
    if (!launch) {
      e.semantic_hash = 0;
      for (int d = 0; d < 3; ++d) e.grid[d] = e.block[d] = 0;
      e.shared_mem_bytes = 0;
    }
    if (!fill) {
      e.memset_byte_size = 0;
      e.memset_value = 0;
      e.memset_value_size = 0;
    }
    e.stream_index = streams.of(e.sequence);
    e.sequence = i;

    if (e.name != last_name) {
      Hasher n;
      n.bytes(e.name, std::strlen(e.name));
      last_name = e.name;
      name_hash = n.h;
    }
    Hasher h;
    h.pair(static_cast<uint32_t>(e.kind), static_cast<uint32_t>(e.memcpy_kind));
    h.word(name_hash);
    h.pair(e.grid[0], e.grid[1]);
    h.pair(e.grid[2], e.block[0]);
    h.pair(e.block[1], e.block[2]);
    h.word(e.shared_mem_bytes);
    h.word(e.memcpy_byte_size);
    h.word(e.memset_byte_size);
    h.pair(e.memset_value, e.memset_value_size);
    h.word(e.semantic_hash);  // the launch's args_hash, 0 for copies and fills
    e.semantic_hash = h.h ? h.h : 1;  // non-zero, as MAX's tests expect
  }
}

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
  // that take_finish reads.
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
    take_finish(rec->entries);
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
