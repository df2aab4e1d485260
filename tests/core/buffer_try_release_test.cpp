// axl_buffer_try_release (application ABI 1.6): drops a reference at once
// only where the release runs nothing that could wait (a binding holding
// Python's GIL calls it first), and otherwise drops nothing, so the caller
// still owns the reference it then releases the plain way. Each case checks
// both halves: the handle is gone after SUCCESS and still live (and its
// bytes intact) after NOT_READY. The race case runs it against plain
// releases of the same buffer (run it under ThreadSanitizer).
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "test_util.hpp"

using namespace axltest;

namespace {

// One virtual accelerator (label "gpu") beside the cpu, set before the
// first axl call (discovery reads it once).
const bool kEnvReady = (clear_axl_env(), setenv("AXL_VIRTUAL_DEVICES", "1", 1), true);

constexpr uint64_t kBytes = 256;

axl_device_t device(const char* label) {
  REQUIRE(kEnvReady);
  axl_device_t d = nullptr;
  REQUIRE(axl_device_get(label, 0, &d) == AXL_SUCCESS);
  return d;
}

bool live(axl_buffer_t b) {
  uint64_t n = 0;
  return axl_buffer_size(b, &n) == AXL_SUCCESS;
}

}  // namespace

TEST_CASE("the last reference of an unused host allocation goes at once", "[try_release]") {
  axl_device_t cpu = device("cpu");
  axl_buffer_t b = nullptr;
  REQUIRE(axl_buffer_create(cpu, kBytes, AXL_BUFFER_FLAG_TRACKED, &b) == AXL_SUCCESS);
  REQUIRE(axl_buffer_retain(b) == AXL_SUCCESS);
  // Two references: one dropped, the other keeps the buffer.
  REQUIRE(axl_buffer_try_release(b) == AXL_SUCCESS);
  CHECK(live(b));
  // The last: freed now, the handle reads as released.
  REQUIRE(axl_buffer_try_release(b) == AXL_SUCCESS);
  uint64_t n = 0;
  require_status(axl_buffer_size(b, &n), AXL_ERROR_INVALID_HANDLE, {"already released"});
  require_status(axl_buffer_try_release(b), AXL_ERROR_INVALID_HANDLE, {"already released"});
  require_status(axl_buffer_try_release(nullptr), AXL_ERROR_INVALID_HANDLE, {});
  axl_device_release(cpu);
}

TEST_CASE("a buffer a queue used is left to the plain release", "[try_release]") {
  axl_device_t cpu = device("cpu");
  axl_queue_t q = nullptr;
  REQUIRE(axl_queue_create(cpu, 0, &q) == AXL_SUCCESS);
  axl_buffer_t b = nullptr;
  REQUIRE(axl_buffer_create(cpu, kBytes, 0, &b) == AXL_SUCCESS);
  std::vector<unsigned char> src(kBytes, 0x5a);
  REQUIRE(axl_queue_copy_from_host(q, b, 0, src.data(), kBytes) == AXL_SUCCESS);
  REQUIRE(axl_queue_synchronize(q) == AXL_SUCCESS);
  // Even with the queue idle: its last release records an event on it.
  CHECK(axl_buffer_try_release(b) == AXL_ERROR_NOT_READY);
  REQUIRE(live(b));
  void* p = nullptr;
  REQUIRE(axl_buffer_host_pointer(b, &p) == AXL_SUCCESS);
  CHECK(memcmp(p, src.data(), kBytes) == 0);
  // A second reference still goes at once: it is not the last.
  REQUIRE(axl_buffer_retain(b) == AXL_SUCCESS);
  REQUIRE(axl_buffer_try_release(b) == AXL_SUCCESS);
  CHECK(live(b));
  REQUIRE(axl_buffer_release(b) == AXL_SUCCESS);
  CHECK_FALSE(live(b));
  axl_queue_release(q);
  axl_device_release(cpu);
}

TEST_CASE("views, external memory, stamped buffers and accelerator memory are left to the plain release",
          "[try_release]") {
  axl_device_t cpu = device("cpu");
  SECTION("the last reference of a view") {
    axl_buffer_t base = nullptr, view = nullptr;
    REQUIRE(axl_buffer_create(cpu, kBytes, 0, &base) == AXL_SUCCESS);
    REQUIRE(axl_buffer_view(base, 64, 64, &view) == AXL_SUCCESS);
    REQUIRE(axl_buffer_release(base) == AXL_SUCCESS);
    CHECK(axl_buffer_try_release(view) == AXL_ERROR_NOT_READY);
    CHECK(live(view));
    REQUIRE(axl_buffer_release(view) == AXL_SUCCESS);
  }
  SECTION("external memory: its callback runs only from the plain release") {
    static std::vector<unsigned char> bytes(kBytes);
    static std::atomic<int> released{0};
    released = 0;
    axl_buffer_t b = nullptr;
    const auto addr = reinterpret_cast<uint64_t>(bytes.data());
    REQUIRE(axl_buffer_create_external(cpu, addr, bytes.data(), kBytes, 0, [](void*) { ++released; }, nullptr, &b) ==
            AXL_SUCCESS);
    CHECK(axl_buffer_try_release(b) == AXL_ERROR_NOT_READY);
    CHECK(released == 0);
    CHECK(live(b));
    REQUIRE(axl_buffer_release(b) == AXL_SUCCESS);
    CHECK(released == 1);
  }
  SECTION("a buffer with a completion stamped on it") {
    axl_queue_t q = nullptr;
    REQUIRE(axl_queue_create(cpu, 0, &q) == AXL_SUCCESS);
    axl_completion_t c = nullptr;
    REQUIRE(axl_completion_record(q, &c) == AXL_SUCCESS);
    axl_buffer_t b = nullptr;
    REQUIRE(axl_buffer_create(cpu, kBytes, AXL_BUFFER_FLAG_TRACKED, &b) == AXL_SUCCESS);
    REQUIRE(axl_buffer_stamp(b, c, AXL_ACCESS_WRITE) == AXL_SUCCESS);
    CHECK(axl_buffer_try_release(b) == AXL_ERROR_NOT_READY);
    CHECK(live(b));
    REQUIRE(axl_buffer_release(b) == AXL_SUCCESS);
    axl_completion_release(c);
    axl_queue_release(q);
  }
  SECTION("memory of an accelerator (the virtual device)") {
    axl_device_t gpu = device("gpu");
    axl_buffer_t b = nullptr;
    REQUIRE(axl_buffer_create(gpu, kBytes, 0, &b) == AXL_SUCCESS);
    CHECK(axl_buffer_try_release(b) == AXL_ERROR_NOT_READY);
    CHECK(live(b));
    REQUIRE(axl_buffer_release(b) == AXL_SUCCESS);
    axl_device_release(gpu);
  }
  axl_device_release(cpu);
}

TEST_CASE("axl::Buffer::try_release empties the handle only when it dropped the reference", "[try_release]") {
  axl::Device cpu = axl::Device::get("cpu", 0);
  axl::Buffer fresh = cpu.allocate(kBytes, 0);
  CHECK(fresh.try_release());
  CHECK_FALSE(fresh);
  CHECK(fresh.try_release());  // an empty handle has nothing to drop

  axl::Queue q = cpu.create_queue();
  axl::Buffer used = cpu.allocate(kBytes, 0);
  std::vector<unsigned char> src(kBytes, 1);
  q.copy_from_host(used, src.data(), kBytes);
  q.synchronize();
  CHECK_FALSE(used.try_release());
  CHECK(used);  // still owned: the destructor releases it
}

TEST_CASE("threads: try_release races plain releases of the same buffer", "[try_release][threads]") {
  axl_device_t cpu = device("cpu");
  // Each round: one buffer, two references, one dropped by try_release and
  // one by axl_buffer_release at the same time. Whichever comes last frees
  // it (try_release only if it is the last and may); nothing is freed twice
  // or leaked (LeakSanitizer), and a NOT_READY keeps the reference.
  for (int round = 0; round < 2000; ++round) {
    axl_buffer_t b = nullptr;
    REQUIRE(axl_buffer_create(cpu, 64, 0, &b) == AXL_SUCCESS);
    REQUIRE(axl_buffer_retain(b) == AXL_SUCCESS);
    std::atomic<bool> go{false};
    axl_status tried = AXL_SUCCESS;
    std::thread t([&] {
      while (!go.load()) {
      }
      tried = axl_buffer_try_release(b);
    });
    go = true;
    REQUIRE(axl_buffer_release(b) == AXL_SUCCESS);
    t.join();
    REQUIRE(tried == AXL_SUCCESS);  // unused host memory: never refused
    REQUIRE_FALSE(live(b));
  }
  axl_device_release(cpu);
}
