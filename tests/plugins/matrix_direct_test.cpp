// Checks every broken-plugin variant without the core: each one must be
// broken in exactly the intended way and no other, or the loader tests that
// use it prove nothing. The good variants must work as a backend.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugin_harness.hpp"

using namespace axl_test;

namespace {

// Negotiates `variant` with a fresh host and requires success.
struct Negotiated {
  FakeHost* host;
  axl_negotiate_args args;
};

Negotiated negotiate_ok(const std::string& variant) {
  axl_plugin_negotiate_fn fn = load_entry(variant_path(variant));
  FakeHost& host = new_host();
  axl_negotiate_args args = negotiate_args(host);
  REQUIRE(fn(&args) == AXL_SUCCESS);
  REQUIRE(args.info != nullptr);
  return {&host, args};
}

}  // namespace

TEST_CASE("good plugins negotiate as ABI 1.0 with every required slot") {
  for (const char* variant : {"good", "good2"}) {
    INFO(variant);
    Negotiated n = negotiate_ok(variant);
    CHECK(n.args.plugin_abi_minor == AXL_PLUGIN_ABI_MINOR);
    CHECK(n.args.info->struct_size == sizeof(axl_plugin_info));
    CHECK(std::string(n.args.info->name) == std::string("t_") + variant);
    CHECK(std::string(n.args.info->api) == "test");
    CHECK((n.args.info->flags & AXL_PLUGIN_FLAG_HOST) == 0);
    REQUIRE(n.args.table != nullptr);
    CHECK(n.args.table->struct_size == sizeof(axl_plugin_table));
    CHECK(missing_required(n.args.table).empty());
    // Optional slots stay NULL so the core's UNSUPPORTED path gets used.
    CHECK(n.args.table->queue_launch == nullptr);
    // Host services are callable from inside negotiate.
    REQUIRE(n.host->log_count() == 1);
    CHECK(n.host->logs()[0].message == "negotiate");
  }
}

TEST_CASE("a good plugin runs as a synchronous one-device backend") {
  const axl_plugin_table* t = negotiate_ok("good").args.table;
  uint32_t count = 0;
  REQUIRE(t->backend_device_count(&count) == AXL_SUCCESS);
  REQUIRE(count == 1);
  REQUIRE(t->backend_init() == AXL_SUCCESS);

  axl_pdevice dev = nullptr;
  REQUIRE(t->device_get(0, &dev) == AXL_SUCCESS);
  axl_pdevice none = nullptr;
  CHECK(t->device_get(1, &none) == AXL_ERROR_OUT_OF_RANGE);
  axl_device_properties props{};
  props.struct_size = sizeof props;
  REQUIRE(t->device_get_properties(dev, &props) == AXL_SUCCESS);
  CHECK(std::string(props.label) == "gpu");
  CHECK(std::string(props.api) == "test");
  CHECK(props.struct_size == sizeof props);

  axl_devaddr a = 0, b = 0;
  REQUIRE(t->memory_alloc(dev, 1000, &a) == AXL_SUCCESS);
  REQUIRE(t->memory_alloc(dev, 1000, &b) == AXL_SUCCESS);
  CHECK(a % 256 == 0);
  CHECK(b % 256 == 0);

  axl_queue_desc desc{};
  desc.struct_size = sizeof desc;
  desc.trace_id = 7;
  axl_pqueue q = nullptr;
  REQUIRE(t->queue_create(dev, &desc, &q) == AXL_SUCCESS);
  std::vector<uint8_t> in(1000), out(1000, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7);
  REQUIRE(t->queue_copy_htod(q, a, in.data(), in.size()) == AXL_SUCCESS);
  REQUIRE(t->queue_copy_dtod(q, b, a, in.size()) == AXL_SUCCESS);
  REQUIRE(t->queue_copy_dtoh(q, out.data(), b, out.size()) == AXL_SUCCESS);
  axl_pevent e = nullptr;
  REQUIRE(t->event_create(dev, AXL_EVENT_FLAG_NONE, &e) == AXL_SUCCESS);
  REQUIRE(t->queue_record_event(q, e) == AXL_SUCCESS);
  REQUIRE(t->queue_wait_event(q, e) == AXL_SUCCESS);
  CHECK(t->event_query(e) == AXL_SUCCESS);
  CHECK(t->event_synchronize(e) == AXL_SUCCESS);
  REQUIRE(t->queue_synchronize(q) == AXL_SUCCESS);
  CHECK(out == in);

  CHECK(t->event_destroy(e) == AXL_SUCCESS);
  CHECK(t->queue_destroy(q) == AXL_SUCCESS);
  CHECK(t->memory_free(dev, a) == AXL_SUCCESS);
  CHECK(t->memory_free(dev, b) == AXL_SUCCESS);
  CHECK(t->backend_shutdown() == AXL_SUCCESS);
}

TEST_CASE("a plugin serves min(core minor, its own minor)") {
  axl_plugin_negotiate_fn fn = load_entry(variant_path("good"));
  FakeHost& host = new_host();
  axl_negotiate_args args = negotiate_args(host, AXL_PLUGIN_ABI_MAJOR, AXL_PLUGIN_ABI_MINOR + 5);
  REQUIRE(fn(&args) == AXL_SUCCESS);
  CHECK(args.plugin_abi_minor == AXL_PLUGIN_ABI_MINOR);
}

TEST_CASE("a good plugin refuses a core of another major and bad arguments") {
  axl_plugin_negotiate_fn fn = load_entry(variant_path("good"));
  FakeHost& host = new_host();
  axl_negotiate_args args = negotiate_args(host, AXL_PLUGIN_ABI_MAJOR + 1);
  CHECK(fn(&args) == AXL_ERROR_VERSION_MISMATCH);
  CHECK(args.info == nullptr);
  CHECK(args.table == nullptr);
  CHECK(fn(nullptr) == AXL_ERROR_INVALID_ARGUMENT);
  axl_negotiate_args short_args = negotiate_args(host);
  short_args.struct_size = offsetof(axl_negotiate_args, table);
  CHECK(fn(&short_args) == AXL_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("no_entry exports a wrongly named entry and not the real one") {
  void* dl = open_plugin(variant_path("no_entry"));
  REQUIRE(dl != nullptr);
  CHECK(entry_of(dl) == nullptr);
  CHECK(dlsym(dl, "axl_plugin_negotiate_v1") != nullptr);
}

TEST_CASE("wrong_major answers VERSION_MISMATCH to a major-1 core") {
  axl_plugin_negotiate_fn fn = load_entry(variant_path("wrong_major"));
  FakeHost& host = new_host();
  axl_negotiate_args args = negotiate_args(host);
  CHECK(fn(&args) == AXL_ERROR_VERSION_MISMATCH);
  CHECK(args.info == nullptr);
  CHECK(args.table == nullptr);
}

TEST_CASE("missing_slot lacks exactly queue_create and memory_alloc") {
  Negotiated n = negotiate_ok("missing_slot");
  REQUIRE(n.args.table != nullptr);
  CHECK(n.args.table->struct_size == sizeof(axl_plugin_table));
  CHECK(missing_required(n.args.table) ==
        std::vector<std::string>{"memory_alloc", "queue_create"});
}

TEST_CASE("the size variants carry the bad struct_size and nothing else") {
  Negotiated zero = negotiate_ok("size_zero");
  REQUIRE(zero.args.table != nullptr);
  CHECK(zero.args.table->struct_size == 0);
  CHECK(zero.args.info->struct_size == sizeof(axl_plugin_info));
  CHECK(missing_required(zero.args.table).empty());

  Negotiated huge = negotiate_ok("size_huge");
  REQUIRE(huge.args.table != nullptr);
  CHECK(huge.args.table->struct_size == (size_t{1} << 30));

  Negotiated info = negotiate_ok("info_size_bad");
  CHECK(info.args.info->struct_size == 0);
  REQUIRE(info.args.table != nullptr);
  CHECK(info.args.table->struct_size == sizeof(axl_plugin_table));
}

TEST_CASE("null_table succeeds but returns no table") {
  Negotiated n = negotiate_ok("null_table");
  CHECK(n.args.table == nullptr);
  CHECK(std::string(n.args.info->name) == "t_null_table");
}

TEST_CASE("negotiate_fails reports an error and returns INTERNAL") {
  axl_plugin_negotiate_fn fn = load_entry(variant_path("negotiate_fails"));
  FakeHost& host = new_host();
  axl_negotiate_args args = negotiate_args(host);
  CHECK(fn(&args) == AXL_ERROR_INTERNAL);
  REQUIRE(host.report_count() == 1);
  CHECK(host.reports()[0].status == AXL_ERROR_INTERNAL);
  CHECK(host.reports()[0].message == "negotiate failed on purpose");
}

TEST_CASE("negotiate_throws lets a C++ exception out, catchable by a C++ core") {
  axl_plugin_negotiate_fn fn = load_entry(variant_path("negotiate_throws"));
  FakeHost& host = new_host();
  axl_negotiate_args args = negotiate_args(host);
  std::string what;
  try {
    fn(&args);
  } catch (const std::exception& e) {
    what = e.what();
  }
  CHECK(what == "t_negotiate_throws: thrown out of negotiate on purpose");
  CHECK(args.table == nullptr);
  // The process and the other plugins are unaffected.
  CHECK(negotiate_ok("good2").args.table != nullptr);
}

TEST_CASE("undefined_symbol fails dlopen(RTLD_NOW) naming the symbol") {
  dlerror();
  void* dl = open_plugin(variant_path("undefined_symbol"));
  REQUIRE(dl == nullptr);
  const char* err = dlerror();
  REQUIRE(err != nullptr);
  CHECK(std::string(err).find("axl_test_undefined_function") != std::string::npos);
}

TEST_CASE("dup_a and dup_b: one file name, one info.name, two files") {
  const std::string a = std::string(AXL_TEST_PLUGIN_DIR) + "/dup_a/libaxl_plugin_t_dup.so";
  const std::string b = std::string(AXL_TEST_PLUGIN_DIR) + "/dup_b/libaxl_plugin_t_dup.so";
  FakeHost& host = new_host();
  axl_negotiate_args args_a = negotiate_args(host), args_b = negotiate_args(host);
  REQUIRE(load_entry(a)(&args_a) == AXL_SUCCESS);
  REQUIRE(load_entry(b)(&args_b) == AXL_SUCCESS);
  CHECK(std::string(args_a.info->name) == "t_dup");
  CHECK(std::string(args_b.info->name) == "t_dup");
  // Two distinct objects, told apart by their version strings.
  CHECK(args_a.info != args_b.info);
  CHECK(std::string(args_a.info->version) == "dup_a");
  CHECK(std::string(args_b.info->version) == "dup_b");
}

TEST_CASE("name_mismatch reports a name that is not its file's") {
  Negotiated n = negotiate_ok("name_mismatch");
  CHECK(std::string(n.args.info->name) == "something_else");
  CHECK(n.args.table != nullptr);
}

TEST_CASE("init_unavailable counts a device but cannot initialise") {
  Negotiated n = negotiate_ok("init_unavailable");
  const axl_plugin_table* t = n.args.table;
  REQUIRE(t != nullptr);
  uint32_t count = 0;
  REQUIRE(t->backend_device_count(&count) == AXL_SUCCESS);
  CHECK(count == 1);
  CHECK(t->backend_init() == AXL_ERROR_BACKEND_UNAVAILABLE);
  REQUIRE(n.host->report_count() == 1);
  const ErrorReport r = n.host->reports()[0];
  CHECK(r.status == AXL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(r.native_code == 100);
  CHECK(r.native_name == "FAKE_ERROR_NO_DEVICE");
  CHECK(r.message == "no device: fake driver");
}

TEST_CASE("extra_export exports a second symbol and otherwise works") {
  void* dl = open_plugin(variant_path("extra_export"));
  REQUIRE(dl != nullptr);
  CHECK(dlsym(dl, "axl_test_extra_symbol") != nullptr);
  Negotiated n = negotiate_ok("extra_export");
  CHECK(n.args.table != nullptr);
}
