// The cuda backend on machines without a usable GPU, in fresh processes
// (discovery runs once per process): against the toolkit's stub libcuda, with
// no library at all, and against fake drivers built by the tests that lack
// one entry point or report a too-old version or no device. Every case also
// checks that the cpu and virtual backends keep working in the same process.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../core/driver_probe_util.hpp"

using axltest::KV;
using axltest::run;

namespace {

const std::string kProbe = AXL_PROBE_PATH;
const std::string kFake = AXL_FAKE_CUDA_DRIVER_PATH;
const std::string kFakeNvml = AXL_FAKE_NVML_PATH;
const std::string kCensus = AXL_CENSUS_DATA "/nvidia";

// `axl_probe work` with the cuda plugin's driver at `driver` plus `env`.
axltest::BackendOutcome probe(const std::string& driver, axltest::Env env = {}) {
  env.push_back({"AXL_CUDA_DRIVER_PATH", driver});
  return axltest::probe_backend(kProbe, "libaxl_plugin_cuda.so", env);
}

// The cpu device and the virtual device both did a host round trip; cuda
// contributes no device.
void others_work(const KV& kv) { axltest::check_host_backends_work(kv); }

}  // namespace

TEST_CASE("the stub libcuda makes the backend unavailable with CUDA_ERROR_STUB_LIBRARY and its path") {
  axltest::BackendOutcome o = probe(AXL_CUDA_STUB_PATH);
  INFO(o.rec.reason);
  CHECK(o.rec.name == "cuda");
  CHECK(o.rec.state == "UNAVAILABLE");
  CHECK(o.rec.status == "AXL_ERROR_BACKEND_UNAVAILABLE");
  CHECK(o.rec.reason.find("CUDA_ERROR_STUB_LIBRARY") != std::string::npos);
  CHECK(o.rec.reason.find("(34)") != std::string::npos);
  // The real path of the file that was mapped (the toolkit's symlinks
  // resolved), so it names the stub wherever it lives.
  CHECK(o.rec.reason.find("stubs/libcuda.so") != std::string::npos);
  CHECK(o.rec.devices == 0);
  others_work(o.kv);
}

TEST_CASE("no driver library: unavailable, logged at info level only") {
  axltest::BackendOutcome o = axltest::check_absent_library(
      kProbe, "cuda", "AXL_CUDA_DRIVER_PATH", "/nonexistent/axl-test/libcuda.so.1", "no CUDA driver");
  others_work(o.kv);
}

TEST_CASE("a driver without a required entry point is refused naming it") {
  axltest::BackendOutcome o = probe(kFake, {{"FAKE_CUDA_OMIT", "cuMemcpyPeerAsync"}});
  INFO(o.rec.reason);
  CHECK(o.rec.state == "UNAVAILABLE");
  CHECK(o.rec.reason.find("lacks required entry point(s) cuMemcpyPeerAsync (version 4000") !=
        std::string::npos);
  CHECK(o.rec.reason.find("libcuda_fake.so") != std::string::npos);
  others_work(o.kv);

  axltest::BackendOutcome two = probe(kFake, {{"FAKE_CUDA_OMIT", "cuLaunchKernel,cuEventRecord"}});
  INFO(two.rec.reason);
  CHECK(two.rec.reason.find("cuEventRecord") != std::string::npos);
  CHECK(two.rec.reason.find("cuLaunchKernel") != std::string::npos);
}

TEST_CASE("a driver without an optional entry point still loads") {
  axltest::BackendOutcome o = probe(kFake, {{"FAKE_CUDA_OMIT", "cuStreamWaitValue64,cuStreamWriteValue64,cuMemAllocFromPoolAsync"}});
  INFO(o.rec.reason);
  CHECK(o.rec.state == "LOADED");
  CHECK(o.rec.status == "AXL_SUCCESS");
  CHECK(o.rec.devices == 0);  // the fake has no device
  others_work(o.kv);
}

TEST_CASE("a driver older than CUDA 12.0 is refused with both versions") {
  axltest::BackendOutcome o = probe(kFake, {{"FAKE_CUDA_VERSION", "11080"}});
  INFO(o.rec.reason);
  CHECK(o.rec.state == "UNAVAILABLE");
  CHECK(o.rec.reason.find("CUDA 11.8") != std::string::npos);
  CHECK(o.rec.reason.find("12.0 or newer") != std::string::npos);
}

TEST_CASE("cuInit failures name the CUDA error even when the driver cannot") {
  axltest::BackendOutcome o = probe(kFake, {{"FAKE_CUDA_INIT_RESULT", "100"}});
  INFO(o.rec.reason);
  CHECK(o.rec.state == "UNAVAILABLE");
  CHECK(o.rec.reason.find("cuInit failed: CUDA_ERROR_NO_DEVICE (100)") != std::string::npos);
  CHECK(o.rec.reason.find("libcuda_fake.so") != std::string::npos);
}

TEST_CASE("a library without cuGetProcAddress_v2 is refused as too old") {
  // libc is a loadable library with no CUDA symbols at all.
  axltest::BackendOutcome o = probe("libc.so.6");
  INFO(o.rec.reason);
  CHECK(o.rec.state == "UNAVAILABLE");
  CHECK(o.rec.reason.find("lacks cuGetProcAddress_v2") != std::string::npos);
}

TEST_CASE("axl-info --json reports the stub's reason") {
  axltest::RunResult r = run({AXL_INFO_PATH, "--json"}, {{"AXL_CUDA_DRIVER_PATH", AXL_CUDA_STUB_PATH}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.out.find("\"cuda\"");
  REQUIRE(at != std::string::npos);
  CHECK(r.out.find("CUDA_ERROR_STUB_LIBRARY", at) != std::string::npos);
  CHECK(r.out.find("unavailable", at) != std::string::npos);
}

// In a setuid program the override is ignored (secure_getenv): the plugin
// looks for libcuda.so.1 as if AXL_CUDA_DRIVER_PATH were unset. Needs root
// and a mount without nosuid, as loader_test's setuid case; skipped elsewhere.
TEST_CASE("setuid programs ignore AXL_CUDA_DRIVER_PATH") {
  if (geteuid() != 0) {
    WARN("skipped: not root, cannot make a setuid copy of the probe");
    return;
  }
  axltest::TempDir dir;
  chmod(dir.str().c_str(), 0755);
  const std::string copy = dir.add(kProbe);
  if (chown(copy.c_str(), 65534, 65534) != 0 || chmod(copy.c_str(), 04755) != 0) {
    WARN("skipped: cannot chown/chmod the probe copy");
    return;
  }
  axltest::RunResult r = run({copy}, {{"AXL_CUDA_DRIVER_PATH", AXL_CUDA_STUB_PATH}});
  KV kv(r.out);
  if (r.exit_code != 0 || kv["probe.done"] != "1") {
    WARN("skipped: the setuid probe did not run (exit " << r.exit_code << "): " << r.err);
    return;
  }
  const KV::Record cuda = kv.by_file("libaxl_plugin_cuda.so");
  INFO(cuda.reason);
  REQUIRE(cuda.index >= 0);
  CHECK(cuda.reason.find("CUDA_ERROR_STUB_LIBRARY") == std::string::npos);
  CHECK(cuda.reason.find("AXL_CUDA_DRIVER_PATH") == std::string::npos);
  CHECK(cuda.reason.find("stubs/libcuda.so") == std::string::npos);
  // What it did instead: the system's libcuda.so.1 (absent here, or a real
  // driver on a GPU machine).
  CHECK((cuda.reason.find("libcuda.so") != std::string::npos || cuda.state == "LOADED"));
}

// ---- counting starts no driver (plugin.h: backend_device_count) ----------

namespace {

// The lines of the fake libraries' call log.
std::string calls(const axltest::TempDir& dir) {
  std::ifstream in(dir.str() + "/calls.log");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Counted {
  KV kv;
  KV::Record rec;
  std::string log;
};

// `axl_probe` (counts only) or `axl_probe work` (also uses every device)
// with the fake driver, the fake NVML and `env`.
Counted count_with(bool work, axltest::Env env) {
  axltest::TempDir dir;
  env.push_back({"AXL_CUDA_DRIVER_PATH", kFake});
  env.push_back({"FAKE_CALL_LOG", dir.str() + "/calls.log"});
  env.push_back({"AXL_VIRTUAL_DEVICES", "0"});
  std::vector<std::string> args = {kProbe};
  if (work) args.push_back("work");
  axltest::RunResult r = run(args, env);
  INFO("probe stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  Counted c{KV(r.out), {}, calls(dir)};
  c.rec = c.kv.by_file("libaxl_plugin_cuda.so");
  REQUIRE(c.rec.index >= 0);
  return c;
}

}  // namespace

TEST_CASE("counting CUDA devices asks NVML and never calls cuInit") {
  Counted c = count_with(false, {{"AXL_NVML_PATH", kFakeNvml}, {"FAKE_NVML_COUNT", "2"}});
  INFO(c.rec.reason << "\ncall log:\n" << c.log);
  CHECK(c.rec.state == "LOADED");
  CHECK(c.rec.devices == 2);
  CHECK(c.kv.num("devices.gpu") == 2);
  CHECK(c.log.find("nvmlInit_v2") != std::string::npos);
  CHECK(c.log.find("nvmlShutdown") != std::string::npos);
  CHECK(c.log.find("cuInit") == std::string::npos);
  CHECK(c.log.find("cuDeviceGetCount") == std::string::npos);
}

TEST_CASE("the first device use initialises the driver, whose count then replaces the census") {
  // NVML says 2; the fake driver, once initialised, says 0 devices.
  Counted c = count_with(true, {{"AXL_NVML_PATH", kFakeNvml}, {"FAKE_NVML_COUNT", "2"}});
  INFO("call log:\n" << c.log);
  CHECK(c.rec.devices == 2);
  CHECK(c.log.find("cuInit") != std::string::npos);
  const KV::Record after = c.kv.by_file("libaxl_plugin_cuda.so", "after.");
  CHECK(after.devices == 0);
  CHECK(c.kv.num("after.devices.gpu") == 0);
}

TEST_CASE("without NVML the census is /proc/driver/nvidia/gpus, still without cuInit") {
  Counted c = count_with(false, {{"AXL_NVML_PATH", "/nonexistent/axl-test/libnvidia-ml.so.1"},
                                 {"AXL_CENSUS_ROOT", kCensus}});
  INFO(c.rec.reason << "\ncall log:\n" << c.log);
  CHECK(c.rec.state == "LOADED");
  CHECK(c.rec.devices == 1);
  CHECK(c.log.find("cuInit") == std::string::npos);
}

TEST_CASE("with no census source, counting falls back to the driver") {
  // No NVML and an empty census root: only cuInit can count.
  axltest::TempDir empty;
  Counted c = count_with(false, {{"AXL_NVML_PATH", "/nonexistent/axl-test/libnvidia-ml.so.1"},
                                 {"AXL_CENSUS_ROOT", empty.str()}});
  INFO("call log:\n" << c.log);
  CHECK(c.rec.state == "LOADED");
  CHECK(c.log.find("cuInit") != std::string::npos);
}

TEST_CASE("CUDA_VISIBLE_DEVICES applies to the census as the CUDA runtime applies it") {
  const axltest::Env nvml = {{"AXL_NVML_PATH", kFakeNvml}, {"FAKE_NVML_COUNT", "4"}};
  auto with = [&](const std::string& visible) {
    axltest::Env env = nvml;
    env.push_back({"CUDA_VISIBLE_DEVICES", visible});
    return count_with(false, env);
  };
  CHECK(with("2,0").rec.devices == 2);
  CHECK(with("2,0,7,1").rec.devices == 2);  // the list ends at the out-of-range 7
  CHECK(with("GPU-fa4e0000-3,GPU-fa4e0000-1").rec.devices == 2);
  CHECK(with("GPU-fa4e0000-3,GPU-none").rec.devices == 1);
  Counted none = with("");
  INFO(none.rec.reason);
  CHECK(none.rec.state == "UNAVAILABLE");
  CHECK(none.rec.reason.find("CUDA_VISIBLE_DEVICES=''") != std::string::npos);
  CHECK(none.log.find("cuInit") == std::string::npos);
  CHECK(with("1,1").rec.state == "UNAVAILABLE");  // a repeated ordinal hides every device
  // A MIG instance's id matches none of NVML's GPU ids; the backend must
  // stay usable so that the driver, at first use, counts the instances.
  Counted mig = with("MIG-5c2d1c5e-0000-4000-8000-000000000001");
  INFO(mig.rec.reason);
  CHECK(mig.rec.state == "LOADED");
  CHECK(mig.rec.devices == 1);
}

TEST_CASE("NVML counting no GPU makes the backend unavailable without loading the driver") {
  Counted c = count_with(false, {{"AXL_NVML_PATH", kFakeNvml}, {"FAKE_NVML_COUNT", "0"}});
  INFO(c.rec.reason);
  CHECK(c.rec.state == "UNAVAILABLE");
  CHECK(c.rec.reason.find("lists no NVIDIA GPU") != std::string::npos);
  CHECK(c.log.find("cuInit") == std::string::npos);
}

TEST_CASE("census, then first use: a driver with devices initialises once and its devices work") {
  // NVML counts 2 GPUs, the functional fake driver has 1: counting calls no
  // cuInit, the first use does, and from then on the driver's count holds.
  axltest::TempDir dir;
  const std::string log = dir.str() + "/cuda.log";
  const axltest::Env env = {{"AXL_CUDA_DRIVER_PATH", AXL_FAKE_CUDA_DEVICE_PATH},
                            {"AXL_NVML_PATH", kFakeNvml},
                            {"FAKE_NVML_COUNT", "2"},
                            {"FAKE_CUDA_DEVICES", "1"},
                            {"FAKE_CUDA_LOG", log},
                            {"AXL_VIRTUAL_DEVICES", "0"}};
  axltest::RunResult counted = run({kProbe}, env);
  REQUIRE(counted.exit_code == 0);
  std::ifstream count_log(log);
  const std::string before((std::istreambuf_iterator<char>(count_log)), std::istreambuf_iterator<char>());
  INFO("driver calls while counting:\n" << before);
  CHECK(before.find("cuInit") == std::string::npos);
  CHECK(KV(counted.out).by_file("libaxl_plugin_cuda.so").devices == 2);

  axltest::RunResult r = run({kProbe, "work"}, env);
  INFO("probe stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  KV kv(r.out);
  CHECK(kv.by_file("libaxl_plugin_cuda.so", "after.").devices == 1);
  CHECK(kv.num("after.devices.gpu") == 1);
  std::string work = "<no cuda device used>";
  for (int i = 0; i < 4; ++i)
    if (kv["dev.gpu." + std::to_string(i) + ".backend"] == "cuda") work = kv["dev.gpu." + std::to_string(i) + ".work"];
  CHECK(work == "ok");
  CHECK(r.err.find("FAKE_CUDA:") == std::string::npos);
}
