// Shared by the no-device tests of the driver-API backends (tests/cuda,
// tests/hip): `axl_probe work` in a fresh process with one backend's library
// override, the checks that the host backends kept working beside it, and
// the check that a missing vendor library is logged at info level only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "test_util.hpp"

namespace axltest {

using Env = std::vector<std::pair<std::string, std::string>>;

struct BackendOutcome {
  KV kv;
  KV::Record rec;  // the backend's plugin record
  std::string err;
};

// Runs `probe work` with one virtual device and `env`; `plugin_file` (e.g.
// "libaxl_plugin_hip.so") names the record to return.
inline BackendOutcome probe_backend(const std::string& probe, const std::string& plugin_file, Env env) {
  env.push_back({"AXL_VIRTUAL_DEVICES", "1"});
  RunResult r = run({probe, "work"}, env);
  INFO("probe stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  BackendOutcome o{KV(r.out), {}, r.err};
  o.rec = o.kv.by_file(plugin_file);
  REQUIRE(o.rec.index >= 0);
  return o;
}

// The cpu device and the virtual device both did a host round trip, and the
// driver-API backends contributed no usable device (a census may have
// counted one at discovery; its failed use is attempt dev.gpu.N before the
// virtual device's).
inline void check_host_backends_work(const KV& kv) {
  INFO(kv.all().size() << " probe keys");
  CHECK(kv["dev.cpu.0.work"] == "ok");
  std::string virtual_work = "<no virtual device>";
  for (int i = 0; i < 8; ++i)
    if (kv["dev.gpu." + std::to_string(i) + ".backend"] == "virtual")
      virtual_work = kv["dev.gpu." + std::to_string(i) + ".work"];
  CHECK(virtual_work == "ok");
  CHECK(kv.num("after.devices.gpu") == 1);
}

// With `env_var` naming `missing`, the backend `name` is unavailable with
// `absent_text`, the path and the variable in its reason, and says so on
// stderr at info level but not at warn level: absence is normal on most
// machines. `extra` is added to the environment (e.g. a census with a GPU,
// so that the library is looked for). Returns the info-level outcome.
inline BackendOutcome check_absent_library(const std::string& probe, const std::string& name,
                                           const std::string& env_var, const std::string& missing,
                                           const std::string& absent_text, const Env& extra = {}) {
  const std::string file = "libaxl_plugin_" + name + ".so";
  Env env_info = extra, env_warn = extra;
  env_info.insert(env_info.end(), {{env_var, missing}, {"AXL_LOG_LEVEL", "info"}});
  env_warn.insert(env_warn.end(), {{env_var, missing}, {"AXL_LOG_LEVEL", "warn"}});
  BackendOutcome info = probe_backend(probe, file, env_info);
  INFO(info.rec.reason);
  CHECK(info.rec.state == "UNAVAILABLE");
  CHECK(info.rec.status == "AXL_ERROR_BACKEND_UNAVAILABLE");
  CHECK(info.rec.reason.find(absent_text) != std::string::npos);
  CHECK(info.rec.reason.find(missing) != std::string::npos);
  CHECK(info.rec.reason.find(env_var) != std::string::npos);
  CHECK(info.rec.reason.find("could not be loaded") != std::string::npos);
  INFO("stderr at info:\n" << info.err);
  CHECK(info.err.find("plugin " + name + " is unavailable") != std::string::npos);
  BackendOutcome warn = probe_backend(probe, file, env_warn);
  INFO("stderr at warn:\n" << warn.err);
  CHECK(warn.err.find(name) == std::string::npos);
  return info;
}

}  // namespace axltest
