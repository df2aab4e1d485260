// Status names and the per-thread last-error record. The record is core-owned
// thread-local storage: plugins fill it through host->report_error, so no
// plugin TLS outlives its library and the detail survives the plugin call.
#include <cstdio>
#include <cstring>

#include "internal.hpp"

namespace axl::core {
namespace {

struct LastError {
  axl_status status = AXL_SUCCESS;
  std::string backend;
  int64_t native_code = 0;
  std::string native_name;
  std::string message;
  bool reported = false;  // set by report_error during a plugin call
};

LastError& last() {
  thread_local LastError e;
  return e;
}

}  // namespace

axl_status fail(axl_status status, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  LastError& e = last();
  e.reported = false;
  e.status = status;
  e.backend.clear();
  e.native_code = 0;
  e.native_name.clear();
  e.message = buf;
  logf(AXL_LOG_DEBUG, "%s: %s", axl_status_name(status), buf);
  return status;
}

axl_status fail_backend(axl_status status, const std::string& backend,
                        int64_t native_code, const char* native_name,
                        const std::string& message) {
  LastError& e = last();
  e.reported = false;
  e.status = status;
  e.backend = backend;
  e.native_code = native_code;
  e.native_name = native_name ? native_name : "";
  e.message = message;
  return status;
}

ErrorOrigin last_error_origin() {
  const LastError& e = last();
  ErrorOrigin o;
  o.status = e.status;
  o.backend = e.backend;
  o.native_code = e.native_code;
  o.native_name = e.native_name;
  o.message = e.message;
  return o;
}

axl_status fail_from(axl_status status, const ErrorOrigin& origin, const std::string& message) {
  return fail_backend(status, origin.backend, origin.native_code, origin.native_name.c_str(), message);
}

void begin_plugin_call() { last().reported = false; }
bool plugin_reported() {
  LastError& e = last();
  bool r = e.reported;
  e.reported = false;
  return r;
}

// host->report_error: the plugin is about to return `status`.
void host_report_error(void* ctx, axl_status status, int64_t native_code,
                       const char* native_name, const char* message) {
  auto* b = static_cast<Backend*>(ctx);
  std::string msg = message ? message : "";
  std::string name = b ? b->name : std::string();
  fail_backend(status, name, native_code, native_name, name + ": " + msg);
  last().reported = true;
}

axl_status Backend::check(axl_status s, const char* slot) {
  if (s == AXL_ERROR_NOT_READY) return s;  // a state, not a failure
  // A mark left by a report for another status is stale: the plugin did not
  // explain this one.
  const bool fresh = plugin_reported() && last().status == s;
  if (!fresh)
    fail_backend(s, name, 0, nullptr, name + ": " + slot + " failed with " + axl_status_name(s));
  return s;
}

axl_status Backend::unsupported(const char* slot) {
  return fail_backend(AXL_ERROR_UNSUPPORTED, name, 0, nullptr,
                      name + ": the backend does not support " + slot);
}

}  // namespace axl::core

using namespace axl::core;

extern "C" {

AXL_API const char* axl_status_name(axl_status status) {
  struct Name {
    axl_status status;
    const char* name;
  };
  // One row per code of status.h's list.
#define AXL_STATUS_NAME_ROW_(name, value, meaning) Name{name, #name},
  static constexpr Name kNames[] = {AXL_STATUS_CODES(AXL_STATUS_NAME_ROW_)};
#undef AXL_STATUS_NAME_ROW_
  for (const Name& n : kNames)
    if (n.status == status) return n.name;
  return "AXL_STATUS_UNKNOWN";
}

AXL_API axl_status axl_last_error(axl_error_info* out) {
  if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_last_error: out is NULL");
  if (out->struct_size < sizeof(axl_error_info))
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "axl_last_error: struct_size %zu, expected >= %zu",
                out->struct_size, sizeof(axl_error_info));
  const auto& e = last();
  out->status = e.status;
  out->reserved = 0;
  out->backend = e.backend.c_str();
  out->native_code = e.native_code;
  out->native_name = e.native_name.c_str();
  out->message = e.message.c_str();
  return AXL_SUCCESS;
}

AXL_API const char* axl_last_error_message(void) { return last().message.c_str(); }

AXL_API void axl_clear_last_error(void) {
  auto& e = last();
  e.status = AXL_SUCCESS;
  e.backend.clear();
  e.native_code = 0;
  e.native_name.clear();
  e.message.clear();
}

}  // extern "C"
