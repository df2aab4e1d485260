/* The broken-plugin matrix: one source, compiled once per variant by
 * CMakeLists_matrix.cmake with the macros below, so every way a plugin can be
 * broken is a real .so the loader has to survive.
 *
 * Without a variant macro it is a minimal working backend: one device (label
 * "gpu", api "test"), device memory from the C heap, queue operations run
 * synchronously at enqueue, events complete as soon as they exist. Optional
 * slots are left NULL on purpose, so the core's "NULL slot = UNSUPPORTED"
 * path is exercised by every good variant.
 *
 * Macros (set by CMakeLists_matrix.cmake):
 *   TP_NAME_ID=ident       info.name (stringified)
 *   TP_VARIANT_ID=ident    info.version, so two plugins of one name differ
 *   TP_NO_ENTRY            exports axl_plugin_negotiate_v1 instead
 *   TP_WRONG_MAJOR         built for ABI major 2: refuses a major-1 core
 *   TP_MISSING_SLOT        queue_create and memory_alloc (REQUIRED) are NULL
 *   TP_TABLE_SIZE=n        table struct_size (default sizeof)
 *   TP_INFO_SIZE=n         info struct_size (default sizeof)
 *   TP_NULL_TABLE          negotiate succeeds but returns table == NULL
 *   TP_NEGOTIATE_FAILS     report_error, then AXL_ERROR_INTERNAL
 *   TP_NEGOTIATE_THROWS    throws std::runtime_error out of negotiate (C++)
 *   TP_UNDEFINED_SYMBOL    calls a function nothing defines
 *   TP_INIT_UNAVAILABLE    backend_init answers BACKEND_UNAVAILABLE
 *   TP_EXTRA_EXPORT        also exports axl_test_extra_symbol
 *   TP_CENSUS_TWO          counts 2 devices until backend_init ran, then 1
 *                          (a census the driver's count corrects)
 *
 * Written in the common subset of C11 and C++20 so that TP_NEGOTIATE_THROWS
 * can include it from a .cpp file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axl/plugin.h"

#ifdef TP_NEGOTIATE_THROWS
#ifndef __cplusplus
#error "TP_NEGOTIATE_THROWS needs a C++ compile (test_plugin_throws.cpp)"
#endif
#include <stdexcept>
#endif

#define TP_STR2(x) #x
#define TP_STR(x) TP_STR2(x)

#ifndef TP_NAME_ID
#error "TP_NAME_ID must name the plugin"
#endif
#ifndef TP_VARIANT_ID
#define TP_VARIANT_ID TP_NAME_ID
#endif
#define TP_NAME TP_STR(TP_NAME_ID)

#ifdef TP_WRONG_MAJOR
#define TP_ABI_MAJOR 2u
#else
#define TP_ABI_MAJOR ((uint32_t)AXL_PLUGIN_ABI_MAJOR)
#endif

#ifdef TP_NO_ENTRY
/* A plausible mistake: the right signature under a wrong name. */
#define TP_ENTRY axl_plugin_negotiate_v1
#else
#define TP_ENTRY axl_plugin_negotiate
#endif

#ifndef TP_TABLE_SIZE
#define TP_TABLE_SIZE sizeof(axl_plugin_table)
#endif
#ifndef TP_INFO_SIZE
#define TP_INFO_SIZE sizeof(axl_plugin_info)
#endif

/* Plugin objects: the ABI leaves these struct types for the plugin to define. */
struct axl_pdevice_s {
  int unused;
};
struct axl_pqueue_s {
  uint64_t trace_id;
  /* Threads inside tp_queue_copy_htod on this queue right now: this plugin
   * does not set AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE, so the core must never
   * let it exceed 1 (plugin.h), and the copy fails if it does. */
  int entered;
};
struct axl_pevent_s {
  uint32_t flags;
};

static const axl_host_services* tp_host;
static struct axl_pdevice_s tp_device;

static axl_status tp_fail(axl_status status, int64_t native_code,
                          const char* native_name, const char* message) {
  if (tp_host != NULL && tp_host->report_error != NULL)
    tp_host->report_error(tp_host->ctx, status, native_code, native_name, message);
  return status;
}

/* The core prefixes messages with the backend name. */
static void tp_log(int32_t level, const char* message) {
  if (tp_host != NULL && tp_host->log != NULL) tp_host->log(tp_host->ctx, level, message);
}

#ifdef TP_UNDEFINED_SYMBOL
/* Defined nowhere: dlopen(RTLD_NOW) must fail and dlerror must name it. */
extern int axl_test_undefined_function(void);
#endif

#ifdef TP_EXTRA_EXPORT
/* Visible despite -fvisibility=hidden; exported because this variant is
 * linked without the version script. */
AXL_PLUGIN_EXPORT int axl_test_extra_symbol(void) { return 42; }
#endif

/* ---------------------------------------------------------------- backend */

#ifdef TP_CENSUS_TWO
static int tp_initialised;
#endif

static axl_status tp_backend_init(void) {
#ifdef TP_UNDEFINED_SYMBOL
  if (axl_test_undefined_function() != 0) return AXL_ERROR_INTERNAL;
#endif
#ifdef TP_INIT_UNAVAILABLE
  return tp_fail(AXL_ERROR_BACKEND_UNAVAILABLE, 100, "FAKE_ERROR_NO_DEVICE",
                 "no device: fake driver");
#else
  tp_log(AXL_LOG_DEBUG, "backend_init");
#ifdef TP_CENSUS_TWO
  tp_initialised = 1;
#endif
  return AXL_SUCCESS;
#endif
}

static axl_status tp_backend_shutdown(void) { return AXL_SUCCESS; }

static axl_status tp_backend_device_count(uint32_t* out_count) {
  if (out_count == NULL)
    return tp_fail(AXL_ERROR_INVALID_ARGUMENT, 0, NULL, "out_count is NULL");
#ifdef TP_CENSUS_TWO
  *out_count = tp_initialised ? 1 : 2;
#else
  *out_count = 1;
#endif
  return AXL_SUCCESS;
}

static axl_status tp_backend_set_option(const char* key, const char* value) {
  (void)key;
  (void)value;
  return tp_fail(AXL_ERROR_NOT_FOUND, 0, NULL, "unknown option");
}

/* ----------------------------------------------------------------- device */

static axl_status tp_device_get(uint32_t index, axl_pdevice* out_device) {
  if (out_device == NULL)
    return tp_fail(AXL_ERROR_INVALID_ARGUMENT, 0, NULL, "out_device is NULL");
  if (index != 0) return tp_fail(AXL_ERROR_OUT_OF_RANGE, 0, NULL, "one device only");
  *out_device = &tp_device;
  return AXL_SUCCESS;
}

static axl_status tp_device_get_properties(axl_pdevice device,
                                           axl_device_properties* props) {
  axl_device_properties p;
  size_t n;
  (void)device;
  if (props == NULL || props->struct_size < sizeof(size_t))
    return tp_fail(AXL_ERROR_INVALID_ARGUMENT, 0, NULL, "bad properties block");
  memset(&p, 0, sizeof p);
  p.struct_size = props->struct_size;
  snprintf(p.label, sizeof p.label, "gpu");
  snprintf(p.api, sizeof p.api, "test");
  snprintf(p.model_name, sizeof p.model_name, "axl test device (%s)",
           TP_STR(TP_VARIANT_ID));
  p.total_memory_bytes = (uint64_t)1 << 30;
  p.max_single_alloc_bytes = (uint64_t)1 << 30;
  p.is_host_unified = 1;
  p.is_compatible = 1;
  /* Only the fields inside the caller's struct_size: it may be an older core. */
  n = props->struct_size < sizeof p ? props->struct_size : sizeof p;
  memcpy(props, &p, n);
  return AXL_SUCCESS;
}

/* ----------------------------------------------------------------- memory */

static void* tp_ptr(axl_devaddr a) { return (void*)(uintptr_t)a; }

#ifndef TP_MISSING_SLOT
static axl_status tp_memory_alloc(axl_pdevice device, uint64_t bytes,
                                  axl_devaddr* out_address) {
  void* p;
  (void)device;
  if (out_address == NULL || bytes == 0)
    return tp_fail(AXL_ERROR_INVALID_ARGUMENT, 0, NULL, "bad allocation request");
  /* aligned_alloc wants a multiple of the alignment. */
  p = aligned_alloc(256, (size_t)((bytes + 255) & ~(uint64_t)255));
  if (p == NULL) return tp_fail(AXL_ERROR_OUT_OF_DEVICE_MEMORY, 0, NULL, "malloc failed");
  *out_address = (axl_devaddr)(uintptr_t)p;
  return AXL_SUCCESS;
}
#endif

static axl_status tp_memory_free(axl_pdevice device, axl_devaddr address) {
  (void)device;
  free(tp_ptr(address));
  return AXL_SUCCESS;
}

/* ------------------------------------------------------------------ queue */

#ifndef TP_MISSING_SLOT
static axl_status tp_queue_create(axl_pdevice device, const axl_queue_desc* desc,
                                  axl_pqueue* out_queue) {
  struct axl_pqueue_s* q;
  (void)device;
  if (desc == NULL || desc->struct_size < sizeof(axl_queue_desc) || out_queue == NULL)
    return tp_fail(AXL_ERROR_INVALID_ARGUMENT, 0, NULL, "bad queue descriptor");
  if (desc->flags != AXL_QUEUE_FLAG_NONE)
    return tp_fail(AXL_ERROR_INVALID_ARGUMENT, 0, NULL, "unknown queue flags");
  q = (struct axl_pqueue_s*)malloc(sizeof *q);
  if (q == NULL) return tp_fail(AXL_ERROR_OUT_OF_HOST_MEMORY, 0, NULL, "malloc failed");
  q->trace_id = desc->trace_id;
  q->entered = 0;
  *out_queue = q;
  return AXL_SUCCESS;
}
#endif

static axl_status tp_queue_destroy(axl_pqueue queue) {
  free(queue);
  return AXL_SUCCESS;
}

/* Work runs at enqueue, so there is never anything to wait for. */
static axl_status tp_queue_synchronize(axl_pqueue queue) {
  (void)queue;
  return AXL_SUCCESS;
}

static axl_status tp_queue_copy_htod(axl_pqueue queue, axl_devaddr dst, const void* src,
                                     uint64_t bytes) {
  int i, overlapped;
  /* GCC's atomic builtins: the same in the C and the C++ build of this file. */
  overlapped = __atomic_fetch_add(&queue->entered, 1, __ATOMIC_ACQ_REL) != 0;
  memcpy(tp_ptr(dst), src, (size_t)bytes);
  /* Stays inside a while, so that an unserialised second caller meets it. */
  for (i = 0; i < 64 && !overlapped; ++i) overlapped = __atomic_load_n(&queue->entered, __ATOMIC_ACQUIRE) != 1;
  __atomic_fetch_sub(&queue->entered, 1, __ATOMIC_ACQ_REL);
  if (overlapped)
    return tp_fail(AXL_ERROR_INTERNAL, 0, NULL,
                   "two threads were inside queue_copy_htod on one queue at once; the core serialises enqueues "
                   "for a plugin without AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE");
  return AXL_SUCCESS;
}

static axl_status tp_queue_copy_dtoh(axl_pqueue queue, void* dst, axl_devaddr src,
                                     uint64_t bytes) {
  (void)queue;
  memcpy(dst, tp_ptr(src), (size_t)bytes);
  return AXL_SUCCESS;
}

static axl_status tp_queue_copy_dtod(axl_pqueue queue, axl_devaddr dst, axl_devaddr src,
                                     uint64_t bytes) {
  (void)queue;
  memmove(tp_ptr(dst), tp_ptr(src), (size_t)bytes);
  return AXL_SUCCESS;
}

static axl_status tp_queue_record_event(axl_pqueue queue, axl_pevent event) {
  (void)queue;
  (void)event;
  return AXL_SUCCESS;
}

static axl_status tp_queue_wait_event(axl_pqueue queue, axl_pevent event) {
  (void)queue;
  (void)event;
  return AXL_SUCCESS;
}

/* ------------------------------------------------------------------ event */

static axl_status tp_event_create(axl_pdevice device, uint32_t flags,
                                  axl_pevent* out_event) {
  struct axl_pevent_s* e;
  (void)device;
  if (out_event == NULL)
    return tp_fail(AXL_ERROR_INVALID_ARGUMENT, 0, NULL, "out_event is NULL");
  e = (struct axl_pevent_s*)malloc(sizeof *e);
  if (e == NULL) return tp_fail(AXL_ERROR_OUT_OF_HOST_MEMORY, 0, NULL, "malloc failed");
  e->flags = flags;
  *out_event = e;
  return AXL_SUCCESS;
}

static axl_status tp_event_destroy(axl_pevent event) {
  free(event);
  return AXL_SUCCESS;
}

static axl_status tp_event_synchronize(axl_pevent event) {
  (void)event;
  return AXL_SUCCESS;
}

static axl_status tp_event_query(axl_pevent event) {
  (void)event;
  return AXL_SUCCESS;
}

/* ------------------------------------------------------------------ table */

#ifdef TP_MISSING_SLOT
#define TP_QUEUE_CREATE NULL
#define TP_MEMORY_ALLOC NULL
#else
#define TP_QUEUE_CREATE tp_queue_create
#define TP_MEMORY_ALLOC tp_memory_alloc
#endif

/* The slots this backend implements, in declaration order (C++20 designated
 * initialisers require it). Every other slot of plugin.h's list, including
 * any slot appended later, is NULL by the rules of initialisation: the
 * optional ones this backend does not need, so a new slot costs this file
 * nothing. C++'s -Wextra warns about members a designated initialiser
 * leaves out even though zero is what is meant; C does not. */
#ifdef __cplusplus
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
static const axl_plugin_table tp_table = {
    .struct_size = TP_TABLE_SIZE,
    .backend_init = tp_backend_init,
    .backend_shutdown = tp_backend_shutdown,
    .backend_device_count = tp_backend_device_count,
    .backend_set_option = tp_backend_set_option,
    .device_get = tp_device_get,
    .device_get_properties = tp_device_get_properties,
    .memory_alloc = TP_MEMORY_ALLOC,
    .memory_free = tp_memory_free,
    .queue_create = TP_QUEUE_CREATE,
    .queue_destroy = tp_queue_destroy,
    .queue_synchronize = tp_queue_synchronize,
    .queue_copy_htod = tp_queue_copy_htod,
    .queue_copy_dtoh = tp_queue_copy_dtoh,
    .queue_copy_dtod = tp_queue_copy_dtod,
    .queue_record_event = tp_queue_record_event,
    .queue_wait_event = tp_queue_wait_event,
    .event_create = tp_event_create,
    .event_destroy = tp_event_destroy,
    .event_synchronize = tp_event_synchronize,
    .event_query = tp_event_query,
};
#ifdef __cplusplus
#pragma GCC diagnostic pop
#endif

static const axl_plugin_info tp_info = {
    .struct_size = TP_INFO_SIZE,
    .name = TP_NAME,
    .api = "test",
    .version = TP_STR(TP_VARIANT_ID),
    .flags = AXL_PLUGIN_FLAG_FORK_SAFE,
    .reserved = 0,
};

/* ------------------------------------------------------------- negotiate */

static uint32_t tp_min(uint32_t a, uint32_t b) { return a < b ? a : b; }

AXL_PLUGIN_EXPORT axl_status TP_ENTRY(axl_negotiate_args* args) {
  if (args == NULL || args->struct_size < sizeof(axl_negotiate_args))
    return AXL_ERROR_INVALID_ARGUMENT;
  if (args->core_abi_major != TP_ABI_MAJOR) return AXL_ERROR_VERSION_MISMATCH;
  if (args->host == NULL) return AXL_ERROR_INVALID_ARGUMENT;
  tp_host = args->host;
  /* Host services must be callable from inside negotiate. */
  tp_log(AXL_LOG_DEBUG, "negotiate");
#ifdef TP_NEGOTIATE_THROWS
  throw std::runtime_error(TP_NAME ": thrown out of negotiate on purpose");
#endif
#ifdef TP_NEGOTIATE_FAILS
  return tp_fail(AXL_ERROR_INTERNAL, 0, NULL, "negotiate failed on purpose");
#endif
  args->plugin_abi_minor = tp_min(args->core_abi_minor, AXL_PLUGIN_ABI_MINOR);
  args->info = &tp_info;
#ifdef TP_NULL_TABLE
  (void)&tp_table;
  args->table = NULL;
#else
  args->table = &tp_table;
#endif
  return AXL_SUCCESS;
}
