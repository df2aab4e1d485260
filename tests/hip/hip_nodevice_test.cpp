// The hip backend on machines without an AMD GPU, in fresh processes
// (discovery runs once per process): against the real HIP runtime, with no
// library at all, and against a fake runtime built by the tests that lacks
// entry points. Counting reads the KFD topology and loads no runtime
// (axl/common/census.hpp), so most cases run on a fake census with one AMD
// GPU (tests/data/census), and what the runtime answers at its first use
// shows in the records printed after the probe used every device ("after."). Every case also checks that the cpu and virtual backends
// keep working in the same process, and that the cuda backend (sharing the
// driver-API code in plugins/common) still answers for itself.
#include <fstream>
#include <iterator>
#include <string>

#include "../core/driver_probe_util.hpp"

using axltest::KV;
using axltest::run;

namespace {

const std::string kProbe = AXL_PROBE_PATH;
const std::string kFake = AXL_FAKE_HIP_RUNTIME_PATH;
const std::string kRealRuntime = AXL_HIP_REAL_RUNTIME;
const std::string kOneGpu = AXL_CENSUS_DATA "/amd";

// `axl_probe work` with the hip plugin's runtime at `runtime` (empty: the
// plugin's own search) plus `env`, on the fake census with one AMD GPU.
axltest::BackendOutcome probe(const std::string& runtime, axltest::Env env = {}) {
  if (!runtime.empty()) env.push_back({"AXL_HIP_RUNTIME_PATH", runtime});
  env.push_back({"AXL_CENSUS_ROOT", kOneGpu});
  return axltest::probe_backend(kProbe, "libaxl_plugin_hip.so", env);
}

// The hip record after the probe used every device: the runtime's answer.
KV::Record after(const axltest::BackendOutcome& o) { return o.kv.by_file("libaxl_plugin_hip.so", "after."); }

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
  // The census (one GPU) loads the runtime but does not initialise it; the
  // probe's first use of the device does.
  axltest::BackendOutcome o = probe("");  // the plugin's own search for the versioned names
  CHECK(o.rec.name == "hip");
  CHECK(o.rec.state == "LOADED");
  CHECK(o.rec.devices == 1);
  const KV::Record a = after(o);
  INFO(a.reason);
  CHECK(a.state == "UNAVAILABLE");
  CHECK(a.status == "AXL_ERROR_BACKEND_UNAVAILABLE");
  CHECK(a.reason.find("hipErrorNoDevice (100)") != std::string::npos);
  CHECK(a.reason.find("hipInit failed: ") != std::string::npos);
  CHECK(a.reason.find("no AMD GPU is visible") != std::string::npos);
  if (kRealRuntime.find("libamdhip64.so.5") != std::string::npos)  // Debian 12's HIP 5.2, as measured
    CHECK(a.reason.find("hipInit failed: hipErrorInvalidDevice (101); hipGetDeviceCount: "
                        "hipErrorNoDevice (100)") != std::string::npos);
  // The real path of the file that was mapped (symlinks resolved).
  CHECK(a.reason.find("/libamdhip64.so.") != std::string::npos);
  CHECK(a.devices == 0);
  others_work(o.kv);
}

#ifdef AXL_PLUGIN_PROBE_PATH
TEST_CASE("the real HIP runtime without a GPU: the report carries native code 100, hipErrorNoDevice") {
  if (kRealRuntime.empty()) {
    WARN("skipped: libamdhip64.so.{7,6,5} was not found at configure time");
    return;
  }
  axltest::RunResult r = run({AXL_PLUGIN_PROBE_PATH, AXL_HIP_PLUGIN_PATH},
                             {{"AXL_HIP_RUNTIME_PATH", kRealRuntime}, {"AXL_CENSUS_ROOT", kOneGpu}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  KV kv(r.out);
  CHECK(kv["name"] == "hip");
  // The census counts the fake GPU; hipInit, at backend_init, says no.
  CHECK(kv.num("count.status") == AXL_SUCCESS);
  CHECK(kv.num("count.value") == 1);
  CHECK(kv.num("init.status") == AXL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(kv.num("init.native_code") == 100);
  CHECK(kv["init.native_name"] == "hipErrorNoDevice");
  CHECK(kv["init.message"].find(kRealRuntime.substr(kRealRuntime.rfind('/') + 1)) != std::string::npos);
  // Logged at info level (AXL_LOG_INFO), never as a warning.
  REQUIRE(kv.num("logs") >= 1);
  bool info = false;
  for (int i = 0; i < kv.num("logs"); ++i) {
    const int level = kv.num("log." + std::to_string(i) + ".level");
    CHECK(level < AXL_LOG_WARN);
    info = info || level == AXL_LOG_INFO;
  }
  CHECK(info);
}
#endif

TEST_CASE("no HIP runtime: unavailable, logged at info level only") {
  axltest::BackendOutcome o = axltest::check_absent_library(
      kProbe, "hip", "AXL_HIP_RUNTIME_PATH", "/nonexistent/axl-test/libamdhip64.so.6", "no HIP runtime",
      {{"AXL_CENSUS_ROOT", kOneGpu}});
  others_work(o.kv);
}

TEST_CASE("a runtime without a required entry point is refused naming it") {
  // Entry points are resolved through hipGetProcAddress, which initialises
  // the runtime: at the first device use, not at counting.
  axltest::BackendOutcome o = probe(kFake, {{"FAKE_HIP_OMIT", "hipMemcpyPeerAsync"}});
  const KV::Record a = after(o);
  INFO(a.reason);
  CHECK(a.state == "UNAVAILABLE");
  CHECK(a.reason.find("lacks required entry point(s) hipMemcpyPeerAsync (version ") != std::string::npos);
  CHECK(a.reason.find("libamdhip64_fake.so") != std::string::npos);
  others_work(o.kv);

  const KV::Record two = after(probe(kFake, {{"FAKE_HIP_OMIT", "hipModuleLaunchKernel,hipEventRecord"}}));
  INFO(two.reason);
  CHECK(two.reason.find("hipEventRecord") != std::string::npos);
  CHECK(two.reason.find("hipModuleLaunchKernel") != std::string::npos);
}

TEST_CASE("a runtime without the optional entry points still loads") {
  // HIP 5.2 lacks hipLaunchHostFunc; the stream-ordered allocator and the
  // stream memory operations are optional too.
  axltest::BackendOutcome o = probe(kFake, {{"FAKE_HIP_OMIT", "hipLaunchHostFunc,hipStreamWaitValue64,hipStreamWriteValue64,"
                                              "hipMallocFromPoolAsync,hipFreeAsync"}});
  const KV::Record a = after(o);
  INFO(a.reason);
  CHECK(a.state == "LOADED");
  CHECK(a.status == "AXL_SUCCESS");
  CHECK(o.rec.devices == 1);  // the census's
  CHECK(a.devices == 0);      // the fake runtime's, once initialised
  others_work(o.kv);
}

TEST_CASE("hipInit failures are named by the plugin when the runtime cannot") {
  const KV::Record a = after(probe(kFake, {{"FAKE_HIP_INIT_RESULT", "3"}, {"FAKE_HIP_COUNT_RESULT", "3"}}));
  INFO(a.reason);
  CHECK(a.state == "UNAVAILABLE");
  CHECK(a.reason.find("hipInit failed: hipErrorNotInitialized (3)") != std::string::npos);
  CHECK(a.reason.find("libamdhip64_fake.so") != std::string::npos);

  const KV::Record no_device = after(probe(kFake, {{"FAKE_HIP_INIT_RESULT", "101"}, {"FAKE_HIP_COUNT_RESULT", "100"}}));
  INFO(no_device.reason);
  CHECK(no_device.reason.find("hipInit failed: hipErrorInvalidDevice (101); "
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
  // Without an AMD GPU in the census: the census's reason, no runtime loaded.
  axltest::RunResult r = run({AXL_INFO_PATH, "--json"}, {{"AXL_HIP_RUNTIME_PATH", kRealRuntime},
                                                         {"AXL_CENSUS_ROOT", "/nonexistent/axl-test"}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.out.find("\"hip\"");
  REQUIRE(at != std::string::npos);
  CHECK(r.out.find("no AMD GPU", at) != std::string::npos);
  CHECK(r.out.find("unavailable", at) != std::string::npos);
}

// ---- counting starts no runtime (plugin.h: backend_device_count) ---------

namespace {

struct Counted {
  KV kv;
  KV::Record rec;
  std::string log;  // the fake runtime's calls (fake_driver_util.h)
};

// `axl_probe` (counting only) with the fake runtime, its call log and `env`.
Counted count_with(axltest::Env env) {
  axltest::TempDir dir;
  const std::string log = dir.str() + "/calls.log";
  env.push_back({"AXL_HIP_RUNTIME_PATH", kFake});
  env.push_back({"FAKE_CALL_LOG", log});
  axltest::RunResult r = run({kProbe}, env);
  INFO("probe stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(log);
  Counted c{KV(r.out), {}, std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>())};
  c.rec = c.kv.by_file("libaxl_plugin_hip.so");
  REQUIRE(c.rec.index >= 0);
  return c;
}

}  // namespace

TEST_CASE("counting AMD GPUs reads the KFD topology and never calls hipInit") {
  Counted c = count_with({{"AXL_CENSUS_ROOT", kOneGpu}});
  INFO(c.rec.reason << "\ncall log:\n" << c.log);
  CHECK(c.rec.state == "LOADED");
  CHECK(c.rec.devices == 1);  // node 1 (simd_count 304); node 0 is the CPU
  CHECK(c.log.find("loaded") != std::string::npos);  // checked for presence
  CHECK(c.log.find("hipInit") == std::string::npos);
}

TEST_CASE("no AMD GPU in the census: unavailable, and the HIP runtime is never even loaded") {
  Counted c = count_with({{"AXL_CENSUS_ROOT", "/nonexistent/axl-test"}});
  INFO(c.rec.reason << "\ncall log:\n" << c.log);
  CHECK(c.rec.state == "UNAVAILABLE");
  CHECK(c.rec.reason.find("no AMD GPU") != std::string::npos);
  CHECK(c.rec.reason.find("/sys/class/kfd/kfd/topology/nodes") != std::string::npos);
  CHECK(c.log.empty());
}

TEST_CASE("ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES apply to the census") {
  CHECK(count_with({{"AXL_CENSUS_ROOT", kOneGpu}, {"HIP_VISIBLE_DEVICES", "0"}}).rec.devices == 1);
  CHECK(count_with({{"AXL_CENSUS_ROOT", kOneGpu}, {"ROCR_VISIBLE_DEVICES", "0,1"}}).rec.devices == 1);
  Counted hidden = count_with({{"AXL_CENSUS_ROOT", kOneGpu}, {"HIP_VISIBLE_DEVICES", ""}});
  INFO(hidden.rec.reason);
  CHECK(hidden.rec.state == "UNAVAILABLE");
  CHECK(hidden.rec.reason.find("HIP_VISIBLE_DEVICES") != std::string::npos);
  CHECK(count_with({{"AXL_CENSUS_ROOT", kOneGpu}, {"CUDA_VISIBLE_DEVICES", "1"}}).rec.state == "UNAVAILABLE");
}
