// Simulated device time (AXL_VIRTUAL_LATENCY_US, AXL_VIRTUAL_BANDWIDTH_GBPS):
// ordering bugs become deterministic, and events time what the model says.
// Each scenario runs in a process of its own, since the plugin reads the
// environment once.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "virtual_test_util.hpp"

using namespace std::chrono_literals;

namespace {

const bool kEnvironment = vt::prepare_environment({{"AXL_VIRTUAL_DEVICES", "1"}});

bool all_equal(const std::vector<unsigned char>& v, unsigned char value) {
  return std::all_of(v.begin(), v.end(), [&](unsigned char c) { return c == value; });
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// ---------------------------------------------------------------- latency --

TEST_CASE("child: 20 ms per operation", "[.child]") {
  REQUIRE(env_or_empty("AXL_VIRTUAL_LATENCY_US") == "20000");
  axl::Device d = vt::gpu();
  axl::Queue q1 = d.create_queue(), q2 = d.create_queue();
  axl::Kernel k = d.test_kernel(AXL_TEST_KERNEL_FILL_U32);
  const uint32_t n = 1024, value = 0;
  axl::Buffer buf = d.allocate(4 * n);
  q1.fill(buf, 0x00, 1);
  q1.synchronize();
  std::vector<unsigned char> out(4 * n, 0x55);

  // q1 computes for 20 ms, then writes pattern A; q2 reads without waiting.
  // A device write lands when its operation is over and a read happens when
  // it starts, so q2 reads the old bytes every time, not once in a while.
  // Under ThreadSanitizer the same missing wait is a data race between the
  // two queues' workers, which it reports (rightly), so that half runs in
  // the other builds only.
#if !defined(__SANITIZE_THREAD__)
  const auto t0 = std::chrono::steady_clock::now();
  q1.launch(k, {1, 1, 1}, {32, 1, 1}, {axl::Arg::buffer(buf), axl::Arg::scalar(n), axl::Arg::scalar(value)});
  q1.fill(buf, 0xA1, 1);
  q2.copy_to_host(out.data(), buf, out.size());
  q2.synchronize();
  q1.synchronize();
  CHECK(all_equal(out, 0x00));  // the race, shown deterministically
  CHECK(ms_since(t0) >= 39.0);  // launch + fill on q1
  q2.copy_to_host(out.data(), buf, out.size());
  q2.synchronize();
  CHECK(all_equal(out, 0xA1));  // A did land, later
#endif

  // The same with the wait: q2 sees B.
  const auto t1 = std::chrono::steady_clock::now();
  q1.launch(k, {1, 1, 1}, {32, 1, 1}, {axl::Arg::buffer(buf), axl::Arg::scalar(n), axl::Arg::scalar(value)});
  q1.fill(buf, 0xB2, 1);
  q2.wait_for(q1);
  q2.copy_to_host(out.data(), buf, out.size());
  q2.synchronize();
  CHECK(all_equal(out, 0xB2));
  CHECK(ms_since(t1) >= 59.0);  // launch, fill, then the copy after them

  // An event after N operations completes N latencies later; callbacks,
  // flags and event markers are not device work and cost nothing.
  axl::Event start = d.create_event(true), end = d.create_event(true);
  q1.record(start);
  for (int i = 0; i < 3; ++i) q1.fill(buf, static_cast<uint32_t>(i), 1);
  q1.record(end);
  end.synchronize();
  const float three = start.elapsed_ms(end);
  CHECK(three >= 59.0f);
  CHECK(three <= 120.0f);
  q1.record(start);
  q1.enqueue_host_func([](void*) {}, nullptr);
  q1.record(end);
  end.synchronize();
  CHECK(start.elapsed_ms(end) < 10.0f);
}

TEST_CASE("simulated latency makes a missing wait visible", "[virtual][sim]") {
  vt::run_case("child: 20 ms per operation",
               {{"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_LATENCY_US", "20000"}});
}

// -------------------------------------------------------------- bandwidth --

TEST_CASE("child: copies take bytes / bandwidth", "[.child]") {
  REQUIRE(env_or_empty("AXL_VIRTUAL_BANDWIDTH_GBPS") == "0.025");
  axl::Device d = vt::gpu();
  axl::Queue q = d.create_queue();
  const uint64_t bytes = 1 << 20;
  // 1 MiB at 0.025 GB/s (25 bytes per microsecond).
  const double want_ms = static_cast<double>(bytes) / 0.025 / 1e6;
  axl::Buffer a = d.allocate(bytes), b = d.allocate(bytes);
  std::vector<unsigned char> host(bytes, 7), back(bytes, 0);
  axl::Event start = d.create_event(true), end = d.create_event(true);
  auto timed = [&](const char* what, auto&& enqueue) {
    q.record(start);
    enqueue();
    q.record(end);
    end.synchronize();
    const float ms = start.elapsed_ms(end);
    INFO(what << ": " << ms << " ms, expected " << want_ms << " ms +- 20%");
    CHECK(ms >= 0.8 * want_ms);
    CHECK(ms <= 1.2 * want_ms);
  };
  timed("host to device", [&] { q.copy_from_host(a, host.data(), bytes); });
  timed("device to device", [&] { q.copy(b, a); });
  timed("device to host", [&] { q.copy_to_host(back.data(), b, bytes); });
  q.synchronize();
  CHECK(back == host);
  // Fills pay latency (0 here), not bandwidth.
  q.record(start);
  q.fill(a, 0, 1);
  q.record(end);
  end.synchronize();
  CHECK(start.elapsed_ms(end) < 0.2 * want_ms);
}

TEST_CASE("simulated bandwidth prices copies", "[virtual][sim]") {
  vt::run_case("child: copies take bytes / bandwidth",
               {{"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_BANDWIDTH_GBPS", "0.025"}});
}

// Without simulated time nothing waits: 200 small copies are quick.
TEST_CASE("no simulated time by default", "[virtual][sim]") {
  REQUIRE(kEnvironment);
  axl::Device d = vt::gpu();
  axl::Queue q = d.create_queue();
  axl::Buffer b = d.allocate(4096);
  std::vector<unsigned char> host(4096, 1);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) q.copy_from_host(b, host.data(), host.size());
  q.synchronize();
  CHECK(ms_since(t0) < 1000.0);
}
