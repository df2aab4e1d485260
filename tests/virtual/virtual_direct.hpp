// The virtual plugin without the core: dlopen it, negotiate with the shared
// fake host services (tools/test-host), which record what it logs, reports
// and traces, and call its table directly. For what the core never lets
// through (an out-of-bounds copy, an address of another device,
// backend_set_option), so the plugin's own checks can be tested.
#pragma once

#include <string>

#include "axl/plugin.h"
#include "host_services.hpp"

namespace vd {

// The shared fake host services (tools/test-host).
using Host = axl_test::FakeHost;

struct Plugin {
  Host* host = nullptr;
  const axl_plugin_info* info = nullptr;
  const axl_plugin_table* t = nullptr;
  std::string error;  // why loading failed, if it did
};

// Loads AXL_VIRTUAL_PLUGIN_PATH once and negotiates; `error` is set on failure.
// One host per process: the plugin keeps the host pointer for the process's life.
inline Plugin& plugin() {
  static Plugin p = [] {
    Plugin out;
    out.host = &axl_test::new_host();
    const axl_test::LoadedPlugin loaded = axl_test::load_plugin(AXL_VIRTUAL_PLUGIN_PATH, *out.host);
    out.error = loaded.error;
    out.info = loaded.info;
    out.t = loaded.table;
    return out;
  }();
  return p;
}

}  // namespace vd
