// Stands in for AMD's libroctx64.so in the tests: the three calls the core
// resolves, each appending a line to the file named by AXL_FAKE_ROCTX_OUT.
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {
std::mutex g_mu;
void line(const char* kind, const char* msg) {
  std::lock_guard<std::mutex> lk(g_mu);
  static FILE* out = [] {
    const char* p = getenv("AXL_FAKE_ROCTX_OUT");
    return p ? fopen(p, "w") : nullptr;
  }();
  if (!out) return;
  fprintf(out, "%s %s\n", kind, msg ? msg : "");
  fflush(out);
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int roctxRangePushA(const char* msg) {
  line("push", msg);
  return 0;
}
__attribute__((visibility("default"))) int roctxRangePop() {
  line("pop", "");
  return 0;
}
__attribute__((visibility("default"))) void roctxMarkA(const char* msg) { line("mark", msg); }
}
