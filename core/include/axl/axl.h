/* axl/axl.h: the application ABI of libaxl.so, version 1.6.
 *
 * C, stable, versioned (docs/abi.md). Every function that can fail returns
 * an axl_status (axl/status.h); on an error the calling thread's last-error
 * record (axl_last_error) says which backend, which native code and what
 * happened. The others are plain getters that return their answer (a name,
 * a number, a pointer, 0/1) or nothing: the version, status and state
 * names, axl_last_error_message, axl_clear_last_error, axl_device_equal,
 * axl_is_virtual_device_mode, the pure layout queries, axl_kernel_name, the
 * launch-trace and profile-event arrays, and the profiler's level, colour,
 * span, mark, depth and sink calls. They never fail, record no error, and
 * each says what it answers on bad input (a NULL pointer, a released
 * handle): NULL, "" or 0.
 * Every function is safe to call from several threads at once.
 *
 * Errors. The comment of each function names the errors particular to it:
 * "Errors: AXL_ERROR_X when ...", or "Always AXL_SUCCESS", or for a getter
 * "Never fails" and "Bad input: <answer>". These hold for every function
 * that returns a status and are not repeated:
 *  - a handle that is NULL, released or of another kind:
 *    AXL_ERROR_INVALID_HANDLE, worded as "Handles are opaque values" below
 *    says;
 *  - a NULL out-pointer (a parameter named out or out_*, unless its comment
 *    says it may be NULL), or a struct_size below the size of its struct:
 *    AXL_ERROR_INVALID_ARGUMENT;
 *  - the core ran out of host memory: AXL_ERROR_OUT_OF_HOST_MEMORY, from any
 *    function that allocates (every create, enqueue and record does); a C++
 *    exception inside the core or a plugin: AXL_ERROR_INTERNAL.
 * A comment that says "Backend errors" marks a function that reaches a
 * device's backend; it may then also return:
 *  - AXL_ERROR_FORKED when the backend was initialised before fork() and
 *    this is the child;
 *  - the error the backend's initialisation failed with, remembered and
 *    returned again on every use (AXL_ERROR_BACKEND_UNAVAILABLE: no driver
 *    or no device; others as the plugin reported them);
 *  - AXL_ERROR_UNSUPPORTED naming the plugin slot when the backend does not
 *    implement one the call needs;
 *  - any error the plugin returns for the operation, passed through with
 *    the plugin's backend name, native code and message (commonly
 *    AXL_ERROR_OUT_OF_DEVICE_MEMORY, AXL_ERROR_DEVICE_LOST, AXL_ERROR_TIMEOUT
 *    when a bounded queue stays full, see axl_queue_options).
 * A comment that says a function "runs discovery" marks one that may return
 * the error of axl_init (AXL_ERROR_PLUGIN_INVALID).
 *
 * Which comment documents a function: the comment that ends on the line
 * directly above its declaration. The one exception: axl_<object>_release,
 * declared directly below axl_<object>_retain, shares the retain's comment.
 * So every other function has a comment of its own, and removing one
 * leaves its function undocumented rather than silently covered by the
 * comment of the declaration above. tests/core/check_axl_h_errors.py fails
 * when a function's comment names no error (AXL_ERROR_*, "Backend errors")
 * nor says that it cannot fail, or, for a getter, does not say "Never
 * fails" and, if it takes arguments, "Bad input: ...".
 *
 * Handles are reference counted. Functions that return a handle return a new
 * reference the caller releases with axl_<object>_release. A child keeps its
 * parent alive: event -> device, queue -> device, buffer -> device,
 * kernel -> module -> device, device -> backend.
 *
 * Sizes are in bytes unless a name says otherwise; times in milliseconds (ms)
 * or nanoseconds (ns) as named.
 */
#ifndef AXL_AXL_H_
#define AXL_AXL_H_

#include <stddef.h>
#include <stdint.h>

/* The constants both ABIs share (AXL_LOG_*, AXL_TRACE_*, AXL_MEMCPY_*,
 * AXL_PLUGIN_FLAG_*, AXL_MODULE_FORMAT_*, AXL_SOURCE_LANGUAGE_*,
 * AXL_TEST_KERNEL_*). An application never needs axl/plugin.h. */
#include "axl/enums.h"
#include "axl/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define AXL_API __attribute__((visibility("default")))
#else
#define AXL_API
#endif

#define AXL_ABI_MAJOR 1
#define AXL_ABI_MINOR 6

/* Handles are opaque values, not addresses: nothing may be read through one,
 * and its bits mean nothing to the application (they name a slot of the
 * core's handle table and that slot's generation; never NULL). Compare them
 * with == only. A handle stays invalid for the life of the process once its
 * last reference is released: any function given it returns
 * AXL_ERROR_INVALID_HANDLE with "... was already released" in the message
 * (getters that return a pointer or string answer NULL or ""), even after
 * new objects have been created, and releasing it again changes nothing.
 * A handle value is never issued twice. A NULL handle reads "... handle is
 * NULL"; a value the core never issued, or a handle of another kind, reads
 * "... is not a live <object>". Using a handle on one thread while another
 * releases its last reference remains an error the core cannot report. */
typedef struct axl_device_s* axl_device_t;
typedef struct axl_queue_s* axl_queue_t;
typedef struct axl_event_s* axl_event_t;
typedef struct axl_buffer_s* axl_buffer_t;
typedef struct axl_module_s* axl_module_t;
typedef struct axl_kernel_s* axl_kernel_t;
typedef struct axl_flag_s* axl_flag_t;
typedef struct axl_multicast_s* axl_multicast_t; /* ABI 1.5 */
typedef struct axl_launch_trace_s* axl_launch_trace_t;

/* ======================================================================== */
/* Version, errors, logging                                                 */
/* ======================================================================== */

/* The core's version, "major.minor.patch". Static storage. Never fails. */
AXL_API const char* axl_version_string(void);
/* (major << 16) | minor of the application ABI this library implements.
 * Never fails. */
AXL_API uint32_t axl_abi_version(void);

/* "AXL_ERROR_INVALID_ARGUMENT" etc. Static storage. Never fails.
 * Bad input: "AXL_STATUS_UNKNOWN" for a value that is no axl_status. */
AXL_API const char* axl_status_name(axl_status status);

/* Detail of the last error returned on the calling thread. The strings stay
 * valid until the next axl call on this thread that fails. */
typedef struct axl_error_info {
  size_t struct_size;      /* set by the caller: sizeof(axl_error_info) */
  axl_status status;       /* AXL_SUCCESS if no error was recorded */
  int32_t reserved;
  const char* backend;     /* backend name, "" for the core itself */
  int64_t native_code;     /* vendor code, e.g. 34; 0 if none */
  const char* native_name; /* vendor code name, e.g. "CUDA_ERROR_STUB_LIBRARY"; "" if none */
  const char* message;     /* human-readable detail; never NULL */
} axl_error_info;

/* Fills *out with the calling thread's last error. Errors: only the
 * common AXL_ERROR_INVALID_ARGUMENT (out NULL or its struct_size too small),
 * which then replaces the record it was asked for. */
AXL_API axl_status axl_last_error(axl_error_info* out);
/* The message of the last error on this thread ("" if none); valid as the
 * strings of axl_last_error are. Never fails. */
AXL_API const char* axl_last_error_message(void);
/* Forget the calling thread's last error. Never fails. */
AXL_API void axl_clear_last_error(void);

/* AXL_LOG_* levels (axl/enums.h: TRACE 0 ... ERROR 4, OFF 6). The initial
 * level comes from AXL_LOG_LEVEL (default warn); the sink from AXL_LOG_FILE
 * (default stderr). Errors: AXL_ERROR_INVALID_ARGUMENT naming the level
 * unless it is one of those (5 is none). */
AXL_API axl_status axl_set_log_level(int32_t level);

/* ======================================================================== */
/* Plugins and discovery                                                    */
/* ======================================================================== */

/* Runs discovery once (later calls return at once). The functions whose
 * comment says they run discovery call it implicitly. Errors:
 * AXL_ERROR_PLUGIN_INVALID, returned again by every later call, only when
 * AXL_PLUGINS names a plugin that failed to load or a relative path (the
 * detail names the file and the reason). */
AXL_API axl_status axl_init(void);

/* Tells axl that the process is ending, so that exit always ends. Language
 * bindings call it from their exit hook before the objects they own are
 * released (axl.driver: Python's atexit); the core calls it itself from its
 * atexit handler, so a C or C++ program need not.
 *
 * The first call sets one exit deadline, AXL_EXIT_GRACE_MS milliseconds from
 * then (default 2000; 0 to 86400000). Until the deadline, work that can still
 * run does. After this call, releasing the last reference to a queue waits
 * for its pending work only until the deadline; a queue whose work is not
 * done by then (for example one waiting on a completion flag nobody will
 * write) is abandoned: the driver's queue and its worker thread are left to
 * the operating system, and a warning (AXL_LOG_WARN) names the queue, its
 * device, how many operations were pending and the last host-value wait
 * enqueued on it. Memory released after this call while queued work may
 * still use it is freed only if that work finishes by the deadline. The
 * deadline is shared: many stuck queues cost the grace once. The blocking
 * waits (axl_queue_synchronize, axl_device_synchronize,
 * axl_event_synchronize, axl_completion_wait, axl_buffer_host_wait) called
 * after this call return by the deadline, or after a short look past it:
 * AXL_ERROR_TIMEOUT ("did not finish by the exit deadline") when what they
 * wait for has not finished, which is then neither known done nor failed
 * (a buffer is not poisoned by it). So a finalizer that waits for a queue
 * gated forever does not hold exit up. Not bounded: a wait begun before
 * this call, and a host wait that must first record its marker on a full
 * bounded queue (up to AXL_QUEUE_FULL_TIMEOUT_MS). A host function that
 * waits for its own queue, its device or work behind it gets
 * AXL_ERROR_INVALID_STATE at once, before and after this call alike.
 *
 * out_deadline_ns (may be NULL) receives the deadline in CLOCK_MONOTONIC
 * nanoseconds (C++ std::chrono::steady_clock on Linux), for a binding that
 * has waits of its own to bound (the Python layer's pending host
 * functions). Later calls keep the first deadline. Always AXL_SUCCESS. */
AXL_API axl_status axl_process_exit_begin(uint64_t* out_deadline_ns);

/* What happened to one plugin file discovery looked at. */
enum {
  AXL_PLUGIN_STATE_LOADED = 0,      /* negotiated; devices usable */
  AXL_PLUGIN_STATE_SKIPPED = 1,     /* broken: reason says why */
  AXL_PLUGIN_STATE_SHADOWED = 2,    /* same name found earlier */
  AXL_PLUGIN_STATE_DISABLED = 3,    /* AXL_PLUGINS_DISABLE */
  AXL_PLUGIN_STATE_UNAVAILABLE = 4  /* loaded, but backend_init said it cannot
                                       run here (no driver, no device) */
};

typedef struct axl_plugin_record {
  size_t struct_size;   /* set by the caller */
  const char* path;     /* the file; static for the life of the process */
  const char* name;     /* backend name ("" if negotiate never told) */
  const char* api;      /* device api ("" if unknown) */
  const char* version;  /* plugin version string ("" if unknown) */
  uint32_t abi_major;   /* negotiated ABI major (0 if not negotiated) */
  uint32_t abi_minor;   /* negotiated ABI minor */
  int32_t state;        /* AXL_PLUGIN_STATE_* */
  axl_status status;    /* why skipped/unavailable; AXL_SUCCESS if loaded */
  const char* reason;   /* human-readable reason, "" if loaded */
  uint32_t device_count;/* devices it reported (0 unless loaded) */
  uint32_t flags;       /* AXL_PLUGIN_FLAG_* it declared */
} axl_plugin_record;

/* How many plugin files discovery considered. It runs discovery but, unlike
 * the other functions that do, reports the files even when axl_init failed
 * (no AXL_ERROR_PLUGIN_INVALID). Errors: only the common
 * AXL_ERROR_INVALID_ARGUMENT (NULL out_count). */
AXL_API axl_status axl_plugin_count(uint32_t* out_count);
/* The index-th of them, in discovery order; reports like axl_plugin_count.
 * Errors: AXL_ERROR_OUT_OF_RANGE naming the count when index >= count; the
 * common AXL_ERROR_INVALID_ARGUMENT (NULL out, small struct_size). */
AXL_API axl_status axl_plugin_get_record(uint32_t index, axl_plugin_record* out);
/* "loaded", "skipped", "shadowed", "disabled" or "unavailable" for an
 * AXL_PLUGIN_STATE_* value. Static storage. Never fails. Bad input:
 * "unknown" for any other value. */
AXL_API const char* axl_plugin_state_name(int32_t state);
/* The discovery trace (folders searched, files tried, results), one event a
 * line, NUL-terminated. Two-call protocol: with buf NULL or too small,
 * *out_size gets the bytes needed (including the NUL) and buf is left
 * untouched. Like axl_plugin_count, it reports even when axl_init failed.
 * Errors: AXL_ERROR_INVALID_ARGUMENT only for a NULL out_size. */
AXL_API axl_status axl_discovery_log(char* buf, size_t capacity,
                                     size_t* out_size);
/* The backend name that discovery reads from a plugin file's name: the
 * <name> of ".../libaxl_plugin_<name>.so" (only the last path component
 * counts; the file need not exist), copied NUL-terminated into `name`. The
 * loader's own rule, for tools that must agree with it (axl-cts).
 * AXL_ERROR_INVALID_ARGUMENT if path or name is NULL; AXL_ERROR_NOT_FOUND if
 * the file name does not follow the rule (no name is written);
 * AXL_ERROR_OUT_OF_RANGE if `capacity` is less than the name's length plus
 * one (the message says how many bytes it needs). Never runs discovery. */
AXL_API axl_status axl_plugin_name_from_path(const char* path, char* name,
                                             size_t capacity);

/* ======================================================================== */
/* Devices                                                                  */
/* ======================================================================== */

/* Devices are ordered by backend in discovery order, then by the backend's
 * index. A label selects "cpu" (host) or "gpu" (accelerator) devices; NULL
 * selects all. Accelerator `i` below is the i-th device with label "gpu".
 * Runs discovery. Errors: AXL_ERROR_INVALID_ARGUMENT naming a label that is
 * not "cpu", "gpu" or NULL. */
AXL_API axl_status axl_device_count(const char* label, uint32_t* out_count);
/* Initialises the device's backend on first use. Runs discovery. Backend
 * errors (of that backend's initialisation and device creation).
 * Errors: AXL_ERROR_INVALID_ARGUMENT for a bad label as axl_device_count;
 * AXL_ERROR_OUT_OF_RANGE naming the count if index >= count. */
AXL_API axl_status axl_device_get(const char* label, uint32_t index,
                                  axl_device_t* out_device);
/* Devices live for the process: the core keeps a reference of its own.
 * Errors: AXL_ERROR_INVALID_HANDLE also when a release would drop more
 * references than the application obtained ("released more times than it
 * was obtained"). */
AXL_API axl_status axl_device_retain(axl_device_t device);
AXL_API axl_status axl_device_release(axl_device_t device);

typedef struct axl_device_info {
  size_t struct_size;         /* set by the caller */
  const char* backend;        /* plugin name, e.g. "cpu"; static */
  const char* label;          /* "cpu" or "gpu" */
  const char* api;            /* "cpu", "cuda", "hip", "metal", ... */
  const char* architecture_name; /* "sm_90"; "" where none (cpu) */
  const char* model_name;     /* marketing name */
  uint32_t id;                /* index among devices of its label; 0 for cpu */
  uint32_t backend_index;     /* index within its backend */
  uint64_t total_memory_bytes;
  uint64_t max_single_alloc_bytes;
  uint8_t is_host;
  uint8_t is_host_unified;
  uint8_t is_compatible;
  uint8_t reserved[5];
} axl_device_info;

/* Strings are owned by the device and live as long as it. Errors: only the
 * common AXL_ERROR_INVALID_HANDLE and AXL_ERROR_INVALID_ARGUMENT (NULL out,
 * small struct_size); it does not reach the backend. */
AXL_API axl_status axl_device_get_info(axl_device_t device, axl_device_info* out);
/* Free and total device memory in bytes, as the driver reports them.
 * Backend errors. Errors: AXL_ERROR_INVALID_ARGUMENT if either out-pointer
 * is NULL. */
AXL_API axl_status axl_device_get_memory_info(axl_device_t device,
                                              uint64_t* out_free,
                                              uint64_t* out_total);
/* *out = 1 if `device` can access `peer`'s memory directly (MAX's rules:
 * a device and itself 0; host devices and devices of different backends 0,
 * without asking the backend; 0 when the backend has no peer slot).
 * Backend errors (only for two accelerators of one backend). Errors: the
 * common AXL_ERROR_INVALID_HANDLE naming "device" or "peer device". */
AXL_API axl_status axl_device_can_access(axl_device_t device, axl_device_t peer,
                                         uint8_t* out);
/* AXL_SUCCESS at once for a device and itself. Backend errors (a backend
 * without the slot: AXL_ERROR_UNSUPPORTED). Errors: AXL_ERROR_UNSUPPORTED
 * naming both devices when they belong to different backends. */
AXL_API axl_status axl_device_enable_peer_access(axl_device_t device,
                                                 axl_device_t peer);
/* Enables access between every pair of accelerators that can; the error names
 * the first pair that failed, with that failure's status. Runs discovery.
 * Backend errors (of axl_device_get and axl_device_enable_peer_access).
 * AXL_SUCCESS when there are fewer than two accelerators. */
AXL_API axl_status axl_enable_all_peer_access(void);
/* Waits for all work on every queue of the device, then reports a release of
 * the device's memory that failed since (see axl_buffer_release). Backend
 * errors: the first error a queue's synchronize returned. AXL_ERROR_TIMEOUT
 * only once exit began and its deadline passed (axl_process_exit_begin).
 * AXL_ERROR_INVALID_STATE when called from a host function running on one
 * of the device's queues. */
AXL_API axl_status axl_device_synchronize(axl_device_t device);
/* The device's default queue (a new reference). Created with the device.
 * Errors: only the common AXL_ERROR_INVALID_HANDLE and
 * AXL_ERROR_INVALID_ARGUMENT (NULL out_queue). */
AXL_API axl_status axl_device_default_queue(axl_device_t device,
                                            axl_queue_t* out_queue);
/* 1 if both handles name the same device, else 0: the values are compared,
 * nothing is looked up. Never fails. Bad input: compared as values too
 * (NULL and NULL are equal). */
AXL_API int axl_device_equal(axl_device_t a, axl_device_t b);

/* ------------------------------------------------------------------------ */
/* Device specs: "cpu", "gpu", "gpu:0,1", "gpu:all", "0,2" (accelerator ids). */
/* ------------------------------------------------------------------------ */
typedef struct axl_device_spec {
  int32_t is_accelerator; /* 0: cpu, 1: gpu */
  int32_t id;             /* accelerator id; -1 for cpu */
} axl_device_spec;

/* Parses a spec string. gpu:all expands to every accelerator present
 * (runs discovery). Two-call protocol on specs/capacity/out_count (specs
 * untouched when NULL or too small). AXL_ERROR_INVALID_ARGUMENT for a NULL
 * text, and naming the bad token. Whitespace around ids is allowed; the
 * label is case-insensitive; duplicates are kept once, in first-seen order.
 * An id is ASCII digits only (no sign, '_' or other scripts' digits) and at
 * most INT32_MAX (the type of axl_device_spec.id): a larger one is refused
 * with AXL_ERROR_INVALID_ARGUMENT naming it, never wrapped. */
AXL_API axl_status axl_device_spec_parse(const char* text, axl_device_spec* specs,
                                         size_t capacity, size_t* out_count);

/* ======================================================================== */
/* Buffers (contiguous bytes on one device)                                 */
/* ======================================================================== */

enum {
  AXL_BUFFER_FLAG_NONE = 0,
  /* Page-locked host memory bound to `device` for fast copies; on a host
   * device this is plain host memory. */
  AXL_BUFFER_FLAG_PINNED = 1u << 0,
  /* Host hazard tracking (see "Host hazard tracking" below): the core stamps
   * every copy, fill and launch that touches the buffer, and
   * axl_buffer_host_wait waits for them. */
  AXL_BUFFER_FLAG_TRACKED = 1u << 1
};

/* Allocates `size_bytes` (> 0, <= max_single_alloc_bytes) on `device`.
 * Backend errors (the plugin's AXL_ERROR_OUT_OF_DEVICE_MEMORY only after the
 * memory released earlier and still pending was given a chance, up to 5 s).
 * Errors: AXL_ERROR_INVALID_ARGUMENT for unknown flags or a size of 0;
 * AXL_ERROR_OUT_OF_DEVICE_MEMORY, without asking the backend, for a device
 * allocation larger than max_single_alloc_bytes. */
AXL_API axl_status axl_buffer_create(axl_device_t device, uint64_t size_bytes,
                                     uint32_t flags, axl_buffer_t* out_buffer);
/* A view of [offset, offset + size_bytes) of `buffer`, sharing its memory and
 * keeping it alive. Errors: AXL_ERROR_INVALID_ARGUMENT for a size of 0;
 * AXL_ERROR_OUT_OF_RANGE when the range is not inside the buffer. */
AXL_API axl_status axl_buffer_view(axl_buffer_t buffer, uint64_t offset,
                                   uint64_t size_bytes, axl_buffer_t* out_view);
/* Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_buffer_retain(axl_buffer_t buffer);
/* Releasing the last reference never blocks: memory that queued work still
 * uses is freed by the core's background thread once the queues that used
 * it have reached the release point (the stream-ordered free of
 * cuMemFreeAsync, for every backend). A free the backend then fails is
 * logged and returned by the device's next axl_queue_synchronize or
 * axl_device_synchronize. Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_buffer_release(axl_buffer_t buffer);
/* Drops one reference as axl_buffer_release does, but only when that runs
 * nothing that could wait (since 1.6): the reference is not the last, or it
 * is the last of an allocation (not a view, not external or pinned memory)
 * of a host device that no queue has used and no completion is stamped on,
 * whose memory then goes straight back to the backend. Otherwise it drops
 * nothing and answers AXL_ERROR_NOT_READY; the caller still owns the
 * reference and releases it with axl_buffer_release. For a binding that
 * holds a lock the queues' host callbacks may need (Python's GIL): it tries
 * this while holding the lock and lets go of the lock only when told to.
 * Errors: AXL_ERROR_NOT_READY as said; the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_buffer_try_release(axl_buffer_t buffer);
/* The size in bytes. Errors: only the common AXL_ERROR_INVALID_HANDLE and
 * AXL_ERROR_INVALID_ARGUMENT (NULL out). The buffer getters below do not
 * reach the backend either and add only the errors they name. */
AXL_API axl_status axl_buffer_size(axl_buffer_t buffer, uint64_t* out_bytes);
/* The device the memory is on (a new reference). Errors: the common
 * AXL_ERROR_INVALID_HANDLE, AXL_ERROR_INVALID_ARGUMENT (NULL out). */
AXL_API axl_status axl_buffer_device(axl_buffer_t buffer, axl_device_t* out);
/* Device address of the first byte (what kernels receive). Errors: the
 * common AXL_ERROR_INVALID_HANDLE, AXL_ERROR_INVALID_ARGUMENT (NULL out). */
AXL_API axl_status axl_buffer_device_address(axl_buffer_t buffer,
                                             uint64_t* out_address);
/* Host pointer of the first byte, for host-device and pinned buffers only.
 * Errors: AXL_ERROR_INVALID_STATE for device memory the host cannot read
 * (*out_ptr untouched). */
AXL_API axl_status axl_buffer_host_pointer(axl_buffer_t buffer, void** out_ptr);
/* The AXL_BUFFER_FLAG_* the allocation was created with (views report their
 * allocation's flags). Errors: the common AXL_ERROR_INVALID_HANDLE,
 * AXL_ERROR_INVALID_ARGUMENT (NULL out). */
AXL_API axl_status axl_buffer_flags(axl_buffer_t buffer, uint32_t* out_flags);

/* Called once when the last reference to an external buffer is released,
 * after every queue that used it has finished. May run on any thread. */
typedef void (*axl_buffer_release_callback)(void* user_data);
/* Wraps memory axl did not allocate (a numpy array, a file mapping, a DLPack
 * producer's device memory) as a buffer of `device`, without copying.
 * `address` is what kernels receive (the device address); `host` is the
 * host pointer of the same byte, or NULL when the host cannot touch it (on a
 * host device `host` must equal `address`). AXL_BUFFER_FLAG_PINNED marks
 * host memory bound to an accelerator. `release` (may be NULL) runs when the
 * buffer dies; on any error it is NOT called and nothing is kept.
 * Backend errors (only the backend's state: memory is not allocated).
 * Errors: AXL_ERROR_INVALID_ARGUMENT for a NULL/zero address or size, a host
 * device with host != address, PINNED without a host pointer, unknown
 * flags. */
AXL_API axl_status axl_buffer_create_external(axl_device_t device, uint64_t address, void* host,
                                              uint64_t size_bytes, uint32_t flags,
                                              axl_buffer_release_callback release,
                                              void* user_data, axl_buffer_t* out_buffer);

/* ======================================================================== */
/* Multicast groups (ABI 1.5): symmetric memory over several devices        */
/* ======================================================================== */
/* What MAX's SymmetricPool stands on (CUDA's multicast objects): a group of
 * two or more devices of one backend, each with its own ("unicast") memory
 * of the group's size and a multicast view of it through which a write
 * reaches every member's unicast memory at the same offset. Views are
 * buffers of their device (axl_multicast_buffer), usable in copies, fills
 * and launches on that device like any allocation; reading a multicast view
 * is backend-defined (CUDA: plain loads are undefined). */

/* Which view axl_multicast_buffer returns. */
enum {
  AXL_MULTICAST_VIEW_UNICAST = 0,   /* the device's own memory */
  AXL_MULTICAST_VIEW_MULTICAST = 1  /* the device's mapping of the group */
};

/* *out_supported = 1 if `device` can be a member of a multicast group: its
 * backend has the multicast slots and the device reports support (CUDA:
 * CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED); 0 otherwise, host devices
 * included. Allocates nothing. Backend errors. Errors: the common
 * AXL_ERROR_INVALID_HANDLE, AXL_ERROR_INVALID_ARGUMENT (NULL out). */
AXL_API axl_status axl_device_multicast_supported(axl_device_t device, uint8_t* out_supported);
/* A group over devices[0..num_devices) with `bytes` on each, rounded up by
 * the backend to its multicast granularity (axl_multicast_reserved_bytes).
 * The group lives while the caller's reference or any view buffer does; its
 * memory is freed once the last goes and the queues that used it are done.
 * Backend errors (AXL_ERROR_OUT_OF_DEVICE_MEMORY; AXL_ERROR_UNSUPPORTED for
 * a device the backend cannot add). Errors: AXL_ERROR_INVALID_ARGUMENT for
 * NULL devices or out_group, fewer than 2 devices, a device listed twice,
 * bytes 0, or devices of different backends; AXL_ERROR_UNSUPPORTED naming
 * the device for a host device, or for a backend without the multicast
 * slots (naming the slot). */
AXL_API axl_status axl_multicast_create(const axl_device_t* devices, uint32_t num_devices, uint64_t bytes,
                                        axl_multicast_t* out_group);
/* Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_multicast_retain(axl_multicast_t group);
AXL_API axl_status axl_multicast_release(axl_multicast_t group);
/* Bytes each member holds (>= the bytes asked for). Errors: the common
 * AXL_ERROR_INVALID_HANDLE, AXL_ERROR_INVALID_ARGUMENT (NULL out). */
AXL_API axl_status axl_multicast_reserved_bytes(axl_multicast_t group, uint64_t* out_bytes);
/* A new buffer of reserved_bytes on member `index` (its position in
 * axl_multicast_create's list): its unicast memory or its multicast view
 * (AXL_MULTICAST_VIEW_*). The buffer keeps the group alive; it is not
 * tracked (flags 0) and the host cannot read it. Backend errors. Errors: the
 * common AXL_ERROR_INVALID_HANDLE, AXL_ERROR_OUT_OF_RANGE for index >= the
 * number of members, AXL_ERROR_INVALID_ARGUMENT for an unknown view or NULL
 * out. */
AXL_API axl_status axl_multicast_buffer(axl_multicast_t group, uint32_t index, uint32_t view,
                                        axl_buffer_t* out_buffer);

/* ======================================================================== */
/* Layouts: n-d strided views of a buffer's bytes                           */
/* ======================================================================== */
/* A layout maps an n-d index to a byte offset inside one buffer:
 *   byte(i0, ..., in-1) = offset + sum(ik * strides[k]).
 * Shapes are in elements, strides and the offset in bytes (strides may be
 * negative or zero). The functions are pure: no handles, no device work,
 * safe from any thread. Semantics follow numpy basic indexing (and so MAX's
 * Buffer.__getitem__ and Buffer.view). A NULL input layout, or one with rank
 * > AXL_MAX_RANK, element_size 0 or a negative extent, is
 * AXL_ERROR_INVALID_ARGUMENT for the functions that return a status. */
#define AXL_MAX_RANK 32 /* numpy 1.x's NPY_MAXDIMS; keeps axl_layout at 528 bytes */

typedef struct axl_layout {
  uint32_t rank;                  /* 0..AXL_MAX_RANK; 0 is one element */
  uint32_t element_size;          /* bytes per element, >= 1 */
  uint64_t offset;                /* bytes from the buffer start to element (0,...,0) */
  int64_t shape[AXL_MAX_RANK];    /* elements along each dimension, >= 0 */
  int64_t strides[AXL_MAX_RANK];  /* bytes between neighbours along each dimension */
} axl_layout;

enum {
  AXL_INDEX_INTEGER = 0, /* picks `start` and removes the dimension */
  AXL_INDEX_SLICE = 1    /* start:stop:step, Python slice semantics */
};
enum {
  AXL_INDEX_HAS_START = 1u << 0, /* else the slice starts at its natural end */
  AXL_INDEX_HAS_STOP = 1u << 1,
  AXL_INDEX_HAS_STEP = 1u << 2   /* else step 1 */
};
typedef struct axl_index {
  int32_t kind;   /* AXL_INDEX_INTEGER or AXL_INDEX_SLICE */
  uint32_t flags; /* AXL_INDEX_HAS_* (slices only) */
  int64_t start;  /* the integer index (negative counts from the end) */
  int64_t stop;
  int64_t step;   /* non-zero */
} axl_index;

/* A row-major contiguous layout at offset 0. Errors: AXL_ERROR_INVALID_ARGUMENT
 * for rank > AXL_MAX_RANK, shape NULL with rank > 0, a negative extent,
 * element_size 0, or a byte size that overflows 2^63. */
AXL_API axl_status axl_layout_init(axl_layout* out, uint32_t rank, const int64_t* shape,
                                   uint32_t element_size);
/* Applies `count` indices (<= rank) to the leading dimensions; the rest are
 * kept whole. Integers wrap once when negative; slices clamp like Python's.
 * Errors: AXL_ERROR_OUT_OF_RANGE "index 4 is out of bounds for axis 2 with
 * size 3" and "too many indices" (IndexError in Python);
 * AXL_ERROR_INVALID_ARGUMENT "slice step cannot be zero", for an invalid
 * `in`, indices NULL with count > 0, an unknown kind, or a step whose byte
 * stride overflows. */
AXL_API axl_status axl_layout_index(const axl_layout* in, const axl_index* indices,
                                    uint32_t count, axl_layout* out);
/* 1 when the elements are row-major and dense (dimensions of extent 1 are
 * ignored; zero-element layouts are contiguous), else 0. Never fails.
 * Bad input: 0 for NULL or rank > AXL_MAX_RANK. */
AXL_API int axl_layout_is_contiguous(const axl_layout* layout);
/* Number of elements (1 for rank 0). Never fails. Bad input: 0 for NULL or
 * rank > AXL_MAX_RANK. */
AXL_API uint64_t axl_layout_num_elements(const axl_layout* layout);
/* [begin, end) of the bytes the layout touches; begin == end == offset for
 * zero elements. Never fails. Bad input: a NULL out pointer is skipped; a
 * NULL layout gives [0, 0), rank > AXL_MAX_RANK [offset, offset). */
AXL_API void axl_layout_extent(const axl_layout* layout, uint64_t* out_begin, uint64_t* out_end);
/* The same bytes as elements of `element_size` (numpy's ndarray.view(dtype)).
 * With shape == NULL the last dimension is rescaled: it must be dense and
 * its byte length divisible by element_size (AXL_ERROR_INVALID_ARGUMENT with
 * MAX's text otherwise); rank 0 is AXL_ERROR_OUT_OF_RANGE. With a shape, the
 * layout must be contiguous and hold exactly the new shape's bytes.
 * Errors: AXL_ERROR_INVALID_ARGUMENT also for element_size 0, a new shape
 * axl_layout_init refuses, or a leading stride that is not a multiple of
 * the new element size. */
AXL_API axl_status axl_layout_view(const axl_layout* in, uint32_t element_size, uint32_t rank,
                                   const int64_t* shape, axl_layout* out);

/* ======================================================================== */
/* Host hazard tracking                                                     */
/* ======================================================================== */
/* A completion marks a point in a queue: it is ready once the work enqueued
 * before it has run. A poisoned completion stands for work that failed: it
 * is ready at once and waiting on it returns AXL_ERROR_HOST_HAZARD with the
 * poison message (MAX: HostHazardCompletion). Each allocation made with
 * AXL_BUFFER_FLAG_TRACKED keeps the completion of its last writer and those
 * of the readers since; the core stamps them on every copy, fill and launch
 * (a launch counts as a write of every buffer argument), and an enqueue that
 * fails stamps its destination with a poisoned completion carrying the
 * error, unless it was refused as made (INVALID_ARGUMENT, OUT_OF_RANGE,
 * NOT_FOUND, UNSUPPORTED, INVALID_HANDLE or INVALID_STATE) before any of
 * it was enqueued: that changed nothing and stamps nothing (MAX: a graph
 * declined before execution stamps nothing). Views share their allocation's record. Copies and fills get an
 * event each; consecutive launches on a queue share one, recorded when it
 * is first needed or before the queue's next copy, fill, wait or host
 * function, so a host wait for a launch's output may also wait for the
 * launches right after it on that queue, never for anything behind a wait.
 * A copy (axl_queue_copy_buffer, _copy, _copy_layout) of a tracked buffer
 * whose last writer is still pending on another queue first makes its queue
 * wait, on the device, for that queue. */
typedef struct axl_completion_s* axl_completion_t;

enum {
  AXL_ACCESS_READ = 1u << 0,
  AXL_ACCESS_WRITE = 1u << 1 /* with READ: stamped as a write, then a read */
};

/* Marks everything enqueued on `queue` so far (records an event on it).
 * Backend errors. */
AXL_API axl_status axl_completion_record(axl_queue_t queue, axl_completion_t* out);
/* A completion that is already poisoned with `message`. Errors:
 * AXL_ERROR_INVALID_ARGUMENT for a NULL message. */
AXL_API axl_status axl_completion_create_poisoned(const char* message, axl_completion_t* out);
/* Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_completion_retain(axl_completion_t completion);
AXL_API axl_status axl_completion_release(axl_completion_t completion);
/* Later waits fail with `message`, even if the marked work completed.
 * Errors: AXL_ERROR_INVALID_ARGUMENT for a NULL message. */
AXL_API axl_status axl_completion_poison(axl_completion_t completion, const char* message);
/* AXL_SUCCESS when ready (poisoned counts as ready), AXL_ERROR_NOT_READY if
 * not, also when the backend could not record or query its event (a wait
 * then reports why). Otherwise only AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_completion_query(axl_completion_t completion);
/* Blocks until ready; AXL_ERROR_HOST_HAZARD with the poison message when
 * poisoned (without blocking), and when the marked work failed on the
 * device (the completion is poisoned from then on, with the backend's
 * detail). Backend errors (recording its event late, or the queue's
 * synchronize that replaces an event that cannot be recorded).
 * AXL_ERROR_TIMEOUT only once exit began and its deadline passed
 * (axl_process_exit_begin); the completion is not poisoned by it.
 * AXL_ERROR_INVALID_STATE when called from a host function running on the
 * completion's queue while the completion is behind that function (it
 * would wait for itself); one recorded before the function is ready. */
AXL_API axl_status axl_completion_wait(axl_completion_t completion);
/* Records `completion` as a reader and/or the writer of the buffer's
 * allocation. A write replaces the writer and forgets the readers. No-op on
 * untracked buffers. Errors: AXL_ERROR_INVALID_ARGUMENT when access is 0 or
 * has bits other than AXL_ACCESS_READ and AXL_ACCESS_WRITE. */
AXL_API axl_status axl_buffer_stamp(axl_buffer_t buffer, axl_completion_t completion,
                                    uint32_t access);
/* Blocks until the host may access the buffer: a READ waits for the last
 * writer, a WRITE also for the readers since. Only the stamped work is
 * waited for (see above for launches), not the queues. AXL_ERROR_HOST_HAZARD (with the producer's
 * message) when a completion waited on is poisoned; the errors of
 * axl_completion_wait (INVALID_STATE from a host function for work
 * enqueued behind it on its queue); AXL_ERROR_INVALID_ARGUMENT for an
 * access as in axl_buffer_stamp. No-op when untracked. */
AXL_API axl_status axl_buffer_host_wait(axl_buffer_t buffer, uint32_t access);

/* ======================================================================== */
/* Strided and batched copies                                               */
/* ======================================================================== */

/* Copies the elements of `src_layout` in `src` into `dst_layout` in `dst`,
 * in row-major order of each layout (shapes may differ; the element counts
 * and element sizes must match, AXL_ERROR_INVALID_ARGUMENT naming both
 * otherwise). Either side may be non-contiguous or have negative strides;
 * the core splits the copy into contiguous runs, runs it as one host pass
 * when both sides are host memory, and stages through host memory when
 * device-side runs would be too many. Zero elements is a no-op. Layouts
 * reaching outside their buffer are AXL_ERROR_OUT_OF_RANGE. Overlapping
 * source and destination bytes give unspecified results (as memcpy).
 * Backend errors (of the queue's backend and of both buffers'). Errors:
 * AXL_ERROR_INVALID_ARGUMENT also for a NULL or invalid layout (see
 * Layouts), an element count that overflows 64 bits, or a queue of neither
 * buffer's device when both are device memory; AXL_ERROR_OUT_OF_RANGE also for
 * a layout spanning more than 2^63 bytes; the errors of
 * axl_queue_copy_buffer for the pieces it enqueues. */
AXL_API axl_status axl_queue_copy_layout(axl_queue_t queue, axl_buffer_t dst,
                                         const axl_layout* dst_layout, axl_buffer_t src,
                                         const axl_layout* src_layout);

typedef struct axl_copy_desc {
  axl_buffer_t dst;
  uint64_t dst_offset; /* bytes */
  axl_buffer_t src;
  uint64_t src_offset; /* bytes */
  uint64_t size_bytes; /* 0 is skipped */
} axl_copy_desc;
/* Enqueues `count` copies grouped by destination device: each group is
 * enqueued back to back on that device's default queue and stamped by one
 * completion (MAX: batch_inplace_copy). Pairs that repeat an earlier
 * (dst, dst_offset, src, src_offset, size) and identity pairs are skipped.
 * Every pair is validated before anything is enqueued; a group that fails
 * stops the batch (groups enqueued before it stay enqueued). Backend
 * errors. Errors: AXL_ERROR_INVALID_ARGUMENT for copies NULL with count > 0;
 * AXL_ERROR_INVALID_HANDLE naming "destination buffer" or "source buffer";
 * AXL_ERROR_OUT_OF_RANGE naming the pair that does not fit its buffers. */
AXL_API axl_status axl_copy_batch(const axl_copy_desc* copies, size_t count);

/* ======================================================================== */
/* Queues                                                                   */
/* ======================================================================== */

/* A new in-order queue on `device`; flags must be 0. Its bound on pending
 * operations is AXL_QUEUE_MAX_PENDING or the backend's default (see
 * axl_queue_options). Backend errors. Errors: AXL_ERROR_INVALID_ARGUMENT
 * for flags other than 0. */
AXL_API axl_status axl_queue_create(axl_device_t device, uint32_t flags,
                                    axl_queue_t* out_queue);

/* The bound of the cpu and virtual backends on pending operations per queue
 * when neither axl_queue_options.max_pending nor AXL_QUEUE_MAX_PENDING sets
 * one: enough to keep a queue busy, small enough that a thread enqueueing
 * without end holds at most a few hundred KiB per queue (CUDA blocks after
 * about 1024 pending launches). */
#define AXL_QUEUE_DEFAULT_MAX_PENDING 4096

/* Growable: the caller sets struct_size = sizeof(axl_queue_options); fields
 * a newer header appends are read only when struct_size covers them. */
typedef struct axl_queue_options {
  /* sizeof(axl_queue_options); at least 16 (through max_pending), else
   * AXL_ERROR_INVALID_ARGUMENT. */
  size_t struct_size;
  /* Must be 0 (no flags are defined yet); any bit: AXL_ERROR_INVALID_ARGUMENT. */
  uint32_t flags;
  /* Most operations pending (enqueued, not finished) on the queue at once.
   * An enqueue on a full queue blocks until the queue has made room (about
   * a quarter of it on cpu and virtual). 0: AXL_QUEUE_MAX_PENDING from the
   * environment if set, else the backend's default
   * (AXL_QUEUE_DEFAULT_MAX_PENDING on cpu and virtual). On cuda, hip and
   * level_zero the driver bounds its streams itself and this field is
   * accepted but has no effect.
   *
   * A blocked enqueue fails with AXL_ERROR_TIMEOUT, enqueueing nothing, when
   * the queue made no progress for AXL_QUEUE_FULL_TIMEOUT_MS (default 10000;
   * 0: never) while its oldest operation waits for a completion flag: a
   * flag that only the blocked thread would write would otherwise hang it.
   * Behind any other operation (a long kernel) it waits as long as it
   * takes. An enqueue on a full queue from one of that queue's own host
   * functions fails with AXL_ERROR_INVALID_STATE. */
  uint32_t max_pending;
} axl_queue_options;

/* A new in-order queue on `device` with `options`. Errors:
 * AXL_ERROR_INVALID_HANDLE (device), AXL_ERROR_INVALID_ARGUMENT (options or
 * out_queue NULL, struct_size below 16, flags not 0), and those of
 * axl_queue_create. */
AXL_API axl_status axl_queue_create_with_options(axl_device_t device,
                                                 const axl_queue_options* options,
                                                 axl_queue_t* out_queue);
/* Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_queue_retain(axl_queue_t queue);
/* Releasing the last reference finishes the queue's pending work first;
 * once the process is exiting, only until the exit deadline
 * (axl_process_exit_begin). Errors: AXL_ERROR_INVALID_HANDLE also when a
 * device's default queue would be released more times than it was
 * obtained. */
AXL_API axl_status axl_queue_release(axl_queue_t queue);
/* The queue's device (a new reference). Errors: only the common
 * AXL_ERROR_INVALID_HANDLE and AXL_ERROR_INVALID_ARGUMENT (NULL out). */
AXL_API axl_status axl_queue_device(axl_queue_t queue, axl_device_t* out);
/* Blocks until every operation enqueued so far finished. Backend errors:
 * the first error an operation hit since the previous synchronize, then a
 * release of the device's memory that failed since (see
 * axl_buffer_release). AXL_ERROR_TIMEOUT only once exit began and its
 * deadline passed (axl_process_exit_begin). AXL_ERROR_INVALID_STATE when
 * called from a host function running on this queue (it would wait for
 * itself; every backend). */
AXL_API axl_status axl_queue_synchronize(axl_queue_t queue);

/* Enqueue copies. Host memory passed by pointer must stay valid and untouched
 * until the copy ran (synchronize or an event). Offsets and sizes are bytes;
 * a range past a buffer's end is AXL_ERROR_OUT_OF_RANGE, a size of 0 is
 * AXL_ERROR_INVALID_ARGUMENT. The queue must belong to one of the devices
 * involved, or be any queue when both buffers are host memory (between two
 * buffers of device memory, a queue of neither device is
 * AXL_ERROR_INVALID_ARGUMENT naming the devices). Backend errors
 * (of every backend the copy reaches: across devices the core chains the
 * devices' default queues). Errors: AXL_ERROR_INVALID_ARGUMENT also for a
 * NULL host pointer; AXL_ERROR_OUT_OF_HOST_MEMORY when a staging copy
 * through host memory cannot be allocated. Buffer handles are named
 * "destination buffer" or "source buffer" in AXL_ERROR_INVALID_HANDLE.
 * This one: host bytes at src into dst. */
AXL_API axl_status axl_queue_copy_from_host(axl_queue_t queue, axl_buffer_t dst,
                                            uint64_t dst_offset, const void* src,
                                            uint64_t size_bytes);
/* The bytes of src into host memory at dst. Errors: those of
 * axl_queue_copy_from_host above (AXL_ERROR_OUT_OF_RANGE, ...). */
AXL_API axl_status axl_queue_copy_to_host(axl_queue_t queue, void* dst,
                                          axl_buffer_t src, uint64_t src_offset,
                                          uint64_t size_bytes);
/* Any two buffers, same or different devices and backends. Across backends
 * the core moves the bytes through host memory. Errors: those of
 * axl_queue_copy_from_host above (AXL_ERROR_OUT_OF_RANGE, ...), the range
 * checked for each buffer. */
AXL_API axl_status axl_queue_copy_buffer(axl_queue_t queue, axl_buffer_t dst,
                                         uint64_t dst_offset, axl_buffer_t src,
                                         uint64_t src_offset, uint64_t size_bytes);
/* Whole-buffer copy; the sizes must be equal (AXL_ERROR_INVALID_ARGUMENT
 * naming both otherwise, checked before the queue). Otherwise the errors of
 * axl_queue_copy_buffer. */
AXL_API axl_status axl_queue_copy(axl_queue_t queue, axl_buffer_t dst,
                                  axl_buffer_t src);
/* Repeats the low pattern_size (1, 2 or 4) bytes of `pattern` over
 * [offset, offset + size_bytes); size_bytes and offset are multiples of
 * pattern_size. Backend errors. Errors: AXL_ERROR_INVALID_ARGUMENT for a
 * pattern_size other than 1, 2 or 4, a size of 0, an offset or size that is
 * not a multiple of it, a pattern wider than it, or a buffer that is not on
 * the queue's device (nor host memory filled from a host device's queue);
 * AXL_ERROR_OUT_OF_RANGE for a range past the buffer's end. */
AXL_API axl_status axl_queue_fill(axl_queue_t queue, axl_buffer_t dst,
                                  uint64_t offset, uint64_t size_bytes,
                                  uint32_t pattern, uint32_t pattern_size);

/* Later work on `queue` waits for all work enqueued on `other` so far (any
 * backend; the host does not block, unless a backend lacks the slots to
 * chain the two, when `other` is synchronized now). A queue and itself: no
 * wait. Backend errors (of both queues' backends). */
AXL_API axl_status axl_queue_wait_queue(axl_queue_t queue, axl_queue_t other);
/* The event completes when all work enqueued so far on `queue` has run.
 * Backend errors. Errors: AXL_ERROR_INVALID_ARGUMENT when the event and
 * queue are on different devices. */
AXL_API axl_status axl_queue_record_event(axl_queue_t queue, axl_event_t event);
/* Later work on `queue` waits for the event's last record (any backend); an
 * event never recorded: no wait, AXL_SUCCESS. Backend errors. */
AXL_API axl_status axl_queue_wait_event(axl_queue_t queue, axl_event_t event);
/* Later work on `queue` waits until the flag's value is >= value
 * (cuStreamWaitValue64 with CU_STREAM_WAIT_VALUE_GEQ). Backend errors.
 * Errors: AXL_ERROR_INVALID_ARGUMENT when the flag belongs to another
 * backend than the queue. */
AXL_API axl_status axl_queue_wait_flag(axl_queue_t queue, axl_flag_t flag,
                                       uint64_t value);
/* After earlier work, the device stores `value` into the flag. Backend
 * errors. Errors: AXL_ERROR_INVALID_ARGUMENT as axl_queue_wait_flag. */
AXL_API axl_status axl_queue_write_flag(axl_queue_t queue, axl_flag_t flag,
                                        uint64_t value);
/* fn(user_data) runs on a backend thread after earlier work. It must not call
 * blocking axl functions (synchronize, waits): a synchronize of its own queue
 * or device, or of an event recorded behind it on its queue, fails with
 * AXL_ERROR_INVALID_STATE. */
typedef void (*axl_host_callback)(void* user_data);
/* Enqueues fn (above); on an error it is never called. Backend errors.
 * Errors: AXL_ERROR_INVALID_ARGUMENT for a NULL fn. */
AXL_API axl_status axl_queue_enqueue_host_func(axl_queue_t queue,
                                               axl_host_callback fn,
                                               void* user_data);
/* CUstream / hipStream_t as an integer, 0 where the backend has none.
 * Backend errors. */
AXL_API axl_status axl_queue_native_handle(axl_queue_t queue, uint64_t* out);

/* ======================================================================== */
/* Events                                                                   */
/* ======================================================================== */

enum {
  AXL_EVENT_NONE = 0,
  AXL_EVENT_TIMING = 1u << 0 /* record timestamps for axl_event_elapsed_ms */
};

/* An event of `device`; flags: AXL_EVENT_*. Backend errors. Errors:
 * AXL_ERROR_INVALID_ARGUMENT for unknown flags. */
AXL_API axl_status axl_event_create(axl_device_t device, uint32_t flags,
                                    axl_event_t* out_event);
/* Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_event_retain(axl_event_t event);
AXL_API axl_status axl_event_release(axl_event_t event);
/* Blocks until the last record completed. An event never recorded is
 * complete. Backend errors (an earlier asynchronous failure of the queue's
 * work is reported here, as the plugin reports it). AXL_ERROR_TIMEOUT only
 * once exit began and its deadline passed (axl_process_exit_begin).
 * AXL_ERROR_INVALID_STATE when called from a host function running on the
 * queue of the last record, while that record is pending (it is behind the
 * function; every backend). */
AXL_API axl_status axl_event_synchronize(axl_event_t event);
/* AXL_SUCCESS if complete (or never recorded), AXL_ERROR_NOT_READY if not.
 * Backend errors. */
AXL_API axl_status axl_event_query(axl_event_t event);
/* Milliseconds from `start` to `end`. Errors, each with its own message:
 * AXL_ERROR_INVALID_STATE "not recorded" (either event), AXL_ERROR_NOT_READY
 * "not complete" (end or start still running), AXL_ERROR_INVALID_ARGUMENT
 * "timing disabled" (either created without AXL_EVENT_TIMING) and for
 * events of different backends. Handles are named "start event" and "end
 * event". Backend errors. */
AXL_API axl_status axl_event_elapsed_ms(axl_event_t start, axl_event_t end,
                                        float* out_ms);

/* ======================================================================== */
/* Completion flags: an 8-byte host value the device can read and write     */
/* ======================================================================== */

/* A flag of `device`, initially 0. Backend errors. */
AXL_API axl_status axl_flag_create(axl_device_t device, axl_flag_t* out_flag);
/* Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_flag_retain(axl_flag_t flag);
AXL_API axl_status axl_flag_release(axl_flag_t flag);
/* The address device work uses for the flag. Backend errors. */
AXL_API axl_status axl_flag_device_address(axl_flag_t flag, uint64_t* out);
/* The three host accesses below touch only host memory. Acquire load.
 * Errors: only the common AXL_ERROR_INVALID_HANDLE and
 * AXL_ERROR_INVALID_ARGUMENT (NULL out_value). */
AXL_API axl_status axl_flag_load(axl_flag_t flag, uint64_t* out_value);
/* Release store. Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_flag_signal(axl_flag_t flag, uint64_t value);
/* Relaxed store of 0. Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_flag_reset(axl_flag_t flag);

/* ======================================================================== */
/* Modules, kernels, launch                                                 */
/* ======================================================================== */

/* Loads a backend-native module (a shared object on the cpu backend; PTX,
 * cubin or fatbin on cuda). `format` is an AXL_MODULE_FORMAT_* (axl/enums.h),
 * 0 to let the backend detect it. Backend errors (bytes or a file the
 * backend cannot load, as it reports them). Errors: AXL_ERROR_INVALID_ARGUMENT
 * for NULL or empty data, a NULL or empty path, or a format outside
 * AXL_MODULE_FORMAT_*. */
AXL_API axl_status axl_module_load_data(axl_device_t device, const void* data,
                                        size_t size_bytes, int32_t format,
                                        axl_module_t* out_module);
/* The same from a file the backend opens. Errors: those of
 * axl_module_load_data (AXL_ERROR_INVALID_ARGUMENT, backend errors). */
AXL_API axl_status axl_module_load_file(axl_device_t device, const char* path,
                                        int32_t format, axl_module_t* out_module);
/* Compiles `source` in `language` (AXL_SOURCE_LANGUAGE_* (axl/enums.h), e.g.
 * CUDA C++ through NVRTC on cuda devices) for `device` and loads the result.
 * `options` are passed to the compiler (num_options entries; NULL if 0);
 * `name` names the program in diagnostics (NULL: "axl_program"). A program
 * that does not compile answers AXL_ERROR_INVALID_ARGUMENT with the
 * compiler's log in the message; a backend without a run-time compiler
 * answers AXL_ERROR_UNSUPPORTED. Backend errors. Errors: also
 * AXL_ERROR_INVALID_ARGUMENT, without reaching the backend, for a NULL or
 * empty source, a language other than CUDA or HIP, options NULL with
 * num_options > 0, or a NULL option. Since 1.1. */
AXL_API axl_status axl_module_compile(axl_device_t device, int32_t language,
                                      const char* source, const char* name,
                                      const char* const* options,
                                      uint32_t num_options,
                                      axl_module_t* out_module);
/* Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_module_retain(axl_module_t module);
AXL_API axl_status axl_module_release(axl_module_t module);
/* AXL_ERROR_NOT_FOUND naming the kernel if the module has none by that name
 * (reported by the backend). Backend errors. Errors:
 * AXL_ERROR_INVALID_ARGUMENT for a NULL or empty name. */
AXL_API axl_status axl_module_get_kernel(axl_module_t module, const char* name,
                                         axl_kernel_t* out_kernel);
/* Test-only: a backend's built-in AXL_TEST_KERNEL_* (axl/enums.h). Backend
 * errors (AXL_ERROR_UNSUPPORTED where it has none). Errors:
 * AXL_ERROR_INVALID_ARGUMENT for `which` not an AXL_TEST_KERNEL_*. */
AXL_API axl_status axl_device_get_test_kernel(axl_device_t device, int32_t which,
                                              axl_kernel_t* out_kernel);
/* Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_kernel_retain(axl_kernel_t kernel);
AXL_API axl_status axl_kernel_release(axl_kernel_t kernel);
/* The kernel's name (owned by the kernel). Never fails. Bad input: "" for
 * a NULL or released handle. */
AXL_API const char* axl_kernel_name(axl_kernel_t kernel);

enum {
  AXL_KERNEL_ARG_BUFFER = 0, /* buffer: passed as its device address */
  AXL_KERNEL_ARG_SCALAR = 1, /* size bytes at value */
  /* ABI 1.4: size bytes of memory local to each block, for a kernel
   * parameter declared __local in OpenCL C; buffer and value are ignored.
   * Backends whose kernels take no such parameter (CUDA, HIP: use
   * shared_mem_bytes) refuse the launch with AXL_ERROR_INVALID_ARGUMENT;
   * a backend built against plugin ABI 1.2 or older with
   * AXL_ERROR_UNSUPPORTED. */
  AXL_KERNEL_ARG_LOCAL = 2
};

typedef struct axl_launch_arg {
  int32_t kind;        /* AXL_KERNEL_ARG_* */
  uint32_t size;       /* scalar bytes (1..256); local bytes (>= 1);
                          ignored for buffers */
  axl_buffer_t buffer; /* for AXL_KERNEL_ARG_BUFFER */
  const void* value;   /* for AXL_KERNEL_ARG_SCALAR; read during the call */
} axl_launch_arg;

/* grid: blocks (x, y, z), block: threads per block (x, y, z), each >= 1.
 * The kernel must belong to the queue's device. Buffers must be on the
 * queue's device, or host memory on a host device (or pinned). Backend
 * errors. Errors: AXL_ERROR_INVALID_ARGUMENT for a NULL grid or block, a 0
 * in either, args NULL with num_args > 0, a kernel or buffer argument of
 * another device, a scalar NULL or outside 1..256 bytes, a local argument
 * of 0 bytes, or an unknown argument kind, each naming the argument; buffer handles are named
 * "kernel argument buffer" in AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_queue_launch(axl_queue_t queue, axl_kernel_t kernel,
                                    const uint32_t grid[3],
                                    const uint32_t block[3],
                                    uint64_t shared_mem_bytes,
                                    const axl_launch_arg* args,
                                    uint32_t num_args);

/* ======================================================================== */
/* Launch trace (MAX's begin_launch_trace / take_launch_trace)              */
/* ======================================================================== */

enum {
  AXL_LAUNCH_TRACE_DEFAULT = 0,
  /* Also record work on host devices (MAX records accelerators only). */
  AXL_LAUNCH_TRACE_INCLUDE_HOST = 1u << 0
};

typedef struct axl_launch_trace_entry {
  size_t struct_size;        /* set by the core: sizeof(axl_launch_trace_entry)
                                as the core was built (since 1.3); the array's
                                stride, see axl_launch_trace_entry_at */
  int32_t kind;              /* AXL_TRACE_KERNEL_LAUNCH/MEMCPY/MEMSET */
  int32_t memcpy_kind;       /* AXL_MEMCPY_NONE/HTOD/DTOH/DTOD */
  const char* name;          /* kernel or driver API name; owned by the trace */
  uint64_t semantic_hash;    /* deterministic, address-free, equal across runs
                                for equal work */
  uint32_t grid[3];          /* blocks; 0 unless a launch */
  uint32_t block[3];         /* threads per block; 0 unless a launch */
  uint64_t shared_mem_bytes;
  uint32_t stream_index;     /* queue index, in first-seen order in the trace */
  uint32_t device_id;        /* id (axl_device_info.id) of the queue's device */
  uint64_t memcpy_byte_size;
  uint64_t memset_byte_size;
  uint32_t memset_value;
  uint32_t memset_value_size;
  uint64_t sequence;         /* global enqueue order, 0-based within a trace */
} axl_launch_trace_entry;

/* Starts a process-wide recording of launches, copies and fills on every
 * queue, discarding any earlier one. flags: AXL_LAUNCH_TRACE_*. Runs
 * discovery. Errors: AXL_ERROR_INVALID_ARGUMENT for unknown flags. */
AXL_API axl_status axl_launch_trace_begin(uint32_t flags);
/* Stops recording and hands over what was recorded (empty if none began).
 * Release the result with axl_launch_trace_release. Errors: only the common
 * AXL_ERROR_INVALID_ARGUMENT (NULL out_trace). */
AXL_API axl_status axl_launch_trace_take(axl_launch_trace_t* out_trace);
/* The number of entries. Errors: only the common AXL_ERROR_INVALID_HANDLE
 * and AXL_ERROR_INVALID_ARGUMENT (NULL out_count). */
AXL_API axl_status axl_launch_trace_size(axl_launch_trace_t trace,
                                         size_t* out_count);
/* Entries in enqueue order; valid until the trace is released. Step through
 * them with axl_launch_trace_entry_at, never with entries[i]: a newer core's
 * entries may be larger than this header's struct. Never fails. Bad input:
 * NULL for a NULL or released handle (and possibly for an empty trace: read
 * the size first). */
AXL_API const axl_launch_trace_entry* axl_launch_trace_entries(
    axl_launch_trace_t trace);
/* Entry `index` of the array axl_launch_trace_entries returned (index below
 * axl_launch_trace_size). The core's elements lie struct_size bytes apart;
 * read a field only if it lies within entries->struct_size (a field this
 * header declares that an older core did not have is not there). */
static inline const axl_launch_trace_entry* axl_launch_trace_entry_at(
    const axl_launch_trace_entry* entries, size_t index) {
  return (const axl_launch_trace_entry*)((const char*)entries + index * entries->struct_size);
}
/* Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_launch_trace_release(axl_launch_trace_t trace);

/* ======================================================================== */
/* Virtual-device mode (MAX's max.driver section 10)                        */
/* ======================================================================== */

/* count > 0 turns the mode on: the accelerators are then exactly `count`
 * compile-only devices of the `virtual` plugin, reporting the api and
 * architecture set below (set those first). 0 turns it off. Negative or
 * > 1024: AXL_ERROR_INVALID_ARGUMENT. AXL_ERROR_BACKEND_UNAVAILABLE if the
 * virtual plugin is not loaded (0 then still succeeds). Devices already
 * obtained keep the settings they were created with. Runs discovery.
 * Backend errors (of the virtual plugin's options). */
AXL_API axl_status axl_set_virtual_device_count(int32_t count);
/* The count last set (0: off). Errors: only the common
 * AXL_ERROR_INVALID_ARGUMENT (NULL out_count). */
AXL_API axl_status axl_get_virtual_device_count(int32_t* out_count);
/* 1 while the mode is on, else 0. Never fails. */
AXL_API int axl_is_virtual_device_mode(void);
/* "cuda", "hip", "metal", ...; getters use the two-call protocol
 * (*out_size = bytes needed including the NUL; "" when unset; buf untouched
 * when NULL or too small). Setters: AXL_ERROR_INVALID_ARGUMENT for NULL, a
 * name longer than AXL_API_SIZE - 1 (for the arch AXL_ARCH_SIZE - 1) bytes,
 * or a character other than letters, digits and "_-.:". */
AXL_API axl_status axl_set_virtual_device_api(const char* api);
/* Errors: only the common AXL_ERROR_INVALID_ARGUMENT (NULL out_size). */
AXL_API axl_status axl_get_virtual_device_api(char* buf, size_t capacity, size_t* out_size);
/* "sm_90", "gfx942", ...; errors as for the api above
 * (AXL_ERROR_INVALID_ARGUMENT). */
AXL_API axl_status axl_set_virtual_device_target_arch(const char* arch);
/* The two-call getter, as axl_get_virtual_device_api. Errors: only the
 * common AXL_ERROR_INVALID_ARGUMENT (NULL out_size). */
AXL_API axl_status axl_get_virtual_device_target_arch(char* buf, size_t capacity,
                                                      size_t* out_size);
/* An LLVM CPU name ("x86-64-v3", "neoverse-n1"), "generic", or "" for the
 * host CPU. "native" is rejected (it would leak the build host). Errors:
 * AXL_ERROR_INVALID_ARGUMENT for NULL, "native", or a name over 64 bytes or
 * with characters the api above refuses; AXL_ERROR_UNSUPPORTED for
 * "generic" on a host other than x86-64 and AArch64. */
AXL_API axl_status axl_set_virtual_cpu_target(const char* cpu);
/* The two-call getter, as axl_get_virtual_device_api. Errors: only the
 * common AXL_ERROR_INVALID_ARGUMENT (NULL out_size). */
AXL_API axl_status axl_get_virtual_cpu_target(char* buf, size_t capacity, size_t* out_size);
/* max(1, 1 + the largest accelerator id among specs); CPU specs ignored.
 * Errors: AXL_ERROR_INVALID_ARGUMENT for specs NULL with count > 0. */
AXL_API axl_status axl_calculate_virtual_device_count(const axl_device_spec* specs, size_t count,
                                                      uint32_t* out);
/* The same from raw CLI strings with MAX's grammar: "gpu" (exact) is id 0;
 * "gpu:all" (any case) is every accelerator; "gpu:<ids>" (any case) takes a
 * comma list, parts trimmed, empty parts and "all" skipped; other strings
 * are ignored. A part is read as a spec id (axl_device_spec_parse) with an
 * optional sign: a part that is not such an integer, or is outside int32_t,
 * is AXL_ERROR_INVALID_ARGUMENT naming it (so the count always fits), as
 * are inputs NULL with count > 0 and a NULL input. "gpu:all" runs
 * discovery. */
AXL_API axl_status axl_calculate_virtual_device_count_from_cli(const char* const* inputs,
                                                               size_t count, uint32_t* out);

/* ======================================================================== */
/* MAX checkpoint files (MAX's load_max_buffer, spec section 8)             */
/* ======================================================================== */

/* One tensor in MAX's `.max` format, little-endian, packed:
 *   magic[8] = 93 F0 9F 94 A5 2B 2B 93, u32 major, u32 minor,
 *   u64 metadata_size, u32 key_size, key[key_size], u8 dtype, u8 rank,
 *   u32 dims[rank], u64 data_offset; the data at data_offset.
 * The parser only reads memory: the binding opens and maps the file. */
#define AXL_MAX_FILE_MAX_RANK 255 /* the rank is one byte in the format */

typedef struct axl_max_file_header {
  size_t struct_size;       /* set by the caller: sizeof(axl_max_file_header) */
  uint32_t version_major;   /* as stored; only 0 is accepted (as MAX) */
  uint32_t version_minor;   /* as stored (MAX writes 1 and ignores it) */
  uint32_t dtype;           /* MAX DType code, S2-S4 numbering (spec section 11),
                               e.g. 81 = float32; validated by axl_dtype_size_bits */
  uint32_t dtype_size_bits; /* bits per element: 1 byte = 8 (bool 8, float4 4,
                               float6 6) */
  uint32_t rank;            /* dimensions, 0..AXL_MAX_FILE_MAX_RANK */
  uint32_t reserved;        /* 0 */
  uint64_t key_offset;      /* byte offset of the tensor label in the file */
  uint64_t key_size;        /* its length in bytes (not NUL-terminated) */
  uint64_t header_bytes;    /* bytes from the start of the file to the end of
                               the header (24 + metadata_size). After
                               AXL_ERROR_OUT_OF_RANGE: how many leading bytes
                               the parser needs to get further */
  uint64_t num_elements;    /* product of dims (1 for rank 0) */
  uint64_t data_offset;     /* byte offset of the data in the file, as stored */
  uint64_t data_bytes;      /* num_elements * storage bytes per element, where
                               every type takes whole bytes (float4 and float6
                               one byte per element, unpacked) */
  uint64_t dims[AXL_MAX_FILE_MAX_RANK]; /* elements per dimension, row-major;
                                           entries past rank are 0 */
} axl_max_file_header;

/* Parses the header of a `.max` file of `file_size` bytes whose first `size`
 * bytes (size <= file_size) are at `bytes`, and checks that the data lies
 * inside the file. Reads nothing outside bytes[0, size).
 * Errors (message via axl_last_error_message, MAX's text where MAX has one):
 *   AXL_ERROR_INVALID_ARGUMENT: a NULL pointer, size > file_size, a small
 *     struct_size; or a malformed file: bad magic ("... is not a max
 *     checkpoint ..."), major version > 0 ("Unable to read from version > 0."),
 *     a header cut short by the end of the file, an unknown dtype code
 *     ("N is not a valid DType"), metadata_size disagreeing with the key and
 *     rank ("Multiple buffers found in .max file. ..."), a shape whose element
 *     or byte count overflows 64 bits, data running past the end of the file.
 *   AXL_ERROR_OUT_OF_RANGE: the file is long enough but `size` bytes do not
 *     hold the whole header; out->header_bytes says how many are needed (call
 *     again with at least that many).
 * Unlike MAX, the stored data offset is checked against the file size; like
 * MAX, it is otherwise trusted (not compared with header_bytes). */
AXL_API axl_status axl_max_file_parse(const void* bytes, uint64_t size, uint64_t file_size,
                                      axl_max_file_header* out);

/* Bits per element of a MAX DType code (spec section 11): bool 8 (stored as
 * one byte), float4_e2m1fn 4, float6_* 6, float8_* 8, float16/bfloat16 16,
 * ... AXL_ERROR_INVALID_ARGUMENT naming the code if MAX has no such type. */
AXL_API axl_status axl_dtype_size_bits(uint32_t dtype_code, uint32_t* out_bits);

/* ======================================================================== */
/* Profiler spans (MAX's max.profiler Trace / Tracer; docs/profiler.md)     */
/* ======================================================================== */
/* Named, coloured spans per thread, sent to every sink that is available:
 * NVTX v3 (domain "axl", when the CUDA toolkit's headers were found at build
 * time; a tool attaches through NVTX_INJECTION64_PATH), roctx (libroctx64.so,
 * dlopen'ed on first use), a Chrome-trace/Perfetto JSON file
 * (AXL_PROFILE_OUTPUT) and an in-process collector.
 *
 * The level starts from AXL_ENABLE_PROFILING, read once when libaxl.so is
 * loaded: "on" or a true-like value (1, true, yes, on; any case) -> ON,
 * "detailed" -> DETAILED, anything else -> OFF. axl_profile_set_level
 * overrides it at any time. When the level is OFF a span costs one relaxed
 * atomic load (of the word at axl_profile_level_address(), read inline by
 * axl.hpp). */

enum {
  AXL_PROFILE_OFF = 0,      /* no spans (default) */
  AXL_PROFILE_ON = 1,       /* spans on */
  AXL_PROFILE_DETAILED = 2  /* spans on; backends may add finer markers */
};

/* Where the current level (AXL_PROFILE_*) lives, for a caller that checks it
 * on a hot path without a call: read it with a relaxed atomic load
 * (__atomic_load_n(axl_profile_level_address(), __ATOMIC_RELAXED)); never
 * write it (use axl_profile_set_level). The address is the same for the life
 * of the process. Replaces the exported data symbol axl_profile_level_word of
 * 1.0-1.2 (since 1.3): the library exports no data. Never fails. */
AXL_API const int32_t* axl_profile_level_address(void);

/* The current level (the same load, as a call). Never fails. */
AXL_API int32_t axl_profile_level(void);
/* Sets the level. AXL_ERROR_INVALID_ARGUMENT naming the value unless it is
 * an AXL_PROFILE_* constant. Spans open at the time stay open and still close
 * normally. */
AXL_API axl_status axl_profile_set_level(int32_t level);
/* The same by name: "off", "on" or "detailed" (case-sensitive, as MAX's
 * set_gpu_profiling_state). Other strings: AXL_ERROR_INVALID_ARGUMENT naming
 * the string and the three accepted values, and for NULL. */
AXL_API axl_status axl_profile_set_level_name(const char* name);

/* MAX's colour names, as ARGB with alpha 0xFF: "modular_purple" (0xFFB5BAF5),
 * "blue", "green", "orange", "purple", "red", "white", "yellow". Any other
 * name, or NULL, gives modular_purple, as MAX does. Never fails.
 * Bad input: modular_purple, as just said. */
AXL_API uint32_t axl_profile_color(const char* name);

/* Opens a span on the calling thread. Returns 1 if it opened one (the level
 * is not OFF), 0 otherwise; call axl_profile_pop only after a 1. message:
 * NUL-terminated, copied; NULL is taken as "". argb: 0xAARRGGBB; an alpha
 * of 0 is taken as opaque (MAX's table has no alpha). Never fails: out of
 * host memory it opens no span and returns 0. Bad input: a NULL message is
 * taken as "". */
AXL_API int32_t axl_profile_push(const char* message, uint32_t argb);
/* Closes the innermost span opened on the calling thread, whatever the level
 * is now. AXL_ERROR_INVALID_ARGUMENT if the thread has none open. */
AXL_API axl_status axl_profile_pop(void);
/* An instant marker on the calling thread (nothing when the level is OFF).
 * Never fails: out of host memory the marker is dropped. Bad input: a NULL
 * message is taken as "". */
AXL_API void axl_profile_mark(const char* message, uint32_t argb);
/* Spans open on the calling thread (0 when none). Never fails. */
AXL_API uint32_t axl_profile_depth(void);

/* JSON sink. path: the Chrome-trace file to write ("" or NULL: none). The
 * initial value comes from AXL_PROFILE_OUTPUT. "{rank}" in the path becomes
 * the first decimal OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID (else the
 * pid) and "{pid}" the pid, here, so axl_profile_get_output returns the
 * expanded path and the ranks of one MPI job write one file each. The
 * file is (re)written whole, through a temporary file and a rename, by
 * axl_profile_flush, at process exit (atexit; only in the process that set
 * the path, not in a fork()ed child) and from std::terminate, so it is
 * always valid JSON.
 * Events are kept in memory until then; changing the path keeps them.
 * The path is not opened here: a bad one fails at axl_profile_flush.
 * Always AXL_SUCCESS, but for the common AXL_ERROR_OUT_OF_HOST_MEMORY. */
AXL_API axl_status axl_profile_set_output(const char* path);
/* Two-call protocol: *out_size = bytes needed including the NUL ("" if none).
 * Errors: only the common AXL_ERROR_INVALID_ARGUMENT (NULL out_size). */
AXL_API axl_status axl_profile_get_output(char* buf, size_t capacity, size_t* out_size);
/* Writes the JSON file now. AXL_ERROR_INVALID_ARGUMENT if no output is set;
 * AXL_ERROR_INTERNAL naming the path and errno text if writing failed. */
AXL_API axl_status axl_profile_flush(void);

/* Sinks compiled in and found at run time (AXL_PROFILE_SINK_* bits). NVTX is
 * reported when compiled in (whether a tool is attached is NVTX's business);
 * roctx when libroctx64.so (or librocprofiler-sdk-roctx.so) could be loaded
 * (this call tries, once). */
enum {
  AXL_PROFILE_SINK_NVTX = 1u << 0,
  AXL_PROFILE_SINK_ROCTX = 1u << 1,
  AXL_PROFILE_SINK_JSON = 1u << 2,     /* an output path is set */
  AXL_PROFILE_SINK_COLLECTOR = 1u << 3 /* the collector is recording */
};
/* The AXL_PROFILE_SINK_* bits, as said above. Never fails. */
AXL_API uint32_t axl_profile_sinks(void);

/* Kinds of recorded events. */
enum {
  AXL_PROFILE_EVENT_SPAN = 0,   /* a closed span: start_ns..end_ns */
  AXL_PROFILE_EVENT_MARK = 1,   /* an instant marker: start_ns == end_ns */
  AXL_PROFILE_EVENT_LAUNCH = 2, /* a launch-trace entry (kernel, copy, fill)
                                   as enqueued; queue_id says on which queue */
  AXL_PROFILE_EVENT_DEVICE = 3  /* a device interval measured by two timing
                                   events (axl_event_elapsed_ms): start_ns is
                                   when the first was recorded (host clock),
                                   end_ns = start_ns + the elapsed time */
};

typedef struct axl_profile_event {
  size_t struct_size; /* set by the core: sizeof(axl_profile_event) as the
                         core was built (since 1.3); the array's stride, see
                         axl_profile_event_at */
  const char* name;   /* span message, mark message, kernel/API name; owned
                         by the snapshot */
  int32_t kind;       /* AXL_PROFILE_EVENT_* */
  uint32_t color;     /* ARGB as pushed (alpha forced to 0xFF); 0 for LAUNCH
                         and DEVICE */
  uint64_t thread_id; /* OS thread id (gettid) of the emitting thread */
  uint64_t queue_id;  /* LAUNCH, DEVICE: the queue's trace id; 0 otherwise */
  uint32_t depth;     /* SPAN/MARK: spans open around it on its thread */
  int32_t launch_kind;/* LAUNCH: AXL_TRACE_*; -1 otherwise */
  uint64_t start_ns;  /* steady clock (CLOCK_MONOTONIC), ns */
  uint64_t end_ns;    /* SPAN, DEVICE: end; others: == start_ns */
  uint64_t bytes;     /* LAUNCH of a copy or fill: bytes; 0 otherwise */
} axl_profile_event;

typedef struct axl_profile_events_s* axl_profile_events_t;

/* Starts the in-process collector, discarding what it held. While it runs,
 * every span closed, mark and (at a level other than OFF) launch is kept.
 * Spans are timed only while a recording sink (collector or JSON) is on: a
 * span opened before any was started is not recorded when it closes.
 * Always AXL_SUCCESS, but for the common AXL_ERROR_OUT_OF_HOST_MEMORY. */
AXL_API axl_status axl_profile_collector_start(void);
/* Stops the collector and hands over its events in the order they were
 * completed (a span when it closed). Release with axl_profile_events_release.
 * Errors: only the common AXL_ERROR_INVALID_ARGUMENT (NULL out); the
 * collector then keeps running. */
AXL_API axl_status axl_profile_collector_take(axl_profile_events_t* out);
/* The number of events. Errors: only the common AXL_ERROR_INVALID_HANDLE and
 * AXL_ERROR_INVALID_ARGUMENT (NULL out_count). */
AXL_API axl_status axl_profile_events_size(axl_profile_events_t events, size_t* out_count);
/* Valid until the snapshot is released. Step through the events with
 * axl_profile_event_at (as for launch-trace entries: a newer core's events
 * may be larger than this header's struct). Never fails. Bad input: NULL for
 * a NULL or released handle (and possibly for an empty snapshot). */
AXL_API const axl_profile_event* axl_profile_events_data(axl_profile_events_t events);
/* Event `index` of the array axl_profile_events_data returned. */
static inline const axl_profile_event* axl_profile_event_at(const axl_profile_event* events,
                                                            size_t index) {
  return (const axl_profile_event*)((const char*)events + index * events->struct_size);
}
/* Errors: only the common AXL_ERROR_INVALID_HANDLE. */
AXL_API axl_status axl_profile_events_release(axl_profile_events_t events);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AXL_AXL_H_ */
