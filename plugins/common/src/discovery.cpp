#include "axl/common/discovery.hpp"

namespace axl::common {

void Discovery::set_unavailable(const std::string& why, int64_t code, const char* name) {
  status = AXL_ERROR_BACKEND_UNAVAILABLE;
  message = why;
  if (name != nullptr) {
    native_code = code;
    native_name = name;
  }
}

axl_status Discovery::report(const HostServices& host) const noexcept {
  if (status == AXL_SUCCESS) return AXL_SUCCESS;
  return host.report(status, message, native_code, native_name);
}

}  // namespace axl::common
