// The Level Zero backend without a device: the real loader with no driver,
// no loader at all, a loader lacking a required entry point, and loaders
// that initialise with zero drivers. Every scenario runs in a fresh process
// (the plugin discovers once per process): axl_level_zero_probe for what the
// plugin reports through the host services, axl_probe for what the core
// makes of it next to the cpu and virtual backends. Counting reads a census
// of Intel render nodes and only loads the loader (axl/common/census.hpp), so
// the cases run on a fake census with one Intel GPU (tests/data/census/intel)
// and what zeInitDrivers answers shows at backend_init ("init.*", "after.").
#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "test_util.hpp"

using axltest::contains;
using axltest::KV;
using axltest::run;

namespace {

constexpr const char* kEnv = "AXL_LEVEL_ZERO_LOADER_PATH";
const std::string kUnavailable = std::to_string(static_cast<int>(AXL_ERROR_BACKEND_UNAVAILABLE));
const std::string kMissingLoader = "/nonexistent/axl-test/libze_loader.so.1";
const std::string kIntelGpu = AXL_CENSUS_DATA "/intel";

KV probe_plugin(std::vector<std::pair<std::string, std::string>> env) {
  env.push_back({"AXL_CENSUS_ROOT", kIntelGpu});
  axltest::RunResult r = run({AXL_LEVEL_ZERO_PROBE_PATH, AXL_LEVEL_ZERO_PLUGIN_PATH}, env);
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE_FALSE(axltest::sanitizer_report(r.err));
  KV kv(r.out);
  REQUIRE(kv["negotiate"] == "ok");
  REQUIRE(kv["name"] == "level_zero");
  return kv;
}

// The highest level of any log line that mentions `text`, or -1.
int log_level_of(const KV& kv, const std::string& text) {
  int level = -1;
  for (int i = 0; i < kv.num("logs"); ++i)
    if (contains(kv["log." + std::to_string(i) + ".message"], text))
      level = std::max(level, kv.num("log." + std::to_string(i) + ".level"));
  return level;
}

// cpu, virtual (one device) and level_zero through the core, with `env`;
// the cpu and virtual devices must work as if level_zero were not there.
KV probe_core(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"AXL_PLUGINS", std::string(AXL_CPU_PLUGIN_PATH) + "," + AXL_VIRTUAL_PLUGIN_PATH + "," +
                          AXL_LEVEL_ZERO_PLUGIN_PATH},
      {"AXL_VIRTUAL_DEVICES", "1"},
      {"AXL_CENSUS_ROOT", kIntelGpu}};
  env.insert(env.end(), extra.begin(), extra.end());
  axltest::RunResult r = run({AXL_PROBE_PATH, "work"}, env);
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE_FALSE(axltest::sanitizer_report(r.err));
  KV kv(r.out);
  CHECK(kv["init.status"] == "AXL_SUCCESS");
  CHECK(kv.by_file("libaxl_plugin_cpu.so").state == "LOADED");
  CHECK(kv.by_file("libaxl_plugin_virtual.so").state == "LOADED");
  const std::string cpu = kv.device_key("cpu", "cpu");
  const std::string gpu = kv.device_key("gpu", "virtual");
  REQUIRE(!cpu.empty());
  REQUIRE(!gpu.empty());
  CHECK(kv[cpu + ".work"] == "ok");
  CHECK(kv[gpu + ".work"] == "ok");
  CHECK(kv["after.devices.gpu"] == "1");
  return kv;
}

}  // namespace

TEST_CASE("no loader: unavailable, reported at info level, naming the file") {
  KV kv = probe_plugin({{kEnv, kMissingLoader}});
  CHECK(kv["count.status"] == kUnavailable);
  const std::string msg = kv["count.message"];
  CHECK_THAT(msg, Catch::Contains("Level Zero is not installed"));
  CHECK_THAT(msg, Catch::Contains(kMissingLoader));
  CHECK_THAT(msg, Catch::Contains(kEnv));
  // Absence is the normal case on most machines: info, never a warning.
  CHECK(log_level_of(kv, "Level Zero is not installed") == AXL_LOG_INFO);
  for (int i = 0; i < kv.num("logs"); ++i) CHECK(kv.num("log." + std::to_string(i) + ".level") < AXL_LOG_WARN);
  // backend_init gives the same answer.
  CHECK(kv["init.status"] == kUnavailable);
  CHECK(kv["init.message"] == msg);
}

TEST_CASE("a loader lacking a required entry point is refused, naming the symbol") {
  KV kv = probe_plugin({{kEnv, AXL_FAKE_ZE_MISSING_SYMBOL_PATH}});
  CHECK(kv["count.status"] == kUnavailable);
  const std::string msg = kv["count.message"];
  CHECK_THAT(msg, Catch::Contains("lacks required entry point(s): zeMemAllocDevice "));
  CHECK_THAT(msg, Catch::Contains(AXL_FAKE_ZE_MISSING_SYMBOL_PATH));
  // Only the missing one is named (the fake has every other entry point).
  CHECK_FALSE(contains(msg, "zeInit,"));
  // A broken installation deserves a warning.
  CHECK(log_level_of(kv, "zeMemAllocDevice") == AXL_LOG_WARN);
}

TEST_CASE("a loader with zero drivers (zeInitDrivers) is unavailable with the reason") {
  KV kv = probe_plugin({{kEnv, AXL_FAKE_ZE_NO_DRIVERS_PATH}});
  CHECK(kv["count.status"] == "0");  // the census's; the loader is not initialised yet
  CHECK(kv["init.status"] == kUnavailable);
  const std::string msg = kv["init.message"];
  CHECK_THAT(msg, Catch::Contains("zeInitDrivers(GPU) reports 0 drivers"));
  CHECK_THAT(msg, Catch::Contains("no Level Zero GPU driver is installed"));
  CHECK_THAT(msg, Catch::Contains(AXL_FAKE_ZE_NO_DRIVERS_PATH));
}

TEST_CASE("a pre-1.10 loader with zero drivers (zeInit + zeDriverGet) is unavailable") {
  KV kv = probe_plugin({{kEnv, AXL_FAKE_ZE_NO_DRIVERS_LEGACY_PATH}});
  CHECK(kv["init.status"] == kUnavailable);
  const std::string msg = kv["init.message"];
  CHECK_THAT(msg, Catch::Contains("zeDriverGet reports 0 drivers"));
  CHECK_THAT(msg, Catch::Contains(AXL_FAKE_ZE_NO_DRIVERS_LEGACY_PATH));
}

TEST_CASE("no loader: the cpu and virtual backends are undisturbed") {
  KV kv = probe_core({{kEnv, kMissingLoader}});
  KV::Record rec = kv.by_file("libaxl_plugin_level_zero.so");
  CHECK(rec.state == "UNAVAILABLE");
  CHECK(rec.status == "AXL_ERROR_BACKEND_UNAVAILABLE");
  CHECK_THAT(rec.reason, Catch::Contains("Level Zero is not installed"));
  CHECK(kv.device_key("gpu", "level_zero").empty());
}

#ifdef AXL_TEST_REAL_ZE_LOADER
// Debian's libze1 (the real loader) with no GPU driver installed: the loader
// itself answers zeInit with ZE_RESULT_ERROR_UNINITIALIZED (0x78000001).
TEST_CASE("real loader, no driver: ZE_RESULT_ERROR_UNINITIALIZED with the library path") {
  KV kv = probe_plugin({});
  CHECK(kv["count.status"] == "0");  // the census's
  CHECK(kv["init.native_code"] == std::to_string(0x78000001));
  const std::string msg = kv["init.message"];
  CHECK_THAT(msg, Catch::Contains("ZE_RESULT_ERROR_UNINITIALIZED (0x78000001)"));
  // The file dlopen found through the search path, by its absolute path
  // (the ld.so cache may name it under /lib or /usr/lib).
  CHECK_THAT(msg, Catch::Contains("the Level Zero loader /"));
  // zeInit(0) on Debian's 1.8 loader; zeInitDrivers(GPU) on a 1.10+ one.
  CHECK_THAT(msg, Catch::Contains("/libze_loader.so.1 is installed, but ze"));
  CHECK_THAT(msg, Catch::Contains("failed: ZE_RESULT_ERROR_UNINITIALIZED (0x78000001)"));
  CHECK(kv["init.status"] == kUnavailable);
  CHECK(kv["init.native_name"] == "ZE_RESULT_ERROR_UNINITIALIZED");
}

TEST_CASE("real loader, no driver: the cpu and virtual backends are undisturbed") {
  KV kv = probe_core({});
  KV::Record rec = kv.by_file("libaxl_plugin_level_zero.so", "after.");
  CHECK(rec.state == "UNAVAILABLE");
  CHECK_THAT(rec.reason, Catch::Contains("ZE_RESULT_ERROR_UNINITIALIZED"));
  CHECK_THAT(rec.reason, Catch::Contains("libze_loader.so.1"));
}
#endif

// ---- counting initialises nothing (plugin.h: backend_device_count) -------

namespace {

// `axl_probe` (counting only) with level_zero over the fake loader that
// has no driver, its call log (fake_driver_util.h) and `census`.
std::pair<KV::Record, std::string> count_with(const std::string& census,
                                              std::vector<std::pair<std::string, std::string>> env = {}) {
  axltest::TempDir dir;
  const std::string log = dir.str() + "/calls.log";
  env.insert(env.end(), {{"AXL_PLUGINS", std::string(AXL_CPU_PLUGIN_PATH) + "," + AXL_LEVEL_ZERO_PLUGIN_PATH},
                         {kEnv, AXL_FAKE_ZE_NO_DRIVERS_PATH},
                         {"AXL_CENSUS_ROOT", census},
                         {"FAKE_CALL_LOG", log}});
  axltest::RunResult r = run({AXL_PROBE_PATH}, env);
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(log);
  return {KV(r.out).by_file("libaxl_plugin_level_zero.so"),
          std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>())};
}

}  // namespace

TEST_CASE("counting Intel GPUs reads the render nodes and never calls zeInit or zeInitDrivers") {
  auto [rec, log] = count_with(kIntelGpu);
  INFO(rec.reason << "\ncall log:\n" << log);
  CHECK(rec.state == "LOADED");
  CHECK(rec.devices == 1);  // renderD128 (0x8086); renderD129 is not Intel's
  CHECK(log.empty());
}

TEST_CASE("no Intel GPU in the census: unavailable with the reason, nothing initialised") {
  auto [rec, log] = count_with("/nonexistent/axl-test");
  INFO(rec.reason);
  CHECK(rec.state == "UNAVAILABLE");
  CHECK_THAT(rec.reason, Catch::Contains("no Intel GPU"));
  CHECK_THAT(rec.reason, Catch::Contains("/sys/class/drm"));
  CHECK(log.empty());
}

TEST_CASE("ZE_AFFINITY_MASK: its distinct devices are the census, tiles past the card count included") {
  // One card; FLAT hierarchy numbers tiles, so ordinal 3 may be real.
  CHECK(count_with(kIntelGpu, {{"ZE_AFFINITY_MASK", "0,1.0,1.1,3"}}).first.devices == 3);
  CHECK(count_with(kIntelGpu, {{"ZE_AFFINITY_MASK", "0"}}).first.devices == 1);
  auto [rec, log] = count_with(kIntelGpu, {{"ZE_AFFINITY_MASK", "x,y"}});
  INFO(rec.reason);
  CHECK(rec.state == "UNAVAILABLE");
  CHECK_THAT(rec.reason, Catch::Contains("ZE_AFFINITY_MASK='x,y'"));
}
