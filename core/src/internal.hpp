// Core-internal declarations shared by the files of libaxl.so. Nothing here is
// part of the ABI.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "axl/axl.h"
#include "axl/plugin.h"
#include "spin_lock.hpp"

namespace axl::core {

// ---------------------------------------------------------------- errors --
// Records the calling thread's last error and returns `status`, so call sites
// read `return fail(AXL_ERROR_X, "...", ...)`.
axl_status fail(axl_status status, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
axl_status fail_backend(axl_status status, const std::string& backend,
                        int64_t native_code, const char* native_name,
                        const std::string& message);
// Whether a plugin reported detail (host->report_error) for the status it is
// returning. report_error marks the record fresh; plugin_reported() consumes
// the mark. Nothing is written on the success path, so a plugin call costs
// no thread-local store when it succeeds. begin_plugin_call() drops a stale
// mark before a call whose reporting matters regardless of status.
void begin_plugin_call();
bool plugin_reported();
// Who reported an error: kept by whatever reports it again later (a poisoned
// completion, a failed deferred free), so the later error still names the
// backend and native code of the failure that caused it.
struct ErrorOrigin {
  axl_status status = AXL_SUCCESS;
  std::string backend, native_name, message;
  int64_t native_code = 0;
};
// The calling thread's last error.
ErrorOrigin last_error_origin();
// Records `status` with the origin's backend and native code and `message`.
axl_status fail_from(axl_status status, const ErrorOrigin& origin, const std::string& message);

// Runs `body` and turns any C++ exception into AXL_ERROR_INTERNAL: nothing
// thrown inside the core or a plugin crosses the application ABI. Always
// inlined, so that an entry point whose body is inlined too (the enqueue
// paths) reaches its arguments in registers.
template <typename F>
__attribute__((always_inline)) inline axl_status guard(F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(AXL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(AXL_ERROR_INTERNAL, "internal error: %s", e.what());
  } catch (...) {
    return fail(AXL_ERROR_INTERNAL, "internal error: unknown exception");
  }
}

// ---------------------------------------------------------------- logging --
void log_init();
void log_message(int32_t level, const std::string& message);
void logf(int32_t level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The two-call string protocol of the getters: *out_size = bytes needed
// including the NUL; the string is copied only when it fits.
axl_status copy_out(const std::string& s, char* buf, size_t cap, size_t* out_size);

// Reads an environment variable with secure_getenv: in setuid/setgid programs
// every AXL_* variable is ignored.
const char* env(const char* name);
// An integer in [min, max] from environment variable `name`, or `fallback`
// when it is unset or empty; an invalid value (a sign, trailing text, out of
// range) is logged at warning, naming the variable and `expected`, and the
// fallback used. Read where it is needed (queue creation, exit), so a test
// may change it in-process.
uint32_t env_u32(const char* name, uint32_t min, uint32_t max, uint32_t fallback, const char* expected);

// --------------------------------------------------------------- objects --
enum class Kind : uint32_t {
  device = 0x41584c44,  // "AXLD"
  queue = 0x41584c51,
  event = 0x41584c45,
  buffer = 0x41584c42,
  module = 0x41584c4d,
  kernel = 0x41584c4b,
  flag = 0x41584c46,
  trace = 0x41584c54,
  completion = 0x41584c43,
  profile_events = 0x41584c50,
  multicast = 0x41584c47,  // "AXLG": a multicast group
};

struct Object;
const char* kind_name(Kind k);

// ---------------------------------------------------------------- handles --
// (handle.cpp) A handle is not an object's address but a value naming a slot
// of this table and the slot's generation: (generation << 32) | (index + 1),
// never NULL. A slot gets a new generation each time its object goes, so a
// released handle never names a later object, wherever that one lives.
// Lookups are lock-free: the slots live in fixed-size chunks that never move
// and are never freed, reached through an array of chunk pointers.
static_assert(sizeof(void*) == 8, "handle values need 64-bit handles");
struct HandleSlot {
  // The occupant's handle value while occupied. While free: (the next
  // generation << 32) | (next free index + 1, 0 at the end of the list), whose
  // low half is never this slot's index + 1, so no handle matches a free
  // slot. One 64-bit compare checks slot, generation and occupancy at once.
  std::atomic<uint64_t> tag{0};
  // Set before the tag is published and left in place when the slot is
  // freed: a lookup reads it only when the tag matched, and reads the tag
  // again afterwards.
  std::atomic<Object*> object{nullptr};
};
constexpr uint32_t kHandleChunkBits = 12;
constexpr uint32_t kHandleChunkSize = 1u << kHandleChunkBits;  // 64 KiB of slots
constexpr uint32_t kHandleChunkMask = kHandleChunkSize - 1;
constexpr uint32_t kHandleChunks = 1u << 16;  // up to 2^28 live objects
// Hidden: the lookups inlined in every file reach them PC-relative, not
// through the GOT.
#define AXL_HIDDEN __attribute__((visibility("hidden")))
extern AXL_HIDDEN std::atomic<HandleSlot*> g_handle_chunks[kHandleChunks];
// Chunk 0 is static (g_handle_chunks[0] points at it): the handles of a
// program with up to 4096 objects at a time are found without loading a
// chunk pointer, which keeps a lookup one dependent load longer than
// reading the object itself was (benchmarks/bench_enqueue).
extern AXL_HIDDEN HandleSlot g_handle_chunk0[kHandleChunkSize];

// Gives o a slot and its handle value (o->handle); throws std::bad_alloc when
// the table is full.
void handle_register(Object* o);
// Frees o's slot with a new generation: o's handle reads as released from
// now on. Idempotent (the last release and ~Object both call it).
void handle_unregister(Object* o);
// Records why `handle` is not a live object of kind k (NULL, released,
// another kind, garbage) and returns AXL_ERROR_INVALID_HANDLE.
axl_status handle_fail(const void* handle, Kind k, const char* what);

// The slot a handle value points at, or null past the allocated chunks.
__attribute__((always_inline)) inline HandleSlot* handle_slot(uint64_t value) {
  const uint32_t index = uint32_t(value) - 1;  // NULL wraps past the last chunk
  if (index < kHandleChunkSize) [[likely]] return &g_handle_chunk0[index];
  const uint32_t chunk = index >> kHandleChunkBits;
  if (chunk >= kHandleChunks) return nullptr;
  HandleSlot* c = g_handle_chunks[chunk].load(std::memory_order_acquire);
  return c ? &c[index & kHandleChunkMask] : nullptr;
}

// The object a handle names while it is registered, else null; records
// nothing. The tag is not read again after the object: a slot released and
// reused between the two reads means the handle was used while another
// thread released its last reference, which is the application's race (as
// with any runtime's handles), and the re-read cost 3 of the lookup's ~10
// instructions on every enqueue (benchmarks/bench_enqueue).
__attribute__((always_inline)) inline Object* handle_object(const void* handle) {
  const uint64_t v = reinterpret_cast<uintptr_t>(handle);
  HandleSlot* s = handle_slot(v);
  if (!s) [[unlikely]] return nullptr;
  if (s->tag.load(std::memory_order_acquire) != v) return nullptr;
  return s->object.load(std::memory_order_relaxed);  // published before the tag
}

// Base of every handle: a kind tag checked on entry, a reference count and
// the handle value the table gave it.
struct Object {
  explicit Object(Kind k) : kind(k) { handle_register(this); }
  virtual ~Object() {
    // Objects deleted without release() (a create that failed halfway) leave
    // the table here; after release() this is one plain read. Whoever deletes
    // an object is the last to touch it, so `registered` needs no lock here.
    if (registered) handle_unregister(this);
    kind = Kind{0};
  }
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  Kind kind;
  bool registered = false;  // guarded by the table's mutex (in kind's padding)
  std::atomic<int64_t> refs{1};
  uint64_t handle = 0;      // set by handle_register, kept after unregistering
};

// Object -> handle, for every handle the core hands out (outputs, callbacks):
// a field read. Null stays null.
template <typename H>
H to_handle(const Object* o) {
  return o ? reinterpret_cast<H>(static_cast<uintptr_t>(o->handle)) : nullptr;
}

// Handle -> live object of kind k, or null without recording an error (for
// the functions whose ABI answers an invalid handle with NULL or "").
template <typename T>
T* find(const void* handle, Kind k) {
  Object* o = handle_object(handle);
  return o && o->kind == k ? static_cast<T*>(o) : nullptr;
}

void retain(Object* o);
// Drops one reference; deletes the object at zero (unless the process is
// exiting, when plugin objects are left for the OS).
void release(Object* o);

bool process_exiting();

// The whole body of the plain axl_<object>_retain / _release functions: the
// handle must be a live object of kind `k` ("what" names it in the error).
axl_status retain_handle(const void* handle, Kind k, const char* what);
axl_status release_handle(const void* handle, Kind k, const char* what);

struct Backend;
struct Device;
struct Queue;

// ---------------------------------------------------------------- backend --

struct Backend {
  std::string path;
  std::string name;
  std::string api;
  std::string version;
  uint32_t flags = 0;
  uint32_t abi_minor = 0;
  void* dl = nullptr;
  axl_plugin_table table{};  // copied; slots past the plugin's size are NULL
  axl_host_services host{};
  // The census at discovery; the driver's own count after backend_init
  // (refresh_device_count); changes in virtual-device mode too.
  std::atomic<uint32_t> device_count{0};
  bool is_host() const { return flags & AXL_PLUGIN_FLAG_HOST; }
  // Its queue slots take concurrent calls on one queue (the flag means that
  // from minor 5 on; an older plugin's bit 4 means nothing).
  bool queue_thread_safe() const { return abi_minor >= 5 && (flags & AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE); }

  // Initialisation: once, serialised; a failure is remembered with its detail.
  std::mutex init_mu;
  std::atomic<int> init_state{0};  // 0 none, 1 ok, 2 failed
  axl_status init_status = AXL_SUCCESS;
  std::string init_message, init_native_name;
  int64_t init_native_code = 0;
  std::atomic<bool> poisoned{false};  // initialised before fork(), we are the child
  // init_state == 1 && !poisoned, in one flag for the check of every entry
  // point (set after init_state, cleared with poisoned).
  std::atomic<bool> usable{false};
  std::atomic<bool> tracing{false};

  // Devices created so far, by backend index (immortal once created).
  std::mutex dev_mu;
  std::vector<Device*> devices;

  // Initialised and usable in this process: one load, inlined at every
  // entry point.
  bool ready() const { return usable.load(std::memory_order_acquire); }
  // Ensures the backend is initialised and usable in this process.
  axl_status ensure_ready() {
    if (ready()) [[likely]] return AXL_SUCCESS;
    return ensure_ready_slow();
  }
  axl_status ensure_ready_slow();
  void refresh_device_count();
  // Returns the status after making sure an error was recorded for it.
  axl_status check(axl_status s, const char* slot);
  axl_status unsupported(const char* slot);
};

// Looks up the slot by member; NULL → AXL_ERROR_UNSUPPORTED naming it.
#define AXL_SLOT(backend, slot)                                                   \
  ((backend)->table.slot ? AXL_SUCCESS : (backend)->unsupported(#slot))

// Calls a plugin slot. Fails with UNSUPPORTED when NULL; turns an escaping C++
// exception into INTERNAL; guarantees an error detail is recorded. Inlined
// like the lambda it replaced: every enqueue goes through it.
template <typename Slot, typename... Args>
__attribute__((always_inline)) inline axl_status call_slot(Backend* b, Slot axl_plugin_table::*slot,
                                                           const char* name, Args&&... args) {
  const Slot fn = b->table.*slot;
  if (!fn) return b->unsupported(name);
  axl_status s;
  try {
    s = fn(std::forward<Args>(args)...);
  } catch (...) {
    return fail_backend(AXL_ERROR_INTERNAL, b->name, 0, nullptr, std::string("plugin threw from ") + name);
  }
  return s == AXL_SUCCESS ? s : b->check(s, name);
}

// Names the slot once, as the table member and as the text of its errors.
#define AXL_CALL(backend, slot, ...) \
  ::axl::core::call_slot((backend), &axl_plugin_table::slot, #slot __VA_OPT__(, ) __VA_ARGS__)

// ------------------------------------------------------------- registry --
struct PluginRecord {
  std::string path, name, api, version, reason;
  // Why backend_init failed; written once, under the registry lock. `reason`
  // is never modified after discovery, so a string axl_plugin_get_record
  // handed out stays intact while another thread initialises the backend.
  std::string init_reason;
  uint32_t abi_major = 0, abi_minor = 0, flags = 0, device_count = 0;
  int32_t state = AXL_PLUGIN_STATE_SKIPPED;
  axl_status status = AXL_SUCCESS;
  Backend* backend = nullptr;
};

struct Registry {
  std::mutex mu;  // records, discovery log; never held across a plugin call
  std::vector<PluginRecord> records;
  std::vector<Backend*> backends;  // loaded, in discovery order
  std::string discovery_log;
  axl_status init_status = AXL_SUCCESS;
  std::string init_message;
};

Registry& registry();
// Runs discovery once. Returns the stored error when AXL_PLUGINS named a
// plugin that failed to load.
axl_status ensure_init();
void discover(Registry& r);
void discovery_note(const std::string& line);

// ----------------------------------------------------- device-id grammar --
// The one reading of accelerator ids shared by axl_device_spec_parse and the
// CLI count (spec.cpp), so the two never disagree on an input: ASCII digits
// only (no '_', no other scripts' digits, no exponent), an optional sign only
// where allowed, any number of leading zeros, and the value inside the ABI's
// id type (axl_device_spec::id, int32_t) or it is refused, never wrapped.
std::string spec_trim(const std::string& s);   // strips ' ' and '\t'
std::string spec_lower(std::string s);         // ASCII lower case
std::string spec_shown(const std::string& s);  // shortened for a message
// AXL_SUCCESS with *out set, or AXL_ERROR_INVALID_ARGUMENT whose message
// reads "<what> '<input>': ..." and names the part and what was expected.
axl_status parse_accelerator_id(const char* what, const std::string& input, const std::string& part,
                                bool allow_sign, int32_t* out);

// ---------------------------------------------------------------- devices --
struct Device : Object {
  Device() : Object(Kind::device) {}
  Backend* backend = nullptr;
  axl_pdevice pdev = nullptr;
  uint32_t backend_index = 0;
  uint32_t id = 0;  // among devices of its label
  axl_device_properties props{};
  std::string label, api, arch, model;
  Queue* default_queue = nullptr;
  std::mutex queues_mu;
  std::vector<Queue*> queues;  // live queues (not owned), for synchronize
  // Frees of this device's memory handed to the reaper and not done yet: a
  // synchronize looks for ready ones only when there are any.
  std::atomic<uint32_t> deferred_frees{0};
  std::atomic<uint64_t> deferred_freed{0};  // bytes those frees returned so far
  // The first release of this device's memory that failed since the last
  // synchronize reported one (a release has no caller to tell), and how many.
  std::mutex free_failure_mu;
  ErrorOrigin free_failure;
  uint32_t free_failures = 0;
};

// Validates a handle of the given kind through the handle table; records an
// error if invalid ("... handle is NULL", "... was already released", "... is
// not a live <what>").
// Inlined at every entry point: an out-of-line call was a measurable part of
// the enqueue cost; the failure path stays out of line.
// The object of kind k a handle names, or null, recording nothing: the
// table alone says whether the object lives (its slot is freed when the last
// reference goes), so no reference count is read.
template <typename T>
__attribute__((always_inline)) inline T* peek(const void* handle, Kind k) {
  const uint64_t v = reinterpret_cast<uintptr_t>(handle);
  HandleSlot* s = handle_slot(v);
  if (!s || s->tag.load(std::memory_order_acquire) != v) [[unlikely]] return nullptr;
  // Never null once a tag matched: the object is set before its tag.
  Object* o = s->object.load(std::memory_order_relaxed);
  return o->kind == k ? static_cast<T*>(o) : nullptr;
}
template <typename T>
__attribute__((always_inline)) inline T* as(const void* handle, Kind k, const char* what) {
  if (T* o = peek<T>(handle, k)) [[likely]] return o;
  handle_fail(handle, k, what);
  return nullptr;
}


axl_status device_usable(Device* d);
Device* device_of(Object* o);

// ----------------------------------------------------------------- queues --
struct Completion;

// What a completion knows of its queue: the queue nulls it once it has
// drained and is gone, so a completion may outlive its queue.
struct HostFuncCall;  // queue.cpp
struct QueueLink {
  std::mutex mu;
  Queue* queue = nullptr;
  // The application's host functions enqueued on the queue and not yet
  // called (queue.cpp). Each is freed when called; a backend skips the call
  // of one whose queue failed, so what is left once the queue is destroyed
  // is freed then. Here, not in Queue: a call may come after the queue is
  // gone (a destroy the backend refused), and this outlives it.
  std::mutex calls_mu;
  HostFuncCall* calls = nullptr;
};

struct Queue : Object {
  Queue() : Object(Kind::queue) {}
  ~Queue() override;
  Device* device = nullptr;
  axl_pqueue pq = nullptr;
  uint64_t trace_id = 0;
  bool is_default = false;
  std::shared_ptr<QueueLink> link = std::make_shared<QueueLink>();
  // The completion the next hazard stamps join (retained; see hazard.cpp).
  std::mutex open_mu;                        // serialises changes of `open`
  std::atomic<Completion*> open{nullptr};
  // Serialises enqueues: plugins may assume one submitting thread per queue
  // (plugin.h), unless they set AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE, whose
  // queues are not `serialised` and take no lock here at all: a locked
  // instruction on this path is about a sixth of a 4-byte copy's cost
  // (benchmarks/bench_enqueue, issue 16). A SpinLock, not a std::mutex: it
  // is held only for one enqueue slot (tens of ns) and is almost never
  // contended. Held for long only while the plugin blocks on a full queue
  // (waiting for room); SpinLock's contenders yield a while, then sleep.
  SpinLock submit_lock;
  bool serialised = true;  // set once at creation, from the backend's flag
  // What the exit drain reads of a queue (exit.cpp): submissions so far, and
  // how many of them a synchronize had seen finished. `submitted` counts by a
  // plain load and store (no locked add, for the same cost): exact on a
  // serialised queue and while one thread submits. On an unserialised queue
  // `owner` is the first submitting thread (its thread pointer) and `shared`
  // is set, for good, once another thread submits: only then may counts be
  // lost, and only then does the exit drain stop trusting them (an idle
  // queue is then drained in a thread instead of skipped).
  std::atomic<uint64_t> submitted{0};
  std::atomic<uint64_t> synced{0};
  std::atomic<uintptr_t> owner{0};
  std::atomic<bool> shared{false};
  // The submission count is exact (see above).
  bool count_exact() const { return serialised || !shared.load(); }
  // Nothing enqueued since its last synchronize returned, as far as the
  // counts can tell (a count that may have lost submissions is not trusted).
  bool idle() const { return count_exact() && submitted.load() == synced.load(); }
  // Out of line: a thread other than `owner` submits (queue.cpp).
  __attribute__((noinline)) void note_submitter(uintptr_t me);
  // The last host-value wait enqueued (the usual reason a queue never
  // finishes): flag, awaited value, and its submission number.
  std::mutex gate_mu;
  const void* gate_flag = nullptr;
  uint64_t gate_value = 0;
  uint64_t gate_seq = 0;
  template <typename F>
  axl_status submit(F&& f) {
    // One copy of f's call below (two, one per branch, made the launch
    // path slower through code size: benchmarks/bench_enqueue), so the
    // lock is taken on condition.
    struct Hold {  // a unique_lock less its owns flag
      SpinLock* held;
      ~Hold() {
        if (held) held->unlock();
      }
    } hold{nullptr};
    if (serialised) {
      submit_lock.lock();
      hold.held = &submit_lock;
    } else {
      // One instruction on x86-64 (%fs:0) and aarch64: no TLS lookup.
      const auto me = reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
      if (owner.load(std::memory_order_relaxed) != me) [[unlikely]]
        note_submitter(me);
    }
    submitted.store(submitted.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return f();
  }
  // After a synchronize that began when `seen` submissions were made.
  void note_synced(uint64_t seen) {
    uint64_t cur = synced.load(std::memory_order_relaxed);
    // Release: idle()'s reader (a buffer free, reaper.cpp) then sees the
    // finished work the synchronize saw.
    while (cur < seen && !synced.compare_exchange_weak(cur, seen, std::memory_order_release,
                                                       std::memory_order_relaxed)) {}
  }
};

// ------------------------------------------------------------------- exit --
// How long work still queued at exit may run before its queues are
// abandoned (AXL_EXIT_GRACE_MS overrides; axl.h: axl_process_exit_begin).
constexpr int64_t kExitGraceDefaultMs = 2000;
// True once axl_process_exit_begin (or the core's atexit handler) ran.
bool exit_began();
// The shared exit deadline; meaningful only once exit_began().
std::chrono::steady_clock::time_point exit_deadline();
// Sets the exit deadline once; returns it (steady-clock nanoseconds).
int64_t begin_exit();
// At exit: waits until the deadline for q's pending work. False when it did
// not finish (logged at warning with what was pending): the caller must not
// call queue_destroy, which would wait for it.
bool drain_queue_for_exit(Queue* q);
// At exit (the core's atexit handler): drains every live queue until the
// exit deadline, so work that can still run does, and reports the rest.
void drain_live_queues_for_exit();
// A blocking plugin wait the application asked for (a queue's or an event's
// synchronize; `wait` captures by value). Before exit it is `wait()` in
// place. Once exit began (axl_process_exit_begin, the core's atexit handler:
// finalizers, __del__ methods, atexit callbacks) it is still `wait()` in
// place when `done()` (a check that never blocks) says there is nothing to
// wait for; otherwise it runs on a thread of its own and the caller has it
// back by the exit deadline, or after a short look past it, or else
// AXL_ERROR_TIMEOUT naming `what` with *gave_up set, the wait left running
// for the operating system to end: a process whose finalizer synchronizes a
// queue gated forever still exits. `keep` (the object whose plugin handle
// `wait` uses) stays retained until the wait returns.
axl_status wait_past_exit_begin(Object* keep, const char* what, std::function<axl_status()> wait,
                                bool* gave_up);
template <class Done, class Wait>
axl_status wait_bounded_by_exit(Object* keep, const char* what, Done&& done, Wait&& wait, bool* gave_up) {
  *gave_up = false;
  if (!exit_began()) [[likely]] return wait();
  if (done()) return wait();
  return wait_past_exit_begin(keep, what, std::function<axl_status()>(std::forward<Wait>(wait)), gave_up);
}
// The two such waits: a queue's synchronize (done when the queue is idle)
// and an event's (done when its query says so), `keep` owning `pe`.
inline axl_status queue_synchronize_bounded(Queue* q, const char* what, bool* gave_up) {
  return wait_bounded_by_exit(
      q, what, [q] { return q->idle(); },
      [b = q->device->backend, pq = q->pq] { return AXL_CALL(b, queue_synchronize, pq); }, gave_up);
}
inline axl_status event_synchronize_bounded(Object* keep, Backend* b, axl_pevent pe, const char* what,
                                            bool* gave_up) {
  return wait_bounded_by_exit(
      keep, what, [b, pe] { return AXL_CALL(b, event_query, pe) == AXL_SUCCESS; },
      [b, pe] { return AXL_CALL(b, event_synchronize, pe); }, gave_up);
}

// max_pending: the queue's bound (axl_queue_options.max_pending); 0 takes
// AXL_QUEUE_MAX_PENDING, else the backend's default.
axl_status queue_create_internal(Device* d, bool is_default, Queue** out, uint32_t max_pending = 0);
// Later work on `waiter` waits for everything enqueued on `signaler` so far,
// across backends if need be.
axl_status queue_wait_internal(Queue* waiter, Queue* signaler);
// Whether this thread runs an application host function
// (axl_queue_enqueue_host_func) of queue `q`, or, with q null, of one of
// device `d`'s queues (queue.cpp). A wait there for work behind the function
// would wait for itself: refuse_wait_for_itself's INVALID_STATE naming `what`.
bool in_host_func_of(const Queue* q, const Device* d);
// Whether event `pe` of backend `b`, last recorded on queue `q`, is behind
// the host function this thread runs on q: it still pends there (a record
// before the function is done once the function runs; queues are in order).
bool pending_behind_host_func(const Queue* q, Backend* b, axl_pevent pe);
axl_status refuse_wait_for_itself(const char* what, bool device_wide);
axl_status queue_usable(Queue* q);
// The queue a handle names (*out), usable in this process:
// AXL_ERROR_INVALID_HANDLE or the backend's error otherwise. Inlined at
// every enqueue (the backend check is two relaxed loads).
__attribute__((always_inline)) inline axl_status usable_queue(const void* handle, Queue** out) {
  Queue* q = as<Queue>(handle, Kind::queue, "queue");
  if (!q) return AXL_ERROR_INVALID_HANDLE;
  *out = q;
  return q->device->backend->ensure_ready();
}

// ---------------------------------------------------------------- buffers --
// A point in a queue, or a failure standing in for one (axl_completion_t).
// Stamps are lazy: they join the queue's open completion, whose event is
// recorded only when someone needs it (a host wait or query) or before the
// queue is given work that may block (a wait, a host function). So a launch
// of a tracked buffer costs no event, and a host wait still never waits for
// anything queued behind a gate.
struct Completion : Object {
  Completion() : Object(Kind::completion) {}
  ~Completion() override;
  Device* device = nullptr;  // retained; null for a completion born poisoned
  std::shared_ptr<QueueLink> link;  // where to record it; null when born poisoned
  std::mutex record_mu;             // serialises recording
  std::atomic<bool> recorded{false};
  axl_pevent pe = nullptr;
  std::atomic<bool> poisoned{false};
  std::atomic<bool> ready{false};  // cached once the event completed
  std::mutex mu;                   // guards failure
  // Why waits fail, with the backend and native code of the failure that
  // poisoned it (empty for an application's own poison).
  ErrorOrigin failure;
  void poison(const std::string& why);
  void poison(const ErrorOrigin& why);
  axl_status ensure_recorded();
  // Blocks until the work it marks is done; AXL_ERROR_HOST_HAZARD when
  // poisoned. From a host function of its queue, a completion behind that
  // function is INVALID_STATE naming `what` (the caller) at once: it would
  // wait for itself.
  axl_status wait(const char* what);
  bool query();

 private:
  bool behind_running_host_func();
};
// A completion recorded on q after everything enqueued so far.
axl_status completion_record(Queue* q, Completion** out);
// Records q's open completion now, before q gets work that may block.
void close_open_completion(Queue* q);
// ~Queue: the open completion can no longer be recorded; q has drained.
void abandon_open_completion(Queue* q);

// Per allocation: who last wrote it and who read it since (tracked only).
struct HazardRecord {
  std::mutex mu;
  Completion* last_write = nullptr;     // retained
  std::vector<Completion*> readers;     // retained
  ~HazardRecord();
};

struct Buffer : Object {
  Buffer() : Object(Kind::buffer) {}
  ~Buffer() override;
  Device* device = nullptr;
  Buffer* base = nullptr;     // the allocation a view shares; null for bases
  axl_devaddr address = 0;    // of byte 0 of this buffer (base + offset)
  void* host = nullptr;       // host pointer of byte 0, if host-accessible
  uint64_t size = 0;
  bool pinned = false;
  uint32_t flags = 0;         // AXL_BUFFER_FLAG_* of the allocation
  // External memory: released through this instead of the plugin.
  axl_buffer_release_callback external_release = nullptr;
  void* external_user_data = nullptr;
  bool external = false;
  HazardRecord hazards;       // used on allocations only
  bool tracked() const { return flags & AXL_BUFFER_FLAG_TRACKED; }
  // Queues that enqueued work on the allocation: synchronized before the
  // memory is freed, so no pending copy touches freed memory.
  std::mutex use_mu;
  std::vector<Queue*> used_by;
  std::atomic<Queue*> last_use{nullptr};
  Buffer* allocation() { return base ? base : this; }
};
// A buffer an op touches and how (AXL_ACCESS_READ or AXL_ACCESS_WRITE).
struct BufferUse {
  Buffer* buffer;
  uint32_t access;
};
// Runs `free` once every queue in used_by has finished the work enqueued so
// far, on a background thread (or at once when none is pending); releases
// and clears used_by. Never blocks unless an event cannot be recorded.
// `device` and `bytes` name the device memory it returns (null/0 for pinned
// or external memory), which reclaim_deferred_frees can then hurry.
void free_after_queues(std::vector<Queue*>& used_by, std::function<void()> free, Device* device = nullptr,
                       uint64_t bytes = 0);
// At exit: lets the deferred frees finish (bounded wait).
void drain_deferred_frees();
// Runs, on the calling thread, the deferred frees of d's memory whose queues
// have reached the release point, and waits for the ones the reaper thread
// is finishing. Without a deadline it returns after those; with one it
// waits (polling, until the deadline) for a pending one to become ready
// when none is. Returns the bytes freed.
uint64_t reclaim_deferred_frees(Device* d, const std::chrono::steady_clock::time_point* deadline = nullptr);
// Bytes of d's memory released by the application and not yet freed.
uint64_t deferred_free_bytes(Device* d);
// After a failed memory_free of d's memory: logs it and keeps it for the
// next synchronize of d (take_free_failure).
void note_free_failure(Device* d, uint64_t bytes, axl_devaddr address);
// The failure noted since the last call, recorded as the thread's error, or
// AXL_SUCCESS.
axl_status take_free_failure(Device* d);
std::string dev_name(Device* d);
// Stamps `c` on the allocation of b (write: replaces the writer, clears the
// readers; read: adds a reader). No-op for untracked buffers.
void stamp(Buffer* b, Completion* c, uint32_t access);
// The hazard steps of a Submission (submit.hpp), which is their only caller.
// Before an op on q is enqueued: q's open completion is recorded now, so the
// op's own exact stamp covers it alone (launches, whose stamps are lazy,
// skip this and share the open one). Inline: it runs on every copy.
inline void stamp_begin(Queue* q) {
  // Unlocked peek: a launch racing in on another thread may be missed, which
  // only makes its stamp cover this op too (correct, slightly later).
  if (q->open.load(std::memory_order_relaxed)) close_open_completion(q);
}
// Before q reads or writes tracked buffers: if the last writer of one is
// still pending on another queue, q waits (on the device) for that queue, so
// an op never reads bytes a kernel or a copy elsewhere is still writing.
// Cheap when nothing is tracked or the writer has finished.
axl_status wait_for_writers(Queue* q, const BufferUse* uses, size_t n);
// After the enqueue: stamps the tracked buffers with one completion on q
// (writes first), or, when the enqueue failed, poisons the written ones with
// the calling thread's last error message. `lazy` joins q's open completion
// instead of recording an event now.
void stamp_op(Queue* q, axl_status enqueue_status, const BufferUse* uses, size_t n, bool lazy);

// ----------------------------------------------------------------- events --
struct Event : Object {
  Event() : Object(Kind::event) {}
  ~Event() override;
  Device* device = nullptr;
  axl_pevent pe = nullptr;
  bool timing = false;
  std::mutex mu;
  bool recorded = false;
  uint64_t recorded_ns = 0;     // host time of the last record, when profiling
  Queue* last_queue = nullptr;  // retained; where the last record was enqueued
};

struct Flag : Object {
  Flag() : Object(Kind::flag) {}
  ~Flag() override;
  Device* device = nullptr;
  axl_pflag pf = nullptr;
  uint64_t* host = nullptr;
};

struct Module : Object {
  Module() : Object(Kind::module) {}
  ~Module() override;
  Device* device = nullptr;
  axl_pmodule pm = nullptr;
};

struct Kernel : Object {
  Kernel() : Object(Kind::kernel) {}
  ~Kernel() override;
  Device* device = nullptr;
  Module* module = nullptr;  // retained; null for built-in test kernels
  axl_pkernel pk = nullptr;
  std::string name;
};

// A multicast group (multicast.cpp): the plugin's group over `devices`
// (retained, in the creator's order), destroyed when the last reference
// goes; each view buffer holds one.
struct Multicast : Object {
  Multicast() : Object(Kind::multicast) {}
  ~Multicast() override;
  Backend* backend = nullptr;
  axl_pmulticast pm = nullptr;
  std::vector<Device*> devices;
  uint64_t reserved_bytes = 0;
};

// ---------------------------------------------------------------- tracing --
void trace_register_queue(uint64_t trace_id, uint32_t device_id, bool is_host);
uint64_t trace_next_queue_id();
void trace_on_backend_ready(Backend* b);
void host_trace_record(void* ctx, const axl_trace_record* rec);

// ---------------------------------------------------------- virtual mode --
bool virtual_mode_on();

// ---------------------------------------------------------------- dtypes --
// MAX's DType codes (spec section 11). Both return 0 / nullptr for a code
// MAX does not have.
uint32_t dtype_bits(uint32_t code);
const char* dtype_name(uint32_t code);

// ----------------------------------------------------------------- fork --
void install_process_hooks();
// Registers the exit drain again, after what a backend's driver registered
// at exit so far (after backend_init and after a device is opened).
void order_exit_drain();

}  // namespace axl::core
