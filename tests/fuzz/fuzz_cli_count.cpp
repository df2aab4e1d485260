// libFuzzer target for the CLI count (axl_calculate_virtual_device_count_
// from_cli). The input is a list of CLI strings separated by NUL bytes.
// Beyond ASan/UBSan cleanliness it checks: success or INVALID_ARGUMENT with
// a message and nothing written; 1 <= count <= 2^31 (ids are int32_t, so
// nothing wraps); the count of a list is the largest count of its inputs
// taken one at a time, and does not depend on their order; "gpu:<count-1>"
// counts the same; and where the spec grammar reads the same text they
// agree (fuzz_grammar.hpp).
//
// "gpu:all" (any case) is skipped: it counts the devices, so it would load
// the plugins (slow, and not the grammar); the C++ tests cover it.
#include "fuzz_grammar.hpp"

using axlfuzz::require;

namespace {

std::vector<std::string> split(const uint8_t* data, size_t size) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) out.emplace_back();
    else out.back() += static_cast<char>(data[i]);
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const std::string& s) {
              std::string l;
              for (char c : s) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
              return l == "gpu:all";
            }),
            out.end());
  return out;
}

}  // namespace

// The status of the count, for the replay driver's valid_*/bad_* check.
axl_status axl_fuzz_grammar_status(const uint8_t* data, size_t size) {
  const std::vector<std::string> in = split(data, size);
  std::vector<const char*> p;
  for (const std::string& s : in) p.push_back(s.c_str());
  uint32_t n = 0;
  return axl_calculate_virtual_device_count_from_cli(p.data(), p.size(), &n);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* T = "fuzz_cli_count";
  const std::vector<std::string> in = split(data, size);
  const std::string shown = in.empty() ? "" : in[0];
  uint32_t all = 0;
  const bool ok = axlfuzz::cli_count(in, &all);
  bool each_ok = true;
  uint32_t top = 1;
  for (const std::string& s : in) {
    uint32_t n = 0;
    if (axlfuzz::cli_count({s}, &n)) top = std::max(top, n);
    else each_ok = false;
    axlfuzz::check_agreement(s);
  }
  require(ok == each_ok, T, "a list is refused iff one of its inputs is", shown);
  if (!ok) return 0;
  require(all == top, T, "a list counts its largest input", shown);
  std::vector<std::string> rev(in.rbegin(), in.rend());
  uint32_t r = 0;
  require(axlfuzz::cli_count(rev, &r) && r == all, T, "the order of inputs does not matter", shown);
  if (all > 1) {
    uint32_t again = 0;
    require(axlfuzz::cli_count({"gpu:" + std::to_string(all - 1)}, &again) && again == all, T,
            "gpu:<count-1> counts the same", shown);
  }
  return 0;
}
