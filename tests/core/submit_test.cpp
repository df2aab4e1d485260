// The one submission path (core/src/submit.hpp), through axl.h and axl.hpp
// on the cpu and the virtual backend: every kind of op waits for other
// queues' pending writers of its tracked buffers (launches included), and an
// op refused for a bad later argument leaves no trace of its earlier ones.
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "layout_test_util.hpp"

using namespace axltest;
using namespace layouttest;
using namespace std::chrono_literals;

namespace {

// One virtual accelerator (label "gpu") beside the cpu. Set before the
// first axl call: discovery reads it once.
const bool kEnvReady = (clear_axl_env(), setenv("AXL_VIRTUAL_DEVICES", "1", 1), true);

constexpr uint32_t kWords = 256;
constexpr size_t kBytes = kWords * 4;

std::vector<uint32_t> words_of(const std::vector<unsigned char>& bytes) {
  std::vector<uint32_t> w(bytes.size() / 4);
  memcpy(w.data(), bytes.data(), w.size() * 4);
  return w;
}

// A tracked buffer whose next write, on `producer`, waits for a gate the
// case opens (through a Watchdog) only after it enqueued its own op.
struct PendingWrite {
  axl::Device dev;
  axl::Queue producer;
  axl::Flag gate;
  axl::Buffer buf;
  std::vector<unsigned char> old_bytes = random_bytes(kBytes, 31), new_bytes = random_bytes(kBytes, 32);

  explicit PendingWrite(const char* label)
      : dev(axl::Device::get(label, 0)),
        producer(dev.create_queue()),
        gate(dev.create_flag()),
        buf(dev.allocate(kBytes, AXL_BUFFER_FLAG_TRACKED)) {
    producer.copy_from_host(buf, old_bytes.data(), kBytes);
    producer.synchronize();
    producer.wait_flag(gate, 1);
    producer.copy_from_host(buf, new_bytes.data(), kBytes);
  }
  // Everything done (both sides), then the buffer's bytes.
  std::vector<unsigned char> settle(const axl::Queue& consumer) {
    producer.synchronize();
    consumer.synchronize();
    return read_back(producer, buf);
  }
};

}  // namespace

TEST_CASE("a launch waits for its buffer argument's pending writer on another queue", "[submit][threads]") {
  const std::string label = GENERATE(as<std::string>{}, "cpu", "gpu");
  CAPTURE(label);
  axl::Device dev = axl::Device::get(label.c_str(), 0);
  axl::Queue a = dev.create_queue(), b = dev.create_queue();
  axl::Buffer data = dev.allocate(kBytes, AXL_BUFFER_FLAG_TRACKED);
  a.fill(data, 0, 4);
  a.synchronize();
  // a writes 41 everywhere once the gate opens; b's increment, enqueued
  // meanwhile, must see the 41s: 42, not 41 (the write after the kernel)
  // or 1 (the kernel before the write).
  const std::vector<uint32_t> forty_one(kWords, 41);
  axl::Flag gate = dev.create_flag();
  a.wait_flag(gate, 1);
  a.copy_from_host(data, forty_one.data(), kBytes);
  axl::Kernel inc = dev.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  b.launch(inc, {kWords / 64, 1, 1}, {64, 1, 1}, {axl::Arg::buffer(data), axl::Arg::scalar(kWords)});
  Watchdog w(gate, 200ms);
  b.synchronize();
  w.check_waited();  // b could not finish before a's write ran
  a.synchronize();
  // Virtual kernels never run (plugins/virtual/src/kernel.cpp): there the
  // order shows only in b's synchronize, above.
  if (label == "cpu") {
    const auto got = words_of(read_back(b, data));
    CHECK(std::all_of(got.begin(), got.end(), [](uint32_t x) { return x == 42; }));
  }
}

TEST_CASE("a launch refused for its last argument leaves no trace of the first", "[submit][threads]") {
  // The virtual device counts its memory exactly, which shows whether a
  // released buffer's free waits for a queue: it does only for queues that
  // recorded a use of it.
  axl::Device gpu = axl::Device::get("gpu", 0);
  axl::Queue q = gpu.create_queue();
  axl::Flag gate = gpu.create_flag();
  q.wait_flag(gate, 1);  // anything q recorded stays pending until the gate opens
  Watchdog w(gate, 5000ms);  // opens a gate a failing case left shut
  const uint64_t free_before = gpu.memory_info().first;
  constexpr uint64_t kBig = 1 << 20;
  axl_buffer_t first = nullptr, dead = nullptr;
  REQUIRE(axl_buffer_create(gpu.get(), kBig, AXL_BUFFER_FLAG_TRACKED, &first) == AXL_SUCCESS);
  REQUIRE(axl_buffer_create(gpu.get(), 64, 0, &dead) == AXL_SUCCESS);
  REQUIRE(axl_buffer_release(dead) == AXL_SUCCESS);
  REQUIRE(gpu.memory_info().first <= free_before - kBig);

  axl::Kernel inc = gpu.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  const uint32_t n = 4;
  const axl_launch_arg args[3] = {
      {AXL_KERNEL_ARG_BUFFER, 0, first, nullptr},
      {AXL_KERNEL_ARG_SCALAR, sizeof n, nullptr, &n},
      {AXL_KERNEL_ARG_BUFFER, 0, dead, nullptr},
  };
  const uint32_t grid[3] = {1, 1, 1}, block[3] = {4, 1, 1};
  require_status(axl_queue_launch(q.get(), inc.get(), grid, block, 0, args, 3), AXL_ERROR_INVALID_HANDLE,
                 {"kernel argument buffer"});

  // No stamp: a host write of the first argument need not wait for gated q.
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(axl_buffer_host_wait(first, AXL_ACCESS_WRITE) == AXL_SUCCESS);
  CHECK(ms_since(t0) < 1000);
  // No recorded use: its memory comes back although q is still gated.
  REQUIRE(axl_buffer_release(first) == AXL_SUCCESS);
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (gpu.memory_info().first < free_before && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(2ms);
  CHECK(gpu.memory_info().first >= free_before);
  w.fire_now();
  q.synchronize();
}

TEST_CASE("a launch the backend refuses changes nothing: its tracked buffers read as they were",
          "[submit]") {
  // The backend checks the argument list against the kernel's declared
  // parameters; a refusal enqueued nothing, so the buffer keeps its bytes
  // and its stamps, and a host read neither raises a hazard nor waits
  // (before, the refused launch poisoned it for good: every later read was
  // a host hazard naming the launch, even after a synchronize).
  for (const char* label : {"cpu", "gpu"}) {
    INFO(label);
    axl::Device dev = axl::Device::get(label, 0);
    axl::Queue q = dev.create_queue();
    axl::Buffer buf = dev.allocate(kBytes, AXL_BUFFER_FLAG_TRACKED);
    const std::vector<unsigned char> bytes = random_bytes(kBytes, 41);
    q.copy_from_host(buf, bytes.data(), kBytes);
    q.synchronize();
    axl::Kernel inc = dev.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
    const uint32_t n = kWords;
    const uint64_t wide = kWords;
    const uint32_t grid[3] = {1, 1, 1}, block[3] = {kWords, 1, 1};
    const axl_launch_arg too_many[3] = {{AXL_KERNEL_ARG_BUFFER, 0, buf.get(), nullptr},
                                        {AXL_KERNEL_ARG_SCALAR, sizeof n, nullptr, &n},
                                        {AXL_KERNEL_ARG_SCALAR, sizeof n, nullptr, &n}};
    require_status(axl_queue_launch(q.get(), inc.get(), grid, block, 0, too_many, 3), AXL_ERROR_INVALID_ARGUMENT,
                   {"takes 2 arguments, got 3"});
    const axl_launch_arg too_wide[2] = {{AXL_KERNEL_ARG_BUFFER, 0, buf.get(), nullptr},
                                        {AXL_KERNEL_ARG_SCALAR, sizeof wide, nullptr, &wide}};
    require_status(axl_queue_launch(q.get(), inc.get(), grid, block, 0, too_wide, 2), AXL_ERROR_INVALID_ARGUMENT,
                   {"argument 1"});
    REQUIRE(axl_buffer_host_wait(buf.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    REQUIRE(axl_buffer_host_wait(buf.get(), AXL_ACCESS_WRITE) == AXL_SUCCESS);
    CHECK(read_back(q, buf) == bytes);
    // The right list still runs and is stamped as usual.
    q.launch(inc, {1, 1, 1}, {kWords, 1, 1}, {axl::Arg::buffer(buf), axl::Arg::scalar(n)});
    REQUIRE(axl_buffer_host_wait(buf.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    std::vector<uint32_t> expect = words_of(bytes);
    for (uint32_t& w : expect) ++w;
    if (std::string(label) == "cpu") CHECK(words_of(read_back(q, buf)) == expect);  // virtual launches record, not run
  }
}

TEST_CASE("copies, fills, layout and batched copies wait for other queues' pending writers",
          "[submit][threads]") {
  const std::string label = GENERATE(as<std::string>{}, "cpu", "gpu");
  CAPTURE(label);
  PendingWrite pw(label.c_str());
  axl::Queue consumer = pw.dev.create_queue();
  axl::Buffer dst = pw.dev.allocate(kBytes, AXL_BUFFER_FLAG_TRACKED);
  const axl_layout whole = make_layout(1, {static_cast<int64_t>(kBytes)});

  // Reads of the pending buffer must see the new bytes.
  SECTION("copy_to_host") {
    std::vector<unsigned char> out(kBytes, 0);
    consumer.copy_to_host(out.data(), pw.buf, kBytes);
    Watchdog w(pw.gate, 200ms);
    pw.settle(consumer);
    CHECK(out == pw.new_bytes);
  }
  SECTION("copy_buffer") {
    consumer.copy(dst, pw.buf);
    Watchdog w(pw.gate, 200ms);
    pw.settle(consumer);
    CHECK(read_back(consumer, dst) == pw.new_bytes);
  }
  SECTION("copy_layout, contiguous") {
    REQUIRE(axl_queue_copy_layout(consumer.get(), dst.get(), &whole, pw.buf.get(), &whole) == AXL_SUCCESS);
    Watchdog w(pw.gate, 200ms);
    pw.settle(consumer);
    CHECK(read_back(consumer, dst) == pw.new_bytes);
  }
  SECTION("copy_layout, a strided column") {
    const axl_layout col = index_ok(make_layout(4, {64, 4}), {slice({}, {}), at(2)});
    const axl_layout packed = make_layout(4, {64});
    REQUIRE(axl_queue_copy_layout(consumer.get(), dst.get(), &packed, pw.buf.get(), &col) == AXL_SUCCESS);
    Watchdog w(pw.gate, 200ms);
    pw.settle(consumer);
    const auto got = read_back(consumer, dst);
    for (int i = 0; i < 64; ++i) CHECK(memcmp(got.data() + 4 * i, pw.new_bytes.data() + 16 * i + 8, 4) == 0);
  }
  SECTION("copy_batch (on the destination's default queue)") {
    const axl_copy_desc c{dst.get(), 0, pw.buf.get(), 0, kBytes};
    REQUIRE(axl_copy_batch(&c, 1) == AXL_SUCCESS);
    Watchdog w(pw.gate, 200ms);
    pw.settle(pw.dev.default_queue());
    CHECK(read_back(consumer, dst) == pw.new_bytes);
  }
  SECTION("copy_batch of more pairs than a submission keeps inline") {
    std::vector<axl::Buffer> dsts;
    std::vector<axl_copy_desc> copies;
    for (int i = 0; i < 20; ++i) {
      dsts.push_back(pw.dev.allocate(kBytes, AXL_BUFFER_FLAG_TRACKED));
      copies.push_back({dsts.back().get(), 0, pw.buf.get(), 0, kBytes});
    }
    REQUIRE(axl_copy_batch(copies.data(), copies.size()) == AXL_SUCCESS);
    Watchdog w(pw.gate, 200ms);
    pw.settle(pw.dev.default_queue());
    for (const axl::Buffer& d : dsts) CHECK(read_back(consumer, d) == pw.new_bytes);
  }
  // Writes of the pending buffer must land after the pending write.
  SECTION("fill") {
    consumer.fill(pw.buf, 0x5a5a5a5au, 4);
    Watchdog w(pw.gate, 200ms);
    const auto got = pw.settle(consumer);
    CHECK(std::all_of(got.begin(), got.end(), [](unsigned char x) { return x == 0x5a; }));
  }
  SECTION("copy_from_host") {
    const auto mine = random_bytes(kBytes, 33);
    consumer.copy_from_host(pw.buf, mine.data(), kBytes);
    Watchdog w(pw.gate, 200ms);
    CHECK(pw.settle(consumer) == mine);
  }
}

namespace {

struct InsideHostFunc {
  axl_queue_t own = nullptr, other_queue = nullptr;
  axl_device_t own_device = nullptr, other_device = nullptr;
  axl_event_t before = nullptr, behind = nullptr;  // recorded on `own` before and after the function
  // Tracked buffers: filled before the function; filled behind it (an exact
  // stamp, its event pending); launched on behind it (a lazy stamp, its
  // completion not yet recorded).
  axl_buffer_t filled_before = nullptr, filled_behind = nullptr, launched_behind = nullptr;
  axl_status own_queue = AXL_SUCCESS, own_device_sync = AXL_SUCCESS, other = AXL_ERROR_INTERNAL,
             other_dev = AXL_ERROR_INTERNAL, before_sync = AXL_ERROR_INTERNAL, behind_sync = AXL_SUCCESS,
             after = AXL_ERROR_INTERNAL, before_host_wait = AXL_ERROR_INTERNAL, filled_host_wait = AXL_SUCCESS,
             launched_host_wait = AXL_SUCCESS;
  std::string message, behind_message, host_wait_message;
};

void synchronize_from_inside(void* p) {
  auto* s = static_cast<InsideHostFunc*>(p);
  s->own_queue = axl_queue_synchronize(s->own);
  s->message = axl_last_error_message();
  s->own_device_sync = axl_device_synchronize(s->own_device);
  s->other = axl_queue_synchronize(s->other_queue);  // another device's idle queue: allowed
  s->other_dev = axl_device_synchronize(s->other_device);
  s->before_sync = axl_event_synchronize(s->before);  // done before the function ran
  s->behind_sync = axl_event_synchronize(s->behind);  // behind it: would wait for itself
  s->behind_message = axl_last_error_message();
  s->before_host_wait = axl_buffer_host_wait(s->filled_before, AXL_ACCESS_READ);
  s->filled_host_wait = axl_buffer_host_wait(s->filled_behind, AXL_ACCESS_READ);
  s->host_wait_message = axl_last_error_message();
  s->launched_host_wait = axl_buffer_host_wait(s->launched_behind, AXL_ACCESS_WRITE);
}

void note_after(void* p) { static_cast<InsideHostFunc*>(p)->after = AXL_SUCCESS; }

}  // namespace

TEST_CASE("a host function that synchronizes its own queue, device or a later event is refused, on every backend",
          "[submit][threads]") {
  // It would wait for itself. The core refuses it before any backend is
  // asked, so a backend without its own check (or a wait past exit begin,
  // which runs on a thread of its own) cannot hang or time out instead.
  for (const auto& [own, other] : {std::pair{"cpu", "gpu"}, std::pair{"gpu", "cpu"}}) {
    INFO(own);
    axl::Device dev = axl::Device::get(own, 0), elsewhere = axl::Device::get(other, 0);
    axl::Queue q = dev.create_queue(), q2 = elsewhere.create_queue();
    InsideHostFunc s;
    s.own = q.get();
    s.own_device = dev.get();
    s.other_queue = q2.get();
    s.other_device = elsewhere.get();
    axl::Event before = dev.create_event(), behind = dev.create_event();
    s.before = before.get();
    s.behind = behind.get();
    axl::Buffer filled_before = dev.allocate(kBytes, AXL_BUFFER_FLAG_TRACKED),
                filled_behind = dev.allocate(kBytes, AXL_BUFFER_FLAG_TRACKED),
                launched_behind = dev.allocate(kBytes, AXL_BUFFER_FLAG_TRACKED);
    s.filled_before = filled_before.get();
    s.filled_behind = filled_behind.get();
    s.launched_behind = launched_behind.get();
    axl::Kernel inc = dev.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
    // Gated, so that `behind` is recorded (and pending) when the function runs.
    axl::Flag gate = dev.create_flag();
    q.record(before);
    q.fill(filled_before, 1, 4);
    q.wait_flag(gate, 1);
    REQUIRE(axl_queue_enqueue_host_func(q.get(), synchronize_from_inside, &s) == AXL_SUCCESS);
    q.record(behind);
    q.fill(filled_behind, 2, 4);
    REQUIRE(axl_queue_enqueue_host_func(q.get(), note_after, &s) == AXL_SUCCESS);
    // Last: nothing after it records the queue's open completion it joins.
    q.launch(inc, {kWords / 64, 1, 1}, {64, 1, 1}, {axl::Arg::buffer(launched_behind), axl::Arg::scalar(kWords)});
    gate.signal(1);
    q.synchronize();
    CHECK(s.own_queue == AXL_ERROR_INVALID_STATE);
    CHECK_THAT(s.message, Catch::Contains("axl_queue_synchronize was called from a host function running on that "
                                          "queue; it would wait for itself"));
    CHECK(s.own_device_sync == AXL_ERROR_INVALID_STATE);
    CHECK(s.other == AXL_SUCCESS);
    CHECK(s.other_dev == AXL_SUCCESS);
    CHECK(s.before_sync == AXL_SUCCESS);
    CHECK(s.behind_sync == AXL_ERROR_INVALID_STATE);
    CHECK_THAT(s.behind_message, Catch::Contains("axl_event_synchronize was called from a host function"));
    CHECK(s.before_host_wait == AXL_SUCCESS);
    CHECK(s.filled_host_wait == AXL_ERROR_INVALID_STATE);
    CHECK_THAT(s.host_wait_message, Catch::Contains("axl_buffer_host_wait was called from a host function"));
    CHECK(s.launched_host_wait == AXL_ERROR_INVALID_STATE);
    CHECK(s.after == AXL_SUCCESS);  // the queue went on
    // Outside a host function the same calls work.
    REQUIRE(axl_queue_synchronize(q.get()) == AXL_SUCCESS);
    REQUIRE(axl_device_synchronize(dev.get()) == AXL_SUCCESS);
  }
}

// The fast paths of axl_queue_launch, axl_queue_copy_from_host and
// axl_queue_copy_to_host (core/src/queue.cpp) skip the Submission only for
// an op whose buffers need none of its steps; these cases pass each side of
// that line and check that nothing of the general path went missing.

TEST_CASE("a launch passes each buffer argument's own address, at every argument count", "[submit]") {
  // 1 to 40 buffers: across the fast path's 8 arguments and the 16 a launch
  // keeps on the stack. Every other argument is a view, whose address is
  // its parent's plus the offset.
  axl::Device cpu = axl::Device::get("cpu", 0);
  axl::Queue q = cpu.create_queue();
  axl::Kernel sum = cpu.load_module(std::string(AXL_TEST_CPU_KERNELS_PATH)).kernel("sum_first_words");
  constexpr uint32_t kMax = 40;
  axl::Buffer words = cpu.allocate(kMax * 8);
  std::vector<uint32_t> init(kMax * 2);
  for (uint32_t i = 0; i < init.size(); ++i) init[i] = 1000 + i;
  q.copy_from_host(words, init.data(), init.size() * 4);
  std::vector<axl::Buffer> parts;
  std::vector<uint32_t> own(kMax);  // read by the copies when they run
  uint32_t expected_all = 0;
  std::vector<uint32_t> expected(kMax + 1);
  for (uint32_t i = 0; i < kMax; ++i) {
    // Own buffers hold 7 * i; views read word 2 * i of `words`.
    if (i % 2) {
      parts.push_back(words.view(uint64_t(i) * 8, 8));
      expected_all += 1000 + 2 * i;
    } else {
      parts.push_back(cpu.allocate(4));
      own[i] = 7 * i;
      q.copy_from_host(parts.back(), &own[i], 4);
      expected_all += own[i];
    }
    expected[i + 1] = expected_all;
  }
  axl::Buffer out = cpu.allocate(8);
  for (uint32_t n : {1u, 7u, 8u, 9u, 15u, 16u, 17u, kMax}) {
    CAPTURE(n);
    std::vector<axl::Arg> args{axl::Arg::buffer(out)};
    for (uint32_t i = 0; i < n; ++i) args.push_back(axl::Arg::buffer(parts[i]));
    // Twice: the first launch records each buffer's first use by q (the
    // general path), the second may take the fast path.
    for (int rep = 0; rep < 2; ++rep) {
      q.fill(out, 0, 4);
      q.launch(sum, {1, 1, 1}, {1, 1, 1}, args);
      const auto got = words_of(read_back(q, out));
      CHECK(got[0] == expected[n]);
      CHECK(got[1] == n + 1);
    }
  }
}

TEST_CASE("an enqueue that is a buffer's first use by a queue still holds its free for that queue", "[submit][threads]") {
  // The virtual device counts its memory exactly: a released buffer's free
  // waits for every queue that recorded a use of it. q1 uses the buffer
  // first, then (gated) q2: its first use, which the fast path must not
  // take, and a second one, which it may.
  const std::string op = GENERATE(as<std::string>{}, "launch", "copy_from_host", "copy_to_host");
  CAPTURE(op);
  axl::Device gpu = axl::Device::get("gpu", 0);
  axl::Queue q1 = gpu.create_queue(), q2 = gpu.create_queue();
  axl::Kernel inc = gpu.test_kernel(AXL_TEST_KERNEL_INCREMENT_U32);
  const uint64_t free_before = gpu.memory_info().first;
  constexpr uint64_t kBig = 1 << 20;
  std::vector<uint32_t> host(4, 9);
  axl_buffer_t buf = nullptr;
  REQUIRE(axl_buffer_create(gpu.get(), kBig, 0, &buf) == AXL_SUCCESS);
  auto enqueue = [&](const axl::Queue& q) {
    if (op == "launch") {
      const uint32_t n = 4;
      const axl_launch_arg args[2] = {{AXL_KERNEL_ARG_BUFFER, 0, buf, nullptr},
                                      {AXL_KERNEL_ARG_SCALAR, sizeof n, nullptr, &n}};
      const uint32_t grid[3] = {1, 1, 1}, block[3] = {4, 1, 1};
      return axl_queue_launch(q.get(), inc.get(), grid, block, 0, args, 2);
    }
    if (op == "copy_from_host") return axl_queue_copy_from_host(q.get(), buf, 64, host.data(), 16);
    return axl_queue_copy_to_host(q.get(), host.data(), buf, 64, 16);
  };
  REQUIRE(enqueue(q1) == AXL_SUCCESS);
  REQUIRE(enqueue(q1) == AXL_SUCCESS);
  q1.synchronize();
  axl::Flag gate = gpu.create_flag();
  q2.wait_flag(gate, 1);
  Watchdog w(gate, 5000ms);  // opens a gate a failing case left shut
  REQUIRE(enqueue(q2) == AXL_SUCCESS);
  REQUIRE(enqueue(q2) == AXL_SUCCESS);
  REQUIRE(axl_buffer_release(buf) == AXL_SUCCESS);
  std::this_thread::sleep_for(50ms);
  CHECK(gpu.memory_info().first <= free_before - kBig);  // q2 has not passed its uses
  w.fire_now();
  q2.synchronize();
  CHECK(gpu.memory_info().first >= free_before);
}
