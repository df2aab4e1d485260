// Bounded queues through axl.h (issue 15): axl_queue_create_with_options and
// its validation, AXL_QUEUE_MAX_PENDING, an enqueue blocked on a full cpu
// queue until another thread releases it, and the full queue stuck behind a
// completion flag only the blocked thread could write, which fails with
// AXL_ERROR_TIMEOUT (AXL_QUEUE_FULL_TIMEOUT_MS), and several threads
// enqueueing on one bounded queue at once (no core lock on these backends).
// The environment is read at every queue creation, so each case sets it
// just around its creation.
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

using namespace axltest;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// One virtual accelerator besides the cpu, so both WorkQueue backends are
// covered. Set before the first axl call: discovery reads it once.
const bool kEnvReady = (clear_axl_env(), setenv("AXL_VIRTUAL_DEVICES", "1", 1), true);

// A device of the cpu backend, or of the virtual backend (the "gpu" label).
struct Cpu {
  axl_device_t dev = nullptr;
  explicit Cpu(const char* label = "cpu") { REQUIRE(axl_device_get(label, 0, &dev) == AXL_SUCCESS); }
  ~Cpu() { axl_device_release(dev); }
  axl_queue_t queue(uint32_t max_pending) {
    axl_queue_options o{};
    o.struct_size = sizeof o;
    o.max_pending = max_pending;
    axl_queue_t q = nullptr;
    REQUIRE(axl_queue_create_with_options(dev, &o, &q) == AXL_SUCCESS);
    return q;
  }
};

// Enqueues `n` 8-byte copies into `dst` after a wait for `flag` >= 1 on a
// new queue, counting the enqueues that returned. Returns the first failure.
struct GatedCopies {
  axl_queue_t q;
  axl_flag_t flag = nullptr;
  axl_buffer_t dst = nullptr;
  uint64_t src = 42;
  std::atomic<int> returned{0};
  // tracked: dst under host hazard tracking, so the core also records
  // events on the queue (axl_buffer_flags).
  GatedCopies(Cpu& c, axl_queue_t queue, bool tracked = false) : q(queue) {
    REQUIRE(axl_flag_create(c.dev, &flag) == AXL_SUCCESS);
    REQUIRE(axl_buffer_create(c.dev, 8, tracked ? AXL_BUFFER_FLAG_TRACKED : 0, &dst) == AXL_SUCCESS);
    REQUIRE(axl_queue_wait_flag(q, flag, 1) == AXL_SUCCESS);
  }
  ~GatedCopies() {
    axl_flag_signal(flag, 1);
    axl_queue_synchronize(q);
    axl_buffer_release(dst);
    axl_flag_release(flag);
    axl_queue_release(q);
  }
  axl_status run(int n) {
    for (int i = 0; i < n; ++i) {
      if (axl_status s = axl_queue_copy_from_host(q, dst, 0, &src, sizeof src)) return s;
      returned++;
    }
    return AXL_SUCCESS;
  }
};

// How many enqueues returned once the count stopped moving (the producer
// is blocked), waiting at most 2 s for it to settle.
int settled(const std::atomic<int>& returned) {
  int last = -1;
  for (auto end = Clock::now() + 2s; Clock::now() < end;) {
    std::this_thread::sleep_for(50ms);
    const int now = returned.load();
    if (now == last) return now;
    last = now;
  }
  return last;
}

}  // namespace

TEST_CASE("axl_queue_create_with_options: validation names the value", "[bounded]") {
  (void)kEnvReady;
  Cpu c;
  axl_queue_t q = nullptr;
  axl_queue_options o{};
  o.struct_size = sizeof o;
  require_status(axl_queue_create_with_options(nullptr, &o, &q), AXL_ERROR_INVALID_HANDLE,
                 {"device handle is NULL"});
  require_status(axl_queue_create_with_options(c.dev, nullptr, &q), AXL_ERROR_INVALID_ARGUMENT,
                 {"options is NULL"});
  require_status(axl_queue_create_with_options(c.dev, &o, nullptr), AXL_ERROR_INVALID_ARGUMENT,
                 {"out_queue is NULL"});
  o.struct_size = 0;
  require_status(axl_queue_create_with_options(c.dev, &o, &q), AXL_ERROR_INVALID_ARGUMENT,
                 {"struct_size is 0", "at least 16"});
  o.struct_size = 8;
  require_status(axl_queue_create_with_options(c.dev, &o, &q), AXL_ERROR_INVALID_ARGUMENT,
                 {"struct_size is 8", "at least 16"});
  o.struct_size = sizeof o;
  o.flags = 0x4;
  require_status(axl_queue_create_with_options(c.dev, &o, &q), AXL_ERROR_INVALID_ARGUMENT,
                 {"flags 0x4", "expected 0"});
  CHECK(q == nullptr);
  // A newer caller's larger struct: the fields this core knows are read.
  struct {
    axl_queue_options o;
    uint64_t later_field;
  } big{};
  big.o.struct_size = sizeof big;
  big.o.max_pending = 3;
  REQUIRE(axl_queue_create_with_options(c.dev, &big.o, &q) == AXL_SUCCESS);
  axl_queue_release(q);
}

TEST_CASE("A full queue blocks the enqueue until another thread writes the flag", "[bounded]") {
  const char* label = GENERATE("cpu", "gpu");
  INFO(label << " (cpu: the cpu backend; gpu: the virtual backend)");
  Cpu c(label);
  axl_device_info info{};
  info.struct_size = sizeof info;
  REQUIRE(axl_device_get_info(c.dev, &info) == AXL_SUCCESS);
  CHECK(std::string(info.backend) == (std::string(label) == "cpu" ? "cpu" : "virtual"));
  GatedCopies g(c, c.queue(4));
  std::atomic<int> at_release{-1};
  std::thread releaser([&] {
    at_release = settled(g.returned);
    axl_flag_signal(g.flag, 1);
  });
  CHECK(g.run(500) == AXL_SUCCESS);
  releaser.join();
  // 4 pending: the flag wait and 3 copies.
  CHECK(at_release.load() == 3);
  CHECK(g.returned.load() == 500);
  CHECK(axl_queue_synchronize(g.q) == AXL_SUCCESS);
}

TEST_CASE("AXL_QUEUE_MAX_PENDING bounds queues created without a bound", "[bounded]") {
  Cpu c;
  setenv("AXL_QUEUE_MAX_PENDING", "2", 1);
  axl_queue_t q = nullptr;
  REQUIRE(axl_queue_create(c.dev, 0, &q) == AXL_SUCCESS);
  unsetenv("AXL_QUEUE_MAX_PENDING");
  GatedCopies g(c, q);
  std::atomic<int> at_release{-1};
  std::thread releaser([&] {
    at_release = settled(g.returned);
    axl_flag_signal(g.flag, 1);
  });
  CHECK(g.run(100) == AXL_SUCCESS);
  releaser.join();
  CHECK(at_release.load() == 1);
  // Invalid values are logged and ignored: the queue takes the default.
  for (const char* bad : {"0", "-3", "abc", "12x", "4294967296"}) {
    INFO(bad);
    setenv("AXL_QUEUE_MAX_PENDING", bad, 1);
    axl_queue_t b = nullptr;
    CHECK(axl_queue_create(c.dev, 0, &b) == AXL_SUCCESS);
    unsetenv("AXL_QUEUE_MAX_PENDING");
    GatedCopies h(c, b);
    std::atomic<int> at{-1};
    std::thread releaser2([&] {
      at = settled(h.returned);
      axl_flag_signal(h.flag, 1);
    });
    CHECK(h.run(100) == AXL_SUCCESS);
    releaser2.join();
    CHECK(at.load() == 100);  // 100 copies fit in the default bound
  }
}

TEST_CASE("A full queue behind a flag only the blocked thread could write fails with TIMEOUT",
          "[bounded]") {
  const bool tracked = GENERATE(false, true);
  INFO("tracked " << tracked);
  Cpu c;
  setenv("AXL_QUEUE_FULL_TIMEOUT_MS", "200", 1);
  GatedCopies g(c, c.queue(8), tracked);
  unsetenv("AXL_QUEUE_FULL_TIMEOUT_MS");
  const auto t0 = Clock::now();
  const axl_status s = g.run(10000);
  const auto waited = Clock::now() - t0;
  require_status(s, AXL_ERROR_TIMEOUT,
                 {"queue is full (8 operations pending", "waits for the completion flag at ",
                  "to reach 1", "write the flag from another thread or enqueue fewer operations",
                  "AXL_QUEUE_FULL_TIMEOUT_MS"});
  // Untracked: the wait and 7 copies fill the queue; tracked, the core's
  // event records take some of the room.
  if (!tracked) CHECK(g.returned.load() == 7);
  CHECK(g.returned.load() <= 7);
  CHECK(waited >= 200ms);
  CHECK(waited < 5s);
  // The refused copy was not enqueued; the rest runs once the flag is set.
  REQUIRE(axl_flag_signal(g.flag, 1) == AXL_SUCCESS);
  CHECK(axl_queue_synchronize(g.q) == AXL_SUCCESS);
}

namespace {

struct Tally {
  uint64_t calls = 0;  // bumped only by host callbacks, which run one at a time on the queue's worker
};
void tally(void* p) { ++static_cast<Tally*>(p)->calls; }

}  // namespace

// cpu and virtual set AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE, so the core takes no
// lock of its own around these enqueues (internal.hpp, Queue::submit): the
// plugin's queue must keep every operation whole and each thread's in
// order, also while the bound makes producers wait for room.
TEST_CASE("Threads enqueueing on one bounded queue at once lose and reorder nothing", "[bounded][threads]") {
  const char* label = GENERATE("cpu", "gpu");
  INFO(label);
  REQUIRE(kEnvReady);
  constexpr int kThreads = 4;
  constexpr uint32_t kOps = 1500;
  axl::Device dev = axl::Device::get(label, 0);
  axl::Queue q = dev.create_queue(16);
  axl::Buffer slots = dev.allocate(uint64_t(kThreads) * kOps * 4);
  axl::Buffer last = dev.allocate(kThreads * 4);  // each thread's latest value: order shows here
  const bool host = dev.info().is_host;
  axl::Kernel inc;
  axl::Buffer counts;
  if (host) {
    inc = dev.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
    counts = dev.allocate(64 * 4);
    q.fill(counts, 0, 4);
  }
  std::vector<std::vector<uint32_t>> values(kThreads, std::vector<uint32_t>(kOps));
  Tally t_calls;
  std::atomic<int> failures{0};
  std::vector<std::string> messages(kThreads);
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        start.arrive_and_wait();
        for (uint32_t i = 0; i < kOps; ++i) {
          uint32_t& v = values[t][i];
          v = (uint32_t(t) << 24) | i;
          q.copy_from_host(slots, &v, 4, (uint64_t(t) * kOps + i) * 4);
          q.copy_from_host(last, &v, 4, uint64_t(t) * 4);
          if (i % 8 == 0) q.enqueue_host_func(tally, &t_calls);
          if (host && i % 4 == 0)
            q.launch(inc, {1, 1, 1}, {64, 1, 1}, {axl::Arg::buffer(counts), axl::Arg::scalar(uint32_t(64))});
        }
      } catch (const std::exception& e) {
        messages[t] = e.what();
        failures.fetch_add(1);
      }
    });
  for (auto& th : threads) th.join();
  std::vector<uint32_t> got(size_t(kThreads) * kOps), got_last(kThreads), got_counts(64);
  q.copy_to_host(got.data(), slots, got.size() * 4);
  q.copy_to_host(got_last.data(), last, got_last.size() * 4);
  if (host) q.copy_to_host(got_counts.data(), counts, got_counts.size() * 4);
  q.synchronize();
  std::string why;
  for (int t = 0; t < kThreads; ++t)
    if (!messages[t].empty()) why += "thread " + std::to_string(t) + ": " + messages[t] + "\n";
  INFO(why);
  REQUIRE(failures.load() == 0);
  uint32_t bad = 0;
  for (int t = 0; t < kThreads; ++t)
    for (uint32_t i = 0; i < kOps; ++i) bad += got[size_t(t) * kOps + i] != values[t][i];
  CHECK(bad == 0);
  for (int t = 0; t < kThreads; ++t) CHECK(got_last[t] == values[t][kOps - 1]);
  CHECK(t_calls.calls == uint64_t(kThreads) * ((kOps + 7) / 8));
  if (host)
    for (uint32_t c : got_counts) CHECK(c == uint32_t(kThreads) * ((kOps + 3) / 4));
}
