// External profiler sinks: NVTX v3 and roctx.
//
// NVTX v3 is header-only (compiled in when CMake found the CUDA toolkit's
// nvtx3 headers, AXL_HAVE_NVTX). Its first call looks for a tool (Nsight
// Systems, or any library named by NVTX_INJECTION64_PATH); with none, every
// later call is a null-pointer test. axl's spans live in the domain "axl".
//
// roctx has no injection: the library itself is the entry point, so it is
// dlopen'ed once, on the first span, when it exists (libroctx64.so, the
// legacy roctracer name, then rocprofiler-sdk's). Message only; no colour.
#include <dlfcn.h>

#include <mutex>

#include "internal.hpp"
#include "profile.hpp"

#if AXL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace axl::core {
namespace {

#if AXL_HAVE_NVTX
nvtxDomainHandle_t nvtx_domain() {
  static nvtxDomainHandle_t d = nvtxDomainCreateA("axl");
  return d;
}

nvtxEventAttributes_t nvtx_attributes(const char* message, uint32_t argb) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = argb;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  return a;
}
#endif

struct Roctx {
  int (*push)(const char*) = nullptr;
  int (*pop)() = nullptr;
  void (*mark)(const char*) = nullptr;
};

// Loaded once; never unloaded (a tool may hold pointers into it).
const Roctx& roctx() {
  static const Roctx r = [] {
    Roctx t;
    for (const char* lib : {"libroctx64.so", "librocprofiler-sdk-roctx.so"}) {
      void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      t.push = reinterpret_cast<int (*)(const char*)>(dlsym(h, "roctxRangePushA"));
      t.pop = reinterpret_cast<int (*)()>(dlsym(h, "roctxRangePop"));
      t.mark = reinterpret_cast<void (*)(const char*)>(dlsym(h, "roctxMarkA"));
      if (t.push && t.pop && t.mark) return t;
      logf(AXL_LOG_WARN, "%s does not export roctxRangePushA, roctxRangePop and roctxMarkA; "
           "not using it for profiler spans", lib);
      t = Roctx{};  // incomplete surface: treated as absent
    }
    return t;
  }();
  return r;
}

}  // namespace

void tools_push(const char* message, uint32_t argb) {
#if AXL_HAVE_NVTX
  nvtxEventAttributes_t a = nvtx_attributes(message, argb);
  nvtxDomainRangePushEx(nvtx_domain(), &a);
#else
  (void)argb;
#endif
  if (auto p = roctx().push) p(message);
}

void tools_pop() {
#if AXL_HAVE_NVTX
  nvtxDomainRangePop(nvtx_domain());
#endif
  if (auto p = roctx().pop) p();
}

void tools_mark(const char* message, uint32_t argb) {
#if AXL_HAVE_NVTX
  nvtxEventAttributes_t a = nvtx_attributes(message, argb);
  nvtxDomainMarkEx(nvtx_domain(), &a);
#else
  (void)argb;
#endif
  if (auto m = roctx().mark) m(message);
}

uint32_t tools_sinks() {
  uint32_t bits = 0;
#if AXL_HAVE_NVTX
  bits |= AXL_PROFILE_SINK_NVTX;
#endif
  if (roctx().push) bits |= AXL_PROFILE_SINK_ROCTX;
  return bits;
}

}  // namespace axl::core
