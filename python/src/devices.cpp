// Devices: the handle class the Python Device classes wrap, and the cache
// that gives each core device exactly one Python object.
//
// Core devices live for the whole process and a handle names one device
// (axl_device_equal is pointer equality), so the cache is keyed by handle.
// Keying by handle rather than by (label, id) keeps it right when the set of
// accelerators changes, e.g. when virtual-device mode is switched on.
#include <optional>
#include <unordered_map>

#include "common.hpp"

namespace axlpy {
namespace {

struct DeviceCache {
  // Strong references, never dropped: the devices outlive the interpreter.
  std::unordered_map<axl_device_t, PyObject*> objects;
  PyObject* factory = nullptr;  // axl.driver._device._make_device(handle)
};

// Guarded by the GIL. Leaked so that nothing is destroyed after Python.
DeviceCache& cache() {
  static auto* c = new DeviceCache();
  return *c;
}

std::string device_error_text(uint32_t count) {
  if (count == 0) return "no accelerator was found (accelerator_count() is 0)";
  return "only " + std::to_string(count) + " accelerator" + (count == 1 ? "" : "s") +
         " exist" + (count == 1 ? "s" : "") + " (valid ids 0.." + std::to_string(count - 1) + ")";
}

// Why there is no CPU device: the cpu plugin's own record when discovery
// saw it (disabled by AXL_PLUGINS_DISABLE, failed to load), else where it
// should have been.
std::string no_cpu_text() {
  try {
    for (const axl::PluginRecord& r : axl::plugin_records())
      if (r.name == "cpu" && !r.reason.empty())
        return "no CPU device: the cpu plugin (" + r.path + ") was not used: " + r.reason + " (python -m axl info)";
  } catch (const axl::Error&) {
    // No records to read: the generic text below.
  }
  return "no CPU device: is the cpu plugin next to libaxl.so, in axl/plugins/? (python -m axl info)";
}

// Accelerator(id) / CPU(): the cached Python object of the id-th device of a
// label. For id -1 ("first available") an accelerator whose backend fails to
// initialise drops out of the enumeration and the next one is tried, so a
// broken CUDA install does not hide a working HIP device.
py::object lookup(const std::string& label, int64_t id) {
  const char* l = label.c_str();
  if (label != "cpu" && label != "gpu")
    throw py::value_error("device label '" + label + "' is not 'cpu' or 'gpu'");
  if (label == "cpu") id = 0;  // MAX: CPU(id) ignores id
  if (id < -1) throw py::value_error("Accelerator(id=" + std::to_string(id) + "): id must be >= 0, or -1 for the first available accelerator");
  uint32_t count = axl::Device::count(l);
  const bool first = id == -1;
  if (first) id = 0;
  std::optional<axl::Error> failed;  // why an earlier accelerator dropped out
  for (;;) {
    if (static_cast<uint64_t>(id) >= count) {
      // Every accelerator's backend failed: its reason says more than "none".
      if (failed) throw *failed;
      if (label == "cpu") throw py::value_error(no_cpu_text());
      throw py::value_error("Accelerator(id=" + std::to_string(first ? -1 : id) + ") was requested but " +
                            device_error_text(count));
    }
    try {
      const axl::Device owned = axl::Device::get(l, static_cast<uint32_t>(id));
      return device_object(owned.get());
    } catch (const axl::Error& e) {
      uint32_t now = count;
      if (first) {
        try {
          now = axl::Device::count(l);
        } catch (const axl::Error&) {
          now = count;  // cannot tell: report this device's own error
        }
      }
      if (first && now < count) {
        failed = e;
        count = now;  // that backend dropped out; index 0 is the next one now
        continue;
      }
      throw;
    }
  }
}

}  // namespace

DeviceHandle::DeviceHandle(axl::Device d) : device(std::move(d)) {
  axl::DeviceInfo i = device.info();
  backend = i.backend;
  label = i.label;
  api = i.api;
  architecture_name = i.architecture_name;
  model_name = i.model_name;
  id = i.id;
  total_memory = i.total_memory_bytes;
  max_single_alloc = i.max_single_alloc_bytes;
  is_host = i.is_host;
  is_host_unified = i.is_host_unified;
  is_compatible = i.is_compatible;
  backend_index = i.backend_index;
}

py::object device_object(axl_device_t d) {
  DeviceCache& c = cache();
  if (auto it = c.objects.find(d); it != c.objects.end())
    return py::reinterpret_borrow<py::object>(it->second);
  if (!c.factory) throw std::runtime_error("axl._core: axl.driver did not register its device factory");
  auto handle = std::make_unique<DeviceHandle>(axl::share<axl::Device>(d));
  py::object obj = py::reinterpret_borrow<py::object>(c.factory)(py::cast(std::move(handle)));
  // The factory ran Python code, which may have let another thread in.
  if (auto it = c.objects.find(d); it != c.objects.end())
    return py::reinterpret_borrow<py::object>(it->second);
  c.objects.emplace(d, obj.inc_ref().ptr());
  return obj;
}

// What a device argument must be, in every message that refuses one (the
// Python layer's checks read it as _core._DEVICE_EXPECTED).
constexpr const char* kDeviceExpected = "an axl.driver.Device (CPU() or Accelerator())";

axl_device_t device_of(py::handle device, const char* what) {
  if (py::isinstance<DeviceHandle>(device)) return device.cast<DeviceHandle&>().get();
  if (device && py::hasattr(device, "_h")) {
    py::object h = device.attr("_h");
    if (py::isinstance<DeviceHandle>(h)) return h.cast<DeviceHandle&>().get();
  }
  throw py::type_error(std::string(what) + ": expected " + kDeviceExpected + ", got " + describe(device));
}

std::string device_text(axl_device_t d) {
  try {
    const axl::DeviceInfo i = axl::Unowned<axl::Device>(d)->info();
    return "Device(type=" + i.label + ",id=" + std::to_string(i.id) + ")";
  } catch (const axl::Error&) {
    return "Device(?)";  // for a message: never the reason it fails
  }
}

void register_devices(py::module_& m) {
  py::class_<DeviceHandle>(m, "DeviceHandle", R"doc(
The core device behind an axl.driver.Device (internal).

Not constructible; axl.driver.CPU() and Accelerator() hold one as ``_h``.
)doc")
      .def_property_readonly("backend", [](const DeviceHandle& h) { return to_str(h.backend); })
      .def_property_readonly("label", [](const DeviceHandle& h) { return to_str(h.label); })
      .def_property_readonly("api", [](const DeviceHandle& h) { return to_str(h.api); })
      .def_property_readonly("architecture_name",
                             [](const DeviceHandle& h) { return to_str(h.architecture_name); })
      .def_property_readonly("model_name", [](const DeviceHandle& h) { return to_str(h.model_name); })
      .def_readonly("id", &DeviceHandle::id)
      .def_readonly("backend_index", &DeviceHandle::backend_index)
      .def_readonly("total_memory", &DeviceHandle::total_memory)
      .def_readonly("max_single_alloc_size", &DeviceHandle::max_single_alloc)
      .def_readonly("is_host", &DeviceHandle::is_host)
      .def_readonly("is_host_unified", &DeviceHandle::is_host_unified)
      .def_readonly("is_compatible", &DeviceHandle::is_compatible)
      .def_property_readonly("ptr", [](const DeviceHandle& h) { return reinterpret_cast<uintptr_t>(h.get()); })
      .def("memory_info", [](const DeviceHandle& h) { return h.device.memory_info(); },
           "(free, total) bytes.")
      .def("synchronize", [](const DeviceHandle& h) { without_gil([&] { h.device.synchronize(); }); })
      .def("can_access", [](const DeviceHandle& h, py::handle other) {
        return h.device.can_access(*axl::Unowned<axl::Device>(device_of(other, "Device.can_access: other")));
      })
      .def("enable_peer_access", [](const DeviceHandle& h, py::handle other) {
        h.device.enable_peer_access(*axl::Unowned<axl::Device>(device_of(other, "Device.enable_peer_access: other")));
      })
      .def("default_queue", [](const DeviceHandle& h) { return make_queue_object(h.device.default_queue()); });

  m.attr("_DEVICE_EXPECTED") = kDeviceExpected;
  m.def("_set_device_factory", [](py::object f) { cache().factory = f.release().ptr(); },
        "Registers the callable that wraps a DeviceHandle in a Python Device (axl.driver).");
  m.def("_device_object", &lookup, py::arg("label"), py::arg("id") = -1, R"doc(
The one Python Device object of the id-th device with this label ("cpu" or
"gpu"); id -1 is the first available. ValueError naming the number of devices
when there is no such device.
)doc");
  m.def("_known_devices", [] {
    py::list out;
    for (auto& [d, obj] : cache().objects) out.append(py::reinterpret_borrow<py::object>(obj));
    return out;
  });
  refuse_unconstructed_use<DeviceHandle>();
}

}  // namespace axlpy
