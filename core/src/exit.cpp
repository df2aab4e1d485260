// Process exit: work that can still run gets a bounded time, then is left.
//
// Exit must always end. A queue whose last reference is dropped drains its
// work first (plugin.h: queue_destroy), which is right while the process
// runs and wrong while it ends: at interpreter finalisation a queue gated on
// a completion flag nobody will write would be joined forever. So, once
// axl_process_exit_begin ran (a binding's exit hook; the core's own atexit
// handler), the drain of a released queue runs on a helper thread and the
// releasing thread waits only until one shared exit deadline; a queue not
// done by then is abandoned: no queue_destroy, its plugin queue and worker
// are left for the OS, and a warning says what it still had pending.
//
// The deadline is shared, not per queue, so ten stuck queues cost the grace
// once, not ten times. A helper thread rather than an event polled against
// the deadline: recording an event is itself an enqueue, which a full
// (bounded) queue would block.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <condition_variable>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include "internal.hpp"

namespace axl::core {

namespace {

// Steady-clock nanoseconds of the exit deadline; 0 while the process is not
// exiting. Written once (compare-and-swap), read lock-free.
std::atomic<int64_t> g_exit_deadline_ns{0};
std::atomic<int64_t> g_exit_grace_ms{kExitGraceDefaultMs};  // the grace that deadline used

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// AXL_EXIT_GRACE_MS: a decimal count of milliseconds, 0 to one day.
int64_t exit_grace_ms() {
  return env_u32("AXL_EXIT_GRACE_MS", 0, 86400000u, kExitGraceDefaultMs,
                 "a number of milliseconds from 0 to 86400000 (default 2000)");
}

// Past the exit deadline: how long one queue's drain is still waited for,
// how much the looks that ran out (stuck queues) may add together, and the
// look every queue still gets once they have (drain_queue_for_exit).
constexpr int64_t kLateLookMs = 20;
constexpr int64_t kLateBudgetMs = 250;
constexpr int64_t kLastLookMs = 2;
// Milliseconds of late looks that ran out so far.
std::atomic<int64_t> g_late_spent_ms{0};

// How run_detached_until's work went by its deadline.
enum class Detached { finished, running, no_thread };

// Runs `work` on a thread of its own and waits for it until `until`: the
// one way exit code waits for something that may never finish (a queue's
// drain, a caller's wait). `running`: not done by then; the thread lives on,
// detached, and may outlive the caller's objects (`work` owns what it
// touches). `no_thread`: none could be started (stuck waits and abandoned
// queues hold many at exit), so `work` never ran.
Detached run_detached_until(std::function<void()> work, std::chrono::steady_clock::time_point until) {
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto state = std::make_shared<Done>();
  try {
    std::thread([state, work = std::move(work)] {
      work();
      std::lock_guard<std::mutex> lk(state->mu);
      state->done = true;
      state->cv.notify_all();
    }).detach();
  } catch (const std::system_error&) {
    return Detached::no_thread;
  }
  std::unique_lock<std::mutex> lk(state->mu);
  return state->cv.wait_until(lk, until, [&] { return state->done; }) ? Detached::finished : Detached::running;
}

// "N operation(s)" for the abandoned-queue warning: "about N" when the
// count may have lost concurrent submissions (Queue::count_exact), no
// number when a late synchronize overtook its reading.
std::string pending_text(uint64_t submitted, uint64_t synced, bool exact) {
  if (submitted <= synced) return "operations";
  return (exact ? "" : "about ") + std::to_string(submitted - synced) + " operation(s)";
}

}  // namespace

bool exit_began() { return g_exit_deadline_ns.load(std::memory_order_relaxed) != 0; }

std::chrono::steady_clock::time_point exit_deadline() {
  return std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(g_exit_deadline_ns.load(std::memory_order_relaxed)));
}

int64_t begin_exit() {
  int64_t d = g_exit_deadline_ns.load();
  if (d != 0) return d;
  const int64_t grace = exit_grace_ms();
  const int64_t mine = steady_now_ns() + grace * 1000000LL;
  g_exit_grace_ms.store(grace);
  // A lost race keeps the first caller's deadline.
  if (!g_exit_deadline_ns.compare_exchange_strong(d, mine)) return d;
  return mine;
}

bool drain_queue_for_exit(Queue* q) {
  const uint64_t submitted = q->submitted.load();
  // Nothing enqueued since its last synchronize returned: nothing to wait
  // for. A count that may have lost submissions (an unserialised queue that
  // several threads used, internal.hpp) is not trusted: that queue is
  // drained, which for an idle queue costs a thread start.
  const bool exact = q->count_exact();
  if (q->idle()) return true;
  Backend* b = q->device->backend;
  axl_pqueue pq = q->pq;
  // Once an earlier stuck queue has used up the shared deadline, a queue
  // that is merely idle still needs its drain thread to run: each gets a
  // short look past the deadline (kLateLookMs). Only looks that run out are
  // charged, kLateBudgetMs in all, so a queue that finished costs what its
  // drain took (about a thread start) and is not reported as abandoned,
  // however many come after a stuck one; once stuck queues have spent the
  // budget, each later queue still gets kLastLookMs. So stuck queues cost
  // the grace once, plus at most kLateBudgetMs, plus kLastLookMs each after.
  using std::chrono::milliseconds;
  const auto deadline = exit_deadline();
  const bool budget_left = g_late_spent_ms.load() < kLateBudgetMs;
  const int64_t look_ms = budget_left ? kLateLookMs : kLastLookMs;
  const auto until = std::max(deadline, std::chrono::steady_clock::now() + milliseconds(look_ms));
  // The synchronize's error is nobody's to see now. With no thread to drain
  // with, the queue is abandoned, as the deadline would do.
  if (run_detached_until([b, pq] { AXL_CALL(b, queue_synchronize, pq); }, until) == Detached::finished)
    return true;
  if (budget_left) g_late_spent_ms.fetch_add(look_ms);
  std::string gate;
  {
    std::lock_guard<std::mutex> glk(q->gate_mu);
    if (q->gate_seq > q->synced.load() && q->gate_flag) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "; the last host-value wait enqueued on it waits for completion flag %p to reach %" PRIu64,
                    q->gate_flag, q->gate_value);
      gate = buf;
    }
  }
  logf(AXL_LOG_WARN,
       "at exit, queue %" PRIu64 " on %s was abandoned: its work was not done by the exit deadline "
       "(%lld ms after exit began; AXL_EXIT_GRACE_MS); %s enqueued since its last synchronize "
       "had not all finished%s. Its driver queue and worker are left for the operating system",
       q->trace_id, dev_name(q->device).c_str(), static_cast<long long>(g_exit_grace_ms.load()),
       pending_text(submitted, q->synced.load(), exact).c_str(), gate.c_str());
  return false;
}

axl_status wait_past_exit_begin(Object* keep, const char* what, std::function<axl_status()> wait,
                                bool* gave_up) {
  struct Outcome {
    axl_status status = AXL_SUCCESS;
    ErrorOrigin why;  // the waiting thread's error detail, when it failed
  };
  // Read only once the work finished (run_detached_until's lock orders it).
  auto out = std::make_shared<Outcome>();
  retain(keep);
  auto work = [out, keep, wait = std::move(wait)] {
    out->status = wait();
    if (out->status != AXL_SUCCESS) out->why = last_error_origin();
    release(keep);
  };
  const auto until =
      std::max(exit_deadline(), std::chrono::steady_clock::now() + std::chrono::milliseconds(kLastLookMs));
  switch (run_detached_until(std::move(work), until)) {
    case Detached::finished:
      if (out->status == AXL_SUCCESS) return AXL_SUCCESS;
      return fail_from(out->status, out->why, out->why.message);
    case Detached::no_thread:
      // Waiting in place could hang, so give up as the deadline would.
      release(keep);
      *gave_up = true;
      return fail(AXL_ERROR_TIMEOUT,
                  "%s: the process is exiting and no thread could be started to wait with a deadline, so the "
                  "wait gave up; the work it waited for is left for the operating system",
                  what);
    case Detached::running:
      break;
  }
  *gave_up = true;
  return fail(AXL_ERROR_TIMEOUT,
              "%s did not finish by the exit deadline (%lld ms after exit began; AXL_EXIT_GRACE_MS): the "
              "process is exiting, so the wait gave up and the work it waited for is left for the operating "
              "system",
              what, static_cast<long long>(g_exit_grace_ms.load()));
}

void drain_live_queues_for_exit() {
  begin_exit();
  // One lock at a time (copies of the lists), so no lock order is imposed on
  // threads still running at exit.
  std::vector<Backend*> backends;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lk(r.mu);
    backends = r.backends;
  }
  std::vector<Queue*> qs;
  for (Backend* b : backends) {
    if (b->init_state.load() != 1 || b->poisoned.load()) continue;
    std::vector<Device*> devices;
    {
      std::lock_guard<std::mutex> lk(b->dev_mu);
      devices = b->devices;
    }
    for (Device* d : devices) {
      if (!d) continue;
      std::lock_guard<std::mutex> lk(d->queues_mu);
      for (Queue* q : d->queues) {
        // Skip queues whose last reference is being dropped right now.
        int64_t refs = q->refs.load();
        while (refs > 0 && !q->refs.compare_exchange_weak(refs, refs + 1)) {}
        if (refs > 0) qs.push_back(q);
      }
    }
  }
  // The references taken above are kept: an abandoned queue must never
  // reach queue_destroy, and the process is ending anyway.
  for (Queue* q : qs) drain_queue_for_exit(q);
}

}  // namespace axl::core

using namespace axl::core;

AXL_API axl_status axl_process_exit_begin(uint64_t* out_deadline_ns) {
  const int64_t d = begin_exit();
  if (out_deadline_ns) *out_deadline_ns = static_cast<uint64_t>(d);
  return AXL_SUCCESS;
}
