// A small axl program that cuda_fake_device_test runs, in a fresh process
// per case, against the cuda plugin and the fake driver with devices
// (tests/cuda/fake_cuda_device.c). `fake_device_client MODE` does one
// scenario and prints "ok" (exit 0), or the error (exit 1); the test then
// reads the fake's call log (FAKE_CUDA_LOG) and the process's stderr.
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "axl/axl.h"
#include "axl/axl.hpp"

namespace {

axl::Device gpu() { return axl::Device::get("gpu", 0); }

// A round trip through `b`: the values come back.
bool round_trip(const axl::Queue& q, const axl::Buffer& b, size_t n, uint32_t seed) {
  std::vector<uint32_t> in(n), out(n, 0);
  for (size_t i = 0; i < n; ++i) in[i] = seed + static_cast<uint32_t>(i);
  q.copy_from_host(b, in.data(), n * 4);
  q.copy_to_host(out.data(), b, n * 4);
  q.synchronize();
  return in == out;
}

// Timed events recorded on a queue, then waited on, queried and timed from
// a thread that never made a context current.
int events_from_other_thread() {
  axl::Device dev = gpu();
  axl::Queue q = dev.create_queue();
  axl::Event start = dev.create_event(true), end = dev.create_event(true);
  axl::Buffer b = dev.allocate(1 << 16);
  q.record(start);
  q.launch(dev.test_kernel(AXL_TEST_KERNEL_FILL_U32), {4, 1, 1}, {64, 1, 1},
           {axl::Arg::buffer(b), axl::Arg::scalar(uint32_t{1 << 14}), axl::Arg::scalar(uint32_t{7})});
  q.record(end);
  std::string error;
  std::thread t([&] {
    try {
      end.synchronize();
      if (!end.is_ready() || !start.is_ready()) error = "an event is not ready after synchronize";
      if (start.elapsed_ms(end) < 0) error = "negative elapsed time";
    } catch (const axl::Error& e) {
      error = std::string(e.status_name()) + ": " + e.what();
    }
  });
  t.join();
  if (!error.empty()) {
    std::printf("error: %s\n", error.c_str());
    return 1;
  }
  return 0;
}

// Allocations and frees of a few sizes, with a round trip through each.
int allocations() {
  axl::Device dev = gpu();
  axl::Queue q = dev.create_queue();
  for (int round = 0; round < 2; ++round) {
    std::vector<axl::Buffer> bufs;
    for (size_t n : {size_t{16}, size_t{4096}, size_t{100000}}) {
      bufs.push_back(dev.allocate(n * 4));
      if (!round_trip(q, bufs.back(), n, static_cast<uint32_t>(n))) {
        std::printf("error: round trip of %zu words\n", n);
        return 1;
      }
    }
  }
  return 0;
}

// With 1 MiB of device memory (FAKE_CUDA_MEMORY_BYTES): 600 KiB and 300 KiB
// allocated, the 600 KiB freed (axl's pool keeps it), then 700 KiB fits
// only once the pool returned what it keeps.
int out_of_memory_trims() {
  axl::Device dev = gpu();
  axl::Queue q = dev.create_queue();
  axl::Buffer keep = dev.allocate(300 << 10);
  {
    axl::Buffer big = dev.allocate(600 << 10);
  }
  axl::Buffer after = dev.allocate(700 << 10);
  if (!round_trip(q, after, (700 << 10) / 4, 3)) {
    std::printf("error: round trip after the trim\n");
    return 1;
  }
  return 0;
}

// Test kernels launched with 64 KiB of dynamic shared memory (twice: one
// opt-in), then with more than the device allows.
int dynamic_shared_memory() {
  axl::Device dev = gpu();
  axl::Queue q = dev.create_queue();
  axl::Buffer b = dev.allocate(1024 * 4);
  axl::Kernel fill = dev.test_kernel(AXL_TEST_KERNEL_FILL_U32);
  for (uint64_t shared : {uint64_t{1024}, uint64_t{64} << 10, uint64_t{64} << 10, uint64_t{48} << 10})
    q.launch(fill, {2, 1, 1}, {32, 1, 1}, {axl::Arg::buffer(b), axl::Arg::scalar(uint32_t{1024}),
                                           axl::Arg::scalar(uint32_t{5})},
             shared);
  std::vector<uint32_t> out(1024);
  q.copy_to_host(out.data(), b, out.size() * 4);
  q.synchronize();
  for (uint32_t v : out)
    if (v != 5) {
      std::printf("error: the launches did not run\n");
      return 1;
    }
  try {
    q.launch(fill, {1, 1, 1}, {32, 1, 1},
             {axl::Arg::buffer(b), axl::Arg::scalar(uint32_t{1}), axl::Arg::scalar(uint32_t{5})}, 300000);
    std::printf("error: a launch above the device's limit was accepted\n");
    return 1;
  } catch (const axl::Error& e) {
    std::printf("too much: %s: %s\n", e.status_name(), e.what());
  }
  return 0;
}

// The driver refuses stream-ordered allocation after the first one
// (FAKE_CUDA_ASYNC_ALLOC_OK=1): later allocations fall back, and every
// buffer, the pool one included, works and is freed the right way.
int async_alloc_fallback() {
  axl::Device dev = gpu();
  axl::Queue q = dev.create_queue();
  std::vector<axl::Buffer> bufs;
  for (int i = 0; i < 3; ++i) {
    bufs.push_back(dev.allocate(4096));
    if (!round_trip(q, bufs.back(), 1024, static_cast<uint32_t>(i))) {
      std::printf("error: round trip through buffer %d\n", i);
      return 1;
    }
  }
  bufs.clear();
  axl::Buffer again = dev.allocate(4096);
  return round_trip(q, again, 1024, 9) ? 0 : 1;
}

void query_memory(void* dev) {
  uint64_t free_b = 0, total = 0;
  axl_device_get_memory_info(static_cast<axl_device_t>(dev), &free_b, &total);
}

// A host function that calls into the driver (CUDA forbids it): the fake
// must catch it, the process then exits with 86.
int host_fn_calls_driver() {
  axl::Device dev = gpu();
  axl::Queue q = dev.create_queue();
  q.enqueue_host_func(query_memory, dev.get());
  q.synchronize();
  return 0;
}

void slow(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

// Work queued, the buffer it uses released (so its free waits on the
// core's reaper), then exit without synchronising anything: the core's
// exit drain must run before the driver's own exit teardown.
int exit_with_pending_release() {
  axl::Device dev = gpu();
  axl_queue_t q = nullptr;
  if (axl_queue_create(dev.get(), 0, &q) != AXL_SUCCESS) return 1;
  axl_buffer_t b = nullptr;
  if (axl_buffer_create(dev.get(), 1 << 16, 0, &b) != AXL_SUCCESS) return 1;
  if (axl_queue_enqueue_host_func(q, slow, nullptr) != AXL_SUCCESS) return 1;
  // A launch, not a copy from pageable memory: that would wait for the
  // host function (as the driver does) and leave nothing pending.
  axl_kernel_t fill = nullptr;
  if (axl_device_get_test_kernel(dev.get(), AXL_TEST_KERNEL_FILL_U32, &fill) != AXL_SUCCESS) return 1;
  const uint32_t n = 64, value = 1, grid[3] = {1, 1, 1}, block[3] = {64, 1, 1};
  const axl_launch_arg args[3] = {{AXL_KERNEL_ARG_BUFFER, 0, b, nullptr},
                                  {AXL_KERNEL_ARG_SCALAR, 4, nullptr, &n},
                                  {AXL_KERNEL_ARG_SCALAR, 4, nullptr, &value}};
  if (axl_queue_launch(q, fill, grid, block, 0, args, 3) != AXL_SUCCESS) return 1;
  if (axl_buffer_release(b) != AXL_SUCCESS) return 1;
  std::printf("ok\n");
  std::fflush(stdout);
  std::exit(0);  // the queue is never released or synchronised
}

// The fake's count of live VMM handles, reservations and mappings
// (fake_cuda_live_vmm), from the copy of the fake the plugin loaded.
int fake_live_vmm() {
  void* lib = dlopen(std::getenv("AXL_CUDA_DRIVER_PATH"), RTLD_NOW | RTLD_NOLOAD);
  auto* fn = lib ? reinterpret_cast<int (*)()>(dlsym(lib, "fake_cuda_live_vmm")) : nullptr;
  return fn ? fn() : -1;
}

// Every device the fake has (FAKE_CUDA_DEVICES), with its multicast support.
std::vector<axl::Device> gpus() {
  std::vector<axl::Device> out;
  for (uint32_t i = 0; i < axl::Device::count("gpu"); ++i) {
    out.push_back(axl::Device::get("gpu", i));
    std::printf("device %u multicast=%d\n", i, out.back().multicast_supported() ? 1 : 0);
  }
  return out;
}

// A group over every device (MC_BYTES bytes each, default 1000): a copy
// into member 0's multicast view and a fill through the last member's
// reach every member's unicast memory; nothing is left once released.
int multicast_broadcast() {
  std::vector<axl::Device> devs = gpus();
  const char* env = std::getenv("MC_BYTES");
  const uint64_t bytes = env ? std::strtoull(env, nullptr, 0) : 1000;
  {
    axl::Multicast g = axl::Multicast::create(devs, bytes);
    const uint64_t reserved = g.reserved_bytes();
    std::printf("reserved=%llu live=%d\n", static_cast<unsigned long long>(reserved), fake_live_vmm());
    std::vector<axl::Queue> queues;
    for (uint32_t i = 0; i < devs.size(); ++i) {
      queues.push_back(devs[i].create_queue());
      queues.back().fill(g.unicast(i), 0, 1);
      queues.back().synchronize();
    }
    std::vector<uint8_t> want(reserved, 0), data(300);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
    queues[0].copy_from_host(g.multicast(0), data.data(), data.size(), 17);
    std::memcpy(want.data() + 17, data.data(), data.size());
    queues[0].synchronize();
    const size_t last = devs.size() - 1;
    queues[last].fill(g.multicast(static_cast<uint32_t>(last)), 0xC0DE, 2, 512, 64);
    for (size_t i = 512; i < 576; i += 2) want[i] = 0xDE, want[i + 1] = 0xC0;
    queues[last].synchronize();
    for (uint32_t i = 0; i < devs.size(); ++i) {
      std::vector<uint8_t> got(reserved, 1);
      queues[i].copy_to_host(got.data(), g.unicast(i), reserved);
      queues[i].synchronize();
      if (got != want) {
        std::printf("error: member %u's unicast memory misses a multicast write\n", i);
        return 1;
      }
    }
    std::printf("broadcast reached %zu members\n", devs.size());
  }
  // The buffers over the group hold it until the core's reaper sees their
  // queues past their last use, which synchronize does not wait for: wait
  // (bounded) for the group's memory to go, then report what is left.
  const auto settled = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fake_live_vmm() != 0 && std::chrono::steady_clock::now() < settled) {
    for (auto& d : devs) d.synchronize();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf("live after release=%d\n", fake_live_vmm());
  return 0;
}

// A group that must fail (a fault injected, or no support): its error, and
// what it left behind.
int multicast_refused() {
  std::vector<axl::Device> devs = gpus();
  try {
    axl::Multicast g = axl::Multicast::create(devs, 1000);
    std::printf("created\n");
    return 3;
  } catch (const axl::Error& e) {
    std::printf("refused: %s: %s\n", e.status_name(), e.what());
  }
  std::printf("live after failure=%d\n", fake_live_vmm());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string mode = argv[1];
  try {
    int rc = 2;
    if (mode == "events") rc = events_from_other_thread();
    else if (mode == "alloc") rc = allocations();
    else if (mode == "oom") rc = out_of_memory_trims();
    else if (mode == "shared") rc = dynamic_shared_memory();
    else if (mode == "fallback") rc = async_alloc_fallback();
    else if (mode == "exit") rc = exit_with_pending_release();
    else if (mode == "hostfn") rc = host_fn_calls_driver();
    else if (mode == "multicast") rc = multicast_broadcast();
    else if (mode == "multicast_refused") rc = multicast_refused();
    if (rc == 0) std::printf("ok\n");
    return rc;
  } catch (const axl::Error& e) {
    std::printf("error: %s: %s\n", e.status_name(), e.what());
    return 1;
  }
}
