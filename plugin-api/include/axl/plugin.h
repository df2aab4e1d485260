/* axl/plugin.h: the backend plugin ABI, version 1.5.
 *
 * A backend is a shared object named libaxl_plugin_<name>.so that exports one
 * symbol, axl_plugin_negotiate. Everything else reaches the core through the
 * function table the plugin returns from it. C99; depends only on <stdint.h>,
 * <stddef.h>, axl/enums.h and axl/status.h. The versioning policy and the
 * changelog are in docs/abi.md.
 *
 * Rules every plugin follows (docs/plugin-guide.md explains each):
 *  - negotiate has no side effects: no driver calls, no threads, nothing
 *    allocated that outlives the call. Driver initialisation happens in
 *    table->backend_init, which the core calls the first time it needs a
 *    device of this backend.
 *  - Every slot is safe to call from several threads at once on different
 *    objects. The core serialises enqueues on one queue, so a plugin may
 *    assume a single submitting thread per queue, unless it sets
 *    AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE (axl/enums.h, minor 5): then its
 *    queue slots take concurrent calls on one queue and the core spends no
 *    lock of its own on an enqueue.
 *  - No C++ exception, abort() or exit() crosses this boundary. On failure a
 *    slot returns a status and, first, may call host->report_error with the
 *    native code and a message.
 *  - Plugin threads start no earlier than backend_init and are joined in
 *    backend_shutdown, never in static destructors.
 *  - Plugins log through host->log, never to stdout/stderr.
 *
 * Whose duty each rule is: the core checks every argument an application
 * passes through axl.h before it calls a slot (handles, ranges, sizes and
 * alignments, e.g. a fill's size being a multiple of its pattern), so a slot
 * may rely on what its comment below says the core guarantees. The plugin
 * reports what only it can know: failures of its driver, and failures of
 * work that ran after its enqueue returned (queue_synchronize,
 * event_synchronize); the core passes those statuses on unchanged.
 *
 * Memory addresses: device memory is named by a 64-bit device address
 * (axl_devaddr). On backends whose device memory is host memory (cpu) it is
 * the host pointer cast to an integer; elsewhere it is opaque to the core and
 * never dereferenced by it.
 */
#ifndef AXL_PLUGIN_H_
#define AXL_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#include "axl/enums.h" /* constants shared with axl.h: AXL_LOG_*, AXL_TRACE_*,
                            AXL_MEMCPY_*, AXL_PLUGIN_FLAG_*, AXL_MODULE_FORMAT_*,
                            AXL_SOURCE_LANGUAGE_*, AXL_TEST_KERNEL_* */
#include "axl/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AXL_PLUGIN_ABI_MAJOR 1
#define AXL_PLUGIN_ABI_MINOR 5

/* The entry point's name, for dlsym. */
#define AXL_PLUGIN_ENTRY_SYMBOL "axl_plugin_negotiate"

#if defined(__GNUC__)
#define AXL_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define AXL_PLUGIN_EXPORT
#endif

/* A device address: see the header comment. 0 is never a valid allocation. */
typedef uint64_t axl_devaddr;

/* Plugin-owned objects, opaque to the core. */
typedef struct axl_pdevice_s* axl_pdevice;
typedef struct axl_pqueue_s* axl_pqueue;
typedef struct axl_pevent_s* axl_pevent;
typedef struct axl_pflag_s* axl_pflag;
typedef struct axl_pmodule_s* axl_pmodule;
typedef struct axl_pkernel_s* axl_pkernel;
typedef struct axl_pmulticast_s* axl_pmulticast; /* ABI 1.4 */

/* ------------------------------------------------------------------------ */
/* Host services: what the core offers the plugin.                           */
/* ------------------------------------------------------------------------ */

/* One operation a plugin enqueued while tracing was on. The plugin fills it
 * on the enqueuing thread, before the enqueue slot returns; the core copies
 * what it needs during the call, so every pointer may be stack memory. Fields
 * that do not apply to the kind are zero. */
typedef struct axl_trace_record {
  size_t struct_size;        /* sizeof(axl_trace_record) */
  uint64_t queue_trace_id;   /* axl_queue_desc.trace_id of the queue */
  int32_t kind;              /* AXL_TRACE_* */
  int32_t memcpy_kind;       /* AXL_MEMCPY_*; NONE unless kind is MEMCPY */
  const char* name;          /* kernel name or driver API name, e.g.
                                "cuMemcpyHtoDAsync"; NUL-terminated */
  uint32_t grid[3];          /* kernel grid in blocks (x, y, z) */
  uint32_t block[3];         /* kernel block in threads (x, y, z) */
  uint64_t shared_mem_bytes; /* dynamic shared memory per block, bytes */
  uint64_t memcpy_bytes;     /* bytes copied */
  uint64_t memset_bytes;     /* bytes filled */
  uint32_t memset_value;     /* fill pattern, low memset_value_size bytes */
  uint32_t memset_value_size;/* pattern width in bytes: 1, 2 or 4 */
  uint64_t args_hash;        /* optional address-free hash of the kernel's
                                scalar arguments; 0 if unused */
} axl_trace_record;

typedef struct axl_host_services {
  size_t struct_size; /* sizeof(axl_host_services) as the core knows it */
  /* Opaque; pass it back as the first argument of every service. It tells
   * the core which plugin is speaking. Valid for the life of the process. */
  void* ctx;
  /* Logs one message at an AXL_LOG_* level. Thread-safe; may be called from
   * any thread, including inside negotiate. */
  void (*log)(void* ctx, int32_t level, const char* message);
  /* Records the detail of the error the calling slot is about to return, in
   * the calling thread's last-error storage. native_code/native_name are the
   * vendor's (e.g. 34, "CUDA_ERROR_STUB_LIBRARY"); native_name may be NULL.
   * A backend without a driver (cpu, virtual) passes 0 and NULL, or, for a
   * failed operating-system call, errno and its name (2, "ENOENT"); the core
   * then shows native code 0 and an empty native name. Call it on the thread
   * that will return the status. */
  void (*report_error)(void* ctx, axl_status status, int64_t native_code,
                       const char* native_name, const char* message);
  /* Reports one enqueued operation to the launch trace. Call only while
   * tracing is on (see set_tracing) and on the enqueuing thread, so that the
   * core's order is the enqueue order. */
  void (*trace_record)(void* ctx, const axl_trace_record* record);
} axl_host_services;

/* ------------------------------------------------------------------------ */
/* Descriptors and property blocks.                                          */
/* ------------------------------------------------------------------------ */

typedef struct axl_plugin_info {
  size_t struct_size;  /* sizeof(axl_plugin_info) */
  const char* name;    /* backend name, [a-z0-9_]+, e.g. "cuda"; must equal the
                          <name> of the file name */
  const char* api;     /* device API, e.g. "cuda", "hip", "cpu", "metal" */
  const char* version; /* plugin version string, free form */
  uint32_t flags;      /* AXL_PLUGIN_FLAG_* */
  uint32_t reserved;   /* zero */
} axl_plugin_info;

/* Device labels, as in MAX: "cpu" for the host, "gpu" for accelerators. */
#define AXL_LABEL_SIZE 16
#define AXL_API_SIZE 16
#define AXL_ARCH_SIZE 64
#define AXL_MODEL_SIZE 256

typedef struct axl_device_properties {
  size_t struct_size;                   /* set by the caller */
  char label[AXL_LABEL_SIZE];           /* "cpu" or "gpu" */
  char api[AXL_API_SIZE];               /* "cpu", "cuda", "hip", ... */
  char architecture_name[AXL_ARCH_SIZE];/* "sm_90", "gfx942"; "" if none */
  char model_name[AXL_MODEL_SIZE];      /* marketing name */
  uint64_t total_memory_bytes;          /* device memory, bytes */
  uint64_t max_single_alloc_bytes;      /* largest one allocation, bytes */
  uint8_t is_host;                      /* 1 for the host CPU */
  uint8_t is_host_unified;              /* 1 if device and host share memory
                                           (an integrated GPU). Reported only:
                                           axl_device_info, axl-info and the
                                           Python Device show it; nothing in
                                           the core or the binding acts on it
                                           (their host paths follow is_host) */
  uint8_t is_compatible;                /* 1 if axl supports the device */
  uint8_t reserved[5];                  /* zero */
} axl_device_properties;

/* Queue creation flags. */
enum { AXL_QUEUE_FLAG_NONE = 0 };

/* axl_queue_desc.full_timeout_ms: a full queue waits without a limit. */
#define AXL_QUEUE_FULL_TIMEOUT_NEVER 0xffffffffu

typedef struct axl_queue_desc {
  size_t struct_size; /* sizeof(axl_queue_desc) */
  uint32_t flags;     /* AXL_QUEUE_FLAG_*; unknown bits: INVALID_ARGUMENT */
  uint32_t reserved;  /* zero */
  /* Core-chosen id the plugin puts in axl_trace_record.queue_trace_id. */
  uint64_t trace_id;
  /* 1.2 fields: read only when struct_size covers them, else taken as 0. */
  /* Most operations pending on the queue at once; an enqueue on a full
   * queue blocks until there is room. 0: the plugin's default (cpu and
   * virtual: 4096). Backends whose driver bounds its streams itself (cuda,
   * hip, level_zero) accept the field and leave the bound to the driver. */
  uint32_t max_pending;
  /* How long an enqueue blocked on a full queue waits, in milliseconds,
   * while the queue makes no progress because its oldest operation waits
   * for a completion flag, before it fails with AXL_ERROR_TIMEOUT (the flag
   * may be one only the blocked thread would write). 0: the plugin's
   * default (cpu and virtual: 10000); AXL_QUEUE_FULL_TIMEOUT_NEVER: no limit.
   * Behind any other operation the enqueue waits as long as it takes. */
  uint32_t full_timeout_ms;
} axl_queue_desc;

/* Event creation flags. */
enum {
  AXL_EVENT_FLAG_NONE = 0,
  /* Record timestamps so elapsed_ms works (CUDA's default, not ours). */
  AXL_EVENT_FLAG_TIMING = 1u << 0
};

typedef struct axl_module_desc {
  size_t struct_size;  /* sizeof(axl_module_desc) */
  const void* data;    /* the module's bytes, read during module_load only;
                          may be NULL when path is set */
  size_t size;         /* bytes at data */
  const char* path;    /* file to load instead of data, or NULL */
  int32_t format;      /* AXL_MODULE_FORMAT_* */
  uint32_t reserved;   /* zero */
} axl_module_desc;

/* A program to compile at run time into a module (ABI 1.1). */
typedef struct axl_compile_desc {
  size_t struct_size;          /* sizeof(axl_compile_desc) */
  const char* source;          /* NUL-terminated program text */
  const char* name;            /* file name used in diagnostics, e.g.
                                  "kernels.cu"; NULL for a default */
  const char* const* options;  /* compiler options, e.g. "-DN=4",
                                  "--use_fast_math"; NULL if num_options 0 */
  uint32_t num_options;        /* entries in options */
  int32_t language;            /* AXL_SOURCE_LANGUAGE_* */
} axl_compile_desc;

/* Kernel argument kinds. */
enum {
  /* value points at an axl_devaddr (8 bytes): a buffer's device address. */
  AXL_ARG_DEVADDR = 0,
  /* value points at size bytes of a plain scalar (int, float, struct). */
  AXL_ARG_SCALAR = 1,
  /* Plugin ABI 1.3: size bytes of memory local to each block (OpenCL's
   * __local kernel parameter, clSetKernelArg with a size and no value);
   * value is NULL. The core passes it only to plugins that answered minor
   * 3 or later. A backend whose kernels have no such parameter (CUDA, HIP:
   * their one dynamic region is shared_mem_bytes) refuses it with
   * AXL_ERROR_INVALID_ARGUMENT naming the argument. */
  AXL_ARG_LOCAL = 2
};

typedef struct axl_kernel_arg {
  int32_t kind;      /* AXL_ARG_* */
  uint32_t size;     /* bytes at value: 8 for DEVADDR; LOCAL: bytes per block */
  const void* value; /* read during the launch call only */
} axl_kernel_arg;

typedef struct axl_launch_config {
  size_t struct_size;        /* sizeof(axl_launch_config) */
  uint32_t grid[3];          /* blocks in x, y, z; each >= 1 */
  uint32_t block[3];         /* threads per block in x, y, z; each >= 1 */
  uint64_t shared_mem_bytes; /* dynamic shared memory per block, bytes */
} axl_launch_config;

/* Host callback enqueued on a queue; runs on a backend thread after all
 * earlier work on the queue. It must not call blocking axl functions. */
typedef void (*axl_host_fn)(void* user_data);

/* ------------------------------------------------------------------------ */
/* The function table.                                                       */
/* ------------------------------------------------------------------------ */

/* AXL_PLUGIN_SLOTS_EXTRA(X): slots a build appends after the list without
 * editing it. Empty unless defined before this header is included; only
 * tests/plugins/slot_append_test.cpp defines it, to check that everything
 * generated from the list grows with it. A real new slot goes into the list. */
#ifndef AXL_PLUGIN_SLOTS_EXTRA
#define AXL_PLUGIN_SLOTS_EXTRA(X)
#endif

/* Every slot returns AXL_SUCCESS or an error status. A NULL slot means the
 * backend does not support the operation; the core then answers
 * AXL_ERROR_UNSUPPORTED naming the slot. Slots marked REQUIRED must be
 * non-NULL or the core refuses the plugin. New slots are only ever appended;
 * the core treats slots past struct_size as NULL.
 *
 * The slots are listed once, here, as
 *
 *   X(name, REQUIRED or OPTIONAL, ABI minor it was added in,
 *     return type, (parameters))
 *
 * in table order, each with its contract in the comment above it. The
 * struct below is generated from the list, and so are the core's required
 * check, the conformance suite's probe and the table fill of plugins/common,
 * so that appending a slot (docs/abi.md, "How to append a slot") is one entry
 * here. A plugin needs none of this: it fills axl_plugin_table by member
 * name like any struct. */
#define AXL_PLUGIN_SLOTS(X)                                                                        \
  /* -- backend ----------------------------------------------------------- */                     \
  /* Initialises the driver and starts plugin threads. Called once                                 \
   * before any device slot (the core serialises it). Returns                                      \
   * AXL_ERROR_BACKEND_UNAVAILABLE with a report_error explaining why when the                     \
   * backend cannot run here. */                                                                   \
  X(backend_init, REQUIRED, 0, axl_status, (void))                                                 \
  /* Stops threads and releases the driver. Called at most once,                                   \
   * after init succeeded, never during process exit. */                                           \
  X(backend_shutdown, REQUIRED, 0, axl_status, (void))                                             \
  /* Number of devices. Called at discovery, before backend_init:                                  \
   * must not initialise a driver where a cheaper way to count exists (so                          \
   * fork() after counting stays safe); such a count may be an estimate.                           \
   * Called again right after a successful backend_init, where the driver's                        \
   * own count replaces the earlier one. AXL_ERROR_BACKEND_UNAVAILABLE with                        \
   * the reason when the backend has no device or cannot run here. */                              \
  X(backend_device_count, REQUIRED, 0, axl_status, (uint32_t* out_count))                          \
  /* Turns launch-trace reporting on (1) or off (0). Plugins check the flag                        \
   * with one relaxed atomic load per enqueue. */                                                  \
  X(backend_set_tracing, OPTIONAL, 0, axl_status, (uint8_t enabled))                               \
  /* Plugin-specific option, e.g. ("virtual_device_count", "2"). Unknown keys                      \
   * answer AXL_ERROR_NOT_FOUND. May be called before backend_init. */                             \
  X(backend_set_option, OPTIONAL, 0, axl_status, (const char* key, const char* value))             \
                                                                                                   \
  /* -- device ------------------------------------------------------------ */                     \
  /* Device `index` < count. Devices live until backend_shutdown. */                               \
  X(device_get, REQUIRED, 0, axl_status, (uint32_t index, axl_pdevice* out_device))                \
  /* Fills *props; props->struct_size is set by the caller and the                                 \
   * plugin writes only fields inside it. */                                                       \
  X(device_get_properties, REQUIRED, 0, axl_status,                                                \
    (axl_pdevice device, axl_device_properties* props))                                            \
  /* Current free and total device memory, bytes. */                                               \
  X(device_get_memory_info, OPTIONAL, 0, axl_status,                                               \
    (axl_pdevice device, uint64_t* out_free, uint64_t* out_total))                                 \
  /* *out = 1 if `device` can read and write `peer`'s memory directly. Both                        \
   * are devices of this backend; device == peer answers 0 (MAX's rule). */                        \
  X(device_can_access_peer, OPTIONAL, 0, axl_status,                                               \
    (axl_pdevice device, axl_pdevice peer, uint8_t* out))                                          \
  /* Lets `device` access `peer`'s memory. Idempotent. */                                          \
  X(device_enable_peer_access, OPTIONAL, 0, axl_status, (axl_pdevice device, axl_pdevice peer))    \
                                                                                                   \
  /* -- memory ------------------------------------------------------------ */                     \
  /* Allocates `bytes` (> 0) of device memory aligned to at least                                  \
   * 256 bytes. AXL_ERROR_OUT_OF_DEVICE_MEMORY when it cannot. */                                  \
  X(memory_alloc, REQUIRED, 0, axl_status,                                                         \
    (axl_pdevice device, uint64_t bytes, axl_devaddr* out_address))                                \
  /* Frees memory from memory_alloc. The core guarantees no queued                                 \
   * work still uses it. */                                                                        \
  X(memory_free, REQUIRED, 0, axl_status, (axl_pdevice device, axl_devaddr address))               \
  /* Allocates `bytes` of page-locked host memory the device can copy from at                      \
   * full speed, aligned to at least 64 bytes. */                                                  \
  X(pinned_alloc, OPTIONAL, 0, axl_status, (axl_pdevice device, uint64_t bytes, void** out_host))  \
  /* Frees memory from pinned_alloc. */                                                            \
  X(pinned_free, OPTIONAL, 0, axl_status, (axl_pdevice device, void* host))                        \
                                                                                                   \
  /* -- queue ------------------------------------------------------------- */                     \
  /* An in-order queue; work runs asynchronously to the caller. */                                 \
  X(queue_create, REQUIRED, 0, axl_status,                                                         \
    (axl_pdevice device, const axl_queue_desc* desc, axl_pqueue* out_queue))                       \
  /* Finishes the queue's pending work, then frees it. */                                          \
  X(queue_destroy, REQUIRED, 0, axl_status, (axl_pqueue queue))                                    \
  /* Blocks until all work enqueued so far has finished. Returns the                               \
   * first error an operation on the queue hit since the last synchronize. */                      \
  X(queue_synchronize, REQUIRED, 0, axl_status, (axl_pqueue queue))                                \
  /* Enqueue: host memory -> device memory, `bytes` > 0. The host                                  \
   * memory must stay valid until the copy ran (the core guarantees it). */                        \
  X(queue_copy_htod, REQUIRED, 0, axl_status,                                                      \
    (axl_pqueue queue, axl_devaddr dst, const void* src, uint64_t bytes))                          \
  /* Enqueue: device memory -> host memory. */                                                     \
  X(queue_copy_dtoh, REQUIRED, 0, axl_status,                                                      \
    (axl_pqueue queue, void* dst, axl_devaddr src, uint64_t bytes))                                \
  /* Enqueue: device memory -> device memory on the same device. */                                \
  X(queue_copy_dtod, REQUIRED, 0, axl_status,                                                      \
    (axl_pqueue queue, axl_devaddr dst, axl_devaddr src, uint64_t bytes))                          \
  /* Enqueue: between two devices of this backend. The queue belongs to one                        \
   * of them. */                                                                                   \
  X(queue_copy_peer, OPTIONAL, 0, axl_status,                                                      \
    (axl_pqueue queue, axl_pdevice dst_device, axl_devaddr dst, axl_pdevice src_device,            \
     axl_devaddr src, uint64_t bytes))                                                             \
  /* Enqueue: repeat the low `pattern_size` (1, 2 or 4) bytes of `pattern`                         \
   * over `bytes` bytes at dst. The core has checked that pattern_size is                          \
   * 1, 2 or 4, that bytes and the offset into the application's buffer                            \
   * are multiples of it, that the pattern fits in it and that the range                           \
   * lies inside the buffer. */                                                                    \
  X(queue_fill, OPTIONAL, 0, axl_status,                                                           \
    (axl_pqueue queue, axl_devaddr dst, uint64_t bytes, uint32_t pattern, uint32_t pattern_size))  \
  /* Enqueue: the event completes when all earlier work has run. */                                \
  X(queue_record_event, REQUIRED, 0, axl_status, (axl_pqueue queue, axl_pevent event))             \
  /* Enqueue: later work waits until `event` (of this backend)                                     \
   * completes. The host does not block. */                                                        \
  X(queue_wait_event, REQUIRED, 0, axl_status, (axl_pqueue queue, axl_pevent event))               \
  /* Enqueue: later work waits until the flag's value is >= `value`. */                            \
  X(queue_wait_flag, OPTIONAL, 0, axl_status, (axl_pqueue queue, axl_pflag flag, uint64_t value))  \
  /* Enqueue: the device stores `value` into the flag after earlier work. */                       \
  X(queue_write_flag, OPTIONAL, 0, axl_status, (axl_pqueue queue, axl_pflag flag, uint64_t value)) \
  /* Enqueue: fn(user_data) runs on a backend thread after earlier work. */                        \
  X(queue_enqueue_host_fn, OPTIONAL, 0, axl_status,                                                \
    (axl_pqueue queue, axl_host_fn fn, void* user_data))                                           \
  /* The native queue handle (CUstream, hipStream_t, ...) or 0 if none. */                         \
  X(queue_get_native_handle, OPTIONAL, 0, axl_status, (axl_pqueue queue, uint64_t* out_handle))    \
  /* Enqueue a kernel launch. args[i].value is read during the call only. */                       \
  X(queue_launch, OPTIONAL, 0, axl_status,                                                         \
    (axl_pqueue queue, axl_pkernel kernel, const axl_launch_config* config,                        \
     const axl_kernel_arg* args, uint32_t num_args))                                               \
                                                                                                   \
  /* -- event ------------------------------------------------------------- */                     \
  /* flags: AXL_EVENT_FLAG_*. */                                                                   \
  X(event_create, REQUIRED, 0, axl_status,                                                         \
    (axl_pdevice device, uint32_t flags, axl_pevent* out_event))                                   \
  /* May be called while a record of the event or a queue's wait on                                \
   * it is still pending (as cuEventDestroy): the plugin keeps what that                           \
   * pending work needs alive and frees it when the work is done. */                               \
  X(event_destroy, REQUIRED, 0, axl_status, (axl_pevent event))                                    \
  /* Blocks until the last record of the event has completed. If work                              \
   * enqueued on that queue before the record failed when it ran, returns                          \
   * its error (the status queue_synchronize would return), with a                                 \
   * report_error: the plugin's duty, the core only passes it on. */                               \
  X(event_synchronize, REQUIRED, 0, axl_status, (axl_pevent event))                                \
  /* AXL_SUCCESS if complete, AXL_ERROR_NOT_READY if not. */                                       \
  X(event_query, REQUIRED, 0, axl_status, (axl_pevent event))                                      \
  /* Milliseconds between two completed, timing-enabled events. The core has                       \
   * already checked both were recorded, completed and have timing. */                             \
  X(event_elapsed_ms, OPTIONAL, 0, axl_status, (axl_pevent start, axl_pevent end, float* out_ms))  \
                                                                                                   \
  /* -- completion flag --------------------------------------------------- */                     \
  /* An 8-byte value in host memory the device can read and write; starts 0. */                    \
  X(flag_create, OPTIONAL, 0, axl_status, (axl_pdevice device, axl_pflag* out_flag))               \
  /* May be called while a queue's wait on or write to the flag is pending;                        \
   * the plugin defers the release until that work is done. */                                     \
  X(flag_destroy, OPTIONAL, 0, axl_status, (axl_pflag flag))                                       \
  /* Device-visible address of the value. */                                                       \
  X(flag_get_device_address, OPTIONAL, 0, axl_status, (axl_pflag flag, axl_devaddr* out))          \
  /* Host-visible address of the value (the core reads and writes it with                          \
   * atomics: acquire loads, release stores). */                                                   \
  X(flag_get_host_address, OPTIONAL, 0, axl_status, (axl_pflag flag, uint64_t** out))              \
                                                                                                   \
  /* -- module and kernel ------------------------------------------------- */                     \
  /* Loads a module from desc's bytes or file. AXL_ERROR_NOT_FOUND when                            \
   * the file does not exist; AXL_ERROR_INVALID_ARGUMENT, without a crash,                         \
   * for bytes or a file that are not a module the backend loads                                   \
   * (truncated ones included). */                                                                 \
  X(module_load, OPTIONAL, 0, axl_status,                                                          \
    (axl_pdevice device, const axl_module_desc* desc, axl_pmodule* out_module))                    \
  /* May be called while launches of its kernels are pending; the plugin                           \
   * defers the unload until they ran. */                                                          \
  X(module_unload, OPTIONAL, 0, axl_status, (axl_pmodule module))                                  \
  /* AXL_ERROR_NOT_FOUND if the module has no kernel of that name. The kernel                      \
   * lives as long as its module. */                                                               \
  X(module_get_kernel, OPTIONAL, 0, axl_status,                                                    \
    (axl_pmodule module, const char* name, axl_pkernel* out_kernel))                               \
  /* Test-only: one of AXL_TEST_KERNEL_*, living until backend_shutdown. */                        \
  X(device_get_test_kernel, OPTIONAL, 0, axl_status,                                               \
    (axl_pdevice device, int32_t which, axl_pkernel* out_kernel))                                  \
                                                                                                   \
  /* -- appended in 1.1 --------------------------------------------------- */                     \
  /* Compiles desc->source for `device` with the backend's run-time compiler                       \
   * (NVRTC on cuda) and loads the result as a module, as module_load would.                       \
   * AXL_ERROR_INVALID_ARGUMENT with the compiler's log in the message when                        \
   * the program does not compile; AXL_ERROR_UNSUPPORTED for a language the                        \
   * backend does not compile; AXL_ERROR_BACKEND_UNAVAILABLE naming what was                       \
   * tried when the compiler library cannot be loaded. */                                          \
  X(module_compile, OPTIONAL, 1, axl_status,                                                       \
    (axl_pdevice device, const axl_compile_desc* desc, axl_pmodule* out_module))                   \
                                                                                                   \
  /* -- appended in 1.4: multicast groups (SymmetricPool) ----------------- */                     \
  /* In the spirit of CUDA's multicast objects (cuMulticastCreate,                                 \
   * cuMulticastAddDevice, cuMulticastBindMem, cuMemMap): a group joins                            \
   * devices of this backend; each has its own (unicast) memory and a                              \
   * mapping of the group's multicast object, through which a store reaches                        \
   * every device's unicast memory at the same offset. A backend fills all                         \
   * four slots or none.                                                                           \
   * *out_supported = 1 if `device` can join a multicast group here (CUDA:                         \
   * CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED and the driver's multicast                            \
   * entry points), else 0. Never allocates. */                                                    \
  X(device_get_multicast_support, OPTIONAL, 4, axl_status,                                         \
    (axl_pdevice device, uint8_t* out_supported))                                                  \
  /* A group over devices[0..num_devices) with `bytes` of memory on each.                          \
   * The core guarantees num_devices >= 2, distinct devices of this backend,                       \
   * bytes > 0 and non-NULL outputs. *out_reserved_bytes: bytes rounded up                         \
   * to the multicast granularity (what each device really holds, >= bytes).                       \
   * AXL_ERROR_UNSUPPORTED naming the device when one has no multicast                             \
   * support; AXL_ERROR_OUT_OF_DEVICE_MEMORY when memory runs out. On                              \
   * failure nothing is left allocated. */                                                         \
  X(multicast_create, OPTIONAL, 4, axl_status,                                                     \
    (const axl_pdevice* devices, uint32_t num_devices, uint64_t bytes, axl_pmulticast* out_group,  \
     uint64_t* out_reserved_bytes))                                                                \
  /* The memory of the group's device `index` (its position in                                     \
   * multicast_create's list; the core checks index < num_devices): its                            \
   * unicast memory and its mapping of the multicast object, each                                  \
   * reserved_bytes long and distinct, 256-byte aligned, valid for copies,                         \
   * fills and kernel arguments on that device's queues until                                      \
   * multicast_destroy. Writes through the multicast address reach every                           \
   * member's unicast memory; reads of it are backend-defined (CUDA: plain                         \
   * loads are undefined, multimem.ld_reduce reduces). */                                          \
  X(multicast_get_addresses, OPTIONAL, 4, axl_status,                                              \
    (axl_pmulticast group, uint32_t index, axl_devaddr* out_unicast, axl_devaddr* out_multicast))  \
  /* Unmaps and frees the group's memory. The core guarantees no queued                            \
   * work still uses any of it. */                                                                 \
  X(multicast_destroy, OPTIONAL, 4, axl_status, (axl_pmulticast group))                            \
                                                                                                   \
  /* Appended slots go here: OPTIONAL, with the new minor. */                                      \
  AXL_PLUGIN_SLOTS_EXTRA(X)

/* 1 for a REQUIRED slot, 0 for an OPTIONAL one: AXL_PLUGIN_SLOT_IS_REQUIRED(req)
 * turns the list's second column into a value. */
#define AXL_PLUGIN_SLOT_REQUIRED_REQUIRED 1
#define AXL_PLUGIN_SLOT_REQUIRED_OPTIONAL 0
#define AXL_PLUGIN_SLOT_IS_REQUIRED(req) AXL_PLUGIN_SLOT_REQUIRED_##req

#define AXL_PLUGIN_SLOT_MEMBER_(name, req, minor, ret, params) ret(*name) params;
typedef struct axl_plugin_table {
  size_t struct_size; /* sizeof(axl_plugin_table) the plugin was built with */
  AXL_PLUGIN_SLOTS(AXL_PLUGIN_SLOT_MEMBER_)
} axl_plugin_table;

/* The slot list as data, for a host or a tool that walks it (the core's
 * loader checks the REQUIRED ones, axl-cts probes each):
 *   static const axl_plugin_slot_info slots[] = {AXL_PLUGIN_SLOT_INFOS};
 * A helper of this header, never passed across the ABI. */
typedef struct axl_plugin_slot_info {
  const char* name; /* the slot's field name in axl_plugin_table */
  size_t offset;    /* offsetof(axl_plugin_table, <name>) */
  int32_t required; /* 1: the core refuses a plugin that leaves it NULL */
  int32_t minor;    /* the ABI minor that appended it */
} axl_plugin_slot_info;
#define AXL_PLUGIN_SLOT_INFO_(name, req, minor, ret, params) \
  {#name, offsetof(axl_plugin_table, name), AXL_PLUGIN_SLOT_IS_REQUIRED(req), minor},
#define AXL_PLUGIN_SLOT_INFOS AXL_PLUGIN_SLOTS(AXL_PLUGIN_SLOT_INFO_)

/* Number of slots in the list (43 since 1.1; 1.2 appended fields, 1.3 an
 * argument kind, no slot; 47 since 1.4). */
#define AXL_PLUGIN_SLOT_ONE_(name, req, minor, ret, params) +1
#define AXL_PLUGIN_SLOT_COUNT (0 AXL_PLUGIN_SLOTS(AXL_PLUGIN_SLOT_ONE_))
/* Slots added in this header's minor or before: all of them, unless a slot
 * was appended without raising AXL_PLUGIN_ABI_MINOR (asserted below). */
#define AXL_PLUGIN_SLOT_KNOWN_(name, req, minor, ret, params) +((minor) <= AXL_PLUGIN_ABI_MINOR)
#define AXL_PLUGIN_SLOT_COUNT_KNOWN_ (0 AXL_PLUGIN_SLOTS(AXL_PLUGIN_SLOT_KNOWN_))

/* ------------------------------------------------------------------------ */
/* Negotiation.                                                              */
/* ------------------------------------------------------------------------ */

typedef struct axl_negotiate_args {
  size_t struct_size;         /* in: sizeof(axl_negotiate_args) of the core */
  uint32_t core_abi_major;    /* in: AXL_PLUGIN_ABI_MAJOR of the core */
  uint32_t core_abi_minor;    /* in: highest minor the core understands */
  const axl_host_services* host; /* in: valid for the life of the process */
  uint32_t plugin_abi_minor;  /* out: min(core minor, plugin's minor) */
  uint32_t reserved;          /* zero */
  const axl_plugin_info* info;    /* out: static storage in the plugin */
  const axl_plugin_table* table;  /* out: static storage in the plugin */
} axl_negotiate_args;

/* The one exported symbol. Returns AXL_SUCCESS, or AXL_ERROR_VERSION_MISMATCH
 * when core_abi_major differs from the plugin's. */
typedef axl_status (*axl_plugin_negotiate_fn)(axl_negotiate_args* args);

AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args);

/* ------------------------------------------------------------------------ */
/* Layout checks: a change to any public struct fails the build.             */
/* ------------------------------------------------------------------------ */
#if defined(__cplusplus)
#define AXL_PLUGIN_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define AXL_PLUGIN_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#if UINTPTR_MAX == 0xffffffffffffffffu
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_trace_record) == 96, "axl_trace_record layout");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_trace_record, name) == 24, "axl_trace_record.name");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_trace_record, shared_mem_bytes) == 56, "axl_trace_record.shared_mem_bytes");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_trace_record, args_hash) == 88, "axl_trace_record.args_hash");
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_host_services) == 40, "axl_host_services layout");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_host_services, trace_record) == 32, "axl_host_services.trace_record");
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_plugin_info) == 40, "axl_plugin_info layout");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_plugin_info, flags) == 32, "axl_plugin_info.flags");
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_device_properties) == 384, "axl_device_properties layout");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_device_properties, total_memory_bytes) == 360, "axl_device_properties.total_memory_bytes");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_device_properties, is_host) == 376, "axl_device_properties.is_host");
/* 1.0: 24 bytes through trace_id; 1.2 appends max_pending, full_timeout_ms. */
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_queue_desc, trace_id) == 16, "axl_queue_desc.trace_id");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_queue_desc, full_timeout_ms) == 28, "axl_queue_desc.full_timeout_ms (1.2)");
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_queue_desc) == 32, "axl_queue_desc layout (1.2)");
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_module_desc) == 40, "axl_module_desc layout");
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_kernel_arg) == 16, "axl_kernel_arg layout");
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_launch_config) == 40, "axl_launch_config layout");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_launch_config, shared_mem_bytes) == 32, "axl_launch_config.shared_mem_bytes");
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_negotiate_args) == 48, "axl_negotiate_args layout");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_negotiate_args, table) == 40, "axl_negotiate_args.table");
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_compile_desc) == 40, "axl_compile_desc layout");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_compile_desc, num_options) == 32, "axl_compile_desc.num_options");
/* The table is struct_size and then one pointer per listed slot, no padding.
 * The last slot of each minor is pinned: 1.0 ends with slot 42
 * (device_get_test_kernel, 344 bytes), 1.1 with slot 43 (module_compile,
 * 352 bytes), 1.4 with slot 47 (multicast_destroy, 384 bytes), so a slot
 * inserted or removed in front of them fails here.
 * Appending a slot adds its own line. */
AXL_PLUGIN_STATIC_ASSERT(sizeof(axl_plugin_table) == 8 + AXL_PLUGIN_SLOT_COUNT * 8, "axl_plugin_table layout: 8 + 8 per slot");
AXL_PLUGIN_STATIC_ASSERT(AXL_PLUGIN_SLOT_COUNT_KNOWN_ == AXL_PLUGIN_SLOT_COUNT, "a slot's minor is above AXL_PLUGIN_ABI_MINOR: raise the minor with the slot");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_plugin_table, device_get_test_kernel) == 8 + 41 * 8, "axl_plugin_table.device_get_test_kernel (end of 1.0)");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_plugin_table, module_compile) == 8 + 42 * 8, "axl_plugin_table.module_compile (end of 1.1)");
AXL_PLUGIN_STATIC_ASSERT(offsetof(axl_plugin_table, multicast_destroy) == 8 + 46 * 8, "axl_plugin_table.multicast_destroy (end of 1.4)");
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AXL_PLUGIN_H_ */
