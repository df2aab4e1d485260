// Running fake_device_client against the cuda plugin and the fake driver
// with devices (fake_cuda_device.c) in a fresh process, with the fake's call
// log read back: shared by the tests of tests/cuda that drive the plugin
// through the core (cuda_fake_device_test, cuda_multicast_test).
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "../core/test_util.hpp"

namespace fakecuda {

using Env = std::vector<std::pair<std::string, std::string>>;

struct Outcome {
  axltest::RunResult run;
  std::vector<std::string> log;  // the fake's call log, a line per call

  bool has(const std::string& prefix) const {
    for (const auto& l : log)
      if (l.rfind(prefix, 0) == 0) return true;
    return false;
  }
  size_t count(const std::string& prefix) const {
    size_t n = 0;
    for (const auto& l : log) n += l.rfind(prefix, 0) == 0;
    return n;
  }
  // The index of the first line at or after `from` starting with `prefix`, or -1.
  long find(const std::string& prefix, long from = 0) const {
    for (size_t i = static_cast<size_t>(from); i < log.size(); ++i)
      if (log[i].rfind(prefix, 0) == 0) return static_cast<long>(i);
    return -1;
  }
};

inline Outcome client(const std::string& mode, Env env = {}, bool clean = true) {
  axltest::TempDir dir;
  const std::string log = (dir.path() / "fake_cuda.log").string();
  env.push_back({"AXL_PLUGINS", AXL_CUDA_PLUGIN_PATH});
  env.push_back({"AXL_CUDA_DRIVER_PATH", AXL_FAKE_CUDA_DEVICE_PATH});
  env.push_back({"FAKE_CUDA_LOG", log});
  Outcome o;
  o.run = axltest::run({AXL_FAKE_CLIENT_PATH, mode}, env);
  std::istringstream in(axltest::slurp(log));
  for (std::string line; std::getline(in, line);) o.log.push_back(line);
  INFO("client " << mode << " exit " << o.run.exit_code << "\nstdout:\n" << o.run.out << "\nstderr:\n" << o.run.err);
  // Never a driver call from a host function or after the driver's teardown.
  if (clean) CHECK(o.run.err.find("FAKE_CUDA:") == std::string::npos);
  return o;
}

}  // namespace fakecuda
