// What a backend's discovery found, kept once per process and reported
// again on every thread that asks (backend_device_count, backend_init,
// device_get), because the host's last error is per thread (plugin.h).
// Shared by the backends that load a vendor loader themselves (opencl,
// level_zero), whose discovery answers the same four fields.
#pragma once

#include <cstdint>
#include <string>

#include "axl/common/plugin_support.hpp"

namespace axl::common {

struct Discovery {
  axl_status status = AXL_ERROR_BACKEND_UNAVAILABLE;
  std::string message;
  int64_t native_code = 0;
  const char* native_name = nullptr;  // static storage (the driver's name table)

  // Marks the backend unavailable because of `why`; the core also logs it at
  // info level. `native_name` NULL: no driver result to name (the loader is
  // missing, or answered success with nothing in it).
  void set_unavailable(const std::string& why, int64_t code = 0, const char* name = nullptr);
  // Reports the failure (or nothing) on this thread; returns `status`.
  axl_status report(const HostServices& host) const noexcept;
};

}  // namespace axl::common
