// Multicast groups on the virtual backend through the core (axl.h 1.5,
// plugin ABI 1.4): who supports them, the core's argument checks, the
// broadcast of every kind of write into a multicast view, and the group's
// lifetime (its memory goes with the last view, not with the group handle).
#include <chrono>
#include <cstring>
#include <thread>

#include "../devices/queue_helpers.hpp"
#include "virtual_test_util.hpp"

using devtest::random_bytes;
using devtest::read_back;

namespace {

const bool kEnvironment = vt::prepare_environment({{"AXL_VIRTUAL_DEVICES", "3"}});

std::vector<axl::Device> gpus(uint32_t n) {
  std::vector<axl::Device> v;
  for (uint32_t i = 0; i < n; ++i) v.push_back(vt::gpu(i));
  return v;
}

}  // namespace

TEST_CASE("multicast: virtual devices support it, the host does not", "[virtual][multicast]") {
  REQUIRE(kEnvironment);
  CHECK(vt::gpu(0).multicast_supported());
  CHECK_FALSE(axl::Device::get("cpu", 0).multicast_supported());
}

TEST_CASE("multicast: the core refuses bad groups, naming why", "[virtual][multicast]") {
  REQUIRE(kEnvironment);
  axl::Device a = vt::gpu(0), b = vt::gpu(1), cpu = axl::Device::get("cpu", 0);
  vt::expect_error([&] { axl::Multicast::create({a}, 64); }, AXL_ERROR_INVALID_ARGUMENT);
  axl::Error twice = vt::expect_error([&] { axl::Multicast::create({a, b, a}, 64); }, AXL_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(twice.what()).find("listed twice") != std::string::npos);
  vt::expect_error([&] { axl::Multicast::create({a, b}, 0); }, AXL_ERROR_INVALID_ARGUMENT);
  axl::Error host = vt::expect_error([&] { axl::Multicast::create({a, cpu}, 64); }, AXL_ERROR_UNSUPPORTED);
  CHECK(std::string(host.what()).find("host device") != std::string::npos);
  axl::Multicast g = axl::Multicast::create({a, b}, 64);
  vt::expect_error([&] { g.unicast(2); }, AXL_ERROR_OUT_OF_RANGE);
  axl_buffer_t raw = nullptr;
  CHECK(axl_multicast_buffer(g.get(), 0, 7, &raw) == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(raw == nullptr);
}

TEST_CASE("multicast: every write into a multicast view reaches every member", "[virtual][multicast]") {
  REQUIRE(kEnvironment);
  std::vector<axl::Device> devs = gpus(3);
  axl::Multicast g = axl::Multicast::create(devs, 5000);
  const uint64_t reserved = g.reserved_bytes();
  CHECK(reserved == (2u << 20));  // rounded up to the 2 MiB granularity
  std::vector<axl::Buffer> uni, multi;
  std::vector<axl::Queue> qs;
  for (uint32_t i = 0; i < 3; ++i) {
    uni.push_back(g.unicast(i));
    multi.push_back(g.multicast(i));
    qs.push_back(devs[i].create_queue());
    CHECK(uni[i].size() == reserved);
    CHECK(multi[i].size() == reserved);
    CHECK(uni[i].device_address() != multi[i].device_address());
    CHECK(uni[i].device() == devs[i]);
    qs[i].fill(uni[i], 0, 1);
    qs[i].synchronize();
  }
  std::vector<unsigned char> want(reserved, 0);
  // host -> member 1's multicast view
  const auto data = random_bytes(3000, 7);
  qs[1].copy_from_host(multi[1], data.data(), data.size(), 100);
  std::memcpy(want.data() + 100, data.data(), data.size());
  // a fill through member 2's view
  qs[2].fill(multi[2], 0xab, 1, 4000, 96);
  std::memset(want.data() + 4000, 0xab, 96);
  for (auto& q : qs) q.synchronize();  // both broadcasts landed everywhere
  // device -> device: member 0's own memory into its multicast view at
  // another offset (the source overlaps what the write changes)
  qs[0].copy(multi[0], 150, uni[0], 100, 200);
  std::memmove(want.data() + 150, want.data() + 100, 200);
  qs[0].synchronize();
  // peer: member 2's memory into member 0's multicast view
  qs[0].copy(multi[0], 8000, uni[2], 4000, 96);
  std::memcpy(want.data() + 8000, want.data() + 4000, 96);
  for (auto& q : qs) q.synchronize();
  for (uint32_t i = 0; i < 3; ++i) {
    INFO("member " << i);
    CHECK(read_back(qs[i], uni[i]) == want);
  }
  // A write into unicast memory stays on its device.
  const unsigned char one = 1;
  qs[1].copy_from_host(uni[1], &one, 1, 0);
  qs[1].synchronize();
  CHECK(read_back(qs[0], uni[0])[0] == 0);
  CHECK(read_back(qs[1], uni[1])[0] == 1);
}

TEST_CASE("multicast: the memory lives as long as a view does", "[virtual][multicast]") {
  REQUIRE(kEnvironment);
  std::vector<axl::Device> devs = gpus(2);
  // Earlier cases' memory is freed by the core's reaper once their queues
  // passed its last use, which synchronize alone does not wait for: wait
  // until the device is all free again, so free0 is not taken mid-reclaim.
  const auto settled = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (devs[1].memory_info().first != devs[1].memory_info().second &&
         std::chrono::steady_clock::now() < settled) {
    for (auto& d : devs) d.synchronize();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const uint64_t free0 = devs[1].memory_info().first;
  REQUIRE(free0 == devs[1].memory_info().second);
  axl::Buffer keep;
  {
    axl::Multicast g = axl::Multicast::create(devs, 1);
    CHECK(free0 - devs[1].memory_info().first == g.reserved_bytes());
    keep = g.unicast(1);
  }
  axl::Queue q = devs[1].create_queue();
  const unsigned char v = 42;
  q.copy_from_host(keep, &v, 1, 0);
  CHECK(read_back(q, keep)[0] == 42);  // the group is gone, its memory is not
  keep = axl::Buffer();
  // The group goes once the reaper saw q pass the view's last use.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (devs[1].memory_info().first != free0 && std::chrono::steady_clock::now() < deadline) {
    devs[1].synchronize();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(devs[1].memory_info().first == free0);
}
