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

TEST_CASE("finishing parked entries keeps each kind's fields, numbers streams and entries",
          "[trace]") {
  using axl::core::finish_entries;
  using axl::core::park;
  TraceLog log;
  // Every field set, as a plugin might: only those of each record's kind
  // may survive.
  auto record = [](int32_t kind, uint64_t queue) {
    axl_trace_record r{};
    r.struct_size = sizeof r;
    r.queue_trace_id = queue;
    r.kind = kind;
    r.memcpy_kind = AXL_MEMCPY_DTOH;
    r.name = "op";
    for (int d = 0; d < 3; ++d) {
      r.grid[d] = 2 + d;
      r.block[d] = 5 + d;
    }
    r.shared_mem_bytes = 64;
    r.memcpy_bytes = 100;
    r.memset_bytes = 200;
    r.memset_value = 0xAB;
    r.memset_value_size = 1;
    r.args_hash = 0x1234;
    return r;
  };
  const int32_t kinds[] = {AXL_TRACE_KERNEL_LAUNCH, AXL_TRACE_MEMCPY, AXL_TRACE_MEMSET, 99};
  const uint64_t queues[] = {70, 70, 9, 70};  // streams 0, 0, 1, 0
  std::vector<axl_launch_trace_entry> entries;
  for (int i = 0; i < 4; ++i) {
    axl_launch_trace_entry& e = log.append();
    std::memset(&e, 0x5A, sizeof e);  // a stale slot
    const axl_trace_record r = record(kinds[i], queues[i]);
    park(e, r, log.intern(r.name), 3);
    entries.push_back(e);
  }
  finish_entries(entries);
  for (size_t i = 0; i < 4; ++i) {
    INFO("entry " << i);
    const axl_launch_trace_entry& e = entries[i];
    CHECK(e.struct_size == sizeof e);
    CHECK(e.kind == kinds[i]);
    CHECK(std::string(e.name) == "op");
    CHECK(e.device_id == 3);
    CHECK(e.sequence == i);
    CHECK(e.semantic_hash != 0);
    const bool launch = i == 0, copy = i == 1, fill = i == 2;
    CHECK(e.grid[1] == (launch ? 3u : 0u));
    CHECK(e.block[2] == (launch ? 7u : 0u));
    CHECK(e.shared_mem_bytes == (launch ? 64u : 0u));
    CHECK(e.memcpy_kind == (copy ? AXL_MEMCPY_DTOH : AXL_MEMCPY_NONE));
    CHECK(e.memcpy_byte_size == (copy ? 100u : 0u));
    CHECK(e.memset_byte_size == (fill ? 200u : 0u));
    CHECK(e.memset_value == (fill ? 0xABu : 0u));
    CHECK(e.memset_value_size == (fill ? 1u : 0u));
  }
  CHECK(entries[0].stream_index == 0);
  CHECK(entries[1].stream_index == 0);
  CHECK(entries[2].stream_index == 1);
  CHECK(entries[3].stream_index == 0);
  // The launch's hash follows its plugin's args_hash; the others ignore it.
  std::vector<axl_launch_trace_entry> again(entries.size());
  for (size_t i = 0; i < 4; ++i) {
    axl_trace_record r = record(kinds[i], queues[i]);
    r.args_hash = 0x9999;
    park(again[i], r, entries[i].name, 3);
  }
  finish_entries(again);
  CHECK(again[0].semantic_hash != entries[0].semantic_hash);
  for (size_t i = 1; i < 4; ++i) CHECK(again[i].semantic_hash == entries[i].semantic_hash);
}
