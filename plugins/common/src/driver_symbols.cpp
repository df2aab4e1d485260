#include "axl/common/driver_symbols.hpp"

#include <cstring>

namespace axl::common {

SymbolResolution resolve_driver_symbols(const DriverSymbol* symbols, size_t count,
                                        void* table_base, const SymbolLookup& lookup) {
  SymbolResolution r;
  auto* base = static_cast<unsigned char*>(table_base);
  for (size_t i = 0; i < count; ++i) {
    const DriverSymbol& s = symbols[i];
    std::string detail;
    void* fn = lookup(s.name, s.version, &detail);
    std::memcpy(base + s.offset, &fn, sizeof fn);
    if (fn != nullptr) continue;
    std::string what = std::string(s.name) + " (version " + std::to_string(s.version) +
                       (detail.empty() ? "" : ": " + detail) + ")";
    (s.required ? r.missing_required : r.missing_optional).push_back(std::move(what));
  }
  return r;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace axl::common
