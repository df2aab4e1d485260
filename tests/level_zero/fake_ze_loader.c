/* A stand-in for libze_loader.so.1 with no driver behind it, built from the
 * plugin's own entry-point table (ze_entry_points.def), so it exports every
 * symbol the plugin resolves unless the build renames one away:
 *   -DzeMemAllocDevice=axl_fake_renamed   exports no zeMemAllocDevice (a
 *                                         loader lacking a required symbol)
 *   -DzeInitDrivers=axl_fake_renamed      a pre-1.10 loader (zeInit path)
 * Stringizing does not expand macros, so each stub still knows its real name.
 *
 * Behaviour: zeInit succeeds; zeDriverGet and zeInitDrivers report 0
 * drivers; every other call fails with ZE_RESULT_ERROR_UNSUPPORTED_FEATURE
 * (the plugin must never reach them with no driver). Each stub takes one
 * pointer: the count argument of the two that report drivers. zeInit and
 * zeInitDrivers are logged to FAKE_CALL_LOG (fake_driver_util.h). */
#include <stdint.h>
#include <string.h>

#include "../core/fake_driver_util.h"

#define FAKE_ZE_SUCCESS 0
#define FAKE_ZE_ERROR_UNSUPPORTED_FEATURE 0x78000003

static int fake_call(const char* name, void* first) {
  if (strcmp(name, "zeInit") == 0 || strcmp(name, "zeInitDrivers") == 0) fake_log_call(name);
  if (strcmp(name, "zeInit") == 0) return FAKE_ZE_SUCCESS;
  if (strcmp(name, "zeDriverGet") == 0 || strcmp(name, "zeInitDrivers") == 0) {
    *(uint32_t*)first = 0;
    return FAKE_ZE_SUCCESS;
  }
  return FAKE_ZE_ERROR_UNSUPPORTED_FEATURE;
}

#define AXL_ZE_ENTRY(name, type, required) \
  __attribute__((visibility("default"))) int name(void* first) { return fake_call(#name, first); }
#include "ze_entry_points.def"
