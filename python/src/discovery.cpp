// Discovery, plugin records, process-wide settings (virtual-device mode, log
// level, peer access) and device specs: thin bindings of axl.h. The Python
// side (axl/driver/driver.py, axl/_info.py) gives them MAX's shapes.
#include <pybind11/stl.h>

#include "common.hpp"

namespace axlpy {
namespace {

std::string get_string(axl_status (*fn)(char*, size_t, size_t*)) {
  size_t need = 0;
  check(fn(nullptr, 0, &need));
  std::string s(need, '\0');
  check(fn(s.data(), s.size(), &need));
  s.resize(strnlen(s.c_str(), s.size()));
  return s;
}


}  // namespace

void register_discovery(py::module_& m) {
  m.attr("__version__") = std::string(axl_version_string());
  m.def("abi_version", [] {
    const uint32_t v = axl_abi_version();
    return py::make_tuple(v >> 16, v & 0xffffu);
  }, "(major, minor) of the application ABI libaxl.so implements.");
  m.attr("ABI_MAJOR") = AXL_ABI_MAJOR;
  m.attr("ABI_MINOR") = AXL_ABI_MINOR;

  m.def("_init", [] { check(axl_init()); },
        "Runs discovery (once). Raises only when AXL_PLUGINS names a plugin that failed to load.");
  m.def("_set_log_level", [](int32_t level) { check(axl_set_log_level(level)); }, py::arg("level"),
        "AXL_LOG_* level: 0 trace, 1 debug, 2 info, 3 warn, 4 error, 6 off.");
  m.def("_device_count", [](py::object label) {
    uint32_t n = 0;
    if (label.is_none()) check(axl_device_count(nullptr, &n));
    else check(axl_device_count(label.cast<std::string>().c_str(), &n));
    return n;
  }, py::arg("label") = py::none(), "Devices with the label ('cpu', 'gpu'; None for all). Initialises no backend.");
  m.def("accelerator_count", [] {
    uint32_t n = 0;
    check(axl_device_count("gpu", &n));
    return n;
  }, R"doc(
The number of accelerators (MAX: ``max.driver.accelerator_count``); the
virtual count in virtual-device mode; 0 on a CPU-only host.

Counting initialises no backend (no cuInit), so ``fork()`` after it is safe.
)doc");
  m.def("_device_report", [](uint32_t index) {
    // One device of the all-label enumeration, for `python -m axl info`.
    // Errors raise (AxlError) so the caller sees the same detail axl-info does.
    axl_device_t d = nullptr;
    check(axl_device_get(nullptr, index, &d));
    axl::Device dev(d);
    axl_device_info i{};
    i.struct_size = sizeof i;
    py::dict r;
    if (axl_status s = axl_device_get_info(d, &i)) {
      // A device that opened but cannot describe itself: reported as one
      // unusable device, as axl-info does.
      axl_error_info e{};
      e.struct_size = sizeof e;
      axl_last_error(&e);
      const bool have = e.status != AXL_SUCCESS;
      r["error"] = py::make_tuple(s, to_str(have ? e.backend : ""), have ? e.native_code : 0,
                                  to_str(have ? e.native_name : ""),
                                  to_str(have && e.message && *e.message ? e.message : axl_status_name(s)));
      return r;
    }
    r["backend"] = to_str(i.backend);
    r["label"] = to_str(i.label);
    r["api"] = to_str(i.api);
    r["architecture"] = to_str(i.architecture_name);
    r["model"] = to_str(i.model_name);
    r["id"] = i.id;
    r["backend_index"] = i.backend_index;
    r["total_memory"] = i.total_memory_bytes;
    r["max_single_alloc"] = i.max_single_alloc_bytes;
    r["is_host"] = i.is_host != 0;
    r["is_host_unified"] = i.is_host_unified != 0;
    r["is_compatible"] = i.is_compatible != 0;
    uint64_t free_bytes = 0, total_bytes = 0;
    if (axl_status s = axl_device_get_memory_info(d, &free_bytes, &total_bytes)) {
      const char* msg = axl_last_error_message();
      r["free_memory"] = py::none();
      r["free_memory_error"] =
          to_str(std::string(axl_status_name(s)) + ": " + ((msg && *msg) ? msg : axl_status_name(s)));
    } else {
      r["free_memory"] = free_bytes;
    }
    return r;
  }, py::arg("index"));
  m.def("_plugin_records", [] {
    uint32_t n = 0;
    py::list out;
    if (axl_plugin_count(&n) != AXL_SUCCESS) return out;
    for (uint32_t i = 0; i < n; ++i) {
      axl_plugin_record rec{};
      rec.struct_size = sizeof rec;
      if (axl_plugin_get_record(i, &rec) != AXL_SUCCESS) continue;
      py::dict r;
      r["path"] = to_str(rec.path);
      r["name"] = to_str(rec.name);
      r["api"] = to_str(rec.api);
      r["version"] = to_str(rec.version);
      r["reason"] = to_str(rec.reason);
      r["abi_major"] = rec.abi_major;
      r["abi_minor"] = rec.abi_minor;
      r["device_count"] = rec.device_count;
      r["flags"] = rec.flags;
      r["state"] = rec.state;
      r["state_name"] = axl_plugin_state_name(rec.state);
      r["status"] = rec.status;
      out.append(r);
    }
    return out;
  }, "Every plugin file discovery considered, in discovery order (axl_plugin_get_record).");
  m.def("_discovery_log", [] {
    size_t need = 0;
    if (axl_discovery_log(nullptr, 0, &need) != AXL_SUCCESS || need == 0) return to_str("");
    std::string buf(need, '\0');
    if (axl_discovery_log(buf.data(), buf.size(), &need) != AXL_SUCCESS) return to_str("");
    buf.resize(strnlen(buf.c_str(), buf.size()));
    return to_str(buf);
  });
  m.attr("PLUGIN_FLAG_FORK_SAFE") = static_cast<uint32_t>(AXL_PLUGIN_FLAG_FORK_SAFE);
  m.attr("PLUGIN_FLAG_VIRTUAL") = static_cast<uint32_t>(AXL_PLUGIN_FLAG_VIRTUAL);
  m.attr("PLUGIN_FLAG_EXPERIMENTAL") = static_cast<uint32_t>(AXL_PLUGIN_FLAG_EXPERIMENTAL);
  m.attr("PLUGIN_FLAG_HOST") = static_cast<uint32_t>(AXL_PLUGIN_FLAG_HOST);

  m.def("enable_all_peer_access", [] { check(axl_enable_all_peer_access()); }, R"doc(
Enables peer access between every pair of accelerators that can reach each
other (MAX: ``max.driver.enable_all_peer_access``); idempotent; a no-op with
fewer than two accelerators. The error names the first pair that failed.
)doc");

  // ------------------------------------------------------ virtual devices
  m.def("set_virtual_device_count", [](int32_t n) { check(axl_set_virtual_device_count(n)); }, py::arg("count"),
        R"doc(
Turns virtual-device mode on (count > 0: the accelerators become exactly
``count`` compile-only devices of the ``virtual`` plugin, with the api and
architecture set before) or off (0). InvalidArgumentError (a ValueError) for
a negative count or one above 1024; BackendUnavailableError when the virtual
plugin is not installed. Devices obtained earlier keep their settings.
)doc");
  m.def("get_virtual_device_count", [] {
    int32_t n = 0;
    check(axl_get_virtual_device_count(&n));
    return n;
  }, "The virtual device count; 0 when the mode is off (the default).");
  m.def("is_virtual_device_mode", [] { return axl_is_virtual_device_mode() != 0; });
  m.def("set_virtual_device_api", [](const std::string& api) { check(axl_set_virtual_device_api(c_string(api, "virtual device api"))); },
        py::arg("api"), "Api the virtual devices report ('cuda', 'hip', 'metal'); set before the count.");
  m.def("get_virtual_device_api", [] { return get_string(axl_get_virtual_device_api); }, "'' when unset.");
  m.def("set_virtual_device_target_arch",
        [](const std::string& arch) { check(axl_set_virtual_device_target_arch(c_string(arch, "virtual device target architecture"))); }, py::arg("arch"),
        "Architecture the virtual devices report ('sm_90', 'gfx942'); set before the count.");
  m.def("get_virtual_device_target_arch", [] { return get_string(axl_get_virtual_device_target_arch); },
        "'' when unset.");
  m.def("set_virtual_cpu_target", [](const std::string& cpu) { check(axl_set_virtual_cpu_target(c_string(cpu, "virtual CPU target"))); },
        py::arg("cpu"), R"doc(
Fixed LLVM target CPU for CPU kernel code generation: a CPU name such as
'x86-64-v3', 'generic' (the host family's baseline), or '' for the host CPU.
'native' is refused with InvalidArgumentError (a ValueError): it would bake
the build host's CPU into a kernel cache. Stored verbatim.
)doc");
  m.def("get_virtual_cpu_target", [] { return get_string(axl_get_virtual_cpu_target); }, "'' when unset (host CPU).");

  // ------------------------------------------------------------ device specs
  m.def("_device_spec_parse", [](const std::string& text) {
    py::list out;
    for (const axl_device_spec& s : axl::parse_device_spec(c_string(text, "device spec")))
      out.append(py::make_tuple(s.is_accelerator != 0, s.id));
    return out;
  }, py::arg("text"), "Core spec grammar: [(is_accelerator, id), ...].");
  m.def("_calculate_virtual_device_count", [](const std::vector<std::pair<bool, int32_t>>& specs) {
    std::vector<axl_device_spec> v;
    for (auto& [acc, id] : specs) v.push_back({acc ? 1 : 0, id});
    uint32_t out = 0;
    check(axl_calculate_virtual_device_count(v.data(), v.size(), &out));
    return out;
  }, py::arg("specs"));
  m.def("_calculate_virtual_device_count_from_cli", [](const std::vector<std::string>& inputs) {
    std::vector<const char*> p;
    for (const auto& s : inputs) p.push_back(c_string(s, "CLI device input"));
    uint32_t out = 0;
    check(axl_calculate_virtual_device_count_from_cli(p.data(), p.size(), &out));
    return out;
  }, py::arg("inputs"), "The core's CLI grammar (strings; the one calculate_virtual_device_count_from_cli uses).");
}

}  // namespace axlpy
