// "Every case on every device": the fixture of the cases that hold every
// backend to the same behaviour. A case starts with each_device(); Catch2 then
// runs it (every SECTION included) once per device the core loads in this
// program, and the case names the device in its failures with INFO.
//
// The program's environment is hermetic (vt::prepare_environment): exactly
// the cpu and the virtual plugin, two virtual devices, so the devices are
// cpu:0, gpu:0 and gpu:1. A backend whose devices should meet the same cases
// joins by adding its plugin there; the cases themselves stay as they are:
// they use only what any device offers (results are read back with copies,
// never through host pointers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "axl/axl.hpp"
#include "../virtual/virtual_test_util.hpp"

namespace devtest {

// Before main, so before the first axl call (discovery reads the environment once).
inline const bool kEnvironment = vt::prepare_environment({{"AXL_VIRTUAL_DEVICES", "2"}});

struct DeviceUnderTest {
  std::string spec;  // "cpu:0", "gpu:1", ...
  axl::Device device;
};

// Every device the core loads, as "<label>:<index>", host devices first.
inline const std::vector<std::string>& device_specs() {
  static const std::vector<std::string> specs = [] {
    std::vector<std::string> out;
    for (const char* label : {"cpu", "gpu"})
      for (uint32_t i = 0; i < axl::Device::count(label); ++i)
        out.push_back(std::string(label) + ":" + std::to_string(i));
    return out;
  }();
  return specs;
}

// The device of this run of the calling case; the case runs once per device.
inline DeviceUnderTest each_device() {
  REQUIRE(kEnvironment);
  REQUIRE_FALSE(device_specs().empty());
  const std::string spec = GENERATE(from_range(device_specs()));
  const size_t colon = spec.find(':');
  const std::string label = spec.substr(0, colon);
  const uint32_t index = static_cast<uint32_t>(std::stoul(spec.substr(colon + 1)));
  return {spec, axl::Device::get(label.c_str(), index)};
}

}  // namespace devtest
