// Devices, their properties, and device memory.
//
// The raw axl_* calls stay raw on purpose: they test the C ABI itself (out
// of range and unknown labels, a too-small struct_size, a zero or too large
// allocation, handles compared with axl_device_equal, peer access asked
// twice) and check its exact statuses; everything else goes through axl.hpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "cts.hpp"

namespace cts {

TEST_CASE("cts.device.properties", "[device]") {
  for_each_device("cts.device.properties", [](Ctx& c) {
    BackendUnderTest& b = c.backend();
    const axl::DeviceInfo& i = c.info();
    c.check(i.backend == b.name, cat("info.backend is '", i.backend, "', expected '", b.name, "'"));
    c.check(i.label == "cpu" || i.label == "gpu", cat("label '", i.label, "' is not cpu or gpu"));
    // The core counts devices by label from the plugin's flag, without
    // initialising it; the devices must agree with that declaration.
    c.check((i.label == "cpu") == b.is_host(),
            cat("label '", i.label, "' but AXL_PLUGIN_FLAG_HOST is ", b.is_host() ? "set" : "clear"));
    c.check(i.is_host == (i.label == "cpu"),
            cat("is_host is ", i.is_host, " on a device labelled '", i.label, "'"));
    c.check(!i.api.empty(), "api is empty");
    c.check(!i.model_name.empty(), "model_name is empty");
    c.check(i.total_memory_bytes > 0, "total_memory_bytes is 0");
    if (i.max_single_alloc_bytes == 0)
      c.note("max_single_alloc_bytes is 0: no per-allocation limit is declared");
    else
      c.check(i.max_single_alloc_bytes <= i.total_memory_bytes,
              cat("max_single_alloc_bytes ", i.max_single_alloc_bytes, " exceeds total_memory_bytes ",
                  i.total_memory_bytes));
    if (!i.is_compatible) c.note("is_compatible is 0: axl does not fully support this device");
    if (c.dut().backend_index == 0)
      c.check(b.record.device_count == b.devices.size(),
              cat("discovery counted ", b.record.device_count, " device(s) but ", b.devices.size(),
                  " could be opened"));

    if (b.has_slot("device_get_memory_info")) {
      auto [free_b, total_b] = c.dev().memory_info();
      c.check(total_b > 0, "device_get_memory_info: total is 0");
      c.check(free_b <= total_b, cat("device_get_memory_info: free ", free_b, " > total ", total_b));
    } else {
      c.note("device_get_memory_info is NULL: free memory is unknown");
    }

    axl::Queue dq = c.dev().default_queue();
    c.check(static_cast<bool>(dq), "no default queue");
    if (i.label == "gpu") {
      // The id is the device's index among accelerators.
      axl_device_t again = nullptr;
      c.ok(axl_device_get("gpu", i.id, &again), cat("axl_device_get(\"gpu\", ", i.id, ")"));
      c.check(axl_device_equal(again, c.dev().get()) != 0,
              cat("axl_device_get(\"gpu\", ", i.id, ") is another device"));
      axl_device_release(again);
    }

    // Queries outside what exists are refused, each with a message.
    uint32_t all = 0;
    c.ok(axl_device_count(nullptr, &all), "axl_device_count");
    axl_device_t none = nullptr;
    c.expect_status(axl_device_get(nullptr, all, &none), AXL_ERROR_OUT_OF_RANGE,
                    cat("axl_device_get(NULL, ", all, ")"), std::to_string(all));
    c.expect_status(axl_device_get("tpu", 0, &none), AXL_ERROR_INVALID_ARGUMENT,
                    "axl_device_get(\"tpu\", 0)", "tpu");
    c.expect_status(axl_device_count("npu", &all), AXL_ERROR_INVALID_ARGUMENT,
                    "axl_device_count(\"npu\")", "npu");
    axl_device_info small{};
    small.struct_size = 8;
    c.expect_status(axl_device_get_info(c.dev().get(), &small), AXL_ERROR_INVALID_ARGUMENT,
                    "axl_device_get_info with struct_size 8", "struct_size");
  });
}

TEST_CASE("cts.memory.alloc_free", "[memory]") {
  for_each_device("cts.memory.alloc_free", [](Ctx& c) {
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    for (uint64_t size : {uint64_t{1}, uint64_t{255}, uint64_t{4096}, uint64_t{1} << 20}) {
      axl::Buffer buf = dev.allocate(size);
      c.check(buf.size() == size, cat("a ", size, "-byte buffer reports size ", buf.size()));
      const uint64_t addr = buf.device_address();
      c.check(addr != 0, cat("a ", size, "-byte allocation has device address 0"));
      c.check(addr % 256 == 0,
              cat("a ", size, "-byte allocation at 0x", std::hex, addr, std::dec,
                  " is not 256-byte aligned (plugin.h: memory_alloc)"));
      // The memory is usable over its whole extent.
      const auto data = random_bytes(size, size);
      q.copy_from_host(buf, data.data(), size);
      const std::string diff = first_difference(read_back(q, buf), data);
      c.check(diff.empty(), cat("a ", size, "-byte buffer does not hold what was written: ", diff));
    }

    // Live allocations never overlap.
    std::vector<axl::Buffer> live;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (int k = 0; k < 32; ++k) {
      const uint64_t size = 1000 + 977 * k;
      live.push_back(dev.allocate(size));
      ranges.push_back({live.back().device_address(), size});
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t k = 1; k < ranges.size(); ++k)
      c.check(ranges[k - 1].first + ranges[k - 1].second <= ranges[k].first,
              cat("allocations at 0x", std::hex, ranges[k - 1].first, " and 0x", ranges[k].first,
                  std::dec, " overlap"));
    live.clear();

    // More than the device can give in one piece.
    const axl::DeviceInfo& i = c.info();
    uint64_t too_big = i.max_single_alloc_bytes ? i.max_single_alloc_bytes + 1 : 0;
    if (!too_big && i.total_memory_bytes < (uint64_t{1} << 62)) too_big = i.total_memory_bytes * 4;
    if (too_big) {
      axl_buffer_t b = nullptr;
      const axl_status s = axl_buffer_create(dev.get(), too_big, 0, &b);
      c.expect_status(s, AXL_ERROR_OUT_OF_DEVICE_MEMORY, cat("allocating ", too_big, " bytes"));
      if (b) axl_buffer_release(b);
    } else {
      c.skip_part("no size is known to exceed the device (max_single_alloc_bytes and "
                  "total_memory_bytes say nothing usable)");
    }
    axl_buffer_t b = nullptr;
    c.expect_status(axl_buffer_create(dev.get(), 0, 0, &b), AXL_ERROR_INVALID_ARGUMENT,
                    "allocating 0 bytes");
  });
}

TEST_CASE("cts.memory.pinned", "[memory]") {
  for_each_device("cts.memory.pinned", [](Ctx& c) {
    c.need_slot("pinned_alloc");
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    const uint64_t size = 64 * 1024 + 3;
    axl::Buffer src = dev.allocate(size, AXL_BUFFER_FLAG_PINNED);
    axl::Buffer dst = dev.allocate(size, AXL_BUFFER_FLAG_PINNED);
    auto* hs = static_cast<uint8_t*>(src.host_pointer());
    auto* hd = static_cast<uint8_t*>(dst.host_pointer());
    c.require(hs && hd, "pinned buffers have no host pointer");
    c.check(reinterpret_cast<uintptr_t>(hs) % 64 == 0,
            "pinned memory is not 64-byte aligned (plugin.h: pinned_alloc)");
    const auto data = random_bytes(size, 77);
    std::memcpy(hs, data.data(), size);
    std::memset(hd, 0, size);
    // Pinned -> device -> pinned, through the device's own memory.
    axl::Buffer mid = dev.allocate(size);
    q.copy(mid, src);
    q.copy(dst, mid);
    q.synchronize();
    const std::string diff = first_difference(std::vector<uint8_t>(hd, hd + size), data);
    c.check(diff.empty(), cat("pinned -> device -> pinned copy: ", diff));
  });
}

TEST_CASE("cts.device.peer_access", "[device]") {
  for_each_device("cts.device.peer_access", [](Ctx& c) {
    c.need_slot("device_can_access_peer");
    const axl::Device& dev = c.dev();
    uint8_t self = 1;
    c.ok(axl_device_can_access(dev.get(), dev.get(), &self), "axl_device_can_access(d, d)");
    c.check(self == 0, "a device reports peer access to itself (plugin.h: device == peer answers 0)");
    int peers = 0;
    for (const DeviceUnderTest& other : c.backend().devices) {
      if (other.device == dev) continue;
      ++peers;
      const std::string pair = cat(c.info().backend, "/", c.dut().backend_index, " -> ", other.info.backend, "/",
                                   other.backend_index);
      uint8_t can = 0, back = 0;
      c.ok(axl_device_can_access(dev.get(), other.device.get(), &can), cat("axl_device_can_access ", pair));
      c.ok(axl_device_can_access(other.device.get(), dev.get(), &back), cat("axl_device_can_access of ", pair, " reversed"));
      c.check(can <= 1 && back <= 1, cat(pair, ": can_access answered ", int(can), " and ", int(back), ", not 0 or 1"));
      c.note(cat(pair, ": peer access ", can ? "possible" : "not possible"));
      if (!can || !c.backend().has_slot("device_enable_peer_access")) continue;
      // Idempotent (plugin.h): enabling twice is not an error.
      c.ok(axl_device_enable_peer_access(dev.get(), other.device.get()), cat("enabling peer access ", pair));
      c.ok(axl_device_enable_peer_access(dev.get(), other.device.get()), cat("enabling peer access ", pair, " again"));
    }
    if (peers == 0)
      c.skip_part(cat("only access to itself checked: peer access needs a second device of backend '",
                      c.backend().name, "' (", c.backend().devices.size(), " opened)"));
  });
}

}  // namespace cts
