// The storage a launch trace records into (trace.cpp). Appending never moves
// what is already there: entries go into fixed-size chunks and names into
// chunks of characters, so no launch waits for a copy however long the
// trace grows (one vector of entries stalled the launch that made it
// reallocate: 42 ms near 500k entries). take() hands the trace over as one
// contiguous array, which is what axl_launch_trace_entries returns, and keeps
// a few chunks for the next trace: fresh memory costs a page fault every 40
// entries or so, a measurable part of a traced launch. A record parks the
// plugin's fields in an entry as they come (park); take finishes them
// (finish_entries): kinds, stream indices, sequence numbers, hashes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "axl/axl.h"
#include "axl/plugin.h"

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

// The semantic hash: deterministic and address-free by construction. Each
// step mixes a whole 64-bit word (xor, multiply, fold the high half down),
// so an entry takes about a dozen steps where byte-at-a-time FNV-1a took
// about 80 (15% of a traced launch); and it runs at take (finish_entries), not
// per launch. Nothing stores these values across processes (they are
// compared within a program), so the function may change.
struct Hasher {
  uint64_t h = 0xcbf29ce484222325ull;
  void word(uint64_t w) {
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 32;
  }
  void pair(uint32_t lo, uint32_t hi) { word(lo | uint64_t{hi} << 32); }
  // `n` bytes, eight at a time, then their count (so "ab" + "" and "a" + "b"
  // differ).
  void bytes(const char* p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      word(w);
    }
    if (i < n) {
      uint64_t w = 0;
      std::memcpy(&w, p + i, n - i);
      word(w);
    }
    word(n);
  }
};

// What a record leaves for take to finish. A record copies the plugin's
// fields as they come, whatever the kind (a launch's record has its copy
// and fill fields zero anyway), parking the queue's trace id in `sequence`
// and the plugin's args_hash in `semantic_hash`: each field chosen by kind,
// the stream index and the hash cost a traced launch about 60 instructions
// more when the record did them (callgrind, bench_trace_on).
inline void park(axl_launch_trace_entry& e, const axl_trace_record& rec, const char* name, uint32_t device_id) {
  e.kind = rec.kind;
  e.memcpy_kind = rec.memcpy_kind;
  e.name = name;
  e.semantic_hash = rec.args_hash;
  std::memcpy(e.grid, rec.grid, sizeof e.grid);
  std::memcpy(e.block, rec.block, sizeof e.block);
  e.shared_mem_bytes = rec.shared_mem_bytes;
  e.device_id = device_id;
  e.memcpy_byte_size = rec.memcpy_bytes;
  e.memset_byte_size = rec.memset_bytes;
  e.memset_value = rec.memset_value;
  e.memset_value_size = rec.memset_value_size;
  e.sequence = rec.queue_trace_id;
}

// Stream indices in first-seen order, from the parked queue ids in enqueue
// order. The last queue is cached: a trace is mostly one queue's work.
class StreamIndex {
 public:
  uint32_t of(uint64_t queue_trace_id) {
    if (queue_trace_id == last_id_ && last_valid_) return last_;
    auto [it, fresh] = index_.try_emplace(queue_trace_id, static_cast<uint32_t>(index_.size()));
    (void)fresh;
    last_id_ = queue_trace_id;
    last_valid_ = true;
    return last_ = it->second;
  }

 private:
  std::unordered_map<uint64_t, uint32_t> index_;
  uint64_t last_id_ = 0;
  uint32_t last_ = 0;
  bool last_valid_ = false;
};

// Turns parked entries (park, in enqueue order) into what
// axl_launch_trace_entries returns: fields that do not belong to an entry's
// kind zeroed, the stream index, the sequence number and the semantic hash.
// At take, not per launch.
inline void finish_entries(std::vector<axl_launch_trace_entry>& entries) {
  StreamIndex streams;
  const char* last_name = nullptr;  // names are interned: runs share a pointer
  uint64_t name_hash = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    axl_launch_trace_entry& e = entries[i];
    const bool launch = e.kind == AXL_TRACE_KERNEL_LAUNCH;
    const bool copy = e.kind == AXL_TRACE_MEMCPY;
    const bool fill = e.kind == AXL_TRACE_MEMSET;
    e.struct_size = sizeof e;
    if (!copy) {
      e.memcpy_kind = AXL_MEMCPY_NONE;
      e.memcpy_byte_size = 0;
    }
    if (!launch) {
      e.semantic_hash = 0;
      for (int d = 0; d < 3; ++d) e.grid[d] = e.block[d] = 0;
      e.shared_mem_bytes = 0;
    }
    if (!fill) {
      e.memset_byte_size = 0;
      e.memset_value = 0;
      e.memset_value_size = 0;
    }
    e.stream_index = streams.of(e.sequence);
    e.sequence = i;

    if (e.name != last_name) {
      Hasher n;
      n.bytes(e.name, std::strlen(e.name));
      last_name = e.name;
      name_hash = n.h;
    }
    Hasher h;
    h.pair(static_cast<uint32_t>(e.kind), static_cast<uint32_t>(e.memcpy_kind));
    h.word(name_hash);
    h.pair(e.grid[0], e.grid[1]);
    h.pair(e.grid[2], e.block[0]);
    h.pair(e.block[1], e.block[2]);
    h.word(e.shared_mem_bytes);
    h.word(e.memcpy_byte_size);
    h.word(e.memset_byte_size);
    h.pair(e.memset_value, e.memset_value_size);
    h.word(e.semantic_hash);  // the launch's args_hash, 0 for copies and fills
    e.semantic_hash = h.h ? h.h : 1;  // non-zero, as MAX's tests expect
  }
}

}  // namespace axl::core
