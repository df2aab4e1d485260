// Catch2 checks over the fake host, for the test programs that drive one
// plugin's table directly (tests/opencl, tests/level_zero): loading the
// plugin, and asserting the error a slot reported. Header-only, and included
// by Catch test programs alone: axl_test_host itself still needs plugin.h
// alone, since axl-cts links it without Catch.
#pragma once

#include <string>

#include <catch2/catch.hpp>

#include "axl/plugin.h"
#include "host_services.hpp"

namespace axl_test {

// Loads and negotiates the plugin at `path` with `host`; fails the test,
// saying which step failed, when it cannot.
inline const axl_plugin_table* require_plugin(const std::string& path, const FakeHost& host) {
  const LoadedPlugin p = load_plugin(path, host);
  INFO(p.error);
  REQUIRE(p.ok());
  return p.table;
}

// A slot returned `got`: it must be `expected`, reported on this thread with
// a message containing `part` (the report is what the core's last error
// would say).
inline void require_error(const FakeHost& host, axl_status got, axl_status expected,
                          const std::string& part) {
  const ErrorReport last = host.last_report();
  INFO("message: " << last.message);
  CHECK(got == expected);
  CHECK(last.status == expected);
  CHECK_THAT(last.message, Catch::Contains(part));
}

}  // namespace axl_test
