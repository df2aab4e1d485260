// n-d buffers on a device the host cannot read (the virtual backend):
// strided copies (axl_queue_copy_layout) split into per-run copies or staged
// through host memory, between virtual devices and the cpu; host hazard
// tracking with simulated latency (axl_buffer_host_wait waits for exactly
// the stamped work) and with injected enqueue failures (poisoned
// destinations); batched copies across devices; external device memory.
// Results are compared against a reference element-by-element copy; data
// moves with copy_from_host / copy_to_host only.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "../core/layout_test_util.hpp"
#include "virtual_test_util.hpp"

using namespace layouttest;
using namespace std::chrono_literals;

namespace {

const bool kEnvironment = vt::prepare_environment({{"AXL_VIRTUAL_DEVICES", "2"}});

// Settings the virtual plugin reads once per process: each of these scenarios
// is a hidden child case that its parent case runs in a process of its own.
constexpr const char* kLatencyUs = "100000";  // 100 ms per copy
constexpr const char* kFaultRules = "memcpy_htod:1=INTERNAL;memcpy_dtod:2=DEVICE_LOST;memcpy_dtoh:2=INTERNAL";
constexpr const char* kRecordRule = "event_record:1=INTERNAL";
const vt::Env kLatencyEnv = {{"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_LATENCY_US", kLatencyUs}};
const vt::Env kFaultEnv = {{"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_FAIL", kFaultRules}};
const vt::Env kRecordEnv = {
    {"AXL_VIRTUAL_DEVICES", "1"}, {"AXL_VIRTUAL_FAIL", kRecordRule}, {"AXL_VIRTUAL_LATENCY_US", kLatencyUs}};

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

size_t memcpy_entries(const std::vector<axl::LaunchTraceEntry>& t) {
  return static_cast<size_t>(
      std::count_if(t.begin(), t.end(), [](const axl::LaunchTraceEntry& e) { return e.raw.kind == AXL_TRACE_MEMCPY; }));
}

// Every element of `l` lies inside a buffer of `size` bytes.
void require_inside(const axl_layout& l, size_t size) {
  for (int64_t o : element_offsets(l)) REQUIRE((o >= 0 && o + l.element_size <= static_cast<int64_t>(size)));
}

// Runs copy_layout on q and compares both buffers, byte for byte, with a
// reference element-by-element copy (destination gaps unchanged). Returns
// the device copies the launch trace saw (accelerators only).
size_t check_copy_layout(const axl::Queue& q, const axl::Buffer& dst, const axl_layout& dl, const axl::Buffer& src,
                         const axl_layout& sl) {
  auto dst_before = read_back(dst), src_before = read_back(src);
  require_inside(dl, dst_before.size());
  require_inside(sl, src_before.size());
  auto expected = reference_copy(dst_before, dl, src_before, sl);
  axl::begin_launch_trace();
  axl_status s = axl_queue_copy_layout(q.get(), dst.get(), &dl, src.get(), &sl);
  INFO(axl_last_error_message());
  q.synchronize();
  auto trace = axl::take_launch_trace();
  REQUIRE(s == AXL_SUCCESS);
  check_same_bytes(read_back(dst), expected);
  if (src.get() != dst.get()) CHECK((read_back(src) == src_before));
  return memcpy_entries(trace);
}

// One copy for check_copy_layout: on `q`, `src` at `sl` into `dst` at `dl`.
struct CopyCheck {
  const axl::Queue& q;
  const axl::Buffer& dst;
  const axl_layout& dl;
  const axl::Buffer& src;
  const axl_layout& sl;
};

void check_copies(const std::vector<CopyCheck>& copies) {
  for (const CopyCheck& c : copies) check_copy_layout(c.q, c.dst, c.dl, c.src, c.sl);
}

}  // namespace

// ====================================================== strided copies ==

TEST_CASE("copy_layout on a virtual device: few runs are per-run copies", "[virtual][copy_layout]") {
  REQUIRE(kEnvironment);
  axl::Device g = vt::gpu(0);
  axl::Queue q = g.create_queue();
  axl::Buffer src = filled(g, 8192, 1), dst = filled(g, 8192, 2);
  axl_layout m = make_layout(4, {10, 3});

  // Column 1 of a 10x3 int32 matrix into a dense vector: 10 runs of 4 bytes.
  CHECK(check_copy_layout(q, dst, make_layout(4, {10}), src, index_ok(m, {all(), at(1)})) == 10);
  // ... and back into column 2 (gaps keep their bytes).
  CHECK(check_copy_layout(q, dst, index_ok(m, {all(), at(2)}), src, make_layout(4, {10})) == 10);
  // Rows reversed: 10 runs of 12 bytes.
  axl_layout big = make_layout(4, {10, 3});
  big.offset = 1000;
  CHECK(check_copy_layout(q, dst, big, src, index_ok(m, {every(-1)})) == 10);
  // Dense on both sides: one copy.
  CHECK(check_copy_layout(q, dst, big, src, m) == 1);
  // Negative strides on both sides, odd element size.
  axl_layout s3 = index_ok(make_layout(3, {8, 6}), {every(-2), slice(5, {}, -1)});
  axl_layout d3 = index_ok(make_layout(3, {4, 12}), {all(), every(2)});
  check_copy_layout(q, dst, d3, src, s3);
}

TEST_CASE("copy_layout on a virtual device: many runs are staged through host memory", "[virtual][copy_layout]") {
  REQUIRE(kEnvironment);
  axl::Device g = vt::gpu(0);
  axl::Queue q = g.create_queue();
  axl::Buffer src = filled(g, 64 * 1024, 3), dst = filled(g, 64 * 1024, 4);
  axl_layout m = make_layout(4, {2000, 3});

  SECTION("a column of a 2000x3 matrix, both directions") {
    size_t n = check_copy_layout(q, dst, make_layout(4, {2000}), src, index_ok(m, {all(), at(1)}));
    CHECK(n <= 3);  // not 2000 device copies
    // Into a column: the rows' other bytes survive the read-modify-write.
    n = check_copy_layout(q, dst, index_ok(m, {all(), at(0)}), src, make_layout(4, {2000}));
    CHECK(n <= 3);
    n = check_copy_layout(q, dst, index_ok(m, {every(-1), at(2)}), src, index_ok(m, {all(), at(1)}));
    CHECK(n <= 4);
  }
  SECTION("every other element of 5000, into every other, reversed") {
    axl_layout v = make_layout(2, {10000});
    size_t n = check_copy_layout(q, dst, index_ok(v, {slice(9999, {}, -2)}), src, index_ok(v, {every(2)}));
    CHECK(n <= 4);
  }
  SECTION("odd elements into even ones of the same buffer (disjoint bytes)") {
    axl_layout v = make_layout(4, {6000});
    size_t n = check_copy_layout(q, src, index_ok(v, {every(2)}), src, index_ok(v, {slice(1, {}, 2)}));
    CHECK(n <= 4);
  }
  SECTION("element sizes 1, 3, 8") {
    for (uint32_t es : {1u, 3u, 8u}) {
      INFO("element size " << es);
      axl_layout s = index_ok(make_layout(es, {1500, 2}), {every(-1), at(1)});
      axl_layout d = index_ok(make_layout(es, {3000}), {slice(1, {}, 2)});
      check_copy_layout(q, dst, d, src, s);
    }
  }
  SECTION("differing shapes are staged whatever the run count") {
    axl_layout s = index_ok(make_layout(4, {6, 8}), {all(), every(2)});  // 6x4
    axl_layout d = index_ok(make_layout(4, {8, 6}), {every(-1), slice(1, {}, 2)});  // 8x3
    check_copy_layout(q, dst, d, src, s);
  }
  SECTION("zero elements: nothing enqueued, nothing changed") {
    axl_layout e = make_layout(4, {0, 5});
    axl_layout e2 = index_ok(m, {slice(5, {}, -1), at(0)});
    REQUIRE(e2.shape[0] == 6);
    e2.shape[0] = 0;
    auto before = read_back(dst);
    CHECK(check_copy_layout(q, dst, e, src, e2) == 0);
    CHECK((read_back(dst) == before));
  }
}

TEST_CASE("copy_layout between devices: virtual, cpu, peer, pinned", "[virtual][copy_layout]") {
  REQUIRE(kEnvironment);
  axl::Device g0 = vt::gpu(0), g1 = vt::gpu(1), cpu = axl::Device::cpu();
  axl::Queue q0 = g0.create_queue(), q1 = g1.create_queue();
  axl::Buffer v0 = filled(g0, 32 * 1024, 5), v1 = filled(g1, 32 * 1024, 6), c = filled(cpu, 32 * 1024, 7);
  axl::Buffer p0 = filled(g0, 32 * 1024, 8, AXL_BUFFER_FLAG_PINNED);
  axl_layout m = make_layout(4, {2000, 3}), small = make_layout(4, {10, 3});
  const axl_layout col_many = index_ok(m, {all(), at(1)}), col_few = index_ok(small, {every(-1), at(2)});
  const axl_layout dense_many = make_layout(4, {2000}), dense_few = make_layout(4, {10});
  const axl_layout rcol_many = index_ok(m, {every(-1), at(0)});

  // Each route, a section of its own: {queue, destination, its layout, source, its layout} per copy.
  const std::pair<const char*, std::vector<CopyCheck>> routes[] = {
      {"cpu -> virtual", {{q0, v0, dense_few, c, col_few}, {q0, v0, col_few, c, dense_few},
                          {q0, v0, dense_many, c, col_many}, {q0, v0, rcol_many, c, col_many}}},
      {"virtual -> cpu", {{q0, c, dense_few, v0, col_few}, {q0, c, col_few, v0, col_few},
                          {q0, c, col_many, v0, dense_many}, {q0, c, rcol_many, v0, col_many}}},
      {"virtual device 0 -> 1 (peer)", {{q0, v1, dense_few, v0, col_few}, {q1, v1, col_few, v0, col_few},
                                        {q1, v1, rcol_many, v0, col_many}, {q0, v0, col_many, v1, dense_many}}},
  };
  for (const auto& [name, copies] : routes) DYNAMIC_SECTION(name) { check_copies(copies); }
  SECTION("pinned memory of a virtual device") {
    check_copies({{q0, p0, col_many, v0, col_many}, {q0, v0, rcol_many, p0, col_many}});
    axl::Buffer p1 = filled(g0, 32 * 1024, 9, AXL_BUFFER_FLAG_PINNED);
    check_copies({{q0, p1, rcol_many, p0, col_many}, {q0, p1, dense_few, p0, col_few}});
  }
  SECTION("layouts are relative to a view") {
    axl::Buffer view = v0.view(1000, 4000);
    check_copy_layout(q0, view, index_ok(small, {every(-1), at(0)}), v1, col_few);
    auto whole_before = read_back(v0);
    auto src = read_back(v1);
    check_copy_layout(q0, view, dense_few, v1, col_few);
    auto whole = read_back(v0);
    auto soffs = element_offsets(col_few);
    for (size_t i = 0; i < soffs.size(); ++i) CHECK(memcmp(whole.data() + 1000 + 4 * i, src.data() + soffs[i], 4) == 0);
    CHECK(std::equal(whole.begin(), whole.begin() + 1000, whole_before.begin()));
    CHECK(std::equal(whole.begin() + 1040, whole.end(), whole_before.begin() + 1040));
    // Inside the allocation but past the view's end.
    axl_layout past = make_layout(4, {10});
    past.offset = 3990;
    vt::expect_error([&] { axl::check(axl_queue_copy_layout(q0.get(), view.get(), &past, v1.get(), &dense_few)); },
                     AXL_ERROR_OUT_OF_RANGE);
  }
  SECTION("errors on device memory") {
    axl_layout past = make_layout(4, {10, 3});
    past.offset = 32 * 1024 - 100;
    vt::expect_error([&] { axl::check(axl_queue_copy_layout(q0.get(), v0.get(), &past, v1.get(), &small)); },
                     AXL_ERROR_OUT_OF_RANGE);
    axl_layout below = make_layout(4, {4});
    below.strides[0] = -8;
    below.offset = 16;
    axl_layout four = make_layout(4, {4});
    vt::expect_error([&] { axl::check(axl_queue_copy_layout(q0.get(), v0.get(), &four, v1.get(), &below)); },
                     AXL_ERROR_OUT_OF_RANGE);
    axl_layout nine = make_layout(4, {9});
    vt::expect_error([&] { axl::check(axl_queue_copy_layout(q0.get(), v0.get(), &nine, v1.get(), &dense_few)); },
                     AXL_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("copy_layout on virtual devices: randomized layouts against the reference", "[virtual][copy_layout]") {
  REQUIRE(kEnvironment);
  axl::Device g0 = vt::gpu(0), g1 = vt::gpu(1), cpu = axl::Device::cpu();
  Rnd rnd(4242);
  axl::Buffer bufs[4] = {filled(g0, 1 << 20, 11), filled(g0, 1 << 20, 12), filled(g1, 1 << 20, 13),
                         filled(cpu, 1 << 20, 14)};
  axl::Queue queues[3] = {g0.create_queue(), g0.create_queue(), g1.create_queue()};
  for (int iter = 0; iter < 80; ++iter) {
    INFO("case " << iter);
    // Large first extents now and then, past the per-run limit.
    const RandomCopy c = random_copy(rnd, 4, 4);
    int si = static_cast<int>(rnd(0, 3)), di = static_cast<int>(rnd(0, 2));
    if (di == si) di = (di + 1) % 3;
    // The destination's device runs the copy.
    check_copy_layout(queues[di], bufs[di], c.dst, bufs[si], c.src);
  }
}

// ======================================================= host hazards ==

TEST_CASE("buffer flags on a virtual device", "[virtual][hazard]") {
  REQUIRE(kEnvironment);
  axl::Device g = vt::gpu(0);
  axl::Buffer b = g.allocate(4096, AXL_BUFFER_FLAG_PINNED | AXL_BUFFER_FLAG_TRACKED);
  uint32_t f = 0;
  REQUIRE(axl_buffer_flags(b.get(), &f) == AXL_SUCCESS);
  CHECK(f == (AXL_BUFFER_FLAG_PINNED | AXL_BUFFER_FLAG_TRACKED));
  CHECK(b.host_pointer() != nullptr);
  axl::Buffer d = g.allocate(4096, AXL_BUFFER_FLAG_TRACKED);
  REQUIRE(axl_buffer_flags(d.get(), &f) == AXL_SUCCESS);
  CHECK(f == AXL_BUFFER_FLAG_TRACKED);
  vt::expect_error([&] { d.host_pointer(); }, AXL_ERROR_INVALID_STATE);
}

TEST_CASE("child: host_wait with simulated latency", "[.child]") {
  REQUIRE(env_or_empty("AXL_VIRTUAL_LATENCY_US") == kLatencyUs);
  axl::Device g = vt::gpu(0);
  axl::Queue q = g.create_queue(), q2 = g.create_queue();
  const size_t n = 4096;
  auto data = random_bytes(n, 51), data2 = random_bytes(n, 52);
  axl::Buffer d = g.allocate(n), d2 = g.allocate(n), scratch = g.allocate(n);
  q.copy_from_host(d, data.data(), n);
  q.copy_from_host(d2, data2.data(), n);
  q.synchronize();
  axl::Buffer p = g.allocate(n, AXL_BUFFER_FLAG_PINNED | AXL_BUFFER_FLAG_TRACKED);
  auto* host = static_cast<unsigned char*>(p.host_pointer());
  memset(host, 0, n);
  // The fill kernel with `value` over all n bytes of `b` (a write of b).
  const axl::Kernel fill = g.test_kernel(AXL_TEST_KERNEL_FILL_U32);
  auto launch_fill = [&](const axl::Buffer& b, uint32_t value) {
    const uint32_t words = n / 4;
    q.launch(fill, {1, 1, 1}, {32, 1, 1}, {axl::Arg::buffer(b), axl::Arg::scalar(words), axl::Arg::scalar(value)});
  };

  SECTION("a read waits for the copy that wrote, without synchronize") {
    auto t0 = std::chrono::steady_clock::now();
    q.copy(p, 0, d, 0, n);
#if !defined(__SANITIZE_THREAD__)
    // Without the wait the host sees the old bytes (the copy lands late).
    CHECK(std::all_of(host, host + n, [](unsigned char c) { return c == 0; }));
#endif
    REQUIRE(axl_buffer_host_wait(p.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    CHECK(ms_since(t0) >= 90.0);
    CHECK(std::equal(data.begin(), data.end(), host));
    q.synchronize();
  }
  SECTION("a read does not wait for later work on the same queue") {
    axl::Flag gate = g.create_flag();
    q.copy(p, 0, d2, 0, n);
    q.wait_flag(gate, 1);
    q.copy(scratch, 0, d, 0, n);
    Watchdog w(gate, 5000ms);
    const double waited = host_wait_ms(p, AXL_ACCESS_READ);
    CHECK(waited >= 90.0);
    CHECK(waited < 2500.0);
    CHECK(std::equal(data2.begin(), data2.end(), host));
    w.fire_now();
    q.synchronize();
  }
  SECTION("a read does not wait for later, unrelated copies on the same queue") {
    // axl.h: "Only the stamped work is waited for, not the queues."
    q.copy(p, 0, d, 0, n);  // 100 ms
    // 600 ms more: copies, fills and launches that touch no tracked buffer.
    for (int i = 0; i < 2; ++i) {
      q.copy(scratch, 0, d2, 0, n);
      q.fill(scratch, 0x11, 1);
      launch_fill(scratch, 7);
    }
    const double waited = host_wait_ms(p, AXL_ACCESS_READ);
    CHECK(waited >= 90.0);
    CHECK(waited < 450.0);
    CHECK(std::equal(data.begin(), data.end(), host));
    q.synchronize();
  }
  SECTION("a read does not wait behind event and queue waits on a gated queue") {
    axl::Flag gate = g.create_flag();
    q2.wait_flag(gate, 1);
    axl::Event e = g.create_event();
    q2.record(e);
    Watchdog w(gate, 5000ms);
    q.copy(p, 0, d, 0, n);
    q.wait(e);  // q now waits for the gated q2
    check_read_within(p, 2500.0);
    CHECK(std::equal(data.begin(), data.end(), host));
    // The same behind a whole-queue wait, on a second queue.
    axl::Queue q3 = g.create_queue();
    q3.copy(p, 0, d2, 0, n);
    q3.wait_for(q2);
    check_read_within(p, 2500.0);
    CHECK(std::equal(data2.begin(), data2.end(), host));
    w.fire_now();
    q.synchronize();
    q3.synchronize();
    q2.synchronize();
  }
  SECTION("a launch counts as a write: one behind a gate is waited for") {
    axl::Buffer t = g.allocate(n, AXL_BUFFER_FLAG_TRACKED);
    axl::Flag gate = g.create_flag();
    launch_fill(t, 3);
    q.wait_flag(gate, 1);
    launch_fill(t, 3);
    Watchdog w(gate, 300ms);
    // The second launch (after the gate) is the last writer now: a host
    // read must wait for it, i.e. for the gate.
    REQUIRE(axl_buffer_host_wait(t.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    w.check_waited();
    q.synchronize();
  }
  SECTION("a launch's stamp is fixed before a later gate") {
    axl::Buffer t = g.allocate(n, AXL_BUFFER_FLAG_TRACKED);
    axl::Flag gate = g.create_flag();
    auto t0 = std::chrono::steady_clock::now();
    launch_fill(t, 3);
    q.wait_flag(gate, 1);
    q.copy(scratch, 0, d, 0, n);
    Watchdog w(gate, 5000ms);
    REQUIRE(axl_buffer_host_wait(t.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    const double waited = ms_since(t0);
    CHECK(waited >= 90.0);
    CHECK(waited < 2500.0);
    w.fire_now();
    q.synchronize();
  }
  SECTION("a read does not wait for another, gated queue") {
    axl::Flag gate = g.create_flag();
    q2.wait_flag(gate, 1);
    q2.copy(scratch, 0, d2, 0, n);
    q.copy(p, 0, d, 0, n);
    Watchdog w(gate, 5000ms);
    check_read_within(p, 2500.0);
    CHECK(std::equal(data.begin(), data.end(), host));
    w.fire_now();
    q2.synchronize();
    q.synchronize();
  }
  SECTION("a write also waits for the readers since the last write") {
    q.copy(p, 0, d, 0, n);
    REQUIRE(axl_buffer_host_wait(p.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    axl::Flag gate = g.create_flag();
    q2.wait_flag(gate, 1);
    q2.copy(scratch, 0, p, 0, n);  // a reader of p, gated
    Watchdog w(gate, 400ms);
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(axl_buffer_host_wait(p.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    CHECK(ms_since(t0) < 300.0);
    REQUIRE(axl_buffer_host_wait(p.get(), AXL_ACCESS_WRITE) == AXL_SUCCESS);
    w.check_waited();
    CHECK(ms_since(t0) >= 480.0);  // the gate, then the reader's 100 ms
    // The reader took p's bytes before the host writes over them.
    memset(host, 0xee, n);
    std::vector<unsigned char> out(n);
    q2.copy_to_host(out.data(), scratch, n);
    q2.synchronize();
    CHECK((out == data));
  }
  SECTION("a strided copy of few runs into a pinned tracked buffer") {
    // Rows 7..0, column 3 of an 8x4 int32 matrix into every 4th element:
    // eight per-run copies of 100 ms each.
    axl_layout col = index_ok(make_layout(4, {8, 4}), {every(-1), at(3)});
    axl_layout dst = index_ok(make_layout(4, {32}), {slice(1, {}, 4)});
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(axl_queue_copy_layout(q.get(), p.get(), &dst, d.get(), &col) == AXL_SUCCESS);
    REQUIRE(axl_buffer_host_wait(p.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    CHECK(ms_since(t0) >= 790.0);
    for (int i = 0; i < 8; ++i) {
      INFO("element " << i);
      CHECK(memcmp(host + 16 * i + 4, data.data() + 16 * (7 - i) + 12, 4) == 0);
      CHECK(memcmp(host + 16 * i, "\0\0\0\0", 4) == 0);  // a gap
    }
    q.synchronize();
  }
  SECTION("a staged strided copy into a pinned tracked buffer") {
    // 2048 bytes, every other one: past the per-run limit (1024), so one
    // device-to-host transfer of the source's span, not 2048 copies.
    axl_layout src = index_ok(make_layout(1, {4096}), {slice(4095, {}, -2)});
    axl_layout dst = index_ok(make_layout(1, {4096}), {slice(1, {}, 2)});
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(axl_queue_copy_layout(q.get(), p.get(), &dst, d.get(), &src) == AXL_SUCCESS);
    REQUIRE(axl_buffer_host_wait(p.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    const double waited = ms_since(t0);
    CHECK(waited >= 90.0);
    CHECK(waited < 2000.0);
    int bad = 0;
    for (int i = 0; i < 2048; ++i) {
      if (host[2 * i + 1] != data[4095 - 2 * i]) ++bad;
      if (host[2 * i] != 0) ++bad;  // a gap
    }
    CHECK(bad == 0);
    q.synchronize();
  }
}

TEST_CASE("host_wait waits for exactly the stamped work (simulated latency)", "[virtual][hazard]") {
  vt::run_case("child: host_wait with simulated latency", kLatencyEnv);
}

TEST_CASE("child: a failed enqueue poisons its destination", "[.child]") {
  REQUIRE(env_or_empty("AXL_VIRTUAL_FAIL") == kFaultRules);
  axl::Device g = vt::gpu(0);
  axl::Queue q = g.create_queue();
  const size_t n = 512;
  auto data = random_bytes(n, 61);
  axl::Buffer t = g.allocate(n, AXL_BUFFER_FLAG_TRACKED), u = g.allocate(n), t2 = g.allocate(n, AXL_BUFFER_FLAG_TRACKED);
  axl::Buffer view = t.view(256, 256);

  // htod call 1 fails at enqueue.
  axl::Error e = vt::expect_error([&] { q.copy_from_host(t, data.data(), n); }, AXL_ERROR_INTERNAL);
  CHECK_THAT(std::string(e.what()), Catch::Contains("injected failure of memcpy_htod call 1"));
  axl_clear_last_error();
  CHECK(axl_buffer_host_wait(t.get(), AXL_ACCESS_READ) == AXL_ERROR_HOST_HAZARD);
  CHECK_THAT(std::string(axl_last_error_message()), Catch::Contains("injected failure of memcpy_htod call 1"));
  CHECK(axl_buffer_host_wait(view.get(), AXL_ACCESS_WRITE) == AXL_ERROR_HOST_HAZARD);
  // A later good write replaces the poisoned writer.
  q.copy_from_host(t, data.data(), n);  // htod call 2
  CHECK(axl_buffer_host_wait(t.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
  CHECK((read_back(t) == data));

  // dtod call 1 succeeds, call 2 (inside a strided copy) fails.
  q.copy(u, t);
  axl_layout whole = make_layout(4, {128});
  axl_status s = axl_queue_copy_layout(q.get(), t2.get(), &whole, u.get(), &whole);
  CHECK(s == AXL_ERROR_DEVICE_LOST);
  axl_clear_last_error();
  CHECK(axl_buffer_host_wait(t2.get(), AXL_ACCESS_READ) == AXL_ERROR_HOST_HAZARD);
  CHECK_THAT(std::string(axl_last_error_message()), Catch::Contains("injected failure of memcpy_dtod call 2"));
  // The source was only read by the failed op: it is not poisoned.
  CHECK(axl_buffer_host_wait(t.get(), AXL_ACCESS_WRITE) == AXL_SUCCESS);
  q.synchronize();

  // A staged copy whose first transfer (dtoh call 2: the source's span)
  // fails: nothing leaks, the destination is poisoned, a retry works.
  auto big_data = random_bytes(24000, 62);
  axl::Buffer big = g.allocate(24000), col = g.allocate(8000, AXL_BUFFER_FLAG_TRACKED);
  q.copy_from_host(big, big_data.data(), big_data.size());
  q.synchronize();
  axl_layout m = make_layout(4, {2000, 3});
  axl_layout src = index_ok(m, {all(), at(1)}), dst = make_layout(4, {2000});
  CHECK(axl_queue_copy_layout(q.get(), col.get(), &dst, big.get(), &src) == AXL_ERROR_INTERNAL);
  axl_clear_last_error();
  CHECK(axl_buffer_host_wait(col.get(), AXL_ACCESS_READ) == AXL_ERROR_HOST_HAZARD);
  CHECK_THAT(std::string(axl_last_error_message()), Catch::Contains("injected failure of memcpy_dtoh call 2"));
  q.synchronize();
  REQUIRE(axl_queue_copy_layout(q.get(), col.get(), &dst, big.get(), &src) == AXL_SUCCESS);
  CHECK(axl_buffer_host_wait(col.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
  auto got = read_back(col);
  int bad = 0;
  for (int i = 0; i < 2000; ++i) bad += memcmp(got.data() + 4 * i, big_data.data() + 12 * i + 4, 4) != 0;
  CHECK(bad == 0);
}

TEST_CASE("a failed enqueue poisons the destination's hazard record", "[virtual][hazard][fault]") {
  vt::run_case("child: a failed enqueue poisons its destination", kFaultEnv);
}

TEST_CASE("child: no completion could be recorded", "[.child]") {
  REQUIRE(env_or_empty("AXL_VIRTUAL_FAIL") == kRecordRule);
  REQUIRE(env_or_empty("AXL_VIRTUAL_LATENCY_US") == kLatencyUs);
  axl::Device g = vt::gpu(0);
  axl::Queue q = g.create_queue();
  const size_t n = 1024;
  auto data = random_bytes(n, 91);
  axl::Buffer d = g.allocate(n);
  q.copy_from_host(d, data.data(), n);
  q.synchronize();
  axl::Buffer p = g.allocate(n, AXL_BUFFER_FLAG_PINNED | AXL_BUFFER_FLAG_TRACKED);
  // The stamp's event cannot be recorded (event_record call 1). The host
  // must never be told "ready" while the copy is still in flight: either
  // the core falls back to waiting for the queue, or host_wait reports the
  // failure and a later host_wait (call 2 records) waits properly.
  q.copy(p, d);
  auto* host = static_cast<unsigned char*>(p.host_pointer());
  axl_status s = axl_buffer_host_wait(p.get(), AXL_ACCESS_READ);
  if (s != AXL_SUCCESS) {
    INFO(axl_status_name(s) << ": " << axl_last_error_message());
    CHECK_THAT(std::string(axl_last_error_message()), Catch::Contains("event_record call 1"));
    s = axl_buffer_host_wait(p.get(), AXL_ACCESS_READ);
  }
  INFO(axl_status_name(s) << ": " << axl_last_error_message());
  REQUIRE(s == AXL_SUCCESS);
  CHECK(std::equal(data.begin(), data.end(), host));
  // Recording works again: the next copy is waited for through its stamp.
  memset(host, 0, n);
  q.copy(p, d);
  CHECK(axl_buffer_host_wait(p.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
  CHECK(std::equal(data.begin(), data.end(), host));
  q.synchronize();
}

TEST_CASE("a stamp that cannot be recorded falls back to a queue wait", "[virtual][hazard][fault]") {
  vt::run_case("child: no completion could be recorded", kRecordEnv);
}

// ======================================================== copy_batch ==

TEST_CASE("copy_batch across cpu and virtual devices", "[virtual][copy_batch]") {
  REQUIRE(kEnvironment);
  axl::Device g0 = vt::gpu(0), g1 = vt::gpu(1), cpu = axl::Device::cpu();
  axl::Buffer a = filled(g0, 1024, 71), b = filled(g0, 1024, 72), c = filled(g1, 1024, 73), h = filled(cpu, 1024, 74);

  SECTION("mixed destinations equal a loop of copies") {
    auto ra = read_back(a), rb = read_back(b), rc = read_back(c), rh = read_back(h);
    std::vector<axl_copy_desc> d = {
        {b.get(), 0, a.get(), 512, 256},   // virtual 0 <- virtual 0
        {h.get(), 100, a.get(), 0, 300},   // cpu <- virtual 0
        {c.get(), 1000, h.get(), 0, 24},   // virtual 1 <- cpu
        {a.get(), 900, c.get(), 0, 100},   // virtual 0 <- virtual 1
    };
    auto cp = [](std::vector<unsigned char>& to, uint64_t to_off, const std::vector<unsigned char>& from,
                 uint64_t from_off, uint64_t n) { memmove(to.data() + to_off, from.data() + from_off, n); };
    // Groups run on different queues: the pairs read nothing another pair writes.
    cp(rb, 0, ra, 512, 256);
    cp(rh, 100, ra, 0, 300);
    cp(rc, 1000, read_back(h), 0, 24);
    cp(ra, 900, read_back(c), 0, 100);
    REQUIRE(axl_copy_batch(d.data(), d.size()) == AXL_SUCCESS);
    for (auto* dev : {&g0, &g1, &cpu}) dev->synchronize();
    CHECK((read_back(a) == ra));
    CHECK((read_back(b) == rb));
    CHECK((read_back(c) == rc));
    CHECK((read_back(h) == rh));
  }
  SECTION("identity pairs and repeats are skipped") {
    auto ra = read_back(a);
    auto rb = ra;
    memcpy(rb.data() + 64, ra.data() + 128, 64);
    axl::Buffer av = a.view(256, 256);
    std::vector<axl_copy_desc> d = {
        {a.get(), 0, a.get(), 0, 512},     // identity
        {av.get(), 0, a.get(), 256, 64},   // identity through a view
        {b.get(), 64, a.get(), 128, 64},
        {b.get(), 64, a.get(), 128, 64},   // repeat
        {b.get(), 64, a.get(), 128, 0},    // nothing
    };
    axl::begin_launch_trace();
    REQUIRE(axl_copy_batch(d.data(), d.size()) == AXL_SUCCESS);
    g0.synchronize();
    auto t = axl::take_launch_trace();
    CHECK(memcpy_entries(t) == 1);
    auto got = read_back(b);
    CHECK(std::equal(got.begin() + 64, got.begin() + 128, ra.begin() + 128));
  }
  SECTION("a bad pair enqueues nothing") {
    auto rb = read_back(b), rh = read_back(h);
    std::vector<axl_copy_desc> d = {
        {b.get(), 0, a.get(), 0, 512},
        {h.get(), 0, c.get(), 0, 512},
        {c.get(), 0, a.get(), 1000, 100},  // past a's end
    };
    axl::begin_launch_trace(true);
    vt::expect_error([&] { axl::check(axl_copy_batch(d.data(), d.size())); }, AXL_ERROR_OUT_OF_RANGE);
    g0.synchronize();
    cpu.synchronize();
    CHECK(axl::take_launch_trace().empty());
    CHECK((read_back(b) == rb));
    CHECK((read_back(h) == rh));
  }
}

// ================================================== external memory ==

namespace {
std::atomic<int> g_released{0};
void count_release(void* u) { static_cast<std::atomic<int>*>(u)->fetch_add(1); }
}  // namespace

TEST_CASE("external buffers over virtual device memory", "[virtual][external]") {
  REQUIRE(kEnvironment);
  axl::Device g = vt::gpu(0);
  axl::Queue q = g.create_queue();
  axl::Buffer owner = filled(g, 1024, 81);
  auto before = read_back(owner);
  g_released = 0;
  const uint64_t addr = owner.device_address() + 256;
  axl_buffer_t raw = nullptr;
  // As a DLPack producer's device memory: an address the host cannot touch.
  REQUIRE(axl_buffer_create_external(g.get(), addr, nullptr, 512, AXL_BUFFER_FLAG_TRACKED, count_release, &g_released,
                                     &raw) == AXL_SUCCESS);
  axl::Buffer ext(raw);
  CHECK(ext.device_address() == addr);
  CHECK(ext.size() == 512);
  vt::expect_error([&] { ext.host_pointer(); }, AXL_ERROR_INVALID_STATE);
  auto data = random_bytes(512, 82);
  q.copy_from_host(ext, data.data(), 512);
  CHECK(axl_buffer_host_wait(ext.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
  auto expected = before;
  std::copy(data.begin(), data.end(), expected.begin() + 256);
  CHECK((read_back(owner) == expected));
  // Strided into the external memory.
  axl_layout l = index_ok(make_layout(8, {64}), {every(-2)});
  axl::Buffer other = filled(g, 256, 83);
  check_copy_layout(q, ext, l, other, make_layout(8, {32}));
  ext = axl::Buffer();
  CHECK(axltest::eventually([] { return g_released.load() == 1; }));
  // Pinned external memory needs its host pointer.
  vt::expect_error(
      [&] {
        axl_buffer_t r2 = nullptr;
        axl::check(axl_buffer_create_external(g.get(), addr, nullptr, 64, AXL_BUFFER_FLAG_PINNED, count_release,
                                              &g_released, &r2));
      },
      AXL_ERROR_INVALID_ARGUMENT);
  CHECK(g_released.load() == 1);
}
