// Discovery and loading of plugins (ARCHITECTURE.md section 3), negotiation,
// backend initialisation, and the fork/exit rules (section 2).
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>

#include "internal.hpp"
#include "slot_table.hpp"

namespace axl::core {

void host_report_error(void* ctx, axl_status status, int64_t native_code,
                       const char* native_name, const char* message);
void host_log(void* ctx, int32_t level, const char* message);

namespace {

std::atomic<bool> g_exiting{false};
std::once_flag g_discovery_once;

// Bounds on the sizes a plugin may claim: below the 1.0 layout is a plugin
// built against a header that never existed; far above is garbage.
constexpr size_t kMaxStructSize = 1u << 16;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) {
    size_t a = cur.find_first_not_of(" \t"), b = cur.find_last_not_of(" \t");
    if (a != std::string::npos) out.push_back(cur.substr(a, b - a + 1));
  }
  return out;
}

// "libaxl_plugin_<name>.so" -> "<name>", or "" if the file is not a plugin.
std::string name_from_file(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  const std::string pre = "libaxl_plugin_", suf = ".so";
  if (base.size() <= pre.size() + suf.size() || base.compare(0, pre.size(), pre) != 0 ||
      base.compare(base.size() - suf.size(), suf.size(), suf) != 0)
    return "";
  return base.substr(pre.size(), base.size() - pre.size() - suf.size());
}

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string core_dir() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&axl_init), &info) || !info.dli_fname) return "";
  char real[PATH_MAX];
  if (!realpath(info.dli_fname, real)) return "";
  std::string p(real);
  return p.substr(0, p.find_last_of('/'));
}

// The plugin files of `dir`. A folder the user named (AXL_PLUGIN_PATH) that
// cannot be read is warned about with the reason, so a typo or a
// permission problem does not read as "no plugins there".
std::vector<std::string> list_plugins(const std::string& dir, bool named_by_user) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) {
    const int err = errno;
    if (named_by_user) logf(AXL_LOG_WARN, "cannot search folder '%s' in AXL_PLUGIN_PATH: %s", dir.c_str(), strerror(err));
    discovery_note("  cannot be searched: " + std::string(strerror(err)));
    return out;
  }
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (!name_from_file(n).empty()) out.push_back(dir + "/" + n);
  }
  closedir(d);
  // readdir order is the filesystem's; sort so discovery is deterministic.
  std::sort(out.begin(), out.end());
  return out;
}

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

// Loads and negotiates one file; fills `rec`. Never throws; a plugin that
// throws out of negotiate is caught here.
void load_one(Registry& r, PluginRecord& rec, const std::string& file_name) {
  auto skip = [&](axl_status s, const std::string& why) {
    rec.state = AXL_PLUGIN_STATE_SKIPPED;
    rec.status = s;
    rec.reason = why;
    logf(AXL_LOG_WARN, "skipping plugin %s: %s", rec.path.c_str(), why.c_str());
    discovery_note("  skipped: " + why);
  };
  void* dl = dlopen(rec.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!dl) return skip(AXL_ERROR_PLUGIN_INVALID, "dlopen failed: " + dl_error());
  // From here on the library stays loaded even when refused: unloading code
  // that may have registered anything (TLS destructors, atexit) is unsafe.
  auto entry = reinterpret_cast<axl_plugin_negotiate_fn>(dlsym(dl, AXL_PLUGIN_ENTRY_SYMBOL));
  if (!entry)
    return skip(AXL_ERROR_PLUGIN_INVALID,
                "no entry symbol " AXL_PLUGIN_ENTRY_SYMBOL " (not an axl plugin?)");

  auto* b = new Backend();
  b->path = rec.path;
  b->name = file_name;
  b->dl = dl;
  b->host.struct_size = sizeof(axl_host_services);
  b->host.ctx = b;
  b->host.log = host_log;
  b->host.report_error = host_report_error;
  b->host.trace_record = host_trace_record;

  axl_negotiate_args args{};
  args.struct_size = sizeof args;
  args.core_abi_major = AXL_PLUGIN_ABI_MAJOR;
  args.core_abi_minor = AXL_PLUGIN_ABI_MINOR;
  args.host = &b->host;
  axl_status s;
  begin_plugin_call();
  try {
    s = entry(&args);
  } catch (const std::exception& e) {
    delete b;
    return skip(AXL_ERROR_PLUGIN_INVALID, std::string("negotiate threw an exception: ") + e.what());
  } catch (...) {
    delete b;
    return skip(AXL_ERROR_PLUGIN_INVALID, "negotiate threw an exception");
  }
  if (s != AXL_SUCCESS) {
    std::string why = std::string("negotiate failed with ") + axl_status_name(s);
    if (plugin_reported()) why += ": " + std::string(axl_last_error_message());
    if (s == AXL_ERROR_VERSION_MISMATCH)
      why += " (core ABI is " + std::to_string(AXL_PLUGIN_ABI_MAJOR) + "." +
             std::to_string(AXL_PLUGIN_ABI_MINOR) + ")";
    delete b;
    return skip(s == AXL_ERROR_VERSION_MISMATCH ? s : AXL_ERROR_PLUGIN_INVALID, why);
  }
  const axl_plugin_info* info = args.info;
  const axl_plugin_table* table = args.table;
  const size_t info_min = offsetof(axl_plugin_info, flags) + sizeof(uint32_t);
  if (!info) { delete b; return skip(AXL_ERROR_PLUGIN_INVALID, "negotiate returned no info block"); }
  if (info->struct_size < info_min || info->struct_size > kMaxStructSize) {
    delete b;
    return skip(AXL_ERROR_PLUGIN_INVALID,
                "info struct_size " + std::to_string(info->struct_size) + " is outside [" +
                    std::to_string(info_min) + ", " + std::to_string(kMaxStructSize) + "]");
  }
  if (args.plugin_abi_minor > AXL_PLUGIN_ABI_MINOR) {
    delete b;
    return skip(AXL_ERROR_VERSION_MISMATCH,
                "plugin answered ABI minor " + std::to_string(args.plugin_abi_minor) +
                    ", above the core's " + std::to_string(AXL_PLUGIN_ABI_MINOR));
  }
  std::string name = info->name ? info->name : "";
  rec.name = name;
  rec.api = info->api ? info->api : "";
  rec.version = info->version ? info->version : "";
  rec.flags = info->flags;
  rec.abi_major = AXL_PLUGIN_ABI_MAJOR;
  rec.abi_minor = args.plugin_abi_minor;
  if (!valid_name(name) || name != file_name) {
    delete b;
    return skip(AXL_ERROR_PLUGIN_INVALID,
                "plugin reports name '" + name + "' but its file is named for '" + file_name +
                    "' (names must match and use [a-z0-9_])");
  }
  if (!table) { delete b; return skip(AXL_ERROR_PLUGIN_INVALID, "negotiate returned no function table"); }
  const size_t table_min = offsetof(axl_plugin_table, backend_init) + sizeof(void*);
  if (table->struct_size < table_min || table->struct_size > kMaxStructSize) {
    delete b;
    return skip(AXL_ERROR_PLUGIN_INVALID,
                "function table struct_size " + std::to_string(table->struct_size) +
                    " is outside [" + std::to_string(table_min) + ", " +
                    std::to_string(kMaxStructSize) + "]");
  }
  // Copy what the plugin declared; slots past its struct_size stay NULL.
  memcpy(&b->table, table, std::min(table->struct_size, sizeof(axl_plugin_table)));
  b->table.struct_size = sizeof(axl_plugin_table);
  std::string missing;
  for (const auto& slot : kSlots) {
    void* fn;
    memcpy(&fn, reinterpret_cast<const char*>(&b->table) + slot.offset, sizeof fn);
    if (slot.required && !fn) missing += (missing.empty() ? "" : ", ") + std::string(slot.name);
  }
  if (!missing.empty()) {
    delete b;
    return skip(AXL_ERROR_PLUGIN_INVALID, "function table lacks required slots: " + missing);
  }
  b->api = rec.api;
  b->version = rec.version;
  b->flags = info->flags;
  b->abi_minor = args.plugin_abi_minor;

  // Counting must be cheap and must not start a driver (plugin.h).
  uint32_t count = 0;
  s = AXL_CALL(b, backend_device_count, &count);
  if (s != AXL_SUCCESS) {
    rec.state = AXL_PLUGIN_STATE_UNAVAILABLE;
    rec.status = s;
    rec.reason = axl_last_error_message();
    rec.backend = b;
    b->init_state = 2;
    b->init_status = s;
    b->init_message = rec.reason;
    r.backends.push_back(b);
    logf(s == AXL_ERROR_BACKEND_UNAVAILABLE ? AXL_LOG_INFO : AXL_LOG_WARN,
         "plugin %s is unavailable: %s", name.c_str(), rec.reason.c_str());
    discovery_note("  unavailable: " + rec.reason);
    return;
  }
  b->device_count = count;
  rec.device_count = count;
  rec.state = AXL_PLUGIN_STATE_LOADED;
  rec.backend = b;
  r.backends.push_back(b);
  if (info->flags & AXL_PLUGIN_FLAG_EXPERIMENTAL)
    logf(AXL_LOG_WARN, "plugin %s is experimental", name.c_str());
  logf(AXL_LOG_INFO, "loaded plugin %s (%s, api %s, ABI %u.%u, %u device(s))", name.c_str(),
       rec.path.c_str(), rec.api.c_str(), AXL_PLUGIN_ABI_MAJOR, b->abi_minor, count);
  discovery_note("  loaded: name " + name + ", api " + rec.api + ", ABI " +
                 std::to_string(AXL_PLUGIN_ABI_MAJOR) + "." + std::to_string(b->abi_minor) +
                 ", " + std::to_string(count) + " device(s)");
}

std::atomic<bool> g_exit_drained{false};

// The exit drain: queued work and the reaper's pending frees finish (until
// the exit deadline, exit.cpp), through the backends'
// drivers. Registered more than once (order_exit_drain), it runs once, at
// the first of its registrations that exit reaches.
void atexit_handler() {
  if (g_exit_drained.exchange(true)) return;
  drain_live_queues_for_exit();
  drain_deferred_frees();
  g_exiting.store(true);
}

void fork_prepare() { registry().mu.lock(); }
void fork_parent() { registry().mu.unlock(); }
void fork_child() {
  Registry& r = registry();
  r.mu.unlock();
  for (Backend* b : r.backends)
    if (b->init_state.load() == 1 && !(b->flags & AXL_PLUGIN_FLAG_FORK_SAFE)) {
      b->poisoned.store(true);
      b->usable.store(false);
    }
}

}  // namespace

bool process_exiting() { return g_exiting.load(std::memory_order_relaxed); }

Registry& registry() {
  // Leaked on purpose: plugins are never unloaded at exit, and objects
  // released during exit must still find the registry.
  static Registry* r = new Registry();
  return *r;
}

void discovery_note(const std::string& line) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  r.discovery_log += line;
  r.discovery_log += '\n';
}

void order_exit_drain() {
  // atexit handlers run in reverse order of registration, and a driver
  // registers its own exit teardown when it is initialised (CUDA: cuInit,
  // during discovery) or when it first makes a device's context, all after
  // install_process_hooks. Registering the drain again now puts it before
  // them, so it never calls into a driver that has already torn down.
  atexit(atexit_handler);
}

void install_process_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(atexit_handler);
  });
}

void discover(Registry& r) {
  log_init();
  install_process_hooks();
  std::set<std::string> disabled;
  if (const char* d = env("AXL_PLUGINS_DISABLE"))
    for (auto& n : split(d, ',')) disabled.insert(n);
  std::set<std::string> seen;  // names already loaded or shadowing

  auto consider = [&](const std::string& path, bool exclusive) {
    PluginRecord rec;
    rec.path = path;
    std::string fname = name_from_file(path);
    discovery_note("file " + path);
    if (fname.empty()) {
      rec.reason = "file name is not libaxl_plugin_<name>.so";
      rec.status = AXL_ERROR_PLUGIN_INVALID;
      discovery_note("  skipped: " + rec.reason);
    } else if (disabled.count(fname)) {
      rec.name = fname;
      rec.state = AXL_PLUGIN_STATE_DISABLED;
      rec.reason = "disabled by AXL_PLUGINS_DISABLE";
      discovery_note("  disabled by AXL_PLUGINS_DISABLE");
    } else if (seen.count(fname)) {
      rec.name = fname;
      rec.state = AXL_PLUGIN_STATE_SHADOWED;
      rec.status = AXL_ERROR_PLUGIN_INVALID;
      for (auto& o : r.records)
        if (o.backend && o.backend->name == fname) rec.reason = "shadowed by " + o.path;
      logf(AXL_LOG_INFO, "plugin %s is %s", path.c_str(), rec.reason.c_str());
      discovery_note("  " + rec.reason);
    } else {
      load_one(r, rec, fname);
      // A broken file does not claim its name: a later good one may load.
      if (rec.state == AXL_PLUGIN_STATE_LOADED || rec.state == AXL_PLUGIN_STATE_UNAVAILABLE)
        seen.insert(fname);
    }
    if (exclusive && rec.state != AXL_PLUGIN_STATE_LOADED &&
        rec.state != AXL_PLUGIN_STATE_UNAVAILABLE && rec.state != AXL_PLUGIN_STATE_DISABLED &&
        r.init_status == AXL_SUCCESS) {
      r.init_status = AXL_ERROR_PLUGIN_INVALID;
      r.init_message = "AXL_PLUGINS lists " + path + ", which failed to load: " + rec.reason;
      logf(AXL_LOG_ERROR, "%s", r.init_message.c_str());
    }
    r.records.push_back(std::move(rec));
  };

  if (const char* list = env("AXL_PLUGINS"); list && *list) {
    discovery_note("AXL_PLUGINS is set: loading only the files it lists");
    std::set<std::string> listed;
    for (auto& p : split(list, ',')) {
      // The same file named twice is one request, not a name clash.
      if (!listed.insert(p).second) {
        discovery_note("file " + p + " listed again in AXL_PLUGINS: ignored");
        continue;
      }
      if (p[0] != '/') {
        PluginRecord rec;
        rec.path = p;
        rec.status = AXL_ERROR_PLUGIN_INVALID;
        rec.reason = "relative path in AXL_PLUGINS (only absolute paths are accepted)";
        discovery_note("file " + p + "\n  skipped: " + rec.reason);
        if (r.init_status == AXL_SUCCESS) {
          r.init_status = AXL_ERROR_PLUGIN_INVALID;
          r.init_message = "AXL_PLUGINS lists " + p + ": " + rec.reason;
        }
        r.records.push_back(std::move(rec));
        continue;
      }
      consider(p, true);
    }
    return;
  }
  std::vector<std::string> dirs;
  if (const char* pp = env("AXL_PLUGIN_PATH"); pp && *pp) {
    for (auto& d : split(pp, ':')) {
      // The current directory is never searched, not even by a relative entry.
      if (d[0] != '/') {
        logf(AXL_LOG_WARN, "ignoring relative folder '%s' in AXL_PLUGIN_PATH", d.c_str());
        discovery_note("AXL_PLUGIN_PATH entry '" + d + "' ignored: relative");
        continue;
      }
      dirs.push_back(d);
    }
  }
  const size_t user_dirs = dirs.size();
  std::string cd = core_dir();
  if (!cd.empty()) dirs.push_back(cd + "/axl/plugins");
  for (size_t i = 0; i < dirs.size(); ++i) {
    discovery_note("folder " + dirs[i]);
    for (auto& f : list_plugins(dirs[i], i < user_dirs)) consider(f, false);
  }
}

axl_status ensure_init() {
  Registry& r = registry();
  std::call_once(g_discovery_once, [&] { discover(r); });
  if (r.init_status != AXL_SUCCESS)
    return fail(r.init_status, "%s", r.init_message.c_str());
  return AXL_SUCCESS;
}

// The count from discovery may be a census taken without starting the
// driver (plugin.h: counting must not initialise one); once the driver is
// up, its own count is the truth. The caller holds init_mu.
void Backend::refresh_device_count() {
  uint32_t exact = 0;
  if (AXL_CALL(this, backend_device_count, &exact) != AXL_SUCCESS) return;
  const uint32_t counted = device_count.load();
  if (exact == counted) return;
  logf(AXL_LOG_INFO, "backend %s: %u device(s) once initialised; %u were counted at discovery", name.c_str(),
       exact, counted);
  device_count.store(exact);
  Registry& r = registry();
  std::lock_guard<std::mutex> rl(r.mu);
  for (auto& rec : r.records)
    if (rec.backend == this) rec.device_count = exact;
}

axl_status Backend::ensure_ready_slow() {
  if (poisoned.load(std::memory_order_relaxed))
    return fail_backend(AXL_ERROR_FORKED, name, 0, nullptr,
                        "backend '" + name +
                            "' was initialised in the parent process before fork(); "
                            "the child cannot use it: start workers with spawn instead");
  int st = init_state.load(std::memory_order_acquire);
  if (st == 1) return AXL_SUCCESS;
  if (st == 0) {
    std::lock_guard<std::mutex> lk(init_mu);
    st = init_state.load();
    if (st == 0) {
      install_process_hooks();
      axl_status s = AXL_CALL(this, backend_init);
      if (s == AXL_SUCCESS) {
        refresh_device_count();
        order_exit_drain();
        init_state.store(1, std::memory_order_release);
        usable.store(true, std::memory_order_release);
        trace_on_backend_ready(this);
        return AXL_SUCCESS;
      }
      axl_error_info e{};
      e.struct_size = sizeof e;
      axl_last_error(&e);
      init_status = s;
      init_message = e.message;
      init_native_code = e.native_code;
      init_native_name = e.native_name;
      init_state.store(2, std::memory_order_release);
      logf(s == AXL_ERROR_BACKEND_UNAVAILABLE ? AXL_LOG_INFO : AXL_LOG_WARN,
           "backend %s failed to initialise: %s", name.c_str(), init_message.c_str());
      Registry& r = registry();
      std::lock_guard<std::mutex> rl(r.mu);
      // The record is all axl-info has: keep the vendor's code name in it.
      std::string reason = init_message;
      if (!init_native_name.empty() && reason.find(init_native_name) == std::string::npos)
        reason += " (" + init_native_name + ")";
      for (auto& rec : r.records)
        if (rec.backend == this) {
          rec.state = AXL_PLUGIN_STATE_UNAVAILABLE;
          rec.status = s;
          rec.device_count = 0;  // the census counted them; none can be used
          if (rec.init_reason.empty()) rec.init_reason = reason;
        }
      return s;
    }
  }
  return fail_backend(init_status, name, init_native_code, init_native_name.c_str(),
                      init_message);
}

}  // namespace axl::core

using namespace axl::core;

extern "C" {

AXL_API axl_status axl_init(void) {
  return guard([]() -> axl_status { return ensure_init(); });
}

AXL_API axl_status axl_plugin_count(uint32_t* out) {
  return guard([&]() -> axl_status {
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_plugin_count: out_count is NULL");
    ensure_init();  // report the files even when AXL_PLUGINS failed
    Registry& r = registry();
    std::lock_guard<std::mutex> lk(r.mu);
    *out = static_cast<uint32_t>(r.records.size());
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_plugin_get_record(uint32_t index, axl_plugin_record* out) {
  return guard([&]() -> axl_status {
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_plugin_get_record: out is NULL");
    if (out->struct_size < sizeof(axl_plugin_record))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_plugin_get_record: struct_size %zu, expected >= %zu",
                  out->struct_size, sizeof(axl_plugin_record));
    ensure_init();
    Registry& r = registry();
    std::lock_guard<std::mutex> lk(r.mu);
    if (index >= r.records.size())
      return fail(AXL_ERROR_OUT_OF_RANGE, "plugin index %u is out of range: %zu plugin file(s)",
                  index, r.records.size());
    // Records are never removed, so these strings live for the process.
    const PluginRecord& rec = r.records[index];
    out->path = rec.path.c_str();
    out->name = rec.name.c_str();
    out->api = rec.api.c_str();
    out->version = rec.version.c_str();
    out->abi_major = rec.abi_major;
    out->abi_minor = rec.abi_minor;
    out->state = rec.state;
    out->status = rec.status;
    out->reason = rec.init_reason.empty() ? rec.reason.c_str() : rec.init_reason.c_str();
    out->device_count = rec.device_count;
    out->flags = rec.flags;
    return AXL_SUCCESS;
  });
}

AXL_API const char* axl_plugin_state_name(int32_t state) {
  switch (state) {
    case AXL_PLUGIN_STATE_LOADED: return "loaded";
    case AXL_PLUGIN_STATE_SKIPPED: return "skipped";
    case AXL_PLUGIN_STATE_SHADOWED: return "shadowed";
    case AXL_PLUGIN_STATE_DISABLED: return "disabled";
    case AXL_PLUGIN_STATE_UNAVAILABLE: return "unavailable";
    default: return "unknown";
  }
}

AXL_API axl_status axl_plugin_name_from_path(const char* path, char* name, size_t capacity) {
  return guard([&]() -> axl_status {
    if (!path || !name)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_plugin_name_from_path: path or name is NULL");
    // The discovery rule itself, so a tool never disagrees with the loader.
    const std::string n = name_from_file(path);
    if (n.empty())
      return fail(AXL_ERROR_NOT_FOUND, "axl_plugin_name_from_path: '%s' is not named libaxl_plugin_<name>.so",
                  path);
    if (capacity < n.size() + 1)
      return fail(AXL_ERROR_OUT_OF_RANGE,
                  "axl_plugin_name_from_path: the name '%s' needs %zu bytes, the buffer has %zu", n.c_str(),
                  n.size() + 1, capacity);
    memcpy(name, n.c_str(), n.size() + 1);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_discovery_log(char* buf, size_t capacity, size_t* out_size) {
  return guard([&]() -> axl_status {
    if (!out_size) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_discovery_log: out_size is NULL");
    ensure_init();
    Registry& r = registry();
    std::lock_guard<std::mutex> lk(r.mu);
    *out_size = r.discovery_log.size() + 1;
    if (!buf || capacity < *out_size) return AXL_SUCCESS;
    memcpy(buf, r.discovery_log.c_str(), *out_size);
    return AXL_SUCCESS;
  });
}

}  // extern "C"
