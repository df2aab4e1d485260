/* Shared by the fake vendor libraries of the driver-API tests (tests/cuda,
 * tests/hip): reading the environment variables that steer them. */
#ifndef AXL_TESTS_FAKE_DRIVER_UTIL_H
#define AXL_TESTS_FAKE_DRIVER_UTIL_H

#include <stdlib.h>
#include <string.h>

/* The integer in variable `name`, or `fallback` when unset or empty. */
static int fake_env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/* Whether `symbol` is one of the comma-separated names in variable `list_var`. */
static int fake_listed(const char* list_var, const char* symbol) {
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

#endif
