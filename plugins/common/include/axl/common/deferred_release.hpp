// Objects whose release must wait for queued device work: a module with
// launches in flight, a completion flag a stream is still waiting on. The
// ABI lets the application release them at any time (plugin.h:
// module_unload, flag_destroy), so a backend parks them here with a test
// ("has the work that could use it finished?", typically an event recorded
// on every live queue at release time) and frees them once it passes.
// Sweeps run on later calls and at backend_shutdown; nothing here starts a
// thread or blocks.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

namespace axl::common {

class DeferredReleases {
 public:
  // `done` answers whether the object may be freed now; `release` frees it
  // (and whatever `done` uses). Both run under no lock of the caller's.
  void add(std::function<bool()> done, std::function<void()> release);
  // Releases every parked object whose `done` answers true.
  void sweep();
  // Releases everything, done or not (backend_shutdown, after the caller
  // has waited for the device). Returns how many were still pending.
  size_t release_all();
  size_t pending() const;

 private:
  struct Entry {
    std::function<bool()> done;
    std::function<void()> release;
  };
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
};

}  // namespace axl::common
