/* A fake libcuda for the symbol-table tests: it exports cuGetProcAddress_v2
 * and answers every lookup, except the names listed (comma-separated) in
 * FAKE_CUDA_OMIT, with an entry point. cuInit answers FAKE_CUDA_INIT_RESULT
 * (default 0), cuDriverGetVersion FAKE_CUDA_VERSION (default 12080) and
 * cuDeviceGetCount 0 devices, so a backend that accepts the fake loads with
 * no device and calls nothing else. Every other entry point answers
 * CUDA_ERROR_NOT_SUPPORTED (801) if called. cuInit and cuDeviceGetCount are
 * logged to FAKE_CALL_LOG (fake_driver_util.h). */
#include <stdint.h>
#include <string.h>

#include "../core/fake_driver_util.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef int fake_result;

static fake_result fake_init(unsigned flags) {
  (void)flags;
  fake_log_call("cuInit");
  return fake_env_int("FAKE_CUDA_INIT_RESULT", 0);
}
static fake_result fake_driver_version(int* v) {
  *v = fake_env_int("FAKE_CUDA_VERSION", 12080);
  return 0;
}
static fake_result fake_device_count(int* n) {
  fake_log_call("cuDeviceGetCount");
  *n = 0;
  return 0;
}
static fake_result fake_not_supported(void) { return 801; }

FAKE_EXPORT fake_result cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                            uint64_t flags, int* status) {
  (void)version;
  (void)flags;
  if (fake_listed("FAKE_CUDA_OMIT", symbol)) {
    *pfn = NULL;
    if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    return 500;              /* CUDA_ERROR_NOT_FOUND */
  }
  if (strcmp(symbol, "cuInit") == 0)
    *pfn = (void*)fake_init;
  else if (strcmp(symbol, "cuDriverGetVersion") == 0)
    *pfn = (void*)fake_driver_version;
  else if (strcmp(symbol, "cuDeviceGetCount") == 0)
    *pfn = (void*)fake_device_count;
  else
    *pfn = (void*)fake_not_supported;
  if (status) *status = 0;
  return 0;
}
