// Mapping a vendor driver's result codes to axl statuses, shared by the
// backends over CUDA-style driver APIs (cuda, hip). Each backend supplies a
// data table of the codes it knows; the driver's own name lookup
// (cuGetErrorName) is preferred when it answers, and the table's name is
// the fallback, because a stub or broken driver cannot name its own errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "axl/common/plugin_support.hpp"

namespace axl::common {

struct DriverErrorCode {
  int64_t code;       // the vendor's value, e.g. 34
  const char* name;   // "CUDA_ERROR_STUB_LIBRARY"
  axl_status status;  // what axl reports for it
};

class DriverErrors {
 public:
  // `table` is static storage; `fallback` is the status of unknown codes.
  DriverErrors(const DriverErrorCode* table, size_t count, axl_status fallback) noexcept
      : table_(table), count_(count), fallback_(fallback) {}

  const DriverErrorCode* find(int64_t code) const noexcept;
  axl_status status_of(int64_t code) const noexcept {
    const DriverErrorCode* e = find(code);
    return e != nullptr ? e->status : fallback_;
  }
  // The table's name, or "<prefix><code>" style "unknown error 1234".
  std::string name_of(int64_t code) const;

  // Reports `code` from the driver call `call` (e.g. "cuMemAlloc") and
  // returns its axl status. The message reads
  //   "<call> failed: <NAME> (<code>)[: <description>][: <context>]"
  // `driver_name`/`description` come from the driver when it can say, else
  // NULL. `status` overrides the table's status when not AXL_SUCCESS.
  axl_status report(const HostServices& host, int64_t code, const char* call,
                    const char* driver_name, const char* description,
                    const std::string& context, axl_status status = AXL_SUCCESS) const noexcept;

 private:
  const DriverErrorCode* table_;
  size_t count_;
  axl_status fallback_;
};

}  // namespace axl::common
