#include "axl/common/driver_errors.hpp"

namespace axl::common {

const DriverErrorCode* DriverErrors::find(int64_t code) const noexcept {
  for (size_t i = 0; i < count_; ++i)
    if (table_[i].code == code) return &table_[i];
  return nullptr;
}

std::string DriverErrors::name_of(int64_t code) const {
  const DriverErrorCode* e = find(code);
  return e != nullptr ? e->name : "unknown error " + std::to_string(code);
}

axl_status DriverErrors::report(const HostServices& host, int64_t code, const char* call,
                                const char* driver_name, const char* description,
                                const std::string& context, axl_status status) const noexcept {
  if (status == AXL_SUCCESS) status = status_of(code);
  try {
    const std::string name = driver_name != nullptr ? std::string(driver_name) : name_of(code);
    std::string message = str(call, " failed: ", name, " (", code, ")");
    if (description != nullptr && *description != '\0') message += str(": ", description);
    if (!context.empty()) message += str(": ", context);
    return host.report(status, message, code, name.c_str());
  } catch (...) {
    return host.report(status, call, code, nullptr);
  }
}

}  // namespace axl::common
