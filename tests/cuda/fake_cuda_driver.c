/* A fake libcuda for the symbol-table tests: it exports cuGetProcAddress_v2
 * and answers every lookup, except the names listed (comma-separated) in
 * FAKE_CUDA_OMIT, with an entry point. cuInit answers FAKE_CUDA_INIT_RESULT
 * (default 0), cuDriverGetVersion FAKE_CUDA_VERSION (default 12080) and
 * cuDeviceGetCount 0 devices, so a backend that accepts the fake loads with
 * no device and calls nothing else. Every other entry point answers
 * CUDA_ERROR_NOT_SUPPORTED (801) if called. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef int fake_result;

static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

static fake_result fake_init(unsigned flags) {
  (void)flags;
  return env_int("FAKE_CUDA_INIT_RESULT", 0);
}
static fake_result fake_driver_version(int* v) {
  *v = env_int("FAKE_CUDA_VERSION", 12080);
  return 0;
}
static fake_result fake_device_count(int* n) {
  *n = 0;
  return 0;
}
static fake_result fake_not_supported(void) { return 801; }

/* Whether `name` is one of FAKE_CUDA_OMIT's comma-separated names. */
static int omitted(const char* name) {
  const char* list = getenv("FAKE_CUDA_OMIT");
  size_t n = strlen(name);
  while (list && *list) {
    const char* end = strchr(list, ',');
    size_t len = end ? (size_t)(end - list) : strlen(list);
    if (len == n && strncmp(list, name, n) == 0) return 1;
    list = end ? end + 1 : NULL;
  }
  return 0;
}

FAKE_EXPORT fake_result cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                            uint64_t flags, int* status) {
  (void)version;
  (void)flags;
  if (omitted(symbol)) {
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
