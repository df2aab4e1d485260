// Kernel launches (the built-in test kernels of plugin.h) and the launch
// trace. Traces are begun with AXL_LAUNCH_TRACE_INCLUDE_HOST so that host
// backends are held to the same rule as accelerators.
#include <catch2/catch.hpp>

#include <cstring>
#include <iterator>

#include "cts.hpp"

namespace cts {
namespace {

constexpr uint32_t kSentinel = 0xcafebabe;
constexpr const char* kVirtualReason =
    "execution not checked: the backend declares AXL_PLUGIN_FLAG_VIRTUAL (it records launches "
    "without running them)";

struct Shape {
  axl::Dim3 grid, block;
  uint32_t n;
};

// Whole, partial and surplus coverage, 1-D to 3-D. plugin.h defines the test
// kernels over i < n whatever the grid, so a grid smaller than n (the last
// shape) must still reach every element.
const Shape kShapes[] = {
    {{1, 1, 1}, {1, 1, 1}, 1},      {{4, 1, 1}, {64, 1, 1}, 256}, {{3, 1, 1}, {100, 1, 1}, 257},
    {{2, 3, 2}, {4, 2, 2}, 190},    {{7, 5, 1}, {3, 1, 1}, 100},  {{1, 1, 1}, {32, 1, 1}, 1000},
};

std::string dims(const uint32_t v[3]) { return cat("(", v[0], ", ", v[1], ", ", v[2], ")"); }

struct Traced {
  bool on = false;
};

// Starts a launch trace if the backend can report to one.
Traced begin_trace(Ctx& c) {
  Traced t;
  if (c.backend().has_slot("backend_set_tracing")) {
    axl::begin_launch_trace(true);
    t.on = true;
  }
  return t;
}

// One step of a fixed sequence of operations, as the trace must report it.
struct Expected {
  int32_t kind, memcpy_kind;
  uint64_t bytes;  // memcpy or memset bytes; 0 for launches
  uint32_t grid[3], block[3];
};

// Enqueues the sequence on a fresh queue and buffers, waits, and returns
// what was expected. Buffers live until the caller's trace is taken.
std::vector<Expected> enqueue_sequence(Ctx& c, std::vector<axl::Buffer>& keep, axl::Queue& q,
                                       std::vector<uint8_t>& host) {
  const axl::Device& dev = c.dev();
  std::vector<Expected> want;
  q = dev.create_queue();
  keep = {dev.allocate(4096), dev.allocate(4096)};
  host.assign(4096, 0x5a);
  q.copy_from_host(keep[0], host.data(), 1000, 8);
  want.push_back({AXL_TRACE_MEMCPY, AXL_MEMCPY_HTOD, 1000, {}, {}});
  q.copy(keep[1], 16, keep[0], 8, 512);
  want.push_back({AXL_TRACE_MEMCPY, AXL_MEMCPY_DTOD, 512, {}, {}});
  q.copy_to_host(host.data(), keep[1], 256, 16);
  want.push_back({AXL_TRACE_MEMCPY, AXL_MEMCPY_DTOH, 256, {}, {}});
  if (c.backend().has_slot("queue_fill")) {
    q.fill(keep[0], 0x11223344, 4, 64, 128);
    want.push_back({AXL_TRACE_MEMSET, AXL_MEMCPY_NONE, 128, {}, {}});
  }
  if (c.backend().has_slot("device_get_test_kernel") && c.backend().has_slot("queue_launch")) {
    axl::Kernel k = dev.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
    const uint32_t n = 64;
    q.launch(k, {2, 1, 1}, {32, 1, 1}, {axl::Arg::buffer(keep[1]), axl::Arg::scalar(n)});
    want.push_back({AXL_TRACE_KERNEL_LAUNCH, AXL_MEMCPY_NONE, 0, {2, 1, 1}, {32, 1, 1}});
  }
  q.synchronize();
  return want;
}

const char* kind_name(int32_t k) {
  return k == AXL_TRACE_KERNEL_LAUNCH ? "launch" : k == AXL_TRACE_MEMCPY ? "memcpy" : k == AXL_TRACE_MEMSET ? "memset" : "?";
}

}  // namespace

TEST_CASE("cts.kernel.test_kernel_grids", "[kernel]") {
  for_each_device("cts.kernel.test_kernel_grids", [](Ctx& c) {
    c.need_slot("device_get_test_kernel");
    c.need_slot("queue_launch");
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    axl::Kernel inc = dev.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
    axl::Kernel fill = dev.test_kernel(AXL_TEST_KERNEL_FILL_U32);
    c.check(!inc.name().empty() && !fill.name().empty(), "a test kernel has no name");

    Traced traced = begin_trace(c);
    std::vector<axl::Buffer> bufs;
    std::vector<std::vector<uint32_t>> outs;
    std::vector<std::vector<uint32_t>> inits;
    for (size_t s = 0; s < std::size(kShapes); ++s) {
      const Shape& sh = kShapes[s];
      const uint32_t value = 1000 + static_cast<uint32_t>(s);
      inits.emplace_back(sh.n + 16, kSentinel);
      bufs.push_back(dev.allocate((sh.n + 16) * 4));
      q.copy_from_host(bufs.back(), inits.back().data(), (sh.n + 16) * 4);
      q.launch(fill, sh.grid, sh.block,
               {axl::Arg::buffer(bufs.back()), axl::Arg::scalar(sh.n), axl::Arg::scalar(value)});
      q.launch(inc, sh.grid, sh.block, {axl::Arg::buffer(bufs.back()), axl::Arg::scalar(sh.n)});
      outs.emplace_back(sh.n + 16, 0);
      q.copy_to_host(outs.back().data(), bufs.back(), (sh.n + 16) * 4);
    }
    q.synchronize();

    if (traced.on) {
      // The launches appear, in order, with the shapes they were given.
      std::vector<axl::LaunchTraceEntry> launches;
      for (auto& e : axl::take_launch_trace())
        if (e.raw.kind == AXL_TRACE_KERNEL_LAUNCH) launches.push_back(e);
      c.check(launches.size() == 2 * std::size(kShapes),
              cat("the launch trace holds ", launches.size(), " launches; ", 2 * std::size(kShapes),
                  " were enqueued"));
      for (size_t k = 0; k < launches.size() && k < 2 * std::size(kShapes); ++k) {
        const Shape& sh = kShapes[k / 2];
        const auto& r = launches[k].raw;
        const uint32_t g[3] = {sh.grid.x, sh.grid.y, sh.grid.z}, b[3] = {sh.block.x, sh.block.y, sh.block.z};
        c.check(!launches[k].name.empty(), cat("launch ", k, " has no name in the trace"));
        c.check(std::memcmp(r.grid, g, sizeof g) == 0 && std::memcmp(r.block, b, sizeof b) == 0,
                cat("launch ", k, " is traced with grid ", dims(r.grid), " block ", dims(r.block),
                    "; it was grid ", dims(g), " block ", dims(b)));
      }
    } else {
      c.note("backend_set_tracing is NULL: launches were not checked against the trace");
    }

    if (c.backend().is_virtual()) {
      c.skip_part(kVirtualReason);
      return;
    }
    for (size_t s = 0; s < std::size(kShapes); ++s) {
      const Shape& sh = kShapes[s];
      const uint32_t want = 1000 + static_cast<uint32_t>(s) + 1;
      const std::string shape = cat("grid (", sh.grid.x, ", ", sh.grid.y, ", ", sh.grid.z, ") block (",
                                    sh.block.x, ", ", sh.block.y, ", ", sh.block.z, "), n = ", sh.n);
      const auto& o = outs[s];
      size_t bad = 0, first = 0;
      for (uint32_t i = 0; i < sh.n; ++i)
        if (o[i] != want && bad++ == 0) first = i;
      c.check(bad == 0, cat("FILL_U32 then INCREMENT_U32 over ", shape, ": ", bad,
                            " element(s) wrong, first [", first, "] = ", bad ? o[first] : 0,
                            ", expected ", want));
      for (uint32_t i = sh.n; i < sh.n + 16; ++i)
        if (o[i] != kSentinel) {
          c.check(false, cat(shape, ": element ", i, " past n was written (", o[i], ")"));
          break;
        }
    }
  });
}

TEST_CASE("cts.kernel.local_arg", "[kernel]") {
  // AXL_KERNEL_ARG_LOCAL (ABI 1.4): the core refuses 0 bytes; a backend
  // whose kernels have no __local parameter refuses the kind, naming the
  // argument, and runs nothing; api "opencl" runs a __local kernel with it.
  for_each_device("cts.kernel.local_arg", [](Ctx& c) {
    c.need_slot("device_get_test_kernel");
    c.need_slot("queue_launch");
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    axl::Kernel inc = dev.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
    const uint32_t n = 64;
    axl::Buffer buf = dev.allocate(n * 4);
    const uint32_t g[3] = {1, 1, 1}, b[3] = {64, 1, 1};
    axl_launch_arg args[2] = {axl::Arg::buffer(buf).raw, axl::Arg::local(0).raw};
    c.expect_status(axl_queue_launch(q.get(), inc.get(), g, b, 0, args, 2), AXL_ERROR_INVALID_ARGUMENT,
                    "a local-memory argument of 0 bytes", "0 bytes");
    // INCREMENT_U32's second parameter is a uint32, never local memory.
    args[1] = axl::Arg::local(256).raw;
    const axl_status s = axl_queue_launch(q.get(), inc.get(), g, b, 0, args, 2);
    const LastError e = last_error();
    c.check(s == AXL_ERROR_INVALID_ARGUMENT || s == AXL_ERROR_UNSUPPORTED,
            cat("a local-memory argument where the test kernel takes a uint32: ", axl_status_name(s),
                "; expected INVALID_ARGUMENT or UNSUPPORTED"));
    c.check(s == AXL_SUCCESS || !e.message.empty(), "the refused local-memory argument has no message");
    q.synchronize();
    if (c.info().api != "opencl" || !c.backend().has_slot("module_compile")) return;

    // Each block reverses its elements through __local memory.
    const char* source =
        "__kernel void axl_cts_reverse(__global uint* x, __local uint* tmp) {\n"
        "  size_t l = get_local_id(0), m = get_local_size(0), i = get_global_id(0);\n"
        "  tmp[l] = x[i];\n"
        "  barrier(CLK_LOCAL_MEM_FENCE);\n"
        "  x[i] = tmp[m - 1 - l];\n"
        "}\n";
    axl_module_t m = nullptr;
    c.ok(axl_module_compile(dev.get(), AXL_SOURCE_LANGUAGE_OPENCL_C, source, "axl_cts_reverse.cl", nullptr, 0,
                            &m),
         "compiling an OpenCL C kernel with a __local parameter");
    axl::Module mod(m);
    std::vector<uint32_t> in(n), out(n, 0);
    for (uint32_t i = 0; i < n; ++i) in[i] = i;
    q.copy_from_host(buf, in.data(), n * 4);
    q.launch(mod.kernel("axl_cts_reverse"), {2, 1, 1}, {32, 1, 1}, {axl::Arg::buffer(buf), axl::Arg::local(32 * 4)});
    q.copy_to_host(out.data(), buf, n * 4);
    q.synchronize();
    size_t bad = 0;
    for (uint32_t i = 0; i < n; ++i) bad += out[i] != (i / 32) * 32 + (31 - i % 32);
    c.check(bad == 0, cat("a __local reversal over 2 blocks of 32: ", bad, " of ", n, " elements wrong"));
  });
}

TEST_CASE("cts.trace.every_op_once", "[trace]") {
  for_each_device("cts.trace.every_op_once", [](Ctx& c) {
    c.need_slot("backend_set_tracing");
    std::vector<axl::Buffer> keep;
    axl::Queue q;
    std::vector<uint8_t> host;
    axl::begin_launch_trace(true);
    const std::vector<Expected> want = enqueue_sequence(c, keep, q, host);
    const auto got = axl::take_launch_trace();
    c.check(got.size() == want.size(),
            cat(want.size(), " operations were enqueued, the trace holds ", got.size()));
    for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
      const auto& e = got[k].raw;
      const Expected& w = want[k];
      const std::string at = cat("trace entry ", k, " (", kind_name(w.kind), ")");
      c.check(e.kind == w.kind, cat(at, ": kind ", kind_name(e.kind)));
      c.check(e.memcpy_kind == w.memcpy_kind,
              cat(at, ": memcpy_kind ", e.memcpy_kind, ", expected ", w.memcpy_kind));
      c.check(!got[k].name.empty(), cat(at, ": no name"));
      c.check(e.sequence == k, cat(at, ": sequence ", e.sequence));
      c.check(e.stream_index == 0, cat(at, ": stream_index ", e.stream_index, "; one queue was used"));
      c.check(e.device_id == c.info().id, cat(at, ": device_id ", e.device_id, ", expected ", c.info().id));
      c.check(e.semantic_hash != 0, cat(at, ": semantic_hash is 0"));
      if (w.kind == AXL_TRACE_MEMCPY)
        c.check(e.memcpy_byte_size == w.bytes, cat(at, ": ", e.memcpy_byte_size, " bytes, expected ", w.bytes));
      if (w.kind == AXL_TRACE_MEMSET)
        c.check(e.memset_byte_size == w.bytes && e.memset_value == 0x11223344 && e.memset_value_size == 4,
                cat(at, ": memset of ", e.memset_byte_size, " bytes, value 0x", std::hex, e.memset_value,
                    std::dec, " size ", e.memset_value_size, "; expected 128 bytes of 0x11223344, size 4"));
      if (w.kind == AXL_TRACE_KERNEL_LAUNCH)
        c.check(std::memcmp(e.grid, w.grid, sizeof w.grid) == 0 && std::memcmp(e.block, w.block, sizeof w.block) == 0,
                cat(at, ": grid ", dims(e.grid), " block ", dims(e.block)));
    }
    // Taking the trace ended it: later work is not recorded.
    q.copy_from_host(keep[0], host.data(), 64);
    q.synchronize();
    const auto after = axl::take_launch_trace();
    c.check(after.empty(), cat("work after the trace was taken was still recorded (", after.size(),
                               " entries)"));
  });
}

TEST_CASE("cts.trace.hash_stable", "[trace]") {
  for_each_device("cts.trace.hash_stable", [](Ctx& c) {
    c.need_slot("backend_set_tracing");
    std::vector<std::vector<axl::LaunchTraceEntry>> runs;
    for (int run = 0; run < 2; ++run) {
      // Fresh queue and buffers each time: the hash must not see addresses.
      std::vector<axl::Buffer> keep;
      axl::Queue q;
      std::vector<uint8_t> host;
      axl::begin_launch_trace(true);
      enqueue_sequence(c, keep, q, host);
      runs.push_back(axl::take_launch_trace());
    }
    c.require(runs[0].size() == runs[1].size() && !runs[0].empty(),
              cat("two identical runs traced ", runs[0].size(), " and ", runs[1].size(), " entries"));
    for (size_t k = 0; k < runs[0].size(); ++k) {
      const auto &x = runs[0][k].raw, &y = runs[1][k].raw;
      c.check(x.semantic_hash == y.semantic_hash,
              cat("entry ", k, " (", runs[0][k].name, "): hash 0x", std::hex, x.semantic_hash, " then 0x",
                  y.semantic_hash, " for the same work"));
      c.check(runs[0][k].name == runs[1][k].name && x.stream_index == y.stream_index,
              cat("entry ", k, ": name or stream index differ between identical runs"));
      for (size_t j = 0; j < k; ++j)
        c.check(runs[0][j].raw.semantic_hash != x.semantic_hash,
                cat("entries ", j, " and ", k, " are different work with the same hash"));
    }
  });
}

}  // namespace cts
