// The cases every device must pass, run on each device the core loads
// (every_device.hpp: cpu:0 and two virtual accelerators): copies and fills
// with real data, queue order, cross-queue waits, events and timing,
// completion flags and host callbacks. Formerly two parallel copies (the cpu
// backend's in tests/core/cpu_test.cpp, the virtual backend's [generic] ones
// in tests/virtual/virtual_test.cpp), now one; a case specific to one backend
// stays in that backend's test.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "every_device.hpp"
#include "queue_helpers.hpp"

using namespace std::chrono_literals;
using devtest::each_device;
using devtest::enqueue_fn;
using devtest::random_bytes;
using devtest::read_back;

// -------------------------------------------------------------- the fixture --

TEST_CASE("the fixture covers the cpu device and both virtual devices", "[devices]") {
  REQUIRE(devtest::kEnvironment);
  const std::vector<std::string> want = {"cpu:0", "gpu:0", "gpu:1"};
  CHECK(devtest::device_specs() == want);
  CHECK(axl::Device::get("cpu", 0).info().backend == "cpu");
  for (uint32_t i = 0; i < 2; ++i) CHECK(axl::Device::get("gpu", i).info().backend == "virtual");
}

// ------------------------------------------------------------ copies, fills --

TEST_CASE("copies host <-> buffer <-> buffer with odd sizes and offsets", "[devices][copy]") {
  const auto [spec, dev] = each_device();
  INFO("device " << spec);
  axl::Queue q = dev.create_queue();
  const uint64_t cap = 70000;
  axl::Buffer a = dev.allocate(cap), b = dev.allocate(cap + 5);
  uint32_t seed = 1;
  for (uint64_t size : {1ull, 3ull, 7ull, 255ull, 4097ull, 65537ull}) {
    for (uint64_t off_a : {0ull, 1ull, 13ull}) {
      for (uint64_t off_b : {0ull, 5ull, 1000ull}) {
        INFO("size " << size << " off_a " << off_a << " off_b " << off_b);
        // Known background so bytes outside the ranges can be checked.
        q.fill(a, 0xA5, 1);
        q.fill(b, 0x3C, 1);
        auto data = random_bytes(size, seed++);
        q.copy_from_host(a, data.data(), size, off_a);   // host -> a
        q.copy(b, off_b, a, off_a, size);                 // a -> b (device to device)
        std::vector<unsigned char> back(size + 2, 0);
        q.copy_to_host(back.data() + 1, b, size, off_b);  // b -> host
        std::vector<unsigned char> whole_a = read_back(q, a), whole_b = read_back(q, b);
        REQUIRE(std::memcmp(back.data() + 1, data.data(), size) == 0);
        CHECK(back[0] == 0);
        CHECK(back[size + 1] == 0);
        for (uint64_t i = 0; i < cap + 5; ++i) {
          const bool inside = i >= off_b && i < off_b + size;
          const unsigned char want = inside ? data[i - off_b] : 0x3C;
          if (whole_b[i] != want) FAIL("byte " << i << " of b is " << int(whole_b[i]) << ", expected " << int(want));
        }
        // a's bytes outside its range were untouched.
        if (off_a > 0) CHECK(whole_a[off_a - 1] == 0xA5);
        CHECK(whole_a[off_a + size] == 0xA5);
      }
    }
  }
  // Whole-buffer copies between equal sizes, into and out of views.
  axl::Buffer c = dev.allocate(cap);
  auto data = random_bytes(cap, 99);
  q.copy_from_host(a, data.data(), cap);
  q.copy(c, a);
  q.copy(b.view(3, 301), c.view(17, 301));
  std::vector<unsigned char> outv(301);
  q.copy_to_host(outv.data(), b, 301, 3);
  CHECK(read_back(q, c) == data);
  CHECK(std::memcmp(outv.data(), data.data() + 17, 301) == 0);
  // Overlapping ranges of one allocation copy like memmove.
  q.copy(a, 100, a, 0, 1000);
  std::vector<unsigned char> moved = read_back(q, a);
  CHECK(std::memcmp(moved.data() + 100, data.data(), 1000) == 0);
}

TEST_CASE("copies between pinned and device buffers", "[devices][copy]") {
  const auto [spec, dev] = each_device();
  INFO("device " << spec);
  axl::Queue q = dev.default_queue();
  axl::Buffer pinned = dev.allocate(1001, AXL_BUFFER_FLAG_PINNED);
  axl::Buffer d = dev.allocate(1001);
  auto data = random_bytes(1001, 7);
  std::memcpy(pinned.host_pointer(), data.data(), 1001);
  q.copy(d, pinned);
  CHECK(read_back(q, d) == data);
  std::memset(pinned.host_pointer(), 0, 1001);
  q.copy(pinned, d);
  q.synchronize();
  CHECK(std::memcmp(pinned.host_pointer(), data.data(), 1001) == 0);
}

TEST_CASE("fills with 1-, 2- and 4-byte patterns", "[devices][fill]") {
  const auto [spec, dev] = each_device();
  INFO("device " << spec);
  axl::Queue q = dev.create_queue();
  axl::Buffer b = dev.allocate(64);
  q.fill(b, 0x00, 1);
  q.fill(b, 0x5A, 1, 3, 5);  // [3, 8)
  auto v = read_back(q, b);
  for (size_t i = 0; i < 64; ++i) CHECK(v[i] == ((i >= 3 && i < 8) ? 0x5A : 0));

  q.fill(b, 0x00, 1);
  q.fill(b, 0xBEEF, 2, 2, 10);  // [2, 12): five uint16
  v = read_back(q, b);
  for (size_t i = 0; i < 64; ++i) {
    unsigned char want = 0;
    if (i >= 2 && i < 12) want = (i % 2 == 0) ? 0xEF : 0xBE;  // little endian
    CHECK(v[i] == want);
  }

  q.fill(b, 0x00, 1);
  q.fill(b, 0xDEADBEEF, 4, 4, 16);  // [4, 20)
  v = read_back(q, b);
  const unsigned char le[4] = {0xEF, 0xBE, 0xAD, 0xDE};
  for (size_t i = 0; i < 64; ++i) CHECK(v[i] == ((i >= 4 && i < 20) ? le[i % 4] : 0));

  // Whole buffer, and a 4-byte fill of a view at an odd address.
  q.fill(b, 0x01020304, 4);
  v = read_back(q, b);
  for (size_t i = 0; i < 64; ++i) CHECK(v[i] == 4 - i % 4);
  q.fill(b, 0x00, 1);
  q.fill(b.view(1, 40), 0x11223344, 4);
  v = read_back(q, b);
  const unsigned char le2[4] = {0x44, 0x33, 0x22, 0x11};
  for (size_t i = 0; i < 64; ++i) CHECK(v[i] == ((i >= 1 && i < 41) ? le2[(i - 1) % 4] : 0));
}

// ------------------------------------------------------- queues and events --

TEST_CASE("one queue runs its work in order", "[devices][queue]") {
  const auto [spec, dev] = each_device();
  INFO("device " << spec);
  axl::Queue q = dev.create_queue();
  axl::Buffer b = dev.allocate(sizeof(uint32_t) * 4);
  q.fill(b, 0, 4);
  // A slow callback holds back the fill and the copy behind it.
  std::atomic<int> slow_done{0};
  enqueue_fn(q, [&] {
    std::this_thread::sleep_for(50ms);
    slow_done.store(1);
  });
  q.fill(b, 0xC0DE, 4, 8, 4);
  uint32_t out[4] = {1, 1, 1, 1};
  q.copy_to_host(out, b, sizeof out);
  q.synchronize();
  CHECK(slow_done.load() == 1);
  CHECK(out[0] == 0);
  CHECK(out[2] == 0xC0DE);

  // Host callbacks run in enqueue order, interleaved with fills.
  std::vector<int> seen;
  for (int i = 0; i < 200; ++i) {
    enqueue_fn(q, [&seen, i] { seen.push_back(i); });
    if (i % 50 == 0) q.fill(b, static_cast<uint32_t>(i), 4);
  }
  q.synchronize();
  REQUIRE(seen.size() == 200);
  for (int i = 0; i < 200; ++i) CHECK(seen[i] == i);
}

TEST_CASE("cross-queue waits: wait_for and events", "[devices][queue][event]") {
  const auto [spec, dev] = each_device();
  INFO("device " << spec);
  axl::Queue a = dev.create_queue(), b = dev.create_queue();
  std::atomic<int> a_done{0};
  std::atomic<int> b_saw{-1};

  SECTION("wait_for") {
    enqueue_fn(a, [&] {
      std::this_thread::sleep_for(50ms);
      a_done.store(1);
    });
    b.wait_for(a);
    enqueue_fn(b, [&] { b_saw.store(a_done.load()); });
    b.synchronize();
    CHECK(b_saw.load() == 1);
  }
  SECTION("event wait covers what was enqueued before the record only") {
    axl::Event e = dev.create_event();
    enqueue_fn(a, [&] {
      std::this_thread::sleep_for(50ms);
      a_done.store(1);
    });
    a.record(e);
    // Work enqueued on `a` after the record is not waited for: it stays
    // behind a closed gate until b is done.
    axl::Flag gate = dev.create_flag();
    std::atomic<int> late{0};
    a.wait_flag(gate, 1);
    enqueue_fn(a, [&] { late.store(1); });
    b.wait(e);
    std::atomic<int> b_saw_late{-1};
    enqueue_fn(b, [&] {
      b_saw.store(a_done.load());
      b_saw_late.store(late.load());
    });
    b.synchronize();
    CHECK(b_saw.load() == 1);
    CHECK(b_saw_late.load() == 0);
    gate.signal(1);
    a.synchronize();
    CHECK(late.load() == 1);
  }
  SECTION("a copy on b sees a's copy after the wait") {
    axl::Buffer buf = dev.allocate(1 << 20);
    auto data = random_bytes(1 << 20, 5);
    enqueue_fn(a, [] { std::this_thread::sleep_for(30ms); });
    a.copy_from_host(buf, data.data(), data.size());
    b.wait_for(a);
    std::vector<unsigned char> out(1 << 20);
    b.copy_to_host(out.data(), buf, out.size());
    b.synchronize();
    CHECK(out == data);
    a.synchronize();
  }
}

TEST_CASE("events: query while the queue is held by a flag", "[devices][event][flag]") {
  const auto [spec, dev] = each_device();
  INFO("device " << spec);
  axl::Queue q = dev.create_queue();
  axl::Flag gate = dev.create_flag();
  axl::Event e = dev.create_event();
  CHECK(e.is_ready());  // never recorded: complete
  q.wait_flag(gate, 1);
  q.record(e);
  CHECK_FALSE(e.is_ready());
  std::this_thread::sleep_for(30ms);
  CHECK_FALSE(e.is_ready());
  gate.signal(1);
  e.synchronize();
  CHECK(e.is_ready());
  q.synchronize();
}

TEST_CASE("event timing measures a 20 ms callback", "[devices][event]") {
  const auto [spec, dev] = each_device();
  INFO("device " << spec);
  axl::Queue q = dev.create_queue();
  axl::Event start = dev.create_event(true), end = dev.create_event(true);
  q.record(start);
  enqueue_fn(q, [] { std::this_thread::sleep_for(20ms); });
  q.record(end);
  end.synchronize();
  const float ms = start.elapsed_ms(end);
  CHECK(ms >= 19.0f);
  CHECK(ms <= 500.0f);
  // Events without timing refuse, naming the flag.
  axl::Event plain = dev.create_event(false);
  q.record(plain);
  q.synchronize();
  vt::expect_error([&] { start.elapsed_ms(plain); }, AXL_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("completion flags: wait_flag blocks the queue, write_flag stores", "[devices][flag]") {
  const auto [spec, dev] = each_device();
  INFO("device " << spec);
  axl::Queue q = dev.create_queue();
  axl::Flag f = dev.create_flag();
  CHECK(f.load() == 0);
  CHECK(f.device_address() != 0);
  std::atomic<int> ran{0};
  q.wait_flag(f, 5);
  enqueue_fn(q, [&] { ran.store(1); });
  std::this_thread::sleep_for(50ms);
  CHECK(ran.load() == 0);
  f.signal(4);  // below the threshold (>= 5): still blocked
  std::this_thread::sleep_for(30ms);
  CHECK(ran.load() == 0);
  f.signal(9);  // above: released
  q.synchronize();
  CHECK(ran.load() == 1);

  // A write waits for the work before it: a closed gate, then a slow callback.
  axl::Flag w = dev.create_flag();
  axl::Flag gate = dev.create_flag();
  q.wait_flag(gate, 1);
  q.write_flag(w, 7);
  std::this_thread::sleep_for(20ms);
  CHECK(w.load() == 0);  // the write is behind the closed gate
  gate.signal(1);
  q.synchronize();
  CHECK(w.load() == 7);
  w.reset();
  CHECK(w.load() == 0);
  enqueue_fn(q, [] { std::this_thread::sleep_for(30ms); });
  q.write_flag(w, 8);
  CHECK(w.load() == 0);  // the callback before it is still sleeping
  q.synchronize();
  CHECK(w.load() == 8);

  // A flag written by one queue releases another, data and order included.
  axl::Queue q2 = dev.create_queue();
  axl::Flag chain = dev.create_flag();
  axl::Buffer buf = dev.allocate(4096);
  auto data = random_bytes(4096, 3);
  std::atomic<int> order{0}, second_saw{-1};
  q2.wait_flag(chain, 1);
  std::vector<unsigned char> out(4096, 0);
  q2.copy_to_host(out.data(), buf, out.size());
  enqueue_fn(q2, [&] { second_saw.store(order.load()); });
  enqueue_fn(q, [&] {
    std::this_thread::sleep_for(20ms);
    order.store(42);
  });
  q.copy_from_host(buf, data.data(), data.size());
  q.write_flag(chain, 1);
  q2.synchronize();
  CHECK(out == data);
  CHECK(second_saw.load() == 42);
}

TEST_CASE("host callbacks run on a backend thread, in order with copies", "[devices][callback]") {
  const auto [spec, dev] = each_device();
  INFO("device " << spec);
  axl::Queue q = dev.create_queue();
  axl::Buffer b = dev.allocate(256);
  std::vector<unsigned char> host(256, 0);
  auto data = random_bytes(256, 8);
  std::thread::id ran_on;
  bool saw_data = false;
  q.copy_from_host(b, data.data(), data.size());
  q.copy_to_host(host.data(), b, host.size());
  enqueue_fn(q, [&] {
    ran_on = std::this_thread::get_id();
    saw_data = host == data;  // the copy before it has finished
  });
  q.synchronize();
  CHECK(ran_on != std::thread::id());
  CHECK(ran_on != std::this_thread::get_id());
  CHECK(saw_data);
}
