// Device-spec grammar, parsed once here for every binding:
//   spec   := "cpu" | "gpu" | "gpu:" ids | "gpu:all" | ids
//   ids    := id ("," id)*      id := [0-9]+   (spaces around ids allowed)
//   (ASCII digits; an id above INT32_MAX, the ABI's id type, is refused)
// The label is case-insensitive. "gpu" alone means accelerator 0.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "internal.hpp"

using namespace axl::core;

namespace axl::core {

std::string spec_trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::string spec_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : static_cast<char>(c);
  });
  return s;
}

// A value as an error message shows it: whole up to 80 bytes, else its
// start and length, so a 5000-digit id cannot push "out of range" (and
// everything after it) past the message's length limit.
std::string spec_shown(const std::string& s) {
  return s.size() <= 80 ? s : s.substr(0, 40) + "...(" + std::to_string(s.size()) + " bytes)";
}

axl_status parse_accelerator_id(const char* what, const std::string& input, const std::string& part,
                                bool allow_sign, int32_t* out) {
  size_t i = 0;
  bool negative = false;
  if (allow_sign && !part.empty() && (part[0] == '+' || part[0] == '-')) negative = part[i++] == '-';
  // Hand-rolled, not strtol/stoll: those follow the C locale, skip leading
  // whitespace of every kind and saturate on overflow, so they would accept
  // more than the grammar says and hide a wrapped value.
  const bool digits = i < part.size() && std::all_of(part.begin() + i, part.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  if (!digits)
    return fail(AXL_ERROR_INVALID_ARGUMENT, "%s '%s': '%s' is not an accelerator id (expected %s)", what,
                spec_shown(input).c_str(), spec_shown(part).c_str(),
                allow_sign ? "an integer of ASCII digits" : "a non-negative integer of ASCII digits");
  const int64_t limit = negative ? -int64_t(INT32_MIN) : INT32_MAX;
  int64_t v = 0;
  for (; i < part.size(); ++i) {
    v = v * 10 + (part[i] - '0');
    if (v > limit)  // stop before int64 could overflow on a long digit string
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "%s '%s': accelerator id '%s' is out of range (expected %s..%d)", what,
                  spec_shown(input).c_str(), spec_shown(part).c_str(), allow_sign ? "-2147483648" : "0", INT32_MAX);
  }
  *out = static_cast<int32_t>(negative ? -v : v);
  return AXL_SUCCESS;
}

}  // namespace axl::core

namespace {

axl_status parse_ids(const std::string& text, const std::string& ids, std::vector<axl_device_spec>& out) {
  size_t pos = 0;
  while (true) {
    size_t comma = ids.find(',', pos);
    std::string tok = spec_trim(ids.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    int32_t id = 0;
    if (axl_status s = parse_accelerator_id("device spec", text, tok, /*allow_sign=*/false, &id)) return s;
    out.push_back({1, id});
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
    std::string t = spec_trim(text);
    std::vector<axl_device_spec> out;
    std::string l = spec_lower(t);
    if (l == "cpu") {
      out.push_back({0, -1});
    } else if (l == "gpu") {
      out.push_back({1, 0});
    } else if (l.rfind("gpu:", 0) == 0) {
      std::string rest = spec_trim(t.substr(4));
      if (spec_lower(rest) == "all") {
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
    } else if (!t.empty() && t[0] >= '0' && t[0] <= '9') {
      if (axl_status s = parse_ids(text, t, out)) return s;
    } else {
      std::string head = t.substr(0, t.find(':'));
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "device spec '%s': '%s' is not a device label; expected 'cpu', 'gpu', 'gpu:<ids>', "
                  "'gpu:all' or a list of accelerator ids", spec_shown(text).c_str(), spec_shown(head).c_str());
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
