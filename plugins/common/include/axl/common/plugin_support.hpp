// Plumbing every plugin entry point needs: the host services saved at
// negotiation, error reporting and logging through them, the exception
// firewall at the ABI boundary, and negotiation itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "axl/plugin.h"

namespace axl::common {

// Concatenates streamable values into one message: str("got ", n, " bytes").
template <class... Args>
std::string str(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

// The host services the core handed to negotiate. One per plugin, in static
// storage: they are valid for the life of the process, and the plugin never
// calls them before negotiate or after being unloaded. Every method is
// thread-safe and never throws.
class HostServices {
 public:
  // Saves `host` (may be NULL: every service then does nothing).
  void attach(const axl_host_services* host) noexcept {
    host_.store(host, std::memory_order_release);
  }

  // Logs `message` at an AXL_LOG_* level.
  void log(int32_t level, const char* message) const noexcept;
  void log(int32_t level, const std::string& message) const noexcept {
    log(level, message.c_str());
  }

  // Records the detail of the error the calling slot is about to return, on
  // the calling thread, and returns `status` so a slot can write
  // `return host.report(AXL_ERROR_..., str(...));`.
  axl_status report(axl_status status, const char* message, int64_t native_code = 0,
                    const char* native_name = nullptr) const noexcept;
  axl_status report(axl_status status, const std::string& message, int64_t native_code = 0,
                    const char* native_name = nullptr) const noexcept {
    return report(status, message.c_str(), native_code, native_name);
  }
  // report() with the errno value `err` as the native code and its symbolic
  // name ("ENOMEM") as the native name.
  axl_status report_errno(axl_status status, const std::string& message, int err) const noexcept;

  // Passes one launch-trace record to the core. Use Tracer (trace.hpp),
  // which checks the tracing switch first.
  void trace(const axl_trace_record& record) const noexcept;

 private:
  // A core older than this plugin may pass a shorter struct; services past
  // its struct_size do not exist.
  template <class Member>
  static bool has(const axl_host_services* h, Member axl_host_services::*m) noexcept;

  std::atomic<const axl_host_services*> host_{nullptr};
};

// Runs the body of an entry point so that no exception crosses the ABI:
// std::bad_alloc becomes AXL_ERROR_OUT_OF_HOST_MEMORY and any other exception
// AXL_ERROR_INTERNAL, both reported with `slot` (the entry point's name) in
// the message. `body` returns axl_status.
template <class F>
axl_status guard(const HostServices& host, const char* slot, F&& body) noexcept {
  try {
    return std::forward<F>(body)();
  } catch (const std::bad_alloc&) {
    // A heap-built message could fail the same way: format on the stack.
    char message[160];
    std::snprintf(message, sizeof message, "%s: out of host memory", slot);
    return host.report(AXL_ERROR_OUT_OF_HOST_MEMORY, message);
  } catch (const std::exception& e) {
    try {
      return host.report(AXL_ERROR_INTERNAL, str(slot, ": unexpected exception: ", e.what()));
    } catch (...) {
      return host.report(AXL_ERROR_INTERNAL, "unexpected exception in a plugin entry point");
    }
  } catch (...) {
    try {
      return host.report(AXL_ERROR_INTERNAL, str(slot, ": unexpected non-standard exception"));
    } catch (...) {
      return host.report(AXL_ERROR_INTERNAL, "unexpected exception in a plugin entry point");
    }
  }
}

// A backend's `guarded(slot, body)`: guard() with the host services that
// `Host()` returns, so a backend writes
//   inline constexpr common::Guarded<host> guarded{};
// once instead of its own forwarding template.
template <HostServices& (*Host)() noexcept>
struct Guarded {
  template <class F>
  axl_status operator()(const char* slot, F&& body) const noexcept {
    return guard(Host(), slot, std::forward<F>(body));
  }
};

// A backend's `fail(status, message)`: reports through the host services
// that `Host()` returns, with no native code, and returns `status`. A plain
// function, so that it also serves as slot_checks.hpp's Fail:
//   inline constexpr auto fail = common::report_through<host>;
template <HostServices& (*Host)() noexcept>
axl_status report_through(axl_status status, const std::string& message) {
  return Host().report(status, message);
}

// Implements axl_plugin_negotiate: checks the arguments and the major
// version, saves the host services into `host`, and answers with `info`,
// `table` and min(core minor, AXL_PLUGIN_ABI_MINOR). Has no other side
// effect, as plugin.h requires.
axl_status negotiate(axl_negotiate_args* args, HostServices& host, const axl_plugin_info* info,
                     const axl_plugin_table* table) noexcept;

}  // namespace axl::common
