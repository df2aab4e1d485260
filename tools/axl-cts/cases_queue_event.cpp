// Queues, events, completion flags and host callbacks: ordering guarantees.
//
// The raw axl_* calls stay raw on purpose: axl_event_query's NOT_READY,
// axl_event_elapsed_ms's exact statuses on events without timing or never
// recorded, and the identity of axl_queue_native_handle answers are the C
// ABI under test; the rest goes through axl.hpp.
//
// Ordering can only be observed when work is held back: the cases hold a
// queue with hold.hpp's Hold.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <thread>

#include "cts.hpp"
#include "hold.hpp"

namespace cts {
namespace {

using Clock = std::chrono::steady_clock;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

struct Sleep {
  int ms;
  static void run(void* p) { sleep_ms(static_cast<Sleep*>(p)->ms); }
};

std::vector<uint8_t> u32_bytes(size_t n, uint32_t v) {
  std::vector<uint8_t> out(n * 4);
  for (size_t i = 0; i < n; ++i) std::memcpy(out.data() + 4 * i, &v, 4);
  return out;
}

}  // namespace

TEST_CASE("cts.queue.in_order", "[queue]") {
  for_each_device("cts.queue.in_order", [](Ctx& c) {
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    const size_t n = 4096;
    axl::Buffer a = dev.allocate(n * 4), b = dev.allocate(n * 4);
    const bool fill = c.backend().has_slot("queue_fill");
    const auto zeros = u32_bytes(n, 0);
    // Each round depends on the previous op having run first: b gets what
    // the htod wrote, and never what the later overwrite of a writes.
    std::deque<std::vector<uint8_t>> inputs, outputs;
    for (uint32_t round = 1; round <= 48; ++round) {
      inputs.push_back(u32_bytes(n, round));
      outputs.emplace_back(n * 4, 0);
      q.copy_from_host(a, inputs.back().data(), n * 4);
      q.copy(b, a);
      if (fill)
        q.fill(a, 0, 4);
      else
        q.copy_from_host(a, zeros.data(), n * 4);
      q.copy_to_host(outputs.back().data(), b, n * 4);
    }
    q.synchronize();
    for (size_t r = 0; r < outputs.size(); ++r) {
      const std::string diff = first_difference(outputs[r], inputs[r]);
      c.check(diff.empty(), cat("round ", r + 1, " of htod -> dtod -> overwrite -> dtoh: ", diff));
      if (!diff.empty()) break;
    }
  });
}

TEST_CASE("cts.queue.cross_queue_wait", "[queue]") {
  for_each_device("cts.queue.cross_queue_wait", [](Ctx& c) {
    const axl::Device& dev = c.dev();
    axl::Queue q1 = dev.create_queue(), q2 = dev.create_queue();
    const size_t bytes = 1 << 20;
    axl::Buffer a = dev.allocate(bytes), b = dev.allocate(bytes);
    const bool callbacks = c.backend().has_slot("queue_enqueue_host_fn");
    if (!callbacks)
      c.note("no host callbacks: q1 is slowed by copies only, so a missing wait may go unseen");
    std::vector<Sleep> naps(8, Sleep{15});
    const auto filler = random_bytes(bytes, 1);

    // Data: q2 copies a to b only after q1 wrote a.
    for (int round = 0; round < 8; ++round) {
      const auto data = random_bytes(bytes, 100 + round);
      std::vector<uint8_t> out(bytes, 0);
      if (callbacks) q1.enqueue_host_func(Sleep::run, &naps[round]);
      for (int k = 0; k < 3; ++k) q1.copy_from_host(a, filler.data(), bytes);
      q1.copy_from_host(a, data.data(), bytes);
      if (round % 2 == 0) {
        q2.wait_for(q1);
      } else {
        axl::Event e = dev.create_event();
        q1.record(e);
        q2.wait(e);
      }
      q2.copy(b, a);
      q2.copy_to_host(out.data(), b, bytes);
      q2.synchronize();
      q1.synchronize();
      const std::string diff = first_difference(out, data);
      c.check(diff.empty(), cat("round ", round, " (wait by ", round % 2 ? "event" : "queue", "): q2 ran ",
                                "before q1's copy finished: ", diff));
    }

    // Order without data: q2's callback must see q1's callback done, also
    // across backends (a queue of another backend waiting for this one).
    if (!callbacks) return;
    struct Mark {
      std::atomic<bool> done{false};
      std::atomic<int> seen{-1};
    };
    auto waiter_case = [&](const axl::Queue& waiter, const std::string& what) {
      Mark m;
      q1.enqueue_host_func(
          [](void* p) {
            sleep_ms(30);
            static_cast<Mark*>(p)->done.store(true);
          },
          &m);
      waiter.wait_for(q1);
      waiter.enqueue_host_func(
          [](void* p) {
            auto* mk = static_cast<Mark*>(p);
            mk->seen.store(mk->done.load() ? 1 : 0);
          },
          &m);
      waiter.synchronize();
      q1.synchronize();
      c.check(m.seen.load() == 1, cat(what, ": the waiting queue ran before the queue it waits for"));
    };
    waiter_case(q2, "same device");
    for (const BackendUnderTest& other : backends()) {
      if (other.name == c.backend().name || other.devices.empty()) continue;
      if (!other.has_slot("queue_enqueue_host_fn")) continue;
      axl::Queue oq = other.devices[0].device.create_queue();
      waiter_case(oq, cat("a queue of ", other.name, " waiting for this one"));
      break;
    }
  });
}

TEST_CASE("cts.queue.concurrent_submit_8_threads", "[queue][threads]") {
  for_each_device("cts.queue.concurrent_submit_8_threads", [](Ctx& c) {
    const axl::Device& dev = c.dev();
    constexpr int kThreads = 8, kRounds = 40;
    constexpr size_t kBytes = 16 * 1024;
    axl::Queue shared = dev.create_queue();
    axl::Buffer shared_buf = dev.allocate(kThreads * kRounds * 64);
    std::vector<std::vector<uint8_t>> shared_src(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        try {
          // Own queue: an htod -> dtod -> dtoh chain, checked every 10 rounds.
          axl::Queue q = dev.create_queue();
          axl::Buffer a = dev.allocate(kBytes), b = dev.allocate(kBytes);
          std::deque<std::vector<uint8_t>> in, out;
          for (int r = 0; r < kRounds; ++r) {
            in.push_back(random_bytes(kBytes, t * 1000 + r));
            out.emplace_back(kBytes, 0);
            q.copy_from_host(a, in.back().data(), kBytes);
            q.copy(b, a);
            q.copy_to_host(out.back().data(), b, kBytes);
            if (r % 10 == 9) {
              q.synchronize();
              for (size_t k = 0; k < in.size(); ++k) {
                const std::string diff = first_difference(out[k], in[k]);
                c.check(diff.empty(), cat("thread ", t, " round ", r - 9 + int(k), ": ", diff));
              }
              in.clear();
              out.clear();
            }
          }
          // One queue shared by all threads: each writes its own slices.
          shared_src[t] = random_bytes(kRounds * 64, 50 + t);
          for (int r = 0; r < kRounds; ++r)
            shared.copy_from_host(shared_buf, shared_src[t].data() + r * 64, 64,
                                  (uint64_t(r) * kThreads + t) * 64);
        } catch (const axl::Error& e) {
          c.check(false, cat("thread ", t, ": ", e.status_name(), ": ", e.what()));
        } catch (const std::exception& e) {
          c.check(false, cat("thread ", t, ": ", e.what()));
        }
      });
    }
    for (auto& th : threads) th.join();
    shared.synchronize();
    std::vector<uint8_t> want(kThreads * kRounds * 64);
    for (int t = 0; t < kThreads; ++t)
      for (int r = 0; r < kRounds; ++r)
        if (!shared_src[t].empty())
          std::memcpy(want.data() + (size_t(r) * kThreads + t) * 64, shared_src[t].data() + r * 64, 64);
    const std::string diff = first_difference(read_back(shared, shared_buf), want);
    c.check(diff.empty(), cat("8 threads writing one buffer through one shared queue: ", diff));
  });
}

TEST_CASE("cts.event.record_query_sync", "[event]") {
  for_each_device("cts.event.record_query_sync", [](Ctx& c) {
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue(), q2 = dev.create_queue();
    axl::Event e = dev.create_event(), e2 = dev.create_event();
    // Never recorded: complete (CUDA's rule, plugin.h's too).
    c.check(e.is_ready(), "an event never recorded is not complete");
    e.synchronize();

    Hold hold(c, q);
    if (!hold.held())
      c.skip_part("no host callbacks and no completion flags: a recorded event cannot be held "
                  "pending, so NOT_READY is not checked");
    q.record(e);
    q2.wait(e);  // q2 now waits for the held queue
    q2.record(e2);
    if (hold.held()) {
      sleep_ms(20);
      c.check(axl_event_query(e.get()) == AXL_ERROR_NOT_READY,
              "an event recorded behind held work is already complete");
      c.check(axl_event_query(e2.get()) == AXL_ERROR_NOT_READY,
              "an event on a queue waiting for held work is already complete");
    }
    hold.release();
    e2.synchronize();
    c.check(e2.is_ready(), "event_synchronize returned but the event is not complete");
    c.check(e.is_ready(), "the waited-for event is not complete after the waiting queue's event");
    // Recording again moves the event to the new point.
    q.record(e);
    e.synchronize();
    c.check(e.is_ready(), "a re-recorded event is not complete after event_synchronize");
    q.synchronize();
    q2.synchronize();
  });
}

TEST_CASE("cts.event.elapsed_monotonic", "[event]") {
  for_each_device("cts.event.elapsed_monotonic", [](Ctx& c) {
    c.need_slot("event_elapsed_ms");
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    axl::Event a = dev.create_event(true), b = dev.create_event(true), e = dev.create_event(true);
    const bool callbacks = c.backend().has_slot("queue_enqueue_host_fn");
    constexpr int kNapMs = 20;
    Sleep nap{kNapMs};
    const size_t bytes = 8 << 20;
    axl::Buffer x = dev.allocate(bytes), y = dev.allocate(bytes);
    auto work = [&] {
      if (callbacks) q.enqueue_host_func(Sleep::run, &nap);
      for (int k = 0; k < 4; ++k) q.copy(y, x);
    };
    const auto t0 = Clock::now();
    q.record(a);
    work();
    q.record(b);
    work();
    q.record(e);
    e.synchronize();
    const double wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();

    const float ab = a.elapsed_ms(b), bc = b.elapsed_ms(e), ac = a.elapsed_ms(e), aa = a.elapsed_ms(a);
    c.check(ab >= 0 && bc >= 0 && ac >= 0,
            cat("negative elapsed time: t(a,b) ", ab, ", t(b,c) ", bc, ", t(a,c) ", ac, " ms"));
    c.check(std::fabs(aa) < 1e-3, cat("t(a,a) is ", aa, " ms, expected 0"));
    const double tol = 0.1 + 0.01 * ac;  // timer resolution, float rounding
    c.check(std::fabs(ab + bc - ac) <= tol,
            cat("t(a,b) + t(b,c) = ", ab + bc, " ms but t(a,c) = ", ac, " ms (tolerance ", tol, ")"));
    c.check(ac <= wall_ms + 1.0,
            cat("t(a,c) = ", ac, " ms is longer than the ", wall_ms, " ms the host waited"));
    if (callbacks)
      c.check(ab >= 0.5 * kNapMs && bc >= 0.5 * kNapMs,
              cat("t(a,b) = ", ab, " and t(b,c) = ", bc, " ms, but ", kNapMs,
                  " ms of host callbacks ran between the records"));

    // Misuse is refused with a reason.
    axl::Event plain = dev.create_event(false), fresh = dev.create_event(true);
    q.record(plain);
    q.synchronize();
    float ms = 0;
    c.expect_status(axl_event_elapsed_ms(plain.get(), e.get(), &ms), AXL_ERROR_INVALID_ARGUMENT,
                    "elapsed time from an event without timing", "timing");
    c.expect_status(axl_event_elapsed_ms(fresh.get(), e.get(), &ms), AXL_ERROR_INVALID_STATE,
                    "elapsed time from an event never recorded", "recorded");
  });
}

TEST_CASE("cts.flag.gate_queue", "[flag]") {
  for_each_device("cts.flag.gate_queue", [](Ctx& c) {
    for (const char* s : {"flag_create", "flag_get_host_address", "queue_wait_flag", "queue_write_flag"})
      c.need_slot(s);
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    axl::Flag gate = dev.create_flag(), out = dev.create_flag();
    c.check(gate.load() == 0 && out.load() == 0, "a new flag is not 0");
    if (c.backend().has_slot("flag_get_device_address"))
      c.check(gate.device_address() != 0, "flag_get_device_address gave 0");
    axl::Event e = dev.create_event();
    q.wait_flag(gate, 5);  // >= 5, as cuStreamWaitValue64 GEQ
    q.write_flag(out, 7);
    q.record(e);
    sleep_ms(30);
    c.check(out.load() == 0, "work behind wait_flag(gate, 5) ran while the gate was 0");
    c.check(!e.is_ready(), "an event behind wait_flag(gate, 5) completed while the gate was 0");
    gate.signal(3);
    sleep_ms(30);
    c.check(out.load() == 0, "work behind wait_flag(gate, 5) ran when the gate was 3 (< 5)");
    gate.signal(9);
    e.synchronize();
    q.synchronize();
    c.check(out.load() == 7, cat("write_flag(out, 7) left ", out.load()));
    out.reset();
    c.check(out.load() == 0, "flag reset did not store 0");
  });
}

TEST_CASE("cts.callback.order", "[callback]") {
  for_each_device("cts.callback.order", [](Ctx& c) {
    c.need_slot("queue_enqueue_host_fn");
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    struct Log {
      std::mutex mu;
      std::vector<int> seen;
    } log;
    struct Entry {
      Log* log;
      int index;
    };
    constexpr int kCallbacks = 200;
    std::vector<Entry> entries;
    for (int k = 0; k < kCallbacks; ++k) entries.push_back({&log, k});
    axl::Buffer buf = dev.allocate(4096);
    const auto data = random_bytes(4096, 3);
    // A callback runs after the work before it: it sees the dtoh's bytes.
    struct Seen {
      const std::vector<uint8_t>* want;
      std::vector<uint8_t> got;
      std::atomic<int> equal{-1};
    } seen{&data, std::vector<uint8_t>(4096, 0), {}};
    for (int k = 0; k < kCallbacks; ++k) {
      if (k % 10 == 0) q.copy_from_host(buf, data.data(), 4096);
      if (k == kCallbacks / 2) {
        q.copy_to_host(seen.got.data(), buf, 4096);
        q.enqueue_host_func(
            [](void* p) {
              auto* s = static_cast<Seen*>(p);
              s->equal.store(s->got == *s->want ? 1 : 0);
            },
            &seen);
      }
      q.enqueue_host_func(
          [](void* p) {
            auto* en = static_cast<Entry*>(p);
            std::lock_guard<std::mutex> lk(en->log->mu);
            en->log->seen.push_back(en->index);
          },
          &entries[k]);
    }
    q.synchronize();
    std::vector<int> want(kCallbacks);
    for (int k = 0; k < kCallbacks; ++k) want[k] = k;
    c.check(log.seen.size() == size_t(kCallbacks),
            cat(log.seen.size(), " of ", kCallbacks, " callbacks ran before synchronize returned"));
    c.check(log.seen == want, "callbacks ran out of enqueue order");
    c.check(seen.equal.load() == 1,
            "a callback enqueued after a dtoh did not see the dtoh's bytes (it ran too early)");
  });
}

TEST_CASE("cts.queue.native_handle", "[queue]") {
  for_each_device("cts.queue.native_handle", [](Ctx& c) {
    c.need_slot("queue_get_native_handle");
    const axl::Device& dev = c.dev();
    axl::Queue q1 = dev.create_queue(), q2 = dev.create_queue();
    uint64_t h1 = 0, again = 0, h2 = 0;
    c.ok(axl_queue_native_handle(q1.get(), &h1), "axl_queue_native_handle");
    c.ok(axl_queue_native_handle(q1.get(), &again), "axl_queue_native_handle, asked again");
    c.ok(axl_queue_native_handle(q2.get(), &h2), "axl_queue_native_handle of a second queue");
    // plugin.h: the driver's queue (CUstream, hipStream_t, ...) or 0 if none.
    c.check(h1 == again, cat("one queue gave two native handles, 0x", std::hex, h1, " then 0x", again));
    if (h1 == 0 && h2 == 0) {
      c.note("the native handle is 0: the backend has no driver queue to hand out");
      return;
    }
    c.check(h1 != h2, cat("two queues share the native handle 0x", std::hex, h1));
    // The handle stays the queue's while it has work.
    axl::Buffer buf = dev.allocate(64);
    const auto data = random_bytes(64, 1);
    q1.copy_from_host(buf, data.data(), 64);
    q1.synchronize();
    c.ok(axl_queue_native_handle(q1.get(), &again), "axl_queue_native_handle after work");
    c.check(h1 == again, "the native handle changed after the queue ran work");
  });
}

}  // namespace cts
