// Virtual-device mode (axl.h's last section, MAX's max.driver section 10)
// through the C API, with the virtual plugin loaded and no virtual devices
// asked for by the environment: defaults, validation, round trips, the
// accelerators the mode hands out, and the device-count calculators.
#include <string>
#include <vector>

#include "virtual_test_util.hpp"

namespace {

// No AXL_VIRTUAL_DEVICES: a normal machine shows no virtual accelerators.
const bool kEnvironment = vt::prepare_environment({});

using Getter = axl_status (*)(char*, size_t, size_t*);

std::string get_string(Getter get) {
  size_t n = 0;
  REQUIRE(get(nullptr, 0, &n) == AXL_SUCCESS);
  REQUIRE(n >= 1);
  std::vector<char> buf(n, 'x');
  REQUIRE(get(buf.data(), buf.size(), &n) == AXL_SUCCESS);
  REQUIRE(buf[n - 1] == '\0');
  return buf.data();
}

int32_t mode_count() {
  int32_t n = -1;
  REQUIRE(axl_get_virtual_device_count(&n) == AXL_SUCCESS);
  return n;
}

uint32_t gpu_count() { return axl::Device::count("gpu"); }

std::string last_message() { return axl_last_error_message(); }

// Puts the process-wide settings back, whatever a test did.
struct ResetMode {
  ~ResetMode() {
    axl_set_virtual_device_count(0);
    axl_set_virtual_device_api("");
    axl_set_virtual_device_target_arch("");
    axl_set_virtual_cpu_target("");
  }
};

uint32_t from_cli(std::initializer_list<const char*> inputs) {
  std::vector<const char*> v(inputs);
  uint32_t out = 0;
  const axl_status s = axl_calculate_virtual_device_count_from_cli(v.data(), v.size(), &out);
  INFO("status " << axl_status_name(s) << ": " << last_message());
  REQUIRE(s == AXL_SUCCESS);
  return out;
}

}  // namespace

TEST_CASE("virtual-device mode: defaults", "[virtual][mode]") {
  REQUIRE(kEnvironment);
  CHECK(mode_count() == 0);
  CHECK(axl_is_virtual_device_mode() == 0);
  CHECK(get_string(axl_get_virtual_device_api).empty());
  CHECK(get_string(axl_get_virtual_device_target_arch).empty());
  CHECK(get_string(axl_get_virtual_cpu_target).empty());
  // The plugin is there, declaring itself virtual and not a host backend,
  // with no devices unless asked.
  uint32_t plugins = 0;
  REQUIRE(axl_plugin_count(&plugins) == AXL_SUCCESS);
  bool found = false;
  for (uint32_t i = 0; i < plugins; ++i) {
    axl_plugin_record r{};
    r.struct_size = sizeof r;
    REQUIRE(axl_plugin_get_record(i, &r) == AXL_SUCCESS);
    if (std::string(r.name) != "virtual") continue;
    found = true;
    CHECK(r.state == AXL_PLUGIN_STATE_LOADED);
    CHECK(r.device_count == 0);
    CHECK((r.flags & AXL_PLUGIN_FLAG_VIRTUAL) != 0);
    CHECK((r.flags & AXL_PLUGIN_FLAG_HOST) == 0);
    CHECK((r.flags & AXL_PLUGIN_FLAG_FORK_SAFE) == 0);
  }
  CHECK(found);
  CHECK(gpu_count() == 0);
  CHECK(axl::Device::count("cpu") == 1);
}

TEST_CASE("virtual-device mode: setters validate and round-trip", "[virtual][mode]") {
  ResetMode reset;
  SECTION("count") {
    REQUIRE(axl_set_virtual_device_count(3) == AXL_SUCCESS);
    CHECK(mode_count() == 3);
    CHECK(axl_is_virtual_device_mode() == 1);
    CHECK(axl_set_virtual_device_count(-1) == AXL_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(last_message(), Catch::Contains("-1"));
    CHECK(axl_set_virtual_device_count(1025) == AXL_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(last_message(), Catch::Contains("1025"));
    CHECK(mode_count() == 3);  // a rejected value changes nothing
    REQUIRE(axl_set_virtual_device_count(0) == AXL_SUCCESS);
    CHECK(mode_count() == 0);
    CHECK(axl_is_virtual_device_mode() == 0);
  }
  SECTION("api and architecture") {
    REQUIRE(axl_set_virtual_device_api("cuda") == AXL_SUCCESS);
    REQUIRE(axl_set_virtual_device_target_arch("sm_90") == AXL_SUCCESS);
    CHECK(get_string(axl_get_virtual_device_api) == "cuda");
    CHECK(get_string(axl_get_virtual_device_target_arch) == "sm_90");
    // Two-call protocol: a buffer too small is left alone.
    size_t n = 0;
    char small[3] = {'a', 'b', 'c'};
    REQUIRE(axl_get_virtual_device_api(small, sizeof small, &n) == AXL_SUCCESS);
    CHECK(n == 5);
    CHECK(small[0] == 'a');
    CHECK(axl_set_virtual_device_api("not a name") == AXL_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(last_message(), Catch::Contains("not a name"));
    CHECK(axl_set_virtual_device_api("sixteen_chars_xx") == AXL_ERROR_INVALID_ARGUMENT);
    CHECK(axl_set_virtual_device_api(nullptr) == AXL_ERROR_INVALID_ARGUMENT);
    CHECK(axl_set_virtual_device_target_arch("sm 90") == AXL_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(last_message(), Catch::Contains("sm 90"));
    CHECK(get_string(axl_get_virtual_device_api) == "cuda");
    REQUIRE(axl_set_virtual_device_api("") == AXL_SUCCESS);
    CHECK(get_string(axl_get_virtual_device_api).empty());
  }
  SECTION("cpu target") {
    CHECK(axl_set_virtual_cpu_target("native") == AXL_ERROR_INVALID_ARGUMENT);
    const std::string why = last_message();
    CHECK_THAT(why, Catch::Contains("'native' is rejected"));
    CHECK_THAT(why, Catch::Contains("generic"));
    CHECK(get_string(axl_get_virtual_cpu_target).empty());
    REQUIRE(axl_set_virtual_cpu_target("generic") == AXL_SUCCESS);
    CHECK(get_string(axl_get_virtual_cpu_target) == "generic");  // stored verbatim
    REQUIRE(axl_set_virtual_cpu_target("x86-64-v3") == AXL_SUCCESS);
    CHECK(get_string(axl_get_virtual_cpu_target) == "x86-64-v3");
    CHECK(axl_set_virtual_cpu_target(nullptr) == AXL_ERROR_INVALID_ARGUMENT);
    REQUIRE(axl_set_virtual_cpu_target("") == AXL_SUCCESS);
    CHECK(get_string(axl_get_virtual_cpu_target).empty());
  }
}

TEST_CASE("virtual-device mode: the accelerators are the virtual devices", "[virtual][mode]") {
  ResetMode reset;
  const uint32_t before = gpu_count();
  REQUIRE(axl_set_virtual_device_api("cuda") == AXL_SUCCESS);
  REQUIRE(axl_set_virtual_device_target_arch("sm_80") == AXL_SUCCESS);
  REQUIRE(axl_set_virtual_device_count(2) == AXL_SUCCESS);
  // The setter and device creation see the same state at once (DRIV-209).
  REQUIRE(gpu_count() == 2);
  for (uint32_t i = 0; i < 2; ++i) {
    INFO("gpu:" << i);
    axl::DeviceInfo info = vt::gpu(i).info();
    CHECK(info.backend == "virtual");
    CHECK(info.label == "gpu");
    CHECK(info.api == "cuda");
    CHECK(info.architecture_name == "sm_80");
    CHECK(info.id == i);
    CHECK_FALSE(info.is_host);
    CHECK_FALSE(info.is_host_unified);
    CHECK_THAT(info.model_name, Catch::StartsWith("axl virtual device"));
    CHECK(info.total_memory_bytes > 0);
  }
  // The mode's devices work: a round trip through one.
  {
    axl::Device d = vt::gpu(1);
    axl::Queue q = d.create_queue();
    axl::Buffer b = d.allocate(4099);
    std::vector<unsigned char> in(4099), out(4099, 0);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 13 + 1);
    q.copy_from_host(b, in.data(), in.size());
    q.copy_to_host(out.data(), b, out.size());
    q.synchronize();
    CHECK(out == in);
  }
  axl_device_t none = nullptr;
  CHECK(axl_device_get("gpu", 2, &none) == AXL_ERROR_OUT_OF_RANGE);
  CHECK_THAT(last_message(), Catch::Contains("2 such device(s) exist"));

  // Devices already obtained keep the settings they were created with; a
  // new one gets the settings in force when it is first obtained.
  REQUIRE(axl_set_virtual_device_api("hip") == AXL_SUCCESS);
  REQUIRE(axl_set_virtual_device_target_arch("gfx942") == AXL_SUCCESS);
  REQUIRE(axl_set_virtual_device_count(3) == AXL_SUCCESS);
  REQUIRE(gpu_count() == 3);
  CHECK(vt::gpu(0).info().api == "cuda");
  axl::DeviceInfo third = vt::gpu(2).info();
  CHECK(third.api == "hip");
  CHECK(third.architecture_name == "gfx942");

  // 0 turns the mode off: the accelerators are what they were before.
  REQUIRE(axl_set_virtual_device_count(0) == AXL_SUCCESS);
  CHECK(gpu_count() == before);
}

TEST_CASE("virtual-device mode: without api and arch the plugin's defaults apply",
          "[virtual][mode]") {
  ResetMode reset;
  REQUIRE(axl_set_virtual_device_count(4) == AXL_SUCCESS);
  REQUIRE(gpu_count() == 4);
  axl::DeviceInfo info = vt::gpu(3).info();
  CHECK(info.api == "virtual");
  CHECK(info.architecture_name == "virtual");
}

TEST_CASE("calculate_virtual_device_count_from_cli: MAX's grammar", "[virtual][mode]") {
  ResetMode reset;
  CHECK(from_cli({"gpu:0,3"}) == 4);
  CHECK(from_cli({"gpu"}) == 1);
  CHECK(from_cli({"GPU:2"}) == 3);
  CHECK(from_cli({"gpu:1,all"}) == 2);
  CHECK(from_cli({"gpu:"}) == 1);
  CHECK(from_cli({"gpu: 1 , 5"}) == 6);
  CHECK(from_cli({"gpu:-1"}) == 1);  // harmless, as int("-1") in MAX
  CHECK(from_cli({"cpu"}) == 1);
  CHECK(from_cli({"GPU"}) == 1);     // "gpu" without a colon is case-sensitive
  CHECK(from_cli({"gpu0"}) == 1);
  CHECK(from_cli({}) == 1);
  CHECK(from_cli({"gpu:1", "GPU:4", "cpu"}) == 5);  // several inputs: the max
  CHECK(from_cli({"gpu:7", "gpu"}) == 8);

  for (const char* bad : {"gpu:x", "gpu:1,x", "gpu:2.5"}) {
    INFO(bad);
    uint32_t out = 0;
    CHECK(axl_calculate_virtual_device_count_from_cli(&bad, 1, &out) == AXL_ERROR_INVALID_ARGUMENT);
    const std::string part = std::string(bad).substr(std::string(bad).find_last_of(":,") + 1);
    CHECK_THAT(last_message(), Catch::Contains("'" + part + "' is not an accelerator id"));
  }

  // "gpu:all" is every accelerator present: none here, 3 in the mode.
  CHECK(from_cli({"gpu:all"}) == 1);
  REQUIRE(axl_set_virtual_device_count(3) == AXL_SUCCESS);
  CHECK(from_cli({"gpu:all"}) == 3);
  CHECK(from_cli({"GPU:ALL", "gpu:1"}) == 3);
}

TEST_CASE("calculate_virtual_device_count: from parsed specs", "[virtual][mode]") {
  auto calc = [](const std::vector<axl_device_spec>& specs) {
    uint32_t out = 0;
    REQUIRE(axl_calculate_virtual_device_count(specs.data(), specs.size(), &out) == AXL_SUCCESS);
    return out;
  };
  CHECK(calc({}) == 1);
  CHECK(calc({{1, 3}, {1, 1}}) == 4);
  CHECK(calc({{0, -1}}) == 1);
  CHECK(calc({{0, -1}, {1, 0}}) == 1);
  CHECK(calc(axl::parse_device_spec("gpu:0,2")) == 3);
  uint32_t out = 0;
  CHECK(axl_calculate_virtual_device_count(nullptr, 2, &out) == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(axl_calculate_virtual_device_count(nullptr, 0, nullptr) == AXL_ERROR_INVALID_ARGUMENT);
}

// -------------------------------------------------------------------------
// With AXL_VIRTUAL_DEVICES=2 set, the mode's count replaces the plugin's own
// devices rather than adding to them, and turning it off brings them back.
TEST_CASE("child: mode count replaces AXL_VIRTUAL_DEVICES", "[.child]") {
  ResetMode reset;
  REQUIRE(gpu_count() == 2);
  CHECK(vt::gpu(1).info().backend == "virtual");
  REQUIRE(axl_set_virtual_device_count(1) == AXL_SUCCESS);
  CHECK(gpu_count() == 1);
  REQUIRE(axl_set_virtual_device_count(5) == AXL_SUCCESS);
  CHECK(gpu_count() == 5);
  REQUIRE(axl_set_virtual_device_count(0) == AXL_SUCCESS);
  CHECK(gpu_count() == 2);
}

TEST_CASE("virtual-device mode with devices from AXL_VIRTUAL_DEVICES", "[virtual][mode]") {
  vt::run_case("child: mode count replaces AXL_VIRTUAL_DEVICES", {{"AXL_VIRTUAL_DEVICES", "2"}});
}

// Without the plugin the mode cannot turn on, and says why.
TEST_CASE("child: no virtual plugin", "[.child]") {
  CHECK(axl_set_virtual_device_count(2) == AXL_ERROR_BACKEND_UNAVAILABLE);
  CHECK_THAT(last_message(), Catch::Contains("libaxl_plugin_virtual.so"));
  CHECK(axl_set_virtual_device_count(0) == AXL_SUCCESS);
  CHECK(mode_count() == 0);
}

TEST_CASE("virtual-device mode without the virtual plugin", "[virtual][mode]") {
  vt::run_case("child: no virtual plugin", {{"AXL_PLUGINS", AXL_CPU_PLUGIN_PATH}});
}
