// Stream-ordered memory reuse under a device memory limit: memory the
// application released while queued work still used it (a deferred free,
// core/src/reaper.cpp) must not make a later allocation fail. An allocation
// that does not fit frees what is ready and waits for what will be; a
// synchronize leaves the memory free at once; an allocation that still
// fails says how much is pending release. A buffer released after its
// queues' synchronize is freed at once, and the free-memory figure counts a
// deferred free whose queues have finished.
//
// A 1 MiB virtual device with simulated latency, so the work queued on a
// released buffer is really still pending when the next allocation comes.
#include "virtual_test_util.hpp"

namespace {

const bool kEnvironment = vt::prepare_environment({{"AXL_VIRTUAL_DEVICES", "1"}});

constexpr uint64_t kDevice = 1 << 20;
constexpr uint64_t kBig = 768 << 10;  // two never fit at once

const vt::Env kSmallSlowDevice = {
    {"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_DEVICE_MEMORY", "1M"}, {"AXL_VIRTUAL_LATENCY_US", "20000"}};

uint64_t free_bytes(const axl::Device& d) { return d.memory_info().first; }

// Allocates kBig bytes, fills them on q and releases the buffer while the
// fill is still pending (the free is deferred).
void use_and_release(const axl::Device& d, const axl::Queue& q) {
  axl::Buffer b = d.allocate(kBig);
  q.fill(b, 0x5a, 1);
}

}  // namespace

TEST_CASE("child: released memory is reused", "[.child]") {
  axl::Device d = vt::gpu();
  axl::Queue q = d.create_queue();
  REQUIRE(free_bytes(d) == kDevice);

  SECTION("after synchronize the memory is free at once") {
    for (int i = 0; i < 3; ++i) {
      use_and_release(d, q);
      q.synchronize();
      CHECK(free_bytes(d) == kDevice);
      axl::Buffer again = d.allocate(kBig);
    }
    use_and_release(d, q);
    d.synchronize();  // the device-wide synchronize too
    CHECK(free_bytes(d) == kDevice);
  }
  SECTION("a buffer released after its queue's synchronize is free when the release returns") {
    // Nothing of its use is pending: no marker goes to the queue (one would
    // take the simulated 20 ms, and the reaper thread would free later).
    for (int i = 0; i < 3; ++i) {
      {
        axl::Buffer b = d.allocate(kBig);
        q.fill(b, 0x5a, 1);
        q.synchronize();
      }
      CHECK(free_bytes(d) == kDevice);
    }
  }
  SECTION("the free memory figure counts a deferred free whose queue has since finished") {
    // Released while its fill is pending; the queue then finishes, seen
    // through an event rather than a queue synchronize: memory_info frees
    // what is ready before it reads the figure.
    for (int i = 0; i < 3; ++i) {
      use_and_release(d, q);
      axl::Event done = d.create_event();
      q.record(done);
      done.synchronize();
      CHECK(free_bytes(d) == kDevice);
    }
  }
  SECTION("an allocation that does not fit waits for the pending free") {
    for (int i = 0; i < 3; ++i) {
      use_and_release(d, q);
      axl::Buffer again = d.allocate(kBig);  // no synchronize
      q.fill(again, 1, 1);
    }
    q.synchronize();
  }
  SECTION("a free behind a gate is not available, and the error says so") {
    axl::Flag gate = d.create_flag();
    q.wait_flag(gate, 1);
    use_and_release(d, q);  // its fill waits behind the gate
    const auto t0 = std::chrono::steady_clock::now();
    axl::Error e = vt::expect_error([&] { d.allocate(kBig); }, AXL_ERROR_OUT_OF_DEVICE_MEMORY);
    const auto waited = std::chrono::steady_clock::now() - t0;
    // The plugin's own report, with how much is still pending.
    CHECK(e.backend() == "virtual");
    CHECK(e.native_name() == "VIRTUAL_ERROR_OUT_OF_DEVICE_MEMORY");
    CHECK_THAT(std::string(e.what()), Catch::Contains("786432 of its 1048576 bytes are in use"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("786432 bytes released earlier are pending release"));
    CHECK(waited < std::chrono::seconds(30));  // bounded, not forever
    gate.signal(1);
    q.synchronize();
    CHECK(free_bytes(d) == kDevice);
    axl::Buffer now = d.allocate(kBig);
  }
  SECTION("an allocation that does not fit for other reasons says nothing is pending") {
    axl::Buffer held = d.allocate(kBig);
    axl::Error e = vt::expect_error([&] { d.allocate(kBig); }, AXL_ERROR_OUT_OF_DEVICE_MEMORY);
    CHECK(e.backend() == "virtual");
    CHECK_THAT(std::string(e.what()), Catch::Contains("no released memory is pending release"));
  }
}

TEST_CASE("released memory is reused under a device memory limit", "[virtual][memory]") {
  vt::run_case("child: released memory is reused", kSmallSlowDevice);
}
