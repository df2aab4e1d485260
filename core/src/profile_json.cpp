// The Chrome-trace / Perfetto JSON sink (AXL_PROFILE_OUTPUT).
//
// Events are kept in memory and the file is written whole, through a
// temporary file and a rename, so a reader never sees a half-written trace
// and the file is valid JSON whenever it exists. Layout (Trace Event Format):
// spans are complete events ("X") on their OS thread, marks thread-scoped
// instants; launch-trace entries are instants on one track per queue and
// device intervals async begin/end pairs ("b"/"e", they may overlap: their
// start is the host time of the first event's record) on a second track per
// queue; "M" events name the process, the threads and the queue tracks.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <numeric>

#include "internal.hpp"
#include "profile.hpp"

namespace axl::core {
namespace {

// Track ids of the queue tracks, above any Linux thread id (pid_max <= 2^22).
constexpr uint64_t kLaunchTrackBase = 1000000000ull;
constexpr uint64_t kDeviceTrackBase = 2000000000ull;

struct QueueInfo {
  uint32_t device_id;
  bool host;
};

struct JsonState {
  std::mutex mu;
  std::vector<ProfileRecord> events;
  std::map<uint64_t, std::string> thread_names;
  std::map<uint64_t, QueueInfo> queues;
  EventCap cap{"the JSON timeline", "counted in its otherData.dropped_events"};  // read at the first event
};

JsonState& jstate() {
  static JsonState* s = new JsonState();  // leaked: written from atexit
  return *s;
}

// Appends `s` as a JSON string. Invalid UTF-8 bytes become U+FFFD so the
// file always parses.
void put_string(std::string& out, const std::string& s) {
  out += '"';
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
      bool ok = len != 0 && i + len <= n && c >= 0xC2 && c <= 0xF4;
      for (size_t k = 1; ok && k < len; ++k)
        ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
      if (ok) {
        out.append(s, i, len);
        i += len;
      } else {
        out += "\\ufffd";
        ++i;
      }
    }
  }
  out += '"';
}

// ns -> the format's microseconds, exactly (three decimals).
void put_us(std::string& out, uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
           static_cast<unsigned long long>(ns % 1000));
  out += buf;
}

void put_num(std::string& out, uint64_t v) { out += std::to_string(v); }

const char* launch_kind_name(int32_t k) {
  switch (k) {
    case AXL_TRACE_KERNEL_LAUNCH: return "kernel";
    case AXL_TRACE_MEMCPY: return "memcpy";
    case AXL_TRACE_MEMSET: return "memset";
    default: return "other";
  }
}

std::string process_name() {
  std::string comm = "process";
  if (FILE* f = fopen("/proc/self/comm", "r")) {
    char buf[64] = {0};
    if (fgets(buf, sizeof buf, f)) {
      comm = buf;
      while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\r')) comm.pop_back();
    }
    fclose(f);
  }
  return comm;
}

void put_meta(std::string& out, const char* what, uint64_t pid, uint64_t tid, const std::string& key,
              const std::string& value, bool value_is_string) {
  out += "{\"ph\":\"M\",\"name\":\"";
  out += what;
  out += "\",\"pid\":";
  put_num(out, pid);
  out += ",\"tid\":";
  put_num(out, tid);
  out += ",\"args\":{\"" + key + "\":";
  if (value_is_string)
    put_string(out, value);
  else
    out += value;
  out += "}}";
}

void put_event(std::string& out, const ProfileRecord& r, uint64_t pid, size_t index);

// A device interval as an async pair with its own id.
void put_device(std::string& out, const ProfileRecord& r, uint64_t pid, size_t index) {
  for (int end = 0; end < 2; ++end) {
    out += end ? ",\n{\"ph\":\"e\"" : "{\"ph\":\"b\"";
    out += ",\"cat\":\"device\",\"name\":";
    put_string(out, r.name);
    out += ",\"id\":";
    put_num(out, index);
    out += ",\"pid\":";
    put_num(out, pid);
    out += ",\"tid\":";
    put_num(out, kDeviceTrackBase + r.queue_id);
    out += ",\"ts\":";
    put_us(out, end ? r.end_ns : r.start_ns);
    out += ",\"args\":{\"elapsed_ns\":";
    put_num(out, r.end_ns - r.start_ns);
    out += ",\"measured_by_tid\":";
    put_num(out, r.thread_id);
    out += "}}";
  }
}

void put_event(std::string& out, const ProfileRecord& r, uint64_t pid, size_t index) {
  if (r.kind == AXL_PROFILE_EVENT_DEVICE) return put_device(out, r, pid, index);
  uint64_t tid = r.thread_id;
  const char* ph = "X";
  const char* cat = "span";
  switch (r.kind) {
    case AXL_PROFILE_EVENT_MARK: ph = "i"; cat = "mark"; break;
    case AXL_PROFILE_EVENT_LAUNCH: ph = "i"; cat = "launch"; tid = kLaunchTrackBase + r.queue_id; break;
    default: break;
  }
  out += "{\"ph\":\"";
  out += ph;
  out += "\",\"cat\":\"";
  out += cat;
  out += "\",\"name\":";
  put_string(out, r.name);
  out += ",\"pid\":";
  put_num(out, pid);
  out += ",\"tid\":";
  put_num(out, tid);
  out += ",\"ts\":";
  put_us(out, r.start_ns);
  if (*ph == 'X') {
    out += ",\"dur\":";
    put_us(out, r.end_ns - r.start_ns);
  } else {
    out += ",\"s\":\"t\"";
  }
  out += ",\"args\":{";
  if (r.kind == AXL_PROFILE_EVENT_LAUNCH) {
    out += "\"kind\":\"";
    out += launch_kind_name(r.launch_kind);
    out += "\",\"bytes\":";
    put_num(out, r.bytes);
    out += ",\"enqueued_by_tid\":";
    put_num(out, r.thread_id);
  } else {
    char color[16];
    snprintf(color, sizeof color, "#%08X", r.color);
    out += "\"color\":\"";
    out += color;
    out += "\",\"depth\":";
    put_num(out, r.depth);
  }
  out += "}}";
}

std::string render() {
  JsonState& s = jstate();
  std::lock_guard<std::mutex> lk(s.mu);
  uint64_t pid = static_cast<uint64_t>(getpid());
  std::string out;
  out.reserve(256 + s.events.size() * 160);
  out += "{\"traceEvents\":[\n";
  // Every entry but the first is preceded by a separator, so the array is
  // valid JSON whatever it holds (metadata only, when no span was recorded).
  bool first = true;
  const auto next = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  next();
  put_meta(out, "process_name", pid, 0, "name", "axl: " + process_name(), true);
  for (auto& [tid, name] : s.thread_names) {
    next();
    put_meta(out, "thread_name", pid, tid, "name", name, true);
    next();
    put_meta(out, "thread_sort_index", pid, tid, "sort_index", "0", false);
  }
  for (auto& [q, info] : s.queues) {
    std::string dev = std::string(info.host ? "cpu:" : "gpu:") + std::to_string(info.device_id);
    next();
    put_meta(out, "thread_name", pid, kLaunchTrackBase + q, "name",
             "queue " + std::to_string(q) + " (" + dev + ") launches", true);
    next();
    put_meta(out, "thread_sort_index", pid, kLaunchTrackBase + q, "sort_index",
             std::to_string(1000 + 2 * q), false);
    next();
    put_meta(out, "thread_name", pid, kDeviceTrackBase + q, "name",
             "queue " + std::to_string(q) + " (" + dev + ") device timings", true);
    next();
    put_meta(out, "thread_sort_index", pid, kDeviceTrackBase + q, "sort_index",
             std::to_string(1001 + 2 * q), false);
  }
  // Sorted by start; on a tie the longer (enclosing) event first, as
  // viewers expect parents before children.
  std::vector<size_t> order(s.events.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ProfileRecord &x = s.events[a], &y = s.events[b];
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return (x.end_ns - x.start_ns) > (y.end_ns - y.start_ns);
  });
  for (size_t i : order) {
    next();
    put_event(out, s.events[i], pid, i);
  }
  out += "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"axl ";
  out += axl_version_string();
  out += "\",\"clock\":\"CLOCK_MONOTONIC\"";
  if (s.cap.dropped() != 0) {
    out += ",\"max_events\":";
    put_num(out, s.cap.max());
    out += ",\"dropped_events\":";
    put_num(out, s.cap.dropped());
  }
  out += "}}\n";
  return out;
}

int write_file(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = fopen(tmp.c_str(), "wb");
  if (!f) return errno;
  size_t n = fwrite(text.data(), 1, text.size(), f);
  int err = n == text.size() ? 0 : (errno ? errno : EIO);
  if (fclose(f) != 0 && !err) err = errno;
  if (!err && rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) remove(tmp.c_str());
  return err;
}

}  // namespace

void json_add(const ProfileRecord& r) {
  JsonState& s = jstate();
  std::lock_guard<std::mutex> lk(s.mu);
  if (!s.cap.admit(s.events.size())) return;
  s.events.push_back(r);
  if (r.kind == AXL_PROFILE_EVENT_LAUNCH || r.kind == AXL_PROFILE_EVENT_DEVICE)
    s.queues.try_emplace(r.queue_id, QueueInfo{r.device_id, r.host_queue});
}

void json_name_thread(uint64_t tid, const std::string& name) {
  JsonState& s = jstate();
  std::lock_guard<std::mutex> lk(s.mu);
  s.thread_names[tid] = name;
}

int json_write(const std::string& path) {
  try {
    return write_file(path, render());
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  }
}

bool json_idle() {
  JsonState& s = jstate();
  if (!s.mu.try_lock()) return false;  // the crashing thread may hold it
  s.mu.unlock();
  return true;
}

void json_write_if_idle(const std::string& path) {
  if (json_idle()) json_write(path);
}

}  // namespace axl::core
