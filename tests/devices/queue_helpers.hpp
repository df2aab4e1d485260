// Helpers of the cases that run work on a device's queues and check it by
// reading results back: host callbacks from C++ callables, random data,
// whole-buffer read-back. Used by the every-device cases and by the
// backends' own tests.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "axl/axl.hpp"

namespace devtest {

// Enqueues a C++ callable as a host callback; it deletes itself after running.
inline void enqueue_fn(const axl::Queue& q, std::function<void()> f) {
  auto* p = new std::function<void()>(std::move(f));
  try {
    q.enqueue_host_func(
        [](void* u) {
          auto* fp = static_cast<std::function<void()>*>(u);
          (*fp)();
          delete fp;
        },
        p);
  } catch (...) {
    delete p;
    throw;
  }
}

// `n` bytes from a fixed seed: the same data on every run.
inline std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

// The whole buffer, copied back on `q` (which is synchronized).
inline std::vector<unsigned char> read_back(const axl::Queue& q, const axl::Buffer& b) {
  std::vector<unsigned char> v(b.size());
  q.copy_to_host(v.data(), b, v.size());
  q.synchronize();
  return v;
}

}  // namespace devtest
