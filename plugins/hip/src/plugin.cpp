// The hip backend's entry point: common::DriverPlugin for the HIP traits
// (hip_backend.hpp); the slot bodies in plugins/common are shared by the
// driver-API backends.
#include "axl/common/driver_plugin_slots.hpp"
#include "hip_backend.hpp"

extern "C" AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args) {
  return axl::hip::Plugin::negotiate(args);
}
