/* An application of an installed axl, built out of tree by
 * tests/install/run_install_test.sh: through find_package(axl) and through
 * pkg-config. Prints OK when a round trip through the cpu device's default
 * queue returns the bytes it sent, which also proves the installed plugin
 * folder was found with no AXL_* environment variables. */
#include <axl/axl.h>
#include <stdio.h>
#include <string.h>

/* Prints the failing call and the core's detail, then leaves main. */
#define CHECK(call)                                                          \
  do {                                                                       \
    axl_status s_ = (call);                                                  \
    if (s_ != AXL_SUCCESS) {                                                 \
      fprintf(stderr, "consumer: %s failed: %s: %s\n", #call,               \
              axl_status_name(s_), axl_last_error_message());                \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main(void) {
  axl_device_t cpu = NULL;
  axl_queue_t queue = NULL;
  axl_buffer_t buffer = NULL;
  uint32_t devices = 0;
  unsigned char in[16], out[16];
  int i;

  CHECK(axl_init());
  CHECK(axl_device_count(NULL, &devices));
  if (devices == 0) {
    fprintf(stderr, "consumer: no devices: the installed plugins were not found\n");
    return 1;
  }
  CHECK(axl_device_get("cpu", 0, &cpu));
  CHECK(axl_device_default_queue(cpu, &queue));
  CHECK(axl_buffer_create(cpu, sizeof in, AXL_BUFFER_FLAG_NONE, &buffer));

  for (i = 0; i < (int)sizeof in; ++i) in[i] = (unsigned char)(0xA5 ^ (i * 17));
  memset(out, 0, sizeof out);
  CHECK(axl_queue_copy_from_host(queue, buffer, 0, in, sizeof in));
  CHECK(axl_queue_copy_to_host(queue, out, buffer, 0, sizeof out));
  CHECK(axl_queue_synchronize(queue));
  if (memcmp(in, out, sizeof in) != 0) {
    fprintf(stderr, "consumer: the 16 bytes read back differ from those written\n");
    return 1;
  }

  CHECK(axl_buffer_release(buffer));
  CHECK(axl_queue_release(queue));
  CHECK(axl_device_release(cpu));
  printf("OK (axl %s, %u device(s))\n", axl_version_string(), devices);
  return 0;
}
