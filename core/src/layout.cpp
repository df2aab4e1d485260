// Layouts: the n-d index arithmetic every binding shares (numpy basic
// indexing, ndarray.view). Pure functions: no handles, no allocation.
#include <cstring>
#include <vector>

#include "internal.hpp"

static_assert(sizeof(axl_layout) == 528, "axl_layout is ABI: 16 bytes + 2 x 32 int64");
static_assert(sizeof(axl_index) == 32, "axl_index is ABI");

using namespace axl::core;

namespace {

bool valid_layout(const axl_layout* l, const char* what) {
  if (!l) {
    fail(AXL_ERROR_INVALID_ARGUMENT, "%s: layout is NULL", what);
    return false;
  }
  if (l->rank > AXL_MAX_RANK || l->element_size == 0) {
    fail(AXL_ERROR_INVALID_ARGUMENT, "%s: layout has rank %u and element size %u; expected rank <= %d and size >= 1",
         what, l->rank, l->element_size, AXL_MAX_RANK);
    return false;
  }
  for (uint32_t k = 0; k < l->rank; ++k)
    if (l->shape[k] < 0) {
      fail(AXL_ERROR_INVALID_ARGUMENT, "%s: layout extent %lld along axis %u; expected >= 0", what,
           (long long)l->shape[k], k);
      return false;
    }
  return true;
}

// Python's slice.indices(): clamps start/stop for `step` over `n` elements
// and returns the number of elements selected.
int64_t slice_length(const axl_index& ix, int64_t n, int64_t* out_start) {
  const int64_t step = (ix.flags & AXL_INDEX_HAS_STEP) ? ix.step : 1;
  int64_t start, stop;
  if (step > 0) {
    start = (ix.flags & AXL_INDEX_HAS_START) ? ix.start : 0;
    stop = (ix.flags & AXL_INDEX_HAS_STOP) ? ix.stop : n;
    if (start < 0) start = start + n < 0 ? 0 : start + n;
    else if (start > n) start = n;
    if (stop < 0) stop = stop + n < 0 ? 0 : stop + n;
    else if (stop > n) stop = n;
    *out_start = start;
    // (stop - start - 1) / step + 1 cannot overflow, even for step = 2^63-1.
    return stop > start ? (stop - start - 1) / step + 1 : 0;
  }
  start = (ix.flags & AXL_INDEX_HAS_START) ? ix.start : n - 1;
  stop = (ix.flags & AXL_INDEX_HAS_STOP) ? ix.stop : -1 - n;  // "before 0"
  if (start < 0) start = start + n < 0 ? -1 : start + n;
  else if (start >= n) start = n - 1;
  if (stop < 0) stop = stop + n < 0 ? -1 : stop + n;
  else if (stop >= n) stop = n - 1;
  *out_start = start;
  // -step overflows for INT64_MIN: divide in unsigned arithmetic.
  const uint64_t down = uint64_t(0) - static_cast<uint64_t>(step);
  return start > stop ? static_cast<int64_t>(static_cast<uint64_t>(start - stop - 1) / down) + 1 : 0;
}

}  // namespace

extern "C" {

AXL_API axl_status axl_layout_init(axl_layout* out, uint32_t rank, const int64_t* shape,
                                   uint32_t element_size) {
  return guard([&]() -> axl_status {
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_layout_init: out is NULL");
    if (rank > AXL_MAX_RANK)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "rank %u is too large; at most %d dimensions are supported", rank,
                  AXL_MAX_RANK);
    if (rank && !shape) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_layout_init: shape is NULL for rank %u", rank);
    if (element_size == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_layout_init: element_size is 0; expected >= 1");
    for (uint32_t k = 0; k < rank; ++k)
      if (shape[k] < 0)
        return fail(AXL_ERROR_INVALID_ARGUMENT, "shape entry %lld along axis %u is negative; expected >= 0",
                    (long long)shape[k], k);
    // The byte total must fit an int64 so every offset below is
    // representable; innermost out, as the strides below, so dimensions
    // outside an extent of 0 are not multiplied. Checked before `out` is
    // written, which an error leaves untouched.
    int64_t total = element_size;
    for (uint32_t k = rank; k-- > 0 && shape[k] != 0;)
      if (__builtin_mul_overflow(total, shape[k], &total))
        return fail(AXL_ERROR_INVALID_ARGUMENT, "shape is too large: its byte size overflows 2^63");
    // Written in place: the caller's layout is 528 bytes, and building a
    // copy first doubled the cost of a small Buffer from Python.
    out->rank = rank;
    out->element_size = element_size;
    out->offset = 0;
    // Strides from the innermost dimension out; past an extent of 0 they
    // stop growing (numpy's strides for empty arrays).
    int64_t stride = element_size;
    bool past_empty = false;
    for (uint32_t k = rank; k-- > 0;) {
      out->shape[k] = shape[k];
      out->strides[k] = stride;
      if (shape[k] == 0) past_empty = true;
      if (!past_empty) stride *= shape[k];
    }
    const size_t unused = (AXL_MAX_RANK - rank) * sizeof(int64_t);
    memset(out->shape + rank, 0, unused);
    memset(out->strides + rank, 0, unused);
    return AXL_SUCCESS;
  });
}

AXL_API axl_status axl_layout_index(const axl_layout* in, const axl_index* indices, uint32_t count,
                                    axl_layout* out) {
  return guard([&]() -> axl_status {
    if (!valid_layout(in, "axl_layout_index")) return AXL_ERROR_INVALID_ARGUMENT;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_layout_index: out is NULL");
    if (count && !indices) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_layout_index: indices is NULL");
    if (count > in->rank)
      return fail(AXL_ERROR_OUT_OF_RANGE, "too many indices: %u for a buffer of rank %u", count, in->rank);
    axl_layout r{};
    r.element_size = in->element_size;
    int64_t offset = static_cast<int64_t>(in->offset);
    uint32_t rank = 0;
    for (uint32_t k = 0; k < in->rank; ++k) {
      const int64_t n = in->shape[k], st = in->strides[k];
      if (k >= count) {
        r.shape[rank] = n;
        r.strides[rank++] = st;
        continue;
      }
      const axl_index& ix = indices[k];
      if (ix.kind == AXL_INDEX_INTEGER) {
        int64_t i = ix.start < 0 ? ix.start + n : ix.start;
        if (i < 0 || i >= n)
          return fail(AXL_ERROR_OUT_OF_RANGE, "index %lld is out of bounds for axis %u with size %lld",
                      (long long)ix.start, k, (long long)n);
        offset += i * st;
      } else if (ix.kind == AXL_INDEX_SLICE) {
        if ((ix.flags & AXL_INDEX_HAS_STEP) && ix.step == 0)
          return fail(AXL_ERROR_INVALID_ARGUMENT, "slice step cannot be zero");
        const int64_t step = (ix.flags & AXL_INDEX_HAS_STEP) ? ix.step : 1;
        int64_t start = 0;
        const int64_t len = slice_length(ix, n, &start);
        if (len > 0) offset += start * st;
        r.shape[rank] = len;
        // With one element the stride is never used; keeping the parent's
        // avoids overflowing st * step for huge steps.
        int64_t stride = st;
        if (len > 1 && __builtin_mul_overflow(st, step, &stride))
          return fail(AXL_ERROR_INVALID_ARGUMENT, "slice step %lld overflows the byte stride along axis %u",
                      (long long)step, k);
        r.strides[rank++] = stride;
      } else {
        return fail(AXL_ERROR_INVALID_ARGUMENT, "index %u has kind %d; expected INTEGER (0) or SLICE (1)", k, ix.kind);
      }
    }
    r.rank = rank;
    r.offset = static_cast<uint64_t>(offset);
    *out = r;
    return AXL_SUCCESS;
  });
}

AXL_API int axl_layout_is_contiguous(const axl_layout* l) {
  if (!l || l->rank > AXL_MAX_RANK) return 0;
  for (uint32_t k = 0; k < l->rank; ++k)
    if (l->shape[k] == 0) return 1;
  int64_t expected = l->element_size;
  for (uint32_t k = l->rank; k-- > 0;) {
    if (l->shape[k] != 1 && l->strides[k] != expected) return 0;
    expected *= l->shape[k];
  }
  return 1;
}

AXL_API uint64_t axl_layout_num_elements(const axl_layout* l) {
  if (!l || l->rank > AXL_MAX_RANK) return 0;
  uint64_t n = 1;
  for (uint32_t k = 0; k < l->rank; ++k) n *= static_cast<uint64_t>(l->shape[k]);
  return n;
}

AXL_API void axl_layout_extent(const axl_layout* l, uint64_t* out_begin, uint64_t* out_end) {
  uint64_t b = l ? l->offset : 0, e = b;
  if (l && l->rank <= AXL_MAX_RANK && axl_layout_num_elements(l) > 0) {
    int64_t lo = static_cast<int64_t>(l->offset), hi = lo;
    for (uint32_t k = 0; k < l->rank; ++k) {
      const int64_t span = (l->shape[k] - 1) * l->strides[k];
      if (span < 0) lo += span;
      else hi += span;
    }
    b = static_cast<uint64_t>(lo);
    e = static_cast<uint64_t>(hi) + l->element_size;
  }
  if (out_begin) *out_begin = b;
  if (out_end) *out_end = e;
}

AXL_API axl_status axl_layout_view(const axl_layout* in, uint32_t element_size, uint32_t rank,
                                   const int64_t* shape, axl_layout* out) {
  return guard([&]() -> axl_status {
    if (!valid_layout(in, "axl_layout_view")) return AXL_ERROR_INVALID_ARGUMENT;
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_layout_view: out is NULL");
    if (element_size == 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_layout_view: element_size is 0");
    if (shape) {
      if (!axl_layout_is_contiguous(in))
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    "view with a new shape needs a contiguous buffer; call contiguous() first");
      axl_layout r{};
      if (axl_status s = axl_layout_init(&r, rank, shape, element_size)) return s;
      const uint64_t have = axl_layout_num_elements(in) * in->element_size;
      const uint64_t want = axl_layout_num_elements(&r) * element_size;
      if (have != want)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    "view: the new shape holds %llu bytes but the buffer holds %llu bytes; they must match exactly",
                    (unsigned long long)want, (unsigned long long)have);
      r.offset = in->offset;
      *out = r;
      return AXL_SUCCESS;
    }
    if (in->rank == 0)
      return fail(AXL_ERROR_OUT_OF_RANGE, "view of a rank-0 buffer needs an explicit shape");
    const uint32_t last = in->rank - 1;
    const int64_t n = in->shape[last];
    if (axl_layout_num_elements(in) == 0) {
      // No element, no stride that matters: numpy's rule on the byte count.
      const int64_t bytes = n * in->element_size;
      if (bytes % element_size)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    "When changing to a larger dtype, its size must be a divisor of the total size in bytes of the "
                    "last axis of the array.");
      std::vector<int64_t> dims(in->shape, in->shape + in->rank);
      dims[last] = bytes / element_size;
      axl_layout r{};
      if (axl_status s = axl_layout_init(&r, in->rank, dims.data(), element_size)) return s;
      r.offset = in->offset;
      *out = r;
      return AXL_SUCCESS;
    }
    if (n > 1 && in->strides[last] != static_cast<int64_t>(in->element_size))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "view to another dtype needs the last axis to be contiguous (its stride is %lld bytes, the "
                  "element %u bytes)",
                  (long long)in->strides[last], in->element_size);
    const int64_t bytes = n * in->element_size;
    if (bytes % element_size)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "When changing to a larger dtype, its size must be a divisor of the total size in bytes of the "
                  "last axis of the array.");
    axl_layout r = *in;
    for (uint32_t k = 0; k < last; ++k)
      if (r.shape[k] > 1 && r.strides[k] % element_size)
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    "view: axis %u steps %lld bytes, not a multiple of the new %u-byte element", k,
                    (long long)r.strides[k], element_size);
    r.element_size = element_size;
    r.shape[last] = bytes / element_size;
    r.strides[last] = element_size;
    *out = r;
    return AXL_SUCCESS;
  });
}

}  // extern "C"
