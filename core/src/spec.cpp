// Device-spec grammar, parsed once here for every binding:
//   spec   := "cpu" | "gpu" | "gpu:" ids | "gpu:all" | ids
//   ids    := id ("," id)*      id := [0-9]+   (spaces around ids allowed)
// The label is case-insensitive. "gpu" alone means accelerator 0.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "internal.hpp"

using namespace axl::core;

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

axl_status parse_ids(const std::string& text, const std::string& ids, std::vector<axl_device_spec>& out) {
  size_t pos = 0;
  while (true) {
    size_t comma = ids.find(',', pos);
    std::string tok = trim(ids.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (tok.empty() || tok.size() > 9 || !std::all_of(tok.begin(), tok.end(), ::isdigit))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "device spec '%s': '%s' is not an accelerator id (expected a non-negative integer)",
                  text.c_str(), tok.c_str());
    out.push_back({1, std::stoi(tok)});
    if (comma == std::string::npos) return AXL_SUCCESS;
    pos = comma + 1;
  }
}

}  // namespace

extern "C" AXL_API axl_status axl_device_spec_parse(const char* text, axl_device_spec* specs,
                                                    size_t capacity, size_t* out_count) {
  return guard([&]() -> axl_status {
    if (!text) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_device_spec_parse: text is NULL");
    if (!out_count) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_device_spec_parse: out_count is NULL");
    std::string t = trim(text);
    std::vector<axl_device_spec> out;
    std::string l = lower(t);
    if (l == "cpu") {
      out.push_back({0, -1});
    } else if (l == "gpu") {
      out.push_back({1, 0});
    } else if (l.rfind("gpu:", 0) == 0) {
      std::string rest = trim(t.substr(4));
      if (lower(rest) == "all") {
        if (axl_status s = ensure_init()) return s;
        uint32_t n = 0;
        if (axl_status s = axl_device_count("gpu", &n)) return s;
        for (uint32_t i = 0; i < n; ++i) out.push_back({1, static_cast<int32_t>(i)});
      } else if (rest.empty()) {
        return fail(AXL_ERROR_INVALID_ARGUMENT, "device spec '%s': expected accelerator ids or 'all' after 'gpu:'",
                    text);
      } else if (axl_status s = parse_ids(text, rest, out)) {
        return s;
      }
    } else if (!t.empty() && std::isdigit(static_cast<unsigned char>(t[0]))) {
      if (axl_status s = parse_ids(text, t, out)) return s;
    } else {
      std::string head = t.substr(0, t.find(':'));
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "device spec '%s': '%s' is not a device label; expected 'cpu', 'gpu', 'gpu:<ids>', "
                  "'gpu:all' or a list of accelerator ids", text, head.c_str());
    }
    // Keep each device once, in first-seen order.
    std::vector<axl_device_spec> uniq;
    for (auto& s : out)
      if (std::none_of(uniq.begin(), uniq.end(), [&](auto& u) { return u.is_accelerator == s.is_accelerator && u.id == s.id; }))
        uniq.push_back(s);
    *out_count = uniq.size();
    if (specs && capacity >= uniq.size()) std::copy(uniq.begin(), uniq.end(), specs);
    return AXL_SUCCESS;
  });
}

extern "C" AXL_API const char* axl_version_string(void) { return AXL_VERSION_STRING; }
extern "C" AXL_API uint32_t axl_abi_version(void) { return (AXL_ABI_MAJOR << 16) | AXL_ABI_MINOR; }
