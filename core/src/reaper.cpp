// Deferred frees: releasing a buffer whose memory queued work still uses
// never blocks. The allocation is handed to one background thread with an
// event per queue that used it; the thread waits for the events and then
// frees (cuMemFreeAsync's contract, for every backend). Blocking instead
// would deadlock a program whose other thread opens the gate the queue is
// waiting on, and freeing from a queue callback is not allowed on CUDA.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>

#include "submit.hpp"

namespace axl::core {
namespace {

struct Pending {
  Device* device = nullptr;  // whose memory `free` returns; null for pinned/external
  uint64_t bytes = 0;
  std::vector<std::pair<Backend*, axl_pevent>> events;
  // Retained until finish() synchronized and released them; the list itself
  // stays (another thread's ready() may be reading it).
  std::vector<Queue*> drain;
  std::function<void()> free;
  Pending() = default;
  Pending(const Pending&) = delete;
  // The events go with the entry, not with its free: a thread that only
  // looks at an entry another thread is finishing may still query them.
  ~Pending() {
    for (auto& e : events) {
      Backend* b = e.first;
      axl_pevent ev = e.second;
      if (!b->poisoned.load()) AXL_CALL(b, event_destroy, ev);
    }
  }
};
using Item = std::shared_ptr<Pending>;

// Whether every queue has reached the release point, without blocking. A
// failed query counts as reached: the failure is the queue's to report, and
// the event wait in finish() returns at once.
bool ready(const Pending& p) {
  if (!p.drain.empty()) return false;  // only a queue synchronize can tell
  for (const auto& e : p.events) {
    Backend* b = e.first;
    axl_pevent ev = e.second;
    if (b->poisoned.load()) continue;
    if (AXL_CALL(b, event_query, ev) == AXL_ERROR_NOT_READY) return false;
  }
  return true;
}

class Reaper {
 public:
  // False in a forked child (the thread is gone) or when no thread starts:
  // the caller then frees synchronously.
  bool push(const Item& p) {
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
    items_.push_back(p);
    ++pending_;
    if (p->device) p->device->deferred_frees.fetch_add(1);
    cv_.notify_one();
    return true;
  }

  // Waits until `deadline` for every handed-over free to finish (at exit, so
  // leak checkers and external owners see their memory returned). A queue
  // that never finishes (gated forever) cannot hold up the exit longer.
  void drain(std::chrono::steady_clock::time_point deadline) {
    if (owner_.load() != getpid()) return;
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait_until(lk, deadline, [&] { return pending_ == 0; });
  }

  uint64_t pending_bytes(Device* d) {
    std::lock_guard<std::mutex> lk(mu_);
    uint64_t n = 0;
    for (const Item& p : items_)
      if (p->device == d) n += p->bytes;
    for (const Item& p : claimed_)
      if (p->device == d) n += p->bytes;
    return n;
  }

  uint64_t reclaim(Device* d, const std::chrono::steady_clock::time_point* deadline) {
    if (owner_.load() != getpid()) return 0;  // a forked child has nothing of the parent's to free
    // Counted by whoever frees: the reaper thread may free d's memory while
    // this thread waits, and that is as good for the caller.
    const uint64_t start = d->deferred_freed.load();
    auto freed = [&] { return d->deferred_freed.load() - start; };
    auto pause = std::chrono::microseconds(50);
    for (;;) {
      // Claim d's unclaimed entries; note the ones other threads finish.
      std::vector<Item> mine, others;
      {
        std::lock_guard<std::mutex> lk(mu_);
        for (auto it = items_.begin(); it != items_.end();) {
          if ((*it)->device == d) {
            mine.push_back(*it);
            claimed_.push_back(*it);
            it = items_.erase(it);
          } else {
            ++it;
          }
        }
        for (const Item& p : claimed_)
          if (p->device == d && std::find(mine.begin(), mine.end(), p) == mine.end()) others.push_back(p);
      }
      if (mine.empty() && others.empty()) return freed();
      std::vector<Item> not_yet;
      for (Item& p : mine) {
        if (ready(*p)) {
          finish(*p);
          done(std::move(p));
        } else {
          not_yet.push_back(p);
        }
      }
      if (!not_yet.empty()) {
        // Back to the reaper thread, in their order (the oldest of d's first).
        std::lock_guard<std::mutex> lk(mu_);
        for (auto it = not_yet.rbegin(); it != not_yet.rend(); ++it) {
          items_.push_front(*it);
          claimed_.erase(std::find(claimed_.begin(), claimed_.end(), *it));
        }
        cv_.notify_one();
      }
      for (const Item& p : others) {
        // Its finisher is past the wait or about to be: the free follows
        // at once, so waiting for it is short and cannot deadlock.
        if (!ready(*p)) continue;
        std::unique_lock<std::mutex> lk(mu_);
        done_cv_.wait(lk, [&] { return std::find(claimed_.begin(), claimed_.end(), p) == claimed_.end(); });
      }
      if (freed() || !deadline || std::chrono::steady_clock::now() >= *deadline) return freed();
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
  }

 private:
  void run() {
    for (;;) {
      Item p;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return !items_.empty(); });
        p = items_.front();
        items_.pop_front();
        claimed_.push_back(p);
      }
      finish(*p);
      done(std::move(p));
    }
  }

  // Takes the finisher's reference, the last one unless another thread is
  // looking at the entry this instant: the events are destroyed before the
  // entry counts as done, so the exit drain does not return while the
  // driver still has calls of ours to come (its own exit teardown follows).
  void done(Item&& p) {
    Device* dev = p->device;
    {
      std::lock_guard<std::mutex> lk(mu_);
      claimed_.erase(std::find(claimed_.begin(), claimed_.end(), p));
    }
    p.reset();
    if (dev) dev->deferred_frees.fetch_sub(1);
    std::lock_guard<std::mutex> lk(mu_);
    if (--pending_ == 0 || dev) done_cv_.notify_all();
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
    }
    for (Queue* q : p.drain) {
      if (!q->device->backend->poisoned.load()) AXL_CALL(q->device->backend, queue_synchronize, q->pq);
      release(q);
    }
    if (!process_exiting()) p.free();
    if (p.device) p.device->deferred_freed.fetch_add(p.bytes);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<Item> items_;     // not yet claimed by a thread
  std::vector<Item> claimed_;  // being finished (or looked at) by some thread
  size_t pending_ = 0;         // pushed and not yet freed
  bool started_ = false;
  std::atomic<pid_t> owner_{0};
};

Reaper& reaper() {
  static Reaper* r = new Reaper();  // never destroyed: its thread may outlive main
  return *r;
}

}  // namespace

void drain_deferred_frees() {
  begin_exit();
  reaper().drain(exit_deadline());
}

uint64_t reclaim_deferred_frees(Device* d, const std::chrono::steady_clock::time_point* deadline) {
  if (d->deferred_frees.load(std::memory_order_relaxed) == 0) return 0;
  return reaper().reclaim(d, deadline);
}

uint64_t deferred_free_bytes(Device* d) {
  if (d->deferred_frees.load(std::memory_order_relaxed) == 0) return 0;
  return reaper().pending_bytes(d);
}

void free_after_queues(std::vector<Queue*>& used_by, std::function<void()> free, Device* device,
                       uint64_t bytes) {
  auto p = std::make_shared<Pending>();
  p->device = device;
  p->bytes = bytes;
  for (Queue* q : used_by) {
    Backend* qb = q->device->backend;
    // In a forked child a poisoned backend's threads are gone and none of
    // the parent's work runs here: nothing to wait for. A queue synchronized
    // since its last submission has finished every use: no marker, so a
    // buffer released after its queues' synchronize is freed before the
    // release returns and the device's free memory shows it at once (as
    // after cuMemFree), not whenever the reaper thread gets to it.
    if (!qb->poisoned.load() && !q->idle()) {
      axl_pevent ev = nullptr;
      // At exit no marker is enqueued: a full queue that never progresses
      // would block this release (exit.cpp); the reaper waits for the whole
      // queue instead, and the exit drain waits for the reaper only so long.
      axl_status s = exit_began() ? AXL_ERROR_INVALID_STATE
                                  : AXL_CALL(qb, event_create, q->device->pdev, 0, &ev);
      if (!s) s = Submission::record_event(q, ev);
      if (!s) {
        p->events.emplace_back(qb, ev);
      } else {
        if (ev) AXL_CALL(qb, event_destroy, ev);
        // No marker: the reaper waits for the whole queue instead (keeping
        // it alive until then), still without blocking the caller.
        retain(q);
        p->drain.push_back(q);
      }
    }
    release(q);
  }
  used_by.clear();
  p->free = std::move(free);
  if ((p->events.empty() && p->drain.empty()) || !reaper().push(p)) Reaper::finish(*p);
}

}  // namespace axl::core
