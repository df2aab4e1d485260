// Unit tests of the backend glue in plugins/common that every first-party
// backend's slots now go through (plugins/common/README.md, "How a
// first-party backend is written"): the shared argument checks, the
// properties copy, the kernel cache, the live-queue set and the slot bodies
// over WorkQueue and Event.

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_test_macros.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "axl/common/host_queue_slots.hpp"
#include "axl/common/kernel_cache.hpp"
#include "axl/common/live_queues.hpp"
#include "axl/common/slot_checks.hpp"

using namespace axl::common;

namespace {

// A reporter that records what a slot reported.
std::vector<std::pair<axl_status, std::string>> g_reports;
axl_status record_fail(axl_status status, const std::string& message) {
  g_reports.emplace_back(status, message);
  return status;
}

struct TestKernel {
  const char* name = nullptr;
  int serial = 0;
};

struct TestQueue {
  WorkQueue work;
};

}  // namespace

TEST_CASE("slot checks: queue_create and event_create refuse what every backend refuses",
          "[common]") {
  g_reports.clear();
  axl_queue_desc desc{};
  desc.struct_size = sizeof desc;
  axl_pqueue out = nullptr;
  CHECK(check_queue_create(record_fail, &desc, &out) == AXL_SUCCESS);
  CHECK(check_queue_create(record_fail, nullptr, &out) == AXL_ERROR_INVALID_ARGUMENT);
  desc.struct_size = offsetof(axl_queue_desc, trace_id);  // trace_id not covered
  CHECK(check_queue_create(record_fail, &desc, &out) == AXL_ERROR_INVALID_ARGUMENT);
  desc.struct_size = sizeof desc;
  desc.flags = 0x4;
  CHECK(check_queue_create(record_fail, &desc, &out) == AXL_ERROR_INVALID_ARGUMENT);
  REQUIRE(g_reports.size() == 3);
  CHECK(g_reports[2].second.find("unknown queue flags 0x4") != std::string::npos);

  axl_pevent e = nullptr;
  CHECK(check_event_create(record_fail, AXL_EVENT_FLAG_TIMING, &e) == AXL_SUCCESS);
  CHECK(check_event_create(record_fail, 0x10, &e) == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(g_reports.back().second.find("unknown event flags 0x10") != std::string::npos);
  CHECK(check_module_get_kernel(record_fail, nullptr, nullptr) == AXL_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("copy_device_properties writes only inside the caller's struct_size", "[common]") {
  g_reports.clear();
  axl_device_properties device{};
  device.struct_size = sizeof device;
  std::memset(reinterpret_cast<char*>(&device) + sizeof device.struct_size, 0xAB,
              sizeof device - sizeof device.struct_size);
  // An older core's shorter struct: 8 bytes of fields after struct_size.
  const size_t caller = sizeof(device.struct_size) + 8;
  std::vector<unsigned char> buf(sizeof device, 0x11);
  auto* props = reinterpret_cast<axl_device_properties*>(buf.data());
  props->struct_size = caller;
  CHECK(copy_device_properties(record_fail, device, props) == AXL_SUCCESS);
  CHECK(props->struct_size == caller);  // the caller's, not the device's
  for (size_t i = sizeof(device.struct_size); i < caller; ++i) CHECK(buf[i] == 0xAB);
  for (size_t i = caller; i < buf.size(); ++i) CHECK(buf[i] == 0x11);
  props->struct_size = 0;
  CHECK(copy_device_properties(record_fail, device, props) == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(copy_device_properties(record_fail, device, nullptr) == AXL_ERROR_INVALID_ARGUMENT);
  uint64_t* out = nullptr;
  CHECK(give<uint64_t*>(record_fail, "flag_get_host_address", nullptr, out) == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(g_reports.back().second == "flag_get_host_address: out is NULL");
}

TEST_CASE("KernelCache: one kernel per name; a failed or throwing make leaves nothing", "[common]") {
  KernelCache<TestKernel> cache;
  int made = 0;
  auto make = [&](const char* key, std::unique_ptr<TestKernel>& out) {
    out = std::make_unique<TestKernel>();
    out->name = key;
    out->serial = ++made;
    return AXL_SUCCESS;
  };
  TestKernel* a = nullptr;
  TestKernel* b = nullptr;
  REQUIRE(cache.get("k", make, &a) == AXL_SUCCESS);
  REQUIRE(cache.get("k", make, &b) == AXL_SUCCESS);
  CHECK(a == b);
  CHECK(made == 1);
  CHECK(std::string(a->name) == "k");

  TestKernel* c = nullptr;
  auto refuse = [](const char*, std::unique_ptr<TestKernel>&) { return AXL_ERROR_NOT_FOUND; };
  CHECK(cache.get("missing", refuse, &c) == AXL_ERROR_NOT_FOUND);
  CHECK(c == nullptr);
  auto thrower = [](const char*, std::unique_ptr<TestKernel>&) -> axl_status {
    throw std::runtime_error("driver");
  };
  CHECK_THROWS(cache.get("missing", thrower, &c));
  // Neither left an entry: the next request makes the kernel.
  REQUIRE(cache.get("missing", make, &c) == AXL_SUCCESS);
  CHECK(c->serial == 2);
  int seen = 0;
  cache.for_each([&](TestKernel&) { ++seen; });
  CHECK(seen == 2);
}

TEST_CASE("host queue slots: destroy refused on the worker, events record and time", "[common]") {
  g_reports.clear();
  LiveQueues<TestQueue> live;
  auto* q = new TestQueue();
  live.add(q);
  CHECK(live.snapshot().size() == 1);

  axl_pevent start = nullptr, end = nullptr;
  REQUIRE(create_event(record_fail, 0, &start) == AXL_SUCCESS);
  REQUIRE(create_event(record_fail, 0, &end) == AXL_SUCCESS);
  float ms = -1;
  CHECK(event_elapsed(record_fail, start, end, &ms) == AXL_ERROR_INVALID_STATE);
  REQUIRE(record_event(record_fail, q->work, start) == AXL_SUCCESS);
  REQUIRE(record_event(record_fail, q->work, end) == AXL_SUCCESS);
  CHECK(report_sync(record_fail, q->work.synchronize()) == AXL_SUCCESS);
  CHECK(query_event(end) == AXL_SUCCESS);
  CHECK(event_elapsed(record_fail, start, end, &ms) == AXL_SUCCESS);
  CHECK(ms >= 0.0f);

  // queue_destroy from a host callback on the same queue is refused.
  axl_status from_worker = AXL_SUCCESS;
  struct Ctx {
    LiveQueues<TestQueue>* live;
    TestQueue* q;
    axl_status* out;
  } ctx{&live, q, &from_worker};
  REQUIRE(enqueue_host_callback(
              record_fail, q->work,
              [](void* p) {
                auto* c = static_cast<Ctx*>(p);
                *c->out = destroy_queue(record_fail, *c->live, c->q);
              },
              &ctx) == AXL_SUCCESS);
  CHECK(report_sync(record_fail, q->work.synchronize()) == AXL_SUCCESS);
  CHECK(from_worker == AXL_ERROR_INVALID_STATE);
  CHECK(enqueue_host_callback(record_fail, q->work, nullptr, nullptr) == AXL_ERROR_INVALID_ARGUMENT);

  CHECK(destroy_queue(record_fail, live, q) == AXL_SUCCESS);
  CHECK(live.snapshot().empty());
  CHECK(destroy_event(start) == AXL_SUCCESS);
  CHECK(destroy_event(end) == AXL_SUCCESS);
}
