// Copies in every direction and fills, with real data, odd sizes and odd
// offsets. Every check compares a whole buffer against a host-side model, so
// bytes written outside the requested range are caught too.
//
// Work goes through axl.hpp; the raw axl_queue_fill calls stay raw on
// purpose: they check the exact status of bad arguments through the C ABI.
#include <catch2/catch.hpp>

#include <cstring>

#include "cts.hpp"

namespace cts {
namespace {

// Writes the whole model into `b`, so later checks start from known bytes.
// It waits: the caller edits the model next, and host memory given to a copy
// must stay untouched until the copy ran.
void seed(const axl::Queue& q, const axl::Buffer& b, const std::vector<uint8_t>& model) {
  q.copy_from_host(b, model.data(), model.size());
  q.synchronize();
}

void expect_model(Ctx& c, const axl::Queue& q, const axl::Buffer& b,
                  const std::vector<uint8_t>& model, const std::string& what) {
  const std::string diff = first_difference(read_back(q, b), model);
  c.check(diff.empty(), cat(what, ": ", diff));
}

// A device other than the one under test: another of its backend first (peer
// copies), else one of another backend under test (copies through host
// memory). Only backends under test count: a loaded backend that --backend
// left out is not certified by this run, so its devices are not used.
const DeviceUnderTest* other_device(Ctx& c) {
  for (const DeviceUnderTest& d : c.backend().devices)
    if (d.device != c.dev()) return &d;
  for (const BackendUnderTest& b : backends())
    if (b.name != c.backend().name && !b.devices.empty()) return &b.devices[0];
  return nullptr;
}

// Why there is no other device, naming the loaded backends left out.
std::string no_other_device(Ctx& c) {
  std::string left_out;
  for (const axl::PluginRecord& r : axl::plugin_records()) {
    if (!r.loaded() || r.name.empty()) continue;
    bool tested = false;
    for (const BackendUnderTest& b : backends()) tested = tested || b.name == r.name;
    if (!tested) left_out += cat(left_out.empty() ? "" : ", ", r.name);
  }
  std::string why = cat("needs a second device under test: another device of '", c.backend().name,
                        "' or a device of another backend named in --backend");
  if (!left_out.empty())
    why += cat(" (loaded but not under test: ", left_out, "; e.g. --backend ", c.backend().name, ",",
               left_out.substr(0, left_out.find(',')), ")");
  return why;
}

}  // namespace

TEST_CASE("cts.copy.htod_dtoh_roundtrip", "[copy]") {
  for_each_device("cts.copy.htod_dtoh_roundtrip", [](Ctx& c) {
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    uint64_t seed_n = 1;
    for (uint64_t size : {uint64_t{1}, uint64_t{3}, uint64_t{255}, uint64_t{256}, uint64_t{4097},
                          uint64_t{65537}, (uint64_t{1} << 20) + 13}) {
      for (uint64_t offset : {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{259}}) {
        const std::string at = cat(size, " bytes at offset ", offset);
        const uint64_t total = offset + size + 64;  // room for guard bytes
        axl::Buffer a = dev.allocate(total), b = dev.allocate(total);
        auto model_a = random_bytes(total, ++seed_n), model_b = random_bytes(total, ++seed_n);
        seed(q, a, model_a);
        seed(q, b, model_b);

        // host -> device, into the middle of a.
        const auto data = random_bytes(size, ++seed_n);
        q.copy_from_host(a, data.data(), size, offset);
        std::memcpy(model_a.data() + offset, data.data(), size);
        // device -> device, to a different offset in b.
        const uint64_t off2 = (offset + 13) % 61;
        q.copy(b, off2, a, offset, size);
        std::memcpy(model_b.data() + off2, data.data(), size);
        // device -> host through a view with an offset.
        axl::Buffer view = a.view(offset, size);
        std::vector<uint8_t> out(size, 0);
        q.copy_to_host(out.data(), view, size);
        // device -> host of a sub-range starting one byte in.
        std::vector<uint8_t> tail(size > 1 ? size - 1 : 1, 0);
        if (size > 1) q.copy_to_host(tail.data(), b, size - 1, off2 + 1);
        q.synchronize();

        std::string diff = first_difference(out, data);
        c.check(diff.empty(), cat("htod then dtoh through a view, ", at, ": ", diff));
        if (size > 1) {
          diff = first_difference(tail, std::vector<uint8_t>(data.begin() + 1, data.end()));
          c.check(diff.empty(), cat("dtod then dtoh of a sub-range, ", at, ": ", diff));
        }
        expect_model(c, q, a, model_a, cat("buffer after htod of ", at));
        expect_model(c, q, b, model_b, cat("buffer after dtod of ", at));
        if (!c.failures.empty()) return;  // one broken size says enough
      }
    }

    // Whole-buffer copy between two views of one allocation (non-overlapping).
    const uint64_t half = 4099;
    axl::Buffer whole = dev.allocate(2 * half + 1);
    auto model = random_bytes(2 * half + 1, 99);
    seed(q, whole, model);
    axl::Buffer lo = whole.view(0, half), hi = whole.view(half + 1, half);
    q.copy(hi, lo);
    std::memcpy(model.data() + half + 1, model.data(), half);
    expect_model(c, q, whole, model, "view-to-view copy within one allocation");
  });
}

TEST_CASE("cts.copy.across_devices", "[copy]") {
  for_each_device("cts.copy.across_devices", [](Ctx& c) {
    const DeviceUnderTest* other = other_device(c);
    if (!other)
      c.skip(no_other_device(c));
    const axl::Device& dev = c.dev();
    const axl::Device& odev = other->device;
    c.note(cat("the other device is ", other->info.backend, "/", other->backend_index));
    axl::Queue q = dev.create_queue(), oq = odev.create_queue();
    const uint64_t size = 300007;
    axl::Buffer a = dev.allocate(size + 5), b = odev.allocate(size + 9);
    auto model_a = random_bytes(size + 5, 5), model_b = random_bytes(size + 9, 6);
    seed(q, a, model_a);
    seed(oq, b, model_b);
    // This device -> the other, on this device's queue.
    q.copy(b, 9, a, 5, size);
    std::memcpy(model_b.data() + 9, model_a.data() + 5, size);
    q.synchronize();
    expect_model(c, oq, b, model_b, "copy to the other device on this device's queue");
    // The other -> this device, on the other device's queue.
    const auto fresh = random_bytes(size + 9, 7);
    seed(oq, b, fresh);
    oq.copy(a, 0, b, 3, size);
    std::memcpy(model_a.data(), fresh.data() + 3, size);
    oq.synchronize();
    expect_model(c, q, a, model_a, "copy from the other device on the other device's queue");
  });
}

TEST_CASE("cts.fill.patterns", "[fill]") {
  for_each_device("cts.fill.patterns", [](Ctx& c) {
    c.need_slot("queue_fill");
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    const uint32_t patterns[] = {0, 0xa5, 0xbeef, 0, 0xdeadbeef};
    struct Range {
      uint64_t offset_units, units;
    };
    const Range ranges[] = {{0, 1}, {1, 7}, {3, 255}, {16, 4099}, {0, 65536}};
    for (uint32_t width : {1u, 2u, 4u}) {
      const uint32_t pattern = patterns[width];
      for (const Range& r : ranges) {
        const uint64_t offset = r.offset_units * width, bytes = r.units * width;
        const uint64_t total = offset + bytes + 32;
        axl::Buffer buf = dev.allocate(total);
        auto model = random_bytes(total, width * 1000 + r.units);
        seed(q, buf, model);
        q.fill(buf, pattern, width, offset, bytes);
        // The low `width` bytes of the pattern as the host lays them out;
        // device memory is little-endian on every backend axl supports.
        for (uint64_t k = 0; k < r.units; ++k)
          std::memcpy(model.data() + offset + k * width, &pattern, width);
        expect_model(c, q, buf, model,
                     cat("fill of ", bytes, " bytes at offset ", offset, " with the ", width,
                         "-byte pattern 0x", std::hex, pattern));
      }
    }
    // Malformed fills are refused before they reach the device.
    axl::Buffer buf = dev.allocate(64);
    c.expect_status(axl_queue_fill(q.get(), buf.get(), 0, 64, 1, 3), AXL_ERROR_INVALID_ARGUMENT,
                    "a fill with pattern_size 3", "pattern_size");
    c.expect_status(axl_queue_fill(q.get(), buf.get(), 2, 8, 1, 4), AXL_ERROR_INVALID_ARGUMENT,
                    "a 4-byte fill at offset 2");
    c.expect_status(axl_queue_fill(q.get(), buf.get(), 0, 0x100, 1, 1), AXL_ERROR_OUT_OF_RANGE,
                    "a fill past the end of a buffer");
  });
}

}  // namespace cts
