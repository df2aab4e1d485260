// The cpu backend through the core, via axl.hpp: what is the cpu's own:
// device info, buffers, views and host pointers, kernels and modules. The
// cases every device must pass (copies, fills, queues, events, flags, host
// callbacks) are tests/devices/device_cases_test.cpp, run on cpu:0 too.
#include <algorithm>
#include <fstream>
#include <iterator>

#include "test_util.hpp"

using namespace axltest;

namespace {

const std::string kKernels = AXL_TEST_CPU_KERNELS_PATH;
// Before main (discovery reads the environment on the first axl call).
const bool kEnvClean = (clear_axl_env(), true);

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), {});
}

axl::Module kernels_module(const axl::Device& dev) {
  REQUIRE_FALSE(kKernels.empty());  // tests/data's target was not built
  REQUIRE(fs::exists(kKernels));
  return dev.load_module(kKernels);
}

uint32_t div_up(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

}  // namespace

TEST_CASE("cpu device info", "[cpu]") {
  REQUIRE(axl::Device::count("cpu") == 1);
  axl::Device dev = axl::Device::cpu();
  axl::DeviceInfo info = dev.info();
  CHECK(info.backend == "cpu");
  CHECK(info.label == "cpu");
  CHECK(info.api == "cpu");
  CHECK(info.is_host);
  CHECK(info.id == 0);
  CHECK(info.total_memory_bytes > 0);
  CHECK(info.max_single_alloc_bytes > 0);
  CHECK(info.max_single_alloc_bytes <= info.total_memory_bytes);
  CHECK_FALSE(info.model_name.empty());
  auto [free_b, total_b] = dev.memory_info();
  CHECK(total_b > 0);
  CHECK(free_b <= total_b);
  // The same device through "all devices" and through the label.
  bool found = false;
  for (uint32_t i = 0; i < axl::Device::count(); ++i)
    if (axl::Device::get(nullptr, i) == dev) found = true;
  CHECK(found);
  CHECK(axl::Device::get("cpu", 0) == dev);
  // MAX: a device cannot "access" itself as a peer; host devices never.
  CHECK_FALSE(dev.can_access(dev));
  CHECK(dev.create_queue().native_handle() == 0);
}

TEST_CASE("buffers: allocate, views, host pointers", "[cpu][buffer]") {
  axl::Device dev = axl::Device::cpu();
  axl::Buffer b = dev.allocate(1000);
  CHECK(b.size() == 1000);
  void* host = b.host_pointer();
  REQUIRE(host != nullptr);
  // Device memory is aligned to at least 256 bytes (plugin.h); on the cpu the
  // device address is the host pointer.
  CHECK(reinterpret_cast<uintptr_t>(host) % 256 == 0);
  CHECK(b.device_address() == reinterpret_cast<uint64_t>(host));
  CHECK(b.device() == dev);

  axl::Buffer v = b.view(10, 100);
  CHECK(v.size() == 100);
  CHECK(v.host_pointer() == static_cast<char*>(host) + 10);
  CHECK(v.device_address() == b.device_address() + 10);
  axl::Buffer vv = v.view(5, 95);
  CHECK(vv.size() == 95);
  CHECK(vv.host_pointer() == static_cast<char*>(host) + 15);
  CHECK(b.view(0, 1000).size() == 1000);
  CHECK(b.view(999, 1).host_pointer() == static_cast<char*>(host) + 999);

  // Writes through the host pointer are visible through a view and back.
  memset(host, 0, 1000);
  static_cast<unsigned char*>(v.host_pointer())[0] = 0x7e;
  CHECK(static_cast<unsigned char*>(host)[10] == 0x7e);

  axl::Buffer pinned = dev.allocate(4096 + 3, AXL_BUFFER_FLAG_PINNED);
  CHECK(pinned.size() == 4099);
  REQUIRE(pinned.host_pointer() != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(pinned.host_pointer()) % 64 == 0);
  memset(pinned.host_pointer(), 0x11, 4099);

  // Copies retain: a copy of the handle is the same buffer.
  axl::Buffer b2 = b;
  CHECK(b2.get() == b.get());
}

TEST_CASE("built-in test kernels over several grid shapes", "[cpu][kernel]") {
  axl::Device dev = axl::Device::cpu();
  axl::Queue q = dev.create_queue();
  axl::Kernel inc = dev.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  axl::Kernel fill = dev.test_kernel(AXL_TEST_KERNEL_FILL_U32);
  CHECK(inc.name() == "axl_test_increment_u32");
  CHECK(fill.name() == "axl_test_fill_u32");
  const uint32_t n = 10007;
  axl::Buffer b = dev.allocate((n + 16) * sizeof(uint32_t));
  auto* p = static_cast<uint32_t*>(b.host_pointer());
  struct Shape {
    axl::Dim3 grid, block;
  };
  const Shape shapes[] = {
      {{1, 1, 1}, {1, 1, 1}},     {{7, 1, 1}, {32, 1, 1}},   {{3, 2, 2}, {4, 2, 1}},
      {{1000, 1, 1}, {1, 1, 1}},  {{2, 3, 4}, {5, 1, 1}},    {{40, 1, 1}, {256, 1, 1}},
      {{1, 1, 1}, {1024, 1, 1}},  {{10007, 1, 1}, {1, 1, 1}}};
  for (const Shape& s : shapes) {
    INFO("grid " << s.grid.x << "x" << s.grid.y << "x" << s.grid.z << " block " << s.block.x
                 << "x" << s.block.y << "x" << s.block.z);
    for (uint32_t i = 0; i < n + 16; ++i) p[i] = i;
    q.launch(inc, s.grid, s.block, {axl::Arg::buffer(b), axl::Arg::scalar(n)});
    q.synchronize();
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; ++i) bad += p[i] != i + 1;
    CHECK(bad == 0);
    for (uint32_t i = n; i < n + 16; ++i) CHECK(p[i] == i);  // past n: untouched

    const uint32_t value = 0xC0FFEE00u + s.grid.x;
    q.launch(fill, s.grid, s.block,
             {axl::Arg::buffer(b), axl::Arg::scalar(n), axl::Arg::scalar(value)});
    q.synchronize();
    bad = 0;
    for (uint32_t i = 0; i < n; ++i) bad += p[i] != value;
    CHECK(bad == 0);
    CHECK(p[n] == n);
  }
  // Launches on one queue run in order with copies around them.
  q.fill(b, 0, 4);
  for (int i = 0; i < 5; ++i)
    q.launch(inc, {3, 1, 1}, {64, 1, 1}, {axl::Arg::buffer(b), axl::Arg::scalar(n)});
  std::vector<uint32_t> out(n);
  q.copy_to_host(out.data(), b, n * sizeof(uint32_t));
  q.synchronize();
  CHECK(std::count(out.begin(), out.end(), 5u) == n);
}

TEST_CASE("saxpy over 10^7 floats matches a host loop element by element", "[cpu][kernel]") {
  axl::Device dev = axl::Device::cpu();
  axl::Queue q = dev.create_queue();
  axl::Module m = kernels_module(dev);
  axl::Kernel saxpy = m.kernel("saxpy");
  CHECK(saxpy.name() == "saxpy");
  const uint32_t n = 10'000'000;
  std::vector<float> x(n), y(n), want(n);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1024) * 0.25f;
    y[i] = static_cast<float>(i % 977) - 300.0f;
  }
  const float alpha = 3.0f;
  for (uint32_t i = 0; i < n; ++i) want[i] = alpha * x[i] + y[i];
  axl::Buffer bx = dev.allocate(uint64_t(n) * 4), by = dev.allocate(uint64_t(n) * 4);
  q.copy_from_host(bx, x.data(), uint64_t(n) * 4);
  q.copy_from_host(by, y.data(), uint64_t(n) * 4);
  const uint32_t block = 256;
  q.launch(saxpy, {div_up(n, block), 1, 1}, {block, 1, 1},
           {axl::Arg::scalar(alpha), axl::Arg::buffer(bx), axl::Arg::buffer(by),
            axl::Arg::scalar(n)});
  std::vector<float> out(n, -1.0f);
  q.copy_to_host(out.data(), by, uint64_t(n) * 4);
  q.synchronize();
  uint64_t mismatches = 0, first = n;
  for (uint32_t i = 0; i < n; ++i)
    if (out[i] != want[i]) {
      if (first == n) first = i;
      ++mismatches;
    }
  INFO("first mismatch at " << first);
  CHECK(mismatches == 0);
}

TEST_CASE("every block of a 3-D grid runs exactly once", "[cpu][kernel]") {
  axl::Device dev = axl::Device::cpu();
  axl::Queue q = dev.create_queue();
  axl::Module m = kernels_module(dev);
  for (axl::Dim3 grid : {axl::Dim3{5, 4, 3}, axl::Dim3{64, 32, 4}, axl::Dim3{1, 1, 97}}) {
    const uint32_t blocks = grid.x * grid.y * grid.z;
    INFO("grid " << grid.x << "x" << grid.y << "x" << grid.z);
    axl::Buffer idx = dev.allocate((blocks + 1) * 4), counts = dev.allocate((blocks + 1) * 4);
    q.fill(idx, 0xFFFFFFFFu, 4);
    q.fill(counts, 0, 4);
    q.launch(m.kernel("write_block_index"), grid, {2, 2, 1}, {axl::Arg::buffer(idx)});
    q.launch(m.kernel("count_block_runs"), grid, {1, 1, 1}, {axl::Arg::buffer(counts)});
    std::vector<uint32_t> vi(blocks + 1), vc(blocks + 1);
    q.copy_to_host(vi.data(), idx, vi.size() * 4);
    q.copy_to_host(vc.data(), counts, vc.size() * 4);
    q.synchronize();
    uint32_t bad_idx = 0, bad_count = 0;
    for (uint32_t b = 0; b < blocks; ++b) {
      bad_idx += vi[b] != b;
      bad_count += vc[b] != 1;
    }
    CHECK(bad_idx == 0);
    CHECK(bad_count == 0);
    CHECK(vi[blocks] == 0xFFFFFFFFu);
    CHECK(vc[blocks] == 0);
  }
}

TEST_CASE("shared memory per block", "[cpu][kernel]") {
  axl::Device dev = axl::Device::cpu();
  axl::Queue q = dev.create_queue();
  axl::Module m = kernels_module(dev);
  axl::Kernel k = m.kernel("use_shared");
  const axl::Dim3 grid{4, 3, 2}, block{16, 2, 1};
  const uint32_t blocks = 24, threads = 32;
  axl::Buffer out = dev.allocate(blocks * 4);
  q.fill(out, 0, 4);
  q.launch(k, grid, block, {axl::Arg::buffer(out)}, threads * 4);
  std::vector<uint32_t> v(blocks);
  q.copy_to_host(v.data(), out, blocks * 4);
  q.synchronize();
  for (uint32_t b = 0; b < blocks; ++b) CHECK(v[b] == threads * b + threads * (threads - 1) / 2);
  // Without shared memory the kernel reports the missing scratch.
  q.launch(k, grid, block, {axl::Arg::buffer(out)}, 0);
  q.copy_to_host(v.data(), out, blocks * 4);
  q.synchronize();
  for (uint32_t b = 0; b < blocks; ++b) CHECK(v[b] == 0xFFFFFFFFu);
}

TEST_CASE("modules from a file and from bytes", "[cpu][module]") {
  axl::Device dev = axl::Device::cpu();
  axl::Queue q = dev.create_queue();
  auto bytes = read_file(kKernels.empty() ? "/nonexistent" : kKernels);
  REQUIRE(bytes.size() > 4);
  axl::Module from_file = kernels_module(dev);
  axl::Module from_bytes = dev.load_module(bytes.data(), bytes.size());
  axl::Module explicit_format =
      dev.load_module(bytes.data(), bytes.size(), AXL_MODULE_FORMAT_SHARED_OBJECT);
  const uint32_t n = 1000;
  std::vector<float> a(n), b(n);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = float(i);
    b[i] = float(2 * i + 1);
  }
  for (axl::Module* m : {&from_file, &from_bytes, &explicit_format}) {
    axl::Kernel add = m->kernel("vector_add_f32");
    axl::Buffer ba = dev.allocate(n * 4), bb = dev.allocate(n * 4), bc = dev.allocate(n * 4);
    q.copy_from_host(ba, a.data(), n * 4);
    q.copy_from_host(bb, b.data(), n * 4);
    q.launch(add, {4, 1, 1}, {32, 1, 1},
             {axl::Arg::buffer(ba), axl::Arg::buffer(bb), axl::Arg::buffer(bc),
              axl::Arg::scalar(n)});
    std::vector<float> c(n);
    q.copy_to_host(c.data(), bc, n * 4);
    q.synchronize();
    for (uint32_t i = 0; i < n; ++i) REQUIRE(c[i] == float(3 * i + 1));
  }
}

TEST_CASE("an unknown kernel name is NOT_FOUND naming the kernel", "[cpu][module]") {
  axl::Device dev = axl::Device::cpu();
  axl::Module m = kernels_module(dev);
  require_error([&] { m.kernel("no_such_kernel_xyz"); }, AXL_ERROR_NOT_FOUND,
                {"no_such_kernel_xyz"});
  // Exported by nothing in the module, though a libc symbol of that name
  // exists in the process: RTLD_LOCAL lookups stay within the module.
  require_error([&] { m.kernel("memcpy_is_not_a_kernel"); }, AXL_ERROR_NOT_FOUND,
                {"memcpy_is_not_a_kernel"});
}

TEST_CASE("a module and kernel released while a launch is pending", "[cpu][module]") {
  // plugin.h: module_unload may run while launches of its kernels are
  // pending; the plugin defers the unload until they ran.
  axl::Device dev = axl::Device::cpu();
  axl::Queue q = dev.create_queue();
  axl::Flag gate = dev.create_flag();
  axl::Buffer out = dev.allocate(8 * 4);
  q.fill(out, 0, 4);
  q.wait_flag(gate, 1);
  {
    axl::Module m = kernels_module(dev);
    q.launch(m.kernel("count_block_runs"), {8, 1, 1}, {1, 1, 1}, {axl::Arg::buffer(out)});
  }  // kernel and module released here, the launch still held by the gate
  gate.signal(1);
  std::vector<uint32_t> v(8);
  q.copy_to_host(v.data(), out, 32);
  q.synchronize();
  for (uint32_t c : v) CHECK(c == 1);
}
