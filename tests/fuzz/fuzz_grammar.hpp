// Shared by the two grammar fuzz targets (fuzz_device_spec.cpp,
// fuzz_cli_count.cpp): the properties that tie axl_device_spec_parse and
// axl_calculate_virtual_device_count_from_cli together, so either target
// finds an input on which the two readings of an id disagree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "axl/axl.h"

namespace axlfuzz {

inline void require(bool ok, const char* target, const char* what, const std::string& input) {
  if (!ok) {
    std::fprintf(stderr, "%s: property broken: %s (input '%s', last error: %s)\n", target, what,
                 input.c_str(), axl_last_error_message());
    std::abort();
  }
}

// The spec's accelerator ids, or false when the parse is refused. Checks the
// two-call protocol and the shape of every entry on the way.
inline bool spec_ids(const std::string& text, std::vector<axl_device_spec>* out) {
  const char* T = "fuzz_device_spec";
  size_t n = 0;
  const axl_status s = axl_device_spec_parse(text.c_str(), nullptr, 0, &n);
  require(s == AXL_SUCCESS || s == AXL_ERROR_INVALID_ARGUMENT, T, "success or INVALID_ARGUMENT", text);
  if (s != AXL_SUCCESS) {
    require(axl_last_error_message()[0] != '\0', T, "an error has a message", text);
    return false;
  }
  // One slot short: the count again, nothing written.
  std::vector<axl_device_spec> v(n + 1, axl_device_spec{7, 7});
  size_t m = 0;
  if (n > 0) {
    require(axl_device_spec_parse(text.c_str(), v.data(), n - 1, &m) == AXL_SUCCESS && m == n, T,
            "a short buffer gets the count", text);
    require(v[0].is_accelerator == 7 && v[0].id == 7, T, "a short buffer is not written", text);
  }
  require(axl_device_spec_parse(text.c_str(), v.data(), v.size(), &m) == AXL_SUCCESS && m == n, T,
          "the second call agrees", text);
  v.resize(n);
  for (size_t i = 0; i < n; ++i) {
    require(v[i].is_accelerator ? v[i].id >= 0 : v[i].id == -1, T, "cpu is -1, accelerator ids >= 0", text);
    for (size_t j = 0; j < i; ++j)
      require(v[j].is_accelerator != v[i].is_accelerator || v[j].id != v[i].id, T, "no duplicates", text);
  }
  *out = v;
  return true;
}

inline bool cli_count(const std::vector<std::string>& inputs, uint32_t* out) {
  std::vector<const char*> p;
  for (const std::string& s : inputs) p.push_back(s.c_str());
  uint32_t n = 0xDEADBEEF;
  const axl_status s = axl_calculate_virtual_device_count_from_cli(p.data(), p.size(), &n);
  const std::string shown = inputs.empty() ? "" : inputs[0];
  require(s == AXL_SUCCESS || s == AXL_ERROR_INVALID_ARGUMENT, "fuzz_cli_count", "success or INVALID_ARGUMENT",
          shown);
  if (s != AXL_SUCCESS) {
    require(n == 0xDEADBEEF, "fuzz_cli_count", "nothing written on error", shown);
    require(axl_last_error_message()[0] != '\0', "fuzz_cli_count", "an error has a message", shown);
    return false;
  }
  // Ids are int32_t, so the count is at most 2^31 (gpu:all counts devices).
  require(n >= 1 && n <= 0x80000000u, "fuzz_cli_count", "1 <= count <= 2^31", shown);
  *out = n;
  return true;
}

// Where both grammars read the same text ("gpu:" + ids, any case, not
// "all"), they must agree: the spec parses iff the CLI count does, unless
// the CLI's extras (a sign, empty parts, "all" parts) are present, and the
// count is 1 + the largest id.
inline void check_agreement(const std::string& text) {
  if (text.size() < 4 || !(std::tolower(static_cast<unsigned char>(text[0])) == 'g' &&
                           std::tolower(static_cast<unsigned char>(text[1])) == 'p' &&
                           std::tolower(static_cast<unsigned char>(text[2])) == 'u' && text[3] == ':'))
    return;
  std::string rest = text.substr(4);
  std::string squeezed;
  for (char c : rest)
    if (c != ' ' && c != '\t') squeezed += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (squeezed.empty() || squeezed.find("all") != std::string::npos) return;
  std::vector<axl_device_spec> ids;
  uint32_t n = 0;
  const bool spec_ok = spec_ids(text, &ids);
  const bool cli_ok = cli_count({text}, &n);
  if (spec_ok) {
    require(cli_ok, "fuzz_grammar", "a spec that parses counts", text);
    int64_t top = -1;
    for (auto& s : ids) top = std::max<int64_t>(top, s.id);
    require(int64_t(n) == std::max<int64_t>(1, top + 1), "fuzz_grammar", "count = 1 + the spec's largest id",
            text);
  } else if (cli_ok) {
    // Only the CLI's extras may make the difference.
    const bool extras = squeezed.find_first_of("+-") != std::string::npos ||
                        squeezed.front() == ',' || squeezed.back() == ',' ||
                        squeezed.find(",,") != std::string::npos;
    require(extras, "fuzz_grammar", "a refused spec is refused by the CLI count too", text);
  }
}

}  // namespace axlfuzz
