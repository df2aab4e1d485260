// axl_probe: prints what discovery found, as key=value lines, so tests can
// check one discovery scenario per fresh process (discovery runs once per
// process). Written against axl.h only.
//
//   axl_probe              discovery only: init, plugin records, device counts
//   axl_probe work         also gets every device, allocates on it and runs a
//                          host -> buffer -> host round trip, then prints the
//                          plugin records again (prefix "after.")
//   axl_probe fork-discovery   fork() after discovery only (axl_device_count);
//                          the child gets the cpu device and runs a copy
//   axl_probe spec TEXT    parses a device spec (axl_device_spec_parse)
//   axl_probe fork-init    fork() after the cpu backend was initialised and
//                          used; the child checks every call answers
//                          AXL_ERROR_FORKED at once
//
// Output lines: key=value; newlines in values are written as "\n". The exit
// status is 0 unless the probe itself could not run (a fork child's failure
// is reported through its own lines and "fork.child_exit").
#include <dlfcn.h>
#include <link.h>
#include <sys/auxv.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "axl/axl.h"

// LeakSanitizer cannot work in a setuid process (it is not dumpable, so LSan
// cannot inspect itself), and the environment (ASAN_OPTIONS) is not readable
// there either: turn leak checking off exactly when AT_SECURE is set, i.e.
// only for loader_test's setuid case. Unused in builds without ASan.
extern "C" __attribute__((used, visibility("default"))) const char* __asan_default_options() {
  return getauxval(AT_SECURE) ? "detect_leaks=0" : "";
}

namespace {

std::string esc(const char* s) {
  std::string out;
  for (const char* p = s ? s : ""; *p; ++p) {
    if (*p == '\n')
      out += "\\n";
    else
      out += *p;
  }
  return out;
}

void kv(const std::string& key, const std::string& value) {
  printf("%s=%s\n", key.c_str(), esc(value.c_str()).c_str());
}

const char* state_name(int32_t s) {
  switch (s) {
    case AXL_PLUGIN_STATE_LOADED: return "LOADED";
    case AXL_PLUGIN_STATE_SKIPPED: return "SKIPPED";
    case AXL_PLUGIN_STATE_SHADOWED: return "SHADOWED";
    case AXL_PLUGIN_STATE_DISABLED: return "DISABLED";
    case AXL_PLUGIN_STATE_UNAVAILABLE: return "UNAVAILABLE";
    default: return "UNKNOWN";
  }
}

// Prints the calling thread's last error under `prefix`.
void last_error(const std::string& prefix) {
  axl_error_info e{};
  e.struct_size = sizeof e;
  if (axl_last_error(&e) != AXL_SUCCESS) {
    kv(prefix + ".error", "axl_last_error failed");
    return;
  }
  kv(prefix + ".error_status", axl_status_name(e.status));
  kv(prefix + ".error_backend", e.backend);
  kv(prefix + ".error_native_code", std::to_string(e.native_code));
  kv(prefix + ".error_native_name", e.native_name);
  kv(prefix + ".error_message", e.message);
}

// Reports a call's status; on failure also the last error.
bool report(const std::string& key, axl_status s) {
  kv(key, axl_status_name(s));
  if (s != AXL_SUCCESS) last_error(key);
  return s == AXL_SUCCESS;
}

void print_records(const std::string& prefix) {
  uint32_t n = 0;
  axl_status s = axl_plugin_count(&n);
  if (!report(prefix + "plugin_count_status", s)) return;
  kv(prefix + "plugins", std::to_string(n));
  for (uint32_t i = 0; i < n; ++i) {
    axl_plugin_record r{};
    r.struct_size = sizeof r;
    std::string p = prefix + "plugin." + std::to_string(i);
    if (!report(p + ".get", axl_plugin_get_record(i, &r))) continue;
    kv(p + ".path", r.path);
    kv(p + ".name", r.name);
    kv(p + ".api", r.api);
    kv(p + ".version", r.version);
    kv(p + ".state", state_name(r.state));
    kv(p + ".status", axl_status_name(r.status));
    kv(p + ".reason", r.reason);
    kv(p + ".devices", std::to_string(r.device_count));
    kv(p + ".abi", std::to_string(r.abi_major) + "." + std::to_string(r.abi_minor));
  }
}

void print_counts(const std::string& prefix) {
  const char* labels[] = {nullptr, "cpu", "gpu"};
  for (const char* l : labels) {
    uint32_t n = 0;
    std::string key = prefix + "devices." + (l ? l : "all");
    axl_status s = axl_device_count(l, &n);
    if (s == AXL_SUCCESS)
      kv(key, std::to_string(n));
    else
      report(key + "_status", s);
  }
}

// Every plugin file this process has mapped (dlopen'ed), by path.
int list_mapped(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name && strstr(info->dlpi_name, "libaxl_plugin_")) out->push_back(info->dlpi_name);
  return 0;
}

void print_mapped() {
  std::vector<std::string> mapped;
  dl_iterate_phdr(list_mapped, &mapped);
  kv("mapped_count", std::to_string(mapped.size()));
  for (size_t i = 0; i < mapped.size(); ++i) kv("mapped." + std::to_string(i), mapped[i]);
}

void print_discovery_log() {
  size_t n = 0;
  if (axl_discovery_log(nullptr, 0, &n) != AXL_SUCCESS) return;
  std::vector<char> buf(n);
  if (axl_discovery_log(buf.data(), buf.size(), &n) != AXL_SUCCESS) return;
  std::string log(buf.data());
  size_t pos = 0, line = 0;
  while (pos < log.size()) {
    size_t nl = log.find('\n', pos);
    if (nl == std::string::npos) nl = log.size();
    kv("discovery." + std::to_string(line++), log.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

// A host -> buffer -> host round trip on the device's default queue.
// Returns "ok" or what went wrong.
std::string round_trip(axl_device_t d, const std::string& key) {
  const uint64_t n = 4099;  // odd on purpose
  std::vector<unsigned char> src(n), back(n, 0);
  for (uint64_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  axl_buffer_t b = nullptr;
  axl_queue_t q = nullptr;
  std::string result = "ok";
  if (!report(key + ".alloc", axl_buffer_create(d, n, 0, &b))) return "alloc failed";
  if (!report(key + ".queue", axl_device_default_queue(d, &q))) {
    axl_buffer_release(b);
    return "no default queue";
  }
  if (!report(key + ".htod", axl_queue_copy_from_host(q, b, 0, src.data(), n)))
    result = "copy_from_host failed";
  else if (!report(key + ".dtoh", axl_queue_copy_to_host(q, back.data(), b, 0, n)))
    result = "copy_to_host failed";
  else if (!report(key + ".sync", axl_queue_synchronize(q)))
    result = "synchronize failed";
  else if (memcmp(src.data(), back.data(), n) != 0)
    result = "data mismatch";
  axl_buffer_release(b);
  axl_queue_release(q);
  return result;
}

void work() {
  const char* labels[] = {"cpu", "gpu"};
  for (const char* l : labels) {
    uint32_t count = 0;
    if (axl_device_count(l, &count) != AXL_SUCCESS) continue;
    // A device whose backend fails to initialise drops out of the
    // enumeration, so the index only advances past devices that stay.
    uint32_t i = 0, attempt = 0;
    while (i < count && attempt < 64) {
      std::string key = std::string("dev.") + l + "." + std::to_string(attempt++);
      axl_device_t d = nullptr;
      axl_status s = axl_device_get(l, i, &d);
      if (!report(key + ".get", s)) {
        uint32_t now = 0;
        axl_device_count(l, &now);
        if (now < count)
          count = now;
        else
          ++i;
        continue;
      }
      axl_device_info info{};
      info.struct_size = sizeof info;
      if (report(key + ".info", axl_device_get_info(d, &info))) {
        kv(key + ".backend", info.backend);
        kv(key + ".model", info.model_name);
        kv(key + ".id", std::to_string(info.id));
      }
      kv(key + ".work", round_trip(d, key));
      axl_device_release(d);
      ++i;
    }
  }
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// Waits for `pid` up to `seconds`; kills it on timeout. Returns the wait
// status, or -1 on timeout.
int wait_child(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  return -1;
}

void report_child(pid_t pid) {
  int st = wait_child(pid, 20);
  if (st == -1)
    kv("fork.child_exit", "timeout");
  else if (WIFEXITED(st))
    kv("fork.child_exit", std::to_string(WEXITSTATUS(st)));
  else
    kv("fork.child_exit", "signal " + std::to_string(WTERMSIG(st)));
}

// The child's calls must not hang: an alarm kills it if one does.
void child_guard() { alarm(10); }

int fork_after_discovery() {
  uint32_t n = 0;
  report("parent.count", axl_device_count("cpu", &n));
  kv("parent.cpu_count", std::to_string(n));
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    kv("fork", "failed");
    return 1;
  }
  if (pid == 0) {
    child_guard();
    axl_device_t d = nullptr;
    std::string r = "no device";
    if (report("child.get", axl_device_get("cpu", 0, &d))) {
      r = round_trip(d, "child.dev");
      axl_device_release(d);
    }
    kv("child.work", r);
    fflush(stdout);
    _exit(r == "ok" ? 0 : 3);
  }
  report_child(pid);
  // The parent can still use the backend after the fork.
  axl_device_t d = nullptr;
  if (report("parent.get", axl_device_get("cpu", 0, &d))) {
    kv("parent.work", round_trip(d, "parent.dev"));
    axl_device_release(d);
  }
  return 0;
}

void timed(const std::string& key, axl_status s, double t0) {
  report(key, s);
  kv(key + ".ms", std::to_string(static_cast<long>(now_ms() - t0)));
}

int fork_after_init() {
  axl_device_t d = nullptr;
  if (!report("parent.get", axl_device_get("cpu", 0, &d))) return 1;
  kv("parent.work", round_trip(d, "parent.dev"));
  // Objects created before the fork, used in the child.
  axl_queue_t q = nullptr, q2 = nullptr;
  axl_buffer_t b = nullptr;
  axl_event_t e = nullptr;
  report("parent.queue", axl_queue_create(d, 0, &q));
  report("parent.buffer", axl_buffer_create(d, 256, 0, &b));
  report("parent.event", axl_event_create(d, 0, &e));
  unsigned char bytes[256] = {1, 2, 3};
  report("parent.copy", axl_queue_copy_from_host(q, b, 0, bytes, sizeof bytes));
  report("parent.sync", axl_queue_synchronize(q));
  // Work still pending at the fork: a copy held back by a flag. The child
  // has no worker to run it, so anything in the child that waited for it
  // (a release that drains the queue) would hang.
  axl_flag_t gate = nullptr;
  report("parent.flag", axl_flag_create(d, &gate));
  report("parent.gate", axl_queue_wait_flag(q, gate, 1));
  report("parent.pending_copy", axl_queue_copy_from_host(q, b, 0, bytes, sizeof bytes));
  report("parent.record", axl_queue_record_event(q, e));
  // A tracked buffer whose writer is pending at the fork: a host wait for
  // it in the child would wait for an event no thread there completes.
  axl_buffer_t tb = nullptr;
  report("parent.tracked", axl_buffer_create(d, 64, AXL_BUFFER_FLAG_TRACKED, &tb));
  report("parent.tracked_copy", axl_queue_copy_from_host(q, tb, 0, bytes, 64));
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    kv("fork", "failed");
    return 1;
  }
  if (pid == 0) {
    child_guard();
    double t0 = now_ms();
    axl_device_t cd = nullptr;
    timed("child.device_get", axl_device_get("cpu", 0, &cd), t0);
    if (cd) axl_device_release(cd);
    axl_buffer_t nb = nullptr;
    t0 = now_ms();
    timed("child.buffer_create", axl_buffer_create(d, 64, 0, &nb), t0);
    t0 = now_ms();
    timed("child.queue_create", axl_queue_create(d, 0, &q2), t0);
    t0 = now_ms();
    timed("child.copy", axl_queue_copy_from_host(q, b, 0, bytes, sizeof bytes), t0);
    t0 = now_ms();
    timed("child.fill", axl_queue_fill(q, b, 0, 256, 7, 1), t0);
    t0 = now_ms();
    timed("child.sync", axl_queue_synchronize(q), t0);
    t0 = now_ms();
    timed("child.event_query", axl_event_query(e), t0);
    t0 = now_ms();
    timed("child.event_sync", axl_event_synchronize(e), t0);
    t0 = now_ms();
    timed("child.device_sync", axl_device_synchronize(d), t0);
    axl_event_t ne = nullptr;
    t0 = now_ms();
    timed("child.event_create", axl_event_create(d, 0, &ne), t0);
    t0 = now_ms();
    timed("child.record_event", axl_queue_record_event(q, e), t0);
    uint64_t flag_address = 0;
    t0 = now_ms();
    timed("child.flag_device_address", axl_flag_device_address(gate, &flag_address), t0);
    t0 = now_ms();
    timed("child.host_wait", axl_buffer_host_wait(tb, AXL_ACCESS_READ), t0);
    // Releasing what the parent created must neither hang nor call into the
    // dead backend.
    t0 = now_ms();
    timed("child.release_buffer", axl_buffer_release(b), t0);
    t0 = now_ms();
    timed("child.release_event", axl_event_release(e), t0);
    t0 = now_ms();
    timed("child.release_queue", axl_queue_release(q), t0);
    kv("child.done", "1");
    fflush(stdout);
    _exit(0);
  }
  report_child(pid);
  // The parent is unaffected: its pending work runs once the gate opens.
  report("parent.open_gate", axl_flag_signal(gate, 1));
  report("parent.after_sync", axl_queue_synchronize(q));
  report("parent.event_after", axl_event_query(e));
  report("parent.tracked_wait", axl_buffer_host_wait(tb, AXL_ACCESS_READ));
  axl_buffer_release(tb);
  axl_flag_release(gate);
  kv("parent.after_fork_work", round_trip(d, "parent.after"));
  axl_event_release(e);
  axl_buffer_release(b);
  axl_queue_release(q);
  axl_device_release(d);
  return 0;
}

}  // namespace

// Gets every gpu device from the last index to the first (a later
// backend's device before an earlier backend's) and reports each one's id.
int ids_last_first() {
  uint32_t n = 0;
  axl_device_count("gpu", &n);
  kv("ids.count", std::to_string(n));
  for (uint32_t i = n; i-- > 0;) {
    const std::string p = "ids." + std::to_string(i);
    axl_device_t d = nullptr;
    axl_status s = axl_device_get("gpu", i, &d);
    kv(p + ".get", axl_status_name(s));
    if (s != AXL_SUCCESS) continue;
    axl_device_info info{};
    info.struct_size = sizeof info;
    axl_device_get_info(d, &info);
    kv(p + ".id", std::to_string(info.id));
    kv(p + ".backend", info.backend);
    axl_device_release(d);
  }
  axl_device_count("gpu", &n);
  kv("ids.after.count", std::to_string(n));
  kv("probe.done", "1");
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "ids-last-first") return ids_last_first();
  if (mode == "fork-discovery") return fork_after_discovery();
  if (mode == "fork-init") return fork_after_init();
  if (mode == "spec" && argc > 2) {
    size_t n = 0;
    axl_status s = axl_device_spec_parse(argv[2], nullptr, 0, &n);
    if (report("spec.status", s)) {
      std::vector<axl_device_spec> v(n);
      report("spec.status2", axl_device_spec_parse(argv[2], v.data(), v.size(), &n));
      kv("spec.count", std::to_string(n));
      for (size_t i = 0; i < n && i < v.size(); ++i)
        kv("spec." + std::to_string(i),
           std::to_string(v[i].is_accelerator) + ":" + std::to_string(v[i].id));
    }
    print_counts("");
    kv("probe.done", "1");
    return 0;
  }

  axl_status s = axl_init();
  kv("init.status", axl_status_name(s));
  kv("init.message", s == AXL_SUCCESS ? "" : axl_last_error_message());
  print_records("");
  print_counts("");
  if (mode == "work") {
    work();
    print_records("after.");
    print_counts("after.");
  }
  print_mapped();
  print_discovery_log();
  axl_error_info e{};
  e.struct_size = sizeof e;
  axl_last_error(&e);
  kv("last_error.status", axl_status_name(e.status));
  kv("last_error.message", e.message);
  kv("probe.done", "1");
  return 0;
}
