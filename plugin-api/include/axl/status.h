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

enum {
  AXL_SUCCESS = 0,
  /* An argument is malformed: NULL where a value is needed, a zero or
   * oversized size, a wrong struct_size, a bad enum value. */
  AXL_ERROR_INVALID_ARGUMENT = 1,
  /* An index or id is outside the valid range (device id, offset + size past
   * the end of a buffer). */
  AXL_ERROR_OUT_OF_RANGE = 2,
  /* A named thing does not exist (kernel name, plugin file). */
  AXL_ERROR_NOT_FOUND = 3,
  /* The backend does not implement the operation (a NULL table slot). */
  AXL_ERROR_UNSUPPORTED = 4,
  AXL_ERROR_OUT_OF_DEVICE_MEMORY = 5,
  AXL_ERROR_OUT_OF_HOST_MEMORY = 6,
  /* The work is not finished yet (event query). Not a failure. */
  AXL_ERROR_NOT_READY = 7,
  /* The device failed or disappeared; its objects are unusable. */
  AXL_ERROR_DEVICE_LOST = 8,
  /* The backend cannot run here: driver library absent, stub library, no
   * device, driver too old. The message says which and where. */
  AXL_ERROR_BACKEND_UNAVAILABLE = 9,
  /* Plugin and core ABI majors differ, or a minor is below the floor. */
  AXL_ERROR_VERSION_MISMATCH = 10,
  /* The process forked after this backend was initialised in the parent;
   * the child must use spawn instead. */
  AXL_ERROR_FORKED = 11,
  /* Host access to a buffer whose producing device work failed. */
  AXL_ERROR_HOST_HAZARD = 12,
  /* A bug: a broken invariant, an exception caught at the ABI boundary. */
  AXL_ERROR_INTERNAL = 13,
  /* A handle is NULL, already released, or of the wrong kind. */
  AXL_ERROR_INVALID_HANDLE = 14,
  /* The operation is not valid in the object's current state (elapsed time
   * of an event that was never recorded, a release after the parent died). */
  AXL_ERROR_INVALID_STATE = 15,
  /* A wait with a deadline ran out. */
  AXL_ERROR_TIMEOUT = 16,
  /* A broken or shadowed plugin; the loader's own diagnostics. */
  AXL_ERROR_PLUGIN_INVALID = 17,
  AXL_STATUS_FORCE_INT32 = 0x7fffffff
};

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AXL_STATUS_H_ */
