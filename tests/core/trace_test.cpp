// Launch trace (MAX's begin_launch_trace / take_launch_trace) on the cpu
// backend: host devices are excluded unless asked for; entries come in
// enqueue order with stream indices in first-seen order; semantic hashes are
// deterministic and address-free.
#include "test_util.hpp"

using namespace axltest;

namespace {

// Before main (discovery reads the environment on the first axl call).
const bool kEnvClean = (clear_axl_env(), true);
struct Fixture {
  axl::Device dev = axl::Device::cpu();
  axl::Queue q1 = dev.create_queue();
  axl::Queue q2 = dev.create_queue();
  axl::Kernel inc = dev.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  axl::Buffer a = dev.allocate(4096);
  axl::Buffer b = dev.allocate(4096);
  axl::Buffer c = dev.allocate(4096);  // q2's source: the queues share no buffer
  std::vector<unsigned char> host = std::vector<unsigned char>(4096, 1);

  // Seven operations over two queues; `k` scales the sizes.
  void workload(uint32_t k = 1) {
    const uint32_t n = 100 * k;
    q1.copy_from_host(a, host.data(), 100 * k);               // 0: HTOD on q1
    q1.copy_to_host(host.data(), a, 37 * k, 3);               // 1: DTOH on q1
    q2.copy(b, 0, c, 0, 64 * k);                              // 2: DTOD on q2
    q1.fill(a, 0xAB, 1, 0, 16 * k);                           // 3: memset on q1
    q2.fill(b, 0xBEEF, 2, 0, 32 * k);                         // 4: memset on q2
    q1.launch(inc, {3, 2, 1}, {4, 1, 1}, {axl::Arg::buffer(a), axl::Arg::scalar(n)});  // 5
    q2.launch(inc, {5, 1, 1}, {8, 2, 1}, {axl::Arg::buffer(b), axl::Arg::scalar(n)},
              128 * k);                                        // 6
    q1.synchronize();
    q2.synchronize();
  }
};

std::vector<uint64_t> hashes(const std::vector<axl::LaunchTraceEntry>& t) {
  std::vector<uint64_t> h;
  for (auto& e : t) h.push_back(e.raw.semantic_hash);
  return h;
}

}  // namespace

TEST_CASE("host devices are not traced by default (MAX records accelerators only)",
          "[trace]") {
  Fixture f;
  axl::begin_launch_trace();
  f.workload();
  auto t = axl::take_launch_trace();
  CHECK(t.empty());
}

TEST_CASE("include_host records copies, fills and launches in enqueue order", "[trace]") {
  Fixture f;
  axl::begin_launch_trace(true);
  f.workload();
  auto t = axl::take_launch_trace();
  REQUIRE(t.size() == 7);
  for (size_t i = 0; i < t.size(); ++i) {
    INFO("entry " << i << " " << t[i].name);
    CHECK(t[i].raw.sequence == i);
    CHECK(t[i].raw.device_id == 0);
    CHECK(t[i].raw.semantic_hash != 0);
    CHECK_FALSE(t[i].name.empty());
  }
  // Stream indices: q1 was seen first.
  const uint32_t streams[7] = {0, 0, 1, 0, 1, 0, 1};
  for (size_t i = 0; i < 7; ++i) CHECK(t[i].raw.stream_index == streams[i]);

  auto copy = [&](size_t i, int32_t kind, uint64_t bytes) {
    INFO("entry " << i);
    CHECK(t[i].raw.kind == AXL_TRACE_MEMCPY);
    CHECK(t[i].raw.memcpy_kind == kind);
    CHECK(t[i].raw.memcpy_byte_size == bytes);
    CHECK(t[i].raw.memset_byte_size == 0);
    CHECK(t[i].raw.grid[0] == 0);
  };
  copy(0, AXL_MEMCPY_HTOD, 100);
  copy(1, AXL_MEMCPY_DTOH, 37);
  copy(2, AXL_MEMCPY_DTOD, 64);

  CHECK(t[3].raw.kind == AXL_TRACE_MEMSET);
  CHECK(t[3].raw.memcpy_kind == AXL_MEMCPY_NONE);
  CHECK(t[3].raw.memset_byte_size == 16);
  CHECK(t[3].raw.memset_value == 0xAB);
  CHECK(t[3].raw.memset_value_size == 1);
  CHECK(t[4].raw.kind == AXL_TRACE_MEMSET);
  CHECK(t[4].raw.memset_byte_size == 32);
  CHECK(t[4].raw.memset_value == 0xBEEF);
  CHECK(t[4].raw.memset_value_size == 2);

  CHECK(t[5].raw.kind == AXL_TRACE_KERNEL_LAUNCH);
  CHECK(t[5].name == "axl_test_increment_u32");
  CHECK(t[5].raw.memcpy_kind == AXL_MEMCPY_NONE);
  CHECK(t[5].raw.grid[0] == 3);
  CHECK(t[5].raw.grid[1] == 2);
  CHECK(t[5].raw.grid[2] == 1);
  CHECK(t[5].raw.block[0] == 4);
  CHECK(t[5].raw.block[1] == 1);
  CHECK(t[5].raw.block[2] == 1);
  CHECK(t[5].raw.shared_mem_bytes == 0);
  CHECK(t[6].raw.kind == AXL_TRACE_KERNEL_LAUNCH);
  CHECK(t[6].raw.grid[0] == 5);
  CHECK(t[6].raw.block[0] == 8);
  CHECK(t[6].raw.block[1] == 2);
  CHECK(t[6].raw.shared_mem_bytes == 128);
  CHECK(t[6].raw.memcpy_byte_size == 0);
}

TEST_CASE("take hands the entries over once", "[trace]") {
  Fixture f;
  axl::begin_launch_trace(true);
  f.workload();
  CHECK(axl::take_launch_trace().size() == 7);
  CHECK(axl::take_launch_trace().empty());
  // Tracing stopped with the first take: later work is not recorded.
  f.workload();
  CHECK(axl::take_launch_trace().empty());
}

TEST_CASE("semantic hashes: equal for equal work, different for different sizes", "[trace]") {
  Fixture f;
  axl::begin_launch_trace(true);
  f.workload(1);
  auto first = hashes(axl::take_launch_trace());
  // Fresh queues and buffers (other addresses, other queue ids): same hashes.
  Fixture g;
  axl::begin_launch_trace(true);
  g.workload(1);
  auto second = hashes(axl::take_launch_trace());
  REQUIRE(first.size() == 7);
  CHECK(first == second);
  // All seven differ from one another (different kinds, sizes, shapes).
  for (size_t i = 0; i < 7; ++i)
    for (size_t j = i + 1; j < 7; ++j) CHECK(first[i] != first[j]);

  axl::begin_launch_trace(true);
  g.workload(2);
  auto doubled = hashes(axl::take_launch_trace());
  REQUIRE(doubled.size() == 7);
  for (size_t i = 0; i < 7; ++i) {
    INFO("entry " << i);
    CHECK(doubled[i] != first[i]);
  }
}

TEST_CASE("a long trace over two queues keeps order, streams, names and hashes", "[trace]") {
  // Thousands of entries: several of the core's storage chunks.
  Fixture f;
  constexpr uint32_t kPairs = 2500;
  axl::begin_launch_trace(true);
  for (uint32_t i = 0; i < kPairs; ++i) {
    f.q1.fill(f.a, i % 3, 1, 0, 8);
    f.q2.launch(f.inc, {1, 1, 1}, {1, 1, 1}, {axl::Arg::buffer(f.b), axl::Arg::scalar(i % 2)});
  }
  f.q1.synchronize();
  f.q2.synchronize();
  auto t = axl::take_launch_trace();
  REQUIRE(t.size() == 2 * kPairs);
  for (size_t i = 0; i < t.size(); ++i) {
    INFO("entry " << i);
    CHECK(t[i].raw.sequence == i);
    CHECK(t[i].raw.stream_index == i % 2);
    CHECK(t[i].raw.kind == (i % 2 ? AXL_TRACE_KERNEL_LAUNCH : AXL_TRACE_MEMSET));
    if (i % 2) CHECK(t[i].name == "axl_test_increment_u32");
    if (i >= 12) CHECK(t[i].raw.semantic_hash == t[i - 12].raw.semantic_hash);  // same work
  }
  // A fill's value and a launch's scalar argument are part of the hash.
  CHECK(t[0].raw.semantic_hash != t[2].raw.semantic_hash);
  CHECK(t[1].raw.semantic_hash != t[3].raw.semantic_hash);
}

TEST_CASE("begin discards the previous trace; stream indices restart", "[trace]") {
  Fixture f;
  axl::begin_launch_trace(true);
  f.q1.fill(f.a, 1, 1);
  f.q1.fill(f.a, 2, 1);
  axl::begin_launch_trace(true);
  f.q2.fill(f.b, 3, 1);
  f.q1.fill(f.a, 4, 1);
  f.q1.synchronize();
  f.q2.synchronize();
  auto t = axl::take_launch_trace();
  REQUIRE(t.size() == 2);
  CHECK(t[0].raw.memset_value == 3);
  CHECK(t[0].raw.stream_index == 0);  // q2 seen first in this trace
  CHECK(t[0].raw.sequence == 0);
  CHECK(t[1].raw.memset_value == 4);
  CHECK(t[1].raw.stream_index == 1);
  CHECK(t[1].raw.sequence == 1);
}

TEST_CASE("begin without include_host after one with it stops recording host work",
          "[trace]") {
  Fixture f;
  axl::begin_launch_trace(true);
  f.q1.fill(f.a, 1, 1);
  axl::begin_launch_trace(false);
  f.workload();
  CHECK(axl::take_launch_trace().empty());
}

TEST_CASE("with tracing off nothing is recorded", "[trace]") {
  Fixture f;
  CHECK(axl::take_launch_trace().empty());  // none began
  f.workload();
  CHECK(axl::take_launch_trace().empty());
  // The default queue is traced like any other.
  axl::begin_launch_trace(true);
  axl::Queue dq = f.dev.default_queue();
  dq.fill(f.a, 9, 1, 0, 8);
  dq.synchronize();
  auto t = axl::take_launch_trace();
  REQUIRE(t.size() == 1);
  CHECK(t[0].raw.memset_value == 9);
  CHECK(t[0].raw.memset_byte_size == 8);
}

TEST_CASE("trace C API edge cases", "[trace]") {
  axl_launch_trace_t t = nullptr;
  require_status(axl_launch_trace_take(nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_trace"});
  require_status(axl_launch_trace_begin(0x80), AXL_ERROR_INVALID_ARGUMENT, {"0x80"});
  REQUIRE(axl_launch_trace_take(&t) == AXL_SUCCESS);
  size_t n = 99;
  CHECK(axl_launch_trace_size(t, &n) == AXL_SUCCESS);
  CHECK(n == 0);
  require_status(axl_launch_trace_size(t, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_count"});
  CHECK(axl_launch_trace_release(t) == AXL_SUCCESS);
  require_status(axl_launch_trace_size(nullptr, &n), AXL_ERROR_INVALID_HANDLE, {"NULL"});
  CHECK(axl_launch_trace_entries(nullptr) == nullptr);
}

TEST_CASE("trace entries start with struct_size and are walked by it", "[trace][abi]") {
  Fixture f;
  axl::begin_launch_trace(true);
  f.workload();
  axl_launch_trace_t t = nullptr;
  REQUIRE(axl_launch_trace_take(&t) == AXL_SUCCESS);
  size_t n = 0;
  REQUIRE(axl_launch_trace_size(t, &n) == AXL_SUCCESS);
  REQUIRE(n == 7);
  const axl_launch_trace_entry* e = axl_launch_trace_entries(t);
  REQUIRE(e != nullptr);
  for (size_t i = 0; i < n; ++i) {
    const axl_launch_trace_entry* x = axl_launch_trace_entry_at(e, i);
    CHECK(x->struct_size == sizeof(axl_launch_trace_entry));
    CHECK(x->sequence == i);
  }
  CHECK(axl_launch_trace_release(t) == AXL_SUCCESS);
}

TEST_CASE("read_element copies only what the core's struct_size covers", "[trace][abi]") {
  // An element from an older core (smaller struct_size): the fields past it
  // read as zero, whatever bytes follow in memory.
  struct {
    axl_launch_trace_entry e;
    unsigned char pad[64];
  } older;
  std::memset(&older, 0x5A, sizeof older);
  older.e.struct_size = offsetof(axl_launch_trace_entry, semantic_hash);
  older.e.kind = AXL_TRACE_MEMSET;
  const axl_launch_trace_entry r = axl::read_element(&older.e);
  CHECK(r.kind == AXL_TRACE_MEMSET);
  CHECK(r.semantic_hash == 0);
  CHECK(r.sequence == 0);
  CHECK(r.struct_size == offsetof(axl_launch_trace_entry, semantic_hash));
  // From a newer core (larger struct_size): this header's fields are read,
  // the appended bytes are not, and the stride is the core's.
  struct Newer {
    axl_launch_trace_entry e;
    uint64_t appended;
  } newer[2] = {};
  for (Newer& x : newer) x.e.struct_size = sizeof(Newer);
  newer[1].e.sequence = 41;
  newer[1].appended = 7;
  CHECK(axl_launch_trace_entry_at(&newer[0].e, 1) == &newer[1].e);
  CHECK(axl::read_element(axl_launch_trace_entry_at(&newer[0].e, 1)).sequence == 41);
}
