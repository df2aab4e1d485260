#include "axl/common/deferred_release.hpp"

#include <utility>

namespace axl::common {

void DeferredReleases::add(std::function<bool()> done, std::function<void()> release) {
  std::lock_guard<std::mutex> lk(mu_);
  entries_.push_back({std::move(done), std::move(release)});
}

void DeferredReleases::sweep() {
  std::vector<Entry> ready;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (entries_.empty()) return;
    std::vector<Entry> keep;
    for (Entry& e : entries_) (e.done() ? ready : keep).push_back(std::move(e));
    entries_ = std::move(keep);
  }
  // Outside the lock: a release may call into the driver, which may take
  // its own locks.
  for (Entry& e : ready) e.release();
}

size_t DeferredReleases::release_all() {
  std::vector<Entry> all;
  {
    std::lock_guard<std::mutex> lk(mu_);
    all.swap(entries_);
  }
  size_t pending = 0;
  for (Entry& e : all) {
    if (!e.done()) ++pending;
    e.release();
  }
  return pending;
}

size_t DeferredReleases::pending() const {
  std::lock_guard<std::mutex> lk(mu_);
  return entries_.size();
}

}  // namespace axl::common
