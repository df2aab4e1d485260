// Strided copies (axl_queue_copy_layout) and batched copies (axl_copy_batch).
//
// A strided copy runs one of three ways, cheapest first:
//  * both sides host memory: one host pass on the queue (typed inner loops);
//  * few contiguous runs: one plugin copy per run;
//  * otherwise: staged through host memory (pack the source, copy, scatter),
//    so a column of a 10^4 x 10^4 device matrix is three transfers, not 10^4.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <tuple>

#include "submit.hpp"

namespace axl::core {
namespace {

// Device-side runs above this go through host staging instead.
constexpr uint64_t kMaxDeviceRuns = 1024;

// Two layouts of one shape, iterated together, with dimensions of extent 1
// dropped and neighbours merged where both sides allow it.
struct Plan {
  uint32_t rank = 0;
  int64_t shape[AXL_MAX_RANK];
  int64_t ds[AXL_MAX_RANK], ss[AXL_MAX_RANK];
  int64_t es = 1;
  bool inner_dense() const { return rank == 0 || (ds[rank - 1] == es && ss[rank - 1] == es); }
};

Plan make_plan(const axl_layout& d, const axl_layout& s) {
  Plan p;
  p.es = d.element_size;
  for (uint32_t k = 0; k < d.rank; ++k) {
    if (d.shape[k] == 1) continue;
    if (p.rank > 0) {
      const uint32_t j = p.rank - 1;
      if (p.ds[j] == d.shape[k] * d.strides[k] && p.ss[j] == d.shape[k] * s.strides[k]) {
        p.shape[j] *= d.shape[k];
        p.ds[j] = d.strides[k];
        p.ss[j] = s.strides[k];
        continue;
      }
    }
    p.shape[p.rank] = d.shape[k];
    p.ds[p.rank] = d.strides[k];
    p.ss[p.rank] = s.strides[k];
    ++p.rank;
  }
  return p;
}

template <size_t N>
void inner_fixed(char* d, int64_t ds, const char* s, int64_t ss, int64_t n) {
  for (int64_t i = 0; i < n; ++i) memcpy(d + i * ds, s + i * ss, N);
}

void inner_any(char* d, int64_t ds, const char* s, int64_t ss, int64_t n, int64_t es) {
  for (int64_t i = 0; i < n; ++i) memcpy(d + i * ds, s + i * ss, static_cast<size_t>(es));
}

// Copies every element of the plan: d and s point at element (0, ..., 0).
void walk(const Plan& p, char* d, const char* s) {
  if (p.rank == 0) {
    memcpy(d, s, static_cast<size_t>(p.es));
    return;
  }
  const uint32_t last = p.rank - 1;
  const int64_t n = p.shape[last], ids = p.ds[last], iss = p.ss[last];
  const bool dense = p.inner_dense();
  int64_t idx[AXL_MAX_RANK] = {};
  for (;;) {
    if (dense) memcpy(d, s, static_cast<size_t>(n * p.es));
    else switch (p.es) {
        case 1: inner_fixed<1>(d, ids, s, iss, n); break;
        case 2: inner_fixed<2>(d, ids, s, iss, n); break;
        case 4: inner_fixed<4>(d, ids, s, iss, n); break;
        case 8: inner_fixed<8>(d, ids, s, iss, n); break;
        default: inner_any(d, ids, s, iss, n, p.es);
      }
    // Odometer over the outer dimensions.
    uint32_t k = last;
    for (;;) {
      if (k == 0) return;
      --k;
      d += p.ds[k];
      s += p.ss[k];
      if (++idx[k] < p.shape[k]) break;
      d -= p.ds[k] * p.shape[k];
      s -= p.ss[k] * p.shape[k];
      idx[k] = 0;
    }
  }
}

// A contiguous layout with `shape`'s extents at byte `offset`.
axl_layout dense_like(const axl_layout& shape, uint64_t offset) {
  axl_layout l{};
  axl_layout_init(&l, shape.rank, shape.shape, shape.element_size);
  l.offset = offset;
  return l;
}

// One host pass copying src_layout (at src) into dst_layout (at dst). Shapes
// may differ; then the source is packed first (element counts are equal).
struct HostWalk {
  char* dst;
  axl_layout dl;
  const char* src;
  axl_layout sl;
  void* free_after[3] = {};
};

void run_host_walk(void* p) {
  auto* w = static_cast<HostWalk*>(p);
  bool same_shape = w->dl.rank == w->sl.rank &&
                    std::equal(w->dl.shape, w->dl.shape + w->dl.rank, w->sl.shape);
  if (same_shape) {
    walk(make_plan(w->dl, w->sl), w->dst + w->dl.offset, w->src + w->sl.offset);
  } else if (axl_layout_is_contiguous(&w->sl)) {
    axl_layout s = dense_like(w->dl, w->sl.offset);
    walk(make_plan(w->dl, s), w->dst + w->dl.offset, w->src + s.offset);
  } else if (axl_layout_is_contiguous(&w->dl)) {
    axl_layout d = dense_like(w->sl, w->dl.offset);
    walk(make_plan(d, w->sl), w->dst + d.offset, w->src + w->sl.offset);
  } else {
    const uint64_t n = axl_layout_num_elements(&w->sl) * w->sl.element_size;
    char* tmp = static_cast<char*>(malloc(n ? n : 1));
    if (tmp) {  // out of memory here cannot be reported; the data stays stale
      axl_layout packed_s = dense_like(w->sl, 0), packed_d = dense_like(w->dl, 0);
      walk(make_plan(packed_s, w->sl), tmp, w->src + w->sl.offset);
      walk(make_plan(w->dl, packed_d), w->dst + w->dl.offset, tmp);
      free(tmp);
    }
  }
  for (void* f : w->free_after) free(f);
  delete w;
}

void free_all(void* p) {
  auto* w = static_cast<HostWalk*>(p);
  for (void* f : w->free_after) free(f);
  delete w;
}

axl_status enqueue_walk(Submission& op, HostWalk* w) {
  axl_status s = op.host_fn(run_host_walk, w);
  if (s) delete w;  // the temporaries are the caller's to free on failure
  return s;
}

uint64_t run_count(const Plan& p) {
  if (p.rank == 0) return 1;
  uint64_t n = 1;
  for (uint32_t k = 0; k + 1 < p.rank; ++k) n *= static_cast<uint64_t>(p.shape[k]);
  return p.inner_dense() ? n : n * static_cast<uint64_t>(p.shape[p.rank - 1]);
}

// One plugin copy per contiguous run of a same-shape plan.
axl_status copy_runs(Submission& op, Buffer* dst, const axl_layout& dl, Buffer* src, const axl_layout& sl,
                     const Plan& p) {
  if (p.rank == 0) return op.copy_bytes(dst, dl.offset, src, sl.offset, p.es);
  const uint32_t last = p.rank - 1;
  const bool dense = p.inner_dense();
  const uint32_t outer = dense ? last : p.rank;
  const uint64_t run = dense ? p.shape[last] * p.es : p.es;
  int64_t idx[AXL_MAX_RANK] = {};
  int64_t doff = static_cast<int64_t>(dl.offset), soff = static_cast<int64_t>(sl.offset);
  for (;;) {
    if (axl_status s = op.copy_bytes(dst, doff, src, soff, run)) return s;
    uint32_t k = outer;
    for (;;) {
      if (k == 0) return AXL_SUCCESS;
      --k;
      doff += p.ds[k];
      soff += p.ss[k];
      if (++idx[k] < p.shape[k]) break;
      doff -= p.ds[k] * p.shape[k];
      soff -= p.ss[k] * p.shape[k];
      idx[k] = 0;
    }
  }
}

// Device memory on either side and too many runs: pack the source into host
// memory, then scatter it into the destination (reading the destination's
// span first when it has gaps, so the bytes between elements survive).
axl_status copy_staged(Submission& op, Buffer* dst, const axl_layout& dl, Buffer* src, const axl_layout& sl) {
  const uint64_t n = axl_layout_num_elements(&sl) * sl.element_size;
  uint64_t sb, se, db, de;
  axl_layout_extent(&sl, &sb, &se);
  axl_layout_extent(&dl, &db, &de);
  char* packed = static_cast<char*>(aligned_alloc(64, (n + 63) / 64 * 64));
  if (!packed) return staging_oom(n);
  char* src_span = nullptr;
  char* dst_span = nullptr;
  auto undo = [&](axl_status s) {
    // Earlier steps may still use the temporaries.
    op.synchronize();
    free(packed);
    free(src_span);
    free(dst_span);
    return s;
  };
  const axl_layout packed_src = dense_like(sl, 0);
  // 1. The source's elements, packed, in host memory.
  if (src->host) {
    if (axl_status s = enqueue_walk(op, new HostWalk{packed, packed_src, static_cast<char*>(src->host), sl})) return undo(s);
  } else if (axl_layout_is_contiguous(&sl)) {
    if (axl_status s = op.copy_host_bytes(packed, nullptr, 0, nullptr, src, sl.offset, n)) return undo(s);
  } else {
    src_span = static_cast<char*>(malloc(se - sb));
    if (!src_span) return undo(staging_oom(se - sb));
    if (axl_status s = op.copy_host_bytes(src_span, nullptr, 0, nullptr, src, sb, se - sb)) return undo(s);
    axl_layout rebased = sl;
    rebased.offset -= sb;
    if (axl_status s = enqueue_walk(op, new HostWalk{packed, packed_src, src_span, rebased})) return undo(s);
  }
  // 2. Into the destination.
  const axl_layout packed_dst = dense_like(dl, 0);
  if (dst->host) {
    if (axl_status s = enqueue_walk(op, new HostWalk{static_cast<char*>(dst->host), dl, packed, packed_dst})) return undo(s);
  } else if (axl_layout_is_contiguous(&dl)) {
    if (axl_status s = op.copy_host_bytes(nullptr, dst, dl.offset, packed, nullptr, 0, n)) return undo(s);
  } else {
    dst_span = static_cast<char*>(malloc(de - db));
    if (!dst_span) return undo(staging_oom(de - db));
    if (axl_status s = op.copy_host_bytes(dst_span, nullptr, 0, nullptr, dst, db, de - db)) return undo(s);
    axl_layout rebased = dl;
    rebased.offset -= db;
    if (axl_status s = enqueue_walk(op, new HostWalk{dst_span, rebased, packed, packed_dst})) return undo(s);
    if (axl_status s = op.copy_host_bytes(nullptr, dst, db, dst_span, nullptr, 0, de - db)) return undo(s);
  }
  auto* cleanup = new HostWalk{};
  cleanup->free_after[0] = packed;
  cleanup->free_after[1] = src_span;
  cleanup->free_after[2] = dst_span;
  if (axl_status s = op.host_fn(free_all, cleanup)) {
    delete cleanup;
    return undo(s);
  }
  return AXL_SUCCESS;
}

axl_status check_layout_in(Buffer* b, const axl_layout* l, const char* side) {
  if (!l) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_copy_layout: %s layout is NULL", side);
  if (l->rank > AXL_MAX_RANK || l->element_size == 0)
    return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_copy_layout: %s layout has rank %u and element size %u", side,
                l->rank, l->element_size);
  for (uint32_t k = 0; k < l->rank; ++k)
    if (l->shape[k] < 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_copy_layout: %s extent %lld along axis %u", side,
                  (long long)l->shape[k], k);
  // A zero extent means nothing to copy, whatever the strides.
  for (uint32_t k = 0; k < l->rank; ++k)
    if (l->shape[k] == 0) return AXL_SUCCESS;
  // Counts and spans must be representable before anything multiplies them.
  uint64_t count = 1;
  int64_t lo = static_cast<int64_t>(l->offset), hi = lo;
  for (uint32_t k = 0; k < l->rank; ++k) {
    int64_t span = 0;
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(l->shape[k]), &count))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_queue_copy_layout: the %s layout's element count overflows 64 bits",
                  side);
    if (__builtin_mul_overflow(l->shape[k] - 1, l->strides[k], &span) ||
        __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi))
      return fail(AXL_ERROR_OUT_OF_RANGE,
                  "axl_queue_copy_layout: the %s layout spans more than 2^63 bytes (axis %u: %lld x %lld bytes)", side,
                  k, (long long)l->shape[k], (long long)l->strides[k]);
  }
  uint64_t b0, e0;
  axl_layout_extent(l, &b0, &e0);
  // A negative-stride layout reaching below byte 0 wraps to a huge begin.
  if (b0 > b->size || e0 > b->size || b0 > e0)
    return fail(AXL_ERROR_OUT_OF_RANGE,
                "axl_queue_copy_layout: the %s layout touches bytes [%lld, %llu) of a %llu-byte buffer", side,
                (long long)b0, (unsigned long long)e0, (unsigned long long)b->size);
  return AXL_SUCCESS;
}

}  // namespace
}  // namespace axl::core

using namespace axl::core;

extern "C" {

AXL_API axl_status axl_queue_copy_layout(axl_queue_t queue, axl_buffer_t dst, const axl_layout* dst_layout,
                                         axl_buffer_t src, const axl_layout* src_layout) {
  return guard([&]() -> axl_status {
    Queue* q = nullptr;
    Buffer *d = nullptr, *sb = nullptr;
    if (axl_status s = copy_operands(queue, dst, src, &q, &d, &sb)) return s;
    if (axl_status s = check_layout_in(d, dst_layout, "destination")) return s;
    if (axl_status s = check_layout_in(sb, src_layout, "source")) return s;
    const axl_layout& dl = *dst_layout;
    const axl_layout& sl = *src_layout;
    const uint64_t n = axl_layout_num_elements(&sl);
    if (dl.element_size != sl.element_size || axl_layout_num_elements(&dl) != n)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_queue_copy_layout: destination has %llu elements of %u bytes, source %llu of %u bytes; "
                  "both must match",
                  (unsigned long long)axl_layout_num_elements(&dl), dl.element_size, (unsigned long long)n,
                  sl.element_size);
    if (n == 0) return AXL_SUCCESS;
    if (axl_status s = device_usable(d->device)) return s;
    if (axl_status s = device_usable(sb->device)) return s;
    Submission op(q);
    op.write(d);
    op.read(sb);
    return op.run([&](Submission& o) -> axl_status {
      if (axl_layout_is_contiguous(&dl) && axl_layout_is_contiguous(&sl))
        return o.copy_bytes(d, dl.offset, sb, sl.offset, n * sl.element_size);
      if (d->host && sb->host)
        return enqueue_walk(o, new HostWalk{static_cast<char*>(d->host), dl, static_cast<char*>(sb->host), sl});
      const bool same_shape = dl.rank == sl.rank && std::equal(dl.shape, dl.shape + dl.rank, sl.shape);
      if (same_shape && run_count(make_plan(dl, sl)) <= kMaxDeviceRuns)
        return copy_runs(o, d, dl, sb, sl, make_plan(dl, sl));
      return copy_staged(o, d, dl, sb, sl);
    });
  });
}

AXL_API axl_status axl_copy_batch(const axl_copy_desc* copies, size_t count) {
  return guard([&]() -> axl_status {
    if (count && !copies) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_copy_batch: copies is NULL");
    struct Item {
      Buffer *dst, *src;
      uint64_t doff, soff, bytes;
    };
    // Validate everything first: a bad pair enqueues nothing.
    std::vector<Item> items;
    items.reserve(count);
    std::set<std::tuple<Buffer*, uint64_t, Buffer*, uint64_t, uint64_t>> seen;
    for (size_t i = 0; i < count; ++i) {
      const axl_copy_desc& c = copies[i];
      Buffer* d = as<Buffer>(c.dst, Kind::buffer, "destination buffer");
      if (!d) return AXL_ERROR_INVALID_HANDLE;
      Buffer* s = as<Buffer>(c.src, Kind::buffer, "source buffer");
      if (!s) return AXL_ERROR_INVALID_HANDLE;
      if (c.size_bytes == 0) continue;
      if (c.dst_offset > d->size || c.size_bytes > d->size - c.dst_offset || c.src_offset > s->size ||
          c.size_bytes > s->size - c.src_offset)
        return fail(AXL_ERROR_OUT_OF_RANGE,
                    "axl_copy_batch: copy %zu of %llu bytes does not fit (destination %llu bytes at %llu, source "
                    "%llu bytes at %llu)",
                    i, (unsigned long long)c.size_bytes, (unsigned long long)d->size,
                    (unsigned long long)c.dst_offset, (unsigned long long)s->size, (unsigned long long)c.src_offset);
      if (axl_status st = device_usable(d->device)) return st;
      if (axl_status st = device_usable(s->device)) return st;
      // Identity pairs move nothing.
      if (d->allocation() == s->allocation() && d->address + c.dst_offset == s->address + c.src_offset) continue;
      if (!seen.emplace(d, c.dst_offset, s, c.src_offset, c.size_bytes).second) continue;
      items.push_back({d, s, c.dst_offset, c.src_offset, c.size_bytes});
    }
    // One submission per destination device, on its default queue, in
    // first-seen order.
    std::vector<Device*> order;
    for (const Item& it : items)
      if (std::find(order.begin(), order.end(), it.dst->device) == order.end()) order.push_back(it.dst->device);
    for (Device* dev : order) {
      Submission op(dev->default_queue);
      for (const Item& it : items) {
        if (it.dst->device != dev) continue;
        op.write(it.dst);
        op.read(it.src);
      }
      axl_status st = op.run([&](Submission& o) -> axl_status {
        for (const Item& it : items) {
          if (it.dst->device != dev) continue;
          if (axl_status s = o.copy_bytes(it.dst, it.doff, it.src, it.soff, it.bytes)) return s;
        }
        return AXL_SUCCESS;
      });
      if (st) return st;
    }
    return AXL_SUCCESS;
  });
}

}  // extern "C"
