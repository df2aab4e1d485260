// The registry of outcomes, the per-backend/per-device runner, the watchdog
// and the JSON certification report.
//
// Two raw axl_* calls stay raw on purpose: axl_last_error, read as the C ABI
// gives it for the cases that check the record itself (cts::LastError), and
// axl_plugin_name_from_path, which axl.hpp does not wrap.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

#include <catch2/catch.hpp>

#include "axl/report.hpp"
#include "cts.hpp"
#include "known_failures.hpp"

namespace cts {

namespace {

struct Result {
  std::string backend, case_name;
  int device = -1;  // index within the backend; -1: the backend as a whole
  Outcome outcome = Outcome::pass;
  std::string detail;
  std::vector<std::string> notes;
};

// Results and the report inputs. Case bodies never hold this lock while they
// call into a backend, so the watchdog can always take it.
std::mutex g_mu;
std::vector<Result> g_results;
std::string g_report_path;
std::vector<std::string> g_argv;

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string label_of(const std::string& backend, int device) {
  return device < 0 ? backend : cat(backend, "/", device);
}

void print_result(const Result& r) {
  if (options().quiet && r.outcome == Outcome::pass) return;
  static const char* tags[] = {"PASS", "FAIL", "SKIP", "UNSUPPORTED", "KNOWN-FAIL"};
  std::string line = cat("[", tags[static_cast<int>(r.outcome)], "] ", r.case_name, "  ",
                         label_of(r.backend, r.device));
  if (!r.detail.empty()) line += cat(": ", r.detail);
  std::printf("%s\n", line.c_str());
  for (const auto& n : r.notes) std::printf("       note: %s\n", n.c_str());
  std::fflush(stdout);
}

// ----------------------------------------------------------------- JSON --
// One escaper for every JSON axl writes: axl-info's report and this one.
std::string json_str(const std::string& s) { return axl::json_quote(s); }

std::string version_of(uint32_t major, uint32_t minor) { return cat(major, ".", minor); }

// As a JSON array, by axl.hpp's names (a bit it does not know, in hex).
std::string flag_names(uint32_t flags) {
  std::vector<std::string> v;
  for (const std::string& n : axl::plugin_flag_names(flags)) v.push_back(json_str(n));
  return "[" + join(v, ", ") + "]";
}

struct Counts {
  int pass = 0, fail = 0, skip = 0, unsupported = 0, known_failure = 0;
  void add(Outcome o) {
    switch (o) {
      case Outcome::pass: ++pass; break;
      case Outcome::fail: ++fail; break;
      case Outcome::skip: ++skip; break;
      case Outcome::unsupported: ++unsupported; break;
      case Outcome::known_failure: ++known_failure; break;
    }
  }
  std::string json() const {
    return cat("{\"pass\": ", pass, ", \"skip\": ", skip, ", \"unsupported\": ", unsupported,
               ", \"fail\": ", fail, ", \"known_failure\": ", known_failure, "}");
  }
};

std::string result_json(const Result& r) {
  std::string s = cat("{\"case\": ", json_str(r.case_name));
  if (r.device >= 0) s += cat(", \"device\": ", r.device);
  s += cat(", \"reason\": ", json_str(r.detail));
  if (!r.notes.empty()) {
    std::vector<std::string> n;
    for (const auto& x : r.notes) n.push_back(json_str(x));
    s += ", \"notes\": [" + join(n, ", ") + "]";
  }
  return s + "}";
}

// Builds the report from g_results; the caller holds g_mu.
std::string report_locked() {
  const auto [abi_major, abi_minor] = axl::abi_version();
  std::string o = "{\n";
  o += "  \"format\": \"axl-cts report 1\",\n";
  o += cat("  \"core\": {\"version\": ", json_str(axl::version_string()),
           ", \"abi\": ", json_str(version_of(abi_major, abi_minor)),
           ", \"plugin_abi\": ", json_str(version_of(AXL_PLUGIN_ABI_MAJOR, AXL_PLUGIN_ABI_MINOR)),
           "},\n");
  {
    std::vector<std::string> a;
    for (const auto& x : g_argv) a.push_back(json_str(x));
    o += cat("  \"run\": {\"arguments\": [", join(a, ", "), "], \"run_known_failures\": ",
             options().run_known_failures ? "true" : "false", "},\n");
  }
  Counts total;
  std::vector<std::string> bjson;
  for (const BackendUnderTest& b : backends()) {
    Counts c;
    std::vector<std::string> passed, skipped, unsupported, failed, known;
    for (const Result& r : g_results) {
      if (r.backend != b.name) continue;
      c.add(r.outcome);
      total.add(r.outcome);
      switch (r.outcome) {
        case Outcome::pass:
          passed.push_back(json_str(r.device < 0 ? r.case_name : cat(r.case_name, "/", r.device)));
          break;
        case Outcome::skip: skipped.push_back(result_json(r)); break;
        case Outcome::unsupported: unsupported.push_back(result_json(r)); break;
        case Outcome::fail: failed.push_back(result_json(r)); break;
        case Outcome::known_failure: known.push_back(result_json(r)); break;
      }
    }
    std::vector<std::string> devs;
    for (const DeviceUnderTest& d : b.devices)
      devs.push_back(cat("{\"index\": ", d.backend_index, ", \"label\": ", json_str(d.info.label),
                         ", \"api\": ", json_str(d.info.api),
                         ", \"architecture\": ", json_str(d.info.architecture_name),
                         ", \"model\": ", json_str(d.info.model_name),
                         ", \"total_memory_bytes\": ", d.info.total_memory_bytes, "}"));
    auto list = [](const std::vector<std::string>& v) {
      return v.empty() ? std::string("[]") : "[\n        " + join(v, ",\n        ") + "\n      ]";
    };
    std::string s = "    {\n";
    s += cat("      \"name\": ", json_str(b.name), ",\n");
    s += cat("      \"version\": ", json_str(b.record.version), ",\n");
    s += cat("      \"api\": ", json_str(b.record.api), ",\n");
    s += cat("      \"abi\": ", json_str(b.record.abi_major ? version_of(b.record.abi_major, b.record.abi_minor) : ""),
             ",\n");
    s += cat("      \"path\": ", json_str(b.path), ",\n");
    s += cat("      \"state\": ", json_str(b.record.state_name()), ",\n");
    s += cat("      \"reason\": ", json_str(b.record.reason), ",\n");
    s += cat("      \"flags\": ", flag_names(b.record.flags), ",\n");
    s += cat("      \"devices\": [", join(devs, ", "), "],\n");
    s += cat("      \"counts\": ", c.json(), ",\n");
    s += cat("      \"passed\": ", list(passed), ",\n");
    s += cat("      \"skipped\": ", list(skipped), ",\n");
    s += cat("      \"unsupported\": ", list(unsupported), ",\n");
    s += cat("      \"failed\": ", list(failed), ",\n");
    s += cat("      \"known_failures\": ", list(known), "\n");
    s += "    }";
    bjson.push_back(s);
  }
  o += "  \"backends\": [\n" + join(bjson, ",\n") + (bjson.empty() ? "" : "\n") + "  ],\n";
  o += cat("  \"totals\": ", total.json(), ",\n");
  o += cat("  \"result\": ", json_str(total.fail ? "fail" : "pass"), "\n");
  return o + "}\n";
}

bool write_report_locked() {
  if (g_report_path.empty()) return true;
  const std::string text = report_locked();
  // Written next to the target and renamed, so a reader never sees half a
  // report (the watchdog may write one while the main thread is stuck).
  const std::string tmp = g_report_path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) {
      std::fprintf(stderr, "axl-cts: cannot write %s\n", tmp.c_str());
      return false;
    }
    f << text;
    if (!f) return false;
  }
  if (std::rename(tmp.c_str(), g_report_path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());  // no stray temporary beside the target
    std::fprintf(stderr, "axl-cts: cannot write the report to %s: %s\n", g_report_path.c_str(), std::strerror(err));
    return false;
  }
  return true;
}

// -------------------------------------------------------------- watchdog --
struct Watchdog {
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false;
  std::chrono::steady_clock::time_point deadline;
  std::string backend, case_name;
  int device = -1;
};

Watchdog& watchdog() {
  static Watchdog* w = new Watchdog();  // leaked: its thread outlives main
  return *w;
}

void watchdog_loop() {
  Watchdog& w = watchdog();
  std::unique_lock<std::mutex> lk(w.mu);
  for (;;) {
    if (!w.armed) {
      w.cv.wait(lk);
      continue;
    }
    if (w.cv.wait_until(lk, w.deadline) != std::cv_status::timeout || !w.armed) continue;
    if (std::chrono::steady_clock::now() < w.deadline) continue;
    Result r{w.backend, w.case_name, w.device, Outcome::fail,
             cat("timed out after ", options().case_timeout_s,
                 " s: the case did not return (a hang in the backend?); axl-cts stopped here"),
             {}};
    lk.unlock();
    std::lock_guard<std::mutex> g(g_mu);
    g_results.push_back(r);
    print_result(r);
    write_report_locked();
    std::fflush(stdout);
    // The stuck thread cannot be unwound; leave without running destructors
    // or atexit handlers that could wait on it.
    _exit(1);
  }
}

class Armed {
 public:
  Armed(const std::string& backend, const std::string& case_name, int device) {
    Watchdog& w = watchdog();
    std::lock_guard<std::mutex> lk(w.mu);
    w.armed = true;
    w.backend = backend;
    w.case_name = case_name;
    w.device = device;
    w.deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(static_cast<int64_t>(options().case_timeout_s * 1000));
    w.cv.notify_all();
  }
  ~Armed() {
    Watchdog& w = watchdog();
    std::lock_guard<std::mutex> lk(w.mu);
    w.armed = false;
    w.cv.notify_all();
  }
  Armed(const Armed&) = delete;
  Armed& operator=(const Armed&) = delete;
};

// ---------------------------------------------------------------- runner --
void add_result(Result r) {
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g_results.push_back(r);
    print_result(r);
  }
  // Catch2 sees real failures only (not skips, not expected known failures),
  // so its own summary and exit status agree with the report.
  if (r.outcome == Outcome::fail)
    FAIL_CHECK(label_of(r.backend, r.device) << ": " << r.detail);
}

// Runs one body and decides its outcome.
Result run_body(BackendUnderTest& b, DeviceUnderTest* d, int device, const char* case_name,
                const std::function<void(Ctx&)>& body) {
  Ctx c(b, d);
  std::string skipped, unsupported;
  {
    Armed armed(b.name, case_name, device);
    try {
      body(c);
    } catch (const FatalFailure&) {
      // Already in c.failures.
    } catch (const SkipCase& s) {
      skipped = s.reason;
    } catch (const UnsupportedCase& u) {
      unsupported = u.what;
    } catch (const axl::Error& e) {
      if (e.status() == AXL_ERROR_UNSUPPORTED)
        unsupported = e.what();
      else
        c.failures.push_back(cat("unexpected ", e.status_name(), ": ", e.what()));
    } catch (const std::exception& e) {
      c.failures.push_back(cat("unexpected exception: ", e.what()));
    } catch (...) {
      c.failures.push_back("unexpected exception of unknown type");
    }
  }
  Result r{b.name, case_name, device, Outcome::pass, "", c.notes};
  if (!c.failures.empty()) {
    r.outcome = Outcome::fail;
    r.detail = join(c.failures, "; ");
  } else if (!unsupported.empty()) {
    r.outcome = Outcome::unsupported;
    r.detail = unsupported;
  } else if (!skipped.empty()) {
    r.outcome = Outcome::skip;
    r.detail = skipped;
  } else if (!c.skip_reasons.empty()) {
    r.outcome = Outcome::skip;
    r.detail = join(c.skip_reasons, "; ");
  }
  return r;
}

// Applies known_failures.hpp around one backend's runs. Returns false when
// the case must not run on this backend (the outcome is already recorded).
bool known_issue_gate(const BackendUnderTest& b, const char* case_name, const KnownIssue** out) {
  *out = find_known_issue(b.name, case_name);
  if (!*out) return true;
  if ((*out)->kind == KnownIssue::not_supported) {
    record(b, case_name, -1, Outcome::unsupported, cat("declared not supported: ", (*out)->reason));
    return false;
  }
  if (!options().run_known_failures) {
    record(b, case_name, -1, Outcome::skip,
           cat("known failure (run with --run-known-failures to try it): ", (*out)->reason));
    return false;
  }
  return true;
}

void settle_known(Result& r, const KnownIssue* k) {
  if (!k) return;
  if (r.outcome == Outcome::fail) {
    r.outcome = Outcome::known_failure;
    r.detail = cat("fails as known_failures.hpp says (", k->reason, "): ", r.detail);
  } else if (r.outcome == Outcome::pass) {
    r.outcome = Outcome::fail;
    r.detail = cat("unexpected pass: known_failures.hpp lists this case as failing on ", k->backend,
                   " (", k->reason, "); if the bug is fixed, remove the entry");
  }
}

}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::pass: return "pass";
    case Outcome::fail: return "fail";
    case Outcome::skip: return "skip";
    case Outcome::unsupported: return "unsupported";
    case Outcome::known_failure: return "known_failure";
  }
  return "?";
}


Options& options() {
  static Options o;
  return o;
}

std::vector<BackendUnderTest>& backends() {
  static std::vector<BackendUnderTest> b;
  return b;
}

bool BackendUnderTest::has_slot(const std::string& slot) const {
  for (const SlotState& s : probe.slots)
    if (s.name == slot) return s.present;
  return true;
}

std::string BackendUnderTest::unusable_reason() const {
  if (record.state == AXL_PLUGIN_STATE_SKIPPED) return cat("plugin refused by the core: ", record.reason);
  if (record.state == AXL_PLUGIN_STATE_UNAVAILABLE) return record.reason.empty() ? "unavailable" : record.reason;
  if (devices.empty() && !device_error.empty()) return cat("no usable device: ", device_error);
  if (devices.empty()) return "the backend reports no devices";
  return "";
}

// ------------------------------------------------------------------- Ctx --
std::string Ctx::where() const {
  return device_ ? cat(backend_.name, "/", device_->backend_index) : backend_.name;
}

void Ctx::check(bool ok, const std::string& what) {
  if (ok) return;
  std::lock_guard<std::mutex> lk(mu_);
  failures.push_back(what);
}

void Ctx::fatal(const std::string& what) {
  check(false, what);
  throw FatalFailure{};
}

void Ctx::skip_part(const std::string& reason) {
  std::lock_guard<std::mutex> lk(mu_);
  if (std::find(skip_reasons.begin(), skip_reasons.end(), reason) == skip_reasons.end())
    skip_reasons.push_back(reason);
}

void Ctx::note(const std::string& text) {
  std::lock_guard<std::mutex> lk(mu_);
  if (std::find(notes.begin(), notes.end(), text) == notes.end()) notes.push_back(text);
}

void Ctx::ok(axl_status s, const std::string& what) {
  if (s == AXL_SUCCESS) return;
  const axl::Error e = axl::last_error(s);
  if (s == AXL_ERROR_UNSUPPORTED) unsupported(cat(what, ": ", e.what()));
  fatal(cat(what, " returned ", axl::status_name(s), ": ", e.what()));
}

bool Ctx::expect_status(axl_status s, axl_status want, const std::string& what,
                        const std::string& mention) {
  LastError e = last_error();
  if (s != want) {
    check(false, cat(what, " returned ", axl::status_name(s), ", expected ", axl::status_name(want),
                     s != AXL_SUCCESS ? cat(" (", e.message, ")") : std::string()));
    return false;
  }
  if (want == AXL_SUCCESS) return true;
  bool good = true;
  if (e.status != s) {
    check(false, cat(what, ": axl_last_error says ", axl::status_name(e.status), " but the call returned ",
                     axl::status_name(s)));
    good = false;
  }
  if (e.message.empty()) {
    check(false, cat(what, ": ", axl::status_name(s), " with an empty axl_last_error message"));
    good = false;
  } else if (!mention.empty() && e.message.find(mention) == std::string::npos) {
    check(false, cat(what, ": the message '", e.message, "' does not mention '", mention, "'"));
    good = false;
  }
  return good;
}

void Ctx::need_slot(const std::string& slot) {
  if (!backend_.has_slot(slot)) unsupported(cat(slot, " is NULL in the function table"));
}

// ---------------------------------------------------------------- runners --
void record(const BackendUnderTest& b, const std::string& case_name, int device, Outcome o,
            const std::string& detail, const std::vector<std::string>& notes) {
  add_result(Result{b.name, case_name, device, o, detail, notes});
}

void for_each_device(const char* case_name, const std::function<void(Ctx&)>& body) {
  for (BackendUnderTest& b : backends()) {
    std::string why = b.unusable_reason();
    if (!why.empty()) {
      record(b, case_name, -1, Outcome::skip, why);
      continue;
    }
    const KnownIssue* k = nullptr;
    if (!known_issue_gate(b, case_name, &k)) continue;
    for (DeviceUnderTest& d : b.devices) {
      Result r = run_body(b, &d, static_cast<int>(d.backend_index), case_name, body);
      settle_known(r, k);
      add_result(r);
    }
  }
}

void for_each_backend(const char* case_name, const std::function<void(Ctx&)>& body) {
  for (BackendUnderTest& b : backends()) {
    // A known failure cannot be tried on a backend that cannot run: the
    // skip then gives the backend's own reason, as device cases do.
    const std::string why = b.unusable_reason();
    if (!why.empty() && find_known_issue(b.name, case_name)) {
      record(b, case_name, -1, Outcome::skip, why);
      continue;
    }
    const KnownIssue* k = nullptr;
    if (!known_issue_gate(b, case_name, &k)) continue;
    Result r = run_body(b, nullptr, -1, case_name, body);
    settle_known(r, k);
    add_result(r);
  }
}

void start_watchdog(const std::string& report_path, const std::vector<std::string>& argv) {
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g_report_path = report_path;
    g_argv = argv;
  }
  if (options().case_timeout_s > 0) std::thread(watchdog_loop).detach();
}

bool finish(const std::string& report_path, const std::vector<std::string>& argv) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_report_path = report_path;
  g_argv = argv;
  bool any_fail = false;
  std::printf("\naxl-cts summary (core %s)\n", axl::version_string().c_str());
  std::printf("  %-16s %-12s %5s %5s %11s %5s %10s\n", "backend", "state", "pass", "skip",
              "unsupported", "fail", "known-fail");
  for (const BackendUnderTest& b : backends()) {
    Counts c;
    for (const Result& r : g_results)
      if (r.backend == b.name) c.add(r.outcome);
    any_fail = any_fail || c.fail > 0;
    std::printf("  %-16s %-12s %5d %5d %11d %5d %10d\n", b.name.c_str(), b.record.state_name(), c.pass,
                c.skip, c.unsupported, c.fail, c.known_failure);
  }
  if (backends().empty()) std::printf("  (no backend under test)\n");
  // A reason shared by many skips is printed once.
  std::map<std::string, int> reasons;
  for (const Result& r : g_results)
    if (r.outcome == Outcome::skip) ++reasons[cat(r.backend, ": ", r.detail)];
  if (!reasons.empty()) {
    std::printf("skipped, by reason:\n");
    for (const auto& [reason, n] : reasons) std::printf("  %3d x %s\n", n, reason.c_str());
  }
  if (!report_path.empty()) {
    if (write_report_locked())
      std::printf("report: %s\n", report_path.c_str());
    else
      any_fail = true;
  }
  std::fflush(stdout);
  return any_fail;
}

// ---------------------------------------------------------------- helpers --
std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  uint64_t x = seed;
  for (size_t i = 0; i < n; i += 8) {
    x += 0x9e3779b97f4a7c15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    for (size_t k = 0; k < 8 && i + k < n; ++k) out[i + k] = static_cast<uint8_t>(z >> (8 * k));
  }
  return out;
}

std::vector<uint8_t> read_back(const axl::Queue& q, const axl::Buffer& b) {
  std::vector<uint8_t> out(b.size());
  q.copy_to_host(out.data(), b, out.size());
  q.synchronize();
  return out;
}

std::string first_difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) return cat("size ", got.size(), " != ", want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      size_t n = 0;
      for (size_t j = i; j < got.size(); ++j) n += got[j] != want[j];
      return cat("byte ", i, " is 0x", std::hex, int(got[i]), ", expected 0x", int(want[i]),
                 std::dec, " (", n, " byte(s) differ)");
    }
  return "";
}

LastError last_error() {
  LastError out;
  axl_error_info e{};
  e.struct_size = sizeof e;
  if (axl_last_error(&e) != AXL_SUCCESS) return out;
  out.status = e.status;
  out.backend = e.backend ? e.backend : "";
  out.native_code = e.native_code;
  out.native_name = e.native_name ? e.native_name : "";
  out.message = e.message ? e.message : "";
  return out;
}

std::string plugin_file_name(const std::string& path) {
  // Discovery's own rule; a pure function of the string, so the probe child
  // may call it too (it starts nothing and leaves no last error behind that
  // anyone reads).
  std::vector<char> name(path.size() + 1);
  if (axl_plugin_name_from_path(path.c_str(), name.data(), name.size()) != AXL_SUCCESS) return "";
  return name.data();
}

}  // namespace cts
