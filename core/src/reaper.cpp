// Deferred frees: releasing a buffer whose memory queued work still uses
// never blocks. The allocation is handed to one background thread with an
// event per queue that used it; the thread waits for the events and then
// frees (cuMemFreeAsync's contract, for every backend). Blocking instead
// would deadlock a program whose other thread opens the gate the queue is
// waiting on, and freeing from a queue callback is not allowed on CUDA.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>

#include "internal.hpp"

namespace axl::core {
namespace {

struct Pending {
  std::vector<std::pair<Backend*, axl_pevent>> events;
  std::vector<Queue*> drain;  // retained: no event could be recorded on them
  std::function<void()> free;
};

class Reaper {
 public:
  // False in a forked child (the thread is gone) or when no thread starts:
  // the caller then frees synchronously.
  bool push(Pending&& p) {
    if (owner_.load() != 0 && owner_.load() != getpid()) return false;
    std::lock_guard<std::mutex> lk(mu_);
    if (!started_) {
      try {
        std::thread([this] { run(); }).detach();
      } catch (...) {
        return false;
      }
      started_ = true;
      owner_.store(getpid());
    }
    items_.push_back(std::move(p));
    ++pending_;
    cv_.notify_one();
    return true;
  }

  // Waits up to `timeout` for every handed-over free to finish (at exit, so
  // leak checkers and external owners see their memory returned). A queue
  // that never finishes (gated forever) cannot hold up the exit longer.
  void drain(std::chrono::milliseconds timeout) {
    if (owner_.load() != getpid()) return;
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait_for(lk, timeout, [&] { return pending_ == 0; });
  }

 private:
  void run() {
    for (;;) {
      Pending p;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return !items_.empty(); });
        p = std::move(items_.front());
        items_.pop_front();
      }
      finish(p);
      std::lock_guard<std::mutex> lk(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }

 public:
  static void finish(Pending& p) {
    for (auto& e : p.events) {
      // Not a structured binding: AXL_CALL's lambda captures these, which
      // clang (the fuzz build) refuses for bindings before C++20 P1091.
      Backend* b = e.first;
      axl_pevent ev = e.second;
      if (b->poisoned.load()) continue;
      AXL_CALL(b, event_synchronize, ev);  // a failure there is the queue's to report
      AXL_CALL(b, event_destroy, ev);
    }
    for (Queue* q : p.drain) {
      if (!q->device->backend->poisoned.load()) AXL_CALL(q->device->backend, queue_synchronize, q->pq);
      release(q);
    }
    if (!process_exiting()) p.free();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<Pending> items_;
  size_t pending_ = 0;  // pushed and not yet freed
  bool started_ = false;
  std::atomic<pid_t> owner_{0};
};

Reaper& reaper() {
  static Reaper* r = new Reaper();  // never destroyed: its thread may outlive main
  return *r;
}

}  // namespace

void drain_deferred_frees() { reaper().drain(std::chrono::milliseconds(5000)); }

void free_after_queues(std::vector<Queue*>& used_by, std::function<void()> free) {
  Pending p;
  for (Queue* q : used_by) {
    Backend* qb = q->device->backend;
    // In a forked child a poisoned backend's threads are gone and none of
    // the parent's work runs here: nothing to wait for.
    if (!qb->poisoned.load()) {
      axl_pevent ev = nullptr;
      axl_status s = AXL_CALL(qb, event_create, q->device->pdev, 0, &ev);
      if (!s) s = q->submit([&] { return AXL_CALL(qb, queue_record_event, q->pq, ev); });
      if (!s) {
        p.events.emplace_back(qb, ev);
      } else {
        if (ev) AXL_CALL(qb, event_destroy, ev);
        // No marker: the reaper waits for the whole queue instead (keeping
        // it alive until then), still without blocking the caller.
        retain(q);
        p.drain.push_back(q);
      }
    }
    release(q);
  }
  used_by.clear();
  p.free = std::move(free);
  if ((p.events.empty() && p.drain.empty()) || !reaper().push(std::move(p))) Reaper::finish(p);
}

}  // namespace axl::core
