// The cuda plugin's multicast groups (plugin ABI 1.4, SymmetricPool) through
// the core's axl_multicast_*, against the fake driver's multicast objects
// (fake_cuda_device.c): support answered from the device attribute and the
// driver's entry points, the reservation rounded to the recommended
// granularity, a write through one member's multicast mapping reaching every
// member, and a failure at any step of the create leaving nothing behind.
#include <string>
#include <utility>
#include <vector>

#include <cuda.h>

#include "fake_device_run.hpp"

using fakecuda::client;
using fakecuda::Env;
using fakecuda::Outcome;

namespace {

bool says(const Outcome& o, const std::string& text) { return o.run.out.find(text) != std::string::npos; }

}  // namespace

TEST_CASE("a group over two devices: recommended granularity, broadcast to both, nothing left after release") {
  Outcome o = client("multicast", {{"FAKE_CUDA_DEVICES", "2"}});
  INFO(o.run.out << o.run.err);
  REQUIRE(o.run.exit_code == 0);
  CHECK(says(o, "device 0 multicast=1"));
  CHECK(says(o, "device 1 multicast=1"));
  // 1000 bytes rounded up to the RECOMMENDED granularity (the fake's 2 MiB;
  // its MINIMUM is 64 KiB), for a process-local object (handle types 0).
  CHECK(o.has("cuMulticastGetGranularity devices=2 bytes=1000 option=" +
              std::to_string(CU_MULTICAST_GRANULARITY_RECOMMENDED)));
  CHECK(o.has("cuMulticastCreate devices=2 bytes=2097152 handle_types=0"));
  // The object, and per member its memory, two reservations, two mappings.
  CHECK(says(o, "reserved=2097152 live=11"));
  CHECK(says(o, "broadcast reached 2 members"));
  CHECK(says(o, "live after release=0"));
  // Every member joins before the first bind (the driver blocks otherwise).
  const long second_join = o.find("cuMulticastAddDevice device=1");
  REQUIRE(second_join >= 0);
  CHECK(o.find("cuMulticastBindMem") > second_join);
  CHECK(o.count("cuMemCreate bytes=2097152 device=0") == 1);
  CHECK(o.count("cuMemCreate bytes=2097152 device=1") == 1);
  CHECK(o.count("cuMulticastBindMem bytes=2097152") == 2);
  CHECK(o.count("cuMemMap") == 4);
  CHECK(o.count("cuMemSetAccess") == 4);
  // Destroy undoes each of them.
  CHECK(o.count("cuMemUnmap") == 4);
  CHECK(o.count("cuMemAddressFree") == 4);
  CHECK(o.count("cuMulticastUnbind") == 2);
  CHECK(o.count("cuMemRelease") == 3);
}

TEST_CASE("the reservation is the request rounded up to the driver's granularity, over three devices") {
  const Env granularity{{"FAKE_CUDA_DEVICES", "3"}, {"FAKE_CUDA_MC_GRANULARITY", "65536"}};
  for (const auto& [bytes, reserved] : std::vector<std::pair<std::string, std::string>>{
           {"1000", "65536"}, {"65536", "65536"}, {"200000", "262144"}}) {
    Env env = granularity;
    env.push_back({"MC_BYTES", bytes});
    Outcome o = client("multicast", env);
    INFO(bytes << " bytes: " << o.run.out << o.run.err);
    REQUIRE(o.run.exit_code == 0);
    CHECK(says(o, "reserved=" + reserved + " live=16"));
    CHECK(says(o, "broadcast reached 3 members"));
    CHECK(says(o, "live after release=0"));
  }
}

TEST_CASE("without multicast support (the attribute, or an older driver) devices answer false and a group is refused") {
  // FAKE_CUDA_OMIT: a driver before 12.1, which still loads; the entry
  // points decide first, so the attribute is not even read.
  const std::string attribute = "cuDeviceGetAttribute attr=" + std::to_string(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED);
  const std::vector<std::pair<Env, std::string>> cases{
      {{{"FAKE_CUDA_MULTICAST", "0"}},
       "CUDA device 0 (Fake CUDA Device 0) has no multicast support (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0)"},
      {{{"FAKE_CUDA_OMIT", "cuMulticastCreate"}},
       "CUDA device 0 (Fake CUDA Device 0) has no multicast support (the driver lacks cuMulticastCreate"}};
  for (const auto& [setting, reason] : cases) {
    Env env = setting;
    env.push_back({"FAKE_CUDA_DEVICES", "2"});
    Outcome o = client("multicast_refused", env);
    INFO(setting[0].first << ": " << o.run.out << o.run.err);
    REQUIRE(o.run.exit_code == 0);
    CHECK(says(o, "device 0 multicast=0"));
    CHECK(says(o, "device 1 multicast=0"));
    CHECK(says(o, "refused: AXL_ERROR_UNSUPPORTED"));
    CHECK(says(o, reason));
    CHECK(o.has(attribute) == (setting[0].first == "FAKE_CUDA_MULTICAST"));
    CHECK_FALSE(o.has("cuMulticastCreate"));
    CHECK_FALSE(o.has("cuMemCreate"));
    CHECK(says(o, "live after failure=0"));
  }
}

TEST_CASE("a failure at any step of the create is reported naming the call and the device, and leaves nothing") {
  // Each driver call of a two-device create, and how often it is made; the
  // mapping calls run for each member's memory, then for each member's
  // multicast mapping, so call k concerns device k % 2.
  const std::vector<std::pair<std::string, int>> steps{
      {"cuMulticastGetGranularity", 1}, {"cuMulticastCreate", 1}, {"cuMulticastAddDevice", 2},
      {"cuMemCreate", 2},           {"cuMulticastBindMem", 2}, {"cuMemAddressReserve", 4},
      {"cuMemMap", 4},              {"cuMemSetAccess", 4}};
  for (const auto& [call, calls] : steps) {
    for (int after = 0; after < calls; ++after) {
      Outcome o = client("multicast_refused", {{"FAKE_CUDA_DEVICES", "2"},
                                               {"FAKE_CUDA_FAIL", call},
                                               {"FAKE_CUDA_FAIL_AFTER", std::to_string(after)}});
      INFO(call << " failing after " << after << " calls: " << o.run.out << o.run.err);
      REQUIRE(o.run.exit_code == 0);
      CHECK(o.count(call) == static_cast<size_t>(after) + 1);  // stopped at the failure
      CHECK(o.has("  -> injected error="));
      CHECK(says(o, "refused: AXL_ERROR_OUT_OF_DEVICE_MEMORY"));
      CHECK(says(o, call + " failed: CUDA_ERROR_OUT_OF_MEMORY"));
      CHECK(says(o, "a multicast group of CUDA devices 0, 1 (1000 bytes each)"));
      if (calls > 1) CHECK(says(o, "CUDA device " + std::to_string(after % 2)));
      CHECK(says(o, "live after failure=0"));
    }
  }
}
