// A core-less harness for the plugin tests: the shared fake host services
// (tools/test-host), which record what a plugin logs and reports, and helpers
// to dlopen a plugin and call its negotiate the way the core does.
#pragma once

#if AXL_CATCH2_V2
#include <catch2/catch.hpp>
#else
#include <catch2/catch_test_macros.hpp>
#endif

#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "axl/plugin.h"
#include "host_services.hpp"

namespace axl_test {

// FakeHost, new_host() and negotiate_args() come from tools/test-host, in
// this same namespace.

inline std::string variant_path(const std::string& variant) {
  return std::string(AXL_TEST_PLUGIN_DIR) + "/libaxl_plugin_t_" + variant + ".so";
}

// dlopen the way the core must (RTLD_NOW so a missing symbol fails here, not
// at the first call). Plugins are never closed, as in the core.
inline void* open_plugin(const std::string& path) {
  return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
}

inline axl_plugin_negotiate_fn entry_of(void* dl) {
  return reinterpret_cast<axl_plugin_negotiate_fn>(dlsym(dl, AXL_PLUGIN_ENTRY_SYMBOL));
}

// Opens `path`, requires the entry point, and returns it.
inline axl_plugin_negotiate_fn load_entry(const std::string& path) {
  void* dl = open_plugin(path);
  INFO(path << ": " << (dl ? "" : dlerror()));
  REQUIRE(dl != nullptr);
  axl_plugin_negotiate_fn fn = entry_of(dl);
  REQUIRE(fn != nullptr);
  return fn;
}

struct Slot {
  const char* name;
  size_t offset;
};

// The slots plugin.h's list marks REQUIRED (all of them from 1.0: a slot
// appended later is optional, docs/abi.md).
inline const std::vector<Slot>& required_slots_1_0() {
#define AXL_TEST_SLOT_(name, req, minor, ret, params) \
  if (AXL_PLUGIN_SLOT_IS_REQUIRED(req)) out.push_back(Slot{#name, offsetof(axl_plugin_table, name)});
  static const std::vector<Slot> slots = [] {
    std::vector<Slot> out;
    AXL_PLUGIN_SLOTS(AXL_TEST_SLOT_)
    return out;
  }();
#undef AXL_TEST_SLOT_
  return slots;
}

// True when the function pointer at `offset` in the table is non-NULL.
inline bool slot_present(const axl_plugin_table* t, size_t offset) {
  void (*fn)(void) = nullptr;
  std::memcpy(&fn, reinterpret_cast<const char*>(t) + offset, sizeof fn);
  return fn != nullptr;
}

// The names of the REQUIRED slots the table lacks, as the core must list them.
inline std::vector<std::string> missing_required(const axl_plugin_table* t) {
  std::vector<std::string> out;
  for (const Slot& s : required_slots_1_0())
    if (!slot_present(t, s.offset)) out.emplace_back(s.name);
  return out;
}

}  // namespace axl_test
