// The storage a launch trace records into (trace.cpp). Appending never moves
// what is already there: entries go into fixed-size chunks and names into
// chunks of characters, so no launch waits for a copy however long the
// trace grows (one vector of entries stalled the launch that made it
// reallocate: 42 ms near 500k entries). take() hands the trace over as one
// contiguous array, which is what axl_launch_trace_entries returns, and keeps
// a few chunks for the next trace: fresh memory costs a page fault every 40
// entries or so, a measurable part of a traced launch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "axl/axl.h"

namespace axl::core {

// NUL-terminated copies of names that stay put until the arena is destroyed.
class NameArena {
 public:
  NameArena() = default;
  // A moved-from arena is empty (its cursor must not point into chunks it
  // no longer owns).
  NameArena(NameArena&& o) noexcept
      : chunks_(std::move(o.chunks_)),
        next_(std::exchange(o.next_, nullptr)),
        left_(std::exchange(o.left_, 0)) {}
  NameArena& operator=(NameArena&& o) noexcept {
    chunks_ = std::move(o.chunks_);
    next_ = std::exchange(o.next_, nullptr);
    left_ = std::exchange(o.left_, 0);
    return *this;
  }

  const char* copy(const char* s, size_t n) {
    if (n + 1 > left_) grow(n + 1);
    char* p = next_;
    std::memcpy(p, s, n);
    p[n] = '\0';
    next_ += n + 1;
    left_ -= n + 1;
    return p;
  }

 private:
  static constexpr size_t kChunkBytes = size_t{64} << 10;
  void grow(size_t need) {
    const size_t size = std::max(kChunkBytes, need);
    chunks_.push_back(std::make_unique_for_overwrite<char[]>(size));
    next_ = chunks_.back().get();
    left_ = size;
  }
  std::vector<std::unique_ptr<char[]>> chunks_;
  char* next_ = nullptr;
  size_t left_ = 0;
};

// What a taken trace owns: its entries, contiguous, and the names they point at.
struct TraceRecording {
  std::vector<axl_launch_trace_entry> entries;
  NameArena names;
};

class TraceLog {
 public:
  TraceLog() = default;
  // A moved-from log is empty (its cursor must not point into chunks it no
  // longer owns).
  TraceLog(TraceLog&& o) noexcept { *this = std::move(o); }
  TraceLog& operator=(TraceLog&& o) noexcept {
    chunks_ = std::move(o.chunks_);
    spares_ = std::move(o.spares_);
    next_ = std::exchange(o.next_, nullptr);
    end_ = std::exchange(o.end_, nullptr);
    size_ = std::exchange(o.size_, 0);
    names_ = std::move(o.names_);
    std::copy(std::begin(o.interned_), std::end(o.interned_), std::begin(interned_));
    std::fill(std::begin(o.interned_), std::end(o.interned_), Interned{});
    return *this;
  }

  size_t size() const { return size_; }

  // Where the next entry goes (its bytes are stale: write every field);
  // valid until the next append. A cursor into the last chunk: this is on
  // every traced launch.
  axl_launch_trace_entry& append() {
    if (next_ == end_) grow();
    ++size_;
    return *next_++;
  }

  // The trace's copy of the NUL-terminated name `s`. A trace holds few
  // distinct names (a kernel's, a copy's) and a plugin passes each from
  // the same storage every time, so a direct-mapped cache keyed by the
  // pointer finds the earlier copy; the bytes are compared, as the storage
  // may hold another name by now. Each name is normally stored once.
  const char* intern(const char* s) {
    Interned& c = interned_[(reinterpret_cast<uintptr_t>(s) >> 3) % kInternSlots];
    // strncmp stops at either NUL, so it never reads past the end of `s`.
    if (c.source != s || std::strncmp(c.name, s, c.size + 1) != 0) {
      const size_t n = std::strlen(s);
      c = Interned{s, names_.copy(s, n), n};
    }
    return c.name;
  }

  // Everything recorded, in order; leaves the log empty. Copies the entries
  // once into one array: the cost of a long trace is paid here, not by a
  // launch.
  std::unique_ptr<TraceRecording> take() {
    auto out = std::make_unique<TraceRecording>();
    out->entries.reserve(size_);
    for (size_t c = 0; c < chunks_.size(); ++c) {
      const size_t n = c + 1 == chunks_.size() ? size_ - c * kChunkEntries : kChunkEntries;
      out->entries.insert(out->entries.end(), chunks_[c].get(), chunks_[c].get() + n);
    }
    out->names = std::move(names_);
    clear();
    return out;
  }

  // Drops what was recorded, keeping up to kSpareChunks chunks for reuse.
  void clear() {
    while (!chunks_.empty() && spares_.size() < kSpareChunks) {
      spares_.push_back(std::move(chunks_.back()));
      chunks_.pop_back();
    }
    chunks_.clear();
    next_ = end_ = nullptr;
    size_ = 0;
    names_ = NameArena();
    std::fill(std::begin(interned_), std::end(interned_), Interned{});
  }

  // Takes `other`'s spare chunks (up to the limit), e.g. after other.take().
  void adopt_spares(TraceLog& other) {
    while (!other.spares_.empty() && spares_.size() < kSpareChunks) {
      spares_.push_back(std::move(other.spares_.back()));
      other.spares_.pop_back();
    }
  }

 private:
  // 1024 entries are about 100 KiB: under glibc's mmap threshold, so a new
  // chunk is a heap allocation and no system call.
  static constexpr size_t kChunkEntries = 1024;
  static constexpr size_t kSpareChunks = 32;  // about 3 MiB
  static constexpr size_t kInternSlots = 64;
  // Starts a chunk, a spare one if there is one.
  void grow() {
    if (spares_.empty()) {
      chunks_.push_back(std::make_unique_for_overwrite<axl_launch_trace_entry[]>(kChunkEntries));
    } else {
      chunks_.push_back(std::move(spares_.back()));
      spares_.pop_back();
    }
    next_ = chunks_.back().get();
    end_ = next_ + kChunkEntries;
  }
  struct Interned {
    const char* source = nullptr;  // the caller's pointer
    const char* name = nullptr;    // the copy
    size_t size = 0;
  };
  std::vector<std::unique_ptr<axl_launch_trace_entry[]>> chunks_;
  std::vector<std::unique_ptr<axl_launch_trace_entry[]>> spares_;
  // The free part of the last chunk; empty: the next append starts a chunk.
  axl_launch_trace_entry* next_ = nullptr;
  axl_launch_trace_entry* end_ = nullptr;
  size_t size_ = 0;
  NameArena names_;
  Interned interned_[kInternSlots];
};

}  // namespace axl::core
