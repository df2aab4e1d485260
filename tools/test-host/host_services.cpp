#include "host_services.hpp"

#include <dlfcn.h>

#include <deque>

namespace axl_test {

namespace {

std::string or_default(const char* s, const char* fallback) { return s != nullptr ? s : fallback; }

FakeHost& from(void* ctx) { return *static_cast<FakeHost*>(ctx); }

}  // namespace

uint64_t TraceEntry::bytes() const {
  return record.kind == AXL_TRACE_MEMSET ? record.memset_bytes : record.memcpy_bytes;
}

FakeHost::FakeHost() {
  services_.struct_size = sizeof services_;
  services_.ctx = this;
  services_.log = &FakeHost::on_log;
  services_.report_error = &FakeHost::on_report_error;
  services_.trace_record = &FakeHost::on_trace_record;
}

void FakeHost::on_log(void* ctx, int32_t level, const char* message) {
  FakeHost& h = from(ctx);
  LogLine line{level, or_default(message, "(null)"), std::this_thread::get_id()};
  std::lock_guard<std::mutex> lk(h.mu_);
  h.logs_.push_back(std::move(line));
}

void FakeHost::on_report_error(void* ctx, axl_status status, int64_t native_code,
                               const char* native_name, const char* message) {
  FakeHost& h = from(ctx);
  ErrorReport r{status, native_code, or_default(native_name, ""), or_default(message, ""),
                std::this_thread::get_id()};
  std::lock_guard<std::mutex> lk(h.mu_);
  h.last_[r.thread] = r;
  h.reports_.push_back(std::move(r));
}

void FakeHost::on_trace_record(void* ctx, const axl_trace_record* record) {
  FakeHost& h = from(ctx);
  TraceEntry e;
  if (record != nullptr) {
    e.record = *record;
    e.name = or_default(record->name, "");
  }
  e.record.name = nullptr;
  e.thread = std::this_thread::get_id();
  std::lock_guard<std::mutex> lk(h.mu_);
  h.traces_.push_back(std::move(e));
}

std::vector<LogLine> FakeHost::logs() const {
  std::lock_guard<std::mutex> lk(mu_);
  return logs_;
}

std::vector<ErrorReport> FakeHost::reports() const {
  std::lock_guard<std::mutex> lk(mu_);
  return reports_;
}

std::vector<TraceEntry> FakeHost::traces() const {
  std::lock_guard<std::mutex> lk(mu_);
  return traces_;
}

size_t FakeHost::log_count() const {
  std::lock_guard<std::mutex> lk(mu_);
  return logs_.size();
}

size_t FakeHost::report_count() const {
  std::lock_guard<std::mutex> lk(mu_);
  return reports_.size();
}

size_t FakeHost::trace_count() const {
  std::lock_guard<std::mutex> lk(mu_);
  return traces_.size();
}

std::string FakeHost::all_logs() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::string out;
  for (const LogLine& l : logs_) out += l.message + "\n";
  return out;
}

ErrorReport FakeHost::last_report() const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = last_.find(std::this_thread::get_id());
  return it == last_.end() ? ErrorReport{} : it->second;
}

void FakeHost::clear_last_report() {
  std::lock_guard<std::mutex> lk(mu_);
  last_.erase(std::this_thread::get_id());
}

void FakeHost::clear() {
  std::lock_guard<std::mutex> lk(mu_);
  logs_.clear();
  reports_.clear();
  traces_.clear();
  last_.clear();
}

FakeHost& new_host() {
  // Reachable through a static pointer (no leak report) and never destroyed,
  // so a plugin thread that logs during exit finds its host still there; a
  // deque keeps every host's address stable.
  static auto* hosts = new std::deque<FakeHost>();
  static std::mutex mu;
  std::lock_guard<std::mutex> lk(mu);
  return hosts->emplace_back();
}

axl_negotiate_args negotiate_args(const FakeHost& host, uint32_t major, uint32_t minor) {
  axl_negotiate_args a{};
  a.struct_size = sizeof a;
  a.core_abi_major = major;
  a.core_abi_minor = minor;
  a.host = host.services();
  return a;
}

LoadedPlugin load_plugin(const std::string& path, const FakeHost& host) {
  LoadedPlugin n;
  n.library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (n.library == nullptr) {
    const char* why = dlerror();
    n.error = "dlopen " + path + " failed: " + or_default(why, "unknown error");
    return n;
  }
  n.entry = reinterpret_cast<axl_plugin_negotiate_fn>(dlsym(n.library, AXL_PLUGIN_ENTRY_SYMBOL));
  if (n.entry == nullptr) {
    n.error = path + " has no " AXL_PLUGIN_ENTRY_SYMBOL;
    return n;
  }
  axl_negotiate_args args = negotiate_args(host);
  if (axl_status s = n.entry(&args); s != AXL_SUCCESS) {
    n.error = "negotiate failed with status " + std::to_string(s);
    const ErrorReport r = host.last_report();
    if (!r.message.empty()) n.error += ": " + r.message;
    return n;
  }
  if (args.table == nullptr || args.info == nullptr) {
    n.error = "negotiate succeeded without a table and info";
    return n;
  }
  n.info = args.info;
  n.table = args.table;
  n.plugin_abi_minor = args.plugin_abi_minor;
  return n;
}

}  // namespace axl_test
