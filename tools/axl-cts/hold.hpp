// Holding a queue: work enqueued behind a Hold waits until release(), so a
// case can observe what a backend does with pending work (ordering, events
// not yet complete, a module unloaded while its launches are queued).
//
// The queue is held with a host callback that waits on a host-side gate, or,
// on backends without callbacks, with a completion flag the host raises.
// Gates always open after a timeout, so a broken backend fails a check
// instead of hanging the run.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "cts.hpp"

namespace cts {

// Held by a host callback until opened (or 10 s passed).
struct Gate {
  std::atomic<bool> open{false};
  std::atomic<bool> entered{false};
  static void wait(void* p) {
    auto* g = static_cast<Gate*>(p);
    g->entered.store(true);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!g->open.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
};

// Holds `q` until release(); false when the backend has no way to.
class Hold {
 public:
  Hold(Ctx& c, const axl::Queue& q) {
    if (c.backend().has_slot("queue_enqueue_host_fn")) {
      q.enqueue_host_func(Gate::wait, &gate_);
      held_ = true;
    } else if (c.backend().has_slot("flag_create") && c.backend().has_slot("queue_wait_flag") &&
               c.backend().has_slot("flag_get_host_address")) {
      flag_ = c.dev().create_flag();
      q.wait_flag(flag_, 1);
      held_ = true;
    }
  }
  ~Hold() { release(); }
  bool held() const { return held_; }
  void release() {
    gate_.open.store(true);
    if (flag_) flag_.signal(1);
  }

 private:
  Gate gate_;
  axl::Flag flag_;
  bool held_ = false;
};

}  // namespace cts
