// The cuda backend on a real GPU, through axl.h: what the conformance suite
// does not reach (run-time compilation, fills of every width, completion
// flags driven by the stream memory operations, host callbacks, cross-queue
// waits, launch-trace names, event timing, peer copies, test kernels over
// 3-D grids, dynamic shared memory above 48 KiB, events from a thread with
// no current context, the default memory pool left alone, out-of-memory
// trimming axl's pool, memory released with work pending reused). Run by
// tests/gpu/run.sh; not a ctest, since CI has no GPU. Exits 0 with a message
// when there is no CUDA device.
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "axl/axl.h"

namespace {

axl_device_t g_dev = nullptr;

#define AXL_OK(call)                                                           \
  do {                                                                         \
    axl_status s_ = (call);                                                    \
    INFO(#call << ": " << axl_status_name(s_) << ": " << axl_last_error_message()); \
    REQUIRE(s_ == AXL_SUCCESS);                                                \
  } while (0)

const char* kSource = R"(
extern "C" __global__ void add_step(unsigned* data, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] += STEP;
}
extern "C" __global__ void spin(unsigned long long cycles) {
  unsigned long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}
)";

struct Fixture {
  axl_queue_t q = nullptr;
  axl_module_t mod = nullptr;
  axl_kernel_t add = nullptr, spin = nullptr;
  Fixture() {
    AXL_OK(axl_queue_create(g_dev, 0, &q));
    const char* opts[] = {"-DSTEP=3"};
    AXL_OK(axl_module_compile(g_dev, AXL_SOURCE_LANGUAGE_CUDA, kSource, "gpu_test.cu", opts, 1, &mod));
    AXL_OK(axl_module_get_kernel(mod, "add_step", &add));
    AXL_OK(axl_module_get_kernel(mod, "spin", &spin));
  }
  ~Fixture() {
    axl_kernel_release(add);
    axl_kernel_release(spin);
    axl_module_release(mod);
    axl_queue_release(q);
  }
  axl_buffer_t buffer(uint64_t bytes) {
    axl_buffer_t b = nullptr;
    AXL_OK(axl_buffer_create(g_dev, bytes, 0, &b));
    return b;
  }
  void launch_add(axl_queue_t queue, axl_buffer_t b, uint32_t n) {
    axl_launch_arg args[2] = {{AXL_KERNEL_ARG_BUFFER, 0, b, nullptr}, {AXL_KERNEL_ARG_SCALAR, 4, nullptr, &n}};
    const uint32_t grid[3] = {(n + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
    AXL_OK(axl_queue_launch(queue, add, grid, block, 0, args, 2));
  }
  void launch_spin(axl_queue_t queue, uint64_t cycles) {
    axl_launch_arg arg{AXL_KERNEL_ARG_SCALAR, 8, nullptr, &cycles};
    const uint32_t one[3] = {1, 1, 1};
    AXL_OK(axl_queue_launch(queue, spin, one, one, 0, &arg, 1));
  }
};

}  // namespace

TEST_CASE("device properties come from the driver") {
  axl_device_info info{};
  info.struct_size = sizeof info;
  AXL_OK(axl_device_get_info(g_dev, &info));
  CHECK(std::string(info.api) == "cuda");
  CHECK(std::string(info.label) == "gpu");
  CHECK(std::string(info.architecture_name).rfind("sm_", 0) == 0);
  CHECK(info.total_memory_bytes > (1ull << 30));
  CHECK(info.is_compatible == 1);
  uint64_t free_b = 0, total = 0;
  AXL_OK(axl_device_get_memory_info(g_dev, &free_b, &total));
  CHECK(total == info.total_memory_bytes);
  CHECK(free_b <= total);
}

TEST_CASE("a program compiled by NVRTC runs and computes") {
  Fixture f;
  const uint32_t n = 1 << 20;
  std::vector<uint32_t> host(n);
  for (uint32_t i = 0; i < n; ++i) host[i] = i;
  axl_buffer_t b = f.buffer(n * 4ull);
  AXL_OK(axl_queue_copy_from_host(f.q, b, 0, host.data(), n * 4ull));
  f.launch_add(f.q, b, n);
  f.launch_add(f.q, b, n);
  std::vector<uint32_t> out(n);
  AXL_OK(axl_queue_copy_to_host(f.q, out.data(), b, 0, n * 4ull));
  AXL_OK(axl_queue_synchronize(f.q));
  CHECK(out[0] == 6);
  CHECK(out[n - 1] == n - 1 + 6);
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) bad += out[i] != i + 6;
  CHECK(bad == 0);
  axl_buffer_release(b);
}

TEST_CASE("a compile error carries NVRTC's log; a missing kernel is NOT_FOUND") {
  axl_module_t m = nullptr;
  CHECK(axl_module_compile(g_dev, AXL_SOURCE_LANGUAGE_CUDA, "extern \"C\" __global__ void k() { nope(); }",
                           "broken.cu", nullptr, 0, &m) == AXL_ERROR_INVALID_ARGUMENT);
  const std::string msg = axl_last_error_message();
  INFO(msg);
  CHECK(msg.find("nope") != std::string::npos);
  CHECK(msg.find("broken.cu") != std::string::npos);
  Fixture f;
  axl_kernel_t k = nullptr;
  CHECK(axl_module_get_kernel(f.mod, "no_such_kernel", &k) == AXL_ERROR_NOT_FOUND);
  CHECK(std::string(axl_last_error_message()).find("no_such_kernel") != std::string::npos);
}

TEST_CASE("fills of 1, 2 and 4 bytes") {
  Fixture f;
  axl_buffer_t b = f.buffer(64);
  std::vector<uint8_t> out(64);
  AXL_OK(axl_queue_fill(f.q, b, 0, 64, 0xab, 1));
  AXL_OK(axl_queue_fill(f.q, b, 16, 16, 0x1234, 2));
  AXL_OK(axl_queue_fill(f.q, b, 32, 32, 0xdeadbeef, 4));
  AXL_OK(axl_queue_copy_to_host(f.q, out.data(), b, 0, 64));
  AXL_OK(axl_queue_synchronize(f.q));
  CHECK(out[0] == 0xab);
  CHECK(out[15] == 0xab);
  uint16_t h = 0;
  std::memcpy(&h, &out[16], 2);
  CHECK(h == 0x1234);
  uint32_t w = 0;
  std::memcpy(&w, &out[60], 4);
  CHECK(w == 0xdeadbeefu);
  axl_buffer_release(b);
}

TEST_CASE("a completion flag gates a queue, and the device writes one") {
  Fixture f;
  axl_flag_t flag = nullptr;
  AXL_OK(axl_flag_create(g_dev, &flag));
  axl_event_t done = nullptr;
  AXL_OK(axl_event_create(g_dev, 0, &done));
  AXL_OK(axl_queue_wait_flag(f.q, flag, 2));
  AXL_OK(axl_queue_record_event(f.q, done));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(axl_event_query(done) == AXL_ERROR_NOT_READY);
  AXL_OK(axl_flag_signal(flag, 1));  // below the wait's value
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(axl_event_query(done) == AXL_ERROR_NOT_READY);
  AXL_OK(axl_flag_signal(flag, 2));
  AXL_OK(axl_event_synchronize(done));
  AXL_OK(axl_queue_write_flag(f.q, flag, 77));
  AXL_OK(axl_queue_synchronize(f.q));
  uint64_t v = 0;
  AXL_OK(axl_flag_load(flag, &v));
  CHECK(v == 77);
  axl_event_release(done);
  axl_flag_release(flag);
}

TEST_CASE("host callbacks run in order after earlier work") {
  Fixture f;
  struct Log {
    std::mutex mu;
    std::vector<int> order;
  } log;
  struct Call {
    Log* log;
    int id;
  };
  Call calls[3] = {{&log, 1}, {&log, 2}, {&log, 3}};
  auto fn = [](void* p) {
    auto* c = static_cast<Call*>(p);
    std::lock_guard<std::mutex> lk(c->log->mu);
    c->log->order.push_back(c->id);
  };
  f.launch_spin(f.q, 2'000'000);
  for (Call& c : calls) AXL_OK(axl_queue_enqueue_host_func(f.q, fn, &c));
  AXL_OK(axl_queue_synchronize(f.q));
  CHECK(log.order == std::vector<int>{1, 2, 3});
}

TEST_CASE("two queues with a cross-queue wait") {
  Fixture f;
  axl_queue_t q2 = nullptr;
  AXL_OK(axl_queue_create(g_dev, 0, &q2));
  const uint32_t n = 1024;
  std::vector<uint32_t> zeros(n, 0), out(n);
  axl_buffer_t b = f.buffer(n * 4);
  AXL_OK(axl_queue_copy_from_host(f.q, b, 0, zeros.data(), n * 4));
  f.launch_spin(f.q, 50'000'000);  // long enough that an unordered read would see zeros
  f.launch_add(f.q, b, n);
  axl_event_t e = nullptr;
  AXL_OK(axl_event_create(g_dev, 0, &e));
  AXL_OK(axl_queue_record_event(f.q, e));
  AXL_OK(axl_queue_wait_event(q2, e));
  AXL_OK(axl_queue_copy_to_host(q2, out.data(), b, 0, n * 4));
  AXL_OK(axl_queue_synchronize(q2));
  CHECK(out[0] == 3);
  CHECK(out[n - 1] == 3);
  uint64_t h1 = 0, h2 = 0;
  AXL_OK(axl_queue_native_handle(f.q, &h1));
  AXL_OK(axl_queue_native_handle(q2, &h2));
  CHECK(h1 != 0);
  CHECK(h2 != 0);
  CHECK(h1 != h2);
  axl_event_release(e);
  axl_buffer_release(b);
  axl_queue_release(q2);
}

TEST_CASE("the launch trace names the driver calls and the kernel") {
  Fixture f;
  axl_buffer_t b = f.buffer(4096);
  std::vector<uint32_t> host(1024, 1);
  AXL_OK(axl_launch_trace_begin(AXL_LAUNCH_TRACE_DEFAULT));
  AXL_OK(axl_queue_copy_from_host(f.q, b, 0, host.data(), 4096));
  f.launch_add(f.q, b, 1024);
  AXL_OK(axl_queue_fill(f.q, b, 0, 4096, 7, 4));
  AXL_OK(axl_queue_copy_to_host(f.q, host.data(), b, 0, 4096));
  axl_launch_trace_t t = nullptr;
  AXL_OK(axl_launch_trace_take(&t));
  AXL_OK(axl_queue_synchronize(f.q));
  size_t n = 0;
  AXL_OK(axl_launch_trace_size(t, &n));
  REQUIRE(n == 4);
  const axl_launch_trace_entry* entries = axl_launch_trace_entries(t);
  const axl_launch_trace_entry* e[4];
  for (size_t i = 0; i < 4; ++i) e[i] = axl_launch_trace_entry_at(entries, i);
  CHECK(std::string(e[0]->name) == "cuMemcpyHtoDAsync");
  CHECK(e[0]->memcpy_kind == AXL_MEMCPY_HTOD);
  CHECK(e[0]->memcpy_byte_size == 4096);
  CHECK(std::string(e[1]->name) == "add_step");
  CHECK(e[1]->kind == AXL_TRACE_KERNEL_LAUNCH);
  CHECK(e[1]->block[0] == 256);
  CHECK(std::string(e[2]->name) == "cuMemsetD32Async");
  CHECK(e[2]->memset_value == 7);
  CHECK(std::string(e[3]->name) == "cuMemcpyDtoHAsync");
  CHECK(host[5] == 7);
  axl_launch_trace_release(t);
  axl_buffer_release(b);
}

TEST_CASE("timing events measure device time") {
  Fixture f;
  axl_event_t a = nullptr, z = nullptr, untimed = nullptr;
  AXL_OK(axl_event_create(g_dev, AXL_EVENT_TIMING, &a));
  AXL_OK(axl_event_create(g_dev, AXL_EVENT_TIMING, &z));
  AXL_OK(axl_event_create(g_dev, 0, &untimed));
  AXL_OK(axl_queue_record_event(f.q, a));
  f.launch_spin(f.q, 20'000'000);
  AXL_OK(axl_queue_record_event(f.q, z));
  AXL_OK(axl_queue_record_event(f.q, untimed));
  AXL_OK(axl_event_synchronize(z));
  float ms = 0;
  AXL_OK(axl_event_elapsed_ms(a, z, &ms));
  CHECK(ms > 1.0f);
  CHECK(ms < 1000.0f);
  AXL_OK(axl_event_synchronize(untimed));
  CHECK(axl_event_elapsed_ms(a, untimed, &ms) != AXL_SUCCESS);
  axl_event_release(a);
  axl_event_release(z);
  axl_event_release(untimed);
}

TEST_CASE("a module released with launches pending stays loaded until they ran") {
  axl_queue_t q = nullptr;
  AXL_OK(axl_queue_create(g_dev, 0, &q));
  {
    Fixture f;
    axl_buffer_t b = f.buffer(4096);
    f.launch_spin(q, 50'000'000);
    f.launch_add(q, b, 1024);
    axl_buffer_release(b);
  }  // module, kernels released here, launches still queued
  AXL_OK(axl_queue_synchronize(q));
  axl_queue_release(q);
}

TEST_CASE("peer access and peer copies between two CUDA devices") {
  uint32_t n = 0;
  AXL_OK(axl_device_count("gpu", &n));
  std::vector<axl_device_t> cuda;
  for (uint32_t i = 0; i < n; ++i) {
    axl_device_t d = nullptr;
    AXL_OK(axl_device_get("gpu", i, &d));
    axl_device_info info{};
    info.struct_size = sizeof info;
    AXL_OK(axl_device_get_info(d, &info));
    if (std::string(info.backend) == "cuda") cuda.push_back(d); else axl_device_release(d);
  }
  if (cuda.size() < 2) {
    WARN("one CUDA device: peer copies not tested");
    for (auto d : cuda) axl_device_release(d);
    return;
  }
  uint8_t can = 0;
  AXL_OK(axl_device_can_access(cuda[0], cuda[1], &can));
  if (can) AXL_OK(axl_device_enable_peer_access(cuda[0], cuda[1]));
  axl_buffer_t a = nullptr, b = nullptr;
  AXL_OK(axl_buffer_create(cuda[0], 4096, 0, &a));
  AXL_OK(axl_buffer_create(cuda[1], 4096, 0, &b));
  axl_queue_t q = nullptr;
  AXL_OK(axl_queue_create(cuda[0], 0, &q));
  AXL_OK(axl_queue_fill(q, a, 0, 4096, 0x5a, 1));
  AXL_OK(axl_queue_copy_buffer(q, b, 0, a, 0, 4096));
  std::vector<uint8_t> out(4096);
  AXL_OK(axl_queue_copy_to_host(q, out.data(), b, 0, 4096));
  AXL_OK(axl_queue_synchronize(q));
  CHECK(out[4095] == 0x5a);
  axl_queue_release(q);
  axl_buffer_release(a);
  axl_buffer_release(b);
  for (auto d : cuda) axl_device_release(d);
}

TEST_CASE("the test kernels number threads over 3-D grids and blocks") {
  struct Shape {
    uint32_t grid[3], block[3], n;
  };
  const Shape shapes[] = {{{2, 3, 2}, {4, 2, 2}, 190}, {{7, 5, 1}, {3, 1, 1}, 100}, {{3, 2, 2}, {2, 3, 2}, 100},
                          {{1, 1, 4}, {8, 4, 2}, 5000}, {{64, 2, 2}, {16, 4, 4}, 1 << 20}};
  axl_queue_t q = nullptr;
  AXL_OK(axl_queue_create(g_dev, 0, &q));
  axl_kernel_t fill = nullptr, inc = nullptr;
  AXL_OK(axl_device_get_test_kernel(g_dev, AXL_TEST_KERNEL_FILL_U32, &fill));
  AXL_OK(axl_device_get_test_kernel(g_dev, AXL_TEST_KERNEL_INCREMENT_U32, &inc));
  for (const Shape& s : shapes) {
    INFO("grid " << s.grid[0] << "x" << s.grid[1] << "x" << s.grid[2] << " block " << s.block[0] << "x"
                 << s.block[1] << "x" << s.block[2] << " n " << s.n);
    std::vector<uint32_t> host(s.n + 16, 0xDEADBEEFu);
    axl_buffer_t b = nullptr;
    AXL_OK(axl_buffer_create(g_dev, host.size() * 4, 0, &b));
    AXL_OK(axl_queue_copy_from_host(q, b, 0, host.data(), host.size() * 4));
    const uint32_t value = 1000;
    axl_launch_arg fa[3] = {{AXL_KERNEL_ARG_BUFFER, 0, b, nullptr}, {AXL_KERNEL_ARG_SCALAR, 4, nullptr, &s.n},
                            {AXL_KERNEL_ARG_SCALAR, 4, nullptr, &value}};
    AXL_OK(axl_queue_launch(q, fill, s.grid, s.block, 0, fa, 3));
    AXL_OK(axl_queue_launch(q, inc, s.grid, s.block, 0, fa, 2));
    AXL_OK(axl_queue_copy_to_host(q, host.data(), b, 0, host.size() * 4));
    AXL_OK(axl_queue_synchronize(q));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < s.n; ++i) bad += host[i] != 1001u;
    CHECK(bad == 0);
    for (uint32_t i = s.n; i < s.n + 16; ++i) CHECK(host[i] == 0xDEADBEEFu);
    axl_buffer_release(b);
  }
  axl_kernel_release(fill);
  axl_kernel_release(inc);
  axl_queue_release(q);
}

TEST_CASE("a launch with more than 48 KiB of dynamic shared memory runs; one above the limit is refused") {
  const char* src = R"(
extern "C" __global__ void smem_sum(unsigned* out, unsigned words) {
  extern __shared__ unsigned s[];
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) s[i] = i;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long sum = 0;
    for (unsigned i = 0; i < words; ++i) sum += s[i];
    out[0] = (unsigned)sum;
    out[1] = s[words - 1];
  }
}
)";
  axl_module_t m = nullptr;
  AXL_OK(axl_module_compile(g_dev, AXL_SOURCE_LANGUAGE_CUDA, src, "smem.cu", nullptr, 0, &m));
  axl_kernel_t k = nullptr;
  AXL_OK(axl_module_get_kernel(m, "smem_sum", &k));
  axl_queue_t q = nullptr;
  AXL_OK(axl_queue_create(g_dev, 0, &q));
  axl_buffer_t b = nullptr;
  AXL_OK(axl_buffer_create(g_dev, 8, 0, &b));
  const uint32_t one[3] = {1, 1, 1}, block[3] = {256, 1, 1};
  for (uint32_t kib : {64u, 96u}) {
    const uint32_t words = kib * 1024 / 4;
    axl_launch_arg args[2] = {{AXL_KERNEL_ARG_BUFFER, 0, b, nullptr}, {AXL_KERNEL_ARG_SCALAR, 4, nullptr, &words}};
    AXL_OK(axl_queue_launch(q, k, one, block, uint64_t{kib} * 1024, args, 2));
    uint32_t out[2] = {0, 0};
    AXL_OK(axl_queue_copy_to_host(q, out, b, 0, 8));
    AXL_OK(axl_queue_synchronize(q));
    CHECK(out[0] == static_cast<uint32_t>(uint64_t{words} * (words - 1) / 2));
    CHECK(out[1] == words - 1);
  }
  const uint32_t words = 1;
  axl_launch_arg args[2] = {{AXL_KERNEL_ARG_BUFFER, 0, b, nullptr}, {AXL_KERNEL_ARG_SCALAR, 4, nullptr, &words}};
  CHECK(axl_queue_launch(q, k, one, block, 1 << 20, args, 2) == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(axl_last_error_message()).find("allows at most") != std::string::npos);
  axl_buffer_release(b);
  axl_queue_release(q);
  axl_kernel_release(k);
  axl_module_release(m);
}

TEST_CASE("events are waited on, queried and timed from a thread with no current context") {
  Fixture f;
  axl_event_t a = nullptr, z = nullptr;
  AXL_OK(axl_event_create(g_dev, AXL_EVENT_TIMING, &a));
  AXL_OK(axl_event_create(g_dev, AXL_EVENT_TIMING, &z));
  AXL_OK(axl_queue_record_event(f.q, a));
  f.launch_spin(f.q, 10'000'000);
  AXL_OK(axl_queue_record_event(f.q, z));
  axl_status sync = AXL_ERROR_INTERNAL, query = AXL_ERROR_INTERNAL, elapsed = AXL_ERROR_INTERNAL;
  float ms = -1;
  std::thread t([&] {  // a new thread: no CUDA context is current on it
    sync = axl_event_synchronize(z);
    query = axl_event_query(z);
    elapsed = axl_event_elapsed_ms(a, z, &ms);
  });
  t.join();
  CHECK(sync == AXL_SUCCESS);
  CHECK(query == AXL_SUCCESS);
  CHECK(elapsed == AXL_SUCCESS);
  CHECK(ms > 0.0f);
  axl_event_release(a);
  axl_event_release(z);
}

namespace {

// An entry point of the driver itself (libcuda.so.1), beside axl.
template <class F>
F driver_fn(const char* name) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW);
  return lib != nullptr ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
}

}  // namespace

TEST_CASE("the device's default memory pool keeps its release threshold") {
  // axl allocates from a pool of its own; the default pool is the CUDA
  // runtime's (PyTorch's, CuPy's).
  axl_buffer_t b = nullptr;
  AXL_OK(axl_buffer_create(g_dev, 1 << 20, 0, &b));
  axl_buffer_release(b);
  auto get_pool = driver_fn<CUresult (*)(CUmemoryPool*, CUdevice)>("cuDeviceGetDefaultMemPool");
  auto get_attr = driver_fn<CUresult (*)(CUmemoryPool, CUmemPool_attribute, void*)>("cuMemPoolGetAttribute");
  auto device_get = driver_fn<CUresult (*)(CUdevice*, int)>("cuDeviceGet");
  REQUIRE(get_pool != nullptr);
  REQUIRE(get_attr != nullptr);
  REQUIRE(device_get != nullptr);
  CUdevice dev = 0;
  REQUIRE(device_get(&dev, 0) == CUDA_SUCCESS);  // axl's first CUDA device is ordinal 0 here
  CUmemoryPool pool = nullptr;
  REQUIRE(get_pool(&pool, dev) == CUDA_SUCCESS);
  cuuint64_t threshold = 1;
  REQUIRE(get_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) == CUDA_SUCCESS);
  CHECK(threshold == 0);  // the driver's default
}

TEST_CASE("an allocation that finds memory held by axl's pool trims it and succeeds") {
  uint64_t free_b = 0, total = 0;
  AXL_OK(axl_device_get_memory_info(g_dev, &free_b, &total));
  // 60% allocated and freed: axl's pool keeps it (release threshold max).
  axl_buffer_t a = nullptr;
  AXL_OK(axl_buffer_create(g_dev, free_b / 10 * 6, 0, &a));
  axl_buffer_release(a);
  // 70% fits only once the pool gave the 60% back.
  axl_buffer_t b = nullptr;
  CHECK(axl_buffer_create(g_dev, free_b / 10 * 7, 0, &b) == AXL_SUCCESS);
  if (b) axl_buffer_release(b);
}

TEST_CASE_METHOD(Fixture, "memory released with work pending is reused by the next allocation") {
  uint64_t free0 = 0, total = 0;
  AXL_OK(axl_device_get_memory_info(g_dev, &free0, &total));
  const uint64_t big = free0 / 10 * 6;  // two never fit at once
  for (int i = 0; i < 3; ++i) {
    // Released while a kernel still spins on the queue before the one that
    // uses it: the free is deferred, and the next allocation must wait for
    // it instead of failing.
    axl_buffer_t a = buffer(big);
    launch_spin(q, 200000000ull);  // ~0.1 s
    launch_add(q, a, 1024);
    axl_buffer_release(a);
    axl_buffer_t b = nullptr;
    AXL_OK(axl_buffer_create(g_dev, big, 0, &b));
    launch_add(q, b, 1024);
    axl_buffer_release(b);
    // After a synchronize the memory is available at once (axl's pool may
    // keep it, so the driver's free count is no measure).
    AXL_OK(axl_queue_synchronize(q));
    axl_buffer_t c = nullptr;
    AXL_OK(axl_buffer_create(g_dev, big, 0, &c));
    axl_buffer_release(c);
  }
}

int main(int argc, char** argv) {
  uint32_t n = 0;
  axl_device_count("gpu", &n);
  for (uint32_t i = 0; i < n && !g_dev; ++i) {
    axl_device_t d = nullptr;
    if (axl_device_get("gpu", i, &d) != AXL_SUCCESS) continue;
    axl_device_info info{};
    info.struct_size = sizeof info;
    if (axl_device_get_info(d, &info) == AXL_SUCCESS && std::string(info.backend) == "cuda")
      g_dev = d;
    else
      axl_device_release(d);
  }
  if (!g_dev) {
    std::printf("cuda_gpu_test: no CUDA device; nothing tested\n");
    return 0;
  }
  const int rc = Catch::Session().run(argc, argv);
  axl_device_release(g_dev);
  return rc;
}
