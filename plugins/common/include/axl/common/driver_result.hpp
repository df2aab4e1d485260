// A vendor result type as the backends that load their own loader (opencl,
// level_zero) report it: the failed-call message, its report with the result
// as native code and name, and discovery's unavailable answer. Written once
// so that both backends say "<call> failed: <NAME> (<code>)" the same way;
// only how the code is written differs (CodeStyle). The cuda and hip
// backends name their codes from a table instead (driver_errors.hpp).
#pragma once

#include <cstdint>
#include <ios>
#include <string>

#include "axl/common/discovery.hpp"
#include "axl/common/plugin_support.hpp"

namespace axl::common {

// How messages write a result code: OpenCL's are small negative numbers
// (-61), Level Zero's 32-bit enumerators read best in hex (0x70000002).
enum class CodeStyle { kDecimal, kHex };

// `Result` is the API's result type, 0 its success (CL_SUCCESS,
// ZE_RESULT_SUCCESS); `NameOf` its symbolic name, `StatusOf` the axl status
// it maps to, `Host` the backend's host services. A backend declares
//   using ClResult = common::DriverResult<cl_int, result_name, status_of, ...>;
//   inline constexpr ClResult cl_fail{};
// and calls cl_fail(call, r) as a function.
template <class Result, const char* (*NameOf)(Result) noexcept,
          axl_status (*StatusOf)(Result) noexcept, CodeStyle Style,
          HostServices& (*Host)() noexcept>
struct DriverResult {
  // "<call> failed: <NAME> (<code>)".
  static std::string failed(const char* call, Result r) {
    if constexpr (Style == CodeStyle::kHex)
      return str(call, " failed: ", NameOf(r), " (0x", std::hex, static_cast<uint32_t>(r), ")");
    else
      return str(call, " failed: ", NameOf(r), " (", r, ")");
  }

  // Reports a failed call: failed(call, r), then ": <context>" if any, with
  // `r` as the native code and name. The status follows the result (out of
  // memory, device lost, ...) unless `status` is given. Returns the status.
  axl_status operator()(const char* call, Result r, const std::string& context = "",
                        axl_status status = AXL_SUCCESS) const {
    std::string message = failed(call, r);
    if (!context.empty()) message += ": " + context;
    return Host().report(status != AXL_SUCCESS ? status : StatusOf(r), message,
                         static_cast<int64_t>(r), NameOf(r));
  }

  // Discovery's unavailable answer, with `r` as native code and name unless
  // it is success (the loader is missing, or found nothing).
  static void unavailable(Discovery& d, const std::string& message, Result r = Result{}) {
    if (r == Result{})
      d.set_unavailable(message);
    else
      d.set_unavailable(message, static_cast<int64_t>(r), NameOf(r));
  }
};

}  // namespace axl::common
