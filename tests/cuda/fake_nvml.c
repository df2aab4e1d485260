/* A fake libnvidia-ml for the device-count tests: nvmlInit_v2 succeeds (or
 * answers FAKE_NVML_INIT_RESULT), nvmlDeviceGetCount_v2 reports
 * FAKE_NVML_COUNT GPUs (default 1) whose UUIDs are GPU-fa4e0000-<index>, and
 * every call is logged to FAKE_CALL_LOG (fake_driver_util.h). Only what the
 * cuda backend's census (plugins/cuda/src/census.cpp) calls. */
#include <stdint.h>
#include <stdio.h>

#include "../core/fake_driver_util.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

FAKE_EXPORT int nvmlInit_v2(void) {
  fake_log_call("nvmlInit_v2");
  return fake_env_int("FAKE_NVML_INIT_RESULT", 0);
}
FAKE_EXPORT int nvmlShutdown(void) {
  fake_log_call("nvmlShutdown");
  return 0;
}
FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned* n) {
  fake_log_call("nvmlDeviceGetCount_v2");
  *n = (unsigned)fake_env_int("FAKE_NVML_COUNT", 1);
  return 0;
}
FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) {
  *d = (void*)(uintptr_t)(i + 1);
  return 0;
}
FAKE_EXPORT int nvmlDeviceGetUUID(void* d, char* text, unsigned n) {
  snprintf(text, n, "GPU-fa4e0000-%u", (unsigned)((uintptr_t)d - 1));
  return 0;
}
