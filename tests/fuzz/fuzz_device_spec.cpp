// libFuzzer target for the device-spec grammar (axl_device_spec_parse).
// Beyond ASan/UBSan cleanliness it checks: success or INVALID_ARGUMENT with a
// message; the two-call protocol; cpu is (0,-1) and accelerator ids are
// >= 0, each once; printing the parsed ids back as "gpu:<ids>" reparses to
// the same list; and where the CLI count reads the same text it agrees
// (fuzz_grammar.hpp). The input is the text up to its first NUL byte.
//
// "gpu:all" is skipped: it counts the devices, so it would load the plugins
// (slow, and not the grammar); the C++ tests cover it.
#include "fuzz_grammar.hpp"

namespace {

bool counts_devices(const std::string& text) {
  std::string t;
  for (char c : text)
    if (c != ' ' && c != '\t') t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t == "gpu:all";
}

}  // namespace

// The status of the parse, for the replay driver's valid_*/bad_* check.
axl_status axl_fuzz_grammar_status(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), strnlen(reinterpret_cast<const char*>(data), size));
  if (counts_devices(text)) return AXL_SUCCESS;
  size_t n = 0;
  return axl_device_spec_parse(text.c_str(), nullptr, 0, &n);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), strnlen(reinterpret_cast<const char*>(data), size));
  if (counts_devices(text)) return 0;
  std::vector<axl_device_spec> v;
  if (axlfuzz::spec_ids(text, &v)) {
    const bool cpu = v.size() == 1 && !v[0].is_accelerator;
    axlfuzz::require(cpu || std::all_of(v.begin(), v.end(), [](auto& s) { return s.is_accelerator != 0; }),
                     "fuzz_device_spec", "cpu alone or accelerators only", text);
    if (!cpu) {
      std::string back = "gpu:";
      for (size_t i = 0; i < v.size(); ++i) back += (i ? "," : "") + std::to_string(v[i].id);
      std::vector<axl_device_spec> w;
      axlfuzz::require(axlfuzz::spec_ids(back, &w) && w.size() == v.size() &&
                           std::equal(v.begin(), v.end(), w.begin(),
                                      [](auto& a, auto& b) { return a.is_accelerator == b.is_accelerator && a.id == b.id; }),
                       "fuzz_device_spec", "printed ids reparse to the same list", text);
    }
  }
  axlfuzz::check_agreement(text);
  return 0;
}
