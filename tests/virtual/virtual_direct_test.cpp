// The virtual plugin through its C ABI alone (no core): negotiation, the
// options of backend_set_option, the address space and the plugin's own
// checks on it, simulated time and fault rules changed at run time, the
// trace hook, and guard mode's faults (in the probe, in processes that may
// die).
#include <signal.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "virtual_direct.hpp"
#include "virtual_test_util.hpp"

namespace {

// No AXL_VIRTUAL_* setting: the plugin starts with 0 devices and no rules.
const bool kEnvironment = vt::prepare_environment({});

const axl_plugin_table& table() {
  vd::Plugin& p = vd::plugin();
  INFO(p.error);
  REQUIRE(p.error.empty());
  return *p.t;
}

vd::Host& host() { return *vd::plugin().host; }

// `s` must be `status`, reported with the virtual driver's code and name and
// a message containing every part.
void require_report(axl_status s, axl_status status, std::initializer_list<std::string> parts) {
  const axl_test::ErrorReport r = host().last_report();
  INFO("returned " << axl_status_name(s) << "; last report " << axl_status_name(r.status) << " "
                   << r.native_name << ": " << r.message);
  REQUIRE(s == status);
  CHECK(r.status == status);
  CHECK(r.native_code == status);
  CHECK(r.native_name == std::string("VIRTUAL_ERROR_") + (axl_status_name(status) + 10));
  for (const std::string& p : parts) CHECK_THAT(r.message, Catch::Contains(p));
}

axl_status option(const char* key, const char* value) { return table().backend_set_option(key, value); }

uint32_t device_count() {
  uint32_t n = 0;
  REQUIRE(table().backend_device_count(&n) == AXL_SUCCESS);
  return n;
}

// Devices 0 and 1 (virtual_device_count is set to 2 for this).
axl_pdevice device(uint32_t i) {
  const axl_plugin_table& t = table();
  REQUIRE(option("virtual_device_count", "2") == AXL_SUCCESS);
  static bool initialised = false;
  if (!initialised) {
    REQUIRE(t.backend_init() == AXL_SUCCESS);
    initialised = true;
  }
  axl_pdevice d = nullptr;
  REQUIRE(t.device_get(i, &d) == AXL_SUCCESS);
  return d;
}

axl_pqueue new_queue(axl_pdevice d, uint64_t trace_id = 0) {
  axl_queue_desc desc{};
  desc.struct_size = sizeof desc;
  desc.trace_id = trace_id;
  axl_pqueue q = nullptr;
  REQUIRE(table().queue_create(d, &desc, &q) == AXL_SUCCESS);
  return q;
}

axl_devaddr alloc(axl_pdevice d, uint64_t bytes) {
  axl_devaddr a = 0;
  REQUIRE(table().memory_alloc(d, bytes, &a) == AXL_SUCCESS);
  return a;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("direct: negotiation declares a virtual accelerator backend", "[virtual][direct]") {
  REQUIRE(kEnvironment);
  vd::Plugin& p = vd::plugin();
  REQUIRE(p.error.empty());
  CHECK(std::string(p.info->name) == "virtual");
  CHECK(std::string(p.info->api) == "virtual");
  // Not HOST, not FORK_SAFE; its queues take concurrent enqueues.
  CHECK(p.info->flags == (AXL_PLUGIN_FLAG_VIRTUAL | AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE));
  CHECK(p.t->struct_size == sizeof(axl_plugin_table));
  // Every slot of 1.0 is there: the virtual device stands in for a full GPU
  // backend. module_compile (1.1) is not: it has no compiler, and the core
  // answers UNSUPPORTED for it.
  const auto* slots = reinterpret_cast<const void* const*>(reinterpret_cast<const char*>(p.t) + sizeof(size_t));
  const size_t slots_10 = offsetof(axl_plugin_table, module_compile) / sizeof(void*) - 1;
  for (size_t i = 0; i < slots_10; ++i) {
    INFO("slot " << i);
    CHECK(slots[i] != nullptr);
  }
  CHECK(p.t->module_compile == nullptr);
}

TEST_CASE("direct: device count from the mode option, before init", "[virtual][direct]") {
  CHECK(device_count() == 0);  // no AXL_VIRTUAL_DEVICES: none
  REQUIRE(option("virtual_device_count", "3") == AXL_SUCCESS);
  CHECK(device_count() == 3);
  REQUIRE(option("virtual_device_count", "0") == AXL_SUCCESS);  // mode off
  CHECK(device_count() == 0);
  for (const char* bad : {"-1", "1025", "two", "", "3 "}) {
    INFO("value '" << bad << "'");
    require_report(option("virtual_device_count", bad), AXL_ERROR_INVALID_ARGUMENT,
                   {std::string("got '") + bad + "'"});
  }
  CHECK(device_count() == 0);
}

TEST_CASE("direct: options validate their values and name them", "[virtual][direct]") {
  require_report(option("virtual_device_api", "has space"), AXL_ERROR_INVALID_ARGUMENT, {"'has space'"});
  require_report(option("virtual_device_arch", std::string(64, 'a').c_str()), AXL_ERROR_INVALID_ARGUMENT,
                 {"at most 63"});
  require_report(option("virtual_latency_us", "-1"), AXL_ERROR_INVALID_ARGUMENT, {"'-1'"});
  require_report(option("virtual_latency_us", "1e99"), AXL_ERROR_INVALID_ARGUMENT, {"'1e99'"});
  require_report(option("virtual_latency_us", "20us"), AXL_ERROR_INVALID_ARGUMENT, {"'20us'"});
  require_report(option("virtual_bandwidth_gbps", "-3"), AXL_ERROR_INVALID_ARGUMENT, {"'-3'"});
  require_report(option("virtual_bandwidth_gbps", "nan"), AXL_ERROR_INVALID_ARGUMENT, {"'nan'"});
  require_report(option("virtual_turbo", "1"), AXL_ERROR_NOT_FOUND,
                 {"unknown option 'virtual_turbo'", "virtual_fail"});
  require_report(option(nullptr, "1"), AXL_ERROR_INVALID_ARGUMENT, {"key is NULL"});
  CHECK(option("virtual_latency_us", "0") == AXL_SUCCESS);
  CHECK(option("virtual_bandwidth_gbps", "0") == AXL_SUCCESS);
}

TEST_CASE("direct: device properties follow the mode's api and arch", "[virtual][direct]") {
  REQUIRE(option("virtual_device_api", "cuda") == AXL_SUCCESS);
  REQUIRE(option("virtual_device_arch", "sm_90") == AXL_SUCCESS);
  axl_pdevice d = device(0);  // created now, with these settings
  REQUIRE(option("virtual_device_api", "") == AXL_SUCCESS);
  REQUIRE(option("virtual_device_arch", "") == AXL_SUCCESS);
  axl_device_properties props{};
  props.struct_size = sizeof props;
  REQUIRE(table().device_get_properties(d, &props) == AXL_SUCCESS);
  CHECK(std::string(props.label) == "gpu");
  CHECK(std::string(props.api) == "cuda");
  CHECK(std::string(props.architecture_name) == "sm_90");
  CHECK(std::string(props.model_name) == "axl virtual device (cuda sm_90)");
  CHECK(props.is_host == 0);
  CHECK(props.is_host_unified == 0);
  // A shorter struct from an older core: nothing past its struct_size.
  unsigned char small[sizeof(size_t) + 16 + 8];
  std::memset(small, 0xAB, sizeof small);
  const size_t short_size = sizeof(size_t) + 16;
  std::memcpy(small, &short_size, sizeof short_size);
  REQUIRE(table().device_get_properties(d, reinterpret_cast<axl_device_properties*>(small)) == AXL_SUCCESS);
  CHECK(std::string(reinterpret_cast<char*>(small + sizeof(size_t))) == "gpu");
  for (size_t i = short_size; i < sizeof small; ++i) CHECK(small[i] == 0xAB);

  axl_pdevice out = nullptr;
  require_report(table().device_get(2, &out), AXL_ERROR_OUT_OF_RANGE, {"index 2", "2 virtual device(s)"});
  uint8_t can = 9;
  REQUIRE(table().device_can_access_peer(d, device(1), &can) == AXL_SUCCESS);
  CHECK(can == 1);
  REQUIRE(table().device_can_access_peer(d, d, &can) == AXL_SUCCESS);
  CHECK(can == 0);
  CHECK(table().device_enable_peer_access(d, device(1)) == AXL_SUCCESS);
  CHECK(table().device_enable_peer_access(d, device(1)) == AXL_SUCCESS);
}

TEST_CASE("direct: the address space and the plugin's checks on it", "[virtual][direct][memory]") {
  const axl_plugin_table& t = table();
  axl_pdevice d0 = device(0), d1 = device(1);
  axl_pqueue q = new_queue(d0);
  const axl_devaddr a = alloc(d0, 1000), b = alloc(d0, 1000), c = alloc(d1, 1000);
  // Above 2^62 (never a host pointer), per-device 16 TiB ranges, aligned,
  // with unused addresses between allocations.
  CHECK(a >= 0x7a10'0000'0000'0000ull);
  CHECK(((a - 0x7a10'0000'0000'0000ull) >> 44) == 0);
  CHECK(((c - 0x7a10'0000'0000'0000ull) >> 44) == 1);
  CHECK(a % 256 == 0);
  CHECK(b % 256 == 0);
  CHECK(b >= a + 1024 + 4096);

  std::vector<unsigned char> src(2048, 1);
  require_report(t.queue_copy_htod(q, a, src.data(), 1001), AXL_ERROR_OUT_OF_RANGE,
                 {"1001 bytes at", "run past the end of the 1000-byte allocation"});
  require_report(t.queue_copy_htod(q, a + 1000, src.data(), 1), AXL_ERROR_INVALID_ARGUMENT,
                 {"not inside any live allocation of virtual device 0"});
  require_report(t.queue_copy_htod(q, c, src.data(), 8), AXL_ERROR_INVALID_ARGUMENT,
                 {"is memory of virtual device 1, not of virtual device 0"});
  require_report(t.queue_copy_htod(q, reinterpret_cast<axl_devaddr>(src.data()), src.data(), 8),
                 AXL_ERROR_INVALID_ARGUMENT, {"is not a virtual device address"});
  require_report(t.queue_copy_dtod(q, b + 10, a, 995), AXL_ERROR_OUT_OF_RANGE, {"destination of a device-to-device copy"});
  require_report(t.queue_fill(q, a, 12, 0, 3), AXL_ERROR_INVALID_ARGUMENT, {"pattern_size is 3"});
  require_report(t.queue_fill(q, a, 10, 0, 4), AXL_ERROR_INVALID_ARGUMENT, {"multiple of pattern_size"});
  axl_pqueue q1 = new_queue(d1);
  require_report(t.queue_copy_peer(q1, d0, a, d0, b, 8), AXL_ERROR_INVALID_ARGUMENT,
                 {"neither the source", "nor the destination"});
  axl_devaddr none = 0;
  require_report(t.memory_alloc(d0, 0, &none), AXL_ERROR_INVALID_ARGUMENT, {"bytes > 0"});

  // A copy within the range works and moves the bytes.
  REQUIRE(t.queue_copy_htod(q, a + 1, src.data(), 999) == AXL_SUCCESS);
  std::vector<unsigned char> out(999, 0);
  REQUIRE(t.queue_copy_dtoh(q, out.data(), a + 1, 999) == AXL_SUCCESS);
  REQUIRE(t.queue_synchronize(q) == AXL_SUCCESS);
  CHECK(out == std::vector<unsigned char>(999, 1));

  // Frees: only allocation starts, only once; a freed address is stale.
  require_report(t.memory_free(d0, a + 8), AXL_ERROR_INVALID_ARGUMENT, {"not the start of a live allocation"});
  REQUIRE(t.memory_free(d0, a) == AXL_SUCCESS);
  require_report(t.memory_free(d0, a), AXL_ERROR_INVALID_ARGUMENT, {"not the start of a live allocation"});
  require_report(t.queue_copy_htod(q, a, src.data(), 8), AXL_ERROR_INVALID_ARGUMENT, {"freed, or never allocated"});
  CHECK(alloc(d0, 1000) != a);  // addresses are not handed out again soon
  REQUIRE(t.queue_destroy(q) == AXL_SUCCESS);
  REQUIRE(t.queue_destroy(q1) == AXL_SUCCESS);
}

TEST_CASE("direct: latency and bandwidth set at run time", "[virtual][direct][sim]") {
  const axl_plugin_table& t = table();
  axl_pdevice d = device(0);
  axl_pqueue q = new_queue(d);
  const axl_devaddr a = alloc(d, 100000);
  std::vector<unsigned char> src(100000, 3);

  REQUIRE(option("virtual_latency_us", "30000") == AXL_SUCCESS);
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(t.queue_fill(q, a, 4, 0, 4) == AXL_SUCCESS);
  REQUIRE(t.queue_synchronize(q) == AXL_SUCCESS);
  CHECK(ms_since(t0) >= 29.0);
  REQUIRE(option("virtual_latency_us", "0") == AXL_SUCCESS);

  REQUIRE(option("virtual_bandwidth_gbps", "0.001") == AXL_SUCCESS);  // 100 kB: 100 ms
  t0 = std::chrono::steady_clock::now();
  REQUIRE(t.queue_copy_htod(q, a, src.data(), src.size()) == AXL_SUCCESS);
  REQUIRE(t.queue_synchronize(q) == AXL_SUCCESS);
  CHECK(ms_since(t0) >= 99.0);
  REQUIRE(option("virtual_bandwidth_gbps", "0") == AXL_SUCCESS);

  t0 = std::chrono::steady_clock::now();
  REQUIRE(t.queue_copy_htod(q, a, src.data(), src.size()) == AXL_SUCCESS);
  REQUIRE(t.queue_synchronize(q) == AXL_SUCCESS);
  CHECK(ms_since(t0) < 60.0);  // no bandwidth cost; room for a loaded machine's scheduling
  REQUIRE(t.queue_destroy(q) == AXL_SUCCESS);
  REQUIRE(t.memory_free(d, a) == AXL_SUCCESS);
}

TEST_CASE("direct: fault rules set at run time restart the call counts", "[virtual][direct][fault]") {
  const axl_plugin_table& t = table();
  axl_pdevice d = device(0);
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    REQUIRE(option("virtual_fail", "alloc:2=OUT_OF_DEVICE_MEMORY") == AXL_SUCCESS);
    const axl_devaddr first = alloc(d, 64);
    axl_devaddr second = 0;
    require_report(t.memory_alloc(d, 64, &second), AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                   {"injected failure of alloc call 2 (option virtual_fail: alloc:2=OUT_OF_DEVICE_MEMORY)"});
    REQUIRE(t.memory_free(d, first) == AXL_SUCCESS);
  }
  // A bad rule is named; the good ones still apply.
  const size_t logs_before = host().log_count();
  require_report(option("virtual_fail", "alloc:1=INTERNAL;alloc:one=INTERNAL;free:1=FOO"), AXL_ERROR_INVALID_ARGUMENT,
                 {"ignoring rule 'alloc:one=INTERNAL'", "ignoring rule 'free:1=FOO'", "the other rules are in effect"});
  CHECK(host().log_count() == logs_before + 2);
  CHECK_THAT(host().all_logs(), Catch::Contains("'free:1=FOO'"));
  axl_devaddr x = 0;
  require_report(t.memory_alloc(d, 64, &x), AXL_ERROR_INTERNAL, {"alloc call 1"});
  REQUIRE(option("virtual_fail", "") == AXL_SUCCESS);  // cleared
  REQUIRE(t.memory_free(d, alloc(d, 64)) == AXL_SUCCESS);
}

TEST_CASE("direct: the trace hook reports each operation with the plugin's names", "[virtual][direct][trace]") {
  const axl_plugin_table& t = table();
  axl_pdevice d0 = device(0), d1 = device(1);
  axl_pqueue q = new_queue(d0, 77);
  const axl_devaddr a = alloc(d0, 256), b = alloc(d0, 256), c = alloc(d1, 256);
  std::vector<unsigned char> host_bytes(256, 0);
  axl_pkernel k = nullptr;
  REQUIRE(t.device_get_test_kernel(d0, AXL_TEST_KERNEL_FILL_U32, &k) == AXL_SUCCESS);
  const axl_devaddr arg_addr = a;
  const uint32_t n = 64, value = 1;
  const axl_kernel_arg args[] = {{AXL_ARG_DEVADDR, 8, &arg_addr}, {AXL_ARG_SCALAR, 4, &n}, {AXL_ARG_SCALAR, 4, &value}};
  axl_launch_config cfg{};
  cfg.struct_size = sizeof cfg;
  for (int i = 0; i < 3; ++i) cfg.grid[i] = cfg.block[i] = 1;

  const size_t before = host().trace_count();
  REQUIRE(t.queue_fill(q, a, 256, 0, 1) == AXL_SUCCESS);  // tracing is off: not reported
  REQUIRE(t.backend_set_tracing(1) == AXL_SUCCESS);
  REQUIRE(t.queue_copy_htod(q, a, host_bytes.data(), 256) == AXL_SUCCESS);
  REQUIRE(t.queue_copy_dtod(q, b, a, 128) == AXL_SUCCESS);
  REQUIRE(t.queue_copy_dtoh(q, host_bytes.data(), b, 64) == AXL_SUCCESS);
  REQUIRE(t.queue_copy_peer(q, d1, c, d0, a, 32) == AXL_SUCCESS);
  REQUIRE(t.queue_fill(q, a, 256, 0x1234, 2) == AXL_SUCCESS);
  REQUIRE(t.queue_launch(q, k, &cfg, args, 3) == AXL_SUCCESS);
  REQUIRE(t.backend_set_tracing(0) == AXL_SUCCESS);
  REQUIRE(t.queue_synchronize(q) == AXL_SUCCESS);
  const std::vector<axl_test::TraceEntry> all = host().traces();
  const std::vector<axl_test::TraceEntry> got(all.begin() + static_cast<ptrdiff_t>(before), all.end());
  REQUIRE(got.size() == 6);
  CHECK(got[0].name == "virtMemcpyHtoDAsync");
  CHECK(got[0].bytes() == 256);
  CHECK(got[1].name == "virtMemcpyDtoDAsync");
  CHECK(got[1].bytes() == 128);
  CHECK(got[2].name == "virtMemcpyDtoHAsync");
  CHECK(got[3].name == "virtMemcpyPeerAsync");
  CHECK(got[3].record.memcpy_kind == AXL_MEMCPY_DTOD);
  CHECK(got[4].name == "virtMemsetD16Async");
  CHECK(got[4].record.kind == AXL_TRACE_MEMSET);
  CHECK(got[5].name == "axl_test_fill_u32");
  CHECK(got[5].record.kind == AXL_TRACE_KERNEL_LAUNCH);
  REQUIRE(t.queue_destroy(q) == AXL_SUCCESS);
}

TEST_CASE("direct: flags, events and native handles", "[virtual][direct]") {
  const axl_plugin_table& t = table();
  axl_pdevice d = device(0);
  axl_pqueue q = new_queue(d), q2 = new_queue(d);
  uint64_t h1 = 0, h2 = 0;
  REQUIRE(t.queue_get_native_handle(q, &h1) == AXL_SUCCESS);
  REQUIRE(t.queue_get_native_handle(q2, &h2) == AXL_SUCCESS);
  CHECK(h1 != 0);
  CHECK(h2 != 0);
  CHECK(h1 != h2);

  axl_pflag f1 = nullptr, f2 = nullptr;
  REQUIRE(t.flag_create(d, &f1) == AXL_SUCCESS);
  REQUIRE(t.flag_create(d, &f2) == AXL_SUCCESS);
  axl_devaddr a1 = 0, a2 = 0;
  REQUIRE(t.flag_get_device_address(f1, &a1) == AXL_SUCCESS);
  REQUIRE(t.flag_get_device_address(f2, &a2) == AXL_SUCCESS);
  CHECK(a1 != a2);
  CHECK(a1 >= 0x7a10'0000'0000'0000ull + (1024ull << 44));  // past every device's range
  uint64_t* v = nullptr;
  REQUIRE(t.flag_get_host_address(f1, &v) == AXL_SUCCESS);
  CHECK(reinterpret_cast<uintptr_t>(v) % 8 == 0);
  // A queue released by a flag another queue writes; the flag destroyed
  // while both operations are pending.
  REQUIRE(t.queue_wait_flag(q2, f1, 3) == AXL_SUCCESS);
  REQUIRE(t.queue_write_flag(q, f1, 3) == AXL_SUCCESS);
  REQUIRE(t.flag_destroy(f1) == AXL_SUCCESS);
  REQUIRE(t.queue_synchronize(q2) == AXL_SUCCESS);
  REQUIRE(t.flag_destroy(f2) == AXL_SUCCESS);

  axl_pevent e = nullptr;
  REQUIRE(t.event_create(d, AXL_EVENT_FLAG_TIMING, &e) == AXL_SUCCESS);
  require_report(t.event_create(d, 0x10, &e), AXL_ERROR_INVALID_ARGUMENT, {"unknown event flags 0x10"});
  REQUIRE(t.queue_record_event(q, e) == AXL_SUCCESS);
  REQUIRE(t.queue_wait_event(q2, e) == AXL_SUCCESS);
  REQUIRE(t.event_destroy(e) == AXL_SUCCESS);  // pending work keeps it alive
  REQUIRE(t.queue_synchronize(q2) == AXL_SUCCESS);
  REQUIRE(t.queue_destroy(q) == AXL_SUCCESS);
  REQUIRE(t.queue_destroy(q2) == AXL_SUCCESS);
}

// ------------------------------------------------------------- guard mode --
// The probe does what the plugin must not survive; a SIGSEGV must be a real
// one, not a sanitizer's report of it.

TEST_CASE("guard mode: an out-of-bounds copy faults where it happens", "[virtual][guard]") {
  vt::Result r = vt::spawn({AXL_VIRTUAL_PROBE_PATH, "oob"},
                           {{"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_GUARD", "1"}}, "handle_segv=0");
  INFO(r.describe());
  CHECK(vt::contains(r.out, "enqueue=AXL_SUCCESS"));  // guard mode leaves the end unchecked
  CHECK(vt::contains(r.out, "reached=synchronize"));
  CHECK_FALSE(vt::contains(r.out, "synchronize=AXL_SUCCESS"));
  CHECK((r.signal == SIGSEGV || r.signal == SIGBUS));
}

TEST_CASE("without guard mode the same copy is refused at enqueue", "[virtual][guard]") {
  vt::Result r = vt::spawn({AXL_VIRTUAL_PROBE_PATH, "oob"}, {{"AXL_VIRTUAL_DEVICES", "1"}});
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  CHECK(vt::contains(r.out, "enqueue=AXL_ERROR_OUT_OF_RANGE"));
  CHECK(vt::contains(r.out, "run past the end of the 1000-byte allocation"));
}

TEST_CASE("guard mode: work on memory freed under it faults", "[virtual][guard]") {
  vt::Result r = vt::spawn({AXL_VIRTUAL_PROBE_PATH, "use-after-free"},
                           {{"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_GUARD", "1"}}, "handle_segv=0");
  INFO(r.describe());
  CHECK(vt::contains(r.out, "freed=1"));
  CHECK_FALSE(vt::contains(r.out, "synchronize="));
  CHECK((r.signal == SIGSEGV || r.signal == SIGBUS));
}

TEST_CASE("a device address used as a host pointer faults", "[virtual][guard]") {
  vt::Result r = vt::spawn({AXL_VIRTUAL_PROBE_PATH, "deref"}, {{"AXL_VIRTUAL_DEVICES", "1"}}, "handle_segv=0");
  INFO(r.describe());
  CHECK(vt::contains(r.out, "reached=deref"));
  CHECK_FALSE(vt::contains(r.out, "read="));
  CHECK(r.signal == SIGSEGV);
}

// Last: afterwards the plugin's queues are stopped.
TEST_CASE("direct: backend_shutdown stops queues that are still alive", "[virtual][direct]") {
  const axl_plugin_table& t = table();
  axl_pqueue q = new_queue(device(0));
  REQUIRE(t.backend_shutdown() == AXL_SUCCESS);
  CHECK_THAT(host().all_logs(), Catch::Contains("1 queue(s) still alive"));
  axl_pevent e = nullptr;
  REQUIRE(t.event_create(device(0), 0, &e) == AXL_SUCCESS);
  require_report(t.queue_record_event(q, e), AXL_ERROR_INVALID_STATE, {"stopped by backend_shutdown"});
  REQUIRE(t.event_destroy(e) == AXL_SUCCESS);
  REQUIRE(t.queue_destroy(q) == AXL_SUCCESS);
}
