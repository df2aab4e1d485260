// Core-internal interface of the profiler (axl_profile_*): the span front end
// in profile.cpp, the JSON writer in profile_json.cpp and the external tool
// sinks (NVTX, roctx) in profile_tools.cpp. Nothing here is ABI.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "axl/axl.h"
#include "axl/plugin.h"

namespace axl::core {

// One recorded event, as the collector and the JSON writer keep it.
struct ProfileRecord {
  int32_t kind = AXL_PROFILE_EVENT_SPAN;
  uint32_t color = 0;
  uint64_t thread_id = 0;
  uint64_t queue_id = 0;
  uint32_t depth = 0;
  int32_t launch_kind = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  uint32_t device_id = 0;  // LAUNCH/DEVICE: the queue's device (JSON track name)
  bool host_queue = false;
  std::string name;
};

// The JSON timeline's path with its placeholders replaced (profile_path.cpp):
// `{rank}` by the first decimal value of OMPI_COMM_WORLD_RANK, PMI_RANK or
// SLURM_PROCID (else the process id), `{pid}` by the process id.
std::string profile_expand_output(std::string_view path);

// CLOCK_MONOTONIC in ns (the clock of every profile timestamp).
uint64_t profile_now_ns();

// Whether launch-trace records should reach the profiler: a level other than
// OFF and a recording sink (JSON or collector). One relaxed load.
bool profile_launches_wanted();
// The launch-trace hook (trace.cpp): one enqueued operation.
void profile_record_launch(const axl_trace_record& rec, uint32_t device_id, bool is_host);
// A device interval measured by two timing events of one queue (event.cpp):
// start_recorded_ns and end_recorded_ns are the host times the two events
// were recorded, elapsed_ms what the device measured between them. The
// interval is drawn from the later of the start's record time and the end
// already drawn for an event recorded before it on that queue, so one in-order
// queue's intervals never overlap (issue 14: a small copy drawn inside the
// large one enqueued before it, which the device ran first).
void profile_record_device(uint64_t queue_id, uint32_t device_id, bool is_host, uint64_t start_recorded_ns,
                           uint64_t end_recorded_ns, float elapsed_ms);
// Whether any recording sink is on and the level is not OFF (for callers
// that stamp times only when someone listens).
bool profile_recording();

// Re-evaluates which backends must report launches (trace.cpp): the launch
// trace's own state or profile_launches_wanted().
void trace_refresh_backends();

// How many events one recording sink keeps (AXL_PROFILE_MAX_EVENTS, 0: no
// limit; kProfileMaxEventsDefault when unset): past it events are dropped,
// counted, and a warning is logged once, so a long profiled run cannot
// take the host's memory (~100 bytes an event, ~160 more while the JSON
// file is rendered). Read when a sink starts recording.
constexpr uint32_t kProfileMaxEventsDefault = 4000000;
uint32_t profile_max_events();

// One recording sink's cap on profile_max_events(): the collector and the
// JSON timeline both hold one, under their own lock (not thread-safe itself).
class EventCap {
 public:
  // `sink` names the sink in the warning ("the collector"); `counted` says
  // where the drops are reported ("counted when the collection is taken").
  EventCap(const char* sink, const char* counted) : sink_(sink), counted_(counted) {}
  // A sink starting to record: the limit is read again, the count cleared.
  void restart() {
    max_ = profile_max_events();
    read_ = true;
    dropped_ = 0;
  }
  // True when one more event fits beside the `held` ones; otherwise the drop
  // is counted and the first one warns. Reads the limit on first use.
  bool admit(size_t held);
  uint32_t max() const { return max_; }
  uint64_t dropped() const { return dropped_; }

 private:
  const char* sink_;
  const char* counted_;
  uint32_t max_ = 0;  // 0: no limit
  bool read_ = false;
  uint64_t dropped_ = 0;
};

// ---- JSON writer (profile_json.cpp) ----
// Thread-safe. Keeps up to profile_max_events() events in memory (the file
// records how many were dropped past it); json_write writes them whole.
void json_add(const ProfileRecord& r);
void json_name_thread(uint64_t tid, const std::string& name);
// Writes `path` (through path.tmp.<pid> and a rename). Returns 0 or errno.
int json_write(const std::string& path);
// From std::terminate: whether the writer's lock is free right now, and a
// write that gives up if it is not.
bool json_idle();
void json_write_if_idle(const std::string& path);

// ---- External tools (profile_tools.cpp) ----
// Both are no-ops when the tool is absent. message is NUL-terminated.
void tools_push(const char* message, uint32_t argb);
void tools_pop();
void tools_mark(const char* message, uint32_t argb);
// AXL_PROFILE_SINK_NVTX / _ROCTX bits of what is compiled in / loaded.
uint32_t tools_sinks();

}  // namespace axl::core
