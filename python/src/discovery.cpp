// Discovery, plugin records, the axl-info report, process-wide settings
// (virtual-device mode, log level, peer access) and device specs: thin
// bindings of axl.hpp / axl/report.hpp. The Python side (axl/driver/driver.py,
// axl/_info.py) gives them MAX's shapes.
#include <pybind11/stl.h>

#include "axl/report.hpp"
#include "common.hpp"

namespace axlpy {

void register_discovery(py::module_& m) {
  m.attr("__version__") = axl::version_string();
  m.def("abi_version", [] { return axl::abi_version(); },
        "(major, minor) of the application ABI libaxl.so implements.");
  m.attr("ABI_MAJOR") = AXL_ABI_MAJOR;
  m.attr("ABI_MINOR") = AXL_ABI_MINOR;

  m.def("_init", [] { axl::init(); },
        "Runs discovery (once). Raises only when AXL_PLUGINS names a plugin that failed to load.");
  m.def("_set_log_level", [](int32_t level) { axl::set_log_level(level); }, py::arg("level"),
        "AXL_LOG_* level: 0 trace, 1 debug, 2 info, 3 warn, 4 error, 6 off.");
  m.def("_device_count", [](py::object label) {
    if (label.is_none()) return axl::Device::count(nullptr);
    return axl::Device::count(label.cast<std::string>().c_str());
  }, py::arg("label") = py::none(), "Devices with the label ('cpu', 'gpu'; None for all). Initialises no backend.");
  m.def("accelerator_count", [] { return axl::Device::count("gpu"); }, R"doc(
The number of accelerators (MAX: ``max.driver.accelerator_count``); the
virtual count in virtual-device mode; 0 on a CPU-only host.

Counting initialises no backend (no cuInit), so ``fork()`` after it is safe.
)doc");
  m.def("_report", [](bool json, bool verbose) {
    // axl/report.hpp, the report axl-info prints: bytes, since paths and
    // dlerror() text need not be UTF-8 and must print as the tool prints them.
    const axl::Report r = axl::collect_report(verbose);
    const std::string text = axl::format_report(r, {json, verbose});
    py::object init_error = py::none();
    if (r.init_error) init_error = py::bytes(axl::describe(*r.init_error));
    return py::make_tuple(py::bytes(text), init_error);
  }, py::arg("json") = false, py::arg("verbose") = false,
     "The axl-info report (text or JSON) as bytes, and axl_init's failure described (bytes) or None.");
  m.def("_plugin_records", [] {
    py::list out;
    for (const axl::PluginRecord& rec : axl::plugin_records()) {
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
      r["state_name"] = rec.state_name();
      r["status"] = rec.status;
      out.append(r);
    }
    return out;
  }, "Every plugin file discovery considered, in discovery order (axl_plugin_get_record).");
  m.def("_discovery_log", [] {
    try {
      return to_str(axl::discovery_log());
    } catch (const axl::Error&) {
      return to_str("");  // as axl-info: the trace is best effort
    }
  });
  // PLUGIN_FLAG_FORK_SAFE ... from axl/enums.h's one list (the C name less "AXL_").
#define AXL_PY_PLUGIN_FLAG_(name, bit, report_name) m.attr(#name + 4) = static_cast<uint32_t>(name);
  AXL_PLUGIN_FLAGS(AXL_PY_PLUGIN_FLAG_)
#undef AXL_PY_PLUGIN_FLAG_

  m.def("enable_all_peer_access", [] { axl::enable_all_peer_access(); }, R"doc(
Enables peer access between every pair of accelerators that can reach each
other (MAX: ``max.driver.enable_all_peer_access``); idempotent; a no-op with
fewer than two accelerators. The error names the first pair that failed.
)doc");

  // ------------------------------------------------------ virtual devices
  m.def("set_virtual_device_count", [](py::handle n) {
    axl::set_virtual_device_count(arg_as<int32_t>(n, "set_virtual_device_count: count", "an int"));
  }, py::arg("count"),
        R"doc(
Turns virtual-device mode on (count > 0: the accelerators become exactly
``count`` compile-only devices of the ``virtual`` plugin, with the api and
architecture set before) or off (0). InvalidArgumentError (a ValueError) for
a negative count or one above 1024; BackendUnavailableError when the virtual
plugin is not installed. Devices obtained earlier keep their settings.
)doc");
  m.def("get_virtual_device_count", [] { return axl::virtual_device_count(); }, "The virtual device count; 0 when the mode is off (the default).");
  m.def("is_virtual_device_mode", [] { return axl::is_virtual_device_mode(); });
  m.def("set_virtual_device_api", [](py::handle api) {
    const auto s = arg_str(api, "set_virtual_device_api: api");
    axl::set_virtual_device_api(c_string(s, "virtual device api"));
  },
        py::arg("api"), "Api the virtual devices report ('cuda', 'hip', 'metal'); set before the count.");
  m.def("get_virtual_device_api", [] { return axl::virtual_device_api(); }, "'' when unset.");
  m.def("set_virtual_device_target_arch",
        [](py::handle arch) {
          const auto s = arg_str(arch, "set_virtual_device_target_arch: arch");
          axl::set_virtual_device_target_arch(c_string(s, "virtual device target architecture"));
        }, py::arg("arch"),
        "Architecture the virtual devices report ('sm_90', 'gfx942'); set before the count.");
  m.def("get_virtual_device_target_arch", [] { return axl::virtual_device_target_arch(); },
        "'' when unset.");
  m.def("set_virtual_cpu_target", [](py::handle cpu) {
    const auto s = arg_str(cpu, "set_virtual_cpu_target: cpu");
    axl::set_virtual_cpu_target(c_string(s, "virtual CPU target"));
  },
        py::arg("cpu"), R"doc(
Fixed LLVM target CPU for CPU kernel code generation: a CPU name such as
'x86-64-v3', 'generic' (the host family's baseline), or '' for the host CPU.
'native' is refused with InvalidArgumentError (a ValueError): it would bake
the build host's CPU into a kernel cache. Stored verbatim.
)doc");
  m.def("get_virtual_cpu_target", [] { return axl::virtual_cpu_target(); }, "'' when unset (host CPU).");

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
    return axl::calculate_virtual_device_count(v);
  }, py::arg("specs"));
  m.def("_calculate_virtual_device_count_from_cli", [](const std::vector<std::string>& inputs) {
    for (const auto& s : inputs) c_string(s, "CLI device input");
    return axl::calculate_virtual_device_count_from_cli(inputs);
  }, py::arg("inputs"), "The core's CLI grammar (strings; the one calculate_virtual_device_count_from_cli uses).");
}

}  // namespace axlpy
