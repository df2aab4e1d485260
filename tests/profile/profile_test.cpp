// Profiler spans (axl_profile_*, axl::ScopedRange): the level switch and its
// errors, nesting and thread ids through the collector, spans that close on
// exceptions or after profiling was switched off, colours, launch-trace and
// device-interval events, the JSON file (checked by check_trace.py), the
// AXL_ENABLE_PROFILING / AXL_PROFILE_OUTPUT variables in child processes
// (normal end, std::terminate, exit with a span open), and emission into
// NVTX (through a recording injection library) and roctx (a stand-in
// libroctx64.so).
#include <sys/syscall.h>

#include <algorithm>

#include "../core/test_util.hpp"

using namespace axltest;

namespace {

const bool kEnvClean = (clear_axl_env(), true);

struct Collected {
  std::vector<axl_profile_event> events;
  std::vector<std::string> names;
  std::vector<const axl_profile_event*> of_kind(int32_t kind) const {
    std::vector<const axl_profile_event*> out;
    for (auto& e : events)
      if (e.kind == kind) out.push_back(&e);
    return out;
  }
  const axl_profile_event* named(const std::string& n) const {
    for (size_t i = 0; i < events.size(); ++i)
      if (names[i] == n) return &events[i];
    return nullptr;
  }
};

Collected take() {
  axl_profile_events_t h = nullptr;
  REQUIRE(axl_profile_collector_take(&h) == AXL_SUCCESS);
  size_t n = 0;
  REQUIRE(axl_profile_events_size(h, &n) == AXL_SUCCESS);
  const axl_profile_event* data = axl_profile_events_data(h);
  Collected c;
  for (size_t i = 0; i < n; ++i) {
    // Application ABI 1.3: the core stamps each event with its struct size.
    CHECK(axl_profile_event_at(data, i)->struct_size == sizeof(axl_profile_event));
    c.events.push_back(axl::read_element(axl_profile_event_at(data, i)));
    c.names.emplace_back(c.events.back().name);
  }
  REQUIRE(axl_profile_events_release(h) == AXL_SUCCESS);
  for (size_t i = 0; i < n; ++i) c.events[i].name = c.names[i].c_str();
  return c;
}

uint64_t my_tid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

// Runs check_trace.py on a trace file; its key=value report.
KV check_trace(const std::string& path) {
  RunResult r = run({"/usr/bin/env", "python3", AXL_CHECK_TRACE_PY, path});
  INFO("check_trace.py stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  return KV(r.out);
}

// The file names in `dir`, sorted.
std::vector<std::string> file_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (auto& f : fs::directory_iterator(dir)) names.push_back(f.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("the level word: one address for the process, written only through set_level") {
  const int32_t* word = axl_profile_level_address();
  REQUIRE(word != nullptr);
  CHECK(axl_profile_level_address() == word);
  REQUIRE(axl_profile_set_level(AXL_PROFILE_DETAILED) == AXL_SUCCESS);
  CHECK(__atomic_load_n(word, __ATOMIC_RELAXED) == AXL_PROFILE_DETAILED);
  CHECK(axl::profile_level_now() == AXL_PROFILE_DETAILED);
  REQUIRE(axl_profile_set_level(AXL_PROFILE_OFF) == AXL_SUCCESS);
  CHECK(__atomic_load_n(word, __ATOMIC_RELAXED) == AXL_PROFILE_OFF);
  CHECK_FALSE(axl::profiling_enabled());
}

TEST_CASE("profiling level: names, values and errors") {
  REQUIRE(axl_profile_set_level_name("on") == AXL_SUCCESS);
  CHECK(axl_profile_level() == AXL_PROFILE_ON);
  CHECK(axl::profiling_enabled());
  REQUIRE(axl_profile_set_level_name("detailed") == AXL_SUCCESS);
  CHECK(axl_profile_level() == AXL_PROFILE_DETAILED);
  REQUIRE(axl_profile_set_level_name("off") == AXL_SUCCESS);
  CHECK(axl_profile_level() == AXL_PROFILE_OFF);
  CHECK_FALSE(axl::profiling_enabled());

  require_status(axl_profile_set_level_name("ON"), AXL_ERROR_INVALID_ARGUMENT,
                 {"'ON'", "'off', 'on', 'detailed'"});
  require_status(axl_profile_set_level_name(nullptr), AXL_ERROR_INVALID_ARGUMENT,
                 {"'off', 'on', 'detailed'"});
  require_status(axl_profile_set_level(7), AXL_ERROR_INVALID_ARGUMENT, {"7", "AXL_PROFILE_DETAILED"});
  CHECK(axl_profile_level() == AXL_PROFILE_OFF);  // unchanged by the failures
  require_error([] { axl::set_profiling_state("verbose"); }, AXL_ERROR_INVALID_ARGUMENT, {"'verbose'"});
}

TEST_CASE("profiling off: spans are not opened and nothing is recorded") {
  REQUIRE(axl_profile_set_level(AXL_PROFILE_OFF) == AXL_SUCCESS);
  REQUIRE(axl_profile_collector_start() == AXL_SUCCESS);
  CHECK(axl_profile_push("never", 0) == 0);
  axl_profile_mark("never", 0);
  {
    axl::ScopedRange r("never");
    CHECK_FALSE(r.is_open());
  }
  CHECK(axl_profile_depth() == 0);
  require_status(axl_profile_pop(), AXL_ERROR_INVALID_ARGUMENT, {"no span is open on this thread"});
  CHECK(take().events.empty());
}

TEST_CASE("nested spans and marks reach the collector with depth, thread and colour") {
  REQUIRE(axl_profile_set_level(AXL_PROFILE_ON) == AXL_SUCCESS);
  REQUIRE(axl_profile_collector_start() == AXL_SUCCESS);
  CHECK((axl_profile_sinks() & AXL_PROFILE_SINK_COLLECTOR) != 0);
  {
    axl::ScopedRange outer("outer", axl_profile_color("red"));
    REQUIRE(outer.is_open());
    CHECK(axl_profile_depth() == 1);
    {
      axl::ScopedRange inner("inner", axl_profile_color("blue"));
      CHECK(axl_profile_depth() == 2);
      axl::ScopedRange::mark("tick", axl_profile_color("yellow"));
    }
  }
  CHECK(axl_profile_depth() == 0);
  REQUIRE(axl_profile_set_level(AXL_PROFILE_OFF) == AXL_SUCCESS);
  Collected c = take();
  CHECK((axl_profile_sinks() & AXL_PROFILE_SINK_COLLECTOR) == 0);
  REQUIRE(c.events.size() == 3);
  // Completion order: the mark, then inner (closes first), then outer.
  CHECK(c.names == std::vector<std::string>{"tick", "inner", "outer"});
  const auto &tick = c.events[0], &inner = c.events[1], &outer = c.events[2];
  CHECK(tick.kind == AXL_PROFILE_EVENT_MARK);
  CHECK(tick.depth == 2);
  CHECK(tick.start_ns == tick.end_ns);
  CHECK(tick.color == 0xFFFFFF00u);
  CHECK(inner.kind == AXL_PROFILE_EVENT_SPAN);
  CHECK(inner.depth == 1);
  CHECK(inner.color == 0xFF0000FFu);
  CHECK(outer.depth == 0);
  CHECK(outer.color == 0xFFFF0000u);
  CHECK(outer.start_ns <= inner.start_ns);
  CHECK(inner.start_ns <= tick.start_ns);
  CHECK(tick.start_ns <= inner.end_ns);
  CHECK(inner.end_ns <= outer.end_ns);
  for (auto& e : c.events) {
    CHECK(e.thread_id == my_tid());
    CHECK(e.queue_id == 0);
    CHECK(e.launch_kind == -1);
  }
}

TEST_CASE("a span closes when an exception leaves its scope") {
  REQUIRE(axl_profile_set_level(AXL_PROFILE_ON) == AXL_SUCCESS);
  REQUIRE(axl_profile_collector_start() == AXL_SUCCESS);
  try {
    axl::ScopedRange r("throws");
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  CHECK(axl_profile_depth() == 0);
  Collected c = take();
  REQUIRE(c.events.size() == 1);
  CHECK(c.names[0] == "throws");
  CHECK(c.events[0].end_ns >= c.events[0].start_ns);
  REQUIRE(axl_profile_set_level(AXL_PROFILE_OFF) == AXL_SUCCESS);
}

TEST_CASE("a span opened while on still closes after profiling is switched off") {
  REQUIRE(axl_profile_set_level(AXL_PROFILE_ON) == AXL_SUCCESS);
  REQUIRE(axl_profile_collector_start() == AXL_SUCCESS);
  REQUIRE(axl_profile_push("straddles", 0x00123456u) == 1);
  REQUIRE(axl_profile_set_level(AXL_PROFILE_OFF) == AXL_SUCCESS);
  CHECK(axl_profile_push("not opened", 0) == 0);
  CHECK(axl_profile_pop() == AXL_SUCCESS);
  CHECK(axl_profile_pop() == AXL_ERROR_INVALID_ARGUMENT);
  Collected c = take();
  REQUIRE(c.events.size() == 1);
  CHECK(c.names[0] == "straddles");
  CHECK(c.events[0].color == 0xFF123456u);  // alpha 0 taken as opaque
}

TEST_CASE("MAX's colour names, with modular_purple for anything else") {
  CHECK(axl_profile_color("modular_purple") == 0xFFB5BAF5u);
  CHECK(axl_profile_color("blue") == 0xFF0000FFu);
  CHECK(axl_profile_color("green") == 0xFF008000u);
  CHECK(axl_profile_color("orange") == 0xFFFFA500u);
  CHECK(axl_profile_color("purple") == 0xFF800080u);
  CHECK(axl_profile_color("red") == 0xFFFF0000u);
  CHECK(axl_profile_color("white") == 0xFFFFFFFFu);
  CHECK(axl_profile_color("yellow") == 0xFFFFFF00u);
  CHECK(axl_profile_color("Red") == 0xFFB5BAF5u);
  CHECK(axl_profile_color("chartreuse") == 0xFFB5BAF5u);
  CHECK(axl_profile_color(nullptr) == 0xFFB5BAF5u);
}

TEST_CASE("launches, copies and device intervals are recorded beside the launch trace") {
  axl::Device dev = axl::Device::cpu();
  axl::Queue q = dev.create_queue();
  axl::Buffer a = dev.allocate(4096);
  std::vector<unsigned char> host(4096, 7);
  axl::Event e0 = dev.create_event(true), e1 = dev.create_event(true);

  REQUIRE(axl_profile_set_level(AXL_PROFILE_ON) == AXL_SUCCESS);
  REQUIRE(axl_profile_collector_start() == AXL_SUCCESS);
  axl::begin_launch_trace(true);  // both consumers at once
  q.record(e0);
  q.copy_from_host(a, host.data(), 100);
  q.fill(a, 0xAB, 1, 0, 16);
  q.record(e1);
  q.synchronize();
  float ms = e0.elapsed_ms(e1);
  auto trace = axl::take_launch_trace();
  Collected c = take();
  REQUIRE(axl_profile_set_level(AXL_PROFILE_OFF) == AXL_SUCCESS);

  CHECK(trace.size() == 2);  // the launch trace is unaffected
  auto launches = c.of_kind(AXL_PROFILE_EVENT_LAUNCH);
  REQUIRE(launches.size() == 2);
  CHECK(launches[0]->launch_kind == AXL_TRACE_MEMCPY);
  CHECK(launches[0]->bytes == 100);
  CHECK(launches[1]->launch_kind == AXL_TRACE_MEMSET);
  CHECK(launches[1]->bytes == 16);
  CHECK(launches[0]->queue_id != 0);
  CHECK(launches[0]->queue_id == launches[1]->queue_id);
  CHECK(launches[0]->thread_id == my_tid());
  CHECK(launches[0]->start_ns <= launches[1]->start_ns);
  auto dev_events = c.of_kind(AXL_PROFILE_EVENT_DEVICE);
  REQUIRE(dev_events.size() == 1);
  CHECK(dev_events[0]->queue_id == launches[0]->queue_id);
  CHECK(dev_events[0]->end_ns - dev_events[0]->start_ns == uint64_t(double(ms) * 1e6));
  CHECK(dev_events[0]->start_ns <= launches[0]->start_ns);

  // With the collector stopped and no JSON output nothing is recorded.
  REQUIRE(axl_profile_set_level(AXL_PROFILE_ON) == AXL_SUCCESS);
  q.copy_from_host(a, host.data(), 8);
  q.synchronize();
  REQUIRE(axl_profile_collector_start() == AXL_SUCCESS);
  CHECK(take().events.empty());
  REQUIRE(axl_profile_set_level(AXL_PROFILE_OFF) == AXL_SUCCESS);
}

TEST_CASE("the JSON sink writes a valid Chrome trace with spans, marks and queue tracks") {
  TempDir dir;
  std::string path = (dir.path() / "trace.json").string();
  REQUIRE(axl_profile_set_output(path.c_str()) == AXL_SUCCESS);
  size_t need = 0;
  REQUIRE(axl_profile_get_output(nullptr, 0, &need) == AXL_SUCCESS);
  std::string got(need, '\0');
  REQUIRE(axl_profile_get_output(got.data(), got.size(), &need) == AXL_SUCCESS);
  CHECK(got.c_str() == path);
  CHECK((axl_profile_sinks() & AXL_PROFILE_SINK_JSON) != 0);

  axl::Device dev = axl::Device::cpu();
  axl::Queue q = dev.create_queue();
  axl::Buffer a = dev.allocate(256);
  REQUIRE(axl_profile_set_level(AXL_PROFILE_DETAILED) == AXL_SUCCESS);
  {
    axl::ScopedRange outer("json_outer", axl_profile_color("green"));
    axl::ScopedRange inner("json \"quoted\"\n\xff", axl_profile_color("orange"));
    axl::ScopedRange::mark("json_mark");
    q.fill(a, 1, 4, 0, 64);
    q.synchronize();
  }
  REQUIRE(axl_profile_set_level(AXL_PROFILE_OFF) == AXL_SUCCESS);
  REQUIRE(axl_profile_flush() == AXL_SUCCESS);
  KV kv = check_trace(path);
  CHECK(kv["valid"] == "1");
  CHECK(kv["nested"] == "1");
  CHECK(kv["name.json_outer.count"] == "1");
  CHECK(kv["name.json_outer.depths"] == "0");
  CHECK(kv["name.json_outer.color"] == "#FF008000");
  // Quotes, control characters and invalid UTF-8 are escaped (the report
  // prints names JSON-escaped).
  CHECK(kv[R"(name.json \"quoted\"\n\ufffd.count)"] == "1");
  CHECK(kv[R"(name.json \"quoted\"\n\ufffd.depths)"] == "1");
  CHECK(kv.num("spans") >= 2);
  CHECK(kv["name.json_mark.count"] == "1");
  CHECK(kv["name.json_mark.depths"] == "2");
  CHECK(kv.num("launchs") >= 1);
  CHECK(kv.num("queue_tracks") >= 2);  // launches + device timings of the queue
  CHECK(contains(kv["queue_track.0"], "(cpu:0)"));
  CHECK(contains(kv["process_name"], "axl: "));
  CHECK(kv["span_threads"] == kv["named_span_threads"]);
  CHECK(kv["display_unit"] == "ns");

  // Writing fails with the path and the reason; no output -> a clear error.
  std::string bad = (dir.path() / "missing_dir" / "t.json").string();
  REQUIRE(axl_profile_set_output(bad.c_str()) == AXL_SUCCESS);
  require_status(axl_profile_flush(), AXL_ERROR_INTERNAL, {bad, "No such file"});
  REQUIRE(axl_profile_set_output("") == AXL_SUCCESS);
  CHECK((axl_profile_sinks() & AXL_PROFILE_SINK_JSON) == 0);
  require_status(axl_profile_flush(), AXL_ERROR_INVALID_ARGUMENT, {"no profile output"});
}

TEST_CASE("AXL_ENABLE_PROFILING sets the level a process starts with") {
  struct Case {
    const char* value;
    int level;
  };
  for (Case c : {Case{"on", 1}, Case{"detailed", 2}, Case{"1", 1}, Case{"TRUE", 1}, Case{"yes", 1},
                 Case{"Detailed", 2}, Case{"off", 0}, Case{"0", 0}, Case{"maybe", 0}, Case{"", 0}}) {
    RunResult r = run({AXL_PROFILE_PROBE_PATH}, {{"AXL_ENABLE_PROFILING", c.value}});
    INFO("AXL_ENABLE_PROFILING=" << c.value << " stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    KV kv(r.out);
    CHECK(kv.num("level") == c.level);
    CHECK(kv.num("outer_open") == (c.level ? 1 : 0));
  }
  RunResult r = run({AXL_PROFILE_PROBE_PATH});
  CHECK(KV(r.out).num("level") == 0);
}

TEST_CASE("AXL_PROFILE_OUTPUT is valid JSON after a normal end, std::terminate and exit()") {
  for (std::string mode : {"ok", "throw", "exit"}) {
    TempDir dir;
    std::string path = (dir.path() / "t.json").string();
    RunResult r = run({AXL_PROFILE_PROBE_PATH, mode},
                      {{"AXL_ENABLE_PROFILING", "on"}, {"AXL_PROFILE_OUTPUT", path}});
    INFO("mode " << mode << " stderr: " << r.err);
    if (mode == "ok") CHECK(r.exit_code == 0);
    if (mode == "throw") CHECK(r.signal == SIGABRT);
    if (mode == "exit") CHECK(r.exit_code == 3);
    CHECK((KV(r.out).num("sinks") & AXL_PROFILE_SINK_JSON) != 0);
    KV kv = check_trace(path);
    CHECK(kv["name.outer.count"] == "1");
    CHECK(kv["name.inner.depths"] == "1");
    CHECK(kv["name.tick.count"] == "1");
    CHECK(kv["nested"] == "1");
    if (mode == "throw") CHECK(kv["name.doomed.count"] == "1");
    if (mode == "exit") CHECK(kv["name.open_at_exit.count"] == "1");
    size_t files = 0;  // no temporary file left behind
    for (auto& f : fs::directory_iterator(dir.path())) files += f.is_regular_file();
    CHECK(files == 1);
  }
}

TEST_CASE("AXL_PROFILE_OUTPUT's {rank}: one file per rank, from the launcher's variables") {
  // Every rank variable is set (empty = absent) so that the test does not
  // depend on the launcher ctest itself may run under.
  struct Case {
    const char* ompi;
    const char* pmi;
    const char* slurm;
    const char* file;
  };
  for (Case c : {Case{"0", "7", "9", "t.0.json"}, Case{"1", "", "", "t.1.json"},
                 Case{"", "3", "9", "t.3.json"}, Case{"", "", "12", "t.12.json"},
                 Case{"../x", "", "5", "t.5.json"}}) {  // not a number: the next one counts
    TempDir dir;
    std::string tmpl = (dir.path() / "t.{rank}.json").string();
    RunResult r = run({AXL_PROFILE_PROBE_PATH}, {{"AXL_ENABLE_PROFILING", "on"},
                                                 {"AXL_PROFILE_OUTPUT", tmpl},
                                                 {"OMPI_COMM_WORLD_RANK", c.ompi},
                                                 {"PMI_RANK", c.pmi},
                                                 {"SLURM_PROCID", c.slurm}});
    INFO("OMPI_COMM_WORLD_RANK=" << c.ompi << " PMI_RANK=" << c.pmi << " SLURM_PROCID=" << c.slurm
                                 << " stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(file_names(dir.path()) == std::vector<std::string>{c.file});
    CHECK(check_trace((dir.path() / c.file).string())["name.outer.count"] == "1");
  }
}

TEST_CASE("AXL_PROFILE_OUTPUT's {rank} without a launcher and {pid}: the process id") {
  TempDir dir;
  std::string tmpl = (dir.path() / "{rank}-{pid}-{other}.json").string();
  std::vector<std::pair<std::string, std::string>> env = {{"AXL_ENABLE_PROFILING", "on"},
                                                          {"AXL_PROFILE_OUTPUT", tmpl},
                                                          {"OMPI_COMM_WORLD_RANK", ""},
                                                          {"PMI_RANK", ""},
                                                          {"SLURM_PROCID", ""}};
  // Two processes with one environment: two files, each named twice by its
  // writer's pid; an unknown placeholder stays as written.
  for (int i = 0; i < 2; ++i) REQUIRE(run({AXL_PROFILE_PROBE_PATH}, env).exit_code == 0);
  std::vector<std::string> names = file_names(dir.path());
  REQUIRE(names.size() == 2);
  CHECK(names[0] != names[1]);
  for (auto& n : names) {
    INFO(n);
    size_t dash = n.find('-');
    REQUIRE(dash != std::string::npos);
    std::string pid = n.substr(0, dash);
    CHECK(pid.find_first_not_of("0123456789") == std::string::npos);
    CHECK(n == pid + "-" + pid + "-{other}.json");
    CHECK(check_trace((dir.path() / n).string())["name.outer.count"] == "1");
  }
}

TEST_CASE("axl_profile_set_output expands the placeholders; get_output names the real file") {
  std::string pid = std::to_string(getpid());
  REQUIRE(axl_profile_set_output("/nonexistent/{pid}/t{pid}.json") == AXL_SUCCESS);
  size_t need = 0;
  REQUIRE(axl_profile_get_output(nullptr, 0, &need) == AXL_SUCCESS);
  std::string got(need, '\0');
  REQUIRE(axl_profile_get_output(got.data(), got.size(), &need) == AXL_SUCCESS);
  CHECK(got.c_str() == "/nonexistent/" + pid + "/t" + pid + ".json");
  REQUIRE(axl_profile_set_output(nullptr) == AXL_SUCCESS);
}

TEST_CASE("spans reach an NVTX tool through NVTX_INJECTION64_PATH, in the domain axl") {
  if (!(axl_profile_sinks() & AXL_PROFILE_SINK_NVTX)) {
    WARN("NVTX headers were not found at build time: the NVTX sink is compiled out");
    return;
  }
  TempDir dir;
  std::string log = (dir.path() / "nvtx.log").string();
  RunResult r = run({AXL_PROFILE_PROBE_PATH}, {{"AXL_ENABLE_PROFILING", "on"},
                                               {"NVTX_INJECTION64_PATH", AXL_NVTX_RECORDER_PATH},
                                               {"AXL_NVTX_RECORDER_OUT", log}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // colorType 1 is NVTX_COLOR_ARGB.
  CHECK(slurp(log) ==
        "init\n"
        "domain axl\n"
        "push axl outer FFFF0000 1\n"
        "push axl inner FF0000FF 1\n"
        "mark axl tick FF008000 1\n"
        "pop axl\n"
        "pop axl\n");

  // Off: NVTX is never called, so the tool is never even initialised.
  std::string log_off = (dir.path() / "nvtx_off.log").string();
  r = run({AXL_PROFILE_PROBE_PATH}, {{"NVTX_INJECTION64_PATH", AXL_NVTX_RECORDER_PATH},
                                     {"AXL_NVTX_RECORDER_OUT", log_off}});
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(fs::exists(log_off));
}

TEST_CASE("spans reach roctx when libroctx64.so can be loaded") {
  TempDir dir;
  std::string log = (dir.path() / "roctx.log").string();
  std::string libdir = fs::path(AXL_FAKE_ROCTX_PATH).parent_path().string();
  RunResult r = run({AXL_PROFILE_PROBE_PATH}, {{"AXL_ENABLE_PROFILING", "detailed"},
                                               {"LD_LIBRARY_PATH", libdir},
                                               {"AXL_FAKE_ROCTX_OUT", log}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK((KV(r.out).num("sinks") & AXL_PROFILE_SINK_ROCTX) != 0);
  CHECK(slurp(log) == "push outer\npush inner\nmark tick\npop \npop \n");

  r = run({AXL_PROFILE_PROBE_PATH}, {{"AXL_ENABLE_PROFILING", "on"}});
  CHECK((KV(r.out).num("sinks") & AXL_PROFILE_SINK_ROCTX) == 0);

  // A library without the whole surface: a warning, and roctx stays off.
  std::string partial = fs::path(AXL_FAKE_ROCTX_PARTIAL_PATH).parent_path().string();
  r = run({AXL_PROFILE_PROBE_PATH}, {{"AXL_ENABLE_PROFILING", "on"}, {"LD_LIBRARY_PATH", partial}});
  REQUIRE(r.exit_code == 0);
  CHECK((KV(r.out).num("sinks") & AXL_PROFILE_SINK_ROCTX) == 0);
  CHECK(contains(r.err, "libroctx64.so does not export roctxRangePushA, roctxRangePop and roctxMarkA"));
}

TEST_CASE("a fork()ed child that exits does not write the parent's JSON file") {
  TempDir dir;
  std::string path = (dir.path() / "parent.json").string();
  REQUIRE(axl_profile_set_output(path.c_str()) == AXL_SUCCESS);
  REQUIRE(axl_profile_set_level(AXL_PROFILE_ON) == AXL_SUCCESS);
  { axl::ScopedRange r("before_fork"); }
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) exit(0);  // runs the atexit writer, which must stand aside
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st));
  CHECK_FALSE(fs::exists(path));
  REQUIRE(axl_profile_flush() == AXL_SUCCESS);  // the parent writes it
  CHECK(check_trace(path)["name.before_fork.count"] == "1");
  REQUIRE(axl_profile_set_level(AXL_PROFILE_OFF) == AXL_SUCCESS);
  REQUIRE(axl_profile_set_output(nullptr) == AXL_SUCCESS);
}
