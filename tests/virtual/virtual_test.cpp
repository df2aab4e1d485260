// The virtual backend through the core (axl.hpp), with two virtual devices
// from AXL_VIRTUAL_DEVICES: what is the virtual backend's own: memory the
// host cannot read, waits across backends, peer copies, the launch trace,
// kernels and modules. The cases every device must pass (copies, fills,
// queues, events, flags, host callbacks) are tests/devices/
// device_cases_test.cpp, run on both virtual devices and on cpu:0.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "../devices/queue_helpers.hpp"
#include "virtual_test_util.hpp"

using namespace std::chrono_literals;
using devtest::enqueue_fn;
using devtest::random_bytes;
using devtest::read_back;

namespace {

const bool kEnvironment = vt::prepare_environment({{"AXL_VIRTUAL_DEVICES", "2"}});

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// ------------------------------------------------------------ the device --

TEST_CASE("virtual devices: properties, memory info, native handles", "[virtual][device]") {
  REQUIRE(kEnvironment);
  REQUIRE(axl::Device::count("gpu") == 2);
  for (uint32_t i = 0; i < 2; ++i) {
    INFO("gpu:" << i);
    axl::Device d = vt::gpu(i);
    axl::DeviceInfo info = d.info();
    CHECK(info.backend == "virtual");
    CHECK(info.label == "gpu");
    CHECK(info.api == "virtual");
    CHECK(info.architecture_name == "virtual");
    CHECK(info.model_name == "axl virtual device (virtual virtual)");
    CHECK(info.id == i);
    CHECK_FALSE(info.is_host);
    CHECK_FALSE(info.is_host_unified);
    CHECK(info.is_compatible);
    CHECK(info.total_memory_bytes == (16ull << 30));
    CHECK(info.max_single_alloc_bytes == info.total_memory_bytes);
  }
  axl::Device d = vt::gpu(0);
  auto [free0, total] = d.memory_info();
  CHECK(total == (16ull << 30));
  {
    axl::Buffer b = d.allocate(3 << 20);
    auto [free1, total1] = d.memory_info();
    CHECK(total1 == total);
    CHECK(free0 - free1 >= (3u << 20));
  }
  CHECK(d.memory_info().first == free0);  // given back with the buffer

  // Opaque, non-zero, one per queue, as a driver's stream handles.
  axl::Queue a = d.create_queue(), b = d.create_queue();
  CHECK(a.native_handle() != 0);
  CHECK(b.native_handle() != 0);
  CHECK(a.native_handle() != b.native_handle());
  CHECK(d.default_queue().native_handle() != 0);
}

TEST_CASE("virtual device memory is not host memory", "[virtual][buffer]") {
  axl::Device d = vt::gpu(0), d1 = vt::gpu(1);
  axl::Buffer b = d.allocate(1000);
  vt::expect_error([&] { b.host_pointer(); }, AXL_ERROR_INVALID_STATE);
  CHECK_THAT(axl_last_error_message(), Catch::Contains("cannot read"));
  vt::expect_error([&] { b.view(10, 20).host_pointer(); }, AXL_ERROR_INVALID_STATE);

  // Addresses live in a range no host pointer can be in (above 2^62), one
  // 16 TiB range per device, 256-byte aligned; views add their offset.
  const uint64_t a = b.device_address();
  CHECK(a >= 0x7a10'0000'0000'0000ull);
  CHECK(a % 256 == 0);
  CHECK(b.view(10, 20).device_address() == a + 10);
  const uint64_t a1 = d1.allocate(64).device_address();
  CHECK(a1 - 0x7a10'0000'0000'0000ull >= (1ull << 44));
  CHECK((a1 - 0x7a10'0000'0000'0000ull) >> 44 == 1);
  // Consecutive allocations never touch: one past the end is no address.
  axl::Buffer c = d.allocate(256);
  CHECK(c.device_address() >= a + 1000 + 256);

  // Pinned memory is host memory, in whole pages.
  axl::Buffer p = d.allocate(5000, AXL_BUFFER_FLAG_PINNED);
  void* hp = p.host_pointer();
  REQUIRE(hp != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(hp) % 4096 == 0);
  std::memset(hp, 0x5a, 5000);
}

// ------------------------------------------------ virtual-only behaviour --

TEST_CASE("cross-backend waits carry real data both ways", "[virtual][cpu][queue]") {
  axl::Device cpu = axl::Device::cpu(), gpu = vt::gpu(0);
  axl::Queue cq = cpu.create_queue(), vq = gpu.create_queue();
  const size_t n = 64 * 1024 + 3;

  SECTION("a cpu queue waits for a virtual queue") {
    auto data = random_bytes(n, 11);
    std::vector<unsigned char> staged(n, 0);
    axl::Buffer vb = gpu.allocate(n), cb = cpu.allocate(n);
    std::memset(cb.host_pointer(), 0, n);
    axl::Flag gate = gpu.create_flag();
    vq.wait_flag(gate, 1);  // hold the virtual queue until the end
    vq.copy_from_host(vb, data.data(), n);
    vq.copy_to_host(staged.data(), vb, n);
    cq.wait_for(vq);
    cq.copy_from_host(cb, staged.data(), n);  // may read `staged` only after vq wrote it
    axl::Event done = cpu.create_event();
    cq.record(done);
    std::this_thread::sleep_for(30ms);
    CHECK_FALSE(done.is_ready());  // held by the virtual queue
    gate.signal(1);
    cq.synchronize();
    CHECK(std::memcmp(cb.host_pointer(), data.data(), n) == 0);
  }
  SECTION("a virtual queue waits for a cpu queue") {
    auto data = random_bytes(n, 12);
    axl::Buffer cb = cpu.allocate(n), vb = gpu.allocate(n);
    std::memset(cb.host_pointer(), 0, n);
    axl::Flag gate = cpu.create_flag();
    cq.wait_flag(gate, 1);
    cq.copy_from_host(cb, data.data(), n);
    vq.wait_for(cq);
    vq.copy_from_host(vb, cb.host_pointer(), n);  // reads the cpu buffer after cq wrote it
    std::vector<unsigned char> out(n, 0);
    vq.copy_to_host(out.data(), vb, n);
    axl::Event done = gpu.create_event();
    vq.record(done);
    std::this_thread::sleep_for(30ms);
    CHECK_FALSE(done.is_ready());  // held by the cpu queue
    gate.signal(1);
    vq.synchronize();
    CHECK(out == data);
  }
  SECTION("buffer copies between the backends, on either queue") {
    auto data = random_bytes(n, 13);
    axl::Buffer vb = gpu.allocate(n), vb2 = gpu.allocate(n), cb = cpu.allocate(n);
    vq.copy_from_host(vb, data.data(), n);
    cq.wait_for(vq);
    cq.copy(cb, vb);  // virtual -> cpu, enqueued on the cpu queue
    cq.synchronize();
    CHECK(std::memcmp(cb.host_pointer(), data.data(), n) == 0);
    vq.copy(vb2, cb);  // cpu -> virtual, on the virtual queue
    CHECK(read_back(vq, vb2) == data);
  }
}

TEST_CASE("peer access and copies between two virtual devices", "[virtual][peer]") {
  axl::Device d0 = vt::gpu(0), d1 = vt::gpu(1);
  CHECK(d0.can_access(d1));
  CHECK(d1.can_access(d0));
  CHECK_FALSE(d0.can_access(d0));
  CHECK_FALSE(d0.can_access(axl::Device::cpu()));
  REQUIRE(axl_device_enable_peer_access(d0.get(), d1.get()) == AXL_SUCCESS);
  REQUIRE(axl_device_enable_peer_access(d0.get(), d1.get()) == AXL_SUCCESS);  // idempotent
  REQUIRE(axl_enable_all_peer_access() == AXL_SUCCESS);

  const uint64_t n = 10007;
  auto data = random_bytes(n, 21);
  axl::Buffer b0 = d0.allocate(n), b1 = d1.allocate(n + 16), back = d0.allocate(n);
  axl::Queue q0 = d0.create_queue(), q1 = d1.create_queue();
  q1.fill(b1, 0x77, 1);
  q0.copy_from_host(b0, data.data(), n);
  q0.wait_for(q1);
  q0.copy(b1, 5, b0, 3, n - 10);  // on the source's queue
  q1.wait_for(q0);
  std::vector<unsigned char> out = read_back(q1, b1);
  CHECK(std::memcmp(out.data() + 5, data.data() + 3, n - 10) == 0);
  CHECK(out[4] == 0x77);
  CHECK(out[n - 5] == 0x77);
  q1.copy(back, b1.view(5, n));  // back to device 0, on device 1's queue this time
  q0.wait_for(q1);
  std::vector<unsigned char> round = read_back(q0, back);
  CHECK(std::memcmp(round.data(), data.data() + 3, n - 10) == 0);
}

TEST_CASE("launch trace: virtual devices are traced as accelerators", "[virtual][trace]") {
  axl::Device d = vt::gpu(0), d1 = vt::gpu(1), cpu = axl::Device::cpu();
  axl::Queue q = d.create_queue(), cq = cpu.create_queue();
  axl::Buffer a = d.allocate(1000), b = d.allocate(1000), peer = d1.allocate(1000);
  axl::Buffer cb = cpu.allocate(64);
  axl::Kernel inc = d.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  std::vector<unsigned char> host(1000, 1), host2(1000);
  const uint32_t n = 250;

  axl::begin_launch_trace();  // accelerators only: no include_host needed
  q.copy_from_host(a, host.data(), 1000);
  q.copy(b, a);
  q.copy_to_host(host2.data(), b, 1000);
  q.fill(a, 0xAB, 1);
  q.fill(a, 0xBEEF, 2, 0, 998);
  q.fill(a, 0xDEADBEEF, 4, 0, 996);
  q.launch(inc, {3, 2, 1}, {64, 1, 1}, {axl::Arg::buffer(a), axl::Arg::scalar(n)}, 128);
  q.copy(peer, a);  // virtual device 0 -> 1
  cq.fill(cb, 1, 1);  // a host device: not traced by default
  enqueue_fn(q, [] {});  // callbacks and waits are not operations of the trace
  q.wait_for(cq);
  q.synchronize();
  cq.synchronize();
  auto t = axl::take_launch_trace();

  REQUIRE(t.size() == 8);
  struct Want {
    int32_t kind, memcpy_kind;
    const char* name;
  };
  const Want want[] = {
      {AXL_TRACE_MEMCPY, AXL_MEMCPY_HTOD, "virtMemcpyHtoDAsync"},
      {AXL_TRACE_MEMCPY, AXL_MEMCPY_DTOD, "virtMemcpyDtoDAsync"},
      {AXL_TRACE_MEMCPY, AXL_MEMCPY_DTOH, "virtMemcpyDtoHAsync"},
      {AXL_TRACE_MEMSET, AXL_MEMCPY_NONE, "virtMemsetD8Async"},
      {AXL_TRACE_MEMSET, AXL_MEMCPY_NONE, "virtMemsetD16Async"},
      {AXL_TRACE_MEMSET, AXL_MEMCPY_NONE, "virtMemsetD32Async"},
      {AXL_TRACE_KERNEL_LAUNCH, AXL_MEMCPY_NONE, "axl_test_increment_u32"},
      {AXL_TRACE_MEMCPY, AXL_MEMCPY_DTOD, "virtMemcpyPeerAsync"},
  };
  for (size_t i = 0; i < 8; ++i) {
    INFO("entry " << i << ": " << t[i].name);
    CHECK(t[i].raw.kind == want[i].kind);
    CHECK(t[i].raw.memcpy_kind == want[i].memcpy_kind);
    CHECK(t[i].name == want[i].name);
    CHECK(t[i].raw.sequence == i);
    CHECK(t[i].raw.stream_index == 0);
    CHECK(t[i].raw.device_id == 0);
    CHECK(t[i].raw.semantic_hash != 0);
  }
  CHECK(t[0].raw.memcpy_byte_size == 1000);
  CHECK(t[2].raw.memcpy_byte_size == 1000);
  CHECK(t[3].raw.memset_byte_size == 1000);
  CHECK(t[3].raw.memset_value == 0xAB);
  CHECK(t[3].raw.memset_value_size == 1);
  CHECK(t[4].raw.memset_value == 0xBEEF);
  CHECK(t[4].raw.memset_value_size == 2);
  CHECK(t[5].raw.memset_value == 0xDEADBEEF);
  CHECK(t[5].raw.memset_value_size == 4);
  const uint32_t grid[3] = {3, 2, 1}, block[3] = {64, 1, 1};
  CHECK(std::equal(grid, grid + 3, t[6].raw.grid));
  CHECK(std::equal(block, block + 3, t[6].raw.block));
  CHECK(t[6].raw.shared_mem_bytes == 128);
  CHECK(t[7].raw.memcpy_byte_size == 1000);
  // Equal work hashes equally, different work differently.
  CHECK(t[0].raw.semantic_hash != t[2].raw.semantic_hash);

  // With include_host the cpu queue shows up too, as its own stream.
  axl::begin_launch_trace(true);
  q.fill(a, 0, 1);
  cq.fill(cb, 2, 1);
  q.synchronize();
  cq.synchronize();
  t = axl::take_launch_trace();
  REQUIRE(t.size() == 2);
  CHECK(t[0].name == "virtMemsetD8Async");
  CHECK(t[1].raw.stream_index == 1);
}

TEST_CASE("kernels on a virtual device are checked and recorded, never run", "[virtual][kernel]") {
  axl::Device d = vt::gpu(0);
  axl::Queue q = d.create_queue();
  axl::Kernel inc = d.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  axl::Kernel fill = d.test_kernel(AXL_TEST_KERNEL_FILL_U32);
  CHECK(inc.name() == "axl_test_increment_u32");
  CHECK(fill.name() == "axl_test_fill_u32");
  const uint32_t n = 64;
  axl::Buffer b = d.allocate(n * 4);
  q.fill(b, 5, 4);
  q.launch(inc, {1, 1, 1}, {64, 1, 1}, {axl::Arg::buffer(b), axl::Arg::scalar(n)});
  const uint32_t value = 9;
  q.launch(fill, {2, 1, 1}, {32, 1, 1}, {axl::Arg::buffer(b), axl::Arg::scalar(n), axl::Arg::scalar(value)});
  std::vector<uint32_t> out(n);
  q.copy_to_host(out.data(), b, n * 4);
  q.synchronize();
  // Nothing ran: a compile-only device (the conformance suite skips its
  // result checks on virtual devices for the same reason).
  CHECK(std::count(out.begin(), out.end(), 5u) == n);

  // The built-in kernels' parameter lists are checked, by the plugin.
  axl::Error e = vt::expect_error([&] { q.launch(inc, {1, 1, 1}, {1, 1, 1}, {axl::Arg::buffer(b)}); },
                                  AXL_ERROR_INVALID_ARGUMENT);
  vt::check_virtual_report(e, AXL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(e.what()), Catch::Contains("takes 2 arguments, got 1"));
  e = vt::expect_error(
      [&] { q.launch(inc, {1, 1, 1}, {1, 1, 1}, {axl::Arg::buffer(b), axl::Arg::scalar(n)}, 1 << 20); },
      AXL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(e.what()), Catch::Contains("shared_mem_bytes"));
  q.synchronize();
}

TEST_CASE("modules: PTX entries, kernel lists and binaries", "[virtual][module]") {
  axl::Device d = vt::gpu(0);
  axl::Queue q = d.create_queue();

  SECTION("PTX: the .entry names") {
    static const char kPtx[] =
        ".version 8.0\n.target sm_90\n.address_size 64\n\n"
        ".visible .entry saxpy(\n  .param .u64 saxpy_param_0\n)\n{\n  ret;\n}\n"
        ".visible .entry vector_add_f32()\n{\n  ret;\n}\n"
        ".func helper()\n{\n  ret;\n}\n";
    axl::Module m = d.load_module(kPtx, sizeof kPtx, AXL_MODULE_FORMAT_PTX);  // NUL included
    CHECK(m.kernel("saxpy").name() == "saxpy");
    axl::Kernel add = m.kernel("vector_add_f32");
    axl::Error e = vt::expect_error([&] { m.kernel("helper"); }, AXL_ERROR_NOT_FOUND);
    vt::check_virtual_report(e, AXL_ERROR_NOT_FOUND);
    CHECK_THAT(std::string(e.what()), Catch::Contains("'helper'"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("saxpy, vector_add_f32"));
    axl::Buffer b = d.allocate(16);
    q.launch(add, {1, 1, 1}, {1, 1, 1}, {axl::Arg::buffer(b)});  // any arguments: no signature known
    q.synchronize();
  }
  SECTION("a kernel list") {
    const std::string list = "# kernels of a model\nmatmul_bf16\n\n  softmax  \n// relu\n";
    axl::Module m = d.load_module(list.data(), list.size());
    m.kernel("matmul_bf16");
    m.kernel("softmax");
    vt::expect_error([&] { m.kernel("relu"); }, AXL_ERROR_NOT_FOUND);
    const std::string bad = "matmul\nnot a kernel name\n";
    axl::Error e = vt::expect_error([&] { d.load_module(bad.data(), bad.size()); },
                                    AXL_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(e.what()), Catch::Contains("line 2 'not a kernel name'"));
  }
  SECTION("a binary: names that occur as NUL-terminated strings") {
    auto so = read_file(AXL_TEST_CPU_KERNELS_PATH);
    REQUIRE(so.size() > 4);
    axl::Module m = d.load_module(so.data(), so.size());
    CHECK(m.kernel("saxpy").name() == "saxpy");
    vt::expect_error([&] { m.kernel("saxp"); }, AXL_ERROR_NOT_FOUND);  // a prefix is no name
    vt::expect_error([&] { m.kernel("no_such_kernel_xyz"); }, AXL_ERROR_NOT_FOUND);
    axl::Module from_file = d.load_module(std::string(AXL_TEST_CPU_KERNELS_PATH));
    from_file.kernel("vector_add_f32");
  }
  SECTION("a missing file") {
    axl::Error e = vt::expect_error([&] { d.load_module(std::string("/nonexistent/k.ptx")); },
                                    AXL_ERROR_NOT_FOUND);
    CHECK(e.native_name() == "ENOENT");
    CHECK_THAT(std::string(e.what()), Catch::Contains("/nonexistent/k.ptx"));
  }
  SECTION("a module released while a launch of its kernel is pending") {
    axl::Flag gate = d.create_flag();
    q.wait_flag(gate, 1);
    {
      const std::string list = "k\n";
      axl::Module m = d.load_module(list.data(), list.size());
      q.launch(m.kernel("k"), {1, 1, 1}, {1, 1, 1}, {});
    }
    gate.signal(1);
    q.synchronize();
  }
}

TEST_CASE("threads allocate, copy, trace and free on shared virtual devices", "[virtual][threads]") {
  // The plugin's shared state (allocation tables, the device array, the
  // trace switch, queue registration) under concurrent use; TSan's target.
  axl::Device d0 = vt::gpu(0), d1 = vt::gpu(1);
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  std::thread tracer([&] {
    while (!stop.load()) {
      axl::begin_launch_trace();
      std::this_thread::sleep_for(1ms);
      axl::take_launch_trace();
    }
  });
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      try {
        axl::Device& d = w % 2 ? d1 : d0;
        axl::Device& other = w % 2 ? d0 : d1;
        axl::Queue q = d.create_queue();
        for (int i = 0; i < 40; ++i) {
          const uint64_t n = 1000 + 37 * i + w;
          auto data = random_bytes(n, static_cast<uint32_t>(w * 1000 + i));
          axl::Buffer a = d.allocate(n), b = d.allocate(n), p = other.allocate(n);
          q.copy_from_host(a, data.data(), n);
          q.copy(b, a);
          q.copy(p, b);  // peer
          q.copy(a, p);  // and back
          std::vector<unsigned char> out(n);
          q.copy_to_host(out.data(), a, n);
          q.synchronize();
          if (out != data) failures.fetch_add(1);
        }
      } catch (const std::exception&) {
        failures.fetch_add(1000);  // an axl::Error on a worker: counted, not thrown across threads
      }
    });
  }
  for (auto& t : workers) t.join();
  stop.store(true);
  tracer.join();
  CHECK(failures.load() == 0);
}
