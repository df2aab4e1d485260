// The negotiation probe: dlopen a plugin file and negotiate with it the way
// the core does, but with a fake host, and check every rule of docs/abi.md
// that can be observed from outside.
//
// It runs in a child process (`axl-cts --probe-negotiate PATH`) for three
// reasons. A plugin keeps the host pointer of its last negotiate for the life
// of the process, so negotiating in the CTS process itself would steal the
// plugin's logging, errors and trace from the real core. Side effects
// (threads, output) can only be measured in a process where nothing else
// runs. And a plugin that crashes or hangs in negotiate must become a failed
// case, not a dead test run.
//
// Child-to-parent protocol, one record a line on fd 3, fields split by tabs:
//   step <what>                the step about to run (names a crash site)
//   fail <case> <text>         a rule broken; <case> is the CTS case owning it
//   note <text>                worth saying, not a failure
//   info <key> <value>         name, api, version, flags, minor, info_size, table_size
//   slot <name> <required> <present>
//   done
// The plugin's own stdout and stderr go to a second pipe: a plugin must not
// print (plugin.h), so anything there is reported.
#include <dirent.h>
#include <dlfcn.h>
#include <sys/wait.h>

#include <cstddef>
#include <exception>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "axl/plugin.h"
#include "cts.hpp"
#include "host_services.hpp"
#include "slot_list.hpp"

namespace cts {

namespace {

constexpr size_t kMaxStructSize = 1u << 16;  // the core's own bound (loader.cpp)
constexpr int kProbeTimeoutS = 30;

// The slot list (kSlots) and the 1.0 table size are in slot_list.hpp.

// ----------------------------------------------------------- child side --
FILE* g_out = nullptr;

std::string clean(const char* s) {
  std::string out = s ? s : "(null)";
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

void emit(const std::string& line) {
  std::fputs(line.c_str(), g_out);
  std::fputc('\n', g_out);
  std::fflush(g_out);  // a crash in the next step must not lose this line
}
void step(const std::string& what) { emit("step\t" + clean(what.c_str())); }
void fail(const char* case_name, const std::string& text) {
  emit(cat("fail\t", case_name, "\t", clean(text.c_str())));
}
void note(const std::string& text) { emit("note\t" + clean(text.c_str())); }

int count_dir(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// Records what a plugin does with the services it was given.
using FakeHost = axl_test::FakeHost;

bool valid_name(const char* n) {
  if (!n || !*n || std::strlen(n) > 64) return false;
  for (const char* p = n; *p; ++p)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
  return true;
}

bool slot_present(const axl_plugin_table* t, const SlotDef& s) {
  if (t->struct_size < s.offset + sizeof(void*)) return false;  // beyond the plugin's table
  void (*fn)(void) = nullptr;
  std::memcpy(&fn, reinterpret_cast<const char*>(t) + s.offset, sizeof fn);
  return fn != nullptr;
}

// No C++ exception may cross the ABI; one that does is a failure to report,
// not a reason for the probe to die.
axl_status call_entry(axl_plugin_negotiate_fn entry, axl_negotiate_args* args, const char* what) {
  try {
    return entry(args);
  } catch (const std::exception& e) {
    fail("cts.negotiate.table_shape", cat(what, ": a C++ exception crossed the ABI: ", e.what()));
  } catch (...) {
    fail("cts.negotiate.table_shape", cat(what, ": a C++ exception crossed the ABI"));
  }
  return AXL_ERROR_INTERNAL;
}

// The plugin is negotiated the way the core does, by a core of another
// major, by a newer core of the same major, and with malformed arguments; the
// core's way comes last, so the plugin ends up with the answer it would give
// the core. Storage the plugin hands out must be the same every time (static).
void probe(const std::string& path) {
  const int threads_start = count_dir("/proc/self/task");
  const int fds_start = count_dir("/proc/self/fd");

  step("dlopen");
  void* dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char* e = dlerror();
    fail("cts.negotiate.table_shape", cat("dlopen failed: ", e ? e : "unknown error"));
    return;
  }
  const int threads_loaded = count_dir("/proc/self/task");
  if (threads_loaded != threads_start)
    fail("cts.negotiate.no_side_effects",
         cat("loading the library started ", threads_loaded - threads_start,
             " thread(s) (static constructors?); threads may start no earlier than backend_init"));
  auto entry = reinterpret_cast<axl_plugin_negotiate_fn>(dlsym(dl, AXL_PLUGIN_ENTRY_SYMBOL));
  if (!entry) {
    fail("cts.negotiate.table_shape", "no exported symbol " AXL_PLUGIN_ENTRY_SYMBOL);
    return;
  }

  // Another major: the plugin must refuse, write nothing and not touch the
  // host services, whose layout is the other major's.
  {
    step("negotiate with core ABI major + 1");
    static FakeHost host;
    static const axl_plugin_info sentinel_info{};
    static const axl_plugin_table sentinel_table{};
    axl_negotiate_args a{};
    a.struct_size = sizeof a;
    a.core_abi_major = AXL_PLUGIN_ABI_MAJOR + 1;
    a.core_abi_minor = 0;
    a.host = host.services();
    a.plugin_abi_minor = 0xdeadbeef;
    a.info = &sentinel_info;
    a.table = &sentinel_table;
    const axl_status s = call_entry(entry, &a, "negotiate with another major");
    if (s != AXL_ERROR_VERSION_MISMATCH)
      fail("cts.negotiate.version_mismatch",
           cat("negotiate with core major ", AXL_PLUGIN_ABI_MAJOR + 1, " returned status ", s,
               "; expected AXL_ERROR_VERSION_MISMATCH (10)"));
    if (a.plugin_abi_minor != 0xdeadbeef || a.info != &sentinel_info || a.table != &sentinel_table)
      fail("cts.negotiate.version_mismatch",
           "negotiate with another core major wrote to args; it must write nothing");
    if (host.log_count() || host.report_count() || host.trace_count())
      fail("cts.negotiate.version_mismatch",
           cat("negotiate with another core major called host services (log ", host.log_count(),
               ", report_error ", host.report_count(), ", trace_record ", host.trace_count(),
               "); their layout belongs to that major, so it must call none"));
  }

  step("negotiate(NULL)");
  if (call_entry(entry, nullptr, "negotiate(NULL)") == AXL_SUCCESS)
    fail("cts.negotiate.table_shape", "negotiate(NULL) returned AXL_SUCCESS");

  {
    step("negotiate with struct_size too small for the outputs");
    static FakeHost host;
    axl_negotiate_args a{};
    a.struct_size = offsetof(axl_negotiate_args, plugin_abi_minor);
    a.core_abi_major = AXL_PLUGIN_ABI_MAJOR;
    a.core_abi_minor = AXL_PLUGIN_ABI_MINOR;
    a.host = host.services();
    if (call_entry(entry, &a, "negotiate with a short args struct") == AXL_SUCCESS)
      fail("cts.negotiate.table_shape",
           cat("negotiate accepted args.struct_size ", a.struct_size,
               ", too small to hold the fields it writes; it must refuse (docs/abi.md)"));
  }

  // As the core does it.
  step("negotiate as the core does");
  static FakeHost host;
  axl_negotiate_args a{};
  a.struct_size = sizeof a;
  a.core_abi_major = AXL_PLUGIN_ABI_MAJOR;
  a.core_abi_minor = AXL_PLUGIN_ABI_MINOR;
  a.host = host.services();
  const axl_status s = call_entry(entry, &a, "negotiate");
  if (s != AXL_SUCCESS) {
    fail("cts.negotiate.table_shape", cat("negotiate returned status ", s, "; expected AXL_SUCCESS"));
    return;
  }
  if (host.trace_count())
    fail("cts.negotiate.no_side_effects", "negotiate called host->trace_record");
  if (a.plugin_abi_minor > AXL_PLUGIN_ABI_MINOR)
    fail("cts.negotiate.table_shape",
         cat("answered ABI minor ", a.plugin_abi_minor, " above the core's ", AXL_PLUGIN_ABI_MINOR));
  const axl_plugin_info* info = a.info;
  const axl_plugin_table* table = a.table;
  if (!info || !table) {
    fail("cts.negotiate.table_shape", info ? "negotiate returned no table" : "negotiate returned no info");
    return;
  }

  step("read the info block");
  const size_t info_min = offsetof(axl_plugin_info, flags) + sizeof(uint32_t);
  emit(cat("info\tinfo_size\t", info->struct_size));
  if (info->struct_size < info_min || info->struct_size > kMaxStructSize) {
    fail("cts.negotiate.table_shape", cat("info.struct_size ", info->struct_size, " is outside [",
                                          info_min, ", ", kMaxStructSize, "]"));
    return;
  }
  emit("info\tname\t" + clean(info->name));
  emit("info\tapi\t" + clean(info->api));
  emit("info\tversion\t" + clean(info->version));
  emit(cat("info\tflags\t", info->flags));
  emit(cat("info\tminor\t", a.plugin_abi_minor));
  const std::string file_name = plugin_file_name(path);
  if (!valid_name(info->name))
    fail("cts.negotiate.table_shape",
         cat("info.name '", clean(info->name), "' is not [a-z0-9_]+ (at most 64 characters)"));
  else if (file_name != info->name)
    fail("cts.negotiate.table_shape", cat("info.name '", info->name, "' differs from the file's '",
                                          file_name, "' (libaxl_plugin_<name>.so)"));
  if (!info->api || !*info->api) fail("cts.negotiate.table_shape", "info.api is empty");
  if (!info->version || !*info->version) note("info.version is empty");
#define AXL_CTS_FLAG_BIT_(name, bit, report_name) | name
  const uint32_t known_flags = 0u AXL_PLUGIN_FLAGS(AXL_CTS_FLAG_BIT_);
#undef AXL_CTS_FLAG_BIT_
  if (info->flags & ~known_flags)
    note(cat("info.flags has bits this ABI does not define: 0x", std::hex, info->flags & ~known_flags));
  if (info->struct_size >= offsetof(axl_plugin_info, reserved) + sizeof(uint32_t) && info->reserved)
    fail("cts.negotiate.table_shape", "info.reserved is not zero");

  step("read the function table");
  emit(cat("info\ttable_size\t", table->struct_size));
  if (table->struct_size < kTableSize10 || table->struct_size > kMaxStructSize) {
    // Below the 1.0 size is a table no released header ever produced.
    fail("cts.negotiate.table_shape",
         cat("table.struct_size ", table->struct_size, " is outside [", kTableSize10,
             " (ABI 1.0), ", kMaxStructSize, "]"));
    if (table->struct_size > kMaxStructSize) return;
  }
  std::string missing;
  for (const SlotDef& sd : kSlots) {
    const bool present = slot_present(table, sd);
    emit(cat("slot\t", sd.name, "\t", sd.required ? 1 : 0, "\t", present ? 1 : 0));
    if (sd.required && !present) missing += (missing.empty() ? "" : ", ") + std::string(sd.name);
  }
  if (!missing.empty())
    fail("cts.negotiate.table_shape", "REQUIRED slots are NULL: " + missing);

  // A newer core: the plugin answers its own minor, never the core's.
  {
    step("negotiate with a newer core minor");
    static FakeHost newer_host;
    axl_negotiate_args b{};
    b.struct_size = sizeof b;
    b.core_abi_major = AXL_PLUGIN_ABI_MAJOR;
    b.core_abi_minor = AXL_PLUGIN_ABI_MINOR + 5;
    b.host = newer_host.services();
    const axl_status s2 = call_entry(entry, &b, "negotiate with a newer core");
    if (s2 != AXL_SUCCESS)
      fail("cts.negotiate.version_mismatch",
           cat("negotiate with core minor ", b.core_abi_minor, " returned status ", s2,
               "; a newer core of the same major must be served"));
    else if (b.plugin_abi_minor > b.core_abi_minor || b.plugin_abi_minor < a.plugin_abi_minor)
      fail("cts.negotiate.version_mismatch",
           cat("negotiate with core minor ", b.core_abi_minor, " answered minor ",
               b.plugin_abi_minor, "; expected the plugin's own minor (>= ", a.plugin_abi_minor, ")"));
    else if (b.info != info || b.table != table)
      fail("cts.negotiate.table_shape",
           "a second negotiate returned other info/table pointers; both must be static storage");
  }
  // The core's own host goes back in, as the last word.
  step("negotiate as the core does, again");
  axl_negotiate_args c{};
  c.struct_size = sizeof c;
  c.core_abi_major = AXL_PLUGIN_ABI_MAJOR;
  c.core_abi_minor = AXL_PLUGIN_ABI_MINOR;
  c.host = host.services();
  if (call_entry(entry, &c, "negotiate again") != AXL_SUCCESS || c.info != info || c.table != table)
    fail("cts.negotiate.table_shape", "negotiating again did not give the same answer");

  const int threads_end = count_dir("/proc/self/task");
  if (threads_end != threads_loaded)
    fail("cts.negotiate.no_side_effects",
         cat("negotiate started ", threads_end - threads_loaded,
             " thread(s); threads may start no earlier than backend_init"));
  // Both counts include opendir's own descriptor, so they compare as equals.
  const int fds_end = count_dir("/proc/self/fd");
  if (fds_end > fds_start)
    note(cat("loading and negotiating left ", fds_end - fds_start,
             " more file descriptor(s) open (a driver opened early?)"));
}

}  // namespace

int run_probe_child(const char* path) {
  g_out = fdopen(kChildProtocolFd, "w");
  if (!g_out) g_out = stdout;  // run by hand
  probe(path ? path : "");
  emit("done");
  return 0;
}

ProbeResult probe_plugin(const std::string& path) {
  ProbeResult r;
  ChildResult child = run_self({"--probe-negotiate", path}, {}, kProbeTimeoutS);
  if (!child.error.empty()) {
    r.crash = child.error;
    return r;
  }
  r.chatter = child.output;
  const std::string& proto_text = child.protocol;
  std::string last_step;
  std::istringstream lines(proto_text);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
      f.push_back(line.substr(start, tab - start));
    f.push_back(line.substr(start));
    if (f[0] == "done") r.ran = true;
    else if (f[0] == "step" && f.size() >= 2) last_step = f[1];
    else if (f[0] == "fail" && f.size() >= 3) r.failures.emplace_back(f[1], f[2]);
    else if (f[0] == "note" && f.size() >= 2) r.notes.push_back(f[1]);
    else if (f[0] == "slot" && f.size() >= 4) r.slots.push_back({f[1], f[2] == "1", f[3] == "1"});
    else if (f[0] == "info" && f.size() >= 3) {
      if (f[1] == "name") r.name = f[2];
      else if (f[1] == "api") r.api = f[2];
      else if (f[1] == "version") r.version = f[2];
      else if (f[1] == "flags") r.flags = static_cast<uint32_t>(std::stoul(f[2]));
      else if (f[1] == "minor") r.abi_minor = static_cast<uint32_t>(std::stoul(f[2]));
      else if (f[1] == "info_size") r.info_size = std::stoull(f[2]);
      else if (f[1] == "table_size") r.table_size = std::stoull(f[2]);
    }
  }
  if (child.timed_out)
    r.crash = cat("the probe process did not finish within ", kProbeTimeoutS,
                  " s (last step: ", last_step, "): negotiate or a static constructor hangs");
  else if (WIFSIGNALED(child.status))
    r.crash = cat("the probe process died with ", signal_text(WTERMSIG(child.status)),
                  " during: ", last_step.empty() ? "start-up" : last_step);
  else if (!r.ran)
    r.crash = cat("the probe process exited with status ",
                  WIFEXITED(child.status) ? WEXITSTATUS(child.status) : -1, " during: ", last_step);
  r.ran = r.ran && r.crash.empty();
  return r;
}

}  // namespace cts
