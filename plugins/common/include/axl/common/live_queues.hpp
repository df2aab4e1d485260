// The queues a backend has alive: queue_create adds, queue_destroy removes,
// and backend_shutdown stops (or destroys) whatever the core left behind.
#pragma once

#include <mutex>
#include <unordered_set>
#include <utility>

#include "axl/common/plugin_support.hpp"

namespace axl::common {

template <class Queue>
class LiveQueues {
 public:
  void add(Queue* q) {
    std::lock_guard<std::mutex> lk(mu_);
    queues_.insert(q);
  }
  // False when `q` was no longer listed (taken by take_all at shutdown).
  bool remove(Queue* q) {
    std::lock_guard<std::mutex> lk(mu_);
    return queues_.erase(q) != 0;
  }
  // A copy of the set, for work done without the lock (stopping workers).
  std::unordered_set<Queue*> snapshot() const {
    std::lock_guard<std::mutex> lk(mu_);
    return queues_;
  }
  // Empties the set and returns what it held.
  std::unordered_set<Queue*> take_all() {
    std::lock_guard<std::mutex> lk(mu_);
    return std::exchange(queues_, {});
  }
  // Calls `f(queue)` for every live queue with the set locked, so no queue
  // is destroyed meanwhile.
  template <class F>
  void for_each(F&& f) const {
    std::lock_guard<std::mutex> lk(mu_);
    for (Queue* q : queues_) f(*q);
  }

 private:
  mutable std::mutex mu_;
  std::unordered_set<Queue*> queues_;
};

// backend_shutdown of a backend whose queues hold driver objects of its
// contexts (opencl, level_zero): stops the host thread (`Queue::host`, a
// WorkQueue started on first use) of every queue the core left alive, since
// plugin threads must end here and never at exit. Returns true, after
// logging "<backend>: backend_shutdown found N queue(s) still alive;
// contexts are kept", when there were any: the caller then keeps its
// contexts, which those queues' driver objects still belong to.
template <class Queue>
bool stop_leftover_host_threads(const HostServices& host, const LiveQueues<Queue>& live,
                                const char* backend) {
  const auto leftover = live.snapshot();
  for (Queue* q : leftover)
    if (q->host) q->host->stop();
  if (leftover.empty()) return false;
  host.log(AXL_LOG_WARN, str(backend, ": backend_shutdown found ", leftover.size(),
                             " queue(s) still alive; contexts are kept"));
  return true;
}

}  // namespace axl::common
