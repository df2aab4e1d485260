// Discovery and the broken-plugin matrix (ARCHITECTURE.md sections 2-3).
//
// Discovery runs once per process, so every scenario runs axl_probe in a
// fresh process with a controlled environment (every AXL_* variable removed,
// then the scenario's set) and checks its key=value report.
#include <sys/stat.h>
#include <unistd.h>

#include "axl/plugin.h"  // AXL_PLUGIN_ABI_MINOR, in the core's mismatch message
#include "test_util.hpp"

using namespace axltest;

namespace {

const std::string kProbe = AXL_PROBE_PATH;
const std::string kTestPlugins = AXL_TEST_PLUGIN_DIR;
const std::string kDupA = AXL_TEST_PLUGIN_DUP_A_DIR;
const std::string kDupB = AXL_TEST_PLUGIN_DUP_B_DIR;
const std::string kCpuPlugin = AXL_CPU_PLUGIN_PATH;
const std::string kDefaultDir = AXL_DEFAULT_PLUGIN_DIR;

std::string file_of(const std::string& variant) { return "libaxl_plugin_t_" + variant + ".so"; }
std::string tp(const std::string& variant) { return kTestPlugins + "/" + file_of(variant); }

using Env = std::vector<std::pair<std::string, std::string>>;

// Runs the probe and checks it exited cleanly; returns its report.
KV probe(const Env& env, const std::string& mode = "work", const std::string& cwd = "",
         RunResult* raw = nullptr) {
  std::vector<std::string> argv{kProbe};
  if (!mode.empty()) argv.push_back(mode);
  RunResult r = run(argv, env, cwd);
  INFO("probe stdout:\n" << r.out << "\nprobe stderr:\n" << r.err);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.signal == 0);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(sanitizer_report(r.err));
  KV kv(r.out);
  REQUIRE(kv["probe.done"] == "1");
  if (raw) *raw = r;
  return kv;
}

// The probe's work on the device of backend `name` succeeded.
void require_device_works(const KV& kv, const std::string& label, const std::string& name) {
  std::string key = kv.device_key(label, name);
  INFO("device of backend " << name);
  REQUIRE_FALSE(key.empty());
  CHECK(kv[key + ".get"] == "AXL_SUCCESS");
  CHECK(kv[key + ".work"] == "ok");
}

struct Broken {
  const char* variant;
  const char* state;
  const char* status;
  std::vector<std::string> reason;  // substrings the reason must contain
};

// Every variant and the diagnostic it must produce.
const std::vector<Broken> kBroken = {
    {"no_entry", "SKIPPED", "AXL_ERROR_PLUGIN_INVALID",
     {"no entry symbol", "axl_plugin_negotiate"}},
    // The core cannot know the plugin's major (negotiate returns no number
    // on a mismatch), so it states its own.
    {"wrong_major", "SKIPPED", "AXL_ERROR_VERSION_MISMATCH",
     {"AXL_ERROR_VERSION_MISMATCH", "core ABI is 1." + std::to_string(AXL_PLUGIN_ABI_MINOR)}},
    {"missing_slot", "SKIPPED", "AXL_ERROR_PLUGIN_INVALID",
     {"lacks required slots", "queue_create", "memory_alloc"}},
    {"size_zero", "SKIPPED", "AXL_ERROR_PLUGIN_INVALID",
     {"function table struct_size 0 is outside"}},
    {"size_huge", "SKIPPED", "AXL_ERROR_PLUGIN_INVALID",
     {"function table struct_size 1073741824 is outside"}},
    {"info_size_bad", "SKIPPED", "AXL_ERROR_PLUGIN_INVALID", {"info struct_size 0 is outside"}},
    {"null_table", "SKIPPED", "AXL_ERROR_PLUGIN_INVALID", {"no function table"}},
    {"negotiate_fails", "SKIPPED", "AXL_ERROR_PLUGIN_INVALID",
     {"negotiate failed with AXL_ERROR_INTERNAL", "negotiate failed on purpose"}},
    {"negotiate_throws", "SKIPPED", "AXL_ERROR_PLUGIN_INVALID",
     {"negotiate threw an exception", "thrown out of negotiate on purpose"}},
    {"undefined_symbol", "SKIPPED", "AXL_ERROR_PLUGIN_INVALID",
     {"dlopen failed", "undefined symbol", "axl_test_undefined_function"}},
    {"name_mismatch", "SKIPPED", "AXL_ERROR_PLUGIN_INVALID",
     {"something_else", "t_name_mismatch"}},
};

}  // namespace

TEST_CASE("probe and plugins were built", "[loader]") {
  REQUIRE(fs::exists(kProbe));
  REQUIRE(fs::exists(kCpuPlugin));
  for (const char* v : {"good", "good2", "no_entry", "wrong_major", "missing_slot", "size_zero",
                        "size_huge", "info_size_bad", "null_table", "negotiate_fails",
                        "negotiate_throws", "undefined_symbol", "name_mismatch",
                        "init_unavailable", "extra_export"}) {
    INFO(v);
    CHECK(fs::exists(tp(v)));
  }
  CHECK(fs::exists(kDupA + "/libaxl_plugin_t_dup.so"));
  CHECK(fs::exists(kDupB + "/libaxl_plugin_t_dup.so"));
}

TEST_CASE("default discovery finds the cpu backend next to libaxl.so", "[loader]") {
  KV kv = probe({});
  CHECK(kv["init.status"] == "AXL_SUCCESS");
  auto cpu = kv.by_file("libaxl_plugin_cpu.so");
  REQUIRE(cpu.index >= 0);
  CHECK(fs::equivalent(cpu.path, kCpuPlugin));
  CHECK(fs::path(cpu.path).parent_path() == fs::canonical(kDefaultDir));
  CHECK(cpu.name == "cpu");
  CHECK(cpu.state == "LOADED");
  CHECK(cpu.status == "AXL_SUCCESS");
  CHECK(cpu.reason == "");
  CHECK(cpu.devices == 1);
  CHECK(kv.num("devices.cpu") == 1);
  require_device_works(kv, "cpu", "cpu");
  // Nothing from the test-plugin folder without AXL_PLUGIN_PATH.
  for (auto& r : kv.records()) CHECK_FALSE(contains(r.path, kTestPlugins));
}

TEST_CASE("each broken plugin gets its own diagnostic; the good ones keep working",
          "[loader][matrix]") {
  for (const Broken& b : kBroken) {
    DYNAMIC_SECTION("variant " << b.variant) {
      TempDir dir;
      std::string broken = dir.add(tp(b.variant));
      dir.add(tp("good"));
      dir.add(tp("good2"));
      RunResult raw;
      KV kv = probe({{"AXL_PLUGIN_PATH", dir.str()}}, "work", "", &raw);
      INFO("probe stdout:\n" << raw.out << "\nstderr:\n" << raw.err);
      CHECK(kv["init.status"] == "AXL_SUCCESS");

      auto rec = kv.by_path(broken);
      REQUIRE(rec.index >= 0);
      CHECK(rec.state == b.state);
      CHECK(rec.status == b.status);
      for (auto& part : b.reason) CHECK_THAT(rec.reason, Catch::Contains(part));
      CHECK(rec.devices == 0);
      // A present but broken plugin is a warning at the default level.
      CHECK_THAT(raw.err, Catch::Contains("skipping plugin " + broken));

      // The good plugins in the same folder load and their devices work.
      for (const char* good : {"good", "good2"}) {
        auto g = kv.by_path(dir.str() + "/" + file_of(good));
        INFO(good);
        REQUIRE(g.index >= 0);
        CHECK(g.state == "LOADED");
        CHECK(g.devices == 1);
        require_device_works(kv, "gpu", std::string("t_") + good);
      }
      require_device_works(kv, "cpu", "cpu");
      // The broken plugin contributes no device.
      CHECK(kv.device_key("gpu", std::string("t_") + b.variant).empty());
    }
  }
}

TEST_CASE("a plugin exporting an extra symbol still loads (the export check is nm's job)",
          "[loader][matrix]") {
  TempDir dir;
  std::string p = dir.add(tp("extra_export"));
  KV kv = probe({{"AXL_PLUGIN_PATH", dir.str()}});
  auto rec = kv.by_path(p);
  REQUIRE(rec.index >= 0);
  CHECK(rec.state == "LOADED");
  require_device_works(kv, "gpu", "t_extra_export");
}

TEST_CASE("backend_init failure: UNAVAILABLE with the native name once a device is requested",
          "[loader][matrix]") {
  TempDir dir;
  std::string un = dir.add(tp("init_unavailable"));
  dir.add(tp("good"));
  dir.add(tp("good2"));
  RunResult raw;
  KV kv = probe({{"AXL_PLUGIN_PATH", dir.str()}}, "work", "", &raw);
  INFO("probe stdout:\n" << raw.out);

  // Discovery only counts devices: the plugin is loaded, not yet initialised.
  auto before = kv.by_path(un);
  REQUIRE(before.index >= 0);
  CHECK(before.state == "LOADED");
  CHECK(before.devices == 1);

  // Requesting its device runs backend_init, which fails.
  std::string failed;
  for (int k = 0; k < 64 && kv.has("dev.gpu." + std::to_string(k) + ".get"); ++k) {
    std::string p = "dev.gpu." + std::to_string(k);
    if (kv[p + ".get"] != "AXL_SUCCESS" && kv[p + ".get.error_backend"] == "t_init_unavailable")
      failed = p;
  }
  REQUIRE_FALSE(failed.empty());
  CHECK(kv[failed + ".get"] == "AXL_ERROR_BACKEND_UNAVAILABLE");
  CHECK(kv[failed + ".get.error_native_name"] == "FAKE_ERROR_NO_DEVICE");
  CHECK(kv[failed + ".get.error_native_code"] == "100");
  CHECK_THAT(kv[failed + ".get.error_message"], Catch::Contains("no device: fake driver"));

  auto after = kv.by_path(un, "after.");
  REQUIRE(after.index >= 0);
  CHECK(after.state == "UNAVAILABLE");
  CHECK(after.status == "AXL_ERROR_BACKEND_UNAVAILABLE");
  CHECK_THAT(after.reason, Catch::Contains("no device: fake driver"));
  CHECK_THAT(after.reason, Catch::Contains("FAKE_ERROR_NO_DEVICE"));
  // It no longer contributes a device; the others keep working.
  CHECK(kv.num("after.devices.gpu") == kv.num("devices.gpu") - 1);
  require_device_works(kv, "gpu", "t_good");
  require_device_works(kv, "gpu", "t_good2");
  require_device_works(kv, "cpu", "cpu");
}

TEST_CASE("AXL_PLUGINS is exclusive", "[loader][plugins_env]") {
  SECTION("only the listed files load, AXL_PLUGIN_PATH and the default folder are ignored") {
    TempDir other;
    other.add(tp("good2"));
    KV kv = probe({{"AXL_PLUGINS", tp("good")}, {"AXL_PLUGIN_PATH", other.str()}});
    CHECK(kv["init.status"] == "AXL_SUCCESS");
    REQUIRE(kv.num("plugins") == 1);
    CHECK(kv["plugin.0.path"] == tp("good"));
    CHECK(kv["plugin.0.state"] == "LOADED");
    CHECK(kv.num("devices.cpu") == 0);
    CHECK(kv.num("devices.gpu") == 1);
    require_device_works(kv, "gpu", "t_good");
    CHECK(kv.num("mapped_count") == 1);
    CHECK(kv.mapped(tp("good")));
  }
  SECTION("two listed files load in the listed order, spaces around commas allowed") {
    KV kv = probe({{"AXL_PLUGINS", tp("good2") + " , " + tp("good")}});
    CHECK(kv["init.status"] == "AXL_SUCCESS");
    REQUIRE(kv.num("plugins") == 2);
    CHECK(kv["plugin.0.path"] == tp("good2"));
    CHECK(kv["plugin.1.path"] == tp("good"));
    require_device_works(kv, "gpu", "t_good");
    require_device_works(kv, "gpu", "t_good2");
  }
  SECTION("a listed broken file makes axl_init fail naming the file") {
    for (const Broken& b : kBroken) {
      INFO("variant " << b.variant);
      KV kv = probe({{"AXL_PLUGINS", tp("good") + "," + tp(b.variant)}}, "");
      CHECK(kv["init.status"] == "AXL_ERROR_PLUGIN_INVALID");
      CHECK_THAT(kv["init.message"], Catch::Contains("AXL_PLUGINS lists " + tp(b.variant)));
      CHECK_THAT(kv["init.message"], Catch::Contains(b.reason.back()));
      // The records still say what happened to each file.
      REQUIRE(kv.num("plugins") == 2);
      CHECK(kv.by_path(tp("good")).state == "LOADED");
      CHECK(kv.by_path(tp(b.variant)).state == b.state);
      // Every call that needs discovery reports the same error.
      CHECK(kv["devices.all_status"] == "AXL_ERROR_PLUGIN_INVALID");
      CHECK_THAT(kv["devices.all_status.error_message"], Catch::Contains(tp(b.variant)));
    }
  }
  SECTION("a listed file that does not exist is an error naming it") {
    std::string missing = kTestPlugins + "/libaxl_plugin_t_does_not_exist.so";
    KV kv = probe({{"AXL_PLUGINS", missing}}, "");
    CHECK(kv["init.status"] == "AXL_ERROR_PLUGIN_INVALID");
    CHECK_THAT(kv["init.message"], Catch::Contains(missing));
    CHECK_THAT(kv["init.message"], Catch::Contains("dlopen failed"));
  }
  SECTION("a relative path is rejected, even when it exists from the current directory") {
    KV kv = probe({{"AXL_PLUGINS", file_of("good")}}, "", kTestPlugins);
    CHECK(kv["init.status"] == "AXL_ERROR_PLUGIN_INVALID");
    CHECK_THAT(kv["init.message"], Catch::Contains(file_of("good")));
    CHECK_THAT(kv["init.message"], Catch::Contains("relative path"));
    CHECK(kv.num("mapped_count") == 0);
    REQUIRE(kv.num("plugins") == 1);
    CHECK(kv["plugin.0.state"] == "SKIPPED");
  }
  SECTION("a file name that is not libaxl_plugin_<name>.so is refused") {
    TempDir dir;
    fs::copy_file(tp("good"), dir.path() / "libnot_a_plugin.so");
    std::string p = (dir.path() / "libnot_a_plugin.so").string();
    KV kv = probe({{"AXL_PLUGINS", p}}, "");
    CHECK(kv["init.status"] == "AXL_ERROR_PLUGIN_INVALID");
    CHECK_THAT(kv["init.message"], Catch::Contains("libaxl_plugin_<name>.so"));
    CHECK_FALSE(kv.mapped(p));
  }
}

TEST_CASE("AXL_PLUGIN_PATH precedence and shadowing", "[loader][path]") {
  const std::string dupA = kDupA + "/libaxl_plugin_t_dup.so";
  const std::string dupB = kDupB + "/libaxl_plugin_t_dup.so";
  SECTION("the first folder wins for one file name; the second is SHADOWED") {
    KV kv = probe({{"AXL_PLUGIN_PATH", kDupA + ":" + kDupB}});
    auto a = kv.by_path(dupA), b = kv.by_path(dupB);
    REQUIRE(a.index >= 0);
    REQUIRE(b.index >= 0);
    CHECK(a.index < b.index);
    CHECK(a.state == "LOADED");
    CHECK(a.version == "dup_a");
    CHECK(b.state == "SHADOWED");
    CHECK(b.reason == "shadowed by " + dupA);
    CHECK(kv.mapped(dupA));
    CHECK_FALSE(kv.mapped(dupB));
    std::string key = kv.device_key("gpu", "t_dup");
    REQUIRE_FALSE(key.empty());
    CHECK_THAT(kv[key + ".model"], Catch::Contains("dup_a"));
    CHECK(kv[key + ".work"] == "ok");
  }
  SECTION("swapping the folders swaps the winner") {
    KV kv = probe({{"AXL_PLUGIN_PATH", kDupB + ":" + kDupA}});
    CHECK(kv.by_path(dupB).state == "LOADED");
    CHECK(kv.by_path(dupB).version == "dup_b");
    CHECK(kv.by_path(dupA).state == "SHADOWED");
    CHECK(kv.by_path(dupA).reason == "shadowed by " + dupB);
    std::string key = kv.device_key("gpu", "t_dup");
    REQUIRE_FALSE(key.empty());
    CHECK_THAT(kv[key + ".model"], Catch::Contains("dup_b"));
  }
  SECTION("AXL_PLUGIN_PATH folders come before the default folder") {
    TempDir dir;
    std::string mine = dir.add(kCpuPlugin);
    KV kv = probe({{"AXL_PLUGIN_PATH", dir.str()}});
    auto first = kv.by_path(mine);
    auto dflt = kv.by_path(fs::canonical(kDefaultDir).string() + "/libaxl_plugin_cpu.so");
    REQUIRE(first.index >= 0);
    REQUIRE(dflt.index >= 0);
    CHECK(first.index < dflt.index);
    CHECK(first.state == "LOADED");
    CHECK(dflt.state == "SHADOWED");
    CHECK(dflt.reason == "shadowed by " + mine);
    CHECK(kv.mapped(mine));
    CHECK_FALSE(kv.mapped(dflt.path));
    CHECK(kv.num("devices.cpu") == 1);
    require_device_works(kv, "cpu", "cpu");
  }
  SECTION("AXL_PLUGINS_DISABLE marks DISABLED and never dlopens") {
    TempDir dir;
    // undefined_symbol would fail in dlopen: DISABLED (not SKIPPED) proves
    // dlopen never ran, and so does the list of mapped objects.
    std::string undef = dir.add(tp("undefined_symbol"));
    std::string good = dir.add(tp("good"));
    dir.add(tp("good2"));
    KV kv = probe({{"AXL_PLUGIN_PATH", dir.str()},
                   {"AXL_PLUGINS_DISABLE", "t_undefined_symbol, t_good,cpu"}});
    for (const std::string& p : {undef, good}) {
      auto r = kv.by_path(p);
      INFO(p);
      REQUIRE(r.index >= 0);
      CHECK(r.state == "DISABLED");
      CHECK(r.reason == "disabled by AXL_PLUGINS_DISABLE");
      CHECK_FALSE(kv.mapped(p));
    }
    auto cpu = kv.by_file("libaxl_plugin_cpu.so");
    REQUIRE(cpu.index >= 0);
    CHECK(cpu.state == "DISABLED");
    CHECK_FALSE(kv.mapped_file("libaxl_plugin_cpu.so"));
    CHECK(kv.num("devices.cpu") == 0);
    CHECK(kv.device_key("gpu", "t_good").empty());
    require_device_works(kv, "gpu", "t_good2");
  }
  SECTION("a relative AXL_PLUGIN_PATH entry is ignored") {
    TempDir dir;
    dir.add(tp("good"), "sub");
    dir.add(tp("good2"));
    KV kv = probe({{"AXL_PLUGIN_PATH", "sub:.:" + dir.str() + "/sub"}}, "work", dir.str());
    // Only the absolute entry found t_good; "sub" and "." were skipped.
    CHECK(kv.count_file(file_of("good")) == 1);
    CHECK(kv.by_path(dir.str() + "/sub/" + file_of("good")).state == "LOADED");
    CHECK(kv.count_file(file_of("good2")) == 0);
    CHECK_THAT(kv.discovery_log(), Catch::Contains("AXL_PLUGIN_PATH entry 'sub' ignored: relative"));
    CHECK_THAT(kv.discovery_log(), Catch::Contains("AXL_PLUGIN_PATH entry '.' ignored: relative"));
  }
  SECTION("the current directory is never searched") {
    TempDir dir;
    dir.add(tp("good"));
    dir.add(kCpuPlugin);
    KV kv = probe({}, "work", dir.str());
    CHECK(kv.count_file(file_of("good")) == 0);
    CHECK_FALSE(kv.mapped_file(file_of("good")));
    for (auto& r : kv.records()) CHECK_FALSE(contains(r.path, dir.str()));
    CHECK(kv.num("devices.cpu") == 1);
  }
  SECTION("files not named libaxl_plugin_<name>.so in a folder are not considered") {
    TempDir dir;
    fs::copy_file(tp("good"), dir.path() / "libsomething.so");
    fs::copy_file(tp("good"), dir.path() / "libaxl_plugin_t_good.so.1");
    fs::copy_file(tp("good"), dir.path() / "libaxl_plugin_.so");
    KV kv = probe({{"AXL_PLUGIN_PATH", dir.str()}}, "");
    for (auto& r : kv.records()) CHECK_FALSE(contains(r.path, dir.str()));
  }
}

// In a setuid program secure_getenv ignores every AXL_* variable. This needs
// root (to make a copy of the probe setuid to another user) and a mount
// without nosuid; elsewhere the case is skipped with a warning.
TEST_CASE("setuid programs ignore AXL_* variables", "[loader][secure]") {
  Env hostile{{"AXL_PLUGINS", "/nonexistent/libaxl_plugin_x.so"},
              {"AXL_PLUGINS_DISABLE", "cpu"}};
  // Control: a normal process obeys them.
  KV plain = probe(hostile, "");
  REQUIRE(plain["init.status"] == "AXL_ERROR_PLUGIN_INVALID");

  if (geteuid() != 0) {
    WARN("skipped: not root, cannot make a setuid copy of the probe");
    return;
  }
  TempDir dir;
  chmod(dir.str().c_str(), 0755);
  std::string copy = dir.add(kProbe);
  if (chown(copy.c_str(), 65534, 65534) != 0 || chmod(copy.c_str(), 04755) != 0) {
    WARN("skipped: cannot chown/chmod the probe copy");
    return;
  }
  // (Under ASan the probe turns LeakSanitizer off itself when AT_SECURE is
  // set: LSan cannot run in a setuid process.)
  RunResult r = run({copy}, hostile);
  KV kv(r.out);
  if (r.exit_code != 0 || kv["probe.done"] != "1") {
    // E.g. libaxl.so not readable for uid 65534, or a nosuid mount.
    WARN("skipped: the setuid probe did not run (exit " << r.exit_code << "): " << r.err);
    return;
  }
  struct stat st {};
  stat(copy.c_str(), &st);
  REQUIRE((st.st_mode & S_ISUID) != 0);
  CHECK(kv["init.status"] == "AXL_SUCCESS");
  CHECK(kv.by_file("libaxl_plugin_cpu.so").state == "LOADED");
  CHECK(kv.num("devices.cpu") == 1);
}

TEST_CASE("device ids stay right when an earlier backend's recount corrects its census", "[loader]") {
  // t_a_census counts 2 devices until backend_init, then 1; t_b_good has 1.
  // Getting t_b_good's device first must not give it an id from the
  // census: once t_a_census is initialised that id would be out of range.
  RunResult raw;
  KV kv = probe({{"AXL_PLUGIN_PATH", std::string(AXL_TEST_PLUGIN_DIR) + "/census"}}, "ids-last-first", "", &raw);
  INFO("probe stdout:\n" << raw.out);
  REQUIRE(kv["probe.done"] == "1");
  CHECK(kv["ids.count"] == "3");
  const int after = std::stoi(kv["ids.after.count"]);
  CHECK(after == 2);
  int got = 0;
  for (int i = 0; i < 3; ++i) {
    const std::string p = "ids." + std::to_string(i);
    if (kv[p + ".get"] != "AXL_SUCCESS") continue;
    ++got;
    INFO(p << " is " << kv[p + ".backend"]);
    CHECK(kv[p + ".id"] == std::to_string(i));
    CHECK(std::stoi(kv[p + ".id"]) < after);
  }
  CHECK(got == 2);
}

TEST_CASE("axl_plugin_name_from_path is discovery's file-name rule", "[loader]") {
  char name[16];
  REQUIRE(axl_plugin_name_from_path("/opt/x/libaxl_plugin_acme_2.so", name, sizeof name) == AXL_SUCCESS);
  CHECK(std::string(name) == "acme_2");
  // Only the last component counts; a relative name works.
  REQUIRE(axl_plugin_name_from_path("libaxl_plugin_cpu.so", name, sizeof name) == AXL_SUCCESS);
  CHECK(std::string(name) == "cpu");
  // Not the rule: no name, and the buffer is left as it was.
  std::memcpy(name, "keep", 5);
  for (const char* bad : {"/opt/libaxl_plugin_.so", "/opt/libaxl_plugin_cpu.so.1", "/lib/libcpu.so",
                          "/libaxl_plugin_cpu.so/", "libaxl_plugin_cpu"}) {
    INFO(bad);
    require_status(axl_plugin_name_from_path(bad, name, sizeof name), AXL_ERROR_NOT_FOUND,
                   {"libaxl_plugin_<name>.so"});
    CHECK(std::string(name) == "keep");
  }
  // Exactly the name plus its NUL fits; one byte less does not.
  require_status(axl_plugin_name_from_path("libaxl_plugin_abcdefghijklmnop.so", name, sizeof name),
                 AXL_ERROR_OUT_OF_RANGE, {"needs 17 bytes", "has 16"});
  REQUIRE(axl_plugin_name_from_path("libaxl_plugin_abcdefghijklmno.so", name, sizeof name) == AXL_SUCCESS);
  CHECK(std::string(name) == "abcdefghijklmno");
  require_status(axl_plugin_name_from_path(nullptr, name, sizeof name), AXL_ERROR_INVALID_ARGUMENT, {"NULL"});
  require_status(axl_plugin_name_from_path("libaxl_plugin_cpu.so", nullptr, 0), AXL_ERROR_INVALID_ARGUMENT,
                 {"NULL"});
}
