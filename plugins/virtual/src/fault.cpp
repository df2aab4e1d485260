// Errors as the virtual "driver" reports them, and fault injection
// (AXL_VIRTUAL_FAIL / the "virtual_fail" option), so that every error path of
// the core and of applications can be driven deterministically in tests.
//
// Grammar: rules separated by ';', each
//     <operation>:<call>=<STATUS>[@async]
//   operation  one of kFaultOpNames below
//   call       1-based number of the call of that operation in this process
//              (since the rules were last set), or '*' for every call
//   STATUS     an axl status name without the AXL_ERROR_ prefix, e.g.
//              OUT_OF_DEVICE_MEMORY (the prefixed form is accepted too)
//   @async     only for operations that are enqueued: the call succeeds, and
//              the operation fails when it runs on the queue, so the error
//              surfaces at the next queue_synchronize, as on a GPU
// Whitespace around tokens is ignored. A malformed rule is skipped with a
// message naming it; the others still apply.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <string_view>

#include "virtual_backend.hpp"

namespace axl::virt {

namespace {

constexpr const char* kFaultOpNames[] = {
    "alloc",      "free",         "pinned_alloc", "memcpy_htod", "memcpy_dtoh", "memcpy_dtod",
    "memcpy_peer", "memset",      "launch",       "event_record", "event_sync", "queue_create",
    "queue_sync", "module_load",  "flag_create",  "host_fn",     "init"};
static_assert(std::size(kFaultOpNames) == static_cast<size_t>(FaultOp::kCount),
              "one name per FaultOp");

// Operations that reach a queue and can therefore fail later, when they run.
bool enqueued(FaultOp op) {
  switch (op) {
    case FaultOp::kMemcpyHtoD:
    case FaultOp::kMemcpyDtoH:
    case FaultOp::kMemcpyDtoD:
    case FaultOp::kMemcpyPeer:
    case FaultOp::kMemset:
    case FaultOp::kLaunch:
    case FaultOp::kEventRecord:
    case FaultOp::kHostFn:
      return true;
    default:
      return false;
  }
}

// The error codes of status.h's list, by the name the grammar uses (without
// the AXL_ERROR_ prefix) and by the virtual driver's native name for them
// (VIRTUAL_ERROR_<name>); AXL_SUCCESS is no fault, so it has neither. Built
// at compile time: fail() runs on error paths that must not allocate.
struct StatusName {
  axl_status status;
  std::string_view name;
  std::array<char, 64> native_name;  // NUL-terminated
};

constexpr std::string_view kErrorPrefix = "AXL_ERROR_";
constexpr std::string_view kNativePrefix = "VIRTUAL_ERROR_";

struct StatusCode {
  axl_status status;
  std::string_view name;
};
#define AXL_VIRTUAL_STATUS_CODE_(name, value, meaning) StatusCode{name, #name},
constexpr StatusCode kCodes[] = {AXL_STATUS_CODES(AXL_VIRTUAL_STATUS_CODE_)};
#undef AXL_VIRTUAL_STATUS_CODE_

constexpr size_t kErrorCount = static_cast<size_t>(
    std::count_if(std::begin(kCodes), std::end(kCodes),
                  [](const StatusCode& c) { return c.name.starts_with(kErrorPrefix); }));

constexpr std::array<StatusName, kErrorCount> make_statuses() {
  std::array<StatusName, kErrorCount> out{};
  size_t i = 0;
  for (const StatusCode& c : kCodes) {
    if (!c.name.starts_with(kErrorPrefix)) continue;
    StatusName& s = out[i++];
    s.status = c.status;
    s.name = c.name.substr(kErrorPrefix.size());
    size_t n = 0;
    for (char ch : kNativePrefix) s.native_name[n++] = ch;
    for (char ch : s.name) s.native_name[n++] = ch;  // out of bounds fails the build
    s.native_name[n] = '\0';
  }
  return out;
}

constexpr std::array<StatusName, kErrorCount> kStatuses = make_statuses();
static_assert(kErrorCount + 1 == std::size(kCodes), "every code but AXL_SUCCESS is an AXL_ERROR_");

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return {};
  const auto b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

std::string known_operations() {
  std::string out;
  for (const char* n : kFaultOpNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

}  // namespace

const char* native_name(axl_status status) noexcept {
  for (const StatusName& s : kStatuses)
    if (s.status == status) return s.native_name.data();
  return "VIRTUAL_ERROR_UNKNOWN";
}

std::optional<axl_status> status_from_name(const std::string& name) {
  std::string n = name;
  const std::string prefix = "AXL_ERROR_";
  if (n.compare(0, prefix.size(), prefix) == 0) n = n.substr(prefix.size());
  for (const StatusName& s : kStatuses)
    if (n == s.name) return s.status;
  return std::nullopt;
}

axl_status fail(axl_status status, const std::string& message) {
  // The core prefixes the backend's name ("virtual: ...") itself.
  return backend().host.report(status, message, status, native_name(status));
}

axl_status fail(const FaultHit& hit) { return fail(hit.status, hit.message); }

std::vector<std::string> FaultInjector::configure(const std::string& spec,
                                                  const std::string& source) {
  std::vector<Rule> rules;
  std::vector<std::string> bad;
  size_t pos = 0;
  while (pos <= spec.size()) {
    const size_t semi = spec.find(';', pos);
    const std::string token =
        trim(spec.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos));
    pos = semi == std::string::npos ? spec.size() + 1 : semi + 1;
    if (token.empty()) continue;  // "a;;b" and a trailing ';' are harmless

    auto reject = [&](const std::string& why) {
      bad.push_back(common::str(source, ": ignoring rule '", token, "': ", why,
                                " (expected <operation>:<call or *>=<STATUS>[@async])"));
    };
    const size_t colon = token.find(':');
    const size_t eq = token.find('=');
    if (colon == std::string::npos || eq == std::string::npos || eq < colon) {
      reject("it is not of the form operation:call=STATUS");
      continue;
    }
    const std::string op_name = trim(token.substr(0, colon));
    const std::string call_text = trim(token.substr(colon + 1, eq - colon - 1));
    std::string status_text = trim(token.substr(eq + 1));
    bool async = false;
    if (const size_t at = status_text.find('@'); at != std::string::npos) {
      const std::string suffix = trim(status_text.substr(at + 1));
      status_text = trim(status_text.substr(0, at));
      if (suffix != "async") {
        reject(common::str("unknown suffix '@", suffix, "' (only @async exists)"));
        continue;
      }
      async = true;
    }

    const auto op_it = std::find_if(std::begin(kFaultOpNames), std::end(kFaultOpNames),
                                    [&](const char* n) { return op_name == n; });
    if (op_it == std::end(kFaultOpNames)) {
      reject(common::str("unknown operation '", op_name, "' (known: ", known_operations(), ")"));
      continue;
    }
    const auto op = static_cast<FaultOp>(op_it - std::begin(kFaultOpNames));

    uint64_t call = 0;
    if (call_text != "*") {
      const bool digits = !call_text.empty() &&
                          std::all_of(call_text.begin(), call_text.end(),
                                      [](unsigned char c) { return std::isdigit(c) != 0; });
      errno = 0;
      call = digits ? std::strtoull(call_text.c_str(), nullptr, 10) : 0;
      if (!digits || errno != 0 || call == 0) {
        reject(common::str("call '", call_text,
                           "' is not a call number (1 for the first call) or '*'"));
        continue;
      }
    }

    const std::optional<axl_status> status = status_from_name(status_text);
    if (!status) {
      reject(common::str("'", status_text,
                         "' is not an axl status name such as OUT_OF_DEVICE_MEMORY or "
                         "DEVICE_LOST"));
      continue;
    }
    if (*status == AXL_ERROR_NOT_READY) {
      // NOT_READY is a state the core passes through as "not finished", not
      // a failure; injecting it would read as success-in-progress.
      reject("NOT_READY is not a failure and cannot be injected");
      continue;
    }
    if (async && !enqueued(op)) {
      reject(common::str("'@async' applies only to enqueued operations (memcpy_*, memset, "
                         "launch, event_record, host_fn), not to ", op_name));
      continue;
    }
    rules.push_back(Rule{op, call, *status, async, token});
  }

  std::lock_guard<std::mutex> lk(mu_);
  rules_ = std::move(rules);
  source_ = source;
  calls_.fill(0);
  active_.store(!rules_.empty(), std::memory_order_release);
  return bad;
}

std::optional<FaultHit> FaultInjector::check(FaultOp op) {
  if (!active_.load(std::memory_order_acquire)) return std::nullopt;
  std::lock_guard<std::mutex> lk(mu_);
  const uint64_t call = ++calls_[static_cast<size_t>(op)];
  for (const Rule& r : rules_) {
    if (r.op != op || (r.call != 0 && r.call != call)) continue;
    FaultHit hit{r.status, r.async,
                 common::str("injected failure of ", kFaultOpNames[static_cast<size_t>(op)],
                             " call ", call, " (", source_, ": ", r.text, ")")};
    if (r.async) hit.message += ": the operation failed when it ran on its queue";
    return hit;
  }
  return std::nullopt;
}

}  // namespace axl::virt
