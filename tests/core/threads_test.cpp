// Many threads at once (ARCHITECTURE.md section 2: every entry point is safe
// to call from several threads). 16 threads enqueue copies, fills, host
// callbacks and launches on shared and private queues while another thread
// enumerates devices and reads plugin records. Every result is checked
// exactly. Meant to pass under ThreadSanitizer.
#include <atomic>
#include <barrier>
#include <set>
#include <thread>

#include "test_util.hpp"

using namespace axltest;

namespace {

const std::string kKernels = AXL_TEST_CPU_KERNELS_PATH;
const std::string kUnavailable =
    std::string(AXL_TEST_PLUGIN_DIR) + "/libaxl_plugin_t_init_unavailable.so";

// Besides the cpu, this process loads t_init_unavailable (a backend whose
// backend_init fails), so a plugin record changes while threads read it.
// Set before main: discovery reads the environment on the first axl call.
// (The folder is removed at exit; the loaded plugin stays mapped.)
TempDir& plugin_dir() {
  static TempDir d;
  static const bool ready = [] {
    clear_axl_env();
    d.add(kUnavailable);
    setenv("AXL_PLUGIN_PATH", d.str().c_str(), 1);
    return true;
  }();
  (void)ready;
  return d;
}
const bool kEnvReady = (plugin_dir(), true);

struct Counter {
  uint64_t value = 0;  // touched only by host callbacks, read after synchronize
};

void bump(void* p) { ++static_cast<Counter*>(p)->value; }

// Keeps enumerating devices and reading plugin records until `stop`.
void observer(std::atomic<bool>& stop, std::atomic<uint64_t>& rounds, std::atomic<int>& errors) {
  do {
    try {
      uint32_t n = axl::Device::count();
      uint32_t ncpu = axl::Device::count("cpu");
      if (ncpu != 1) errors.fetch_add(1);
      for (uint32_t i = 0; i < n; ++i) {
        axl_device_t d = nullptr;
        if (axl_device_get(nullptr, i, &d) != AXL_SUCCESS) continue;  // e.g. an unavailable gpu
        axl_device_info info{};
        info.struct_size = sizeof info;
        if (axl_device_get_info(d, &info) != AXL_SUCCESS) errors.fetch_add(1);
        if (info.is_host && std::string(info.backend) != "cpu") errors.fetch_add(1);
        axl_device_release(d);
      }
      uint32_t np = 0;
      if (axl_plugin_count(&np) != AXL_SUCCESS || np == 0) errors.fetch_add(1);
      bool cpu_seen = false;
      for (uint32_t i = 0; i < np; ++i) {
        axl_plugin_record r{};
        r.struct_size = sizeof r;
        if (axl_plugin_get_record(i, &r) != AXL_SUCCESS) {
          errors.fetch_add(1);
          continue;
        }
        if (std::string(r.name) == "cpu" && r.state == AXL_PLUGIN_STATE_LOADED) cpu_seen = true;
        (void)strlen(r.path);
        (void)strlen(r.reason);
      }
      if (!cpu_seen) errors.fetch_add(1);
      size_t log = 0;
      if (axl_discovery_log(nullptr, 0, &log) != AXL_SUCCESS || log < 2) errors.fetch_add(1);
      rounds.fetch_add(1);
    } catch (...) {
      errors.fetch_add(1);
    }
  } while (!stop.load());
}

}  // namespace

// Runs first (declaration order): the backend must not have been touched.
TEST_CASE("plugin records stay readable while a backend's initialisation fails",
          "[threads]") {
  REQUIRE(kEnvReady);
  uint32_t np = 0;
  REQUIRE(axl_plugin_count(&np) == AXL_SUCCESS);
  int32_t index = -1;
  for (uint32_t i = 0; i < np; ++i) {
    axl_plugin_record r{};
    r.struct_size = sizeof r;
    REQUIRE(axl_plugin_get_record(i, &r) == AXL_SUCCESS);
    if (std::string(r.name) == "t_init_unavailable") {
      index = int32_t(i);
      // Only meaningful before the first device request (run this case first).
      REQUIRE(r.state == AXL_PLUGIN_STATE_LOADED);
      REQUIRE(std::string(r.reason).empty());
    }
  }
  REQUIRE(index >= 0);

  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::vector<std::set<std::string>> seen(4);
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&, t] {
      do {
        axl_plugin_record r{};
        r.struct_size = sizeof r;
        if (axl_plugin_get_record(uint32_t(index), &r) == AXL_SUCCESS) {
          seen[t].insert(std::string(r.reason) + "|" + std::to_string(r.state));
          reads.fetch_add(1);
        }
      } while (!stop.load());
    });
  while (reads.load() < 100) std::this_thread::yield();
  // Requesting its device runs backend_init, which fails.
  uint32_t ngpu = 0;
  REQUIRE(axl_device_count("gpu", &ngpu) == AXL_SUCCESS);
  REQUIRE(ngpu == 1);
  axl_device_t d = nullptr;
  CHECK(axl_device_get("gpu", 0, &d) == AXL_ERROR_BACKEND_UNAVAILABLE);
  int after = reads.load();
  while (reads.load() < after + 100) std::this_thread::yield();
  stop.store(true);
  for (auto& th : readers) th.join();

  axl_plugin_record r{};
  r.struct_size = sizeof r;
  REQUIRE(axl_plugin_get_record(uint32_t(index), &r) == AXL_SUCCESS);
  CHECK(r.state == AXL_PLUGIN_STATE_UNAVAILABLE);
  const std::string final_reason = r.reason;
  CHECK_THAT(final_reason, Catch::Contains("no device: fake driver"));
  // Every read saw either the record before or after, never a torn string.
  const std::string before = "|" + std::to_string(AXL_PLUGIN_STATE_LOADED);
  const std::string after_s = final_reason + "|" + std::to_string(AXL_PLUGIN_STATE_UNAVAILABLE);
  for (auto& set : seen)
    for (auto& v : set) {
      INFO(v);
      CHECK((v == before || v == after_s || v == final_reason + before));
    }
}

TEST_CASE("16 threads enqueue on shared and private queues while another enumerates",
          "[threads]") {
  constexpr int kThreads = 16;
  constexpr int kIters = 40;
  constexpr uint32_t kN = 1024;  // uint32 elements per thread buffer
  axl::Device dev = axl::Device::cpu();
  // Threads 0-7 use private queues; 8-15 share two queues (4 threads each).
  std::vector<axl::Queue> shared{dev.create_queue(), dev.create_queue()};
  std::vector<Counter> counters(kThreads);
  std::vector<std::vector<uint32_t>> results(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::string> messages(kThreads);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> rounds{0};
  std::atomic<int> observer_errors{0};
  std::thread obs(observer, std::ref(stop), std::ref(rounds), std::ref(observer_errors));
  // The observer is running before the workers start, so the two overlap.
  while (rounds.load() == 0) std::this_thread::yield();

  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        start.arrive_and_wait();
        // Every thread gets its own handle to the device and the kernel.
        axl::Device d = axl::Device::get("cpu", 0);
        axl::Queue q = t < 8 ? d.create_queue() : shared[(t - 8) / 4];
        axl::Kernel inc = d.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
        axl::Buffer buf = d.allocate(kN * sizeof(uint32_t));
        axl::Buffer other = d.allocate(kN * sizeof(uint32_t));
        std::vector<uint32_t> init(kN);
        for (uint32_t i = 0; i < kN; ++i) init[i] = i * 3 + static_cast<uint32_t>(t);
        q.copy_from_host(buf, init.data(), kN * sizeof(uint32_t));
        for (int it = 0; it < kIters; ++it) {
          q.launch(inc, {4, 1, 1}, {64, 1, 1}, {axl::Arg::buffer(buf), axl::Arg::scalar(kN)});
          q.enqueue_host_func(bump, &counters[t]);
          if (it % 8 == 0) {
            // A round trip through a second buffer and a fill of it.
            q.copy(other, buf);
            q.fill(buf, 0, 4);
            q.copy(buf, other);
          }
          if (it % 10 == 0) {
            // A short-lived queue of its own, chained both ways.
            axl::Queue side = d.create_queue();
            side.wait_for(q);
            side.launch(inc, {1, 1, 1}, {32, 1, 1},
                        {axl::Arg::buffer(buf), axl::Arg::scalar(kN)});
            q.wait_for(side);
          }
          if (it % 13 == 0) {
            axl::Event e = d.create_event();
            q.record(e);
            e.synchronize();
          }
        }
        std::vector<uint32_t> out(kN);
        q.copy_to_host(out.data(), buf, kN * sizeof(uint32_t));
        q.synchronize();
        results[t] = std::move(out);
      } catch (const std::exception& e) {
        messages[t] = e.what();
        failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  stop.store(true);
  obs.join();

  std::string all;
  for (int t = 0; t < kThreads; ++t)
    if (!messages[t].empty()) all += "thread " + std::to_string(t) + ": " + messages[t] + "\n";
  INFO(all);
  REQUIRE(failures.load() == 0);
  CHECK(observer_errors.load() == 0);
  CHECK(rounds.load() > 1);
  // kIters launches plus one per side queue (it = 0, 10, 20, 30).
  const uint32_t increments = kIters + 4;
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(counters[t].value == kIters);
    REQUIRE(results[t].size() == kN);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < kN; ++i)
      bad += results[t][i] != i * 3 + static_cast<uint32_t>(t) + increments;
    CHECK(bad == 0);
  }
}

TEST_CASE("threads create and release objects concurrently", "[threads]") {
  constexpr int kThreads = 16;
  axl::Device dev = axl::Device::cpu();
  axl::Queue q = dev.create_queue();  // shared by all, for copies
  std::atomic<int> failures{0};
  std::vector<std::string> messages(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int it = 0; it < 25; ++it) {
          axl::Buffer b = dev.allocate(64 + 8 * t + it);
          axl::Buffer v = b.view(8, 32);
          axl::Flag f = dev.create_flag();
          axl::Event e = dev.create_event(it % 2 == 0);
          uint64_t pattern = (uint64_t(t) << 32) | uint64_t(it);
          q.copy_from_host(v, &pattern, 8, 8);
          q.write_flag(f, pattern);
          uint64_t back = 0;
          q.copy_to_host(&back, b, 8, 16);
          q.record(e);
          e.synchronize();
          if (back != pattern || f.load() != pattern) throw std::runtime_error("wrong data");
          if (!kKernels.empty() && it % 5 == 0) {
            axl::Module m = dev.load_module(kKernels);
            axl::Kernel k = m.kernel("increment_u32");
            uint32_t n = 2;
            axl::Buffer u = dev.allocate(8);
            q.fill(u, 41, 4);
            q.launch(k, {1, 1, 1}, {2, 1, 1}, {axl::Arg::buffer(u), axl::Arg::scalar(n)});
            uint32_t r[2] = {0, 0};
            q.copy_to_host(r, u, 8);
            q.synchronize();
            if (r[0] != 42 || r[1] != 42) throw std::runtime_error("wrong kernel result");
          }
        }
      } catch (const std::exception& e) {
        messages[t] = e.what();
        failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::string all;
  for (int t = 0; t < kThreads; ++t)
    if (!messages[t].empty()) all += "thread " + std::to_string(t) + ": " + messages[t] + "\n";
  INFO(all);
  CHECK(failures.load() == 0);
  CHECK_FALSE(kKernels.empty());
}

TEST_CASE("concurrent launch traces do not lose or reorder a queue's entries", "[threads]") {
  axl::Device dev = axl::Device::cpu();
  constexpr int kThreads = 8, kOps = 50;
  std::vector<axl::Queue> queues;
  std::vector<axl::Buffer> bufs;
  for (int t = 0; t < kThreads; ++t) {
    queues.push_back(dev.create_queue());
    bufs.push_back(dev.allocate(4096));
  }
  axl::begin_launch_trace(true);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      // Fill sizes encode (thread, op) so the entries can be attributed.
      for (int i = 0; i < kOps; ++i) queues[t].fill(bufs[t], uint32_t(t), 1, 0, 1 + i);
      queues[t].synchronize();
    });
  for (auto& th : threads) th.join();
  auto trace = axl::take_launch_trace();
  REQUIRE(trace.size() == size_t(kThreads * kOps));
  std::map<uint32_t, std::vector<uint64_t>> per_stream;
  std::map<uint32_t, std::set<uint32_t>> stream_threads;  // fill values = thread ids
  for (size_t i = 0; i < trace.size(); ++i) {
    const auto& e = trace[i].raw;
    CHECK(e.sequence == i);
    CHECK(e.stream_index < uint32_t(kThreads));
    per_stream[e.stream_index].push_back(e.memset_byte_size);
    stream_threads[e.stream_index].insert(e.memset_value);
  }
  CHECK(per_stream.size() == size_t(kThreads));
  std::set<uint32_t> owners;
  for (auto& [s, ts] : stream_threads) {
    CHECK(ts.size() == 1);  // one queue, one thread
    owners.insert(*ts.begin());
  }
  CHECK(owners.size() == size_t(kThreads));
  for (auto& [s, sizes] : per_stream) {
    INFO("stream " << s);
    REQUIRE(sizes.size() == size_t(kOps));
    for (int i = 0; i < kOps; ++i) CHECK(sizes[i] == uint64_t(1 + i));
  }
}
