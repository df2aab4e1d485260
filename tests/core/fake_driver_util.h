/* Shared by the fake vendor libraries of the driver-API tests (tests/cuda,
 * tests/hip, tests/level_zero): reading the environment variables that
 * steer them, and the call log the counting tests read. */
#ifndef AXL_TESTS_FAKE_DRIVER_UTIL_H
#define AXL_TESTS_FAKE_DRIVER_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The integer in variable `name`, or `fallback` when unset or empty. */
static inline int fake_env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/* Whether `symbol` is one of the comma-separated names in variable `list_var`. */
static inline int fake_listed(const char* list_var, const char* symbol) {
  const char* list = getenv(list_var);
  size_t n = strlen(symbol);
  while (list && *list) {
    const char* end = strchr(list, ',');
    size_t len = end ? (size_t)(end - list) : strlen(list);
    if (len == n && strncmp(list, symbol, n) == 0) return 1;
    list = end ? end + 1 : NULL;
  }
  return 0;
}

/* Appends `call` as a line to the file FAKE_CALL_LOG names (when set), so
 * a test can tell which entry points a process reached: e.g. that counting
 * devices never called cuInit. */
static inline void fake_log_call(const char* call) {
  const char* path = getenv("FAKE_CALL_LOG");
  if (!path || !*path) return;
  FILE* f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%s\n", call);
  fclose(f);
}

#endif
