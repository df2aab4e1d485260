// The Level Zero backend's entry point, its function table, discovery (the
// loader, the drivers and their GPU devices) and the backend slots.
#include <array>
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "l0_backend.hpp"
#include "axl/common/fixed_string.hpp"
#include "axl/common/immortal.hpp"
#include "axl/common/slots.hpp"

namespace axl::l0 {

// Constructed at negotiate and never destroyed (axl/common/immortal.hpp).
Backend& backend() noexcept { return common::immortal<Backend>(); }

axl_status status_of(ze_result_t r) noexcept {
  switch (r) {
    case ZE_RESULT_SUCCESS: return AXL_SUCCESS;
    case ZE_RESULT_NOT_READY: return AXL_ERROR_NOT_READY;
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY: return AXL_ERROR_OUT_OF_DEVICE_MEMORY;
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY: return AXL_ERROR_OUT_OF_HOST_MEMORY;
    case ZE_RESULT_ERROR_DEVICE_LOST:
    case ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET: return AXL_ERROR_DEVICE_LOST;
    case ZE_RESULT_ERROR_UNINITIALIZED: return AXL_ERROR_BACKEND_UNAVAILABLE;
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION:
    case ZE_RESULT_ERROR_UNSUPPORTED_SIZE:
    case ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT:
    case ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION: return AXL_ERROR_UNSUPPORTED;
    case ZE_RESULT_ERROR_INVALID_KERNEL_NAME: return AXL_ERROR_NOT_FOUND;
    case ZE_RESULT_ERROR_INVALID_NULL_HANDLE: return AXL_ERROR_INVALID_HANDLE;
    case ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT:
    case ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE: return AXL_ERROR_INVALID_STATE;
    case ZE_RESULT_ERROR_UNKNOWN: return AXL_ERROR_INTERNAL;
    default: return AXL_ERROR_INVALID_ARGUMENT;
  }
}

namespace {

std::string hex(uint32_t v) { return common::str("0x", std::hex, v); }

// The properties of one GPU device; false (reported) when a query fails.
bool describe(Backend& b, Device& d, std::string& why) {
  const ZeApi& z = b.ze;
  ze_device_properties_t p{};
  p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  ze_result_t r = z.zeDeviceGetProperties(d.handle, &p);
  if (r != ZE_RESULT_SUCCESS) {
    why = ZeResult::failed("zeDeviceGetProperties", r);
    return false;
  }
  ze_device_compute_properties_t c{};
  c.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  if ((r = z.zeDeviceGetComputeProperties(d.handle, &c)) != ZE_RESULT_SUCCESS) {
    why = ZeResult::failed("zeDeviceGetComputeProperties", r);
    return false;
  }
  uint32_t nmem = 0;
  if ((r = z.zeDeviceGetMemoryProperties(d.handle, &nmem, nullptr)) != ZE_RESULT_SUCCESS) {
    why = ZeResult::failed("zeDeviceGetMemoryProperties", r);
    return false;
  }
  std::vector<ze_device_memory_properties_t> mem(nmem);
  for (auto& m : mem) m.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
  if (nmem != 0 && (r = z.zeDeviceGetMemoryProperties(d.handle, &nmem, mem.data())) !=
                       ZE_RESULT_SUCCESS) {
    why = ZeResult::failed("zeDeviceGetMemoryProperties", r);
    return false;
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < nmem; ++i) total += mem[i].totalSize;
  uint32_t ngroups = 0;
  z.zeDeviceGetCommandQueueGroupProperties(d.handle, &ngroups, nullptr);
  std::vector<ze_command_queue_group_properties_t> groups(ngroups);
  for (auto& g : groups) g.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  if (ngroups != 0) z.zeDeviceGetCommandQueueGroupProperties(d.handle, &ngroups, groups.data());
  bool found = false;
  for (uint32_t i = 0; i < ngroups && !found; ++i)
    if (groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
      d.compute_ordinal = i;
      found = true;
    }
  if (!found) {
    why = "the device has no command queue group with ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE";
    return false;
  }
  d.max_group_size = c.maxTotalGroupSize;
  d.max_group_size_xyz[0] = c.maxGroupSizeX;
  d.max_group_size_xyz[1] = c.maxGroupSizeY;
  d.max_group_size_xyz[2] = c.maxGroupSizeZ;
  d.max_group_count_xyz[0] = c.maxGroupCountX;
  d.max_group_count_xyz[1] = c.maxGroupCountY;
  d.max_group_count_xyz[2] = c.maxGroupCountZ;
  // With stype ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES (1.0) timerResolution is
  // nanoseconds per tick (1.2 properties would give ticks per second).
  d.ns_per_tick = p.timerResolution != 0 ? static_cast<double>(p.timerResolution) : 1.0;
  d.timestamp_bits = p.timestampValidBits != 0 && p.timestampValidBits <= 64
                         ? p.timestampValidBits : 64;

  axl_device_properties& a = d.props;
  a.struct_size = sizeof(axl_device_properties);
  common::copy_string(a.label, sizeof a.label, "gpu");
  common::copy_string(a.api, sizeof a.api, "level_zero");
  // Level Zero 1.4 has no architecture name; the PCI vendor and device ids
  // identify the part (as "0x8086:0x56a0") for compilers such as ocloc.
  common::copy_string(a.architecture_name, sizeof a.architecture_name,
              hex(p.vendorId) + ":" + hex(p.deviceId));
  common::copy_string(a.model_name, sizeof a.model_name, p.name);
  a.total_memory_bytes = total;
  a.max_single_alloc_bytes = p.maxMemAllocSize;
  a.is_host = 0;
  a.is_host_unified = (p.flags & ZE_DEVICE_PROPERTY_FLAG_INTEGRATED) ? 1 : 0;
  a.is_compatible = 1;
  return true;
}

// Loads the loader and resolves its entry points: initialises nothing, so
// counting may do it. Fills b.library and b.ze, or b.opened with why not.
void open_loader(Backend& b) {
  common::Discovery& d = b.opened;
  const char* env = secure_getenv(kLoaderPathEnv);
  const bool overridden = env != nullptr && env[0] != '\0';
  const std::string name = overridden ? env : kDefaultLoaderName;
  LoadResult lr = load_loader(name, b.ze);
  const std::string where = overridden ? common::str(" (", kLoaderPathEnv, ")") : "";
  if (lr.kind == LoadResult::Kind::kAbsent) {
    ZeResult::unavailable(
        d, common::str("Level Zero is not installed: cannot load ", name, where, ": ", lr.detail));
    b.host.log(AXL_LOG_INFO, d.message);
    return;
  }
  if (lr.kind == LoadResult::Kind::kMissingSymbol) {
    ZeResult::unavailable(d, common::str("the Level Zero loader ", lr.path, where,
                                         " lacks required entry point(s): ", lr.detail,
                                         " (too old or not a Level Zero loader)"));
    b.host.log(AXL_LOG_WARN, d.message);
    return;
  }
  b.library = lr.handle;
  b.library_path = lr.path;
  b.library_note = where;
  d.status = AXL_SUCCESS;
}

bool loader_opened(Backend& b) {
  std::call_once(b.open_once, [&] { open_loader(b); });
  return b.opened.status == AXL_SUCCESS;
}

// Initialises Level Zero (zeInitDrivers, or zeInit) and lists its GPUs.
void run_discovery(Backend& b) {
  common::Discovery& d = b.discovery;
  if (!loader_opened(b)) {
    d = b.opened;
    return;
  }
  const std::string& where = b.library_note;
  const ZeApi& z = b.ze;

  std::vector<ze_driver_handle_t> handles;
  uint32_t count = 0;
  ze_result_t r;
  const char* call;
  if (z.zeInitDrivers != nullptr) {
    // 1.10+: initialises and lists the GPU drivers in one step, and unlike
    // zeInit does not fail the whole process for one broken driver type.
    call = "zeInitDrivers(GPU)";
    ZeInitDriverTypeDesc desc{kStypeInitDriverTypeDesc, nullptr, kInitDriverTypeFlagGpu};
    r = z.zeInitDrivers(&count, nullptr, &desc);
    if (r == ZE_RESULT_SUCCESS && count != 0) {
      handles.resize(count);
      r = z.zeInitDrivers(&count, handles.data(), &desc);
      handles.resize(count);
    }
  } else {
    call = "zeInit(0)";
    r = z.zeInit(0);
    if (r == ZE_RESULT_SUCCESS) {
      call = "zeDriverGet";
      r = z.zeDriverGet(&count, nullptr);
      if (r == ZE_RESULT_SUCCESS && count != 0) {
        handles.resize(count);
        r = z.zeDriverGet(&count, handles.data());
        handles.resize(count);
      }
    }
  }
  if (r != ZE_RESULT_SUCCESS) {
    ZeResult::unavailable(d,
                          common::str("the Level Zero loader ", b.library_path, where,
                                      " is installed, but ", ZeResult::failed(call, r),
                                      ": no Level Zero driver is installed or none can run here"),
                          r);
    return;
  }
  if (handles.empty()) {
    ZeResult::unavailable(
        d, common::str("the Level Zero loader ", b.library_path, where, " initialised, but ", call,
                       " reports 0 drivers: no Level Zero GPU driver is installed"));
    return;
  }
  for (ze_driver_handle_t h : handles) {
    auto drv = std::make_unique<Driver>();
    drv->handle = h;
    uint32_t n = 0;
    if ((r = z.zeDeviceGet(h, &n, nullptr)) != ZE_RESULT_SUCCESS) {
      ZeResult::unavailable(
          d, ZeResult::failed("zeDeviceGet", r) + common::str(" (loader ", b.library_path, ")"), r);
      return;
    }
    std::vector<ze_device_handle_t> devs(n);
    if (n != 0 && (r = z.zeDeviceGet(h, &n, devs.data())) != ZE_RESULT_SUCCESS) {
      ZeResult::unavailable(
          d, ZeResult::failed("zeDeviceGet", r) + common::str(" (loader ", b.library_path, ")"), r);
      return;
    }
    for (uint32_t i = 0; i < n; ++i) {
      ze_device_properties_t p{};
      p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
      if (z.zeDeviceGetProperties(devs[i], &p) != ZE_RESULT_SUCCESS || p.type != ZE_DEVICE_TYPE_GPU)
        continue;  // NPUs, FPGAs and the like are not what this backend runs on
      auto dev = std::make_unique<Device>();
      dev->index = static_cast<uint32_t>(b.devices.size());
      dev->handle = devs[i];
      dev->driver = drv.get();
      std::string why;
      if (!describe(b, *dev, why)) {
        b.host.log(AXL_LOG_WARN, common::str("level_zero: skipping device '", p.name, "': ", why));
        continue;
      }
      b.devices.push_back(std::move(dev));
    }
    b.drivers.push_back(std::move(drv));
  }
  d.status = AXL_SUCCESS;
  b.host.log(AXL_LOG_INFO, common::str("level_zero: ", b.drivers.size(), " driver(s), ",
                                       b.devices.size(), " GPU device(s) through ", b.library_path));
}

}  // namespace

axl_status discover() {
  Backend& b = backend();
  std::call_once(b.discover_once, [&] { run_discovery(b); });
  return b.discovery.report(b.host);
}

axl_status backend_init() noexcept {
  return guarded("backend_init", []() -> axl_status {
    Backend& b = backend();
    b.initialised.store(true, std::memory_order_release);
    if (axl_status s = discover()) return s;
    for (auto& drv : b.drivers) {
      if (drv->context != nullptr) continue;
      ze_context_desc_t desc{};
      desc.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
      if (ze_result_t r = b.ze.zeContextCreate(drv->handle, &desc, &drv->context))
        return ze_fail("zeContextCreate", r, "", AXL_ERROR_BACKEND_UNAVAILABLE);
    }
    return AXL_SUCCESS;
  });
}

axl_status backend_shutdown() noexcept {
  return guarded("backend_shutdown", []() -> axl_status {
    Backend& b = backend();
    // Leftover queues' command lists still belong to the contexts: keep those.
    if (common::stop_leftover_host_threads(b.host, b.queues, "level_zero")) return AXL_SUCCESS;
    for (auto& drv : b.drivers) {
      if (drv->context != nullptr) b.ze.zeContextDestroy(drv->context);
      drv->context = nullptr;
    }
    return AXL_SUCCESS;
  });
}

axl_status backend_device_count(uint32_t* out_count) noexcept {
  return guarded("backend_device_count", [&]() -> axl_status {
    if (out_count == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "backend_device_count: out_count is NULL");
    Backend& b = backend();
    // After backend_init (the core asks again then): what the driver found.
    if (b.initialised.load(std::memory_order_acquire)) {
      if (axl_status s = discover()) return s;
      *out_count = static_cast<uint32_t>(b.devices.size());
      return AXL_SUCCESS;
    }
    // Before: Level Zero cannot count without zeInit, so the census of
    // Intel render nodes answers (axl/common/census.hpp), and the loader is
    // only loaded, not initialised.
    std::call_once(b.census_once, [&] { b.census = census(); });
    if (b.census.count == 0) return fail(AXL_ERROR_BACKEND_UNAVAILABLE, b.census.reason);
    if (!loader_opened(b)) return b.opened.report(b.host);
    *out_count = b.census.count;
    return AXL_SUCCESS;
  });
}

axl_status backend_set_tracing(uint8_t enabled) noexcept {
  backend().tracer.set_enabled(enabled != 0);
  return AXL_SUCCESS;
}

axl_status backend_set_option(const char* key, const char* value) noexcept {
  return guarded("backend_set_option", [&]() -> axl_status {
    if (key == nullptr || value == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "backend_set_option: key or value is NULL");
    if (std::strcmp(key, "memory_kind") != 0)
      return fail(AXL_ERROR_NOT_FOUND,
                  common::str("level_zero has no option '", key, "' (known: memory_kind)"));
    if (std::strcmp(value, "device") == 0) {
      backend().shared_memory.store(false);
    } else if (std::strcmp(value, "shared") == 0) {
      backend().shared_memory.store(true);
    } else {
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("level_zero option memory_kind: '", value,
                              "' is not 'device' (zeMemAllocDevice) or 'shared' (zeMemAllocShared)"));
    }
    return AXL_SUCCESS;
  });
}

namespace {

const axl_plugin_info kInfo = {
    sizeof(axl_plugin_info),
    "level_zero",
    "level_zero",
    "0.1.0",
    // Not verified on hardware yet; not FORK_SAFE: Level Zero drivers do not
    // survive fork() once initialised.
    AXL_PLUGIN_FLAG_EXPERIMENTAL,
    0u,
};

// Slots left NULL (docs/backends.md): core Level Zero has no free-memory query
// (Sysman's zesMemoryGetState needs ZES_ENABLE_SYSMAN before zeInit); the test
// kernels would be SPIR-V built offline, which nothing here can run to check;
// no run-time compiler is wired up; no multicast groups (Level Zero has no
// multicast object).
constexpr auto kOmitted = common::omitted_with(
    std::array<std::string_view, 3>{"device_get_memory_info", "device_get_test_kernel", "module_compile"},
    common::kMulticastSlots);
// constexpr: the table is in read-only data, complete before any caller.
constexpr axl_plugin_table kTable = AXL_PLUGIN_TABLE(kOmitted);

}  // namespace

}  // namespace axl::l0

extern "C" AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args) {
  return axl::common::negotiate(args, axl::l0::backend().host, &axl::l0::kInfo, &axl::l0::kTable);
}
