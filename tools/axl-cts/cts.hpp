// axl-cts: the conformance suite's own framework.
//
// Every CTS case is one Catch2 TEST_CASE that loops over the backends (and
// their devices) under test and records one outcome per backend or device in
// the registry below. Catch2 gives the program its command line (filtering
// by case name or tag, listing, reporters); the registry gives what Catch2
// cannot: per-backend counts of pass, skip, unsupported and fail for the
// certification report, with a reason for everything that did not pass.
//
// Catch2 v2's assertion macros are not thread-safe and abort a whole
// TEST_CASE on the first REQUIRE, while a CTS case must keep going with the
// next device and may run work on several threads. So case bodies check with
// Ctx (thread-safe, per device), and the runner turns each failed device into
// one FAIL_CHECK on the main thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "axl/axl.h"
#include "axl/axl.hpp"
#include "axl/plugin.h"  // the CTS certifies plugins: it reports the plugin ABI it was built for

namespace cts {

template <typename... A>
std::string cat(A&&... parts) {
  std::ostringstream s;
  (s << ... << std::forward<A>(parts));
  return s.str();
}

enum class Outcome {
  pass,
  fail,
  skip,         // could not be checked here; the reason says why
  unsupported,  // the backend does not implement it (NULL slot, UNSUPPORTED)
  known_failure // listed in known_failures.hpp, ran with --run-known-failures, failed
};
const char* outcome_name(Outcome o);

// ---------------------------------------------------------------------------
// What the negotiation probe (a child process) learned about a plugin file.
// ---------------------------------------------------------------------------
struct SlotState {
  std::string name;
  bool required = false;
  bool present = false;
};

struct ProbeResult {
  bool ran = false;            // the child reported back
  std::string crash;           // how the child died, with its last step
  std::string name, api, version;
  uint32_t flags = 0, abi_minor = 0;
  uint64_t info_size = 0, table_size = 0;
  std::vector<SlotState> slots;
  // Rule violations, each tagged with the CTS case that owns it
  // (table_shape, version_mismatch, no_side_effects).
  std::vector<std::pair<std::string, std::string>> failures;
  std::vector<std::string> notes;
  std::string chatter;         // what the plugin printed to stdout/stderr
};

// Runs the probe child on `path` (see probe.cpp) and parses its answer.
ProbeResult probe_plugin(const std::string& path);
// The child side: `axl-cts --probe-negotiate PATH`. Never initialises libaxl
// (it asks it only for the file-name rule, a pure function).
int run_probe_child(const char* path);

// ---------------------------------------------------------------------------
// Child processes: this program again (options().self_exe) with `args`.
// ---------------------------------------------------------------------------
// Children write their answer to this descriptor; their stdout and stderr
// (and whatever a plugin or the core's logger print there) are kept apart.
constexpr int kChildProtocolFd = 3;

struct ChildResult {
  std::string error;     // could not start; nothing else is valid
  std::string protocol;  // what the child wrote to kChildProtocolFd
  std::string output;    // its stdout and stderr, interleaved
  int status = 0;        // as waitpid reports it
  bool timed_out = false;  // killed after the timeout
};

// `env` entries are set (or, with an empty value, removed) on top of this
// process's environment.
ChildResult run_self(const std::vector<std::string>& args,
                     const std::vector<std::pair<std::string, std::string>>& env, int timeout_s);
std::string signal_text(int sig);
// The child side of cts.errors.fault_injection: `axl-cts --fault-child SLOT`.
int run_fault_child(int argc, char** argv);
// The child side of cts.backend.lifecycle: `axl-cts --lifecycle-child PATH`.
int run_lifecycle_child(const char* path);

// ---------------------------------------------------------------------------
// Backends and devices under test.
// ---------------------------------------------------------------------------
struct DeviceUnderTest {
  uint32_t backend_index = 0;  // index within its backend
  axl::Device device;
  axl::DeviceInfo info;
};

struct BackendUnderTest {
  // name: the plugin's, else the file's (main.cpp's backend_name); path:
  // its file. Both known before the devices open, so before the record.
  std::string name, path;
  // Discovery's record of the file, read after the devices were opened
  // (opening one can turn "loaded" into "unavailable").
  axl::PluginRecord record;
  std::vector<DeviceUnderTest> devices;
  std::string device_error;  // first error met while opening its devices
  ProbeResult probe;

  bool is_virtual() const { return record.flags & AXL_PLUGIN_FLAG_VIRTUAL; }
  bool is_host() const { return record.flags & AXL_PLUGIN_FLAG_HOST; }
  // True if the table has the slot (as the probe saw it). Unknown slots and
  // a failed probe answer true, so a case then finds out by calling.
  bool has_slot(const std::string& slot) const;
  // Why device cases cannot run on this backend, or "" if they can.
  std::string unusable_reason() const;
};

struct Options {
  bool run_known_failures = false;
  bool quiet = false;
  double case_timeout_s = 300;
  std::string self_exe;  // for child processes (probe, fault injection)
  // Modules for the module cases (cases_module.cpp), by backend name, from
  // --module NAME=FILE; cpu_module is the CTS's own build for api "cpu".
  std::map<std::string, std::string> modules;
  std::string cpu_module;
};

Options& options();
std::vector<BackendUnderTest>& backends();

// ---------------------------------------------------------------------------
// One run of a case body on one backend (and device).
// ---------------------------------------------------------------------------
struct FatalFailure {};
struct SkipCase {
  std::string reason;
};
struct UnsupportedCase {
  std::string what;
};

class Ctx {
 public:
  Ctx(BackendUnderTest& b, DeviceUnderTest* d) : backend_(b), device_(d) {}

  BackendUnderTest& backend() { return backend_; }
  // The device under test; only in per-device cases.
  DeviceUnderTest& dut() { return *device_; }
  const axl::Device& dev() { return device_->device; }
  const axl::DeviceInfo& info() { return device_->info; }
  std::string where() const;

  // Records a failure and carries on. Thread-safe.
  void check(bool ok, const std::string& what);
  // Records a failure and ends this device's run.
  [[noreturn]] void fatal(const std::string& what);
  void require(bool ok, const std::string& what) {
    if (!ok) fatal(what);
  }
  // The whole run cannot be checked here / is not implemented by the backend.
  [[noreturn]] void skip(const std::string& reason) { throw SkipCase{reason}; }
  [[noreturn]] void unsupported(const std::string& what) { throw UnsupportedCase{what}; }
  // Part of the case cannot be checked: unless something failed, the outcome
  // is skip (never pass) with this reason. Thread-safe.
  void skip_part(const std::string& reason);
  // Printed and reported, does not change the outcome. Thread-safe.
  void note(const std::string& text);

  // Turns a C status into the runner's terms: success returns; UNSUPPORTED
  // makes the run unsupported; anything else is fatal, with the message.
  void ok(axl_status s, const std::string& what);
  // Checks that `s` is `want` and that the thread's last error explains it:
  // a non-empty message containing `mention` (when given). Returns s == want.
  bool expect_status(axl_status s, axl_status want, const std::string& what,
                     const std::string& mention = "");
  // Requires the backend slot; unsupported (not fail) when it is NULL.
  void need_slot(const std::string& slot);

  // Collected by the runner.
  std::vector<std::string> failures, skip_reasons, notes;

 private:
  BackendUnderTest& backend_;
  DeviceUnderTest* device_;
  std::mutex mu_;
};

// Runs `body` once per device of every backend under test. Backends that
// cannot run device cases record one skip with their reason.
void for_each_device(const char* case_name, const std::function<void(Ctx&)>& body);
// Runs `body` once per backend under test, with no device (dut() invalid).
void for_each_backend(const char* case_name, const std::function<void(Ctx&)>& body);
// Records an outcome directly (for results that are not a body run).
void record(const BackendUnderTest& b, const std::string& case_name, int device, Outcome o,
            const std::string& detail, const std::vector<std::string>& notes = {});

// Prints the per-backend summary; writes the JSON report if a path is given.
// Returns true if any result is a failure.
bool finish(const std::string& report_path, const std::vector<std::string>& argv_for_report);

// Watchdog: a case that runs past options().case_timeout_s is recorded as a
// failure, the report is written, and the process exits 1. A hung backend
// must still leave a report saying where it hung.
void start_watchdog(const std::string& report_path, const std::vector<std::string>& argv);

// ---------------------------------------------------------------------------
// Data helpers.
// ---------------------------------------------------------------------------
// Deterministic bytes (splitmix64), so a failure reproduces exactly.
std::vector<uint8_t> random_bytes(size_t n, uint64_t seed);
// Reads the whole buffer back on `q` and waits for it.
std::vector<uint8_t> read_back(const axl::Queue& q, const axl::Buffer& b);
// First index where a and b differ, described, or "" if equal.
std::string first_difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want);

// The last error of this thread, copied out (its strings die at the next
// failing call), as the C ABI gives it: the record's own status and an empty
// message left empty. For the cases that check the record itself (it names
// the call's status, it has a message); a message only to show comes from
// axl::last_error(status), which puts the status name in an empty one.
struct LastError {
  axl_status status = AXL_SUCCESS;
  std::string backend, native_name, message;
  int64_t native_code = 0;
};
LastError last_error();

// The backend name discovery reads from a plugin file's name
// (axl_plugin_name_from_path), or "" if the name does not follow its rule.
std::string plugin_file_name(const std::string& path);

}  // namespace cts
