// axl_virtual_probe: does one thing that may kill the process, so a test can
// watch it die (or not) from outside. Prints "key=value" lines, flushed
// before each risky step.
//
//   axl_virtual_probe oob          through the plugin's ABI: a copy that runs
//                                  64 bytes past the end of an allocation.
//                                  Guard mode: accepted, then SIGSEGV on the
//                                  queue's worker. Otherwise: OUT_OF_RANGE.
//   axl_virtual_probe use-after-free   (guard mode) a queued copy into memory
//                                  freed before it ran: SIGSEGV.
//   axl_virtual_probe deref        through the core: dereferences a device
//                                  address as a host pointer: SIGSEGV.
//
// The environment (AXL_VIRTUAL_DEVICES, AXL_VIRTUAL_GUARD, AXL_PLUGINS) comes
// from the test that starts it.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "axl/axl.h"
#include "virtual_direct.hpp"

namespace {

void kv(const std::string& k, const std::string& v) {
  std::printf("%s=%s\n", k.c_str(), v.c_str());
  std::fflush(stdout);
}

int fail(const std::string& why) {
  kv("error", why);
  return 2;
}

const char* status_name(axl_status s) { return axl_status_name(s); }

// Steps shared by the ABI modes: device 0, `bytes` of device memory, a queue.
struct Setup {
  const axl_plugin_table* t = nullptr;
  axl_pdevice dev = nullptr;
  axl_devaddr addr = 0;
  axl_pqueue queue = nullptr;
};

int setup(Setup& s, uint64_t bytes) {
  vd::Plugin& p = vd::plugin();
  if (!p.error.empty()) return fail(p.error);
  s.t = p.t;
  if (axl_status st = s.t->backend_init()) return fail(std::string("backend_init: ") + status_name(st));
  if (axl_status st = s.t->device_get(0, &s.dev))
    return fail(std::string("device_get: ") + status_name(st) + " (is AXL_VIRTUAL_DEVICES set?)");
  if (axl_status st = s.t->memory_alloc(s.dev, bytes, &s.addr))
    return fail(std::string("memory_alloc: ") + status_name(st));
  axl_queue_desc desc{};
  desc.struct_size = sizeof desc;
  if (axl_status st = s.t->queue_create(s.dev, &desc, &s.queue))
    return fail(std::string("queue_create: ") + status_name(st));
  return 0;
}

int oob() {
  Setup s;
  if (int rc = setup(s, 1000)) return rc;
  // The copy waits for a flag, so that what is printed before it runs is
  // printed before any fault.
  axl_pflag gate = nullptr;
  uint64_t* gate_value = nullptr;
  if (s.t->flag_create(s.dev, &gate) || s.t->flag_get_host_address(gate, &gate_value) ||
      s.t->queue_wait_flag(s.queue, gate, 1))
    return fail("gating the queue on a flag failed");
  // 1000 bytes are rounded up to 1024 (the 256-byte alignment); 64 more run
  // into whatever follows.
  std::vector<unsigned char> src(1024 + 64, 0xEE);
  const axl_status st = s.t->queue_copy_htod(s.queue, s.addr, src.data(), src.size());
  kv("enqueue", status_name(st));
  if (st != AXL_SUCCESS) kv("message", vd::plugin().host->last_report().message);
  kv("reached", "synchronize");
  __atomic_store_n(gate_value, 1, __ATOMIC_RELEASE);
  const axl_status sync = s.t->queue_synchronize(s.queue);
  kv("synchronize", status_name(sync));  // not reached in guard mode
  s.t->flag_destroy(gate);
  s.t->queue_destroy(s.queue);
  s.t->memory_free(s.dev, s.addr);
  s.t->backend_shutdown();
  return 0;
}

int use_after_free() {
  Setup s;
  if (int rc = setup(s, 4096)) return rc;
  axl_pflag flag = nullptr;
  uint64_t* value = nullptr;
  if (s.t->flag_create(s.dev, &flag) || s.t->flag_get_host_address(flag, &value))
    return fail("flag_create failed");
  std::vector<unsigned char> src(4096, 0xCD);
  if (s.t->queue_wait_flag(s.queue, flag, 1) || s.t->queue_copy_htod(s.queue, s.addr, src.data(), src.size()))
    return fail("enqueue failed");
  // Breaks the ABI's promise on purpose: the copy is still queued.
  if (axl_status st = s.t->memory_free(s.dev, s.addr)) return fail(std::string("memory_free: ") + status_name(st));
  kv("freed", "1");
  __atomic_store_n(value, 1, __ATOMIC_RELEASE);
  const axl_status sync = s.t->queue_synchronize(s.queue);
  kv("synchronize", status_name(sync));  // not reached in guard mode
  return 0;
}

int deref() {
  axl_device_t d = nullptr;
  axl_buffer_t b = nullptr;
  if (axl_device_get("gpu", 0, &d) != AXL_SUCCESS) return fail(std::string("axl_device_get: ") + axl_last_error_message());
  if (axl_buffer_create(d, 4096, 0, &b) != AXL_SUCCESS) return fail(axl_last_error_message());
  uint64_t addr = 0;
  axl_buffer_device_address(b, &addr);
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(addr));
  kv("address", hex);
  kv("reached", "deref");
  volatile const unsigned char* p = reinterpret_cast<volatile const unsigned char*>(addr);
  const unsigned char v = *p;  // must fault: no host memory is ever there
  kv("read", std::to_string(v));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "oob") return oob();
  if (mode == "use-after-free") return use_after_free();
  if (mode == "deref") return deref();
  std::fprintf(stderr, "usage: %s oob|use-after-free|deref\n", argv[0]);
  return 64;
}
