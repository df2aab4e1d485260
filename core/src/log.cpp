// Logging: every message from the core and the plugins goes through one
// spdlog logger. AXL_LOG_LEVEL=trace|debug|info|warn|error|off (default warn),
// AXL_LOG_FILE=<path> (default stderr).
#include <cerrno>
#include <cstdlib>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>

#include "internal.hpp"

namespace axl::core {
namespace {

std::shared_ptr<spdlog::logger>& logger() {
  // Leaked on purpose: plugins may log from their threads during exit.
  static auto* l = new std::shared_ptr<spdlog::logger>();
  return *l;
}

std::once_flag g_log_once;

spdlog::level::level_enum to_spd(int32_t level) {
  switch (level) {
    case AXL_LOG_TRACE: return spdlog::level::trace;
    case AXL_LOG_DEBUG: return spdlog::level::debug;
    case AXL_LOG_INFO: return spdlog::level::info;
    case AXL_LOG_WARN: return spdlog::level::warn;
    case AXL_LOG_ERROR: return spdlog::level::err;
    default: return spdlog::level::off;
  }
}

void make_logger() {
  std::shared_ptr<spdlog::logger> l;
  const char* file = env("AXL_LOG_FILE");
  if (file && *file) {
    // Opened here first because spdlog's file sink creates missing parent
    // folders: a typo in the path would make a directory tree (as root,
    // anywhere) and hide every warning in it.
    if (FILE* probe = fopen(file, "a")) {
      fclose(probe);
    } else {
      fprintf(stderr, "axl: cannot open AXL_LOG_FILE '%s': %s; logging to stderr\n", file, strerror(errno));
      file = nullptr;
    }
  }
  if (file && *file) {
    try {
      auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file, false);
      l = std::make_shared<spdlog::logger>("axl", sink);
    } catch (const std::exception& e) {
      fprintf(stderr, "axl: cannot open AXL_LOG_FILE '%s': %s; logging to stderr\n",
              file, e.what());
    }
  }
  if (!l) l = std::make_shared<spdlog::logger>(
      "axl", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  l->set_pattern("[axl %L] %v");
  auto level = spdlog::level::warn;
  if (const char* v = env("AXL_LOG_LEVEL"); v && *v) {
    auto parsed = spdlog::level::from_str(v);
    // from_str answers "off" for anything unknown; only accept real names.
    if (parsed != spdlog::level::off || strcmp(v, "off") == 0)
      level = parsed;
    else
      fprintf(stderr,
              "axl: AXL_LOG_LEVEL='%s' is not one of trace, debug, info, warn, "
              "error, off; using warn\n", v);
  }
  l->set_level(level);
  l->flush_on(spdlog::level::trace);
  logger() = l;
}

}  // namespace

const char* env(const char* name) { return secure_getenv(name); }

uint32_t env_u32(const char* name, uint32_t min, uint32_t max, uint32_t fallback,
                 const char* expected) {
  const char* v = env(name);
  if (v == nullptr || *v == '\0') return fallback;
  errno = 0;
  char* end = nullptr;
  const unsigned long long n = strtoull(v, &end, 10);
  // strtoull accepts a sign; a count never has one.
  if (*v < '0' || *v > '9' || *end != '\0' || errno != 0 || n < min || n > max) {
    logf(AXL_LOG_WARN, "%s='%s' is not %s; using the default", name, spec_shown(v).c_str(), expected);
    return fallback;
  }
  return static_cast<uint32_t>(n);
}

void log_init() { std::call_once(g_log_once, make_logger); }

void log_message(int32_t level, const std::string& message) {
  log_init();
  auto& l = logger();
  if (l) l->log(to_spd(level), message);
}

void logf(int32_t level, const char* fmt, ...) {
  log_init();
  auto& l = logger();
  if (!l || !l->should_log(to_spd(level))) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  l->log(to_spd(level), buf);
}

// host->log for plugins: prefixes the backend's name.
void host_log(void* ctx, int32_t level, const char* message) {
  auto* b = static_cast<Backend*>(ctx);
  log_message(level, (b ? b->name : std::string("?")) + ": " + (message ? message : ""));
}

}  // namespace axl::core

extern "C" AXL_API axl_status axl_set_log_level(int32_t level) {
  using namespace axl::core;
  if (level < AXL_LOG_TRACE || level > AXL_LOG_OFF || level == 5)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "log level %d is not one of AXL_LOG_TRACE(0)..AXL_LOG_ERROR(4), "
                "AXL_LOG_OFF(6)", level);
  log_init();
  if (auto& l = logger()) l->set_level(to_spd(level));
  return AXL_SUCCESS;
}
