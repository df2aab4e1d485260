// The level_zero plugin's own logic (discovery, properties, memory, options,
// argument checks) against a fake loader with one GPU (fake_ze_device.c):
// the plugin is dlopen()ed and driven through its function table directly,
// with the shared fake host services (tools/test-host).
#include <stdlib.h>

#include <cstddef>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include "axl/plugin.h"
#include "host_services.hpp"
#include "plugin_checks.hpp"

namespace {

// The shared fake host services (tools/test-host); its last report is per
// thread, like the core's last error.
axl_test::FakeHost& host() {
  static axl_test::FakeHost& h = axl_test::new_host();
  return h;
}

// The plugin, loaded once for the whole program with the fake loader.
const axl_plugin_table& plugin() {
  static const axl_plugin_table* table = [] {
    setenv("AXL_LEVEL_ZERO_LOADER_PATH", AXL_FAKE_ZE_ONE_DEVICE_PATH, 1);
    const axl_plugin_table* t = axl_test::require_plugin(AXL_LEVEL_ZERO_PLUGIN_PATH, host());
    REQUIRE(t->backend_init() == AXL_SUCCESS);
    return t;
  }();
  return *table;
}

axl_pdevice device0() {
  axl_pdevice d = nullptr;
  REQUIRE(plugin().device_get(0, &d) == AXL_SUCCESS);
  return d;
}

void require_error(axl_status got, axl_status expected, const std::string& part) {
  axl_test::require_error(host(), got, expected, part);
}

}  // namespace

TEST_CASE("discovery finds the one GPU; indexes past it are out of range") {
  uint32_t n = 0;
  REQUIRE(plugin().backend_device_count(&n) == AXL_SUCCESS);
  CHECK(n == 1);
  axl_pdevice d = nullptr;
  require_error(plugin().device_get(1, &d), AXL_ERROR_OUT_OF_RANGE, "device index 1 is out of range: 1");
}

TEST_CASE("device properties come from zeDeviceGet*Properties") {
  axl_device_properties p{};
  p.struct_size = sizeof p;
  REQUIRE(plugin().device_get_properties(device0(), &p) == AXL_SUCCESS);
  CHECK(std::string(p.label) == "gpu");
  CHECK(std::string(p.api) == "level_zero");
  CHECK(std::string(p.model_name) == "Fake Level Zero GPU");
  CHECK(std::string(p.architecture_name) == "0x8086:0x56a0");
  CHECK(p.total_memory_bytes == (12ull << 30));  // the two regions together
  CHECK(p.max_single_alloc_bytes == (1ull << 30));
  CHECK(p.is_host == 0);
  CHECK(p.is_host_unified == 0);
  CHECK(p.is_compatible == 1);
  // A shorter (older) struct: nothing past its struct_size is written.
  axl_device_properties shortp{};
  std::memset(&shortp, 0x5a, sizeof shortp);
  shortp.struct_size = offsetof(axl_device_properties, api);
  REQUIRE(plugin().device_get_properties(device0(), &shortp) == AXL_SUCCESS);
  CHECK(std::string(shortp.label) == "gpu");
  CHECK(static_cast<unsigned char>(shortp.api[0]) == 0x5a);
}

TEST_CASE("device memory: 256-byte aligned, freed once, limits named") {
  axl_pdevice d = device0();
  axl_devaddr a = 0;
  REQUIRE(plugin().memory_alloc(d, 1000, &a) == AXL_SUCCESS);
  CHECK(a != 0);
  CHECK(a % 256 == 0);
  CHECK(plugin().memory_free(d, a) == AXL_SUCCESS);
  require_error(plugin().memory_free(d, a), AXL_ERROR_INVALID_ARGUMENT,
                "is not an allocation of this Level Zero device");
  require_error(plugin().memory_alloc(d, 0, &a), AXL_ERROR_INVALID_ARGUMENT, "bytes is 0");
  require_error(plugin().memory_alloc(d, (1ull << 30) + 1, &a), AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                "above the device's largest allocation, 1073741824 bytes");
}

TEST_CASE("memory_kind option: device or shared, anything else refused") {
  require_error(plugin().backend_set_option("memory_kind", "managed"), AXL_ERROR_INVALID_ARGUMENT,
                "'managed' is not 'device'");
  require_error(plugin().backend_set_option("no_such_key", "1"), AXL_ERROR_NOT_FOUND,
                "level_zero has no option 'no_such_key'");
  CHECK(plugin().backend_set_option("memory_kind", "device") == AXL_SUCCESS);
}

TEST_CASE("peer access: a device and itself answer 0") {
  uint8_t can = 7;
  axl_pdevice d = device0();
  REQUIRE(plugin().device_can_access_peer(d, d, &can) == AXL_SUCCESS);
  CHECK(can == 0);
}

TEST_CASE("modules: only SPIR-V, checked before the driver sees it") {
  axl_pmodule m = nullptr;
  const unsigned char ptx[] = ".version 7.0\n.target sm_80\n";
  axl_module_desc desc{sizeof(axl_module_desc), ptx, sizeof ptx, nullptr, AXL_MODULE_FORMAT_PTX, 0};
  require_error(plugin().module_load(device0(), &desc, &m), AXL_ERROR_UNSUPPORTED,
                "format PTX (2); Level Zero loads SPIR-V");
  desc.format = AXL_MODULE_FORMAT_AUTO;
  require_error(plugin().module_load(device0(), &desc, &m), AXL_ERROR_INVALID_ARGUMENT,
                "are not a SPIR-V module");
  desc.data = nullptr;
  desc.path = "/nonexistent/axl-test/kernels.spv";
  require_error(plugin().module_load(device0(), &desc, &m), AXL_ERROR_NOT_FOUND,
                "cannot open '/nonexistent/axl-test/kernels.spv'");
}
