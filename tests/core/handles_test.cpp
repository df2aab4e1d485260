// Handles are table values, not addresses (core/src/handle.cpp): a released
// handle reads as "already released" even after the memory of its object has
// been reused by a new object, and releasing it again never touches that new
// object. With handles that were addresses, the new objects below reuse the
// released one's memory, so the stale handle would name a live object of the
// same kind: every "already released" check here fails, and the double
// release destroys an unrelated buffer. The threaded case races creation and
// release against lookups of stale handles (run it under ThreadSanitizer).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "test_util.hpp"

using namespace axltest;

namespace {

const std::string kKernels = AXL_TEST_CPU_KERNELS_PATH;

const int kEnvReady = [] {
  clear_axl_env();
  setenv("AXL_PLUGINS", AXL_CPU_PLUGIN_PATH, 1);
  return 0;
}();

// Enough new objects of one kind that one of them lands where the released
// one was (malloc hands back a just-freed block of the same size first).
constexpr int kReuse = 64;

struct Cpu {
  axl_device_t dev = nullptr;
  axl_queue_t q = nullptr;
  Cpu() {
    REQUIRE(kEnvReady == 0);
    REQUIRE(axl_device_get("cpu", 0, &dev) == AXL_SUCCESS);
    REQUIRE(axl_queue_create(dev, 0, &q) == AXL_SUCCESS);
  }
  ~Cpu() {
    axl_queue_release(q);
    axl_device_release(dev);
  }
};

uintptr_t value(const void* h) { return reinterpret_cast<uintptr_t>(h); }

// No handle value is ever issued twice: with address handles one of the new
// objects gets the released one's address (this is what makes the rest of
// each test meaningful under the old scheme).
template <typename H>
void require_fresh(H stale, const std::vector<H>& fresh) {
  for (H h : fresh) {
    INFO("stale 0x" << std::hex << value(stale) << ", new 0x" << value(h));
    REQUIRE(h != stale);
  }
}

// A buffer of `n` bytes filled with `tag`, host-visible on the cpu device.
axl_buffer_t tagged_buffer(axl_device_t dev, uint64_t n, uint8_t tag) {
  axl_buffer_t b = nullptr;
  REQUIRE(axl_buffer_create(dev, n, 0, &b) == AXL_SUCCESS);
  void* p = nullptr;
  REQUIRE(axl_buffer_host_pointer(b, &p) == AXL_SUCCESS);
  memset(p, tag, n);
  return b;
}

// True if b is live, n bytes long and every byte is `tag`.
bool intact(axl_buffer_t b, uint64_t n, uint8_t tag) {
  uint64_t size = 0;
  void* p = nullptr;
  if (axl_buffer_size(b, &size) != AXL_SUCCESS || size != n) return false;
  if (axl_buffer_host_pointer(b, &p) != AXL_SUCCESS) return false;
  const auto* bytes = static_cast<const uint8_t*>(p);
  for (uint64_t i = 0; i < n; ++i)
    if (bytes[i] != tag) return false;
  return true;
}

}  // namespace

TEST_CASE("a released buffer stays released after its memory is reused", "[handles]") {
  Cpu c;
  constexpr uint64_t kSize = 256;
  axl_buffer_t stale = tagged_buffer(c.dev, kSize, 0xee);
  REQUIRE(axl_buffer_release(stale) == AXL_SUCCESS);

  std::vector<axl_buffer_t> fresh;
  for (int i = 0; i < kReuse; ++i) fresh.push_back(tagged_buffer(c.dev, kSize, uint8_t(i)));
  require_fresh(stale, fresh);

  uint64_t n = 0;
  void* p = nullptr;
  require_status(axl_buffer_size(stale, &n), AXL_ERROR_INVALID_HANDLE, {"buffer handle 0x", "was already released"});
  require_status(axl_buffer_host_pointer(stale, &p), AXL_ERROR_INVALID_HANDLE, {"already released"});
  uint8_t src[kSize] = {};
  require_status(axl_queue_copy_from_host(c.q, stale, 0, src, kSize), AXL_ERROR_INVALID_HANDLE,
                 {"already released"});
  require_status(axl_queue_copy_buffer(c.q, fresh[0], 0, stale, 0, kSize), AXL_ERROR_INVALID_HANDLE,
                 {"source buffer handle", "already released"});
  axl_buffer_t view = nullptr;
  require_status(axl_buffer_view(stale, 0, 16, &view), AXL_ERROR_INVALID_HANDLE, {"already released"});
  CHECK(view == nullptr);
  require_status(axl_buffer_retain(stale), AXL_ERROR_INVALID_HANDLE, {"already released"});
  // The double release: an error, and no new buffer is destroyed by it.
  require_status(axl_buffer_release(stale), AXL_ERROR_INVALID_HANDLE, {"already released"});
  require_status(axl_buffer_release(stale), AXL_ERROR_INVALID_HANDLE, {"already released"});
  REQUIRE(axl_queue_synchronize(c.q) == AXL_SUCCESS);

  for (int i = 0; i < kReuse; ++i) {
    INFO("new buffer " << i);
    CHECK(intact(fresh[i], kSize, uint8_t(i)));
  }
  for (axl_buffer_t b : fresh) REQUIRE(axl_buffer_release(b) == AXL_SUCCESS);
  // Released later, the new ones read as released too.
  for (axl_buffer_t b : fresh) require_status(axl_buffer_size(b, &n), AXL_ERROR_INVALID_HANDLE, {"already released"});
}

TEST_CASE("a view keeps its allocation's handle live until the view goes", "[handles]") {
  Cpu c;
  axl_buffer_t base = tagged_buffer(c.dev, 128, 7);
  axl_buffer_t view = nullptr;
  REQUIRE(axl_buffer_view(base, 64, 32, &view) == AXL_SUCCESS);
  // The application's reference goes; the view's keeps the allocation (and
  // so its handle) alive: handles are released with their last reference.
  REQUIRE(axl_buffer_release(base) == AXL_SUCCESS);
  uint64_t n = 0;
  REQUIRE(axl_buffer_size(view, &n) == AXL_SUCCESS);
  CHECK(n == 32);
  CHECK(intact(view, 32, 7));
  REQUIRE(axl_buffer_release(view) == AXL_SUCCESS);
  require_status(axl_buffer_size(view, &n), AXL_ERROR_INVALID_HANDLE, {"already released"});
  require_status(axl_buffer_size(base, &n), AXL_ERROR_INVALID_HANDLE, {"already released"});
}

TEST_CASE("released queues, events, flags and completions stay released", "[handles]") {
  Cpu c;
  SECTION("queue") {
    axl_queue_t stale = nullptr;
    REQUIRE(axl_queue_create(c.dev, 0, &stale) == AXL_SUCCESS);
    REQUIRE(axl_queue_release(stale) == AXL_SUCCESS);
    std::vector<axl_queue_t> fresh(8);  // each owns a worker thread: few
    for (auto& q : fresh) REQUIRE(axl_queue_create(c.dev, 0, &q) == AXL_SUCCESS);
    require_fresh(stale, fresh);
    require_status(axl_queue_synchronize(stale), AXL_ERROR_INVALID_HANDLE, {"queue handle 0x", "already released"});
    axl_device_t d = nullptr;
    require_status(axl_queue_device(stale, &d), AXL_ERROR_INVALID_HANDLE, {"already released"});
    require_status(axl_queue_wait_queue(fresh[0], stale), AXL_ERROR_INVALID_HANDLE,
                   {"other queue handle", "already released"});
    require_status(axl_queue_release(stale), AXL_ERROR_INVALID_HANDLE, {"already released"});
    for (auto q : fresh) {
      CHECK(axl_queue_synchronize(q) == AXL_SUCCESS);
      REQUIRE(axl_queue_release(q) == AXL_SUCCESS);
    }
  }
  SECTION("event") {
    axl_event_t stale = nullptr;
    REQUIRE(axl_event_create(c.dev, 0, &stale) == AXL_SUCCESS);
    REQUIRE(axl_event_release(stale) == AXL_SUCCESS);
    std::vector<axl_event_t> fresh(kReuse);
    for (auto& e : fresh) REQUIRE(axl_event_create(c.dev, 0, &e) == AXL_SUCCESS);
    require_fresh(stale, fresh);
    require_status(axl_event_query(stale), AXL_ERROR_INVALID_HANDLE, {"event handle 0x", "already released"});
    require_status(axl_queue_record_event(c.q, stale), AXL_ERROR_INVALID_HANDLE, {"already released"});
    require_status(axl_event_release(stale), AXL_ERROR_INVALID_HANDLE, {"already released"});
    for (auto e : fresh) {
      CHECK(axl_queue_record_event(c.q, e) == AXL_SUCCESS);
      CHECK(axl_event_synchronize(e) == AXL_SUCCESS);
      REQUIRE(axl_event_release(e) == AXL_SUCCESS);
    }
  }
  SECTION("flag") {
    axl_flag_t stale = nullptr;
    REQUIRE(axl_flag_create(c.dev, &stale) == AXL_SUCCESS);
    REQUIRE(axl_flag_release(stale) == AXL_SUCCESS);
    std::vector<axl_flag_t> fresh(kReuse);
    for (auto& f : fresh) REQUIRE(axl_flag_create(c.dev, &f) == AXL_SUCCESS);
    require_fresh(stale, fresh);
    require_status(axl_flag_signal(stale, 1), AXL_ERROR_INVALID_HANDLE, {"flag handle 0x", "already released"});
    require_status(axl_flag_release(stale), AXL_ERROR_INVALID_HANDLE, {"already released"});
    for (auto f : fresh) {
      uint64_t v = 1;
      CHECK(axl_flag_load(f, &v) == AXL_SUCCESS);
      CHECK(v == 0);
      REQUIRE(axl_flag_release(f) == AXL_SUCCESS);
    }
  }
  SECTION("completion") {
    axl_completion_t stale = nullptr;
    REQUIRE(axl_completion_create_poisoned("first", &stale) == AXL_SUCCESS);
    REQUIRE(axl_completion_release(stale) == AXL_SUCCESS);
    std::vector<axl_completion_t> fresh(kReuse);
    for (auto& x : fresh) REQUIRE(axl_completion_record(c.q, &x) == AXL_SUCCESS);
    require_fresh(stale, fresh);
    require_status(axl_completion_wait(stale), AXL_ERROR_INVALID_HANDLE, {"completion handle 0x", "already released"});
    require_status(axl_completion_release(stale), AXL_ERROR_INVALID_HANDLE, {"already released"});
    for (auto x : fresh) {
      CHECK(axl_completion_wait(x) == AXL_SUCCESS);  // not the poisoned one
      REQUIRE(axl_completion_release(x) == AXL_SUCCESS);
    }
  }
}

TEST_CASE("released kernels and modules stay released", "[handles]") {
  Cpu c;
  axl_kernel_t stale = nullptr;
  REQUIRE(axl_device_get_test_kernel(c.dev, AXL_TEST_KERNEL_INCREMENT_U32, &stale) == AXL_SUCCESS);
  const std::string name = axl_kernel_name(stale);
  REQUIRE(!name.empty());
  REQUIRE(axl_kernel_release(stale) == AXL_SUCCESS);
  std::vector<axl_kernel_t> fresh(kReuse);
  for (auto& k : fresh) REQUIRE(axl_device_get_test_kernel(c.dev, AXL_TEST_KERNEL_INCREMENT_U32, &k) == AXL_SUCCESS);
  require_fresh(stale, fresh);
  CHECK(std::string(axl_kernel_name(stale)).empty());  // the ABI's answer to an invalid kernel
  const uint32_t one[3] = {1, 1, 1};
  require_status(axl_queue_launch(c.q, stale, one, one, 0, nullptr, 0), AXL_ERROR_INVALID_HANDLE,
                 {"kernel handle 0x", "already released"});
  require_status(axl_kernel_release(stale), AXL_ERROR_INVALID_HANDLE, {"already released"});
  for (auto k : fresh) {
    CHECK(std::string(axl_kernel_name(k)) == name);
    REQUIRE(axl_kernel_release(k) == AXL_SUCCESS);
  }

  REQUIRE_FALSE(kKernels.empty());  // tests/data's target was not built
  axl_module_t m = nullptr;
  REQUIRE(axl_module_load_file(c.dev, kKernels.c_str(), AXL_MODULE_FORMAT_AUTO, &m) == AXL_SUCCESS);
  REQUIRE(axl_module_release(m) == AXL_SUCCESS);
  std::vector<axl_module_t> mods(4);
  for (auto& x : mods) REQUIRE(axl_module_load_file(c.dev, kKernels.c_str(), AXL_MODULE_FORMAT_AUTO, &x) == AXL_SUCCESS);
  require_fresh(m, mods);
  axl_kernel_t k = nullptr;
  require_status(axl_module_get_kernel(m, "increment_u32", &k), AXL_ERROR_INVALID_HANDLE,
                 {"module handle 0x", "already released"});
  require_status(axl_module_release(m), AXL_ERROR_INVALID_HANDLE, {"already released"});
  for (auto x : mods) REQUIRE(axl_module_release(x) == AXL_SUCCESS);
}

TEST_CASE("garbage and never-issued handle values are not live", "[handles]") {
  Cpu c;
  axl_buffer_t b = tagged_buffer(c.dev, 64, 1);
  uint64_t n = 0;
  // The live handle's slot with a generation it has not reached yet.
  auto ahead = reinterpret_cast<axl_buffer_t>(value(b) + (uint64_t(1) << 32));
  require_status(axl_buffer_size(ahead, &n), AXL_ERROR_INVALID_HANDLE, {"is not a live buffer"});
  // A slot index far past any allocated chunk.
  auto far = reinterpret_cast<axl_buffer_t>(uintptr_t(0x00000007fffffff0ull));
  require_status(axl_buffer_size(far, &n), AXL_ERROR_INVALID_HANDLE, {"is not a live buffer"});
  require_status(axl_buffer_release(far), AXL_ERROR_INVALID_HANDLE, {"is not a live buffer"});
  // A live handle of another kind names what it is.
  require_status(axl_buffer_size(reinterpret_cast<axl_buffer_t>(c.q), &n), AXL_ERROR_INVALID_HANDLE,
                 {"is not a live buffer", "queue"});
  CHECK(intact(b, 64, 1));
  REQUIRE(axl_buffer_release(b) == AXL_SUCCESS);
}

namespace {

// The exit scenario's buffer, released by an atexit handler that runs after
// the core's own (registered before the first axl call): the core then
// leaves the object to the OS, and its handle must still read as released.
axl_buffer_t g_exit_buffer = nullptr;

void release_at_exit() {
  uint64_t n = 0;
  const axl_status first = axl_buffer_release(g_exit_buffer);
  const axl_status size = axl_buffer_size(g_exit_buffer, &n);
  const std::string msg = axl_last_error_message();
  const axl_status again = axl_buffer_release(g_exit_buffer);
  const bool ok = first == AXL_SUCCESS && size == AXL_ERROR_INVALID_HANDLE &&
                  again == AXL_ERROR_INVALID_HANDLE && msg.find("already released") != std::string::npos;
  printf("%s %s\n", ok ? "EXIT_OK" : "EXIT_BAD", msg.c_str());
  fflush(stdout);
}

}  // namespace

TEST_CASE("child: a handle released during exit", "[.]") {
  REQUIRE(atexit(release_at_exit) == 0);  // before the core's handler: runs after it
  Cpu c;
  g_exit_buffer = tagged_buffer(c.dev, 64, 3);
}

TEST_CASE("a handle released during exit reads as released", "[handles]") {
  char self[4096] = {};
  REQUIRE(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
  RunResult r = run({self, "child: a handle released during exit"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("EXIT_OK"));
}

TEST_CASE("threads: creation and release race lookups of stale handles", "[handles][threads]") {
  Cpu c;
  constexpr int kMakers = 4, kProbers = 2, kRounds = 400, kKeep = 8;
  constexpr uint64_t kMinProbes = 256;
  std::mutex mu;
  std::vector<axl_buffer_t> released;  // handles released, published under mu
  std::atomic<int> makers_left{kMakers};
  std::atomic<int> errors{0};
  std::atomic<uint64_t> probes{0};
  // Makers start once every prober runs, so the probes overlap the churn.
  std::atomic<int> probers_up{0};

  auto maker = [&](int t) {
    while (probers_up.load() < kProbers) std::this_thread::yield();
    std::vector<std::pair<axl_buffer_t, uint8_t>> live;
    for (int r = 0; r < kRounds; ++r) {
      const uint8_t tag = uint8_t(t * 61 + r);
      axl_buffer_t b = nullptr;
      if (axl_buffer_create(c.dev, 48 + 16 * (r % 4), 0, &b) != AXL_SUCCESS) {
        errors.fetch_add(1);
        continue;
      }
      void* p = nullptr;
      uint64_t n = 0;
      if (axl_buffer_host_pointer(b, &p) != AXL_SUCCESS || axl_buffer_size(b, &n) != AXL_SUCCESS) {
        errors.fetch_add(1);
        continue;
      }
      memset(p, tag, n);
      live.emplace_back(b, tag);
      if (live.size() < kKeep) continue;
      // Release the oldest after checking nobody's stale release reached it.
      auto [old, old_tag] = live.front();
      live.erase(live.begin());
      if (axl_buffer_size(old, &n) != AXL_SUCCESS || !intact(old, n, old_tag)) errors.fetch_add(1);
      if (axl_buffer_release(old) != AXL_SUCCESS) errors.fetch_add(1);
      std::lock_guard<std::mutex> lk(mu);
      released.push_back(old);
    }
    for (auto& [b, tag] : live) {
      uint64_t n = 0;
      if (axl_buffer_size(b, &n) != AXL_SUCCESS || !intact(b, n, tag)) errors.fetch_add(1);
      axl_buffer_release(b);
    }
    makers_left.fetch_sub(1);
  };

  auto prober = [&](int t) {
    axl_error_info e{};
    e.struct_size = sizeof e;
    size_t next = size_t(t);
    probers_up.fetch_add(1);
    // Until the makers are done, and at least kMinProbes in all (a loaded
    // machine may run the makers to completion before a prober's first try).
    while (makers_left.load() > 0 || probes.load() < kMinProbes) {
      axl_buffer_t h = nullptr;
      {
        std::lock_guard<std::mutex> lk(mu);
        if (released.empty()) continue;
        h = released[next++ % released.size()];
      }
      uint64_t n = 0;
      const bool by_size = next % 2;
      axl_status s = by_size ? axl_buffer_size(h, &n) : axl_buffer_release(h);
      if (s != AXL_ERROR_INVALID_HANDLE || axl_last_error(&e) != AXL_SUCCESS || !e.message ||
          !strstr(e.message, "already released"))
        errors.fetch_add(1);
      probes.fetch_add(1);
    }
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kMakers; ++t) threads.emplace_back(maker, t);
  for (int t = 0; t < kProbers; ++t) threads.emplace_back(prober, t);
  for (auto& th : threads) th.join();
  CHECK(errors.load() == 0);
  CHECK(probes.load() >= kMinProbes);
  // Every handle ever released is still reported as released.
  uint64_t n = 0;
  for (axl_buffer_t h : released)
    if (axl_buffer_size(h, &n) != AXL_ERROR_INVALID_HANDLE) errors.fetch_add(1);
  CHECK(errors.load() == 0);
}
