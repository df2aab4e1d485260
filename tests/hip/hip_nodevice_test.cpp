// The hip backend on machines without an AMD GPU, in fresh processes
// (discovery runs once per process): against the real HIP runtime, with no
// library at all, and against a fake runtime built by the tests that lacks
// entry points. Every case also checks that the cpu and virtual backends
// keep working in the same process, and that the cuda backend (sharing the
// driver-API code in plugins/common) still answers for itself.
#include <string>

#include "../core/driver_probe_util.hpp"

using axltest::KV;
using axltest::run;

namespace {

const std::string kProbe = AXL_PROBE_PATH;
const std::string kFake = AXL_FAKE_HIP_RUNTIME_PATH;
const std::string kRealRuntime = AXL_HIP_REAL_RUNTIME;

// `axl_probe work` with the hip plugin's runtime at `runtime` (empty: the
// plugin's own search) plus `env`.
axltest::BackendOutcome probe(const std::string& runtime, axltest::Env env = {}) {
  if (!runtime.empty()) env.push_back({"AXL_HIP_RUNTIME_PATH", runtime});
  return axltest::probe_backend(kProbe, "libaxl_plugin_hip.so", env);
}

// The host backends kept working, and the cuda backend (no driver here,
// sharing the driver-API code in plugins/common) answers for itself.
void others_work(const KV& kv) {
  axltest::check_host_backends_work(kv);
#if AXL_HIP_HAVE_CUDA
  const KV::Record cuda = kv.by_file("libaxl_plugin_cuda.so");
  REQUIRE(cuda.index >= 0);
  CHECK(cuda.name == "cuda");
  CHECK(cuda.state == "UNAVAILABLE");
  CHECK(cuda.reason.find("CUDA") != std::string::npos);
  CHECK(cuda.reason.find("hip") == std::string::npos);
#endif
}

}  // namespace

// What Debian's libamdhip64.so.5 (HIP 5.2) answers on a machine without a
// GPU, measured: hipInit returns hipErrorInvalidDevice (101) and
// hipGetDeviceCount hipErrorNoDevice (100). The backend reports the latter,
// the code that means "no device", and keeps the first in the message.
TEST_CASE("the real HIP runtime without a GPU: unavailable with hipErrorNoDevice (100) and its path") {
  if (kRealRuntime.empty()) {
    WARN("skipped: libamdhip64.so.{7,6,5} was not found at configure time");
    return;
  }
  axltest::BackendOutcome o = probe("");  // the plugin's own search for the versioned names
  INFO(o.rec.reason);
  CHECK(o.rec.name == "hip");
  CHECK(o.rec.state == "UNAVAILABLE");
  CHECK(o.rec.status == "AXL_ERROR_BACKEND_UNAVAILABLE");
  CHECK(o.rec.reason.find("hipErrorNoDevice (100)") != std::string::npos);
  CHECK(o.rec.reason.find("hipInit failed: ") != std::string::npos);
  CHECK(o.rec.reason.find("no AMD GPU is visible") != std::string::npos);
  if (kRealRuntime.find("libamdhip64.so.5") != std::string::npos)  // Debian 12's HIP 5.2, as measured
    CHECK(o.rec.reason.find("hipInit failed: hipErrorInvalidDevice (101); hipGetDeviceCount: "
                            "hipErrorNoDevice (100)") != std::string::npos);
  // The real path of the file that was mapped (symlinks resolved).
  CHECK(o.rec.reason.find("/libamdhip64.so.") != std::string::npos);
  CHECK(o.rec.devices == 0);
  others_work(o.kv);
}

#ifdef AXL_PLUGIN_PROBE_PATH
TEST_CASE("the real HIP runtime without a GPU: the report carries native code 100, hipErrorNoDevice") {
  if (kRealRuntime.empty()) {
    WARN("skipped: libamdhip64.so.{7,6,5} was not found at configure time");
    return;
  }
  axltest::RunResult r = run({AXL_PLUGIN_PROBE_PATH, AXL_HIP_PLUGIN_PATH}, {{"AXL_HIP_RUNTIME_PATH", kRealRuntime}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  KV kv(r.out);
  CHECK(kv["name"] == "hip");
  CHECK(kv.num("count.status") == AXL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(kv.num("count.native_code") == 100);
  CHECK(kv["count.native_name"] == "hipErrorNoDevice");
  CHECK(kv["count.message"].find(kRealRuntime.substr(kRealRuntime.rfind('/') + 1)) != std::string::npos);
  // The probe's outcome is kept: init reports the same.
  CHECK(kv.num("init.native_code") == 100);
  // One log line, at info level (AXL_LOG_INFO), not a warning.
  REQUIRE(kv.num("logs") == 1);
  CHECK(kv.num("log.0.level") == AXL_LOG_INFO);
}
#endif

TEST_CASE("no HIP runtime: unavailable, logged at info level only") {
  axltest::BackendOutcome o = axltest::check_absent_library(
      kProbe, "hip", "AXL_HIP_RUNTIME_PATH", "/nonexistent/axl-test/libamdhip64.so.6", "no HIP runtime");
  others_work(o.kv);
}

TEST_CASE("a runtime without a required entry point is refused naming it") {
  axltest::BackendOutcome o = probe(kFake, {{"FAKE_HIP_OMIT", "hipMemcpyPeerAsync"}});
  INFO(o.rec.reason);
  CHECK(o.rec.state == "UNAVAILABLE");
  CHECK(o.rec.reason.find("lacks required entry point(s) hipMemcpyPeerAsync (version ") != std::string::npos);
  CHECK(o.rec.reason.find("libamdhip64_fake.so") != std::string::npos);
  others_work(o.kv);

  axltest::BackendOutcome two = probe(kFake, {{"FAKE_HIP_OMIT", "hipModuleLaunchKernel,hipEventRecord"}});
  INFO(two.rec.reason);
  CHECK(two.rec.reason.find("hipEventRecord") != std::string::npos);
  CHECK(two.rec.reason.find("hipModuleLaunchKernel") != std::string::npos);
}

TEST_CASE("a runtime without the optional entry points still loads") {
  // HIP 5.2 lacks hipLaunchHostFunc; the stream-ordered allocator and the
  // stream memory operations are optional too.
  axltest::BackendOutcome o = probe(kFake, {{"FAKE_HIP_OMIT", "hipLaunchHostFunc,hipStreamWaitValue64,hipStreamWriteValue64,"
                                              "hipMallocFromPoolAsync,hipFreeAsync"}});
  INFO(o.rec.reason);
  CHECK(o.rec.state == "LOADED");
  CHECK(o.rec.status == "AXL_SUCCESS");
  CHECK(o.rec.devices == 0);  // the fake has no device
  others_work(o.kv);
}

TEST_CASE("hipInit failures are named by the plugin when the runtime cannot") {
  axltest::BackendOutcome o = probe(kFake, {{"FAKE_HIP_INIT_RESULT", "3"}, {"FAKE_HIP_COUNT_RESULT", "3"}});
  INFO(o.rec.reason);
  CHECK(o.rec.state == "UNAVAILABLE");
  CHECK(o.rec.reason.find("hipInit failed: hipErrorNotInitialized (3)") != std::string::npos);
  CHECK(o.rec.reason.find("libamdhip64_fake.so") != std::string::npos);

  axltest::BackendOutcome no_device = probe(kFake, {{"FAKE_HIP_INIT_RESULT", "101"}, {"FAKE_HIP_COUNT_RESULT", "100"}});
  INFO(no_device.rec.reason);
  CHECK(no_device.rec.reason.find("hipInit failed: hipErrorInvalidDevice (101); "
                                  "hipGetDeviceCount: hipErrorNoDevice (100)") != std::string::npos);
}

TEST_CASE("a library without hipInit is refused as not a HIP runtime") {
  // libc is a loadable library with no HIP symbols at all.
  axltest::BackendOutcome o = probe("libc.so.6");
  INFO(o.rec.reason);
  CHECK(o.rec.state == "UNAVAILABLE");
  CHECK(o.rec.reason.find("lacks hipInit") != std::string::npos);
}

TEST_CASE("axl-info --json reports the runtime's reason") {
  if (kRealRuntime.empty()) {
    WARN("skipped: libamdhip64.so.{7,6,5} was not found at configure time");
    return;
  }
  axltest::RunResult r = run({AXL_INFO_PATH, "--json"}, {{"AXL_HIP_RUNTIME_PATH", kRealRuntime}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.out.find("\"hip\"");
  REQUIRE(at != std::string::npos);
  CHECK(r.out.find("hipErrorNoDevice", at) != std::string::npos);
  CHECK(r.out.find("unavailable", at) != std::string::npos);
}
