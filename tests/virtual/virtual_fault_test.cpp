// Fault injection (AXL_VIRTUAL_FAIL) through the core, and the other
// environment settings of the virtual backend: every rule form surfaces as
// the right status with the virtual driver's native code and name and the
// injected message, at the call itself or, with @async, at synchronize.
// Each scenario runs in a fresh process (the rules and call counts are
// per process).
#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "../devices/queue_helpers.hpp"
#include "virtual_test_util.hpp"

using devtest::read_back;

namespace {

const bool kEnvironment = vt::prepare_environment({{"AXL_VIRTUAL_DEVICES", "1"}});

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Runs `body`, which must fail with the injected `status` whose message
// names `call` (e.g. "alloc call 3") and the rule.
template <typename F>
void expect_injected(F&& body, axl_status status, const std::string& call, const std::string& rule) {
  axl::Error e = vt::expect_error(std::forward<F>(body), status);
  vt::check_virtual_report(e, status);
  const std::string msg = e.what();
  CHECK_THAT(msg, Catch::Contains("virtual: injected failure of " + call + " (AXL_VIRTUAL_FAIL: " + rule + ")"));
}

bool all_equal(const std::vector<unsigned char>& v, unsigned char value) {
  return std::all_of(v.begin(), v.end(), [&](unsigned char c) { return c == value; });
}

void set_flag(void* p) { static_cast<std::atomic<int>*>(p)->store(1); }

}  // namespace

// ------------------------------------------------- the Nth call, at enqueue --

constexpr const char* kNthRules =
    "alloc:3=OUT_OF_DEVICE_MEMORY;memcpy_htod:2=INTERNAL;memcpy_dtoh:1=HOST_HAZARD;"
    "memcpy_dtod:2=DEVICE_LOST;memset:1=OUT_OF_RANGE;memcpy_peer:1=DEVICE_LOST;launch:2=INTERNAL;"
    "event_record:1=INTERNAL;flag_create:1=OUT_OF_HOST_MEMORY;module_load:1=INVALID_ARGUMENT;"
    "pinned_alloc:1=OUT_OF_HOST_MEMORY;host_fn:1=UNSUPPORTED;event_sync:1=TIMEOUT";

TEST_CASE("child: Nth-call faults at enqueue", "[.child]") {
  REQUIRE(env_or_empty("AXL_VIRTUAL_FAIL") == kNthRules);
  axl::Device d = vt::gpu(0), d1 = vt::gpu(1);
  axl::Queue q = d.create_queue();

  axl::Buffer a = d.allocate(256), b = d.allocate(256);  // alloc calls 1, 2
  expect_injected([&] { d.allocate(256); }, AXL_ERROR_OUT_OF_DEVICE_MEMORY, "alloc call 3",
                  "alloc:3=OUT_OF_DEVICE_MEMORY");
  axl::Buffer c = d.allocate(256);  // call 4: only the 3rd fails

  std::vector<unsigned char> ones(256, 1), twos(256, 2), threes(256, 3);
  expect_injected([&] { q.fill(a, 9, 1); }, AXL_ERROR_OUT_OF_RANGE, "memset call 1", "memset:1=OUT_OF_RANGE");
  q.copy_from_host(a, ones.data(), 256);  // htod call 1
  expect_injected([&] { q.copy_from_host(a, twos.data(), 256); }, AXL_ERROR_INTERNAL, "memcpy_htod call 2",
                  "memcpy_htod:2=INTERNAL");
  q.copy_from_host(b, threes.data(), 256);  // call 3
  std::vector<unsigned char> out(256, 0);
  expect_injected([&] { q.copy_to_host(out.data(), a, 256); }, AXL_ERROR_HOST_HAZARD, "memcpy_dtoh call 1",
                  "memcpy_dtoh:1=HOST_HAZARD");
  CHECK(read_back(q, a) == ones);  // the refused copy never ran: a holds ones
  CHECK(read_back(q, b) == threes);

  q.copy(c, a);  // dtod call 1
  expect_injected([&] { q.copy(c, b); }, AXL_ERROR_DEVICE_LOST, "memcpy_dtod call 2", "memcpy_dtod:2=DEVICE_LOST");
  CHECK(read_back(q, c) == ones);

  axl::Buffer p1 = d1.allocate(256);
  expect_injected([&] { q.copy(p1, a); }, AXL_ERROR_DEVICE_LOST, "memcpy_peer call 1", "memcpy_peer:1=DEVICE_LOST");
  q.copy(p1, a);  // peer call 2
  q.synchronize();

  axl::Kernel k = d.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  const uint32_t n = 64;
  q.launch(k, {1, 1, 1}, {1, 1, 1}, {axl::Arg::buffer(a), axl::Arg::scalar(n)});
  expect_injected([&] { q.launch(k, {1, 1, 1}, {1, 1, 1}, {axl::Arg::buffer(a), axl::Arg::scalar(n)}); },
                  AXL_ERROR_INTERNAL, "launch call 2", "launch:2=INTERNAL");

  axl::Event e = d.create_event();
  expect_injected([&] { q.record(e); }, AXL_ERROR_INTERNAL, "event_record call 1", "event_record:1=INTERNAL");
  q.record(e);  // call 2
  expect_injected([&] { e.synchronize(); }, AXL_ERROR_TIMEOUT, "event_sync call 1", "event_sync:1=TIMEOUT");
  e.synchronize();

  expect_injected([&] { d.create_flag(); }, AXL_ERROR_OUT_OF_HOST_MEMORY, "flag_create call 1",
                  "flag_create:1=OUT_OF_HOST_MEMORY");
  axl::Flag f = d.create_flag();

  const std::string list = "k\n";
  expect_injected([&] { d.load_module(list.data(), list.size()); }, AXL_ERROR_INVALID_ARGUMENT,
                  "module_load call 1", "module_load:1=INVALID_ARGUMENT");
  d.load_module(list.data(), list.size()).kernel("k");

  expect_injected([&] { d.allocate(100, AXL_BUFFER_FLAG_PINNED); }, AXL_ERROR_OUT_OF_HOST_MEMORY,
                  "pinned_alloc call 1", "pinned_alloc:1=OUT_OF_HOST_MEMORY");
  d.allocate(100, AXL_BUFFER_FLAG_PINNED);

  std::atomic<int> ran{0};
  expect_injected([&] { q.enqueue_host_func(set_flag, &ran); }, AXL_ERROR_UNSUPPORTED, "host_fn call 1",
                  "host_fn:1=UNSUPPORTED");
  q.enqueue_host_func(set_flag, &ran);
  q.synchronize();
  CHECK(ran.load() == 1);
}

TEST_CASE("fault injection: the Nth call fails at enqueue", "[virtual][fault]") {
  vt::run_case("child: Nth-call faults at enqueue",
               {{"AXL_VIRTUAL_DEVICES", "2"}, {"AXL_VIRTUAL_FAIL", kNthRules}});
}

// -------------------------------------------------- @async: at synchronize --

constexpr const char* kAsyncRules =
    "memset:1=HOST_HAZARD@async;memcpy_htod:1=DEVICE_LOST@async;memcpy_dtoh:2=INTERNAL@async;"
    "launch:1=DEVICE_LOST@async;event_record:1=INTERNAL@async;host_fn:1=UNSUPPORTED@async;"
    "memcpy_dtod:1=OUT_OF_RANGE@async;memcpy_peer:1=DEVICE_LOST@async";

TEST_CASE("child: @async faults surface at synchronize", "[.child]") {
  REQUIRE(env_or_empty("AXL_VIRTUAL_FAIL") == kAsyncRules);
  axl::Device d = vt::gpu(0), d1 = vt::gpu(1);
  axl::Queue q = d.create_queue();
  axl::Buffer a = d.allocate(512), b = d.allocate(512), p1 = d1.allocate(512);
  auto at_sync = [&](axl_status status, const std::string& call, const std::string& rule) {
    expect_injected([&] { q.synchronize(); }, status, call, rule);
    q.synchronize();  // reported once: the next synchronize is clean
  };

  q.fill(a, 0x11, 1);  // accepted; fails on the queue
  at_sync(AXL_ERROR_HOST_HAZARD, "memset call 1", "memset:1=HOST_HAZARD@async");
  q.fill(a, 0x22, 1);
  q.fill(b, 0x33, 1);
  q.synchronize();

  std::vector<unsigned char> data(512, 0x44);
  q.copy_from_host(a, data.data(), data.size());
  at_sync(AXL_ERROR_DEVICE_LOST, "memcpy_htod call 1", "memcpy_htod:1=DEVICE_LOST@async");
  CHECK(all_equal(read_back(q, a), 0x22));  // dtoh call 1; the failed copy moved nothing

  std::vector<unsigned char> out(512, 0x99);
  q.copy_to_host(out.data(), a, out.size());  // dtoh call 2
  at_sync(AXL_ERROR_INTERNAL, "memcpy_dtoh call 2", "memcpy_dtoh:2=INTERNAL@async");
  CHECK(all_equal(out, 0x99));

  q.copy(b, a);
  at_sync(AXL_ERROR_OUT_OF_RANGE, "memcpy_dtod call 1", "memcpy_dtod:1=OUT_OF_RANGE@async");
  CHECK(all_equal(read_back(q, b), 0x33));

  q.copy(p1, a);
  at_sync(AXL_ERROR_DEVICE_LOST, "memcpy_peer call 1", "memcpy_peer:1=DEVICE_LOST@async");

  axl::Kernel k = d.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  const uint32_t n = 16;
  q.launch(k, {1, 1, 1}, {16, 1, 1}, {axl::Arg::buffer(a), axl::Arg::scalar(n)});
  at_sync(AXL_ERROR_DEVICE_LOST, "launch call 1", "launch:1=DEVICE_LOST@async");
  q.launch(k, {1, 1, 1}, {16, 1, 1}, {axl::Arg::buffer(a), axl::Arg::scalar(n)});
  q.synchronize();

  // The record still completes (waiters must not hang). Waiting on it
  // reports the queue's unreported failure, as cuEventSynchronize reports
  // earlier asynchronous errors; the queue still reports it too.
  axl::Event e = d.create_event();
  q.record(e);
  {
    axl::Error err = vt::expect_error([&] { e.synchronize(); }, AXL_ERROR_INTERNAL);
    CHECK_THAT(std::string(err.what()),
               Catch::Contains("an operation enqueued before the event failed: injected failure of event_record "
                               "call 1 (AXL_VIRTUAL_FAIL: event_record:1=INTERNAL@async)"));
  }
  CHECK(e.is_ready());
  at_sync(AXL_ERROR_INTERNAL, "event_record call 1", "event_record:1=INTERNAL@async");

  // A failed callback does not run.
  std::atomic<int> ran{0};
  q.enqueue_host_func(set_flag, &ran);
  at_sync(AXL_ERROR_UNSUPPORTED, "host_fn call 1", "host_fn:1=UNSUPPORTED@async");
  CHECK(ran.load() == 0);
  q.enqueue_host_func(set_flag, &ran);
  q.synchronize();
  CHECK(ran.load() == 1);

  // Only the first failure since the last synchronize is reported.
  axl::Queue q2 = d.create_queue();
  q2.synchronize();
}

TEST_CASE("fault injection: @async failures surface at synchronize", "[virtual][fault]") {
  vt::run_case("child: @async faults surface at synchronize",
               {{"AXL_VIRTUAL_DEVICES", "2"}, {"AXL_VIRTUAL_FAIL", kAsyncRules}});
}

// ------------------------------------------------------------- every call --

TEST_CASE("child: every-call rules", "[.child]") {
  axl::Device d = vt::gpu();
  axl::Queue q = d.create_queue();
  axl::Buffer a = d.allocate(64);
  axl::Kernel k = d.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  const uint32_t n = 16;
  for (int call = 1; call <= 3; ++call) {
    expect_injected([&] { q.launch(k, {1, 1, 1}, {1, 1, 1}, {axl::Arg::buffer(a), axl::Arg::scalar(n)}); },
                    AXL_ERROR_DEVICE_LOST, "launch call " + std::to_string(call), "launch:*=DEVICE_LOST");
    expect_injected([&] { q.fill(a, 1, 1); }, AXL_ERROR_INVALID_ARGUMENT, "memset call " + std::to_string(call),
                    "memset:*=INVALID_ARGUMENT");
  }
  std::vector<unsigned char> host(64, 5);
  q.copy_from_host(a, host.data(), 64);  // other operations are unaffected
  CHECK(read_back(q, a) == host);
}

TEST_CASE("fault injection: '*' fails every call", "[virtual][fault]") {
  vt::run_case("child: every-call rules",
               {{"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_FAIL", "launch:*=DEVICE_LOST; memset:*=INVALID_ARGUMENT"}});
}

// ------------------------------------------------- init, queues, sync, free --

TEST_CASE("child: init fails", "[.child]") {
  REQUIRE(axl::Device::count("gpu") == 1);  // counting does not initialise
  axl_device_t dev = nullptr;
  REQUIRE(axl_device_get("gpu", 0, &dev) == AXL_ERROR_BACKEND_UNAVAILABLE);
  axl_error_info e{};
  e.struct_size = sizeof e;
  REQUIRE(axl_last_error(&e) == AXL_SUCCESS);
  CHECK(std::string(e.backend) == "virtual");
  CHECK(std::string(e.native_name) == "VIRTUAL_ERROR_BACKEND_UNAVAILABLE");
  CHECK_THAT(std::string(e.message), Catch::Contains("injected failure of init call 1"));
  // The backend drops out, and axl-info's record says why.
  CHECK(axl::Device::count("gpu") == 0);
  uint32_t plugins = 0;
  REQUIRE(axl_plugin_count(&plugins) == AXL_SUCCESS);
  bool seen = false;
  for (uint32_t i = 0; i < plugins; ++i) {
    axl_plugin_record r{};
    r.struct_size = sizeof r;
    REQUIRE(axl_plugin_get_record(i, &r) == AXL_SUCCESS);
    if (std::string(r.name) != "virtual") continue;
    seen = true;
    CHECK(r.state == AXL_PLUGIN_STATE_UNAVAILABLE);
    CHECK_THAT(std::string(r.reason), Catch::Contains("injected failure of init call 1"));
  }
  CHECK(seen);
}

TEST_CASE("fault injection: backend_init", "[virtual][fault]") {
  vt::run_case("child: init fails",
               {{"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_FAIL", "init:1=BACKEND_UNAVAILABLE"}});
}

TEST_CASE("child: queue creation and synchronize and free fail", "[.child]") {
  // The device's default queue is the first queue: the first device_get fails.
  expect_injected([&] { vt::gpu(); }, AXL_ERROR_OUT_OF_HOST_MEMORY, "queue_create call 1",
                  "queue_create:1=OUT_OF_HOST_MEMORY");
  axl::Device d = vt::gpu();  // queue_create call 2
  axl::Queue q = d.create_queue();
  expect_injected([&] { q.synchronize(); }, AXL_ERROR_DEVICE_LOST, "queue_sync call 1", "queue_sync:1=DEVICE_LOST");
  q.synchronize();

  // A failed free leaves the memory allocated; a release has no caller to
  // tell, so the next synchronize of the device reports it, with the
  // plugin's detail. The next free works.
  const uint64_t free0 = d.memory_info().first;
  d.allocate(1 << 20);  // released at once: memory_free call 1 fails
  CHECK(d.memory_info().first == free0 - (1 << 20));
  d.allocate(1 << 20);
  CHECK(d.memory_info().first == free0 - (1 << 20));
  {
    axl::Error e = vt::expect_error([&] { q.synchronize(); }, AXL_ERROR_INTERNAL);
    vt::check_virtual_report(e, AXL_ERROR_INTERNAL);
    CHECK_THAT(std::string(e.what()), Catch::Contains("injected failure of free call 1 (AXL_VIRTUAL_FAIL: "
                                                      "free:1=INTERNAL) (releasing 1048576 bytes at 0x"));
    CHECK_THAT(std::string(e.what()), Catch::EndsWith("; the memory stays allocated)"));
  }
  q.synchronize();  // reported once
  d.synchronize();

  // A deferred free (the buffer was used on a queue) that fails is
  // reported by the device-wide synchronize too.
  {
    axl::Buffer b = d.allocate(4096);
    q.fill(b, 1, 1);
  }
  axl::Error e = vt::expect_error([&] { d.synchronize(); }, AXL_ERROR_DEVICE_LOST);
  vt::check_virtual_report(e, AXL_ERROR_DEVICE_LOST);
  CHECK_THAT(std::string(e.what()), Catch::Contains("injected failure of free call 3"));
  d.synchronize();
}

TEST_CASE("fault injection: queue creation, synchronize and free", "[virtual][fault]") {
  vt::run_case("child: queue creation and synchronize and free fail",
               {{"AXL_VIRTUAL_DEVICES", "1"},
                {"AXL_VIRTUAL_FAIL",
                 "queue_create:1=OUT_OF_HOST_MEMORY;queue_sync:1=DEVICE_LOST;free:1=INTERNAL;free:3=DEVICE_LOST"}});
}

// ------------------------------------------ host hazards keep their origin --

TEST_CASE("child: a host hazard names the failure that caused it", "[.child]") {
  axl::Device d = vt::gpu();
  axl::Queue q = d.create_queue();
  axl::Buffer t = d.allocate(4096, AXL_BUFFER_FLAG_TRACKED);
  q.fill(t, 7, 1);  // accepted; fails on the queue
  // The host read is the first to see the failure: it is a host hazard,
  // and still names the backend and native code of the failed fill.
  for (int i = 0; i < 2; ++i) {  // the second wait reads the poisoned completion
    axl::Error e = vt::expect_error([&] { axl::check(axl_buffer_host_wait(t.get(), AXL_ACCESS_READ)); },
                                    AXL_ERROR_HOST_HAZARD);
    CHECK(e.backend() == "virtual");
    CHECK(e.native_code() == AXL_ERROR_DEVICE_LOST);
    CHECK(e.native_name() == "VIRTUAL_ERROR_DEVICE_LOST");
    CHECK_THAT(std::string(e.what()), Catch::Contains("injected failure of memset call 1"));
  }
  // The queue still reports it (the synchronize has the detail too).
  vt::check_virtual_report(vt::expect_error([&] { q.synchronize(); }, AXL_ERROR_DEVICE_LOST), AXL_ERROR_DEVICE_LOST);
  // A fill refused at enqueue poisons what it should have written: the same.
  axl::Buffer u = d.allocate(4096, AXL_BUFFER_FLAG_TRACKED);
  CHECK_THROWS(q.fill(u, 7, 1));  // memset call 2
  axl::Error e = vt::expect_error([&] { axl::check(axl_buffer_host_wait(u.get(), AXL_ACCESS_READ)); },
                                  AXL_ERROR_HOST_HAZARD);
  CHECK(e.backend() == "virtual");
  CHECK(e.native_code() == AXL_ERROR_INTERNAL);
  CHECK(e.native_name() == "VIRTUAL_ERROR_INTERNAL");
}

TEST_CASE("fault injection: a host hazard keeps the backend and native code", "[virtual][fault]") {
  vt::run_case("child: a host hazard names the failure that caused it",
               {{"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_FAIL", "memset:1=DEVICE_LOST@async;memset:2=INTERNAL"}});
}

// --------------------------------------------------------- malformed rules --

TEST_CASE("child: malformed rules are skipped", "[.child]") {
  axl::Device d = vt::gpu();
  axl::Queue q = d.create_queue();
  axl::Buffer a = d.allocate(64);  // no alloc rule survived
  axl::Kernel k = d.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  const uint32_t n = 16;
  expect_injected([&] { q.launch(k, {1, 1, 1}, {1, 1, 1}, {axl::Arg::buffer(a), axl::Arg::scalar(n)}); },
                  AXL_ERROR_DEVICE_LOST, "launch call 1", "launch:1=DEVICE_LOST");
  q.fill(a, 0, 1);
  q.synchronize();
}

TEST_CASE("fault injection: malformed rules are named in warnings and skipped", "[virtual][fault]") {
  const std::string spec =
      "alloc:x=INTERNAL; bogus ;launch:1=DEVICE_LOST;memset:1=NOPE;alloc:1=INTERNAL@later;"
      "alloc:2=NOT_READY;queue_create:1=INTERNAL@async;explode:1=INTERNAL;alloc:0=INTERNAL";
  vt::Result r = vt::spawn({vt::self_path(), "child: malformed rules are skipped"},
                           {{"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_FAIL", spec}});
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  for (const char* token : {"'alloc:x=INTERNAL'", "'bogus'", "'memset:1=NOPE'", "'alloc:1=INTERNAL@later'",
                            "'alloc:2=NOT_READY'", "'queue_create:1=INTERNAL@async'", "'explode:1=INTERNAL'",
                            "'alloc:0=INTERNAL'"}) {
    INFO(token);
    CHECK(vt::contains(r.err, std::string("AXL_VIRTUAL_FAIL: ignoring rule ") + token));
  }
  CHECK(vt::contains(r.err, "unknown operation 'explode'"));
  CHECK(vt::contains(r.err, "'@async' applies only to enqueued operations"));
  CHECK(vt::contains(r.err, "NOT_READY is not a failure"));
  CHECK_FALSE(vt::contains(r.err, "'launch:1=DEVICE_LOST'"));
}

// ------------------------------------------------------ other settings --

TEST_CASE("child: a 1 MiB device with api and arch from the environment", "[.child]") {
  axl::Device d = vt::gpu();
  axl::DeviceInfo info = d.info();
  CHECK(info.api == "hip");
  CHECK(info.architecture_name == "gfx942");
  CHECK(info.model_name == "axl virtual device (hip gfx942)");
  CHECK(info.total_memory_bytes == (1u << 20));
  CHECK(info.max_single_alloc_bytes == (1u << 20));
  {
    axl::Buffer a = d.allocate(600 << 10);
    axl::Error e = vt::expect_error([&] { d.allocate(600 << 10); }, AXL_ERROR_OUT_OF_DEVICE_MEMORY);
    vt::check_virtual_report(e, AXL_ERROR_OUT_OF_DEVICE_MEMORY);
    CHECK_THAT(std::string(e.what()), Catch::Contains("614400 of its 1048576 bytes are in use"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("AXL_VIRTUAL_DEVICE_MEMORY"));
    CHECK(d.memory_info().first == (1u << 20) - (600u << 10));
  }
  d.allocate(600 << 10);  // the first one was given back
  // Beyond the largest single allocation the core refuses before asking.
  axl::Error e = vt::expect_error([&] { d.allocate(2 << 20); }, AXL_ERROR_OUT_OF_DEVICE_MEMORY);
  CHECK(e.backend().empty());
}

TEST_CASE("AXL_VIRTUAL_DEVICE_MEMORY, AXL_VIRTUAL_API and AXL_VIRTUAL_ARCH", "[virtual][config]") {
  vt::run_case("child: a 1 MiB device with api and arch from the environment",
               {{"AXL_VIRTUAL_DEVICES", "1"},
                {"AXL_VIRTUAL_DEVICE_MEMORY", "1M"},
                {"AXL_VIRTUAL_API", "hip"},
                {"AXL_VIRTUAL_ARCH", "gfx942"}});
}

TEST_CASE("child: bad settings fall back to the defaults", "[.child]") {
  CHECK(axl::Device::count("gpu") == 0);
}

TEST_CASE("bad environment values are named in warnings", "[virtual][config]") {
  vt::Result r = vt::spawn({vt::self_path(), "child: bad settings fall back to the defaults"},
                           {{"AXL_VIRTUAL_DEVICES", "two"},
                            {"AXL_VIRTUAL_LATENCY_US", "-5"},
                            {"AXL_VIRTUAL_BANDWIDTH_GBPS", "fast"},
                            {"AXL_VIRTUAL_DEVICE_MEMORY", "12Q"},
                            {"AXL_VIRTUAL_GUARD", "yes"},
                            {"AXL_VIRTUAL_API", "has space"}});
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  for (const char* s : {"AXL_VIRTUAL_DEVICES='two'", "AXL_VIRTUAL_LATENCY_US='-5'", "AXL_VIRTUAL_BANDWIDTH_GBPS='fast'",
                        "AXL_VIRTUAL_DEVICE_MEMORY='12Q'", "AXL_VIRTUAL_GUARD='yes'", "AXL_VIRTUAL_API='has space'"}) {
    INFO(s);
    CHECK(vt::contains(r.err, s));
  }
}
