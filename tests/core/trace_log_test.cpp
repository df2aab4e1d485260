// The launch trace's storage (core/src/trace_log.hpp): entries appended
// across many chunks come back in order as one array, and interned names
// come back right even when many names share a slot of the intern cache
// and when the caller's storage holds another name by the next call.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "trace_log.hpp"

using axl::core::TraceLog;

TEST_CASE("a trace log spanning many chunks hands back every entry in order", "[trace]") {
  TraceLog log;
  constexpr size_t kEntries = 5000;  // a few chunks of 1024
  constexpr size_t kNames = 150;     // more names than the cache has slots
  std::vector<std::string> names;
  for (size_t i = 0; i < kNames; ++i) names.push_back("kernel_" + std::to_string(i));
  char reused[32];  // one buffer, a different name in it each time
  std::vector<std::string> reused_names;
  for (size_t i = 0; i < kEntries; ++i) {
    axl_launch_trace_entry& e = log.append();
    e = axl_launch_trace_entry{};
    e.sequence = i;
    if (i % 4 == 3) {
      reused_names.push_back("r" + std::to_string(i % 9));
      std::snprintf(reused, sizeof reused, "%s", reused_names.back().c_str());
      e.name = log.intern(reused);
    } else {
      e.name = log.intern(names[(i * 7) % kNames].c_str());
    }
    CHECK(log.size() == i + 1);
  }
  std::memset(reused, 0, sizeof reused);
  auto rec = log.take();
  CHECK(log.size() == 0);
  REQUIRE(rec->entries.size() == kEntries);
  for (size_t i = 0; i < kEntries; ++i) {
    INFO("entry " << i);
    CHECK(rec->entries[i].sequence == i);
    const std::string want = i % 4 == 3 ? reused_names[i / 4] : names[(i * 7) % kNames];
    CHECK(std::string(rec->entries[i].name) == want);
  }

  // The log is reusable after take, and a name longer than a chunk of the
  // arena gets one of its own.
  const std::string long_name(200000, 'x');
  axl_launch_trace_entry& e = log.append();
  e = axl_launch_trace_entry{};
  e.name = log.intern(long_name.c_str());
  e.sequence = 7;
  auto again = log.take();
  REQUIRE(again->entries.size() == 1);
  CHECK(again->entries[0].sequence == 7);
  CHECK(std::string(again->entries[0].name) == long_name);
  // The first recording's names are still its own.
  CHECK(std::string(rec->entries[kEntries - 2].name) == names[((kEntries - 2) * 7) % kNames]);
}

TEST_CASE("an empty trace log takes to an empty recording", "[trace]") {
  TraceLog log;
  auto rec = log.take();
  CHECK(rec->entries.empty());
}
