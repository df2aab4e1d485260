// Multicast groups (axl.h, ABI 1.5) for axl.driver.SymmetricPool: one group
// over a device list, its reservation, and per member its unicast memory and
// multicast view as Buffer objects (flat, of the dtype the caller passes).
#include <vector>

#include "common.hpp"

namespace axlpy {

namespace {

struct MulticastObj {
  axl::Multicast group;
  std::vector<axl_device_t> devices;  // borrowed: devices are immortal
  ~MulticastObj() { release_without_gil(group); }
};

}  // namespace

void register_multicast(py::module_& m) {
  py::class_<MulticastObj>(m, "MulticastGroup", R"doc(
A multicast group (axl_multicast_create), internal to axl.driver.SymmetricPool.
)doc")
      .def_property_readonly("reserved_bytes", [](const MulticastObj& g) { return g.group.reserved_bytes(); })
      .def(
          "view",
          [](const MulticastObj& g, uint32_t index, bool multicast, py::object dtype) {
            axl::Buffer b = multicast ? g.group.multicast(index) : g.group.unicast(index);
            const axl::Layout layout =
                axl::Layout::contiguous({static_cast<int64_t>(g.group.reserved_bytes())}, 1);
            return make_buffer_object(std::move(b), g.devices.at(index), std::move(dtype), layout, 0, false);
          },
          py::arg("index"), py::arg("multicast"), py::arg("dtype"),
          "A flat Buffer of reserved_bytes over member `index`'s unicast memory or multicast view; `dtype` "
          "must be one byte wide.");
  m.def(
      "_multicast_supported",
      [](py::handle device) { return axl::Unowned<axl::Device>(device_of(device, "SymmetricPool: device"))->multicast_supported(); },
      py::arg("device"), "axl_device_multicast_supported.");
  m.def(
      "_multicast_create",
      [](py::sequence devices, uint64_t byte_size) {
        auto g = std::make_unique<MulticastObj>();
        std::vector<axl::Device> devs;
        for (py::handle d : devices) {
          g->devices.push_back(device_of(d, "SymmetricPool: devices"));
          devs.push_back(axl::share<axl::Device>(g->devices.back()));
        }
        g->group = without_gil([&] { return axl::Multicast::create(devs, byte_size); });
        return g;
      },
      py::arg("devices"), py::arg("byte_size"), "axl_multicast_create over `devices` (Device handles).");
  refuse_unconstructed_use<MulticastObj>();
}

}  // namespace axlpy
