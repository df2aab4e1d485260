// Profiler spans (axl_profile_*; MAX's max.profiler Trace): the level switch,
// the per-thread span stacks, the in-process collector and the fan-out to the
// sinks (profile_tools.cpp: NVTX, roctx; profile_json.cpp: the Chrome trace).
//
// The level lives in one exported int32 so that axl.hpp's scoped range and
// every entry point test it with a single relaxed load when profiling is off.
#include "profile.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <exception>
#include <iterator>
#include <map>
#include <mutex>
#include <unordered_map>

#include "internal.hpp"

namespace axl::core {
namespace {

// The level, read with one relaxed load on every span. Not an exported data
// symbol: a program linked against one (non-PIE) would get a copy relocation
// that fixes its size and address into the executable; applications reach
// it through axl_profile_level_address() instead.
int32_t g_level_word = AXL_PROFILE_OFF;

int32_t level() { return __atomic_load_n(&g_level_word, __ATOMIC_RELAXED); }

struct ProfileState {
  std::mutex mu;  // output, collected
  std::string output;
  std::vector<ProfileRecord> collected;
  EventCap collect_cap{"the collector", "counted when the collection is taken"};  // restarted by collector_start
  std::atomic<bool> json_on{false};
  std::atomic<bool> collector_on{false};
  std::atomic<bool> launches{false};
  pid_t output_owner = 0;  // the process that set the output
  std::terminate_handler previous_terminate = nullptr;
  bool terminate_installed = false;
};

ProfileState& pstate() {
  static ProfileState* s = new ProfileState();  // leaked: spans close during exit
  return *s;
}

uint64_t os_thread_id() {
  thread_local uint64_t id = static_cast<uint64_t>(syscall(SYS_gettid));
  return id;
}

// Records one event in every recording sink.
void emit(ProfileRecord&& r, bool name_thread) {
  ProfileState& s = pstate();
  bool json = s.json_on.load(std::memory_order_relaxed);
  bool coll = s.collector_on.load(std::memory_order_relaxed);
  if (!json && !coll) return;
  if (json) {
    if (name_thread) {
      thread_local bool named = false;
      if (!named) {
        char buf[64] = {0};
        pthread_getname_np(pthread_self(), buf, sizeof buf);
        std::string n = buf[0] ? buf : "thread";
        if (r.thread_id == static_cast<uint64_t>(getpid())) n = "main (" + n + ")";
        json_name_thread(r.thread_id, n + " [" + std::to_string(r.thread_id) + "]");
        named = true;
      }
    }
    json_add(r);
  }
  if (coll) {
    std::lock_guard<std::mutex> lk(s.mu);
    if (!s.collector_on.load(std::memory_order_relaxed)) return;
    if (!s.collect_cap.admit(s.collected.size())) return;
    s.collected.push_back(std::move(r));
  }
}

struct OpenSpan {
  std::string name;
  uint32_t color;
  uint64_t start_ns;
};

bool sinks_recording() {
  ProfileState& s = pstate();
  return s.json_on.load(std::memory_order_relaxed) || s.collector_on.load(std::memory_order_relaxed);
}

void close_top(std::vector<OpenSpan>& stack) {
  OpenSpan o = std::move(stack.back());
  stack.pop_back();
  tools_pop();
  if (o.start_ns == 0) return;  // opened while nothing recorded: not timed
  ProfileRecord r;
  r.kind = AXL_PROFILE_EVENT_SPAN;
  r.color = o.color;
  r.thread_id = os_thread_id();
  r.depth = static_cast<uint32_t>(stack.size());
  r.start_ns = o.start_ns;
  r.end_ns = profile_now_ns();
  r.name = std::move(o.name);
  emit(std::move(r), true);
}

// The calling thread's open spans. A thread that ends with spans open closes
// them then, so a trace never loses a span to a missing pop.
struct ThreadSpans {
  std::vector<OpenSpan> stack;
  ~ThreadSpans() {
    try {
      while (!stack.empty()) close_top(stack);
    } catch (...) {
    }
  }
};

ThreadSpans& thread_spans() {
  thread_local ThreadSpans t;
  return t;
}

uint32_t opaque(uint32_t argb) { return (argb & 0xFF000000u) ? argb : (argb | 0xFF000000u); }

// Case-insensitive: "1", "true", "yes", "on" are ON, "detailed" DETAILED.
int32_t parse_env_level(const char* v) {
  if (!v) return AXL_PROFILE_OFF;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "detailed") return AXL_PROFILE_DETAILED;
  if (s == "1" || s == "true" || s == "yes" || s == "on") return AXL_PROFILE_ON;
  return AXL_PROFILE_OFF;
}

// Launch records flow only while someone records them at a level other
// than OFF; backends are told when that changes.
void refresh_launches(bool tell_backends) {
  ProfileState& s = pstate();
  bool want = level() != AXL_PROFILE_OFF &&
              (s.json_on.load() || s.collector_on.load());
  if (s.launches.exchange(want) != want && tell_backends) trace_refresh_backends();
}

// A fork()ed child that exits normally would otherwise replace the
// parent's file with its copy of the parent's events: only the process that
// set the output writes it at exit (an explicit flush always writes).
void write_at_exit() {
  ProfileState& s = pstate();
  std::string path;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    if (s.output_owner != getpid()) return;
    path = s.output;
  }
  if (path.empty()) return;
  // stderr rather than spdlog: at exit the logger may already be destroyed.
  if (int err = json_write(path))
    fprintf(stderr, "axl: could not write the profile %s: %s\n", path.c_str(), strerror(err));
}

// std::terminate does not unwind, so the calling thread's spans are closed
// here (ending now) before the file is written; skipped if a sink's lock is
// held, since the failing thread may be the one holding it.
[[noreturn]] void on_terminate() {
  ProfileState& s = pstate();
  if (s.mu.try_lock()) {
    std::string path = s.output;
    s.mu.unlock();
    if (!path.empty() && json_idle()) {
      try {
        auto& stack = thread_spans().stack;
        while (!stack.empty()) close_top(stack);
      } catch (...) {
      }
      json_write_if_idle(path);
    }
  }
  if (s.previous_terminate) s.previous_terminate();
  abort();
}

// Under s.mu. The placeholders are expanded once, here, so that
// axl_profile_get_output names the file that will be written.
void set_output_locked(ProfileState& s, const char* path) {
  s.output = path ? profile_expand_output(path) : "";
  s.output_owner = getpid();
  s.json_on.store(!s.output.empty());
  if (!s.output.empty() && !s.terminate_installed) {
    s.terminate_installed = true;
    s.previous_terminate = std::set_terminate(on_terminate);
  }
}

// Read once, when libaxl.so is loaded, so the hot path never calls getenv.
__attribute__((constructor)) void profile_from_env() {
  __atomic_store_n(&g_level_word, parse_env_level(env("AXL_ENABLE_PROFILING")),
                   __ATOMIC_RELAXED);
  ProfileState& s = pstate();
  {
    std::lock_guard<std::mutex> lk(s.mu);
    set_output_locked(s, env("AXL_PROFILE_OUTPUT"));
  }
  refresh_launches(false);  // no backend is loaded yet
  atexit(write_at_exit);
}

struct EventsObj : Object {
  EventsObj() : Object(Kind::profile_events) {}
  std::vector<axl_profile_event> events;
  std::vector<std::string> names;
};

// Where each queue's device intervals were drawn to: event record time ->
// the device end drawn for the interval that ended at that event. A device
// runs one queue's work in order, so an event recorded later on a queue is
// reached no earlier than one recorded before it; the host record time of
// the start event alone does not say that (a large copy is recorded, then a
// small one microseconds later, while the large one runs for milliseconds).
struct DeviceAnchors {
  std::mutex mu;
  std::unordered_map<uint64_t, std::map<uint64_t, uint64_t>> by_queue;
};
DeviceAnchors& device_anchors() {
  static auto* a = new DeviceAnchors;  // never destroyed: exit-time writers
  return *a;
}
// Bounds the memory of a long-running profile: old anchors are only needed
// for intervals that start before them, which come rarely that late.
constexpr size_t kAnchorsPerQueue = 4096;

// The start to draw [start, start + elapsed_ns] at.
uint64_t anchor_device_interval(uint64_t queue_id, uint64_t start_recorded_ns, uint64_t end_recorded_ns,
                                uint64_t elapsed_ns) {
  DeviceAnchors& a = device_anchors();
  std::lock_guard<std::mutex> lk(a.mu);
  std::map<uint64_t, uint64_t>& ends = a.by_queue[queue_id];
  uint64_t start = start_recorded_ns;
  // The latest interval drawn ending at or before the start event.
  auto it = ends.upper_bound(start_recorded_ns);
  if (it != ends.begin()) start = std::max(start, std::prev(it)->second);
  uint64_t& end = ends[end_recorded_ns];
  end = std::max(end, start + elapsed_ns);
  if (ends.size() > kAnchorsPerQueue) ends.erase(ends.begin());
  return start;
}

}  // namespace

uint32_t profile_max_events() {
  return env_u32("AXL_PROFILE_MAX_EVENTS", 0, UINT32_MAX, kProfileMaxEventsDefault, "a count of events (0: no limit)");
}

bool EventCap::admit(size_t held) {
  if (!read_) restart();
  if (max_ == 0 || held < max_) return true;
  if (dropped_++ == 0)
    logf(AXL_LOG_WARN, "profiler: %s holds %u events (AXL_PROFILE_MAX_EVENTS); later events are dropped (%s)", sink_,
         max_, counted_);
  return false;
}

uint64_t profile_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool profile_launches_wanted() { return pstate().launches.load(std::memory_order_relaxed); }

bool profile_recording() {
  ProfileState& s = pstate();
  return level() != AXL_PROFILE_OFF && (s.json_on.load(std::memory_order_relaxed) ||
                                        s.collector_on.load(std::memory_order_relaxed));
}

void profile_record_launch(const axl_trace_record& rec, uint32_t device_id, bool is_host) {
  ProfileRecord r;
  r.kind = AXL_PROFILE_EVENT_LAUNCH;
  r.thread_id = os_thread_id();
  r.queue_id = rec.queue_trace_id;
  r.launch_kind = rec.kind;
  r.start_ns = r.end_ns = profile_now_ns();
  r.bytes = rec.kind == AXL_TRACE_MEMCPY   ? rec.memcpy_bytes
            : rec.kind == AXL_TRACE_MEMSET ? rec.memset_bytes
                                           : 0;
  r.device_id = device_id;
  r.host_queue = is_host;
  r.name = rec.name ? rec.name : "";
  emit(std::move(r), false);
}

void profile_record_device(uint64_t queue_id, uint32_t device_id, bool is_host, uint64_t start_recorded_ns,
                           uint64_t end_recorded_ns, float elapsed_ms) {
  if (!profile_recording() || elapsed_ms < 0) return;
  const uint64_t elapsed_ns = static_cast<uint64_t>(static_cast<double>(elapsed_ms) * 1e6);
  const uint64_t start_ns = anchor_device_interval(queue_id, start_recorded_ns, end_recorded_ns, elapsed_ns);
  ProfileRecord r;
  r.kind = AXL_PROFILE_EVENT_DEVICE;
  r.thread_id = os_thread_id();
  r.queue_id = queue_id;
  r.start_ns = start_ns;
  r.end_ns = start_ns + elapsed_ns;
  r.device_id = device_id;
  r.host_queue = is_host;
  r.name = "device interval";
  emit(std::move(r), false);
}

}  // namespace axl::core

using namespace axl::core;

extern "C" {

AXL_API int32_t axl_profile_level(void) { return level(); }

AXL_API const int32_t* axl_profile_level_address(void) { return &g_level_word; }

AXL_API axl_status axl_profile_set_level(int32_t lvl) {
  return guard([&]() -> axl_status {
    if (lvl != AXL_PROFILE_OFF && lvl != AXL_PROFILE_ON && lvl != AXL_PROFILE_DETAILED)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_profile_set_level: %d is not AXL_PROFILE_OFF (0), AXL_PROFILE_ON (1) or "
                  "AXL_PROFILE_DETAILED (2)", lvl);
    __atomic_store_n(&g_level_word, lvl, __ATOMIC_RELAXED);
    refresh_launches(true);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_profile_set_level_name(const char* name) {
  if (!name)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "profiling state is NULL; expected one of 'off', 'on', 'detailed'");
  if (strcmp(name, "off") == 0) return axl_profile_set_level(AXL_PROFILE_OFF);
  if (strcmp(name, "on") == 0) return axl_profile_set_level(AXL_PROFILE_ON);
  if (strcmp(name, "detailed") == 0) return axl_profile_set_level(AXL_PROFILE_DETAILED);
  return fail(AXL_ERROR_INVALID_ARGUMENT,
              "invalid profiling state '%s'; expected one of 'off', 'on', 'detailed'", name);
}

AXL_API uint32_t axl_profile_color(const char* name) {
  struct Named {
    const char* name;
    uint32_t argb;
  };
  // MAX's Mojo colour table (gpu/host/_tracing.mojo), made opaque.
  static const Named table[] = {
      {"modular_purple", 0xFFB5BAF5u}, {"blue", 0xFF0000FFu},  {"green", 0xFF008000u},
      {"orange", 0xFFFFA500u},         {"purple", 0xFF800080u}, {"red", 0xFFFF0000u},
      {"white", 0xFFFFFFFFu},          {"yellow", 0xFFFFFF00u},
  };
  if (name)
    for (const Named& n : table)
      if (strcmp(n.name, name) == 0) return n.argb;
  return table[0].argb;
}

AXL_API int32_t axl_profile_push(const char* message, uint32_t argb) {
  if (level() == AXL_PROFILE_OFF) return 0;
  try {
    const char* m = message ? message : "";
    argb = opaque(argb);
    // The clock is read only when a recording sink listens: with NVTX or
    // roctx alone the tool keeps its own time.
    thread_spans().stack.push_back(OpenSpan{m, argb, sinks_recording() ? profile_now_ns() : 0});
    tools_push(m, argb);
    return 1;
  } catch (...) {
    return 0;  // out of memory: no span, and the caller will not pop
  }
}

AXL_API axl_status axl_profile_pop(void) {
  return guard([&]() -> axl_status {
    auto& stack = thread_spans().stack;
    if (stack.empty())
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_profile_pop: no span is open on this thread (pop only after a push "
                  "that returned 1, on the same thread)");
    close_top(stack);
    return AXL_SUCCESS;
  });
}

AXL_API void axl_profile_mark(const char* message, uint32_t argb) {
  if (level() == AXL_PROFILE_OFF) return;
  try {
    const char* m = message ? message : "";
    argb = opaque(argb);
    tools_mark(m, argb);
    ProfileRecord r;
    r.kind = AXL_PROFILE_EVENT_MARK;
    r.color = argb;
    r.thread_id = os_thread_id();
    r.depth = static_cast<uint32_t>(thread_spans().stack.size());
    r.start_ns = r.end_ns = profile_now_ns();
    r.name = m;
    emit(std::move(r), true);
  } catch (...) {
  }
}

AXL_API uint32_t axl_profile_depth(void) {
  return static_cast<uint32_t>(thread_spans().stack.size());
}

AXL_API axl_status axl_profile_set_output(const char* path) {
  return guard([&]() -> axl_status {
    ProfileState& s = pstate();
    {
      std::lock_guard<std::mutex> lk(s.mu);
      set_output_locked(s, path);
    }
    refresh_launches(true);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_profile_get_output(char* buf, size_t capacity, size_t* out_size) {
  return guard([&]() -> axl_status {
    ProfileState& s = pstate();
    std::lock_guard<std::mutex> lk(s.mu);
    return copy_out(s.output, buf, capacity, out_size);
  });
}

AXL_API axl_status axl_profile_flush(void) {
  return guard([&]() -> axl_status {
    ProfileState& s = pstate();
    std::string path;
    {
      std::lock_guard<std::mutex> lk(s.mu);
      path = s.output;
    }
    if (path.empty())
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_profile_flush: no profile output is set (AXL_PROFILE_OUTPUT or "
                  "axl_profile_set_output)");
    if (int err = json_write(path))
      return fail(AXL_ERROR_INTERNAL, "axl_profile_flush: could not write %s: %s", path.c_str(),
                  strerror(err));
    return AXL_SUCCESS;
  });
}

AXL_API uint32_t axl_profile_sinks(void) {
  ProfileState& s = pstate();
  uint32_t bits = tools_sinks();
  if (s.json_on.load()) bits |= AXL_PROFILE_SINK_JSON;
  if (s.collector_on.load()) bits |= AXL_PROFILE_SINK_COLLECTOR;
  return bits;
}

AXL_API axl_status axl_profile_collector_start(void) {
  return guard([&]() -> axl_status {
    ProfileState& s = pstate();
    {
      std::lock_guard<std::mutex> lk(s.mu);
      s.collected.clear();
      s.collect_cap.restart();
      s.collector_on.store(true);
    }
    refresh_launches(true);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_profile_collector_take(axl_profile_events_t* out) {
  return guard([&]() -> axl_status {
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_profile_collector_take: out is NULL");
    ProfileState& s = pstate();
    auto obj = std::make_unique<EventsObj>();
    std::vector<ProfileRecord> recs;
    {
      std::lock_guard<std::mutex> lk(s.mu);
      s.collector_on.store(false);
      recs.swap(s.collected);
      if (s.collect_cap.dropped() != 0)
        logf(AXL_LOG_WARN, "profiler: the collection taken dropped %llu events past its %u (AXL_PROFILE_MAX_EVENTS)",
             static_cast<unsigned long long>(s.collect_cap.dropped()), s.collect_cap.max());
    }
    refresh_launches(true);
    obj->events.reserve(recs.size());
    obj->names.reserve(recs.size());
    for (ProfileRecord& r : recs) {
      axl_profile_event e{};
      e.struct_size = sizeof e;
      e.kind = r.kind;
      e.color = r.color;
      e.thread_id = r.thread_id;
      e.queue_id = r.queue_id;
      e.depth = r.depth;
      e.launch_kind = r.kind == AXL_PROFILE_EVENT_LAUNCH ? r.launch_kind : -1;
      e.start_ns = r.start_ns;
      e.end_ns = r.end_ns;
      e.bytes = r.bytes;
      obj->events.push_back(e);
      obj->names.push_back(std::move(r.name));
    }
    for (size_t i = 0; i < obj->events.size(); ++i) obj->events[i].name = obj->names[i].c_str();
    *out = to_handle<axl_profile_events_t>(obj.release());
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_profile_events_size(axl_profile_events_t events, size_t* out) {
  return guard([&]() -> axl_status {
    auto* e = as<EventsObj>(events, Kind::profile_events, "profile events");
    if (!e) return AXL_ERROR_INVALID_HANDLE;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_profile_events_size: out_count is NULL");
    *out = e->events.size();
    return AXL_SUCCESS;
  });
}

AXL_API const axl_profile_event* axl_profile_events_data(axl_profile_events_t events) {
  auto* e = find<EventsObj>(events, Kind::profile_events);
  return e ? e->events.data() : nullptr;
}

AXL_API axl_status axl_profile_events_release(axl_profile_events_t events) {
  return release_handle(events, Kind::profile_events, "profile events");
}

}  // extern "C"
