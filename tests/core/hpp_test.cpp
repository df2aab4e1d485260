// axl.hpp over axl.h: each wrapper calls its C function, failures throw
// axl::Error with the core's status and message, and the ownership helpers
// (Unowned, share) neither leak nor drop a reference. Also axl/report.hpp,
// the report axl-info and `python -m axl info` print.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "axl/report.hpp"
#include "test_util.hpp"

using namespace axltest;

namespace {

const int kEnvReady = [] {
  clear_axl_env();
  setenv("AXL_PLUGINS", AXL_CPU_PLUGIN_PATH, 1);
  return 0;
}();

// Runs f, which must throw axl::Error with `status` and a message holding `text`.
template <typename F>
void require_axl_error(F&& f, axl_status status, const std::string& text) {
  try {
    f();
  } catch (const axl::Error& e) {
    CHECK(e.status() == status);
    CHECK(std::string(e.what()).find(text) != std::string::npos);
    return;
  }
  FAIL("no axl::Error was thrown");
}

std::vector<uint32_t> read_u32(const axl::Queue& q, const axl::Buffer& b, size_t n) {
  std::vector<uint32_t> out(n);
  q.copy_to_host(out.data(), b, n * 4);
  q.synchronize();
  return out;
}

}  // namespace

TEST_CASE("errors carry the core's status and message", "[hpp]") {
  (void)kEnvReady;
  require_axl_error([] { axl::Device::get("cpu", 5); }, AXL_ERROR_OUT_OF_RANGE, "");
  const axl::Layout l = axl::Layout::contiguous({2, 3}, 4);
  axl_index ix{};
  ix.kind = AXL_INDEX_INTEGER;
  ix.start = 7;
  require_axl_error([&] { l.index({ix}); }, AXL_ERROR_OUT_OF_RANGE, "index 7 is out of bounds for axis 0 with size 2");
  require_axl_error([] { axl::Layout::contiguous({-1}, 4); }, AXL_ERROR_INVALID_ARGUMENT, "");
}

TEST_CASE("Layout is the core's layout arithmetic", "[hpp]") {
  const axl::Layout l = axl::Layout::contiguous({2, 3}, 4);
  CHECK(l.rank == 2);
  CHECK(l.strides[0] == 12);
  CHECK(l.num_elements() == 6);
  CHECK(l.is_contiguous());
  CHECK(l.extent() == std::pair<uint64_t, uint64_t>{0, 24});
  axl_index col{};  // [:, 1:2] then as a column: not contiguous
  col.kind = AXL_INDEX_SLICE;
  col.flags = AXL_INDEX_HAS_START | AXL_INDEX_HAS_STOP;
  col.start = 1;
  col.stop = 2;
  axl_index all{};
  all.kind = AXL_INDEX_SLICE;
  const axl::Layout c = l.index({all, col});
  CHECK(c.shape[0] == 2);
  CHECK(c.shape[1] == 1);
  CHECK(c.offset == 4);
  CHECK(c.extent() == std::pair<uint64_t, uint64_t>{4, 20});
  CHECK_FALSE(l.index({all, [] {
                         axl_index s{};
                         s.kind = AXL_INDEX_SLICE;
                         s.flags = AXL_INDEX_HAS_STEP;
                         s.step = 2;
                         return s;
                       }()})
                  .is_contiguous());
  const axl::Layout bytes = l.view(1);
  CHECK(bytes.shape[1] == 12);
  const axl::Layout flat = l.view(4, {6});
  CHECK(flat.rank == 1);
  CHECK(flat.shape[0] == 6);
}

TEST_CASE("strided, batched and external copies", "[hpp]") {
  const axl::Device d = axl::Device::cpu();
  const axl::Queue q = d.create_queue();
  const axl::Buffer src = d.allocate(6 * 4), dst = d.allocate(6 * 4);
  const uint32_t values[6] = {0, 1, 2, 3, 4, 5};
  q.copy_from_host(src, values, sizeof values);
  // The transpose of a 2x3 matrix, by copying its strided view.
  const axl::Layout s = axl::Layout::contiguous({2, 3}, 4);
  axl::Layout t = s;
  t.shape[0] = 3;
  t.shape[1] = 2;
  t.strides[0] = 4;
  t.strides[1] = 12;
  q.copy(dst, axl::Layout::contiguous({3, 2}, 4), src, t);
  CHECK(read_u32(q, dst, 6) == std::vector<uint32_t>{0, 3, 1, 4, 2, 5});

  const axl::Buffer other = d.allocate(8);
  axl::copy_batch({axl_copy_desc{other.get(), 0, src.get(), 8, 8}});
  d.synchronize();
  CHECK(read_u32(q, other, 2) == std::vector<uint32_t>{2, 3});

  static std::atomic<int> released{0};
  released = 0;
  uint32_t host[4] = {9, 9, 9, 9};
  {
    const axl::Buffer ext = d.wrap_external(reinterpret_cast<uint64_t>(host), host, sizeof host, 0,
                                            [](void* u) { static_cast<std::atomic<int>*>(u)->fetch_add(1); },
                                            &released);
    CHECK(ext.host_pointer() == host);
    CHECK(ext.size() == sizeof host);
    q.copy(ext, 0, src, 0, 8);
    q.synchronize();
    CHECK(released == 0);
  }
  d.synchronize();
  for (int i = 0; i < 1000 && released == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(released == 1);
  CHECK(host[0] == 0);
  CHECK(host[1] == 1);
  CHECK(host[2] == 9);
}

TEST_CASE("completions and host hazard waits", "[hpp]") {
  const axl::Completion p = axl::Completion::poisoned("producer failed");
  CHECK(p.is_ready());
  require_axl_error([&] { p.wait(); }, AXL_ERROR_HOST_HAZARD, "producer failed");

  const axl::Device d = axl::Device::cpu();
  const axl::Queue q = d.create_queue();
  const axl::Buffer b = d.allocate(16, AXL_BUFFER_FLAG_TRACKED);
  CHECK((b.flags() & AXL_BUFFER_FLAG_TRACKED) != 0);
  const axl::Completion c = axl::Completion::record(q);
  c.wait();
  CHECK(c.is_ready());
  b.stamp(p, AXL_ACCESS_WRITE);
  require_axl_error([&] { b.host_wait(AXL_ACCESS_READ); }, AXL_ERROR_HOST_HAZARD, "producer failed");
  b.stamp(c, AXL_ACCESS_WRITE);
  b.host_wait(AXL_ACCESS_READ);
}

TEST_CASE("Unowned borrows and share adds a reference", "[hpp]") {
  const axl::Device d = axl::Device::cpu();
  axl::Buffer b = d.allocate(8);
  const axl_buffer_t raw = b.get();
  { const axl::Unowned<axl::Buffer> u(raw); CHECK(u->size() == 8); }
  CHECK(b.size() == 8);  // the borrow released nothing
  axl::Buffer second = axl::share<axl::Buffer>(raw);
  b = axl::Buffer();  // drops the first reference
  CHECK(second.size() == 8);
  second = axl::Buffer();  // the last: the handle is gone now
  require_axl_error([&] { axl::Unowned<axl::Buffer>(raw)->size(); }, AXL_ERROR_INVALID_HANDLE, "already released");
}

TEST_CASE("plugin records, flag names and the discovery log", "[hpp]") {
  axl::init();
  const std::vector<axl::PluginRecord> all = axl::plugin_records();
  REQUIRE(all.size() == axl::plugin_count());
  REQUIRE_FALSE(all.empty());
  const axl::PluginRecord cpu = axl::plugin_record(0);
  CHECK(cpu.name == "cpu");
  CHECK(cpu.loaded());
  CHECK(std::string(cpu.state_name()) == "loaded");
  CHECK(cpu.path == all[0].path);
  CHECK(cpu.device_count == 1);
  require_axl_error([] { axl::plugin_record(1000); }, AXL_ERROR_OUT_OF_RANGE, "");
  // In bit order, from axl/enums.h's list; unknown bits as one hex value.
  CHECK(axl::plugin_flag_names(AXL_PLUGIN_FLAG_HOST | AXL_PLUGIN_FLAG_VIRTUAL | 0x40u) ==
        std::vector<std::string>{"virtual", "host", "0x40"});
  CHECK(axl::plugin_flag_names(AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE | AXL_PLUGIN_FLAG_FORK_SAFE) ==
        std::vector<std::string>{"fork_safe", "queue_thread_safe"});
  CHECK(axl::plugin_flag_names(cpu.flags) == std::vector<std::string>{"host", "queue_thread_safe"});
  CHECK(axl::plugin_flag_names(0).empty());
  CHECK(axl::discovery_log().find(cpu.path) != std::string::npos);
}

TEST_CASE("profile collector and level", "[hpp]") {
  const int32_t before = axl::profile_level();
  axl::set_profile_level(AXL_PROFILE_ON);
  axl::profile_collector_start();
  CHECK((axl::profile_sinks() & AXL_PROFILE_SINK_COLLECTOR) != 0);
  { axl::ScopedRange r("hpp-span", axl::profile_color("red")); CHECK(axl::profile_depth() == 1); }
  CHECK_FALSE(axl::profile_pop());  // nothing open
  const std::vector<axl::ProfileEvent> ev = axl::profile_collector_take();
  axl::set_profile_level(before);
  bool found = false;
  for (const axl::ProfileEvent& e : ev)
    if (e.name == "hpp-span" && e.raw.kind == AXL_PROFILE_EVENT_SPAN) found = e.raw.color == axl::profile_color("red");
  CHECK(found);
  require_axl_error([] { axl::set_profile_level(7); }, AXL_ERROR_INVALID_ARGUMENT, "");
}

TEST_CASE("device specs, virtual counts, MAX dtypes", "[hpp]") {
  CHECK(axl::calculate_virtual_device_count(axl::parse_device_spec("gpu:0,3")) == 4);
  CHECK(axl::calculate_virtual_device_count_from_cli({"gpu:1", "cpu"}) == 2);
  CHECK(axl::dtype_size_bits(81) == 32);
  require_axl_error([] { axl::dtype_size_bits(250); }, AXL_ERROR_INVALID_ARGUMENT, "250");
  axl_max_file_header h{};
  const char junk[64] = "not a max file";
  require_axl_error([&] { axl::parse_max_file(junk, sizeof junk, sizeof junk, h); }, AXL_ERROR_INVALID_ARGUMENT, "");
  CHECK(axl::abi_version() == std::pair<uint32_t, uint32_t>{AXL_ABI_MAJOR, AXL_ABI_MINOR});
}

TEST_CASE("the report lists the cpu plugin and device", "[hpp]") {
  const axl::Report r = axl::collect_report(true);
  CHECK_FALSE(r.init_error);
  REQUIRE(r.devices.size() == 1);
  CHECK_FALSE(r.devices[0].error);
  CHECK(r.devices[0].info.label == "cpu");
  const std::string text = axl::format_report(r, {false, true});
  CHECK(text.rfind("axl " + axl::version_string() + " (application ABI ", 0) == 0);
  CHECK(text.find("\n  cpu          loaded      api cpu") != std::string::npos);
  CHECK(text.find("\n  cpu:0  ") != std::string::npos);
  CHECK(text.find("\nDiscovery trace:\n") != std::string::npos);
  const std::string json = axl::format_report(r, {true, false});
  CHECK(json.rfind("{\n  \"core\": {\n", 0) == 0);
  CHECK(json.find("\"state\": \"loaded\"") != std::string::npos);
  CHECK(json.find("discovery_log") == std::string::npos);
  axl::Error e(AXL_ERROR_DEVICE_LOST, "cuda", 999, "CUDA_ERROR_X", "gone");
  CHECK(axl::describe(e) == "AXL_ERROR_DEVICE_LOST (CUDA_ERROR_X 999): gone");
}
