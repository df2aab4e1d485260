// Configuration: the environment (read once), the options the core and tests
// set through backend_set_option, and the simulated-time cost model.
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <new>

#include "virtual_backend.hpp"

namespace axl::virt {

Backend& backend() noexcept {
  // Constructed on first use and never destroyed (see Backend).
  alignas(Backend) static unsigned char storage[sizeof(Backend)];
  static Backend* const instance = ::new (static_cast<void*>(storage)) Backend();
  return *instance;
}

namespace {

// Upper bounds that catch typos (a latency in nanoseconds typed as
// microseconds) without limiting any sensible experiment.
constexpr double kMaxLatencyUs = 10'000'000.0;  // 10 s per operation
constexpr double kMaxBandwidthGbps = 1'000'000.0;
// Half a device's address range: room for the gaps between allocations.
constexpr uint64_t kMaxDeviceMemory = kDeviceStride / 2;

std::optional<uint64_t> parse_uint(const std::string& text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(),
                                   [](unsigned char c) { return std::isdigit(c) != 0; }))
    return std::nullopt;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno != 0) return std::nullopt;
  return v;
}

// A finite decimal in [0, max]; "1.5" and "20000" alike.
std::optional<double> parse_amount(const std::string& text, double max) {
  if (text.empty() || text[0] == '-' || text[0] == '+' || std::isspace(static_cast<unsigned char>(text[0])))
    return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < 0 || v > max)
    return std::nullopt;
  return v;
}

// Bytes with an optional binary suffix: "1048576", "64M", "16GiB".
std::optional<uint64_t> parse_bytes(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::optional<uint64_t> n = parse_uint(text.substr(0, digits));
  if (!n) return std::nullopt;
  std::string suffix = text.substr(digits);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else if (suffix == "K" || suffix == "KIB") {
    shift = 10;
  } else if (suffix == "M" || suffix == "MIB") {
    shift = 20;
  } else if (suffix == "G" || suffix == "GIB") {
    shift = 30;
  } else if (suffix == "T" || suffix == "TIB") {
    shift = 40;
  } else {
    return std::nullopt;
  }
  if (*n > (UINT64_MAX >> shift)) return std::nullopt;
  return *n << shift;
}

bool plain_name(const std::string& s, size_t max) {
  return s.size() <= max && std::all_of(s.begin(), s.end(), [](unsigned char c) {
           return std::isgraph(c) != 0;
         });
}

void warn(const std::string& message) { backend().host.log(AXL_LOG_WARN, message); }

const char* env(const char* name) { return secure_getenv(name); }

void read_environment(Config& c) {
  Backend& b = backend();
  if (const char* v = env("AXL_VIRTUAL_DEVICES"); v && *v) {
    const std::optional<uint64_t> n = parse_uint(v);
    if (n && *n <= kMaxDevices) {
      c.devices = static_cast<uint32_t>(*n);
    } else {
      warn(common::str("AXL_VIRTUAL_DEVICES='", v, "' is not a device count from 0 to ",
                       kMaxDevices, "; using 0"));
    }
  }
  if (const char* v = env("AXL_VIRTUAL_API"); v && *v) {
    if (plain_name(v, AXL_API_SIZE - 1)) {
      c.api = v;
    } else {
      warn(common::str("AXL_VIRTUAL_API='", v, "' is not a name of at most ", AXL_API_SIZE - 1,
                       " printable characters; using '", c.api, "'"));
    }
  }
  if (const char* v = env("AXL_VIRTUAL_ARCH"); v && *v) {
    if (plain_name(v, AXL_ARCH_SIZE - 1)) {
      c.arch = v;
    } else {
      warn(common::str("AXL_VIRTUAL_ARCH='", v, "' is not a name of at most ",
                       AXL_ARCH_SIZE - 1, " printable characters; using '", c.arch, "'"));
    }
  }
  if (const char* v = env("AXL_VIRTUAL_DEVICE_MEMORY"); v && *v) {
    const std::optional<uint64_t> n = parse_bytes(v);
    if (n && *n >= kAllocAlign && *n <= kMaxDeviceMemory) {
      c.device_memory = *n;
    } else {
      warn(common::str("AXL_VIRTUAL_DEVICE_MEMORY='", v, "' is not a size from ", kAllocAlign,
                       " bytes to ", kMaxDeviceMemory >> 40,
                       " TiB (bytes, or with a K/M/G/T suffix); using ", c.device_memory >> 30,
                       " GiB"));
    }
  }
  if (const char* v = env("AXL_VIRTUAL_GUARD"); v && *v) {
    const std::string s = v;
    if (s == "1") {
      c.guard = true;
    } else if (s != "0") {
      warn(common::str("AXL_VIRTUAL_GUARD='", s, "' is not 0 or 1; guard mode stays off"));
    }
  }
  if (const char* v = env("AXL_VIRTUAL_LATENCY_US"); v && *v) {
    if (const std::optional<double> us = parse_amount(v, kMaxLatencyUs)) {
      b.sim.set_latency_ns(static_cast<uint64_t>(std::llround(*us * 1000.0)));
    } else {
      warn(common::str("AXL_VIRTUAL_LATENCY_US='", v, "' is not a number of microseconds from 0 to ",
                       kMaxLatencyUs, "; no simulated latency"));
    }
  }
  if (const char* v = env("AXL_VIRTUAL_BANDWIDTH_GBPS"); v && *v) {
    if (const std::optional<double> g = parse_amount(v, kMaxBandwidthGbps)) {
      b.sim.set_bandwidth_gbps(*g);
    } else {
      warn(common::str("AXL_VIRTUAL_BANDWIDTH_GBPS='", v, "' is not a bandwidth in GB/s from 0 (off) to ",
                       kMaxBandwidthGbps, "; copies take no simulated time"));
    }
  }
  if (const char* v = env("AXL_VIRTUAL_FAIL"); v && *v) {
    for (const std::string& why : b.faults.configure(v, "AXL_VIRTUAL_FAIL")) warn(why);
  }
}

}  // namespace

const Config& config() {
  Backend& b = backend();
  std::call_once(b.config_once, [&b] { read_environment(b.config_); });
  return b.config_;
}

uint64_t Simulator::cost_ns(const common::OpInfo& op) const noexcept {
  using common::OpKind;
  double ns = 0;
  switch (op.kind) {
    case OpKind::kCopyHtoD:
    case OpKind::kCopyDtoH:
    case OpKind::kCopyDtoD:
    case OpKind::kCopyPeer: {
      ns = static_cast<double>(latency_ns());
      const double gbps = bandwidth_gbps();
      // 1 GB/s is one byte per nanosecond.
      if (gbps > 0) ns += static_cast<double>(op.bytes) / gbps;
      break;
    }
    case OpKind::kFill:
    case OpKind::kLaunch:
      ns = static_cast<double>(latency_ns());
      break;
    default:
      return 0;
  }
  return ns >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(ns);
}

axl_status backend_set_option(const char* key, const char* value) noexcept {
  return guarded("backend_set_option", [&]() -> axl_status {
    Backend& b = backend();
    if (key == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "backend_set_option: key is NULL");
    config();  // the environment first, so an option is never overwritten by it later
    const std::string k = key;
    const std::string v = value != nullptr ? value : "";
    if (k == "virtual_device_count") {
      // Virtual-device mode (core/src/virtual_mode.cpp): N > 0 devices
      // replace AXL_VIRTUAL_DEVICES; "0" turns the mode off, back to it.
      const std::optional<uint64_t> n = parse_uint(v);
      if (!n || *n > kMaxDevices)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("option virtual_device_count expects 0 (mode off) to ", kMaxDevices,
                                ", got '", v, "'"));
      b.mode_count.store(static_cast<uint32_t>(*n), std::memory_order_release);
      return AXL_SUCCESS;
    }
    if (k == "virtual_device_api" || k == "virtual_device_arch") {
      const bool api = k == "virtual_device_api";
      const size_t max = api ? AXL_API_SIZE - 1 : AXL_ARCH_SIZE - 1;
      if (!plain_name(v, max))
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("option ", k, " expects a name of at most ", max,
                                " printable characters without spaces, got '", v, "'"));
      // Applies to devices created from now on; "" restores the default.
      std::lock_guard<std::mutex> lk(b.mode_mu);
      (api ? b.mode_api : b.mode_arch) = v;
      return AXL_SUCCESS;
    }
    if (k == "virtual_latency_us") {
      const std::optional<double> us = parse_amount(v, kMaxLatencyUs);
      if (!us)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("option virtual_latency_us expects microseconds from 0 to ",
                                kMaxLatencyUs, ", got '", v, "'"));
      b.sim.set_latency_ns(static_cast<uint64_t>(std::llround(*us * 1000.0)));
      return AXL_SUCCESS;
    }
    if (k == "virtual_bandwidth_gbps") {
      const std::optional<double> g = parse_amount(v, kMaxBandwidthGbps);
      if (!g)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("option virtual_bandwidth_gbps expects GB/s from 0 (off) to ",
                                kMaxBandwidthGbps, ", got '", v, "'"));
      b.sim.set_bandwidth_gbps(*g);
      return AXL_SUCCESS;
    }
    if (k == "virtual_fail") {
      const std::vector<std::string> bad = b.faults.configure(v, "option virtual_fail");
      if (bad.empty()) return AXL_SUCCESS;
      for (const std::string& why : bad) warn(why);
      std::string all;
      for (const std::string& why : bad) all += (all.empty() ? "" : "; ") + why;
      return fail(AXL_ERROR_INVALID_ARGUMENT, all + " (the other rules are in effect)");
    }
    return fail(AXL_ERROR_NOT_FOUND,
                common::str("unknown option '", k,
                            "' (known: virtual_device_count, virtual_device_api, "
                            "virtual_device_arch, virtual_latency_us, virtual_bandwidth_gbps, "
                            "virtual_fail)"));
  });
}

}  // namespace axl::virt
