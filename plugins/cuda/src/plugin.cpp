// The cuda backend's entry point: common::DriverPlugin's table for the CUDA
// traits (cuda_backend.hpp). The slot bodies are shared with hip.
#include "axl/common/driver_plugin_slots.hpp"
#include "cuda_backend.hpp"

namespace axl::cuda {

namespace {

const axl_plugin_info kInfo = {
    sizeof(axl_plugin_info),
    "cuda",
    "cuda",
    "0.1.0",
    0u,  // accelerators; not fork-safe (require_driver refuses in a child)
    0u,
};

constexpr axl_plugin_table kTable = Plugin::table();

}  // namespace

}  // namespace axl::cuda

extern "C" AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args) {
  return axl::common::negotiate(args, axl::cuda::Plugin::state().host, &axl::cuda::kInfo,
                                &axl::cuda::kTable);
}
