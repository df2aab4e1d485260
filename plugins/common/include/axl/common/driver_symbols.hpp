// Resolving a driver's entry points from one data table. A backend lists
// every function it uses once, as {name, version, required?, offset of the
// member in its function-pointer struct}, and resolve_driver_symbols fills
// the struct through the driver's own lookup (cuGetProcAddress for CUDA,
// hipGetProcAddress for HIP). A missing required entry point refuses the
// backend with its name; a missing optional one leaves the member NULL and
// the feature that needs it answers AXL_ERROR_UNSUPPORTED.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace axl::common {

struct DriverSymbol {
  const char* name;  // the driver API's base name, e.g. "cuMemAlloc"
  int version;       // the API version the prototype is pinned to, e.g. 3020
  bool required;     // false: the backend works (with less) without it
  size_t offset;     // byte offset of the function pointer in the table struct
};

// Looks `name` up at `version`; returns the function, or NULL when the
// driver lacks it. May set *detail to why (e.g. "version not sufficient").
using SymbolLookup = std::function<void*(const char* name, int version, std::string* detail)>;

struct SymbolResolution {
  std::vector<std::string> missing_required;  // "cuMemAlloc (version 3020: not found)"
  std::vector<std::string> missing_optional;  // same format
  bool ok() const noexcept { return missing_required.empty(); }
};

// Fills the function pointers at `table_base` + symbols[i].offset. Pointers
// of missing symbols are set to NULL.
SymbolResolution resolve_driver_symbols(const DriverSymbol* symbols, size_t count,
                                        void* table_base, const SymbolLookup& lookup);

// "a, b, c".
std::string join(const std::vector<std::string>& items, const char* separator = ", ");

}  // namespace axl::common
