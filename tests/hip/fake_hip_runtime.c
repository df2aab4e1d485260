/* A fake libamdhip64 for the symbol-table tests: it exports
 * hipGetProcAddress (as HIP 6.2+ does) and answers every lookup, except the
 * names listed (comma-separated) in FAKE_HIP_OMIT, with an entry point.
 * hipInit answers FAKE_HIP_INIT_RESULT (default 0), hipGetDeviceCount
 * FAKE_HIP_COUNT_RESULT (default 0) with 0 devices, hipDriverGetVersion
 * 60342134 (6.3.42134), and hipGetErrorName "" (so the plugin's own names
 * show). Every other entry point answers hipErrorNotSupported (801).
 * hipInit is logged to FAKE_CALL_LOG (fake_driver_util.h), and so is the
 * library's loading (its constructor), so a test can tell that counting
 * never even mapped it. */
#include <stdint.h>
#include <string.h>

#include "../core/fake_driver_util.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef int fake_result;

static fake_result fake_init(unsigned flags) {
  (void)flags;
  fake_log_call("hipInit");
  return fake_env_int("FAKE_HIP_INIT_RESULT", 0);
}
__attribute__((constructor)) static void fake_loaded(void) { fake_log_call("loaded"); }

static fake_result fake_device_count(int* n) {
  *n = 0;
  return fake_env_int("FAKE_HIP_COUNT_RESULT", 0);
}
static fake_result fake_driver_version(int* v) {
  *v = 60342134;
  return 0;
}
static const char* fake_error_name(fake_result r) {
  (void)r;
  return "";
}
static fake_result fake_not_supported(void) { return 801; }

FAKE_EXPORT fake_result hipGetProcAddress(const char* symbol, void** pfn, int version, uint64_t flags,
                                          int* status) {
  (void)version;
  (void)flags;
  *pfn = NULL;
  if (fake_listed("FAKE_HIP_OMIT", symbol)) {
    if (status) *status = 1; /* HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    return 500;              /* hipErrorNotFound */
  }
  if (strcmp(symbol, "hipInit") == 0)
    *pfn = (void*)fake_init;
  else if (strcmp(symbol, "hipGetDeviceCount") == 0)
    *pfn = (void*)fake_device_count;
  else if (strcmp(symbol, "hipDriverGetVersion") == 0)
    *pfn = (void*)fake_driver_version;
  else if (strcmp(symbol, "hipGetErrorName") == 0)
    *pfn = (void*)fake_error_name;
  else
    *pfn = (void*)fake_not_supported;
  if (status) *status = 0;
  return 0;
}
