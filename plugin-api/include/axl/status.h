/* axl/status.h: status codes shared by the application ABI (axl.h) and the
 * plugin ABI (plugin.h).
 *
 * C99, depends only on <stdint.h>. Codes are append-only: a code is never
 * renumbered or reused, so a plugin built against an older header and an
 * application built against a newer one agree on every value they both know.
 * A value the receiver does not know must be treated as AXL_ERROR_INTERNAL.
 */
#ifndef AXL_STATUS_H_
#define AXL_STATUS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every axl call returns one of these. 0 is success; errors are positive. */
typedef int32_t axl_status;

/* The codes, listed once: X(name, value, one-line meaning), in value order,
 * each with its contract in the comment above it. The enum below is
 * generated from the list, and so are axl_status_name, the virtual backend's
 * fault names and the Python exception table (axl._core.status_table), so a
 * new code is one entry here (plus its Python class, which a test asks for).
 * A new code takes the next value; a value is never reused. */
#define AXL_STATUS_CODES(X)                                                                        \
  X(AXL_SUCCESS, 0, "success")                                                                     \
  /* An argument is malformed: NULL where a value is needed, a zero or                             \
   * oversized size, a wrong struct_size, a bad enum value. */                                     \
  X(AXL_ERROR_INVALID_ARGUMENT, 1, "an argument is malformed")                                     \
  /* An index or id is outside the valid range (device id, offset + size past                      \
   * the end of a buffer). */                                                                      \
  X(AXL_ERROR_OUT_OF_RANGE, 2, "an index or id is out of range")                                   \
  /* A named thing does not exist (kernel name, plugin file). */                                   \
  X(AXL_ERROR_NOT_FOUND, 3, "a named thing does not exist")                                        \
  /* The backend does not implement the operation (a NULL table slot). */                          \
  X(AXL_ERROR_UNSUPPORTED, 4, "the backend does not implement the operation")                      \
  X(AXL_ERROR_OUT_OF_DEVICE_MEMORY, 5, "device memory is exhausted")                               \
  X(AXL_ERROR_OUT_OF_HOST_MEMORY, 6, "host memory is exhausted")                                   \
  /* The work is not finished yet (event query). Not a failure. */                                 \
  X(AXL_ERROR_NOT_READY, 7, "the work is not finished yet")                                        \
  /* The device failed or disappeared; its objects are unusable. */                                \
  X(AXL_ERROR_DEVICE_LOST, 8, "the device failed or disappeared")                                  \
  /* The backend cannot run here: driver library absent, stub library, no                          \
   * device, driver too old. The message says which and where. */                                  \
  X(AXL_ERROR_BACKEND_UNAVAILABLE, 9, "the backend cannot run here")                               \
  /* Plugin and core ABI majors differ, or a minor is below the floor. */                          \
  X(AXL_ERROR_VERSION_MISMATCH, 10, "plugin and core ABI versions disagree")                       \
  /* The process forked after this backend was initialised in the parent;                          \
   * the child must use spawn instead. */                                                          \
  X(AXL_ERROR_FORKED, 11, "the backend was initialised before fork()")                             \
  /* Host access to a buffer whose producing device work failed. */                                \
  X(AXL_ERROR_HOST_HAZARD, 12, "the buffer's producing device work failed")                        \
  /* A bug: a broken invariant, an exception caught at the ABI boundary. */                        \
  X(AXL_ERROR_INTERNAL, 13, "a bug: a broken invariant")                                           \
  /* A handle is NULL, already released, or of the wrong kind. */                                  \
  X(AXL_ERROR_INVALID_HANDLE, 14, "a handle is NULL, released or of the wrong kind")               \
  /* The operation is not valid in the object's current state (elapsed time                        \
   * of an event that was never recorded, a release after the parent died). */                     \
  X(AXL_ERROR_INVALID_STATE, 15, "not valid in the object's current state")                        \
  /* A wait with a deadline ran out. */                                                            \
  X(AXL_ERROR_TIMEOUT, 16, "a wait with a deadline ran out")                                       \
  /* A broken or shadowed plugin; the loader's own diagnostics. */                                 \
  X(AXL_ERROR_PLUGIN_INVALID, 17, "a broken or shadowed plugin")

#define AXL_STATUS_ENUMERATOR_(name, value, meaning) name = value,
enum {
  AXL_STATUS_CODES(AXL_STATUS_ENUMERATOR_)
  AXL_STATUS_FORCE_INT32 = 0x7fffffff
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AXL_STATUS_H_ */
