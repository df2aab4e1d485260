// Multicast groups (plugin ABI 1.4): support is answered without allocating,
// a group over two devices reserves at least what was asked, its views are
// distinct, and a write through one member's multicast view reaches every
// member's unicast memory (plugin.h, multicast_get_addresses).
#include <catch2/catch.hpp>

#include <cstring>

#include "cts.hpp"

namespace cts {

TEST_CASE("cts.multicast.broadcast", "[multicast]") {
  for_each_backend("cts.multicast.broadcast", [](Ctx& c) {
    BackendUnderTest& b = c.backend();
    // A backend that cannot run says why, as the device cases do.
    if (const std::string why = b.unusable_reason(); !why.empty()) c.skip(why);
    c.need_slot("device_get_multicast_support");
    std::vector<axl::Device> members;
    for (const DeviceUnderTest& d : b.devices) {
      const bool supported = d.device.multicast_supported();
      c.note(cat(b.name, "/", d.backend_index, ": multicast ", supported ? "supported" : "not supported"));
      if (supported && members.size() < 2) members.push_back(d.device);
    }
    if (members.size() < 2)
      c.skip(cat("a multicast group needs two devices with multicast support of backend '", b.name, "' (",
                 members.size(), " of ", b.devices.size(), " opened)"));
    c.need_slot("multicast_create");
    const uint64_t bytes = 100003;  // odd: the reservation rounds it up
    axl::Multicast g = axl::Multicast::create(members, bytes);
    const uint64_t reserved = g.reserved_bytes();
    c.check(reserved >= bytes, cat("reserved ", reserved, " bytes for a request of ", bytes));
    axl::Buffer u0 = g.unicast(0), u1 = g.unicast(1), m0 = g.multicast(0), m1 = g.multicast(1);
    c.check(u0.size() == reserved && m0.size() == reserved, "a view is not reserved_bytes long");
    c.check(u0.device_address() != m0.device_address() && u1.device_address() != m1.device_address(),
            "a member's unicast and multicast views share an address");
    axl::Queue q0 = members[0].create_queue(), q1 = members[1].create_queue();
    const std::vector<uint8_t> zero(reserved, 0);
    q0.copy_from_host(u0, zero.data(), reserved);
    q1.copy_from_host(u1, zero.data(), reserved);
    q0.synchronize();
    q1.synchronize();
    // A write through member 0's multicast view, at an odd offset.
    const uint64_t offset = 17, size = 4099;
    const auto data = random_bytes(size, 41);
    q0.copy_from_host(m0, data.data(), size, offset);
    q0.synchronize();
    std::vector<uint8_t> want = zero;
    std::memcpy(want.data() + offset, data.data(), size);
    for (uint32_t i = 0; i < 2; ++i) {
      const axl::Queue& q = i == 0 ? q0 : q1;
      const std::string diff = first_difference(read_back(q, i == 0 ? u0 : u1), want);
      c.check(diff.empty(), cat("member ", i, "'s unicast memory after a copy into member 0's multicast view: ", diff));
    }
  });
}

}  // namespace cts
