// The OpenCL backend's entry point, its function table, discovery (the ICD
// loader, its platforms and their devices of the chosen types) and the
// backend slots.
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "axl/common/fixed_string.hpp"
#include "axl/common/immortal.hpp"
#include "cl_backend.hpp"
#include "icd_census.hpp"

namespace axl::opencl {

// Constructed at negotiate and never destroyed (axl/common/immortal.hpp).
Backend& backend() noexcept { return common::immortal<Backend>(); }

axl_status status_of(cl_int r) noexcept {
  switch (r) {
    case CL_SUCCESS: return AXL_SUCCESS;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES: return AXL_ERROR_OUT_OF_DEVICE_MEMORY;
    case CL_OUT_OF_HOST_MEMORY: return AXL_ERROR_OUT_OF_HOST_MEMORY;
    case CL_DEVICE_NOT_FOUND:
    case CL_DEVICE_NOT_AVAILABLE:
    case CL_COMPILER_NOT_AVAILABLE:
    case -1001: return AXL_ERROR_BACKEND_UNAVAILABLE;  // CL_PLATFORM_NOT_FOUND_KHR
    case CL_INVALID_KERNEL_NAME: return AXL_ERROR_NOT_FOUND;
    case CL_INVALID_COMMAND_QUEUE:
    case CL_INVALID_CONTEXT:
    case CL_INVALID_MEM_OBJECT:
    case CL_INVALID_EVENT:
    case CL_INVALID_KERNEL:
    case CL_INVALID_PROGRAM: return AXL_ERROR_INVALID_HANDLE;
    case CL_INVALID_OPERATION:
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST: return AXL_ERROR_INVALID_STATE;
    default: return AXL_ERROR_INVALID_ARGUMENT;
  }
}

namespace {

// A string-valued clGetDeviceInfo / clGetPlatformInfo answer; "" on failure.
template <class Query, class Object>
std::string info_string(Query query, Object object, cl_uint param) {
  size_t n = 0;
  if (query(object, param, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (query(object, param, n, s.data(), nullptr) != CL_SUCCESS) return "";
  s.resize(std::strlen(s.c_str()));
  return s;
}

template <class T>
T device_value(const ClApi& c, cl_device_id d, cl_device_info param) {
  T v{};
  if (c.clGetDeviceInfo(d, param, sizeof v, &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

// The device types AXL_OPENCL_DEVICE_TYPES asks for; false (with `why`)
// for a word it does not know.
bool chosen_types(cl_device_type* out, std::string* why) {
  const char* env = secure_getenv(kDeviceTypesEnv);
  *out = CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR;
  if (env == nullptr || env[0] == '\0') return true;
  cl_device_type types = 0;
  std::string word;
  auto take = [&]() -> bool {
    if (word.empty()) return true;
    if (word == "all") types |= CL_DEVICE_TYPE_ALL;
    else if (word == "gpu") types |= CL_DEVICE_TYPE_GPU;
    else if (word == "accelerator") types |= CL_DEVICE_TYPE_ACCELERATOR;
    else if (word == "cpu") types |= CL_DEVICE_TYPE_CPU;
    else if (word == "custom") types |= CL_DEVICE_TYPE_CUSTOM;
    else {
      *why = common::str(kDeviceTypesEnv, "='", env, "': '", word,
                         "' is not one of all, gpu, accelerator, cpu, custom");
      return false;
    }
    word.clear();
    return true;
  };
  for (const char* p = env; *p; ++p) {
    if (*p == ',') {
      if (!take()) return false;
    } else if (*p != ' ') {
      word += *p;
    }
  }
  if (!take()) return false;
  *out = types;
  return true;
}

std::string type_names(cl_device_type t) {
  if (t == CL_DEVICE_TYPE_ALL) return "all";
  std::string s;
  auto add = [&](cl_device_type bit, const char* name) {
    if (t & bit) s += (s.empty() ? "" : ",") + std::string(name);
  };
  add(CL_DEVICE_TYPE_GPU, "gpu");
  add(CL_DEVICE_TYPE_ACCELERATOR, "accelerator");
  add(CL_DEVICE_TYPE_CPU, "cpu");
  add(CL_DEVICE_TYPE_CUSTOM, "custom");
  return s;
}

void describe(const ClApi& c, Device& d) {
  axl_device_properties& a = d.props;
  a.struct_size = sizeof(axl_device_properties);
  // Every device this backend offers is an accelerator to axl (label "gpu"),
  // a PoCL CPU device included once AXL_OPENCL_DEVICE_TYPES asks for it: its
  // memory is OpenCL buffers, not host memory the core may touch (is_host 0).
  common::copy_string(a.label, sizeof a.label, "gpu");
  common::copy_string(a.api, sizeof a.api, "opencl");
  const std::string vendor = info_string(c.clGetDeviceInfo, d.id, CL_DEVICE_VENDOR);
  const std::string name = info_string(c.clGetDeviceInfo, d.id, CL_DEVICE_NAME);
  common::copy_string(a.model_name, sizeof a.model_name, vendor.empty() ? name : vendor + " " + name);
  // OpenCL names no architecture; the device's version string ("OpenCL 3.0
  // PoCL ...") is what a compiler choice depends on.
  common::copy_string(a.architecture_name, sizeof a.architecture_name,
              info_string(c.clGetDeviceInfo, d.id, CL_DEVICE_VERSION));
  a.total_memory_bytes = device_value<cl_ulong>(c, d.id, CL_DEVICE_GLOBAL_MEM_SIZE);
  a.max_single_alloc_bytes = device_value<cl_ulong>(c, d.id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  a.is_host = 0;
  a.is_host_unified = device_value<cl_bool>(c, d.id, CL_DEVICE_HOST_UNIFIED_MEMORY) ? 1 : 0;
  a.is_compatible = 1;
  d.max_work_group_size = device_value<size_t>(c, d.id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  c.clGetDeviceInfo(d.id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof d.max_work_item_sizes,
                    d.max_work_item_sizes, nullptr);
  // An OpenCL 1.2 device answers CL_INVALID_VALUE: "", no SPIR-V.
  d.il_version = info_string(c.clGetDeviceInfo, d.id, CL_DEVICE_IL_VERSION);
}

// Opens the loader and lists the platforms' devices of the chosen types.
// clGetPlatformIDs/clGetDeviceIDs make no context: PoCL and the ICD loader
// read their ICD files and driver lists only.
void run_discovery(Backend& b) {
  common::Discovery& d = b.discovery;
  cl_device_type types = 0;
  std::string why;
  if (!chosen_types(&types, &why)) {
    d.status = AXL_ERROR_INVALID_ARGUMENT;
    d.message = why;
    return;
  }
  const char* env = secure_getenv(kLoaderPathEnv);
  const std::string where =
      env != nullptr && env[0] != '\0' ? common::str(" (", kLoaderPathEnv, ")") : "";
  LoadResult lr = load_loader(b.library, b.cl);
  if (lr.kind == LoadResult::Kind::kAbsent) {
    ClResult::unavailable(d, common::str("the OpenCL ICD loader is not installed: ", lr.detail));
    b.host.log(AXL_LOG_INFO, d.message);
    return;
  }
  if (lr.kind == LoadResult::Kind::kMissingSymbol) {
    ClResult::unavailable(d, common::str("the OpenCL ICD loader ", b.library.path(), where,
                                         " lacks required entry point(s): ", lr.detail,
                                         " (older than OpenCL 1.2, or not an OpenCL library)"));
    b.host.log(AXL_LOG_WARN, d.message);
    return;
  }
  b.library_note = where;
  if ((types & CL_DEVICE_TYPE_CPU) == 0) {
    // Without CPU devices asked for, a machine whose every driver is
    // CPU-only has nothing to offer: say so from the ICD files, before the
    // loader loads (and PoCL starts) those drivers (icd_census.hpp).
    const IcdCensus census = read_icd_census();
    const bool all_cpu_only =
        census.known && !census.drivers.empty() &&
        std::all_of(census.drivers.begin(), census.drivers.end(),
                    [](const IcdDriver& drv) { return cpu_only_driver(drv.library); });
    if (all_cpu_only) {
      std::string names;
      for (const IcdDriver& drv : census.drivers)
        names += common::str(names.empty() ? "" : ", ", drv.library, " (", drv.source, ")");
      ClResult::unavailable(
          d, common::str("OpenCL (", b.library.path(), where, ") has no device of type ",
                         type_names(types), ": its only driver(s), ", names,
                         ", have cpu devices only and were not loaded; set ", kDeviceTypesEnv,
                         "=all to use CPU devices such as PoCL's"));
      return;
    }
  }
  const ClApi& c = b.cl;
  cl_uint np = 0;
  cl_int r = c.clGetPlatformIDs(0, nullptr, &np);
  if (r == -1001 || (r == CL_SUCCESS && np == 0)) {
    ClResult::unavailable(
        d,
        common::str("the OpenCL ICD loader ", b.library.path(), where,
                    " found no platform: no OpenCL driver is installed (no ICD file in "
                    "/etc/OpenCL/vendors, or OCL_ICD_VENDORS names none)"),
        r);
    return;
  }
  if (r != CL_SUCCESS) {
    ClResult::unavailable(d,
                          ClResult::failed("clGetPlatformIDs", r) +
                              common::str(" (loader ", b.library.path(), where, ")"),
                          r);
    return;
  }
  std::vector<cl_platform_id> ids(np);
  if ((r = c.clGetPlatformIDs(np, ids.data(), &np)) != CL_SUCCESS) {
    ClResult::unavailable(d,
                          ClResult::failed("clGetPlatformIDs", r) +
                              common::str(" (loader ", b.library.path(), where, ")"),
                          r);
    return;
  }
  std::string seen;  // what each platform has, for the no-device message
  for (cl_uint i = 0; i < np; ++i) {
    auto p = std::make_unique<Platform>();
    p->id = ids[i];
    p->name = info_string(c.clGetPlatformInfo, ids[i], CL_PLATFORM_NAME);
    cl_uint nd = 0;
    r = c.clGetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd);
    if (r != CL_SUCCESS && r != CL_DEVICE_NOT_FOUND) {
      b.host.log(AXL_LOG_WARN, common::str("opencl: platform '", p->name, "': clGetDeviceIDs failed: ",
                                           result_name(r), "; skipped"));
      continue;
    }
    std::vector<cl_device_id> devs(r == CL_SUCCESS ? nd : 0);
    if (!devs.empty() && c.clGetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, nd, devs.data(), &nd) != CL_SUCCESS)
      devs.clear();
    std::string kinds;
    for (cl_device_id id : devs) {
      const auto type = device_value<cl_device_type>(c, id, CL_DEVICE_TYPE);
      kinds += (kinds.empty() ? "" : ", ") + type_names(type);
      if ((type & types) == 0 || !device_value<cl_bool>(c, id, CL_DEVICE_AVAILABLE)) continue;
      auto dev = std::make_unique<Device>();
      dev->index = static_cast<uint32_t>(b.devices.size());
      dev->id = id;
      dev->type = type;
      dev->platform = p.get();
      describe(c, *dev);
      b.devices.push_back(std::move(dev));
    }
    seen += common::str(seen.empty() ? "" : "; ", "'", p->name, "': ",
                        kinds.empty() ? "no device" : kinds);
    b.platforms.push_back(std::move(p));
  }
  if (b.devices.empty()) {
    ClResult::unavailable(
        d, common::str("OpenCL (", b.library.path(), where, ") has no device of type ",
                       type_names(types), " (", seen, "); set ", kDeviceTypesEnv,
                       "=all to use CPU devices such as PoCL's"));
    return;
  }
  d.status = AXL_SUCCESS;
  b.host.log(AXL_LOG_INFO, common::str("opencl: ", b.platforms.size(), " platform(s), ",
                                       b.devices.size(), " device(s) of type ", type_names(types),
                                       " through ", b.library.path()));
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
    if (axl_status s = discover()) return s;
    // One context per platform over the devices chosen on it, so that
    // buffers and events are shared by the queues of all of them.
    for (auto& p : b.platforms) {
      if (p->context != nullptr) continue;
      std::vector<cl_device_id> ids;
      for (auto& d : b.devices)
        if (d->platform == p.get()) ids.push_back(d->id);
      if (ids.empty()) continue;
      const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                             reinterpret_cast<cl_context_properties>(p->id), 0};
      cl_int r = CL_SUCCESS;
      p->context = b.cl.clCreateContext(props, static_cast<cl_uint>(ids.size()), ids.data(),
                                        nullptr, nullptr, &r);
      if (r != CL_SUCCESS || p->context == nullptr)
        return cl_fail("clCreateContext", r, "platform '" + p->name + "'",
                       AXL_ERROR_BACKEND_UNAVAILABLE);
    }
    return AXL_SUCCESS;
  });
}

axl_status backend_shutdown() noexcept {
  return guarded("backend_shutdown", []() -> axl_status {
    Backend& b = backend();
    // Leftover queues' command queues and buffers still belong to the contexts: keep those.
    if (common::stop_leftover_host_threads(b.host, b.queues, "opencl")) return AXL_SUCCESS;
    for (auto& d : b.devices) {
      if (d->map_queue != nullptr) b.cl.clReleaseCommandQueue(d->map_queue);
      d->map_queue = nullptr;
    }
    for (auto& p : b.platforms) {
      if (p->context != nullptr) b.cl.clReleaseContext(p->context);
      p->context = nullptr;
    }
    return AXL_SUCCESS;
  });
}

axl_status backend_device_count(uint32_t* out_count) noexcept {
  return guarded("backend_device_count", [&]() -> axl_status {
    if (out_count == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "backend_device_count: out_count is NULL");
    // OpenCL counts without a context (clGetDeviceIDs), so the count before
    // backend_init is already the driver's.
    if (axl_status s = discover()) return s;
    *out_count = static_cast<uint32_t>(backend().devices.size());
    return AXL_SUCCESS;
  });
}

axl_status backend_set_tracing(uint8_t enabled) noexcept {
  backend().tracer.set_enabled(enabled != 0);
  return AXL_SUCCESS;
}

namespace {

const axl_plugin_info kInfo = {
    sizeof(axl_plugin_info),
    "opencl",
    "opencl",
    "0.1.0",
    // Not FORK_SAFE: the core asks only after a successful backend_init,
    // which called into a driver (contexts), and PoCL's threads are not known
    // to survive a fork (docs/backends.md, opencl, "Fork").
    AXL_PLUGIN_FLAG_EXPERIMENTAL,
    0u,
};

// Slots left NULL, each for the reason docs/backends.md (opencl) gives: no
// option, no peer access (the core stages copies across devices through
// host memory); OpenCL has no multicast objects.
constexpr auto kOmitted = common::omitted_with(
    std::array<std::string_view, 4>{"backend_set_option", "device_can_access_peer", "device_enable_peer_access",
                                    "queue_copy_peer"},
    common::kMulticastSlots);
// constexpr: the table is in read-only data, complete before any caller.
constexpr axl_plugin_table kTable = AXL_PLUGIN_TABLE(kOmitted);

}  // namespace

}  // namespace axl::opencl

extern "C" AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args) {
  return axl::common::negotiate(args, axl::opencl::backend().host, &axl::opencl::kInfo,
                                &axl::opencl::kTable);
}
