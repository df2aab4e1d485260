/* A functional fake libcuda: the real cuda plugin runs against it through
 * AXL_CUDA_DRIVER_PATH, so its slots are exercised with devices on machines
 * without a GPU. It exports cuGetProcAddress_v2 only, like the driver's
 * versioned lookup, and hands out the entry points below.
 *
 * What it models, and why (each point is a rule of the real driver that a
 * plugin bug would break):
 *  - Devices: FAKE_CUDA_DEVICES of them (default 1), "sm_90", with
 *    FAKE_CUDA_MEMORY_BYTES each (default 1 GiB). Device memory is host
 *    memory; every allocation is checked on use (copies, kernels).
 *  - Primary contexts with a per-thread current context: every call that
 *    needs a context fails with CUDA_ERROR_INVALID_CONTEXT (201) on a
 *    thread where none is current, as the real driver does.
 *  - Streams: each runs its work in order on a worker thread of its own, so
 *    asynchronous calls return before their work has run. Events (with
 *    timing), stream waits on events, host functions (run on the stream's
 *    thread), copies, memsets, 64-bit stream wait/write on mapped memory,
 *    stream-ordered frees and kernels are stream work.
 *  - Copies between device memory and pageable host memory block the
 *    caller until earlier work on the stream has run (and do the copy
 *    then); copies with pinned memory (cuMemHostAlloc) are asynchronous.
 *  - Host functions must not call the driver (CUDA forbids it): such a call
 *    prints "FAKE_CUDA: driver call from a host function: <name>", answers
 *    CUDA_ERROR_NOT_PERMITTED and makes the process exit with status 86.
 *  - Memory pools: a default pool per device, cuMemPoolCreate, the release
 *    threshold (freed memory up to it stays reserved by the pool and counts
 *    against the device's memory, so a pool that keeps everything can run
 *    the device out of memory; cuMemPoolTrimTo returns it), access grants,
 *    stream-ordered allocation and free. FAKE_CUDA_ASYNC_ALLOC_OK=N: the
 *    first N stream-ordered allocations succeed, later ones answer
 *    CUDA_ERROR_NOT_SUPPORTED (801), as on drivers or devices (vGPU, some
 *    WSL setups) where pools exist but stream-ordered allocation fails.
 *  - Modules from PTX, run by a tiny PTX interpreter (the subset of
 *    plugins/cuda/src/test_kernels.ptx) over every thread of the 3-D grid
 *    and block. Launches with more than 48 KiB of dynamic shared memory fail
 *    with CUDA_ERROR_INVALID_VALUE unless cuFuncSetAttribute(
 *    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) allowed them; the
 *    opt-in limit is FAKE_CUDA_SHARED_OPTIN (default 232448, an H100's).
 *  - Teardown: cuInit registers an atexit handler that marks the driver torn
 *    down (the real driver tears down at exit too); any later call prints
 *    "FAKE_CUDA: call after teardown: <name>" to stderr and answers
 *    CUDA_ERROR_DEINITIALIZED (4).
 *  - FAKE_CUDA_LOG=<file>: every call appends a line "<entry point>
 *    [notable arguments]" to the file, so tests can assert which calls were
 *    made, e.g. on which pool an attribute was set.
 *  - Multicast objects over virtual memory management (CUDA 12.1):
 *    cuMemCreate makes physical memory (a memfd, counted against the
 *    device's memory), cuMemAddressReserve reserves addresses, cuMemMap maps
 *    physical memory there (the same pages: writes through either address
 *    show at the other) or a multicast object (a buffer of its own), and
 *    the mapping is usable by the device only after cuMemSetAccess. A copy
 *    or memset into a multicast mapping is written through to the memory
 *    every member bound (cuMulticastBindMem) at the same offset; kernel
 *    stores are not. Members must all join (cuMulticastAddDevice) before a
 *    bind or map (the driver would block; the fake answers
 *    CUDA_ERROR_NOT_PERMITTED). A released handle (cuMemRelease) lives on
 *    while mapped or bound, as in the driver, so a missing unmap or unbind
 *    shows in fake_cuda_live_vmm(), the exported count of live handles,
 *    reservations and mappings. Granularity: FAKE_CUDA_MC_GRANULARITY
 *    (RECOMMENDED, default 2 MiB), 64 KiB MINIMUM. FAKE_CUDA_MULTICAST=0:
 *    CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0 and cuMulticastCreate
 *    answers CUDA_ERROR_NOT_SUPPORTED.
 *  - Faults: FAKE_CUDA_FAIL=<entry point> makes that call answer
 *    FAKE_CUDA_FAIL_RESULT (default CUDA_ERROR_OUT_OF_MEMORY) once
 *    FAKE_CUDA_FAIL_AFTER (default 0) calls of it have succeeded, and every
 *    time after; FAKE_CUDA_OMIT=<name>,<name> hides entry points from
 *    cuGetProcAddress_v2 (an older driver), as in fake_cuda_driver.c.
 *  - FAKE_CUDA_INIT_RESULT and FAKE_CUDA_VERSION as in fake_cuda_driver.c.
 *
 * Deterministic: no randomness; time only in event timestamps. One global
 * lock guards the object tables; each stream has its own queue lock. */
#define _GNU_SOURCE
#include <cuda.h>
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../core/fake_driver_util.h"

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_DEVICES 8
#define FAKE_DEFAULT_SHARED (48 * 1024)

/* ---- configuration, state and the call prologue ------------------------ */

typedef struct fk_pool fk_pool;
typedef struct fk_stream fk_stream;

typedef struct fk_ctx {
  int device;
  int retained;   /* primary-context retain count */
  int sticky; /* atomic: a failed kernel's CUresult, returned by every later call */
  fk_stream* null_stream;
} fk_ctx;

struct fk_pool {
  int device;
  int is_default;
  int id;               /* 0: default pools; 1, 2, ...: created */
  char name[24];        /* for the log: "default0", "pool1" */
  uint64_t threshold;   /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
  uint64_t reserved;    /* freed bytes the pool keeps */
  uint64_t used;        /* bytes allocated from it and not freed */
  int destroyed;
};

typedef struct fk_alloc {
  uintptr_t base;
  size_t size;
  int pinned; /* cuMemHostAlloc: host memory the device can map */
  int device;
  fk_pool* pool; /* stream-ordered allocations */
  int freeing;   /* a cuMemFreeAsync is queued */
  struct fk_vmm* vmm; /* a cuMemMap mapping of this physical memory or multicast object */
  size_t vmm_offset;  /* where in `vmm` the mapping starts */
  int accessible;     /* cuMemSetAccess granted it (mappings only) */
  struct fk_alloc* next;
} fk_alloc;

static struct {
  pthread_mutex_t mu;
  pthread_once_t once;
  int initialised;
  int torn_down; /* atomic: set by the atexit handler, read by every call */
  int host_fn_violations;
  int devices;
  uint64_t memory;
  int shared_optin;
  long async_alloc_ok; /* -1: unlimited */
  long async_allocs;
  fk_ctx ctx[FAKE_MAX_DEVICES];
  uint64_t used[FAKE_MAX_DEVICES]; /* cuMemAlloc bytes */
  fk_pool default_pool[FAKE_MAX_DEVICES];
  fk_pool* pools[64];
  int npools;
  int peer[FAKE_MAX_DEVICES][FAKE_MAX_DEVICES];
  fk_alloc* allocs;
  pthread_mutex_t log_mu;
  FILE* log;
  fk_stream* streams; /* every stream ever created (never freed: see stream_main) */
  int multicast;       /* CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED */
  size_t mc_granularity;
  struct fk_vmm* vmms; /* live physical allocations and multicast objects */
  struct fk_resv* resvs;
  const char* fail_name; /* FAKE_CUDA_FAIL */
  long fail_after, fail_calls;
  int fail_result;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT, .log_mu = PTHREAD_MUTEX_INITIALIZER};

/* Per-thread state through pthread keys, not __thread: LeakSanitizer (GCC
 * 12) crashes scanning the dynamic TLS of a dlopen()ed library. */
static pthread_key_t g_current_key; /* the calling thread's current context */
static pthread_key_t g_host_fn_key; /* non-NULL while a host function runs */

static fk_ctx* current_ctx(void) { return pthread_getspecific(g_current_key); }
static void set_current_ctx(fk_ctx* c) { pthread_setspecific(g_current_key, c); }
static int in_host_fn(void) { return pthread_getspecific(g_host_fn_key) != NULL; }
#define t_current (current_ctx())

static void fk_log(const char* fmt, ...) {
  if (g.log == NULL) return;
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&g.log_mu);
  vfprintf(g.log, fmt, ap);
  fputc('\n', g.log);
  fflush(g.log); /* the process may end in _exit or a crash */
  pthread_mutex_unlock(&g.log_mu);
  va_end(ap);
}

static void fk_teardown(void) {
  __atomic_store_n(&g.torn_down, 1, __ATOMIC_SEQ_CST);
  if (g.host_fn_violations) {
    fprintf(stderr, "FAKE_CUDA: %d driver call(s) from host functions; failing the process\n",
            g.host_fn_violations);
    _exit(86);
  }
}

static void fk_configure(void) {
  pthread_key_create(&g_current_key, NULL);
  pthread_key_create(&g_host_fn_key, NULL);
  const char* path = getenv("FAKE_CUDA_LOG");
  if (path && *path) g.log = fopen(path, "a");
  g.devices = fake_env_int("FAKE_CUDA_DEVICES", 1);
  if (g.devices < 0) g.devices = 0;
  if (g.devices > FAKE_MAX_DEVICES) g.devices = FAKE_MAX_DEVICES;
  const char* mem = getenv("FAKE_CUDA_MEMORY_BYTES");
  g.memory = mem && *mem ? strtoull(mem, NULL, 0) : (1ull << 30);
  g.shared_optin = fake_env_int("FAKE_CUDA_SHARED_OPTIN", 232448);
  g.async_alloc_ok = fake_env_int("FAKE_CUDA_ASYNC_ALLOC_OK", -1);
  g.multicast = fake_env_int("FAKE_CUDA_MULTICAST", 1);
  g.mc_granularity = (size_t)fake_env_int("FAKE_CUDA_MC_GRANULARITY", 2 << 20);
  const char* fail = getenv("FAKE_CUDA_FAIL");
  g.fail_name = fail && *fail ? fail : NULL;
  g.fail_after = fake_env_int("FAKE_CUDA_FAIL_AFTER", 0);
  g.fail_result = fake_env_int("FAKE_CUDA_FAIL_RESULT", CUDA_ERROR_OUT_OF_MEMORY);
  for (int i = 0; i < FAKE_MAX_DEVICES; ++i) {
    g.ctx[i].device = i;
    g.default_pool[i].device = i;
    g.default_pool[i].is_default = 1;
    snprintf(g.default_pool[i].name, sizeof g.default_pool[i].name, "default%d", i);
  }
}

/* The prologue of every entry point: teardown and host-function checks,
 * then the log line. `fmt` (may be NULL) formats the notable arguments. */
static CUresult fk_enter(const char* name, const char* fmt, ...) {
  if (__atomic_load_n(&g.torn_down, __ATOMIC_SEQ_CST)) {
    fprintf(stderr, "FAKE_CUDA: call after teardown: %s\n", name);
    return CUDA_ERROR_DEINITIALIZED;
  }
  if (in_host_fn()) {
    fprintf(stderr, "FAKE_CUDA: driver call from a host function: %s\n", name);
    pthread_mutex_lock(&g.mu);
    ++g.host_fn_violations;
    pthread_mutex_unlock(&g.mu);
    return CUDA_ERROR_NOT_PERMITTED;
  }
  if (g.log != NULL) {
    char args[512] = "";
    if (fmt != NULL) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(args, sizeof args, fmt, ap);
      va_end(ap);
    }
    fk_log("%s%s%s", name, *args ? " " : "", args);
  }
  if (g.fail_name != NULL && strcmp(name, g.fail_name) == 0) {
    pthread_mutex_lock(&g.mu);
    const int fail = g.fail_calls++ >= g.fail_after;
    pthread_mutex_unlock(&g.mu);
    if (fail) {
      fk_log("  -> injected error=%d", g.fail_result);
      return (CUresult)g.fail_result;
    }
  }
  return CUDA_SUCCESS;
}

/* The prologue of calls that need an initialised driver (cuInit done). */
#define ENTER(name, ...)                                          \
  do {                                                            \
    CUresult enter_r_ = fk_enter(name, __VA_ARGS__);              \
    if (enter_r_ != CUDA_SUCCESS) return enter_r_;                \
    if (!g.initialised) return CUDA_ERROR_NOT_INITIALIZED;        \
  } while (0)

/* ... and of calls that need a current context (with its sticky error). */
#define ENTER_CTX(name, ...)                                      \
  do {                                                            \
    ENTER(name, __VA_ARGS__);                                     \
    if (t_current == NULL) return CUDA_ERROR_INVALID_CONTEXT;     \
    if (sticky_of(t_current) != CUDA_SUCCESS) return sticky_of(t_current); \
  } while (0)

static CUresult sticky_of(const fk_ctx* c) { return (CUresult)__atomic_load_n(&c->sticky, __ATOMIC_ACQUIRE); }

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- allocations --------------------------------------------------------- */

/* The allocation holding [p, p + n), or NULL. Caller holds g.mu. */
static fk_alloc* find_alloc_locked(uintptr_t p, size_t n) {
  for (fk_alloc* a = g.allocs; a; a = a->next)
    if ((a->vmm == NULL || a->accessible) && p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base)) return a;
  return NULL;
}

/* Whether [p, p + n) lies in memory the device can access (device memory
 * or mapped pinned memory); `pinned` (may be NULL) says which. */
static int device_range(uintptr_t p, size_t n, int* pinned) {
  pthread_mutex_lock(&g.mu);
  fk_alloc* a = find_alloc_locked(p, n);
  if (a && pinned) *pinned = a->pinned;
  pthread_mutex_unlock(&g.mu);
  return a != NULL;
}

/* Host memory is pageable unless it lies in a cuMemHostAlloc allocation. */
static int is_pinned_host(const void* p, size_t n) {
  int pinned = 0;
  return device_range((uintptr_t)p, n, &pinned) && pinned;
}

static uint64_t reserved_locked(int device) {
  uint64_t r = g.default_pool[device].reserved;
  for (int i = 0; i < g.npools; ++i)
    if (g.pools[i]->device == device && !g.pools[i]->destroyed) r += g.pools[i]->reserved;
  return r;
}

static uint64_t in_use_locked(int device) {
  uint64_t u = g.used[device] + g.default_pool[device].used;
  for (int i = 0; i < g.npools; ++i)
    if (g.pools[i]->device == device && !g.pools[i]->destroyed) u += g.pools[i]->used;
  return u + reserved_locked(device);
}

/* New memory: from `pool` (reusing what it reserved first) or plain. */
static CUresult alloc_locked(int device, size_t n, fk_pool* pool, int pinned, uintptr_t* out) {
  if (n == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!pinned) {
    if (pool != NULL && pool->reserved >= n) {
      pool->reserved -= n;
    } else if (in_use_locked(device) + n > g.memory) {
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  fk_alloc* a = calloc(1, sizeof *a);
  void* mem = NULL;
  if (a == NULL || posix_memalign(&mem, 256, n) != 0) {
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memset(mem, 0xA5, n); /* not zero: reads of unwritten memory show */
  a->base = (uintptr_t)mem;
  a->size = n;
  a->pinned = pinned;
  a->device = device;
  a->pool = pool;
  a->next = g.allocs;
  g.allocs = a;
  if (pool != NULL)
    pool->used += n;
  else if (!pinned)
    g.used[device] += n;
  *out = a->base;
  return CUDA_SUCCESS;
}

/* Frees `a` (unlinked here). Pool memory stays reserved by its pool up to
 * the release threshold (the real pool releases the excess at
 * synchronisation; here at once). Caller holds g.mu. */
static void free_locked(fk_alloc* a) {
  for (fk_alloc** pp = &g.allocs; *pp; pp = &(*pp)->next)
    if (*pp == a) {
      *pp = a->next;
      break;
    }
  if (a->pool != NULL) {
    fk_pool* p = a->pool;
    p->used -= a->size;
    p->reserved += a->size;
    if (p->reserved > p->threshold) p->reserved = p->threshold;
  } else if (!a->pinned) {
    g.used[a->device] -= a->size;
  }
  free((void*)a->base);
  free(a);
}

/* ---- virtual memory management and multicast objects ------------------- */

/* A CUmemGenericAllocationHandle: physical memory or a multicast object. */
typedef struct fk_vmm {
  int is_multicast;
  int device;      /* physical memory: where it lives */
  size_t size;
  int fd;          /* physical memory: its pages, mapped MAP_SHARED */
  unsigned char* backing; /* physical memory: a mapping of its own, for the write-through */
  int released;    /* cuMemRelease was called: gone once unmapped and unbound */
  int maps;        /* live cuMemMap mappings of it */
  struct fk_vmm* bound_to; /* physical memory: the multicast object it is bound to */
  unsigned team;   /* multicast: numDevices */
  unsigned joined; /* multicast: devices added so far */
  int member[FAKE_MAX_DEVICES];        /* multicast: added */
  struct fk_vmm* bound[FAKE_MAX_DEVICES]; /* multicast: each member's physical memory */
  struct fk_vmm* next;
} fk_vmm;

/* A cuMemAddressReserve range: PROT_NONE until something is mapped into it. */
typedef struct fk_resv {
  uintptr_t base;
  size_t size;
  void* raw; /* what mmap returned (over-sized for the alignment) */
  size_t raw_size;
  struct fk_resv* next;
} fk_resv;

static fk_vmm* vmm_of_locked(CUmemGenericAllocationHandle h) {
  for (fk_vmm* v = g.vmms; v; v = v->next)
    if ((CUmemGenericAllocationHandle)(uintptr_t)v == h) return v;
  return NULL;
}

/* Frees `v` once released, unmapped and unbound (the driver's lifetime rule). */
static void vmm_maybe_free_locked(fk_vmm* v) {
  if (!v->released || v->maps > 0 || v->bound_to != NULL) return;
  if (v->is_multicast)
    for (int i = 0; i < FAKE_MAX_DEVICES; ++i)
      if (v->bound[i]) return;
  for (fk_vmm** pp = &g.vmms; *pp; pp = &(*pp)->next)
    if (*pp == v) {
      *pp = v->next;
      break;
    }
  if (!v->is_multicast) {
    munmap(v->backing, v->size);
    close(v->fd);
    g.used[v->device] -= v->size;
  }
  free(v);
}

/* A write of [p, p + n) has landed: if that is in a multicast mapping,
 * every member's bound memory receives it at the same offset. */
static void write_through(uintptr_t p, size_t n) {
  pthread_mutex_lock(&g.mu);
  fk_alloc* a = find_alloc_locked(p, n);
  if (a != NULL && a->vmm != NULL && a->vmm->is_multicast) {
    const size_t off = a->vmm_offset + (p - a->base);
    for (int i = 0; i < FAKE_MAX_DEVICES; ++i) {
      fk_vmm* m = a->vmm->bound[i];
      if (m != NULL && off + n <= m->size) memcpy(m->backing + off, (const void*)p, n);
    }
  }
  pthread_mutex_unlock(&g.mu);
}

/* What the fake holds for VMM: handles, reservations and mappings. */
FAKE_EXPORT int fake_cuda_live_vmm(void) {
  int n = 0;
  pthread_mutex_lock(&g.mu);
  for (fk_vmm* v = g.vmms; v; v = v->next) ++n;
  for (fk_resv* r = g.resvs; r; r = r->next) ++n;
  for (fk_alloc* a = g.allocs; a; a = a->next) n += a->vmm != NULL;
  pthread_mutex_unlock(&g.mu);
  return n;
}

/* ---- streams ------------------------------------------------------------- */

enum op_kind {
  OP_COPY, OP_MEMSET, OP_RECORD, OP_WAIT_EVENT, OP_HOST_FN, OP_WAIT_VALUE, OP_WRITE_VALUE,
  OP_LAUNCH, OP_FREE, OP_DESTROY
};

typedef struct fk_event {
  fk_ctx* ctx;
  unsigned flags;
  uint64_t recorded; /* records issued */
  uint64_t done;     /* records completed */
  uint64_t time_ns;  /* when the last completed record ran */
  int refs;          /* the handle plus queued records and waits */
} fk_event;

struct fk_launch;

typedef struct fk_op {
  enum op_kind kind;
  struct fk_op* next;
  void* dst;
  const void* src;
  uint64_t n, value;
  unsigned flags;
  fk_event* event;
  CUhostFn fn;
  void* user;
  struct fk_launch* launch;
  fk_alloc* alloc;
} fk_op;

struct fk_stream {
  fk_ctx* ctx;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  fk_op *head, *tail;
  uint64_t submitted, completed;
  pthread_t thread;
  fk_stream* next_all;
};

/* Events share one lock and condition: records complete rarely enough. */
static pthread_mutex_t g_ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_ev_cv = PTHREAD_COND_INITIALIZER;

static void event_unref_locked(fk_event* e) {
  if (--e->refs == 0) free(e);
}

static void run_launch(fk_ctx* ctx, struct fk_launch* l);

static void run_op(fk_stream* s, fk_op* op) {
  switch (op->kind) {
    case OP_COPY:
      memmove(op->dst, op->src, op->n);
      write_through((uintptr_t)op->dst, op->n);
      break;
    case OP_MEMSET:
      for (uint64_t i = 0; i < op->n; ++i) memcpy((char*)op->dst + i * op->flags, &op->value, op->flags);
      write_through((uintptr_t)op->dst, op->n * op->flags);
      break;
    case OP_RECORD:
      pthread_mutex_lock(&g_ev_mu);
      if (op->value > op->event->done) op->event->done = op->value;
      op->event->time_ns = now_ns();
      pthread_cond_broadcast(&g_ev_cv);
      event_unref_locked(op->event);
      pthread_mutex_unlock(&g_ev_mu);
      break;
    case OP_WAIT_EVENT:
      pthread_mutex_lock(&g_ev_mu);
      while (op->event->done < op->value) pthread_cond_wait(&g_ev_cv, &g_ev_mu);
      event_unref_locked(op->event);
      pthread_mutex_unlock(&g_ev_mu);
      break;
    case OP_HOST_FN:
      pthread_setspecific(g_host_fn_key, (void*)1);
      op->fn(op->user);
      pthread_setspecific(g_host_fn_key, NULL);
      break;
    case OP_WAIT_VALUE: {
      const uint64_t* p = op->dst;
      for (;;) {
        const uint64_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
        int ok = 0;
        switch (op->flags & 0xF) {
          case CU_STREAM_WAIT_VALUE_GEQ: ok = (int64_t)(v - op->value) >= 0; break;
          case CU_STREAM_WAIT_VALUE_EQ: ok = v == op->value; break;
          case CU_STREAM_WAIT_VALUE_AND: ok = (v & op->value) != 0; break;
          default: ok = ~(v | op->value) != 0; break;
        }
        if (ok) break;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
      }
      break;
    }
    case OP_WRITE_VALUE: __atomic_store_n((uint64_t*)op->dst, op->value, __ATOMIC_RELEASE); break;
    case OP_LAUNCH: run_launch(s->ctx, op->launch); break;
    case OP_FREE:
      pthread_mutex_lock(&g.mu);
      free_locked(op->alloc);
      pthread_mutex_unlock(&g.mu);
      break;
    case OP_DESTROY: break;
  }
}

static void* stream_main(void* arg) {
  fk_stream* s = arg;
  set_current_ctx(s->ctx); /* host functions run "in" the stream's context */
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (s->head == NULL) pthread_cond_wait(&s->cv, &s->mu);
    fk_op* op = s->head;
    pthread_mutex_unlock(&s->mu);
    run_op(s, op);
    pthread_mutex_lock(&s->mu);
    s->head = op->next;
    if (s->head == NULL) s->tail = NULL;
    ++s->completed;
    pthread_cond_broadcast(&s->cv);
    const int last = op->kind == OP_DESTROY;
    free(op);
    if (last) break;
  }
  pthread_mutex_unlock(&s->mu);
  /* `s` stays allocated (and listed in g.streams): cuCtxSynchronize may be
   * draining it right now, and a drained stream answers at once. */
  return NULL;
}

static fk_stream* stream_new(fk_ctx* ctx) {
  fk_stream* s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->ctx = ctx;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
    free(s);
    return NULL;
  }
  pthread_detach(s->thread);
  pthread_mutex_lock(&g.mu);
  s->next_all = g.streams;
  g.streams = s;
  pthread_mutex_unlock(&g.mu);
  return s;
}

/* The stream a call names: NULL is the context's default stream. */
static fk_stream* stream_of(CUstream h) {
  if (h != NULL) return (fk_stream*)h;
  static pthread_mutex_t null_mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&null_mu);
  if (t_current->null_stream == NULL) t_current->null_stream = stream_new(t_current);
  fk_stream* s = t_current->null_stream;
  pthread_mutex_unlock(&null_mu);
  return s;
}

static CUresult submit(CUstream h, fk_op* op) {
  fk_stream* s = stream_of(h);
  if (s == NULL) {
    free(op);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  op->next = NULL;
  pthread_mutex_lock(&s->mu);
  if (s->tail) s->tail->next = op;
  else s->head = op;
  s->tail = op;
  ++s->submitted;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return CUDA_SUCCESS;
}

static fk_op* op_new(enum op_kind kind) {
  fk_op* op = calloc(1, sizeof *op);
  if (op) op->kind = kind;
  return op;
}

/* Waits until everything submitted to `s` so far has run. */
static void stream_drain(fk_stream* s) {
  pthread_mutex_lock(&s->mu);
  const uint64_t target = s->submitted;
  while (s->completed < target) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

/* ---- the PTX interpreter ------------------------------------------------ */

enum { OPD_NONE, OPD_REG, OPD_IMM, OPD_SPECIAL, OPD_MEM, OPD_PARAM, OPD_LABEL };
enum { SR_TID, SR_NTID, SR_CTAID, SR_NCTAID }; /* special registers, x3 axes */

typedef struct {
  int kind;
  int reg;        /* OPD_REG, OPD_MEM (base register, -1: none) */
  int64_t imm;    /* OPD_IMM, OPD_MEM (offset) */
  int special;    /* SR_* * 3 + axis */
  int param;      /* OPD_PARAM index */
  int label;      /* OPD_LABEL: instruction index */
  char name[64];  /* labels and params until resolved */
} fk_operand;

enum {
  I_LD_PARAM, I_LD_GLOBAL, I_ST_GLOBAL, I_MOV, I_CVTA, I_CVT, I_ADD, I_SUB, I_MUL_LO, I_MUL_WIDE,
  I_MAD_LO, I_MAD_WIDE, I_SHL, I_SETP, I_BRA, I_RET
};
enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE };

typedef struct {
  int op;
  int bits;     /* 32 or 64: the operation's width (from the type suffix) */
  int is_signed;
  int src_bits; /* cvt: the source width */
  int cmp;
  int pred;     /* guard predicate register, -1: none */
  int pred_neg;
  int nops;
  fk_operand o[4];
} fk_insn;

typedef struct fk_function {
  char name[128];
  int nparams;
  int param_size[32];
  int param_offset[32];
  char param_name[32][64];
  int nregs;
  char reg_name[128][16];
  fk_insn* code;
  int ncode;
  int max_dynamic_shared; /* cuFuncSetAttribute */
  struct fk_function* next;
} fk_function;

typedef struct fk_module {
  fk_function* functions;
} fk_module;

struct fk_launch {
  fk_function* f;
  unsigned grid[3], block[3];
  unsigned char* params;
};

static int type_bits(const char* t, int* is_signed) {
  *is_signed = t[0] == 's';
  if (strcmp(t, "pred") == 0) return 1;
  int bits = atoi(t + 1);
  return bits == 0 ? -1 : bits;
}

static int reg_index(fk_function* f, const char* name) {
  for (int i = 0; i < f->nregs; ++i)
    if (strcmp(f->reg_name[i], name) == 0) return i;
  if (f->nregs == 128 || strlen(name) >= sizeof f->reg_name[0]) return -1;
  snprintf(f->reg_name[f->nregs], sizeof f->reg_name[0], "%s", name);
  return f->nregs++;
}

static char* trim(char* s) {
  while (isspace((unsigned char)*s)) ++s;
  char* e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

/* One operand; NULL error string on success. */
static const char* parse_operand(fk_function* f, char* text, fk_operand* o) {
  text = trim(text);
  memset(o, 0, sizeof *o);
  o->reg = -1;
  if (*text == '[') {
    char* end = strchr(text, ']');
    if (end == NULL) return "unterminated [";
    *end = '\0';
    char* inner = trim(text + 1);
    if (*inner != '%') { /* a parameter by name */
      o->kind = OPD_PARAM;
      snprintf(o->name, sizeof o->name, "%s", inner);
      o->param = -1;
      for (int i = 0; i < f->nparams; ++i)
        if (strcmp(f->param_name[i], inner) == 0) o->param = i;
      return o->param < 0 ? "unknown parameter" : NULL;
    }
    o->kind = OPD_MEM;
    char* plus = strchr(inner, '+');
    if (plus) {
      *plus = '\0';
      o->imm = strtoll(trim(plus + 1), NULL, 0);
    }
    o->reg = reg_index(f, trim(inner));
    return o->reg < 0 ? "too many registers" : NULL;
  }
  if (*text == '%') {
    static const char* const kSpecial[] = {"%tid.", "%ntid.", "%ctaid.", "%nctaid."};
    for (int k = 0; k < 4; ++k) {
      const size_t n = strlen(kSpecial[k]);
      if (strncmp(text, kSpecial[k], n) == 0) {
        const char axis = text[n];
        if ((axis < 'x' || axis > 'z') || text[n + 1] != '\0') return "bad special register";
        o->kind = OPD_SPECIAL;
        o->special = k * 3 + (axis - 'x');
        return NULL;
      }
    }
    o->kind = OPD_REG;
    o->reg = reg_index(f, text);
    return o->reg < 0 ? "too many registers" : NULL;
  }
  if (isdigit((unsigned char)*text) || *text == '-') {
    char* end = NULL;
    o->kind = OPD_IMM;
    o->imm = strtoll(text, &end, 0);
    if (*end == 'U') ++end;
    return *end == '\0' ? NULL : "bad immediate";
  }
  if (isalpha((unsigned char)*text) || *text == '_' || *text == '$') {
    o->kind = OPD_LABEL;
    snprintf(o->name, sizeof o->name, "%s", text);
    return NULL;
  }
  return "unrecognised operand";
}

/* One statement ("@%p1 bra L", "add.s32 %r1, %r2, 1"). */
static const char* parse_insn(fk_function* f, char* text, fk_insn* in) {
  memset(in, 0, sizeof *in);
  in->pred = -1;
  text = trim(text);
  if (*text == '@') {
    ++text;
    if (*text == '!') {
      in->pred_neg = 1;
      ++text;
    }
    char* sp = text;
    while (*sp && !isspace((unsigned char)*sp)) ++sp;
    if (*sp == '\0') return "predicate without instruction";
    *sp = '\0';
    in->pred = reg_index(f, text);
    text = trim(sp + 1);
  }
  char* sp = text;
  while (*sp && !isspace((unsigned char)*sp)) ++sp;
  char* operands = *sp ? sp + 1 : sp;
  *sp = '\0';
  /* The opcode's parts: base, then modifiers and types. */
  char* parts[8];
  int np = 0;
  char* save = NULL;
  for (char* tok = strtok_r(text, ".", &save); tok && np < 8; tok = strtok_r(NULL, ".", &save)) parts[np++] = tok;
  if (np == 0) return "empty instruction";
  const char* base = parts[0];
  const char* type = np > 1 ? parts[np - 1] : "";
  in->bits = 0;
  for (int i = 1; i < np; ++i) {
    int s = 0;
    const int b = type_bits(parts[i], &s);
    if ((parts[i][0] == 'u' || parts[i][0] == 's' || parts[i][0] == 'b') && b > 0 && isdigit((unsigned char)parts[i][1])) {
      if (in->bits == 0) {
        in->bits = b;
        in->is_signed = s;
      } else {
        in->src_bits = b; /* cvt.u64.u32: destination first, then source */
      }
    }
  }
  (void)type;
  if (strcmp(base, "ld") == 0) {
    if (np > 1 && strcmp(parts[1], "param") == 0) in->op = I_LD_PARAM;
    else if (np > 1 && strcmp(parts[1], "global") == 0) in->op = I_LD_GLOBAL;
    else return "ld: only .param and .global";
  } else if (strcmp(base, "st") == 0) {
    if (np > 1 && strcmp(parts[1], "global") == 0) in->op = I_ST_GLOBAL;
    else return "st: only .global";
  } else if (strcmp(base, "mov") == 0) in->op = I_MOV;
  else if (strcmp(base, "cvta") == 0) in->op = I_CVTA;
  else if (strcmp(base, "cvt") == 0) in->op = I_CVT;
  else if (strcmp(base, "add") == 0) in->op = I_ADD;
  else if (strcmp(base, "sub") == 0) in->op = I_SUB;
  else if (strcmp(base, "shl") == 0) in->op = I_SHL;
  else if (strcmp(base, "mul") == 0 || strcmp(base, "mad") == 0) {
    const int wide = np > 1 && strcmp(parts[1], "wide") == 0;
    if (!wide && !(np > 1 && strcmp(parts[1], "lo") == 0)) return "mul/mad: only .lo and .wide";
    in->op = base[1] == 'u' ? (wide ? I_MUL_WIDE : I_MUL_LO) : (wide ? I_MAD_WIDE : I_MAD_LO);
  } else if (strcmp(base, "setp") == 0) {
    static const char* const kCmp[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    in->op = I_SETP;
    in->cmp = -1;
    for (int c = 0; c < 6; ++c)
      if (np > 1 && strcmp(parts[1], kCmp[c]) == 0) in->cmp = c;
    if (in->cmp < 0) return "setp: unknown comparison";
  } else if (strcmp(base, "bra") == 0) in->op = I_BRA;
  else if (strcmp(base, "ret") == 0 || strcmp(base, "exit") == 0) in->op = I_RET;
  else return "unsupported instruction";
  if (in->op != I_BRA && in->op != I_RET && in->bits <= 0) return "missing type";
  /* Operands, comma-separated. */
  operands = trim(operands);
  while (*operands && in->nops < 4) {
    char* comma = strchr(operands, ',');
    if (comma) *comma = '\0';
    const char* e = parse_operand(f, operands, &in->o[in->nops++]);
    if (e) return e;
    if (!comma) break;
    operands = comma + 1;
  }
  static const int kWant[] = {2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 3, 3, 1, 0};
  if (in->nops != kWant[in->op]) return "wrong operand count";
  return NULL;
}

static void free_module(fk_module* m) {
  while (m->functions) {
    fk_function* f = m->functions;
    m->functions = f->next;
    free(f->code);
    free(f);
  }
  free(m);
}

/* Parses every .entry of `ptx`; on failure writes why to `err`. */
static fk_module* parse_ptx(const char* ptx, char* err, size_t err_size) {
  char* text = strdup(ptx);
  fk_module* m = calloc(1, sizeof *m);
  if (text == NULL || m == NULL) {
    free(text);
    free(m);
    snprintf(err, err_size, "out of memory");
    return NULL;
  }
  /* Comments out. */
  for (char* p = text; *p; ++p) {
    if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') *p++ = ' ';
      if (!*p) break;
    } else if (p[0] == '/' && p[1] == '*') {
      char* e = strstr(p + 2, "*/");
      char* stop = e ? e + 2 : p + strlen(p);
      while (p < stop) *p++ = ' ';
      --p;
    }
  }
  if (strstr(text, ".version") == NULL || strstr(text, ".target") == NULL) {
    snprintf(err, err_size, "not PTX (no .version/.target)");
    goto fail;
  }
  for (char* p = strstr(text, ".entry"); p; p = strstr(p, ".entry")) {
    p += 6;
    fk_function* f = calloc(1, sizeof *f);
    if (f == NULL) goto fail;
    f->next = m->functions;
    m->functions = f;
    while (isspace((unsigned char)*p)) ++p;
    int n = 0;
    while ((isalnum((unsigned char)*p) || *p == '_' || *p == '$') && n < 127) f->name[n++] = *p++;
    char* open = strchr(p, '(');
    char* close = open ? strchr(open, ')') : NULL;
    char* body = close ? strchr(close, '{') : NULL;
    char* end = body ? strchr(body, '}') : NULL;
    if (!end) {
      snprintf(err, err_size, "%s: malformed entry", f->name);
      goto fail;
    }
    *close = '\0';
    *end = '\0';
    int offset = 0;
    char* save = NULL;
    for (char* prm = strtok_r(open + 1, ",", &save); prm; prm = strtok_r(NULL, ",", &save)) {
      char t[16] = "", name[64] = "";
      if (sscanf(prm, " .param .%15s %63s", t, name) != 2 || f->nparams == 32) {
        snprintf(err, err_size, "%s: bad parameter '%s'", f->name, trim(prm));
        goto fail;
      }
      int s = 0;
      const int bits = type_bits(t, &s);
      if (bits != 32 && bits != 64) {
        snprintf(err, err_size, "%s: unsupported parameter type .%s", f->name, t);
        goto fail;
      }
      const int size = bits / 8;
      offset = (offset + size - 1) / size * size;
      f->param_size[f->nparams] = size;
      f->param_offset[f->nparams] = offset;
      snprintf(f->param_name[f->nparams], 64, "%s", name);
      ++f->nparams;
      offset += size;
    }
    /* Statements end in ';'; "NAME:" before one is a label. */
    char* labels[64];
    int label_at[64], nlabels = 0, cap = 64;
    f->code = calloc((size_t)cap, sizeof *f->code);
    char* stmt = body + 1;
    for (;;) {
      char* semi = strchr(stmt, ';');
      char* s = trim(stmt);
      /* Labels may precede the statement (or the end of the body). */
      for (;;) {
        char* colon = strchr(s, ':');
        if (!colon || (semi && colon > semi)) break;
        char* c = s;
        while (c < colon && (isalnum((unsigned char)*c) || *c == '_' || *c == '$')) ++c;
        if (c != colon || nlabels == 64) break;
        *colon = '\0';
        labels[nlabels] = s;
        label_at[nlabels++] = f->ncode;
        s = trim(colon + 1);
      }
      if (!semi) break;
      *semi = '\0';
      s = trim(s);
      stmt = semi + 1;
      if (*s == '\0' || *s == '.') continue; /* .reg and other directives */
      if (f->ncode == cap) {
        cap *= 2;
        f->code = realloc(f->code, (size_t)cap * sizeof *f->code);
      }
      char copy[96];
      snprintf(copy, sizeof copy, "%s", s);
      const char* e = parse_insn(f, s, &f->code[f->ncode]);
      if (e) {
        snprintf(err, err_size, "%.100s: '%s': %s", f->name, copy, e);
        goto fail;
      }
      ++f->ncode;
    }
    for (int i = 0; i < f->ncode; ++i)
      for (int k = 0; k < f->code[i].nops; ++k) {
        fk_operand* o = &f->code[i].o[k];
        if (o->kind != OPD_LABEL) continue;
        o->label = -1;
        for (int l = 0; l < nlabels; ++l)
          if (strcmp(labels[l], o->name) == 0) o->label = label_at[l];
        if (o->label < 0) {
          snprintf(err, err_size, "%s: unknown label %s", f->name, o->name);
          goto fail;
        }
      }
    p = end + 1;
  }
  if (m->functions == NULL) {
    snprintf(err, err_size, "no .entry in the module");
    goto fail;
  }
  free(text);
  return m;
fail:
  free(text);
  free_module(m);
  return NULL;
}

typedef struct {
  unsigned sr[12];
  uint64_t reg[128];
  uintptr_t ok_base; /* the allocation the last access hit */
  size_t ok_size;
} fk_thread;

static uint64_t mask(uint64_t v, int bits) { return bits >= 64 ? v : v & ((1ull << bits) - 1); }
static int64_t sext(uint64_t v, int bits) {
  return bits >= 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
}

static uint64_t value_of(const fk_thread* t, const fk_operand* o) {
  switch (o->kind) {
    case OPD_REG: return t->reg[o->reg];
    case OPD_IMM: return (uint64_t)o->imm;
    case OPD_SPECIAL: return t->sr[o->special];
    default: return 0;
  }
}

/* The address an ld/st.global operand names, checked against device memory. */
static void* global_addr(fk_thread* t, const fk_operand* o, size_t n) {
  const uintptr_t p = (uintptr_t)(t->reg[o->reg] + (uint64_t)o->imm);
  if (p >= t->ok_base && p - t->ok_base <= t->ok_size && n <= t->ok_size - (p - t->ok_base)) return (void*)p;
  pthread_mutex_lock(&g.mu);
  fk_alloc* a = find_alloc_locked(p, n);
  if (a) {
    t->ok_base = a->base;
    t->ok_size = a->size;
  }
  pthread_mutex_unlock(&g.mu);
  return a ? (void*)p : NULL;
}

/* Runs one thread to its ret; CUDA_ERROR_ILLEGAL_ADDRESS on a bad access. */
static CUresult run_thread(const struct fk_launch* l, fk_thread* t) {
  const fk_function* f = l->f;
  uint64_t steps = 0;
  for (int pc = 0; pc < f->ncode;) {
    const fk_insn* in = &f->code[pc++];
    if (++steps > (1ull << 32)) return CUDA_ERROR_LAUNCH_TIMEOUT;
    if (in->pred >= 0 && ((t->reg[in->pred] != 0) == in->pred_neg)) continue;
    uint64_t* d = in->nops > 0 && in->o[0].kind == OPD_REG ? &t->reg[in->o[0].reg] : NULL;
    const int bits = in->bits;
    switch (in->op) {
      case I_LD_PARAM: {
        const int i = in->o[1].param;
        uint64_t v = 0;
        memcpy(&v, l->params + f->param_offset[i], (size_t)f->param_size[i]);
        *d = mask(v, bits);
        break;
      }
      case I_LD_GLOBAL: {
        void* p = global_addr(t, &in->o[1], (size_t)bits / 8);
        if (!p) return CUDA_ERROR_ILLEGAL_ADDRESS;
        uint64_t v = 0;
        memcpy(&v, p, (size_t)bits / 8);
        *d = v;
        break;
      }
      case I_ST_GLOBAL: {
        void* p = global_addr(t, &in->o[0], (size_t)bits / 8);
        if (!p) return CUDA_ERROR_ILLEGAL_ADDRESS;
        const uint64_t v = value_of(t, &in->o[1]);
        memcpy(p, &v, (size_t)bits / 8);
        break;
      }
      case I_MOV:
      case I_CVTA: *d = mask(value_of(t, &in->o[1]), bits); break;
      case I_CVT: {
        const uint64_t v = mask(value_of(t, &in->o[1]), in->src_bits);
        *d = mask(in->is_signed ? (uint64_t)sext(v, in->src_bits) : v, bits);
        break;
      }
      case I_ADD: *d = mask(value_of(t, &in->o[1]) + value_of(t, &in->o[2]), bits); break;
      case I_SUB: *d = mask(value_of(t, &in->o[1]) - value_of(t, &in->o[2]), bits); break;
      case I_SHL: *d = mask(value_of(t, &in->o[1]) << (value_of(t, &in->o[2]) & 63), bits); break;
      case I_MUL_LO: *d = mask(value_of(t, &in->o[1]) * value_of(t, &in->o[2]), bits); break;
      case I_MAD_LO:
        *d = mask(value_of(t, &in->o[1]) * value_of(t, &in->o[2]) + value_of(t, &in->o[3]), bits);
        break;
      case I_MUL_WIDE:
      case I_MAD_WIDE: {
        /* 32 x 32 -> 64 bits, sign-extended for .s32. */
        const uint64_t a = mask(value_of(t, &in->o[1]), bits), b = mask(value_of(t, &in->o[2]), bits);
        uint64_t r = in->is_signed ? (uint64_t)(sext(a, bits) * sext(b, bits)) : a * b;
        if (in->op == I_MAD_WIDE) r += value_of(t, &in->o[3]);
        *d = r;
        break;
      }
      case I_SETP: {
        const uint64_t a = mask(value_of(t, &in->o[1]), bits), b = mask(value_of(t, &in->o[2]), bits);
        const int lt = in->is_signed ? sext(a, bits) < sext(b, bits) : a < b;
        const int eq = a == b;
        int r = 0;
        switch (in->cmp) {
          case CMP_EQ: r = eq; break;
          case CMP_NE: r = !eq; break;
          case CMP_LT: r = lt; break;
          case CMP_LE: r = lt || eq; break;
          case CMP_GT: r = !lt && !eq; break;
          default: r = !lt; break;
        }
        *d = (uint64_t)r;
        break;
      }
      case I_BRA: pc = in->o[0].label; break;
      case I_RET: return CUDA_SUCCESS;
    }
  }
  return CUDA_SUCCESS;
}

/* Every thread of every block, one after another (the subset has no
 * barriers or shared memory, so any order is a valid schedule). */
static void run_launch(fk_ctx* ctx, struct fk_launch* l) {
  fk_thread* t = calloc(1, sizeof *t);
  CUresult r = t ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
  for (unsigned bz = 0; r == CUDA_SUCCESS && bz < l->grid[2]; ++bz)
    for (unsigned by = 0; r == CUDA_SUCCESS && by < l->grid[1]; ++by)
      for (unsigned bx = 0; r == CUDA_SUCCESS && bx < l->grid[0]; ++bx)
        for (unsigned tz = 0; r == CUDA_SUCCESS && tz < l->block[2]; ++tz)
          for (unsigned ty = 0; r == CUDA_SUCCESS && ty < l->block[1]; ++ty)
            for (unsigned tx = 0; r == CUDA_SUCCESS && tx < l->block[0]; ++tx) {
              const unsigned sr[12] = {tx, ty, tz, l->block[0], l->block[1], l->block[2],
                                       bx, by, bz, l->grid[0], l->grid[1], l->grid[2]};
              memcpy(t->sr, sr, sizeof sr);
              memset(t->reg, 0, sizeof t->reg);
              r = run_thread(l, t);
            }
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "FAKE_CUDA: kernel %s failed: error %d\n", l->f->name, (int)r);
    __atomic_store_n(&ctx->sticky, (int)r, __ATOMIC_RELEASE); /* as a real fault, it poisons the context */
  }
  free(t);
  free(l->params);
  free(l);
}

/* ---- entry points: initialisation, devices, contexts -------------------- */

static CUresult fk_cuInit(unsigned flags) {
  CUresult r = fk_enter("cuInit", "flags=%u", flags);
  if (r != CUDA_SUCCESS) return r;
  const int want = fake_env_int("FAKE_CUDA_INIT_RESULT", 0);
  if (want != 0) return (CUresult)want;
  pthread_mutex_lock(&g.mu);
  if (!g.initialised) {
    g.initialised = 1;
    /* The driver's own exit teardown: registered now, so it runs before
     * every atexit handler registered earlier and after later ones. */
    atexit(fk_teardown);
  }
  pthread_mutex_unlock(&g.mu);
  return CUDA_SUCCESS;
}

static CUresult fk_cuDriverGetVersion(int* v) {
  CUresult r = fk_enter("cuDriverGetVersion", NULL);
  if (r != CUDA_SUCCESS) return r;
  if (v == NULL) return CUDA_ERROR_INVALID_VALUE;
  *v = fake_env_int("FAKE_CUDA_VERSION", 12080);
  return CUDA_SUCCESS;
}

static const struct {
  CUresult code;
  const char* name;
} kErrorNames[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT"},
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
};

static CUresult fk_cuGetErrorName(CUresult code, const char** out) {
  CUresult r = fk_enter("cuGetErrorName", "code=%d", (int)code);
  if (r != CUDA_SUCCESS) return r;
  for (size_t i = 0; i < sizeof kErrorNames / sizeof kErrorNames[0]; ++i)
    if (kErrorNames[i].code == code) {
      *out = kErrorNames[i].name;
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fk_cuGetErrorString(CUresult code, const char** out) {
  CUresult r = fk_enter("cuGetErrorString", "code=%d", (int)code);
  if (r != CUDA_SUCCESS) return r;
  for (size_t i = 0; i < sizeof kErrorNames / sizeof kErrorNames[0]; ++i)
    if (kErrorNames[i].code == code) {
      *out = "(the fake CUDA driver's description)";
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fk_cuDeviceGetCount(int* n) {
  ENTER("cuDeviceGetCount", NULL);
  *n = g.devices;
  return CUDA_SUCCESS;
}

static CUresult fk_cuDeviceGet(CUdevice* dev, int ordinal) {
  ENTER("cuDeviceGet", "ordinal=%d", ordinal);
  if (ordinal < 0 || ordinal >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

static CUresult fk_cuDeviceGetName(char* name, int len, CUdevice dev) {
  ENTER("cuDeviceGetName", "device=%d", dev);
  if (dev < 0 || dev >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "Fake CUDA Device %d", dev);
  return CUDA_SUCCESS;
}

static CUresult fk_cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice dev) {
  ENTER("cuDeviceGetAttribute", "attr=%d device=%d", (int)a, dev);
  if (dev < 0 || dev >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = FAKE_DEFAULT_SHARED; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = g.shared_optin; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 4; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: *v = g.multicast ? 1 : 0; break;
    default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}

static CUresult fk_cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  ENTER("cuDeviceTotalMem", "device=%d", dev);
  if (dev < 0 || dev >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = g.memory;
  return CUDA_SUCCESS;
}

static CUresult fk_cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer) {
  ENTER("cuDeviceCanAccessPeer", "device=%d peer=%d", dev, peer);
  if (dev < 0 || dev >= g.devices || peer < 0 || peer >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  *can = dev != peer;
  return CUDA_SUCCESS;
}

static CUresult fk_cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  ENTER("cuDevicePrimaryCtxRetain", "device=%d", dev);
  if (dev < 0 || dev >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  __atomic_add_fetch(&g.ctx[dev].retained, 1, __ATOMIC_ACQ_REL);
  *ctx = (CUcontext)&g.ctx[dev];
  return CUDA_SUCCESS;
}

static CUresult fk_cuDevicePrimaryCtxRelease(CUdevice dev) {
  ENTER("cuDevicePrimaryCtxRelease", "device=%d", dev);
  if (dev < 0 || dev >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&g.mu); /* check and decrement as one */
  const int ok = __atomic_load_n(&g.ctx[dev].retained, __ATOMIC_ACQUIRE) > 0;
  if (ok) __atomic_sub_fetch(&g.ctx[dev].retained, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&g.mu);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult fk_cuCtxGetCurrent(CUcontext* ctx) {
  ENTER("cuCtxGetCurrent", NULL);
  *ctx = (CUcontext)t_current;
  return CUDA_SUCCESS;
}

static CUresult fk_cuCtxSetCurrent(CUcontext ctx) {
  ENTER("cuCtxSetCurrent", "device=%d", ctx ? ((fk_ctx*)ctx)->device : -1);
  fk_ctx* c = (fk_ctx*)ctx;
  if (c != NULL && (c < g.ctx || c >= g.ctx + g.devices || __atomic_load_n(&c->retained, __ATOMIC_ACQUIRE) == 0))
    return CUDA_ERROR_INVALID_CONTEXT;
  set_current_ctx(c);
  return CUDA_SUCCESS;
}

static CUresult fk_cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  ENTER_CTX("cuCtxEnablePeerAccess", "peer=%d", peer ? ((fk_ctx*)peer)->device : -1);
  fk_ctx* p = (fk_ctx*)peer;
  if (flags != 0 || p == NULL || p == t_current) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g.mu);
  const int already = g.peer[t_current->device][p->device];
  g.peer[t_current->device][p->device] = 1;
  pthread_mutex_unlock(&g.mu);
  return already ? CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED : CUDA_SUCCESS;
}

/* Waits for every stream of the context. */
static CUresult fk_cuCtxSynchronize(void) {
  ENTER_CTX("cuCtxSynchronize", NULL);
  fk_stream* all[256];
  int n = 0;
  pthread_mutex_lock(&g.mu);
  for (fk_stream* s = g.streams; s && n < 256; s = s->next_all)
    if (s->ctx == t_current) all[n++] = s;
  pthread_mutex_unlock(&g.mu);
  for (int i = 0; i < n; ++i) stream_drain(all[i]);
  return sticky_of(t_current);
}

/* ---- memory ---------------------------------------------------------------- */

static CUresult fk_cuMemGetInfo(size_t* free_bytes, size_t* total) {
  ENTER_CTX("cuMemGetInfo", NULL);
  pthread_mutex_lock(&g.mu);
  const uint64_t used = in_use_locked(t_current->device);
  pthread_mutex_unlock(&g.mu);
  *free_bytes = used > g.memory ? 0 : g.memory - used;
  *total = g.memory;
  return CUDA_SUCCESS;
}

static CUresult fk_cuMemAlloc(CUdeviceptr* p, size_t n) {
  ENTER_CTX("cuMemAlloc", "bytes=%zu", n);
  uintptr_t a = 0;
  pthread_mutex_lock(&g.mu);
  const CUresult r = alloc_locked(t_current->device, n, NULL, 0, &a);
  pthread_mutex_unlock(&g.mu);
  if (r == CUDA_SUCCESS) {
    *p = a;
    fk_log("  -> ptr=0x%llx", (unsigned long long)a);
  }
  return r;
}

/* Frees device memory from cuMemAlloc or from a pool (the driver accepts
 * both; pool memory goes back to its pool). */
static CUresult fk_cuMemFree(CUdeviceptr p) {
  ENTER_CTX("cuMemFree", "ptr=0x%llx", (unsigned long long)p);
  pthread_mutex_lock(&g.mu);
  fk_alloc* a = find_alloc_locked(p, 0);
  const int ok = a != NULL && a->base == p && !a->pinned && !a->freeing && a->vmm == NULL;
  if (ok) free_locked(a);
  pthread_mutex_unlock(&g.mu);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult pool_alloc(const char* name, CUdeviceptr* p, size_t n, fk_pool* pool, CUstream s) {
  pthread_mutex_lock(&g.mu);
  CUresult r = CUDA_SUCCESS;
  if (g.async_alloc_ok >= 0 && g.async_allocs >= g.async_alloc_ok) r = CUDA_ERROR_NOT_SUPPORTED;
  else if (pool->destroyed || pool->device != t_current->device) r = CUDA_ERROR_INVALID_VALUE;
  uintptr_t a = 0;
  if (r == CUDA_SUCCESS) r = alloc_locked(pool->device, n, pool, 0, &a);
  if (r == CUDA_SUCCESS) ++g.async_allocs;
  pthread_mutex_unlock(&g.mu);
  (void)s; /* the memory exists at once; stream order matters for frees */
  if (r == CUDA_SUCCESS) {
    *p = a;
    fk_log("  -> ptr=0x%llx", (unsigned long long)a);
  } else {
    fk_log("  -> %s error=%d", name, (int)r);
  }
  return r;
}

static CUresult fk_cuMemAllocAsync(CUdeviceptr* p, size_t n, CUstream s) {
  ENTER_CTX("cuMemAllocAsync", "bytes=%zu pool=%s", n, g.default_pool[t_current->device].name);
  return pool_alloc("cuMemAllocAsync", p, n, &g.default_pool[t_current->device], s);
}

static CUresult fk_cuMemAllocFromPoolAsync(CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s) {
  ENTER_CTX("cuMemAllocFromPoolAsync", "bytes=%zu pool=%s", n, pool ? ((fk_pool*)pool)->name : "null");
  if (pool == NULL) return CUDA_ERROR_INVALID_VALUE;
  return pool_alloc("cuMemAllocFromPoolAsync", p, n, (fk_pool*)pool, s);
}

/* Stream-ordered free of pool memory (cuMemAlloc memory is refused: the
 * driver documents this call for stream-ordered allocations). */
static CUresult fk_cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  ENTER_CTX("cuMemFreeAsync", "ptr=0x%llx", (unsigned long long)p);
  pthread_mutex_lock(&g.mu);
  fk_alloc* a = find_alloc_locked(p, 0);
  const int ok = a != NULL && a->base == p && a->pool != NULL && !a->freeing;
  if (ok) a->freeing = 1;
  pthread_mutex_unlock(&g.mu);
  if (!ok) return CUDA_ERROR_INVALID_VALUE;
  fk_op* op = op_new(OP_FREE);
  if (op == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  op->alloc = a;
  return submit(s, op);
}

static CUresult fk_cuPointerGetAttribute(void* data, CUpointer_attribute attr, CUdeviceptr p) {
  ENTER_CTX("cuPointerGetAttribute", "attr=%d ptr=0x%llx", (int)attr, (unsigned long long)p);
  if (attr != CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE) return CUDA_ERROR_NOT_SUPPORTED;
  pthread_mutex_lock(&g.mu);
  fk_alloc* a = find_alloc_locked(p, 0);
  if (a) *(CUmemoryPool*)data = (CUmemoryPool)a->pool;
  pthread_mutex_unlock(&g.mu);
  return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult fk_cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  ENTER("cuDeviceGetDefaultMemPool", "device=%d", dev);
  if (dev < 0 || dev >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  *pool = (CUmemoryPool)&g.default_pool[dev];
  return CUDA_SUCCESS;
}

static CUresult fk_cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  ENTER("cuMemPoolCreate", "device=%d", props ? props->location.id : -1);
  if (props == NULL || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
      props->location.id >= g.devices)
    return CUDA_ERROR_INVALID_VALUE;
  fk_pool* p = calloc(1, sizeof *p);
  if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g.mu);
  if (g.npools == 64) {
    pthread_mutex_unlock(&g.mu);
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  p->device = props->location.id;
  p->id = g.npools + 1;
  snprintf(p->name, sizeof p->name, "pool%d", p->id);
  g.pools[g.npools++] = p; /* kept (destroyed-marked) so handles stay readable */
  pthread_mutex_unlock(&g.mu);
  fk_log("  -> pool=%s", p->name);
  *pool = (CUmemoryPool)p;
  return CUDA_SUCCESS;
}

static CUresult fk_cuMemPoolDestroy(CUmemoryPool pool) {
  fk_pool* p = (fk_pool*)pool;
  ENTER("cuMemPoolDestroy", "pool=%s", p ? p->name : "null");
  if (p == NULL || p->is_default || p->destroyed) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g.mu);
  p->destroyed = 1;
  p->reserved = 0;
  pthread_mutex_unlock(&g.mu);
  return CUDA_SUCCESS;
}

static CUresult fk_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  fk_pool* p = (fk_pool*)pool;
  ENTER("cuMemPoolSetAttribute", "pool=%s attr=%d value=%llu", p ? p->name : "null", (int)attr,
        value ? (unsigned long long)*(uint64_t*)value : 0ull);
  if (p == NULL || value == NULL || p->destroyed) return CUDA_ERROR_INVALID_VALUE;
  if (attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) return CUDA_SUCCESS; /* accepted, not modelled */
  pthread_mutex_lock(&g.mu);
  p->threshold = *(uint64_t*)value;
  if (p->reserved > p->threshold) p->reserved = p->threshold;
  pthread_mutex_unlock(&g.mu);
  return CUDA_SUCCESS;
}

static CUresult fk_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  fk_pool* p = (fk_pool*)pool;
  ENTER("cuMemPoolGetAttribute", "pool=%s attr=%d", p ? p->name : "null", (int)attr);
  if (p == NULL || value == NULL) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g.mu);
  uint64_t v = 0;
  switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v = p->threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: v = p->reserved + p->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v = p->used; break;
    default: break;
  }
  pthread_mutex_unlock(&g.mu);
  *(uint64_t*)value = v;
  return CUDA_SUCCESS;
}

static CUresult fk_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* desc, size_t count) {
  fk_pool* p = (fk_pool*)pool;
  ENTER("cuMemPoolSetAccess", "pool=%s device=%d flags=%d count=%zu", p ? p->name : "null",
        desc && count ? desc->location.id : -1, desc && count ? (int)desc->flags : -1, count);
  if (p == NULL || (desc == NULL && count != 0)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
        desc[i].location.id >= g.devices)
      return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static CUresult fk_cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  fk_pool* p = (fk_pool*)pool;
  ENTER("cuMemPoolTrimTo", "pool=%s keep=%zu", p ? p->name : "null", keep);
  if (p == NULL || p->destroyed) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g.mu);
  if (p->reserved > keep) p->reserved = keep;
  pthread_mutex_unlock(&g.mu);
  return CUDA_SUCCESS;
}

static CUresult fk_cuMemHostAlloc(void** p, size_t n, unsigned flags) {
  ENTER_CTX("cuMemHostAlloc", "bytes=%zu flags=%u", n, flags);
  uintptr_t a = 0;
  pthread_mutex_lock(&g.mu);
  const CUresult r = alloc_locked(t_current->device, n, NULL, 1, &a);
  pthread_mutex_unlock(&g.mu);
  if (r == CUDA_SUCCESS) *p = (void*)a;
  return r;
}

static CUresult fk_cuMemFreeHost(void* p) {
  ENTER_CTX("cuMemFreeHost", NULL);
  pthread_mutex_lock(&g.mu);
  fk_alloc* a = find_alloc_locked((uintptr_t)p, 0);
  const int ok = a != NULL && a->base == (uintptr_t)p && a->pinned;
  if (ok) free_locked(a);
  pthread_mutex_unlock(&g.mu);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Mapped pinned memory has the same address on the device. */
static CUresult fk_cuMemHostGetDevicePointer(CUdeviceptr* d, void* p, unsigned flags) {
  ENTER_CTX("cuMemHostGetDevicePointer", NULL);
  if (flags != 0 || !is_pinned_host(p, 1)) return CUDA_ERROR_INVALID_VALUE;
  *d = (CUdeviceptr)p;
  return CUDA_SUCCESS;
}

/* ---- streams and stream work --------------------------------------------- */

static CUresult fk_cuStreamCreate(CUstream* s, unsigned flags) {
  ENTER_CTX("cuStreamCreate", "flags=%u", flags);
  fk_stream* st = stream_new(t_current);
  if (st == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *s = (CUstream)st;
  return CUDA_SUCCESS;
}

/* Returns at once; the stream finishes its work, then goes away. */
static CUresult fk_cuStreamDestroy(CUstream s) {
  ENTER_CTX("cuStreamDestroy", NULL);
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  fk_op* op = op_new(OP_DESTROY);
  return op ? submit(s, op) : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult fk_cuStreamSynchronize(CUstream s) {
  ENTER_CTX("cuStreamSynchronize", NULL);
  stream_drain(stream_of(s));
  return sticky_of(t_current);
}

static CUresult copy(CUstream s, void* dst, const void* src, size_t n, const void* host) {
  /* Pageable host memory: the driver stages it, so the call returns only
   * once the stream reached the copy (and the copy is done). */
  if (host != NULL && !is_pinned_host(host, n)) {
    stream_drain(stream_of(s));
    memmove(dst, src, n);
    write_through((uintptr_t)dst, n);
    return CUDA_SUCCESS;
  }
  fk_op* op = op_new(OP_COPY);
  if (op == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  op->dst = dst;
  op->src = src;
  op->n = n;
  return submit(s, op);
}

static CUresult fk_cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  ENTER_CTX("cuMemcpyHtoDAsync", "bytes=%zu pinned=%d", n, is_pinned_host(src, n));
  if (!device_range(dst, n, NULL)) return CUDA_ERROR_INVALID_VALUE;
  return copy(s, (void*)dst, src, n, src);
}

static CUresult fk_cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  ENTER_CTX("cuMemcpyDtoHAsync", "bytes=%zu pinned=%d", n, is_pinned_host(dst, n));
  if (!device_range(src, n, NULL)) return CUDA_ERROR_INVALID_VALUE;
  return copy(s, dst, (const void*)src, n, dst);
}

static CUresult fk_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  ENTER_CTX("cuMemcpyDtoDAsync", "bytes=%zu", n);
  if (!device_range(dst, n, NULL) || !device_range(src, n, NULL)) return CUDA_ERROR_INVALID_VALUE;
  return copy(s, (void*)dst, (const void*)src, n, NULL);
}

static CUresult fk_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
                                     CUstream s) {
  ENTER_CTX("cuMemcpyPeerAsync", "bytes=%zu", n);
  if (dctx == NULL || sctx == NULL || !device_range(dst, n, NULL) || !device_range(src, n, NULL))
    return CUDA_ERROR_INVALID_VALUE;
  return copy(s, (void*)dst, (const void*)src, n, NULL);
}

static CUresult memset_async(CUdeviceptr dst, uint32_t value, unsigned size, size_t count, CUstream s) {
  if (!device_range(dst, count * size, NULL)) return CUDA_ERROR_INVALID_VALUE;
  fk_op* op = op_new(OP_MEMSET);
  if (op == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  op->dst = (void*)dst;
  op->value = value;
  op->flags = size;
  op->n = count;
  return submit(s, op);
}

static CUresult fk_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  ENTER_CTX("cuMemsetD8Async", "count=%zu", n);
  return memset_async(d, v, 1, n, s);
}
static CUresult fk_cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
  ENTER_CTX("cuMemsetD16Async", "count=%zu", n);
  return memset_async(d, v, 2, n, s);
}
static CUresult fk_cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) {
  ENTER_CTX("cuMemsetD32Async", "count=%zu", n);
  return memset_async(d, v, 4, n, s);
}

static CUresult fk_cuEventCreate(CUevent* e, unsigned flags) {
  ENTER_CTX("cuEventCreate", "flags=%u", flags);
  fk_event* ev = calloc(1, sizeof *ev);
  if (ev == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  ev->ctx = t_current;
  ev->flags = flags;
  ev->refs = 1;
  *e = (CUevent)ev;
  return CUDA_SUCCESS;
}

/* Allowed with a record or wait still queued: freed once they ran. */
static CUresult fk_cuEventDestroy(CUevent e) {
  ENTER_CTX("cuEventDestroy", NULL);
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_ev_mu);
  event_unref_locked((fk_event*)e);
  pthread_mutex_unlock(&g_ev_mu);
  return CUDA_SUCCESS;
}

static CUresult fk_cuEventRecord(CUevent e, CUstream s) {
  ENTER_CTX("cuEventRecord", NULL);
  fk_event* ev = (fk_event*)e;
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  fk_op* op = op_new(OP_RECORD);
  if (op == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_ev_mu);
  op->value = ++ev->recorded;
  ++ev->refs;
  pthread_mutex_unlock(&g_ev_mu);
  op->event = ev;
  return submit(s, op);
}

static CUresult fk_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  ENTER_CTX("cuStreamWaitEvent", "flags=%u", flags);
  fk_event* ev = (fk_event*)e;
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  fk_op* op = op_new(OP_WAIT_EVENT);
  if (op == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_ev_mu);
  op->value = ev->recorded; /* the record made before this call */
  ++ev->refs;
  pthread_mutex_unlock(&g_ev_mu);
  op->event = ev;
  return submit(s, op);
}

static CUresult fk_cuEventSynchronize(CUevent e) {
  ENTER_CTX("cuEventSynchronize", NULL);
  fk_event* ev = (fk_event*)e;
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_ev_mu);
  const uint64_t target = ev->recorded;
  while (ev->done < target) pthread_cond_wait(&g_ev_cv, &g_ev_mu);
  pthread_mutex_unlock(&g_ev_mu);
  return sticky_of(ev->ctx);
}

static CUresult fk_cuEventQuery(CUevent e) {
  ENTER_CTX("cuEventQuery", NULL);
  fk_event* ev = (fk_event*)e;
  if (ev == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_ev_mu);
  const int done = ev->done >= ev->recorded;
  pthread_mutex_unlock(&g_ev_mu);
  return done ? sticky_of(ev->ctx) : CUDA_ERROR_NOT_READY;
}

static CUresult fk_cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  ENTER_CTX("cuEventElapsedTime", NULL);
  fk_event *a = (fk_event*)start, *b = (fk_event*)end;
  if (ms == NULL || a == NULL || b == NULL) return CUDA_ERROR_INVALID_VALUE;
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_ev_mu);
  CUresult r = CUDA_SUCCESS;
  if (a->recorded == 0 || b->recorded == 0) r = CUDA_ERROR_INVALID_HANDLE;
  else if (a->done < a->recorded || b->done < b->recorded) r = CUDA_ERROR_NOT_READY;
  else *ms = (float)((double)((int64_t)(b->time_ns - a->time_ns)) / 1e6);
  pthread_mutex_unlock(&g_ev_mu);
  return r;
}

static CUresult fk_cuLaunchHostFunc(CUstream s, CUhostFn fn, void* user) {
  ENTER_CTX("cuLaunchHostFunc", NULL);
  if (fn == NULL) return CUDA_ERROR_INVALID_VALUE;
  fk_op* op = op_new(OP_HOST_FN);
  if (op == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  op->fn = fn;
  op->user = user;
  return submit(s, op);
}

static CUresult fk_cuStreamWaitValue64(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned flags) {
  ENTER_CTX("cuStreamWaitValue64", "value=%llu flags=%u", (unsigned long long)value, flags);
  if (addr % 8 != 0 || !device_range(addr, 8, NULL)) return CUDA_ERROR_INVALID_VALUE;
  fk_op* op = op_new(OP_WAIT_VALUE);
  if (op == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  op->dst = (void*)addr;
  op->value = value;
  op->flags = flags;
  return submit(s, op);
}

static CUresult fk_cuStreamWriteValue64(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned flags) {
  ENTER_CTX("cuStreamWriteValue64", "value=%llu flags=%u", (unsigned long long)value, flags);
  if (addr % 8 != 0 || !device_range(addr, 8, NULL)) return CUDA_ERROR_INVALID_VALUE;
  fk_op* op = op_new(OP_WRITE_VALUE);
  if (op == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  op->dst = (void*)addr;
  op->value = value;
  return submit(s, op);
}

/* ---- virtual memory management and multicast: the entry points ---------- */

static CUresult fk_cuMemCreate(CUmemGenericAllocationHandle* h, size_t size, const CUmemAllocationProp* prop,
                               unsigned long long flags) {
  ENTER("cuMemCreate", "bytes=%zu device=%d", size, prop ? prop->location.id : -1);
  if (h == NULL || prop == NULL || flags != 0 || size == 0 || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.id < 0 || prop->location.id >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  fk_vmm* v = calloc(1, sizeof *v);
  if (v == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  v->device = prop->location.id;
  v->size = size;
  pthread_mutex_lock(&g.mu);
  CUresult r = in_use_locked(v->device) + size > g.memory ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
  /* A memfd: its pages can be mapped at several addresses (sparse until written). */
  if (r == CUDA_SUCCESS) {
    v->fd = memfd_create("fake_cuda_mem", 0);
    if (v->fd < 0 || ftruncate(v->fd, (off_t)size) != 0) r = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (r == CUDA_SUCCESS) {
    v->backing = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
    if (v->backing == MAP_FAILED) r = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (r != CUDA_SUCCESS) {
    if (v->fd > 0) close(v->fd);
    free(v);
  } else {
    memset(v->backing, 0xA5, size); /* not zero: reads of unwritten memory show */
    g.used[v->device] += size;
    v->next = g.vmms;
    g.vmms = v;
    *h = (CUmemGenericAllocationHandle)(uintptr_t)v;
  }
  pthread_mutex_unlock(&g.mu);
  return r;
}

/* Physical memory or a multicast object; gone once unmapped and unbound
 * (a multicast object: once every member's memory is unbound from it). */
static CUresult fk_cuMemRelease(CUmemGenericAllocationHandle h) {
  ENTER("cuMemRelease", NULL);
  pthread_mutex_lock(&g.mu);
  fk_vmm* v = vmm_of_locked(h);
  const int ok = v != NULL && !v->released;
  if (ok) {
    v->released = 1;
    vmm_maybe_free_locked(v);
  }
  pthread_mutex_unlock(&g.mu);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult fk_cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t align, CUdeviceptr addr,
                                       unsigned long long flags) {
  ENTER("cuMemAddressReserve", "bytes=%zu align=%zu", size, align);
  if (ptr == NULL || size == 0 || addr != 0 || flags != 0 || (align & (align - 1)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (align < 4096) align = 4096;
  fk_resv* r = calloc(1, sizeof *r);
  if (r == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  r->raw_size = size + align;
  r->raw = mmap(NULL, r->raw_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r->raw == MAP_FAILED) {
    free(r);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  r->base = ((uintptr_t)r->raw + align - 1) & ~(uintptr_t)(align - 1);
  r->size = size;
  pthread_mutex_lock(&g.mu);
  r->next = g.resvs;
  g.resvs = r;
  pthread_mutex_unlock(&g.mu);
  *ptr = r->base;
  return CUDA_SUCCESS;
}

/* The mapping entry starting at `p` (mapped or not yet accessible). */
static fk_alloc* mapping_at_locked(uintptr_t p, size_t size) {
  for (fk_alloc* a = g.allocs; a; a = a->next)
    if (a->vmm != NULL && a->base == p && a->size == size) return a;
  return NULL;
}

/* Refused while anything is still mapped in the range. */
static CUresult fk_cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  ENTER("cuMemAddressFree", "ptr=0x%llx bytes=%zu", (unsigned long long)ptr, size);
  pthread_mutex_lock(&g.mu);
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  for (fk_resv** pp = &g.resvs; *pp; pp = &(*pp)->next) {
    fk_resv* v = *pp;
    if (v->base != ptr || v->size != size) continue;
    int mapped = 0;
    for (fk_alloc* a = g.allocs; a; a = a->next)
      mapped |= a->vmm != NULL && a->base >= v->base && a->base < v->base + v->size;
    if (mapped) break;
    *pp = v->next;
    munmap(v->raw, v->raw_size);
    free(v);
    r = CUDA_SUCCESS;
    break;
  }
  pthread_mutex_unlock(&g.mu);
  return r;
}

static CUresult fk_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                            unsigned long long flags) {
  ENTER("cuMemMap", "ptr=0x%llx bytes=%zu", (unsigned long long)ptr, size);
  pthread_mutex_lock(&g.mu);
  fk_vmm* v = vmm_of_locked(h);
  CUresult r = CUDA_SUCCESS;
  fk_resv* resv = NULL;
  for (fk_resv* x = g.resvs; x; x = x->next)
    if (ptr >= x->base && ptr - x->base <= x->size && size <= x->size - (ptr - x->base)) resv = x;
  if (v == NULL || v->released || flags != 0 || resv == NULL || size == 0 || offset + size > v->size)
    r = CUDA_ERROR_INVALID_VALUE;
  else if (v->is_multicast && v->joined < v->team)
    r = CUDA_ERROR_NOT_PERMITTED; /* the driver blocks until the team is complete */
  for (fk_alloc* a = g.allocs; r == CUDA_SUCCESS && a; a = a->next)
    if (a->vmm != NULL && a->base < ptr + size && ptr < a->base + a->size) r = CUDA_ERROR_INVALID_VALUE;
  fk_alloc* a = r == CUDA_SUCCESS ? calloc(1, sizeof *a) : NULL;
  if (r == CUDA_SUCCESS && a == NULL) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS) {
    /* Physical memory: its own pages; a multicast object: a buffer whose
     * writes write_through() forwards to the members. */
    void* m = v->is_multicast
                  ? mmap((void*)ptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
                  : mmap((void*)ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, v->fd, (off_t)offset);
    if (m == MAP_FAILED) {
      free(a);
      r = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (r == CUDA_SUCCESS) {
    a->base = ptr;
    a->size = size;
    a->device = v->device;
    a->vmm = v;
    a->vmm_offset = offset;
    a->next = g.allocs;
    g.allocs = a;
    ++v->maps;
  }
  pthread_mutex_unlock(&g.mu);
  return r;
}

static CUresult fk_cuMemUnmap(CUdeviceptr ptr, size_t size) {
  ENTER("cuMemUnmap", "ptr=0x%llx bytes=%zu", (unsigned long long)ptr, size);
  pthread_mutex_lock(&g.mu);
  fk_alloc* a = mapping_at_locked(ptr, size);
  if (a != NULL) {
    for (fk_alloc** pp = &g.allocs; *pp; pp = &(*pp)->next)
      if (*pp == a) {
        *pp = a->next;
        break;
      }
    /* Back to a bare reservation. */
    mmap((void*)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    --a->vmm->maps;
    vmm_maybe_free_locked(a->vmm);
    free(a);
  }
  pthread_mutex_unlock(&g.mu);
  return a != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult fk_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  ENTER("cuMemSetAccess", "ptr=0x%llx bytes=%zu device=%d", (unsigned long long)ptr, size,
        desc && count ? desc->location.id : -1);
  if (desc == NULL || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
        desc[i].location.id >= g.devices)
      return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&g.mu);
  fk_alloc* a = mapping_at_locked(ptr, size);
  if (a != NULL) {
    a->accessible = 1;
    if (a->vmm->is_multicast) a->device = desc[0].location.id;
  }
  pthread_mutex_unlock(&g.mu);
  return a != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult fk_cuMulticastGetGranularity(size_t* gran, const CUmulticastObjectProp* prop,
                                             CUmulticastGranularity_flags option) {
  ENTER("cuMulticastGetGranularity", "devices=%u bytes=%zu option=%d", prop ? prop->numDevices : 0,
        prop ? prop->size : 0, (int)option);
  if (gran == NULL || prop == NULL) return CUDA_ERROR_INVALID_VALUE;
  *gran = option == CU_MULTICAST_GRANULARITY_RECOMMENDED ? g.mc_granularity : (size_t)64 << 10;
  return CUDA_SUCCESS;
}

static CUresult fk_cuMulticastCreate(CUmemGenericAllocationHandle* h, const CUmulticastObjectProp* prop) {
  ENTER("cuMulticastCreate", "devices=%u bytes=%zu handle_types=%llu", prop ? prop->numDevices : 0,
        prop ? prop->size : 0, prop ? (unsigned long long)prop->handleTypes : 0ull);
  if (!g.multicast) return CUDA_ERROR_NOT_SUPPORTED;
  if (h == NULL || prop == NULL || prop->numDevices == 0 || prop->size == 0 || prop->size % (64 << 10) != 0 ||
      prop->flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  fk_vmm* v = calloc(1, sizeof *v);
  if (v == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  v->is_multicast = 1;
  v->device = -1;
  v->size = prop->size;
  v->team = prop->numDevices;
  pthread_mutex_lock(&g.mu);
  v->next = g.vmms;
  g.vmms = v;
  pthread_mutex_unlock(&g.mu);
  *h = (CUmemGenericAllocationHandle)(uintptr_t)v;
  return CUDA_SUCCESS;
}

static CUresult fk_cuMulticastAddDevice(CUmemGenericAllocationHandle h, CUdevice dev) {
  ENTER("cuMulticastAddDevice", "device=%d", dev);
  if (dev < 0 || dev >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&g.mu);
  fk_vmm* v = vmm_of_locked(h);
  CUresult r = CUDA_SUCCESS;
  if (v == NULL || !v->is_multicast || v->member[dev] || v->joined >= v->team) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    v->member[dev] = 1;
    ++v->joined;
  }
  pthread_mutex_unlock(&g.mu);
  return r;
}

static CUresult fk_cuMulticastBindMem(CUmemGenericAllocationHandle mc, size_t mc_offset,
                                      CUmemGenericAllocationHandle mem, size_t mem_offset, size_t size,
                                      unsigned long long flags) {
  ENTER("cuMulticastBindMem", "bytes=%zu", size);
  pthread_mutex_lock(&g.mu);
  fk_vmm* v = vmm_of_locked(mc);
  fk_vmm* m = vmm_of_locked(mem);
  CUresult r = CUDA_SUCCESS;
  if (v == NULL || m == NULL || !v->is_multicast || m->is_multicast || flags != 0 || mc_offset != 0 ||
      mem_offset != 0 || size == 0 || size > v->size || size > m->size || m->bound_to != NULL)
    r = CUDA_ERROR_INVALID_VALUE; /* offsets other than 0 are not modelled */
  else if (v->joined < v->team)
    r = CUDA_ERROR_NOT_PERMITTED; /* the driver blocks until the team is complete */
  else if (!v->member[m->device] || v->bound[m->device] != NULL)
    r = CUDA_ERROR_INVALID_DEVICE;
  if (r == CUDA_SUCCESS) {
    v->bound[m->device] = m;
    m->bound_to = v;
  }
  pthread_mutex_unlock(&g.mu);
  return r;
}

static CUresult fk_cuMulticastUnbind(CUmemGenericAllocationHandle mc, CUdevice dev, size_t mc_offset, size_t size) {
  ENTER("cuMulticastUnbind", "device=%d bytes=%zu", dev, size);
  if (dev < 0 || dev >= g.devices) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&g.mu);
  fk_vmm* v = vmm_of_locked(mc);
  fk_vmm* m = v != NULL && v->is_multicast ? v->bound[dev] : NULL;
  const int ok = m != NULL && mc_offset == 0 && size <= m->size;
  if (ok) {
    v->bound[dev] = NULL;
    m->bound_to = NULL;
    vmm_maybe_free_locked(m);
  }
  pthread_mutex_unlock(&g.mu);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- modules and kernels ----------------------------------------------------- */

static CUresult fk_cuModuleLoadDataEx(CUmodule* mod, const void* image, unsigned n, CUjit_option* opts,
                                      void** vals) {
  ENTER_CTX("cuModuleLoadDataEx", NULL);
  char* log = NULL;
  size_t log_size = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (opts[i] == CU_JIT_ERROR_LOG_BUFFER) log = vals[i];
    if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) log_size = (size_t)(uintptr_t)vals[i];
  }
  const unsigned char* bytes = image;
  if (bytes[0] == 0x7f && bytes[1] == 'E') {
    if (log && log_size) snprintf(log, log_size, "the fake CUDA driver runs PTX only, not cubin");
    return CUDA_ERROR_INVALID_IMAGE;
  }
  char err[256] = "";
  fk_module* m = parse_ptx(image, err, sizeof err);
  if (m == NULL) {
    if (log && log_size) snprintf(log, log_size, "fake ptx: %s", err);
    fk_log("  -> INVALID_PTX %s", err);
    return CUDA_ERROR_INVALID_PTX;
  }
  *mod = (CUmodule)m;
  return CUDA_SUCCESS;
}

static CUresult fk_cuModuleUnload(CUmodule mod) {
  ENTER_CTX("cuModuleUnload", NULL);
  if (mod == NULL) return CUDA_ERROR_INVALID_HANDLE;
  free_module((fk_module*)mod);
  return CUDA_SUCCESS;
}

static CUresult fk_cuModuleGetFunction(CUfunction* fn, CUmodule mod, const char* name) {
  ENTER_CTX("cuModuleGetFunction", "name=%s", name);
  if (mod == NULL) return CUDA_ERROR_INVALID_HANDLE;
  for (fk_function* f = ((fk_module*)mod)->functions; f; f = f->next)
    if (strcmp(f->name, name) == 0) {
      *fn = (CUfunction)f;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

static CUresult fk_cuFuncSetAttribute(CUfunction fn, CUfunction_attribute attr, int value) {
  fk_function* f = (fk_function*)fn;
  ENTER_CTX("cuFuncSetAttribute", "name=%s attr=%d value=%d", f ? f->name : "null", (int)attr, value);
  if (f == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_SUCCESS; /* not modelled */
  if (value < 0 || value > g.shared_optin) return CUDA_ERROR_INVALID_VALUE;
  __atomic_store_n(&f->max_dynamic_shared, value, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

static CUresult fk_cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned shared, CUstream s, void** params, void** extra) {
  fk_function* f = (fk_function*)fn;
  ENTER_CTX("cuLaunchKernel", "name=%s grid=%ux%ux%u block=%ux%ux%u shared=%u", f ? f->name : "null", gx, gy,
            gz, bx, by, bz, shared);
  if (f == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (extra != NULL) return CUDA_ERROR_NOT_SUPPORTED;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || (uint64_t)bx * by * bz > 1024 ||
      gy > 65535 || gz > 65535 || bz > 64)
    return CUDA_ERROR_INVALID_VALUE;
  /* Above 48 KiB only up to what the kernel opted in to. */
  const unsigned allowed = (unsigned)__atomic_load_n(&f->max_dynamic_shared, __ATOMIC_RELAXED);
  if (shared > FAKE_DEFAULT_SHARED && shared > allowed) return CUDA_ERROR_INVALID_VALUE;
  if (f->nparams > 0 && params == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct fk_launch* l = calloc(1, sizeof *l);
  const int size = f->nparams ? f->param_offset[f->nparams - 1] + f->param_size[f->nparams - 1] : 0;
  unsigned char* buf = calloc(1, (size_t)size + 8);
  if (l == NULL || buf == NULL) {
    free(l);
    free(buf);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  /* The arguments are read now, as the driver copies them at launch. */
  for (int i = 0; i < f->nparams; ++i) memcpy(buf + f->param_offset[i], params[i], (size_t)f->param_size[i]);
  l->f = f;
  l->params = buf;
  const unsigned dims[6] = {gx, gy, gz, bx, by, bz};
  memcpy(l->grid, dims, sizeof l->grid);
  memcpy(l->block, dims + 3, sizeof l->block);
  fk_op* op = op_new(OP_LAUNCH);
  if (op == NULL) {
    free(buf);
    free(l);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  op->launch = l;
  return submit(s, op);
}

/* ---- the lookup ------------------------------------------------------------ */

#define FK(name) {#name, (void*)fk_##name}
static const struct {
  const char* name;
  void* fn;
} kEntryPoints[] = {
    FK(cuInit), FK(cuDriverGetVersion), FK(cuGetErrorName), FK(cuGetErrorString), FK(cuDeviceGet),
    FK(cuDeviceGetCount), FK(cuDeviceGetName), FK(cuDeviceGetAttribute), FK(cuDeviceTotalMem),
    FK(cuDeviceCanAccessPeer), FK(cuDevicePrimaryCtxRetain), FK(cuDevicePrimaryCtxRelease), FK(cuCtxGetCurrent),
    FK(cuCtxSetCurrent), FK(cuCtxEnablePeerAccess), FK(cuCtxSynchronize), FK(cuMemGetInfo), FK(cuMemAlloc),
    FK(cuMemFree), FK(cuMemAllocAsync), FK(cuMemAllocFromPoolAsync), FK(cuMemFreeAsync),
    FK(cuPointerGetAttribute), FK(cuDeviceGetDefaultMemPool), FK(cuMemPoolCreate), FK(cuMemPoolDestroy),
    FK(cuMemPoolSetAttribute), FK(cuMemPoolGetAttribute), FK(cuMemPoolSetAccess), FK(cuMemPoolTrimTo),
    FK(cuMemHostAlloc), FK(cuMemFreeHost), FK(cuMemHostGetDevicePointer), FK(cuStreamCreate),
    FK(cuStreamDestroy), FK(cuStreamSynchronize), FK(cuStreamWaitEvent), FK(cuMemcpyHtoDAsync),
    FK(cuMemcpyDtoHAsync), FK(cuMemcpyDtoDAsync), FK(cuMemcpyPeerAsync), FK(cuMemsetD8Async),
    FK(cuMemsetD16Async), FK(cuMemsetD32Async), FK(cuEventCreate), FK(cuEventDestroy), FK(cuEventRecord),
    FK(cuEventSynchronize), FK(cuEventQuery), FK(cuEventElapsedTime), FK(cuLaunchHostFunc),
    FK(cuStreamWaitValue64), FK(cuStreamWriteValue64), FK(cuModuleLoadDataEx), FK(cuModuleUnload),
    FK(cuModuleGetFunction), FK(cuFuncSetAttribute), FK(cuLaunchKernel), FK(cuMemCreate), FK(cuMemRelease),
    FK(cuMemAddressReserve), FK(cuMemAddressFree), FK(cuMemMap), FK(cuMemUnmap), FK(cuMemSetAccess),
    FK(cuMulticastGetGranularity), FK(cuMulticastCreate), FK(cuMulticastAddDevice), FK(cuMulticastBindMem),
    FK(cuMulticastUnbind),
};
#undef FK

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  (void)version;
  (void)flags;
  pthread_once(&g.once, fk_configure);
  if (__atomic_load_n(&g.torn_down, __ATOMIC_SEQ_CST)) {
    fprintf(stderr, "FAKE_CUDA: call after teardown: cuGetProcAddress_v2(%s)\n", symbol);
    return CUDA_ERROR_DEINITIALIZED;
  }
  for (size_t i = 0; i < sizeof kEntryPoints / sizeof kEntryPoints[0]; ++i)
    if (strcmp(kEntryPoints[i].name, symbol) == 0 && !fake_listed("FAKE_CUDA_OMIT", symbol)) {
      *pfn = kEntryPoints[i].fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  *pfn = NULL;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}
