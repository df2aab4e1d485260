// fork() rules (ARCHITECTURE.md section 2): discovery alone starts no driver,
// so a child forked after it can use the cpu backend; a child forked after
// the backend was initialised gets AXL_ERROR_FORKED (with a hint to use
// spawn) from every call on it, at once, without hanging. Each scenario runs
// axl_probe in a fresh process, which forks itself.
#include "test_util.hpp"

using namespace axltest;

namespace {

KV run_probe(const std::string& mode) {
  RunResult r = run({AXL_PROBE_PATH, mode}, {}, "", 60);
  INFO("probe stdout:\n" << r.out << "\nprobe stderr:\n" << r.err);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.signal == 0);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(sanitizer_report(r.err));
  return KV(r.out);
}

}  // namespace

TEST_CASE("fork after discovery only: the child can use the cpu backend", "[fork]") {
  KV kv = run_probe("fork-discovery");
  INFO("probe output parsed; child_exit " << kv["fork.child_exit"]);
  CHECK(kv["parent.count"] == "AXL_SUCCESS");
  CHECK(kv["parent.cpu_count"] == "1");
  CHECK(kv["child.get"] == "AXL_SUCCESS");
  CHECK(kv["child.work"] == "ok");
  CHECK(kv["fork.child_exit"] == "0");
  // The parent initialises the backend after the fork and works too.
  CHECK(kv["parent.work"] == "ok");
}

TEST_CASE("fork after the cpu backend was used: FORKED at once in the child", "[fork]") {
  KV kv = run_probe("fork-init");
  CHECK(kv["parent.work"] == "ok");
  REQUIRE(kv["fork.child_exit"] == "0");  // neither hung (alarm) nor crashed
  REQUIRE(kv["child.done"] == "1");
  // Every call that reaches the backend answers FORKED with a spawn hint.
  for (const char* call : {"child.device_get", "child.buffer_create", "child.queue_create",
                           "child.copy", "child.fill", "child.sync", "child.event_query",
                           "child.event_sync", "child.device_sync", "child.event_create",
                           "child.record_event", "child.flag_device_address", "child.host_wait"}) {
    INFO(call);
    CHECK(kv[call] == "AXL_ERROR_FORKED");
    CHECK(kv[std::string(call) + ".error_status"] == "AXL_ERROR_FORKED");
    CHECK(kv[std::string(call) + ".error_backend"] == "cpu");
    CHECK_THAT(kv[std::string(call) + ".error_message"], Catch::Contains("spawn"));
    CHECK_THAT(kv[std::string(call) + ".error_message"], Catch::Contains("fork()"));
    // "Immediately": well under the alarm, far from any wait.
    CHECK(kv.num(std::string(call) + ".ms") >= 0);
    CHECK(kv.num(std::string(call) + ".ms") < 1000);
  }
  // Releasing objects inherited from the parent succeeds without touching
  // the dead backend: no hang (the buffer's queue has work pending that no
  // thread will ever run in the child), no crash.
  for (const char* call : {"child.release_buffer", "child.release_event", "child.release_queue"}) {
    INFO(call);
    CHECK(kv[call] == "AXL_SUCCESS");
    CHECK(kv.num(std::string(call) + ".ms") < 1000);
  }
  // The parent is unaffected by its child; its gated work completes.
  CHECK(kv["parent.gate"] == "AXL_SUCCESS");
  CHECK(kv["parent.pending_copy"] == "AXL_SUCCESS");
  CHECK(kv["parent.after_sync"] == "AXL_SUCCESS");
  CHECK(kv["parent.event_after"] == "AXL_SUCCESS");
  CHECK(kv["parent.tracked_wait"] == "AXL_SUCCESS");
  CHECK(kv["parent.after_fork_work"] == "ok");
}
