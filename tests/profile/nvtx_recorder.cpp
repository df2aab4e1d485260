// A minimal NVTX v3 tool for the tests: NVTX's documented injection entry
// point (InitializeInjectionNvtx2, found through NVTX_INJECTION64_PATH) fills
// the CORE2 callbacks, and every domain, push, pop and mark it receives is
// appended, one a line, to the file named by AXL_NVTX_RECORDER_OUT.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

std::mutex g_mu;
FILE* g_out = nullptr;

struct Domain {
  std::string name;
};

const char* domain_name(nvtxDomainHandle_t d) {
  return d ? reinterpret_cast<Domain*>(d)->name.c_str() : "<default>";
}

const char* message(const nvtxEventAttributes_t* a) {
  return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii ? a->message.ascii : "";
}

void line(const char* kind, nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (!g_out) return;
  if (a)
    fprintf(g_out, "%s %s %s %08X %d\n", kind, domain_name(d), message(a), a->color, a->colorType);
  else
    fprintf(g_out, "%s %s\n", kind, domain_name(d));
  fflush(g_out);
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  auto* d = new Domain{name ? name : ""};  // lives as long as the process
  auto h = reinterpret_cast<nvtxDomainHandle_t>(d);
  line("domain", h, nullptr);
  return h;
}

int NVTX_API range_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  line("push", d, a);
  return 0;
}

int NVTX_API range_pop(nvtxDomainHandle_t d) {
  line("pop", d, nullptr);
  return 0;
}

void NVTX_API mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { line("mark", d, a); }

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!cb || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table ||
      size < NVTX_CBID_CORE2_DomainCreateA)
    return 0;
  const char* path = getenv("AXL_NVTX_RECORDER_OUT");
  g_out = path ? fopen(path, "w") : nullptr;
  if (!g_out) return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(domain_create);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(range_push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(range_pop);
  *table[NVTX_CBID_CORE2_DomainMarkEx] = reinterpret_cast<NvtxFunctionPointer>(mark);
  fprintf(g_out, "init\n");
  fflush(g_out);
  return 1;
}
