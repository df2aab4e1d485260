// The Metal stub, checked without the core: it is the template third-party
// backends start from, so its negotiate and its answers are pinned here.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "plugin_harness.hpp"

using namespace axl_test;

namespace {

const axl_plugin_table* negotiate_stub(FakeHost& host) {
  axl_plugin_negotiate_fn fn = load_entry(AXL_METAL_STUB_PATH);
  axl_negotiate_args args = negotiate_args(host);
  REQUIRE(fn(&args) == AXL_SUCCESS);
  REQUIRE(args.table != nullptr);
  return args.table;
}

// The <name> of libaxl_plugin_<name>.so.
std::string name_from_path(const std::string& path) {
  const std::string prefix = "libaxl_plugin_", suffix = ".so";
  std::string base = path.substr(path.find_last_of('/') + 1);
  REQUIRE(base.rfind(prefix, 0) == 0);
  REQUIRE(base.size() > prefix.size() + suffix.size());
  return base.substr(prefix.size(), base.size() - prefix.size() - suffix.size());
}

}  // namespace

TEST_CASE("metal_stub negotiates with its file's name, api metal, a full table") {
  axl_plugin_negotiate_fn fn = load_entry(AXL_METAL_STUB_PATH);
  FakeHost& host = new_host();
  axl_negotiate_args args = negotiate_args(host, AXL_PLUGIN_ABI_MAJOR, AXL_PLUGIN_ABI_MINOR + 3);
  REQUIRE(fn(&args) == AXL_SUCCESS);
  CHECK(args.plugin_abi_minor == AXL_PLUGIN_ABI_MINOR);
  REQUIRE(args.info != nullptr);
  CHECK(args.info->struct_size == sizeof(axl_plugin_info));
  CHECK(std::string(args.info->name) == name_from_path(AXL_METAL_STUB_PATH));
  CHECK(std::string(args.info->name) == "metal_stub");
  CHECK(std::string(args.info->api) == "metal");
  CHECK(args.info->reserved == 0);
  REQUIRE(args.table != nullptr);
  REQUIRE(args.table->struct_size == sizeof(axl_plugin_table));
  // Which slots the table fills is checked against plugin.h's list when
  // metal_stub_slots_test.cpp compiles (a slot appended without an entry in
  // the stub fails that build, by name); here only the count of slots the
  // struct holds.
  CHECK(AXL_PLUGIN_SLOT_COUNT * sizeof(void*) + sizeof(size_t) == sizeof(axl_plugin_table));
  CHECK(host.report_count() == 0);
  CHECK(host.log_count() > 0);
}

TEST_CASE("metal_stub refuses another major without touching the host") {
  axl_plugin_negotiate_fn fn = load_entry(AXL_METAL_STUB_PATH);
  // A host with no services at all: calling any of them would crash.
  static axl_host_services empty{};
  axl_negotiate_args args{};
  args.struct_size = sizeof args;
  args.core_abi_major = AXL_PLUGIN_ABI_MAJOR + 1;
  args.host = &empty;
  CHECK(fn(&args) == AXL_ERROR_VERSION_MISMATCH);
  CHECK(args.info == nullptr);
  CHECK(args.table == nullptr);
}

TEST_CASE("metal_stub refuses malformed negotiate arguments") {
  axl_plugin_negotiate_fn fn = load_entry(AXL_METAL_STUB_PATH);
  FakeHost& host = new_host();
  CHECK(fn(nullptr) == AXL_ERROR_INVALID_ARGUMENT);

  axl_negotiate_args short_args = negotiate_args(host);
  short_args.struct_size = offsetof(axl_negotiate_args, table);
  CHECK(fn(&short_args) == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(short_args.table == nullptr);

  axl_negotiate_args no_host = negotiate_args(host);
  no_host.host = nullptr;
  CHECK(fn(&no_host) == AXL_ERROR_INVALID_ARGUMENT);

  static axl_host_services small{};
  small.struct_size = offsetof(axl_host_services, log);
  axl_negotiate_args small_host = negotiate_args(host);
  small_host.host = &small;
  CHECK(fn(&small_host) == AXL_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("metal_stub: no devices, and init says why it is unavailable") {
  FakeHost& host = new_host();
  const axl_plugin_table* t = negotiate_stub(host);
  uint32_t count = 99;
  // Counting already says why, so discovery lists the stub as unavailable.
  CHECK(t->backend_device_count(&count) == AXL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(count == 0);
  REQUIRE(host.report_count() == 1);
  CHECK(host.reports()[0].message == "unavailable: Metal needs an Apple platform");
  CHECK(t->backend_device_count(nullptr) == AXL_ERROR_INVALID_ARGUMENT);

  host.clear();
  CHECK(t->backend_init() == AXL_ERROR_BACKEND_UNAVAILABLE);
  REQUIRE(host.report_count() == 1);
  CHECK(host.reports()[0].status == AXL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(host.reports()[0].native_code == 0);
  CHECK(host.reports()[0].native_name.empty());
  CHECK(host.reports()[0].message == "unavailable: Metal needs an Apple platform");
}

TEST_CASE("metal_stub: an unknown option is NOT_FOUND, as plugin.h requires") {
  FakeHost& host = new_host();
  const axl_plugin_table* t = negotiate_stub(host);
  CHECK(t->backend_set_option("no_such_key", "1") == AXL_ERROR_NOT_FOUND);
  REQUIRE(host.report_count() == 1);
  CHECK(host.reports()[0].message.find("no_such_key") != std::string::npos);
}

TEST_CASE("metal_stub: every other slot is UNSUPPORTED and names itself") {
  FakeHost& host = new_host();
  const axl_plugin_table* t = negotiate_stub(host);
  // Arguments are never dereferenced by a stub slot; NULLs are enough.
  axl_pdevice d = nullptr;
  axl_pqueue q = nullptr;
  axl_pevent e = nullptr;
  axl_pflag f = nullptr;
  axl_pmodule m = nullptr;
  axl_pkernel k = nullptr;
  const std::vector<std::pair<const char*, std::function<axl_status()>>> calls = {
      {"backend_shutdown", [&] { return t->backend_shutdown(); }},
      {"backend_set_tracing", [&] { return t->backend_set_tracing(1); }},
      {"device_get", [&] { return t->device_get(0, &d); }},
      {"device_get_properties", [&] { return t->device_get_properties(d, nullptr); }},
      {"device_get_memory_info",
       [&] { return t->device_get_memory_info(d, nullptr, nullptr); }},
      {"device_can_access_peer", [&] { return t->device_can_access_peer(d, d, nullptr); }},
      {"device_enable_peer_access", [&] { return t->device_enable_peer_access(d, d); }},
      {"memory_alloc", [&] { return t->memory_alloc(d, 256, nullptr); }},
      {"memory_free", [&] { return t->memory_free(d, 256); }},
      {"pinned_alloc", [&] { return t->pinned_alloc(d, 256, nullptr); }},
      {"pinned_free", [&] { return t->pinned_free(d, nullptr); }},
      {"queue_create", [&] { return t->queue_create(d, nullptr, &q); }},
      {"queue_destroy", [&] { return t->queue_destroy(q); }},
      {"queue_synchronize", [&] { return t->queue_synchronize(q); }},
      {"queue_copy_htod", [&] { return t->queue_copy_htod(q, 256, nullptr, 1); }},
      {"queue_copy_dtoh", [&] { return t->queue_copy_dtoh(q, nullptr, 256, 1); }},
      {"queue_copy_dtod", [&] { return t->queue_copy_dtod(q, 256, 512, 1); }},
      {"queue_copy_peer", [&] { return t->queue_copy_peer(q, d, 256, d, 512, 1); }},
      {"queue_fill", [&] { return t->queue_fill(q, 256, 4, 0, 4); }},
      {"queue_record_event", [&] { return t->queue_record_event(q, e); }},
      {"queue_wait_event", [&] { return t->queue_wait_event(q, e); }},
      {"queue_wait_flag", [&] { return t->queue_wait_flag(q, f, 1); }},
      {"queue_write_flag", [&] { return t->queue_write_flag(q, f, 1); }},
      {"queue_enqueue_host_fn", [&] { return t->queue_enqueue_host_fn(q, nullptr, nullptr); }},
      {"queue_get_native_handle", [&] { return t->queue_get_native_handle(q, nullptr); }},
      {"queue_launch", [&] { return t->queue_launch(q, k, nullptr, nullptr, 0); }},
      {"event_create", [&] { return t->event_create(d, 0, &e); }},
      {"event_destroy", [&] { return t->event_destroy(e); }},
      {"event_synchronize", [&] { return t->event_synchronize(e); }},
      {"event_query", [&] { return t->event_query(e); }},
      {"event_elapsed_ms", [&] { return t->event_elapsed_ms(e, e, nullptr); }},
      {"flag_create", [&] { return t->flag_create(d, &f); }},
      {"flag_destroy", [&] { return t->flag_destroy(f); }},
      {"flag_get_device_address", [&] { return t->flag_get_device_address(f, nullptr); }},
      {"flag_get_host_address", [&] { return t->flag_get_host_address(f, nullptr); }},
      {"module_load", [&] { return t->module_load(d, nullptr, &m); }},
      {"module_unload", [&] { return t->module_unload(m); }},
      {"module_get_kernel", [&] { return t->module_get_kernel(m, "k", &k); }},
      {"device_get_test_kernel", [&] { return t->device_get_test_kernel(d, 0, &k); }},
      {"module_compile", [&] { return t->module_compile(d, nullptr, &m); }},
  };
  // 47 slots: init, device_count and set_option are checked above; the four
  // multicast-group slots (ABI 1.4) the stub leaves NULL.
  CHECK(t->multicast_create == nullptr);
  CHECK(calls.size() + 3 + 4 == (sizeof(axl_plugin_table) - sizeof(size_t)) / sizeof(void*));
  for (const auto& [slot, call] : calls) {
    INFO(slot);
    host.clear();
    CHECK(call() == AXL_ERROR_UNSUPPORTED);
    REQUIRE(host.report_count() == 1);
    CHECK(host.reports()[0].status == AXL_ERROR_UNSUPPORTED);
    CHECK(host.reports()[0].message.rfind(std::string(slot) + ": ", 0) == 0);
  }
}
