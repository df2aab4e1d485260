// Helpers shared by the n-d buffer tests (tests/core/layout_test.cpp on the
// cpu, tests/virtual/buffer_nd_test.cpp on device memory): layouts and index
// builders, the naive reference (every element's byte offset, a reference
// element-by-element copy), buffers of random bytes, and a watchdog that opens
// a gated queue.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "../devices/queue_helpers.hpp"
#include "test_util.hpp"

namespace layouttest {

using Opt = std::optional<int64_t>;

inline axl_layout make_layout(uint32_t es, std::vector<int64_t> shape) {
  axl_layout l{};
  REQUIRE(axl_layout_init(&l, static_cast<uint32_t>(shape.size()), shape.data(), es) == AXL_SUCCESS);
  return l;
}

// Python's a[i], a[start:stop:step] (each bound optional), a[:] and a[::step].
inline axl_index at(int64_t i) { return axl_index{AXL_INDEX_INTEGER, 0, i, 0, 0}; }

inline axl_index slice(Opt start, Opt stop, Opt step = std::nullopt) {
  axl_index ix{AXL_INDEX_SLICE, 0, 0, 0, 0};
  if (start) ix.flags |= AXL_INDEX_HAS_START, ix.start = *start;
  if (stop) ix.flags |= AXL_INDEX_HAS_STOP, ix.stop = *stop;
  if (step) ix.flags |= AXL_INDEX_HAS_STEP, ix.step = *step;
  return ix;
}

inline axl_index all() { return slice(std::nullopt, std::nullopt); }
inline axl_index every(int64_t step) { return slice(std::nullopt, std::nullopt, step); }

inline axl_layout index_ok(const axl_layout& in, std::vector<axl_index> ix) {
  axl_layout out{};
  axl_status s = axl_layout_index(&in, ix.data(), static_cast<uint32_t>(ix.size()), &out);
  INFO(axl_last_error_message());
  REQUIRE(s == AXL_SUCCESS);
  return out;
}

// Byte offsets of every element, in row-major order of the index (the
// definition of a layout, walked one element at a time).
inline std::vector<int64_t> element_offsets(const axl_layout& l) {
  std::vector<int64_t> out;
  for (uint32_t k = 0; k < l.rank; ++k)
    if (l.shape[k] == 0) return out;
  std::vector<int64_t> idx(l.rank, 0);
  for (;;) {
    int64_t off = static_cast<int64_t>(l.offset);
    for (uint32_t k = 0; k < l.rank; ++k) off += idx[k] * l.strides[k];
    out.push_back(off);
    int k = static_cast<int>(l.rank) - 1;
    for (; k >= 0; --k) {
      if (++idx[k] < l.shape[k]) break;
      idx[k] = 0;
    }
    if (k < 0) return out;
  }
}

// Integers drawn uniformly from [lo, hi] by a generator seeded once, so a
// randomized test sees the same cases on every run.
class Rnd {
 public:
  explicit Rnd(uint32_t seed) : rng_(seed) {}
  int64_t operator()(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

 private:
  std::mt19937 rng_;
};

// A layout of `shape` inside a larger array, each axis sliced with a random
// step (either sign, up to 3) from a random start, plus a random offset.
inline axl_layout random_embedding(Rnd& rnd, const std::vector<int64_t>& shape, uint32_t es) {
  std::vector<int64_t> outer(shape.size());
  std::vector<axl_index> ix(shape.size());
  for (size_t k = 0; k < shape.size(); ++k) {
    // One draw per statement: the order of the draws is fixed (and so are the cases).
    const int64_t magnitude = rnd(1, 3);
    const int64_t step = rnd(0, 2) == 0 ? -magnitude : magnitude;
    const int64_t extra = rnd(0, 2);
    outer[k] = shape[k] * std::abs(step) + extra;
    const int64_t start = step > 0 ? rnd(0, extra) : outer[k] - 1 - rnd(0, extra);
    ix[k] = slice(start, {}, step);
    // The stop bounds the slice to exactly shape[k] elements.
    ix[k].flags |= AXL_INDEX_HAS_STOP;
    ix[k].stop = start + shape[k] * step;
    if (ix[k].stop < 0) ix[k].flags &= ~AXL_INDEX_HAS_STOP;
  }
  axl_layout l = index_ok(make_layout(es, outer), ix);
  l.offset += static_cast<uint64_t>(rnd(0, 40));
  return l;
}

// A random strided copy: the same element size (1 to 8 bytes) and count on
// both sides, each side embedded in a larger array. The shape has 1 to 3
// axes of 1 to 7; one time in `long_one_in` (0: never) it is a long first
// axis (400 to 1200) and a short second one instead. The destination's shape
// is the source's, reversed one time in `reverse_one_in`.
struct RandomCopy {
  std::vector<int64_t> dst_shape;
  axl_layout dst, src;
};

inline RandomCopy random_copy(Rnd& rnd, int64_t reverse_one_in, int64_t long_one_in = 0) {
  const uint32_t sizes[] = {1, 2, 3, 4, 8};
  const uint32_t es = sizes[rnd(0, 4)];
  std::vector<int64_t> shape(static_cast<size_t>(rnd(1, 3)));
  for (auto& n : shape) n = rnd(1, 7);
  if (long_one_in > 0 && rnd(0, long_one_in - 1) == 0) shape = {rnd(400, 1200), rnd(1, 3)};
  RandomCopy c;
  c.src = random_embedding(rnd, shape, es);
  c.dst_shape = shape;
  if (rnd(0, reverse_one_in - 1) == 0) std::reverse(c.dst_shape.begin(), c.dst_shape.end());
  c.dst = random_embedding(rnd, c.dst_shape, es);
  return c;
}

// `dst` after copying the elements of `src` at `sl` one by one to those at
// `dl` (bytes outside `dl` unchanged): what axl_queue_copy_layout must give.
inline std::vector<unsigned char> reference_copy(std::vector<unsigned char> dst, const axl_layout& dl,
                                                 const std::vector<unsigned char>& src, const axl_layout& sl) {
  auto doffs = element_offsets(dl), soffs = element_offsets(sl);
  REQUIRE(doffs.size() == soffs.size());
  for (size_t i = 0; i < doffs.size(); ++i) memcpy(dst.data() + doffs[i], src.data() + soffs[i], sl.element_size);
  return dst;
}

// Compares two buffers' bytes, naming the first few that differ.
inline void check_same_bytes(const std::vector<unsigned char>& got, const std::vector<unsigned char>& expected) {
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != expected[i] && bad++ < 5)
      UNSCOPED_INFO("byte " << i << ": got " << int(got[i]) << ", expected " << int(expected[i]));
  CHECK(bad == 0);
}

// random_bytes(n, seed); read_back(q, b): all of `b` through `q` (device
// memory included).
using devtest::random_bytes;
using devtest::read_back;

inline std::vector<unsigned char> read_back(const axl::Buffer& b) { return read_back(b.device().default_queue(), b); }

// A new buffer of `n` random bytes (from `seed`), written through `q`.
inline axl::Buffer filled(const axl::Device& d, const axl::Queue& q, size_t n, uint32_t seed, uint32_t flags = 0) {
  axl::Buffer b = d.allocate(n, flags);
  auto bytes = random_bytes(n, seed);
  q.copy_from_host(b, bytes.data(), n);
  q.synchronize();
  return b;
}

inline axl::Buffer filled(const axl::Device& d, size_t n, uint32_t seed, uint32_t flags = 0) {
  return filled(d, d.default_queue(), n, seed, flags);
}

// Sets the flag after `delay` unless told to stop (so a test that fails
// early cannot leave a queue blocked forever).
class Watchdog {
 public:
  Watchdog(const axl::Flag& f, std::chrono::milliseconds delay) : flag_(f) {
    thread_ = std::thread([this, delay] {
      auto until = std::chrono::steady_clock::now() + delay;
      while (!stop_.load() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      fired_at_ = std::chrono::steady_clock::now();
      flag_.signal(1);
    });
  }
  ~Watchdog() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  void fire_now() {
    stop_.store(true);
    join();
  }
  std::chrono::steady_clock::time_point fired_at() {
    join();
    return fired_at_;
  }
  // For a caller that has just stopped waiting: it waited for the flag.
  void check_waited() {
    const auto done = std::chrono::steady_clock::now();
    CHECK(done >= fired_at());
  }

 private:
  axl::Flag flag_;
  std::atomic<bool> stop_{false};
  std::chrono::steady_clock::time_point fired_at_;
  std::thread thread_;
};

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// How long axl_buffer_host_wait(b, access) took, in ms; it must succeed.
inline double host_wait_ms(const axl::Buffer& b, uint32_t access) {
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(axl_buffer_host_wait(b.get(), access) == AXL_SUCCESS);
  return ms_since(t0);
}

// A host read of `b` that must succeed within `limit_ms` (it must not wait
// for work that is not its buffer's).
inline void check_read_within(const axl::Buffer& b, double limit_ms) {
  const double waited = host_wait_ms(b, AXL_ACCESS_READ);
  CHECK(waited < limit_ms);
}

}  // namespace layouttest
