// The release thread: Python work that must not run where it was triggered.
//
// A driver's callback thread (CUDA's cuLaunchHostFunc thread) must not call
// the driver, yet dropping the last reference to a Python object there runs
// arbitrary code: a __del__, or a Buffer's release, which calls into axl and
// the driver. So the code that runs on such threads (host-function
// trampolines, external-memory release callbacks) hands those references,
// and the callbacks that drop them, to one long-lived thread of the
// binding's own, which takes the GIL and runs them in the order received.
//
// The thread is a plain pthread (not std::thread) started on first use and
// never joined: at finalization CPython ends a non-main thread that waits for
// the GIL with pthread_exit, and that forced unwind must not meet a noexcept
// frame (std::terminate) or a catch (...) that swallows it. Work still queued
// once the interpreter is finalizing is leaked, not run.
#include <cxxabi.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <new>
#include <vector>

#include "common.hpp"

namespace axlpy {
namespace {

struct Item {
  void (*fn)(void*);
  void* arg;
};

struct ReleaseState {
  std::mutex mu;
  std::condition_variable work_cv, done_cv;
  std::vector<Item> items;
  uint64_t pushed = 0, done = 0;  // items handed over / finished, ever
  bool started = false;
};

// Leaked: the thread outlives every static destructor. Replaced (the old
// one leaked) in a forked child, where the thread is gone and the mutex may
// have been held at the fork.
ReleaseState* g_state = new ReleaseState();
std::atomic<pid_t> g_owner{0};  // the process whose thread serves g_state
thread_local int t_backend_callback_depth = 0;  // BackendCallbackScope nesting

void decref(void* o) { Py_DECREF(static_cast<PyObject*>(o)); }

void* release_main(void* p) {
  auto* st = static_cast<ReleaseState*>(p);
  std::vector<Item> batch;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(st->mu);
      st->work_cv.wait(lk, [&] { return !st->items.empty(); });
      batch.swap(st->items);
    }
    // Checked before taking the GIL: during finalization that would end this
    // thread (3.11/3.12) or hang it (3.14), with the mutex released either way.
    if (!interpreter_alive()) {
      std::lock_guard<std::mutex> lk(st->mu);
      st->done += batch.size();  // leaked, not run
      st->done_cv.notify_all();
      batch.clear();
      continue;
    }
    PyGILState_STATE g = gil_ensure_or_park();
    for (const Item& it : batch) {
      it.fn(it.arg);
      // A finalizer that raises must not leave its error set for the next.
      if (PyErr_Occurred()) PyErr_WriteUnraisable(nullptr);
    }
    PyGILState_Release(g);
    std::lock_guard<std::mutex> lk(st->mu);
    st->done += batch.size();
    batch.clear();
    st->done_cv.notify_all();
  }
  return nullptr;
}

void fork_child() {
  g_state = new (std::nothrow) ReleaseState();  // the parent's is leaked
  g_owner.store(0);
}

}  // namespace

bool python_may_run_here() {
  // A thread with no Python thread state is a driver's or the core's own
  // (the reaper's); a host-function trampoline runs Python on the driver's
  // callback thread but must not release there either.
  return t_backend_callback_depth == 0 && PyGILState_GetThisThreadState() != nullptr;
}

BackendCallbackScope::BackendCallbackScope() { ++t_backend_callback_depth; }
BackendCallbackScope::~BackendCallbackScope() { --t_backend_callback_depth; }

void run_on_release_thread(void (*fn)(void*), void* arg) {
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] { pthread_atfork(nullptr, nullptr, fork_child); });
  ReleaseState* st = g_state;
  if (!st) return;  // a forked child out of memory: leak
  std::lock_guard<std::mutex> lk(st->mu);
  if (!st->started || g_owner != getpid()) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    const int rc = pthread_create(&t, &attr, release_main, st);
    pthread_attr_destroy(&attr);
    if (rc != 0) return;  // no thread: leaking beats running on the wrong one
    // Linux allows 15 characters: "axl-host-func-release" does not fit.
    pthread_setname_np(t, "axl-py-release");
    st->started = true;
    g_owner.store(getpid());
  }
  st->items.push_back({fn, arg});
  ++st->pushed;
  st->work_cv.notify_one();
}

void release_later(PyObject* o) {
  if (!o) return;
  // Not the last reference: dropping it runs nothing (the GIL is held, so
  // no other thread can drop the others meanwhile).
  if (Py_REFCNT(o) > 1) {
    Py_DECREF(o);
    return;
  }
  run_on_release_thread(decref, o);
}

void park_thread_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

PyGILState_STATE gil_ensure_or_park() noexcept {
  try {
    return PyGILState_Ensure();
  } catch (abi::__forced_unwind&) {
    park_thread_forever();  // as restore_thread_or_park below
  }
}

void restore_thread_or_park(PyThreadState* state) noexcept {
  if (!interpreter_alive()) park_thread_forever();
  try {
    PyEval_RestoreThread(state);
  } catch (abi::__forced_unwind&) {
    // CPython's pthread_exit: the handler never returns, so the unwind is
    // neither swallowed (glibc would abort) nor let through a noexcept frame.
    park_thread_forever();
  }
}

void drain_release_thread(std::chrono::steady_clock::time_point deadline) {
  ReleaseState* st = g_state;
  if (!st || g_owner != getpid()) return;
  without_gil([st, deadline] {
    std::unique_lock<std::mutex> lk(st->mu);
    const uint64_t target = st->pushed;
    st->done_cv.wait_until(lk, deadline, [&] { return st->done >= target; });
  });
}

}  // namespace axlpy
