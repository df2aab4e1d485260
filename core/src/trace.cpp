// Launch-trace collection (MAX's begin_launch_trace/take_launch_trace).
// Plugins report each operation on the enqueuing thread; the core stamps a
// global sequence number, maps queues to stream indices in first-seen order
// and computes the semantic hash, so every backend traces alike.
#include <cstring>
#include <unordered_map>

#include "internal.hpp"
#include "profile.hpp"

namespace axl::core {
namespace {

struct QueueTag {
  uint32_t device_id;
  bool is_host;
};

struct TraceState {
  std::atomic<bool> active{false};
  std::mutex mu;
  bool include_host = false;
  std::vector<axl_launch_trace_entry> entries;
  std::vector<std::string> names;  // parallel to entries; owns name strings
  std::unordered_map<uint64_t, uint32_t> stream_index;
  std::unordered_map<uint64_t, QueueTag> queues;  // all queues ever created
  std::atomic<uint64_t> next_queue_id{1};
};

TraceState& state() {
  static TraceState* t = new TraceState();  // leaked: plugins may report during exit
  return *t;
}

// FNV-1a, 64-bit: deterministic and address-free by construction.
struct Hasher {
  uint64_t h = 1469598103934665603ull;
  void bytes(const void* p, size_t n) {
    auto* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  }
  template <typename T>
  void value(T v) { bytes(&v, sizeof v); }
};

// Whether backend `b` must report launches: the launch trace wants it, or the
// profiler records launches (then every backend, host ones included).
bool tracing_wanted(TraceState& t, const Backend* b) {
  if (profile_launches_wanted()) return true;
  if (!t.active.load()) return false;
  std::lock_guard<std::mutex> lk(t.mu);
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
  TraceObj() : Object(Kind::trace) {}
  std::vector<axl_launch_trace_entry> entries;
  std::vector<std::string> names;
};

}  // namespace

uint64_t trace_next_queue_id() { return state().next_queue_id.fetch_add(1); }

void trace_register_queue(uint64_t trace_id, uint32_t device_id, bool is_host) {
  TraceState& t = state();
  std::lock_guard<std::mutex> lk(t.mu);
  t.queues[trace_id] = QueueTag{device_id, is_host};
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
  std::lock_guard<std::mutex> lk(t.mu);
  auto qi = t.queues.find(rec->queue_trace_id);
  QueueTag tag = qi == t.queues.end() ? QueueTag{0, false} : qi->second;
  if (profiling) profile_record_launch(*rec, tag.device_id, tag.is_host);
  if (!t.active.load(std::memory_order_relaxed)) return;
  if (tag.is_host && !t.include_host) return;
  axl_launch_trace_entry e{};
  e.struct_size = sizeof e;
  e.kind = rec->kind;
  e.memcpy_kind = rec->kind == AXL_TRACE_MEMCPY ? rec->memcpy_kind : AXL_MEMCPY_NONE;
  if (rec->kind == AXL_TRACE_KERNEL_LAUNCH) {
    memcpy(e.grid, rec->grid, sizeof e.grid);
    memcpy(e.block, rec->block, sizeof e.block);
    e.shared_mem_bytes = rec->shared_mem_bytes;
  } else if (rec->kind == AXL_TRACE_MEMCPY) {
    e.memcpy_byte_size = rec->memcpy_bytes;
  } else if (rec->kind == AXL_TRACE_MEMSET) {
    e.memset_byte_size = rec->memset_bytes;
    e.memset_value = rec->memset_value;
    e.memset_value_size = rec->memset_value_size;
  }
  auto [it, fresh] = t.stream_index.try_emplace(rec->queue_trace_id,
                                                static_cast<uint32_t>(t.stream_index.size()));
  (void)fresh;
  e.stream_index = it->second;
  e.device_id = tag.device_id;
  e.sequence = t.entries.size();
  std::string name = rec->name ? rec->name : "";
  Hasher h;
  h.value(e.kind);
  h.value(e.memcpy_kind);
  h.bytes(name.data(), name.size());
  h.bytes(e.grid, sizeof e.grid);
  h.bytes(e.block, sizeof e.block);
  h.value(e.shared_mem_bytes);
  h.value(e.memcpy_byte_size);
  h.value(e.memset_byte_size);
  h.value(e.memset_value);
  h.value(e.memset_value_size);
  h.value(rec->kind == AXL_TRACE_KERNEL_LAUNCH ? rec->args_hash : uint64_t{0});
  e.semantic_hash = h.h ? h.h : 1;  // non-zero, as MAX's tests expect
  t.entries.push_back(e);
  t.names.push_back(std::move(name));
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
      std::lock_guard<std::mutex> lk(t.mu);
      t.entries.clear();
      t.names.clear();
      t.stream_index.clear();
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
    auto obj = std::make_unique<TraceObj>();
    bool was_active;
    {
      std::lock_guard<std::mutex> lk(t.mu);
      was_active = t.active.exchange(false);
      obj->entries.swap(t.entries);
      obj->names.swap(t.names);
      t.stream_index.clear();
    }
    if (was_active) sync_tracing_all();
    for (size_t i = 0; i < obj->entries.size(); ++i) obj->entries[i].name = obj->names[i].c_str();
    *out = to_handle<axl_launch_trace_t>(obj.release());
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_launch_trace_size(axl_launch_trace_t trace, size_t* out) {
  return guard([&]() -> axl_status {
    auto* t = as<TraceObj>(trace, Kind::trace, "launch trace");
    if (!t) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_launch_trace_size: out_count is NULL");
    *out = t->entries.size();
    return AXL_SUCCESS;
  });
}

AXL_API const axl_launch_trace_entry* axl_launch_trace_entries(axl_launch_trace_t trace) {
  auto* t = find<TraceObj>(trace, Kind::trace);
  if (!t) return nullptr;
  return t->entries.data();
}

AXL_API axl_status axl_launch_trace_release(axl_launch_trace_t trace) {
  return release_handle(trace, Kind::trace, "launch trace");
}

}  // extern "C"
