// Errors: every failure carries a message, and the virtual backend's fault
// injection drives the error paths a healthy backend never takes.
//
// The raw axl_* calls stay raw on purpose: each provocation and each step
// of the fault chain must return its status and leave its own last-error
// record (cts::LastError, not axl::Error, which would fill an empty message
// in), exactly as the C ABI gives them.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>

#include "cts.hpp"

namespace cts {
namespace {

// The core's words when a plugin returns an error without reporting it
// (core/src/error.cpp): "<backend>: <slot> failed with <STATUS>".
bool is_generic(const LastError& e) {
  return e.message.find(" failed with AXL_") != std::string::npos;
}

// ------------------------------------------------------- fault injection --
// The virtual backend fails on request: AXL_VIRTUAL_FAIL holds rules
// "<operation>:<call>=<STATUS>[@async]" (plugins/virtual/src/fault.cpp), '*'
// for every call. Each scenario runs the same chain of calls in a child
// process, so an injected failure cannot leak into later cases, and says
// which call must fail with which status. An @async failure is enqueued
// successfully and surfaces at the next synchronize, as on a GPU.
struct Fault {
  const char* rule;       // AXL_VIRTUAL_FAIL value
  axl_status status;      // what the failing call must return
  const char* call;       // the first call of the chain that must fail
  const char* needs;      // optional chain step it needs, or nullptr
};
const Fault kFaults[] = {
    {"init:*=BACKEND_UNAVAILABLE", AXL_ERROR_BACKEND_UNAVAILABLE, "axl_device_get", nullptr},
    // The device's default queue is the first queue created.
    {"queue_create:*=OUT_OF_HOST_MEMORY", AXL_ERROR_OUT_OF_HOST_MEMORY, "axl_device_get", nullptr},
    {"alloc:*=OUT_OF_DEVICE_MEMORY", AXL_ERROR_OUT_OF_DEVICE_MEMORY, "axl_buffer_create", nullptr},
    {"memcpy_htod:*=DEVICE_LOST", AXL_ERROR_DEVICE_LOST, "axl_queue_copy_from_host", nullptr},
    {"memcpy_htod:1=DEVICE_LOST@async", AXL_ERROR_DEVICE_LOST, "axl_queue_synchronize", nullptr},
    {"memcpy_dtod:*=INTERNAL", AXL_ERROR_INTERNAL, "axl_queue_copy_buffer", nullptr},
    {"memcpy_dtoh:*=DEVICE_LOST", AXL_ERROR_DEVICE_LOST, "axl_queue_copy_to_host", nullptr},
    {"memset:*=INVALID_ARGUMENT", AXL_ERROR_INVALID_ARGUMENT, "axl_queue_fill", "fill"},
    {"launch:*=INVALID_ARGUMENT", AXL_ERROR_INVALID_ARGUMENT, "axl_queue_launch", "launch"},
    {"launch:1=DEVICE_LOST@async", AXL_ERROR_DEVICE_LOST, "axl_queue_synchronize", "launch"},
    {"event_record:*=DEVICE_LOST", AXL_ERROR_DEVICE_LOST, "axl_queue_record_event", nullptr},
    {"queue_sync:*=DEVICE_LOST", AXL_ERROR_DEVICE_LOST, "axl_queue_synchronize", nullptr},
    {"event_sync:*=TIMEOUT", AXL_ERROR_TIMEOUT, "axl_event_synchronize", nullptr},
};
constexpr int kFaultTimeoutS = 60;

// Why a fault child's answer cannot be used, or "" if it can.
std::string child_trouble(const ChildResult& r) {
  if (!r.error.empty()) return r.error;
  if (r.timed_out) return cat("the child did not finish within ", kFaultTimeoutS, " s");
  if (WIFSIGNALED(r.status)) return cat("the child died with ", signal_text(WTERMSIG(r.status)));
  // A sanitizer report ends the child with a non-zero status.
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) != 0)
    return cat("the child exited with status ", WEXITSTATUS(r.status), "; its output: ", r.output.substr(0, 2000));
  if (r.protocol.empty()) return cat("the child exited without an answer; its output: ", r.output);
  return "";
}

// Runs the fault child on the virtual backend `b` with one AXL_VIRTUAL_FAIL rule.
ChildResult run_fault(const BackendUnderTest& b, const std::string& rule, std::vector<std::string> steps) {
  const char* devices = std::getenv("AXL_VIRTUAL_DEVICES");
  steps.insert(steps.begin(), "--fault-child");
  return run_self(steps,
                  {{"AXL_PLUGINS", b.path},
                   {"AXL_VIRTUAL_FAIL", rule},
                   {"AXL_VIRTUAL_DEVICES", devices && *devices ? devices : "1"}},
                  kFaultTimeoutS);
}

// The fields of a "fail" answer: call, status, backend, message; empty if
// the answer is not one.
std::vector<std::string> fail_fields(const ChildResult& r) {
  std::vector<std::string> fld;
  std::istringstream in(r.protocol.substr(0, r.protocol.find('\n')));
  for (std::string x; std::getline(in, x, '\t');) fld.push_back(x);
  if (fld.size() < 5 || fld[0] != "fail") return {};
  return {fld.begin() + 1, fld.end()};
}

// Runs the fault child with rule `f` over `steps` and checks that f.call
// failed first, with f.status, naming backend `b` in a message the plugin
// reported.
void check_fault(Ctx& c, const BackendUnderTest& b, const Fault& f, const std::vector<std::string>& steps) {
  const std::string at = cat("AXL_VIRTUAL_FAIL=", f.rule);
  const ChildResult r = run_fault(b, f.rule, steps);
  if (const std::string bad = child_trouble(r); !bad.empty()) return c.check(false, cat(at, ": ", bad));
  if (r.protocol.rfind("ok", 0) == 0) return c.check(false, cat(at, " made nothing fail"));
  // call, status, backend, message
  const std::vector<std::string> fld = fail_fields(r);
  if (fld.empty()) return c.check(false, cat(at, ": unreadable answer from the child: ", r.protocol));
  const axl_status got = static_cast<axl_status>(std::atoi(fld[1].c_str()));
  c.check(fld[0] == f.call && got == f.status,
          cat(at, ": ", fld[0], " failed first, with ", axl::status_name(got), "; expected ", f.call,
              " to fail with ", axl::status_name(f.status)));
  c.check(fld[2] == b.name, cat(at, ": the error names backend '", fld[2], "', expected '", b.name, "'"));
  LastError seen;
  seen.message = fld[3];
  c.check(!seen.message.empty(), cat(at, ": ", fld[0], " failed with no message"));
  c.check(seen.message.empty() || !is_generic(seen),
          cat(at, ": the failure was not reported through host->report_error: '", seen.message, "'"));
}

FILE* g_fault_out = nullptr;

void fault_emit(const std::string& line) {
  std::string clean = line;
  for (char& ch : clean)
    if (ch == '\n' || ch == '\r') ch = ' ';
  std::fputs(clean.c_str(), g_fault_out);
  std::fputc('\n', g_fault_out);
  std::fflush(g_fault_out);
}

}  // namespace

// Child: `axl-cts --fault-child [fill] [launch] [event_first]` runs one chain
// of calls and reports the first that failed ("fail <call> <status> <backend>
// <message>") or that all succeeded ("ok"). The optional steps run only where
// the backend has the slots; event_first synchronizes the chain's last event
// before its queue.
int run_fault_child(int argc, char** argv) {
  g_fault_out = fdopen(kChildProtocolFd, "w");
  if (!g_fault_out) g_fault_out = stdout;
  bool with_fill = false, with_launch = false, event_first = false;
  for (int i = 2; i < argc; ++i) {
    with_fill = with_fill || std::strcmp(argv[i], "fill") == 0;
    with_launch = with_launch || std::strcmp(argv[i], "launch") == 0;
    event_first = event_first || std::strcmp(argv[i], "event_first") == 0;
  }
  struct Step {
    const char* what;
    std::function<axl_status()> call;
  };
  axl_device_t d = nullptr;
  axl_queue_t q = nullptr;
  axl_buffer_t a = nullptr, b = nullptr;
  axl_event_t e = nullptr;
  axl_kernel_t k = nullptr;
  // Static: the chain stops at the first failure and returns while earlier
  // copies may still be queued, and host memory given to a copy must outlive
  // it. Static arrays have no destructor that could run before the queue.
  static uint8_t host[4096], back[4096];
  std::memset(host, 1, sizeof host);
  const uint32_t n = 1024, one[3] = {1, 1, 1}, block[3] = {256, 1, 1};
  std::vector<Step> steps = {
      {"axl_init", [&] { return axl_init(); }},
      {"axl_device_get", [&] { return axl_device_get(nullptr, 0, &d); }},
      {"axl_queue_create", [&] { return axl_queue_create(d, 0, &q); }},
      {"axl_buffer_create", [&] { return axl_buffer_create(d, 4096, 0, &a); }},
      {"axl_buffer_create", [&] { return axl_buffer_create(d, 4096, 0, &b); }},
      {"axl_queue_copy_from_host", [&] { return axl_queue_copy_from_host(q, a, 0, host, 4096); }},
      {"axl_queue_copy_buffer", [&] { return axl_queue_copy_buffer(q, b, 0, a, 0, 4096); }},
      {"axl_queue_copy_to_host", [&] { return axl_queue_copy_to_host(q, back, b, 0, 4096); }},
  };
  if (with_fill)
    steps.push_back({"axl_queue_fill", [&] { return axl_queue_fill(q, a, 0, 4096, 7, 4); }});
  if (with_launch) {
    steps.push_back({"axl_device_get_test_kernel",
                     [&] { return axl_device_get_test_kernel(d, AXL_TEST_KERNEL_INCREMENT_U32, &k); }});
    steps.push_back({"axl_queue_launch", [&] {
                       axl_launch_arg args[2] = {};
                       args[0].kind = AXL_KERNEL_ARG_BUFFER;
                       args[0].buffer = a;
                       args[1].kind = AXL_KERNEL_ARG_SCALAR;
                       args[1].size = sizeof n;
                       args[1].value = &n;
                       return axl_queue_launch(q, k, one, block, 0, args, 2);
                     }});
  }
  steps.push_back({"axl_event_create", [&] { return axl_event_create(d, 0, &e); }});
  steps.push_back({"axl_queue_record_event", [&] { return axl_queue_record_event(q, e); }});
  const Step queue_sync{"axl_queue_synchronize", [&] { return axl_queue_synchronize(q); }};
  const Step event_sync{"axl_event_synchronize", [&] { return axl_event_synchronize(e); }};
  // event_first: the event is the first to hear of an earlier failure.
  steps.push_back(event_first ? event_sync : queue_sync);
  steps.push_back(event_first ? queue_sync : event_sync);
  std::string answer = "ok";
  for (const Step& s : steps) {
    const axl_status st = s.call();
    if (st != AXL_SUCCESS) {
      const LastError le = last_error();
      answer = cat("fail\t", s.what, "\t", st, "\t", le.backend, "\t", le.message);
      break;
    }
  }
  fault_emit(answer);
  // Everything is released on every path, after the queue drained (its
  // status is the injected failure again, or nothing), so that a leak a
  // sanitizer reports here is the backend's or the core's, not this chain's.
  if (q) axl_queue_synchronize(q);
  if (k) axl_kernel_release(k);
  if (e) axl_event_release(e);
  if (a) axl_buffer_release(a);
  if (b) axl_buffer_release(b);
  if (q) axl_queue_release(q);
  if (d) axl_device_release(d);
  return 0;
}

TEST_CASE("cts.errors.have_messages", "[errors]") {
  for_each_device("cts.errors.have_messages", [](Ctx& c) {
    BackendUnderTest& b = c.backend();
    const axl::Device& dev = c.dev();
    axl_device_t d = dev.get();
    axl::Queue q = dev.create_queue();
    axl::Buffer small = dev.allocate(64);
    static const unsigned char junk[32] = "not a module of any backend";
    std::vector<uint8_t> host(64);
    axl::Event never = dev.create_event(true), other = dev.create_event(true);
    struct Provocation {
      std::string what;
      std::function<axl_status()> call;
    };
    const Provocation provocations[] = {
        {"loading 32 bytes that are no module",
         [&] {
           axl_module_t m = nullptr;
           axl_status s = axl_module_load_data(d, junk, sizeof junk, AXL_MODULE_FORMAT_AUTO, &m);
           if (m) axl_module_release(m);
           return s;
         }},
        {"loading a module file that does not exist",
         [&] {
           axl_module_t m = nullptr;
           axl_status s = axl_module_load_file(d, "/nonexistent/axl-cts/no-such-module", AXL_MODULE_FORMAT_AUTO, &m);
           if (m) axl_module_release(m);
           return s;
         }},
        {"a copy past the end of a buffer",
         [&] { return axl_queue_copy_to_host(q.get(), host.data(), small.get(), 60, 8); }},
        {"test kernel number 7",
         [&] {
           axl_kernel_t k = nullptr;
           axl_status s = axl_device_get_test_kernel(d, 7, &k);
           if (k) axl_kernel_release(k);
           return s;
         }},
        {"elapsed time from an event never recorded",
         [&] {
           float ms = 0;
           return axl_event_elapsed_ms(never.get(), other.get(), &ms);
         }},
    };
    int from_backend = 0;
    bool repeats_name = false;
    for (const Provocation& p : provocations) {
      axl_clear_last_error();
      const axl_status s = p.call();
      const LastError e = last_error();
      if (s == AXL_SUCCESS) {
        c.check(false, cat(p.what, " succeeded"));
        continue;
      }
      c.check(e.status == s, cat(p.what, ": returned ", axl::status_name(s), " but axl_last_error says ",
                                 axl::status_name(e.status)));
      c.check(!e.message.empty(), cat(p.what, ": ", axl::status_name(s), " with no message"));
      if (e.backend != b.name) continue;  // the core answered; nothing for the backend to say
      ++from_backend;
      c.check(!is_generic(e) || s == AXL_ERROR_UNSUPPORTED,
              cat(p.what, ": the plugin returned ", axl::status_name(s),
                  " without host->report_error, so users only see '", e.message, "'"));
      const std::string twice = b.name + ": " + b.name + ":";
      if (e.message.compare(0, twice.size(), twice) == 0 && !repeats_name) {
        repeats_name = true;
        c.note(cat("messages repeat the backend name, which the core already prefixes, e.g. '",
                   e.message, "'"));
      }
    }
    if (from_backend == 0)
      c.note("every error here was answered by the core; none exercised the backend's own messages");
  });
}

TEST_CASE("cts.errors.fault_injection", "[errors]") {
  // Where fault injection can be found, for the reason the others skip with.
  bool virtual_tested = false, virtual_loaded = false;
  for (const BackendUnderTest& b : backends()) virtual_tested = virtual_tested || b.is_virtual();
  for (const axl::PluginRecord& r : axl::plugin_records())
    virtual_loaded = virtual_loaded || ((r.flags & AXL_PLUGIN_FLAG_VIRTUAL) && r.loaded());
  const std::string elsewhere =
      virtual_tested ? "fault injection (AXL_VIRTUAL_FAIL) is the virtual backend's; see its result"
      : virtual_loaded
          ? "fault injection (AXL_VIRTUAL_FAIL) is the virtual backend's, which is loaded but not "
            "under test (--backend)"
          : "virtual plugin not loaded: fault injection (AXL_VIRTUAL_FAIL) is the virtual backend's";
  for_each_backend("cts.errors.fault_injection", [&](Ctx& c) {
    BackendUnderTest& b = c.backend();
    // A backend that cannot run says why first, as in every other case.
    if (!b.unusable_reason().empty()) c.skip(b.unusable_reason());
    if (!b.is_virtual()) c.skip(elsewhere);
    std::vector<std::string> optional_steps;
    if (b.has_slot("queue_fill")) optional_steps.push_back("fill");
    if (b.has_slot("device_get_test_kernel") && b.has_slot("queue_launch"))
      optional_steps.push_back("launch");
    // Without a fault the chain succeeds, or nothing below means anything.
    const ChildResult base = run_fault(b, "", optional_steps);
    const std::string bad = child_trouble(base);
    c.require(bad.empty(), cat("the chain without a fault: ", bad));
    c.require(base.protocol.rfind("ok", 0) == 0,
              cat("the chain fails without any fault injected: ", base.protocol));

    int ran = 0;
    for (const Fault& f : kFaults) {
      if (f.needs && std::find(optional_steps.begin(), optional_steps.end(), f.needs) == optional_steps.end())
        continue;
      ++ran;
      check_fault(c, b, f, optional_steps);
    }
    c.note(cat(ran, " fault rule(s) driven, each in its own process"));
  });
}

TEST_CASE("cts.event.async_failure", "[errors][event]") {
  // An operation that was enqueued successfully and failed when it ran must
  // be reported by event_synchronize of an event recorded after it, even when
  // nothing synchronized the queue first (plugin.h: event_synchronize).
  // Making enqueued work fail later needs the backend's help: host functions
  // cannot fail and the test kernels do not fault, so this is checked where
  // fault injection exists, the virtual backend's @async rules.
  for_each_backend("cts.event.async_failure", [](Ctx& c) {
    BackendUnderTest& b = c.backend();
    if (!b.unusable_reason().empty()) c.skip(b.unusable_reason());
    if (!b.is_virtual())
      c.skip("no portable way to make enqueued work fail when it runs (host functions cannot fail, the "
             "test kernels do not fault); checked on the virtual backend with AXL_VIRTUAL_FAIL=...@async");
    std::vector<std::string> steps = {"event_first"};
    if (b.has_slot("device_get_test_kernel") && b.has_slot("queue_launch")) steps.push_back("launch");
    // The event recorded after the failed operation is the first to hear of it.
    const Fault faults[] = {
        {"memcpy_htod:1=DEVICE_LOST@async", AXL_ERROR_DEVICE_LOST, "axl_event_synchronize", nullptr},
        {"launch:1=DEVICE_LOST@async", AXL_ERROR_DEVICE_LOST, "axl_event_synchronize", "launch"},
    };
    for (const Fault& f : faults)
      if (!f.needs || std::find(steps.begin(), steps.end(), f.needs) != steps.end()) check_fault(c, b, f, steps);
  });
}

}  // namespace cts
