// The shared fake host services (tools/test-host) themselves: what the
// plugin-level tests, the benchmarks and the CTS probe rely on when they
// assert what a plugin logged or reported.
#include <string>
#include <thread>
#include <vector>

#include "plugin_harness.hpp"

using namespace axl_test;

TEST_CASE("the fake host records logs, reports and traces with their thread") {
  FakeHost& host = new_host();
  const axl_host_services* s = host.services();
  REQUIRE(s->struct_size == sizeof(axl_host_services));
  REQUIRE(s->ctx == &host);
  s->log(s->ctx, AXL_LOG_WARN, "first");
  s->log(s->ctx, AXL_LOG_INFO, nullptr);
  s->report_error(s->ctx, AXL_ERROR_NOT_FOUND, 2, "ENOENT", "no such file");
  axl_trace_record r{};
  r.struct_size = sizeof r;
  r.kind = AXL_TRACE_MEMSET;
  r.memset_bytes = 64;
  r.memcpy_bytes = 7;
  std::string name = "memset";
  r.name = name.c_str();
  s->trace_record(s->ctx, &r);
  name = "overwritten";  // the recorder keeps its own copy of the name

  const std::vector<LogLine> logs = host.logs();
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].level == AXL_LOG_WARN);
  CHECK(logs[0].message == "first");
  CHECK(logs[0].thread == std::this_thread::get_id());
  CHECK(logs[1].message == "(null)");
  CHECK(host.all_logs() == "first\n(null)\n");
  REQUIRE(host.report_count() == 1);
  const ErrorReport e = host.reports()[0];
  CHECK(e.status == AXL_ERROR_NOT_FOUND);
  CHECK(e.native_code == 2);
  CHECK(e.native_name == "ENOENT");
  CHECK(e.message == "no such file");
  REQUIRE(host.trace_count() == 1);
  const TraceEntry t = host.traces()[0];
  CHECK(t.name == "memset");
  CHECK(t.record.name == nullptr);
  CHECK(t.bytes() == 64);  // a fill's size is memset_bytes
  CHECK(t.thread == std::this_thread::get_id());

  host.clear();
  CHECK(host.log_count() == 0);
  CHECK(host.report_count() == 0);
  CHECK(host.trace_count() == 0);
  CHECK(host.last_report().status == AXL_SUCCESS);
}

TEST_CASE("the fake host keeps the last report per thread, as the core does") {
  FakeHost& host = new_host();
  const axl_host_services* s = host.services();
  s->report_error(s->ctx, AXL_ERROR_INVALID_ARGUMENT, 0, nullptr, "main thread");
  std::thread([&] {
    CHECK(host.last_report().status == AXL_SUCCESS);  // nothing reported here yet
    s->report_error(s->ctx, AXL_ERROR_INTERNAL, 5, nullptr, "worker");
    CHECK(host.last_report().message == "worker");
  }).join();
  const ErrorReport mine = host.last_report();
  CHECK(mine.status == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(mine.native_name.empty());
  CHECK(mine.message == "main thread");
  CHECK(host.report_count() == 2);
  host.clear_last_report();
  CHECK(host.last_report().message.empty());
  CHECK(host.report_count() == 2);  // the record of every report stays
}

TEST_CASE("hosts are separate and keep their address") {
  FakeHost& a = new_host();
  FakeHost& b = new_host();
  for (int i = 0; i < 100; ++i) new_host();  // growth must not move a or b
  CHECK(&a != &b);
  CHECK(a.services()->ctx == &a);
  a.services()->log(a.services()->ctx, AXL_LOG_INFO, "to a");
  CHECK(a.log_count() == 1);
  CHECK(b.log_count() == 0);
  const axl_negotiate_args args = negotiate_args(b, AXL_PLUGIN_ABI_MAJOR, 7);
  CHECK(args.struct_size == sizeof(axl_negotiate_args));
  CHECK(args.core_abi_major == AXL_PLUGIN_ABI_MAJOR);
  CHECK(args.core_abi_minor == 7);
  CHECK(args.host == b.services());
}

TEST_CASE("load_plugin negotiates like the core and says which step failed") {
  FakeHost& host = new_host();
  const LoadedPlugin good = load_plugin(variant_path("good"), host);
  INFO(good.error);
  REQUIRE(good.ok());
  CHECK(good.library != nullptr);
  CHECK(good.entry != nullptr);
  CHECK(std::string(good.info->name) == "t_good");
  CHECK(good.table != nullptr);
  CHECK(good.plugin_abi_minor == AXL_PLUGIN_ABI_MINOR);

  const LoadedPlugin missing = load_plugin("/nonexistent/libaxl_plugin_none.so", host);
  CHECK_FALSE(missing.ok());
  CHECK(missing.library == nullptr);
  CHECK(missing.error.rfind("dlopen /nonexistent/libaxl_plugin_none.so failed: ", 0) == 0);

  const LoadedPlugin no_entry = load_plugin(variant_path("no_entry"), host);
  CHECK(no_entry.library != nullptr);
  CHECK(no_entry.error == variant_path("no_entry") + " has no " AXL_PLUGIN_ENTRY_SYMBOL);

  const LoadedPlugin fails = load_plugin(variant_path("negotiate_fails"), host);
  CHECK(fails.table == nullptr);
  CHECK(fails.error == "negotiate failed with status " + std::to_string(AXL_ERROR_INTERNAL) +
                           ": negotiate failed on purpose");
}
