// n-d layouts (axl_layout_*), strided copies (axl_queue_copy_layout), batched
// copies (axl_copy_batch), host hazard tracking (completions, stamps,
// axl_buffer_host_wait) and external buffers on the cpu device. Every result
// is compared against a naive reference computed here: Python's slice rules
// written out, and an element-by-element walk of each layout.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <thread>

#include "layout_test_util.hpp"

using namespace axltest;
using namespace layouttest;
using namespace std::chrono_literals;

namespace {

const bool kEnvClean = (clear_axl_env(), true);

std::vector<int64_t> shape_of(const axl_layout& l) { return {l.shape, l.shape + l.rank}; }
std::vector<int64_t> strides_of(const axl_layout& l) { return {l.strides, l.strides + l.rank}; }

// list(range(n))[start:stop:step] as CPython computes it.
std::vector<int64_t> py_slice(int64_t n, Opt start, Opt stop, int64_t step) {
  auto adjust = [&](int64_t v, bool neg_step) {
    if (v < 0) {
      v += n;
      if (v < 0) v = neg_step ? -1 : 0;
    } else if (v >= n) {
      v = neg_step ? n - 1 : n;
    }
    return v;
  };
  std::vector<int64_t> out;
  if (step > 0) {
    int64_t s = start ? adjust(*start, false) : 0, e = stop ? adjust(*stop, false) : n;
    for (int64_t i = s; i < e; i += step) out.push_back(i);
  } else {
    int64_t s = start ? adjust(*start, true) : n - 1, e = stop ? adjust(*stop, true) : -1;
    for (int64_t i = s; i > e; i += step) out.push_back(i);
  }
  return out;
}

// [begin, end) of the bytes of a layout from its element offsets.
std::pair<uint64_t, uint64_t> ref_extent(const axl_layout& l) {
  auto offs = element_offsets(l);
  if (offs.empty()) return {l.offset, l.offset};
  auto [lo, hi] = std::minmax_element(offs.begin(), offs.end());
  return {static_cast<uint64_t>(*lo), static_cast<uint64_t>(*hi) + l.element_size};
}

// Dense row-major: element i sits exactly i elements after element 0.
bool ref_contiguous(const axl_layout& l) {
  auto offs = element_offsets(l);
  for (size_t i = 0; i < offs.size(); ++i)
    if (offs[i] != offs[0] + static_cast<int64_t>(i) * l.element_size) return false;
  return true;
}

// Runs copy_layout and checks every byte of both buffers against a reference
// element-by-element copy (destination bytes outside the layout unchanged).
void check_copy_layout(const axl::Queue& q, const axl::Buffer& dst, const axl_layout& dl, const axl::Buffer& src,
                       const axl_layout& sl) {
  auto dst_before = read_back(q, dst), src_before = read_back(q, src);
  auto expected = reference_copy(dst_before, dl, src_before, sl);
  axl_status s = axl_queue_copy_layout(q.get(), dst.get(), &dl, src.get(), &sl);
  INFO(axl_last_error_message());
  REQUIRE(s == AXL_SUCCESS);
  q.synchronize();
  check_same_bytes(read_back(q, dst), expected);
  CHECK((read_back(q, src) == src_before));
}

}  // namespace

// ================================================================ layouts ==

TEST_CASE("layout_init: row-major strides, zero extents, errors", "[layout]") {
  REQUIRE(kEnvClean);
  axl_layout l = make_layout(4, {2, 3, 5});
  CHECK(l.rank == 3);
  CHECK(l.element_size == 4);
  CHECK(l.offset == 0);
  CHECK(shape_of(l) == std::vector<int64_t>{2, 3, 5});
  CHECK(strides_of(l) == std::vector<int64_t>{60, 20, 4});
  CHECK(axl_layout_num_elements(&l) == 30);
  CHECK(axl_layout_is_contiguous(&l) == 1);
  uint64_t b = 1, e = 1;
  axl_layout_extent(&l, &b, &e);
  CHECK(b == 0);
  CHECK(e == 120);

  // numpy: np.empty((2, 0, 3), np.float32).strides == (12, 12, 4).
  axl_layout z = make_layout(4, {2, 0, 3});
  CHECK(strides_of(z) == std::vector<int64_t>{12, 12, 4});
  CHECK(axl_layout_num_elements(&z) == 0);
  CHECK(axl_layout_is_contiguous(&z) == 1);
  axl_layout_extent(&z, &b, &e);
  CHECK(b == 0);
  CHECK(e == 0);

  axl_layout r0 = make_layout(8, {});
  CHECK(r0.rank == 0);
  CHECK(axl_layout_num_elements(&r0) == 1);
  CHECK(axl_layout_is_contiguous(&r0) == 1);
  axl_layout_extent(&r0, &b, &e);
  CHECK(b == 0);
  CHECK(e == 8);

  axl_layout out{};
  int64_t shape[AXL_MAX_RANK + 1];
  std::fill(shape, shape + AXL_MAX_RANK + 1, 1);
  CHECK(axl_layout_init(&out, AXL_MAX_RANK, shape, 1) == AXL_SUCCESS);
  require_status(axl_layout_init(&out, AXL_MAX_RANK + 1, shape, 1), AXL_ERROR_INVALID_ARGUMENT, {"33"});
  int64_t neg[2] = {3, -1};
  require_status(axl_layout_init(&out, 2, neg, 4), AXL_ERROR_INVALID_ARGUMENT, {"-1", "axis 1"});
  int64_t ok[1] = {3};
  require_status(axl_layout_init(&out, 1, ok, 0), AXL_ERROR_INVALID_ARGUMENT, {"element_size"});
  // 2^62 elements of 2 bytes are 2^63 bytes: one past what an int64 holds.
  int64_t big[1] = {int64_t(1) << 62};
  require_status(axl_layout_init(&out, 1, big, 2), AXL_ERROR_INVALID_ARGUMENT, {"overflows 2^63"});
  int64_t big2[2] = {int64_t(1) << 32, int64_t(1) << 32};
  require_status(axl_layout_init(&out, 2, big2, 1), AXL_ERROR_INVALID_ARGUMENT, {"overflows"});
  int64_t fits[1] = {int64_t(1) << 61};
  CHECK(axl_layout_init(&out, 1, fits, 2) == AXL_SUCCESS);
  // A zero extent anywhere makes the byte size 0, however large the rest.
  int64_t empty_big[3] = {int64_t(1) << 40, 0, int64_t(1) << 40};
  CHECK(axl_layout_init(&out, 3, empty_big, 8) == AXL_SUCCESS);
  CHECK(axl_layout_num_elements(&out) == 0);
}

TEST_CASE("py_slice reference agrees with known Python results", "[layout]") {
  using V = std::vector<int64_t>;
  CHECK(py_slice(10, {}, {}, -1) == V{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(py_slice(10, 8, 2, -3) == V{8, 5});
  CHECK(py_slice(10, -3, {}, 1) == V{7, 8, 9});
  CHECK(py_slice(10, -100, 3, 1) == V{0, 1, 2});
  CHECK(py_slice(10, 5, 100, 2) == V{5, 7, 9});
  CHECK(py_slice(10, 3, 3, 1).empty());
  CHECK(py_slice(10, 7, 2, 1).empty());
  CHECK(py_slice(10, 20, -20, -1) == V{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(py_slice(10, -1, -11, -4) == V{9, 5, 1});
  CHECK(py_slice(10, {}, -8, -2) == V{9, 7, 5, 3});
  CHECK(py_slice(0, {}, {}, -1).empty());
}

TEST_CASE("layout_index: integers, slices, clamping, errors", "[layout]") {
  axl_layout m = make_layout(4, {4, 6});  // float32 4x6, strides (24, 4)

  SECTION("integers remove the dimension; negatives count from the end") {
    axl_layout row = index_ok(m, {at(2)});
    CHECK(row.rank == 1);
    CHECK(shape_of(row) == std::vector<int64_t>{6});
    CHECK(row.offset == 48);
    CHECK(axl_layout_is_contiguous(&row) == 1);
    axl_layout e = index_ok(m, {at(-1), at(-6)});
    CHECK(e.rank == 0);
    CHECK(e.offset == 3 * 24 + 0 * 4);
    CHECK(axl_layout_num_elements(&e) == 1);
    axl_layout e2 = index_ok(m, {at(-4), at(5)});
    CHECK(e2.offset == 20);
  }
  SECTION("slices with steps, including negative ones") {
    axl_layout col = index_ok(m, {slice({}, {}), at(1)});  // m[:, 1]
    CHECK(shape_of(col) == std::vector<int64_t>{4});
    CHECK(strides_of(col) == std::vector<int64_t>{24});
    CHECK(col.offset == 4);
    CHECK(axl_layout_is_contiguous(&col) == 0);

    axl_layout rev = index_ok(m, {slice({}, {}, -1), slice(5, 0, -2)});  // m[::-1, 5:0:-2]
    CHECK(shape_of(rev) == std::vector<int64_t>{4, 3});
    CHECK(strides_of(rev) == std::vector<int64_t>{-24, -8});
    CHECK(rev.offset == 3 * 24 + 5 * 4);
    CHECK(axl_layout_is_contiguous(&rev) == 0);
    uint64_t b, e;
    axl_layout_extent(&rev, &b, &e);
    CHECK(b == 4);   // element (3, 1) -> row 0, column 1
    CHECK(e == 96);  // element (0, 0) -> row 3, column 5, plus 4 bytes

    axl_layout rows = index_ok(m, {slice(1, 3)});  // m[1:3] stays dense
    CHECK(shape_of(rows) == std::vector<int64_t>{2, 6});
    CHECK(rows.offset == 24);
    CHECK(axl_layout_is_contiguous(&rows) == 1);
  }
  SECTION("out-of-range slices clamp to empty or whole") {
    axl_layout a = index_ok(m, {slice(10, 20)});
    CHECK(shape_of(a) == std::vector<int64_t>{0, 6});
    CHECK(axl_layout_num_elements(&a) == 0);
    CHECK(axl_layout_is_contiguous(&a) == 1);
    uint64_t b, e;
    axl_layout_extent(&a, &b, &e);
    CHECK(b == a.offset);
    CHECK(e == a.offset);
    axl_layout c = index_ok(m, {slice(-100, 100), slice(4, 1)});
    CHECK(shape_of(c) == std::vector<int64_t>{4, 0});
    axl_layout d = index_ok(m, {slice(100, -100, -1)});
    CHECK(shape_of(d) == std::vector<int64_t>{4, 6});
    CHECK(d.offset == 72);
    CHECK(d.strides[0] == -24);
  }
  SECTION("errors") {
    axl_layout out{};
    auto ix = std::vector<axl_index>{slice({}, {}), slice(0, 2, 0)};
    require_status(axl_layout_index(&m, ix.data(), 2, &out), AXL_ERROR_INVALID_ARGUMENT,
                   {"slice step cannot be zero"});
    ix = {at(4)};
    require_status(axl_layout_index(&m, ix.data(), 1, &out), AXL_ERROR_OUT_OF_RANGE,
                   {"index 4 is out of bounds for axis 0 with size 4"});
    ix = {at(0), at(-7)};
    require_status(axl_layout_index(&m, ix.data(), 2, &out), AXL_ERROR_OUT_OF_RANGE,
                   {"index -7 is out of bounds for axis 1 with size 6"});
    axl_layout c3 = make_layout(1, {2, 2, 3});
    ix = {at(0), at(0), at(4)};
    require_status(axl_layout_index(&c3, ix.data(), 3, &out), AXL_ERROR_OUT_OF_RANGE,
                   {"index 4 is out of bounds for axis 2 with size 3"});
    ix = {at(0), at(0), at(0)};
    require_status(axl_layout_index(&m, ix.data(), 3, &out), AXL_ERROR_OUT_OF_RANGE, {"too many indices"});
    axl_layout r0 = make_layout(4, {});
    ix = {at(0)};
    require_status(axl_layout_index(&r0, ix.data(), 1, &out), AXL_ERROR_OUT_OF_RANGE, {"too many indices"});
    // An empty axis has no valid integer index.
    axl_layout z = make_layout(4, {0});
    require_status(axl_layout_index(&z, ix.data(), 1, &out), AXL_ERROR_OUT_OF_RANGE, {"out of bounds for axis 0"});
    // The output is untouched on error.
    axl_layout sentinel{};
    sentinel.rank = 7;
    ix = {at(9)};
    CHECK(axl_layout_index(&m, ix.data(), 1, &sentinel) == AXL_ERROR_OUT_OF_RANGE);
    CHECK(sentinel.rank == 7);
    axl_index bad_kind{5, 0, 0, 0, 0};
    CHECK(axl_layout_index(&m, &bad_kind, 1, &out) == AXL_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("layout_index: extreme slice bounds and steps", "[layout]") {
  const int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  axl_layout v = make_layout(4, {5});
  axl_layout out{};
  // list(range(5))[MIN:MAX] is everything; [MAX:MIN:-1] everything reversed.
  out = index_ok(v, {slice(kMin, kMax)});
  CHECK(shape_of(out) == std::vector<int64_t>{5});
  CHECK(out.offset == 0);
  out = index_ok(v, {slice(kMax, kMin, -1)});
  CHECK(shape_of(out) == std::vector<int64_t>{5});
  CHECK(out.offset == 16);
  // Integers far out of range are errors, not wrapped.
  std::vector<axl_index> ix = {at(kMin)};
  CHECK(axl_layout_index(&v, ix.data(), 1, &out) == AXL_ERROR_OUT_OF_RANGE);
  ix = {at(kMax)};
  CHECK(axl_layout_index(&v, ix.data(), 1, &out) == AXL_ERROR_OUT_OF_RANGE);
  // Steps of +-2^63: one element (Python: [0] and [4]), or a clear error;
  // never arithmetic that overflows.
  for (int64_t step : {kMax, kMin, kMin + 1}) {
    INFO("step " << step);
    ix = {slice({}, {}, step)};
    axl_status s = axl_layout_index(&v, ix.data(), 1, &out);
    if (s == AXL_SUCCESS) {
      CHECK(shape_of(out) == std::vector<int64_t>{1});
      CHECK(out.offset == (step > 0 ? 0u : 16u));
    } else {
      CHECK(s == AXL_ERROR_INVALID_ARGUMENT);
    }
  }
}

TEST_CASE("layout_is_contiguous ignores extent-1 dimensions", "[layout]") {
  axl_layout l = make_layout(4, {3, 1, 4});
  l.strides[1] = 12345;
  CHECK(axl_layout_is_contiguous(&l) == 1);
  l.strides[0] = 20;
  CHECK(axl_layout_is_contiguous(&l) == 0);
  axl_layout t = make_layout(4, {3, 4});
  std::swap(t.shape[0], t.shape[1]);
  std::swap(t.strides[0], t.strides[1]);  // the transpose
  CHECK(axl_layout_is_contiguous(&t) == 0);
}

TEST_CASE("layout_index: randomized byte offsets against the reference", "[layout]") {
  std::mt19937 rng(20261130);
  auto rnd = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const uint32_t sizes[] = {1, 2, 3, 4, 8};
  int checked_ok = 0, checked_err = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const uint32_t rank = static_cast<uint32_t>(rnd(0, 4));
    std::vector<int64_t> shape(rank);
    for (auto& n : shape) n = rnd(0, 9) == 0 ? 0 : rnd(1, 6);
    axl_layout in = make_layout(sizes[rnd(0, 4)], shape);
    // Some axes reversed (the offset moves to their last element so every
    // byte stays >= 0), some pairs swapped: inputs that are not row-major.
    for (uint32_t k = 0; k < rank; ++k)
      if (rnd(0, 2) == 0 && in.shape[k] > 0) {
        in.offset += (in.shape[k] - 1) * in.strides[k];
        in.strides[k] = -in.strides[k];
      }
    if (rank >= 2 && rnd(0, 1)) {
      uint32_t a = static_cast<uint32_t>(rnd(0, rank - 1)), b = static_cast<uint32_t>(rnd(0, rank - 1));
      std::swap(in.shape[a], in.shape[b]);
      std::swap(in.strides[a], in.strides[b]);
    }
    in.offset += static_cast<uint64_t>(rnd(0, 64));

    uint32_t count = static_cast<uint32_t>(rnd(0, rank));
    if (rnd(0, 40) == 0) count = rank + 1;
    std::vector<axl_index> ix(count);
    bool expect_range_error = count > rank, expect_step_error = false;
    std::vector<std::vector<int64_t>> picks;  // per kept axis: source indices
    std::vector<uint32_t> kept_axis;
    int64_t base = static_cast<int64_t>(in.offset);
    for (uint32_t k = 0; k < count; ++k) {
      const int64_t n = k < rank ? in.shape[k] : 1;
      if (rnd(0, 9) < 4) {
        const int64_t i = rnd(-n - 2, n + 1);
        ix[k] = at(i);
        const int64_t w = i < 0 ? i + n : i;
        if (w < 0 || w >= n) expect_range_error = true;
        else if (k < rank) base += w * in.strides[k];
      } else {
        Opt start, stop, step;
        if (rnd(0, 2)) start = rnd(-n - 3, n + 3);
        if (rnd(0, 2)) stop = rnd(-n - 3, n + 3);
        if (rnd(0, 2)) step = rnd(-3, 3);
        ix[k] = slice(start, stop, step);
        if (step && *step == 0) {
          expect_step_error = true;
        } else if (k < rank) {
          picks.push_back(py_slice(n, start, stop, step.value_or(1)));
          kept_axis.push_back(k);
        }
      }
    }
    axl_layout out{};
    const axl_status s = axl_layout_index(&in, ix.data(), count, &out);
    if (expect_range_error || expect_step_error) {
      INFO("case " << iter);
      // Which error wins when both apply is not specified; each alone is.
      if (expect_range_error && !expect_step_error) CHECK(s == AXL_ERROR_OUT_OF_RANGE);
      else if (expect_step_error && !expect_range_error) CHECK(s == AXL_ERROR_INVALID_ARGUMENT);
      else CHECK(s != AXL_SUCCESS);
      ++checked_err;
      continue;
    }
    for (uint32_t k = count; k < rank; ++k) {
      std::vector<int64_t> all(in.shape[k]);
      for (int64_t i = 0; i < in.shape[k]; ++i) all[i] = i;
      picks.push_back(all);
      kept_axis.push_back(k);
    }
    // The reference: the cartesian product of the picks, row-major.
    std::vector<int64_t> expected;
    bool empty = false;
    for (auto& p : picks) empty = empty || p.empty();
    if (!empty) {
      std::vector<size_t> idx(picks.size(), 0);
      for (;;) {
        int64_t off = base;
        for (size_t a = 0; a < picks.size(); ++a) off += picks[a][idx[a]] * in.strides[kept_axis[a]];
        expected.push_back(off);
        int a = static_cast<int>(picks.size()) - 1;
        for (; a >= 0; --a) {
          if (++idx[a] < picks[a].size()) break;
          idx[a] = 0;
        }
        if (a < 0) break;
      }
    }
    INFO("case " << iter << ": " << axl_last_error_message());
    REQUIRE(s == AXL_SUCCESS);
    REQUIRE(out.rank == picks.size());
    REQUIRE(out.element_size == in.element_size);
    for (size_t a = 0; a < picks.size(); ++a) REQUIRE(out.shape[a] == static_cast<int64_t>(picks[a].size()));
    REQUIRE(element_offsets(out) == expected);
    CHECK(axl_layout_num_elements(&out) == expected.size());
    CHECK((axl_layout_is_contiguous(&out) == 1) == ref_contiguous(out));
    uint64_t b = 0, e = 0;
    axl_layout_extent(&out, &b, &e);
    CHECK(std::make_pair(b, e) == ref_extent(out));
    ++checked_ok;
  }
  CHECK(checked_ok > 2000);
  CHECK(checked_err > 100);
}

TEST_CASE("layout_view: dtype rescale and explicit shapes", "[layout]") {
  axl_layout out{};
  SECTION("the last axis is rescaled") {
    axl_layout f = make_layout(4, {2, 6});
    REQUIRE(axl_layout_view(&f, 8, 0, nullptr, &out) == AXL_SUCCESS);
    CHECK(out.element_size == 8);
    CHECK(shape_of(out) == std::vector<int64_t>{2, 3});
    CHECK(strides_of(out) == std::vector<int64_t>{24, 8});
    REQUIRE(axl_layout_view(&f, 1, 0, nullptr, &out) == AXL_SUCCESS);
    CHECK(shape_of(out) == std::vector<int64_t>{2, 24});
    CHECK(strides_of(out) == std::vector<int64_t>{24, 1});
    // Rows of a strided slice stay where they were.
    axl_layout rows = index_ok(make_layout(2, {6, 4}), {slice(5, {}, -2)});
    REQUIRE(axl_layout_view(&rows, 4, 0, nullptr, &out) == AXL_SUCCESS);
    CHECK(shape_of(out) == std::vector<int64_t>{3, 2});
    CHECK(strides_of(out) == std::vector<int64_t>{-16, 4});
    CHECK(out.offset == 40);
  }
  SECTION("a view of a slice keeps its byte offset") {
    axl_layout u8 = make_layout(1, {10});
    axl_layout mid = index_ok(u8, {slice(3, 7)});
    REQUIRE(axl_layout_view(&mid, 2, 0, nullptr, &out) == AXL_SUCCESS);
    CHECK(out.offset == 3);
    CHECK(out.element_size == 2);
    CHECK(shape_of(out) == std::vector<int64_t>{2});
    CHECK(strides_of(out) == std::vector<int64_t>{2});
  }
  SECTION("a size that does not divide the last axis: MAX's text") {
    axl_layout u8 = make_layout(1, {2, 3});
    require_status(axl_layout_view(&u8, 2, 0, nullptr, &out), AXL_ERROR_INVALID_ARGUMENT,
                   {"When changing to a larger dtype, its size must be a divisor of the total size in bytes of the "
                    "last axis of the array."});
  }
  SECTION("a strided last axis cannot be rescaled") {
    axl_layout every_other = index_ok(make_layout(4, {8}), {slice({}, {}, 2)});
    CHECK(axl_layout_view(&every_other, 2, 0, nullptr, &out) == AXL_ERROR_INVALID_ARGUMENT);
  }
  SECTION("rank 0 needs a shape") {
    axl_layout r0 = make_layout(8, {});
    require_status(axl_layout_view(&r0, 4, 0, nullptr, &out), AXL_ERROR_OUT_OF_RANGE, {"rank-0"});
    int64_t two[1] = {2};
    REQUIRE(axl_layout_view(&r0, 4, 1, two, &out) == AXL_SUCCESS);
    CHECK(shape_of(out) == std::vector<int64_t>{2});
  }
  SECTION("explicit shapes: same bytes, offset kept, contiguous only") {
    axl_layout f = index_ok(make_layout(4, {5, 6}), {slice(1, 3)});  // rows 1..2, offset 24
    int64_t s34[2] = {3, 4};
    REQUIRE(axl_layout_view(&f, 4, 2, s34, &out) == AXL_SUCCESS);
    CHECK(shape_of(out) == std::vector<int64_t>{3, 4});
    CHECK(strides_of(out) == std::vector<int64_t>{16, 4});
    CHECK(out.offset == 24);
    int64_t s6[1] = {6};
    REQUIRE(axl_layout_view(&f, 8, 1, s6, &out) == AXL_SUCCESS);
    CHECK(out.element_size == 8);
    int64_t s5[1] = {5};
    require_status(axl_layout_view(&f, 4, 1, s5, &out), AXL_ERROR_INVALID_ARGUMENT, {"20 bytes", "48 bytes"});
    axl_layout col = index_ok(make_layout(4, {5, 6}), {slice({}, {}), at(0)});
    CHECK(axl_layout_view(&col, 4, 1, s5, &out) == AXL_ERROR_INVALID_ARGUMENT);
  }
}

// ===================================================== copy_layout on cpu ==

TEST_CASE("copy_layout on cpu: the shapes of strided copies", "[copy_layout]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.create_queue();
  axl::Buffer src = filled(cpu, q, 4096, 1), dst = filled(cpu, q, 4096, 2);

  SECTION("contiguous to contiguous, at offsets") {
    axl_layout sl = make_layout(4, {5, 7}), dl = make_layout(4, {35});
    sl.offset = 100;
    dl.offset = 1000;
    check_copy_layout(q, dst, dl, src, sl);
  }
  SECTION("strided to contiguous: a column") {
    axl_layout m = make_layout(4, {20, 3});
    axl_layout col = index_ok(m, {slice({}, {}), at(1)});
    check_copy_layout(q, dst, make_layout(4, {20}), src, col);
  }
  SECTION("contiguous to strided: gaps in the destination stay") {
    axl_layout every_third = index_ok(make_layout(4, {30}), {slice(2, {}, 3)});
    check_copy_layout(q, dst, every_third, src, make_layout(4, {10}));
  }
  SECTION("strided to strided with negative strides") {
    axl_layout sl = index_ok(make_layout(2, {6, 8}), {slice({}, {}, -1), slice(7, 0, -2)});
    axl_layout dl = index_ok(make_layout(2, {12, 5}), {slice(1, {}, 2), slice({}, 4, 1)});
    REQUIRE(shape_of(sl) == shape_of(dl));
    check_copy_layout(q, dst, dl, src, sl);
  }
  SECTION("a transpose") {
    axl_layout t = make_layout(8, {6, 9});
    std::swap(t.shape[0], t.shape[1]);
    std::swap(t.strides[0], t.strides[1]);
    check_copy_layout(q, dst, make_layout(8, {9, 6}), src, t);
  }
  SECTION("differing shapes with equal element counts") {
    axl_layout s46 = index_ok(make_layout(4, {4, 8}), {slice({}, {}), slice(1, 7)});  // 4x6, not dense
    axl_layout d38 = index_ok(make_layout(4, {6, 8}), {slice({}, {}, 2)});  // 3x8, not dense
    check_copy_layout(q, dst, d38, src, s46);
    check_copy_layout(q, dst, make_layout(4, {24}), src, s46);  // dense destination
    axl_layout s = make_layout(4, {2, 12});
    s.offset = 400;
    check_copy_layout(q, dst, d38, src, s);  // dense source
    check_copy_layout(q, dst, index_ok(make_layout(4, {3, 16}), {slice({}, {}, -1), slice({}, {}, -2)}), src,
                      index_ok(make_layout(4, {2, 2, 12}), {slice({}, {}), at(-1)}));
  }
  SECTION("element sizes 1, 2, 3, 4, 8, 16") {
    for (uint32_t es : {1u, 2u, 3u, 4u, 8u, 16u}) {
      INFO("element size " << es);
      axl_layout sl = index_ok(make_layout(es, {7, 9}), {slice({}, {}, 2), slice(8, {}, -3)});
      axl_layout dl = index_ok(make_layout(es, {4, 6}), {slice({}, {}), slice(1, {}, 2)});
      check_copy_layout(q, dst, dl, src, sl);
      check_copy_layout(q, dst, make_layout(es, {12}), src, sl);
    }
  }
  SECTION("rank 0") {
    axl_layout one = make_layout(3, {});
    one.offset = 17;
    axl_layout to = make_layout(3, {});
    to.offset = 2000;
    check_copy_layout(q, dst, to, src, one);
  }
  SECTION("zero elements are a no-op") {
    auto before = read_back(q, dst);
    axl_layout e1 = index_ok(make_layout(4, {8}), {slice(5, 2)});
    axl_layout e2 = make_layout(4, {0, 3});
    CHECK(axl_queue_copy_layout(q.get(), dst.get(), &e1, src.get(), &e2) == AXL_SUCCESS);
    q.synchronize();
    CHECK(read_back(q, dst) == before);
  }
}

TEST_CASE("copy_layout on cpu: randomized layouts against the reference", "[copy_layout]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.create_queue();
  Rnd rnd(77);
  axl::Buffer src = filled(cpu, q, 1 << 16, 5), dst = filled(cpu, q, 1 << 16, 6);
  for (int iter = 0; iter < 300; ++iter) {
    INFO("case " << iter);
    const RandomCopy c = random_copy(rnd, 3);
    REQUIRE(shape_of(c.dst) == c.dst_shape);
    check_copy_layout(q, dst, c.dst, src, c.src);
  }
}

TEST_CASE("copy_layout on cpu: errors enqueue nothing", "[copy_layout]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.create_queue();
  axl::Buffer src = filled(cpu, q, 256, 3), dst = filled(cpu, q, 256, 4);
  auto before = read_back(q, dst);
  axl_layout s10 = make_layout(4, {10}), d12 = make_layout(4, {12}), d10x2 = make_layout(2, {20});
  require_status(axl_queue_copy_layout(q.get(), dst.get(), &d12, src.get(), &s10), AXL_ERROR_INVALID_ARGUMENT,
                 {"12 elements of 4 bytes", "10 of 4 bytes"});
  require_status(axl_queue_copy_layout(q.get(), dst.get(), &d10x2, src.get(), &s10), AXL_ERROR_INVALID_ARGUMENT,
                 {"20 elements of 2 bytes", "10 of 4 bytes"});
  axl_layout past = make_layout(4, {10});
  past.offset = 220;  // bytes [220, 260) of 256
  require_status(axl_queue_copy_layout(q.get(), dst.get(), &past, src.get(), &s10), AXL_ERROR_OUT_OF_RANGE,
                 {"destination", "256-byte"});
  require_status(axl_queue_copy_layout(q.get(), dst.get(), &s10, src.get(), &past), AXL_ERROR_OUT_OF_RANGE,
                 {"source"});
  axl_layout below = make_layout(4, {3});
  below.strides[0] = -4;
  below.offset = 4;  // elements at 4, 0, -4
  axl_layout s3 = make_layout(4, {3});
  require_status(axl_queue_copy_layout(q.get(), dst.get(), &below, src.get(), &s3), AXL_ERROR_OUT_OF_RANGE,
                 {"destination"});
  require_status(axl_queue_copy_layout(q.get(), dst.get(), &s3, src.get(), &below), AXL_ERROR_OUT_OF_RANGE,
                 {"source"});
  below.offset = 8;  // 8, 4, 0: fits exactly
  check_copy_layout(q, dst, s3, src, below);
  before = read_back(q, dst);
  axl_layout neg = make_layout(4, {1});
  neg.shape[0] = -1;
  CHECK(axl_queue_copy_layout(q.get(), dst.get(), &neg, src.get(), &s10) == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(axl_queue_copy_layout(q.get(), dst.get(), nullptr, src.get(), &s10) == AXL_ERROR_INVALID_ARGUMENT);
  q.synchronize();
  CHECK(read_back(q, dst) == before);
}

TEST_CASE("copy_layout: layouts whose byte spans overflow are refused", "[copy_layout]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.create_queue();
  axl::Buffer buf = filled(cpu, q, 4096, 15);
  auto before = read_back(q, buf);
  axl_layout four = make_layout(1, {4});
  // (4 - 1) * 2^62 bytes: the span of the layout overflows an int64.
  axl_layout huge_stride = make_layout(1, {4});
  huge_stride.strides[0] = int64_t(1) << 62;
  require_status(axl_queue_copy_layout(q.get(), buf.get(), &huge_stride, buf.get(), &four), AXL_ERROR_OUT_OF_RANGE,
                 {"destination"});
  huge_stride.strides[0] = -(int64_t(1) << 62);
  huge_stride.offset = 8;
  require_status(axl_queue_copy_layout(q.get(), buf.get(), &four, buf.get(), &huge_stride), AXL_ERROR_OUT_OF_RANGE,
                 {"source"});
  // An offset near 2^64: its end wraps past zero.
  axl_layout far = make_layout(1, {4});
  far.offset = ~uint64_t(0) - 1;
  require_status(axl_queue_copy_layout(q.get(), buf.get(), &far, buf.get(), &four), AXL_ERROR_OUT_OF_RANGE,
                 {"destination"});
  q.synchronize();
  CHECK((read_back(q, buf) == before));
}

TEST_CASE("copy_layout: element counts past 2^64 are refused", "[copy_layout]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.create_queue();
  axl::Buffer buf = filled(cpu, q, 4096, 16);
  auto before = read_back(q, buf);
  // 2^32 * 2^32 * 4 elements (all at byte 0): the count wraps to 0 in 64
  // bits, which must not pass for an empty copy.
  axl_layout wraps = make_layout(1, {1, 1, 4});
  wraps.shape[0] = wraps.shape[1] = int64_t(1) << 32;
  wraps.strides[0] = wraps.strides[1] = wraps.strides[2] = 0;
  axl_layout none = make_layout(1, {0});
  axl_status s = axl_queue_copy_layout(q.get(), buf.get(), &wraps, buf.get(), &none);
  INFO("copy of 2^66 elements from 0 elements returned " << axl_status_name(s) << ": " << axl_last_error_message());
  CHECK(s != AXL_SUCCESS);
  q.synchronize();
  CHECK((read_back(q, buf) == before));
}

// ================================================================ hazards ==

TEST_CASE("buffer flags", "[hazard]") {
  axl::Device cpu = axl::Device::cpu();
  uint32_t f = 99;
  axl::Buffer plain = cpu.allocate(64);
  REQUIRE(axl_buffer_flags(plain.get(), &f) == AXL_SUCCESS);
  CHECK(f == 0);
  axl::Buffer t = cpu.allocate(64, AXL_BUFFER_FLAG_TRACKED);
  REQUIRE(axl_buffer_flags(t.get(), &f) == AXL_SUCCESS);
  CHECK(f == AXL_BUFFER_FLAG_TRACKED);
  axl::Buffer pt = cpu.allocate(64, AXL_BUFFER_FLAG_TRACKED | AXL_BUFFER_FLAG_PINNED);
  REQUIRE(axl_buffer_flags(pt.get(), &f) == AXL_SUCCESS);
  CHECK(f == (AXL_BUFFER_FLAG_TRACKED | AXL_BUFFER_FLAG_PINNED));
  axl::Buffer v = pt.view(16, 16);
  f = 0;
  REQUIRE(axl_buffer_flags(v.get(), &f) == AXL_SUCCESS);
  CHECK(f == (AXL_BUFFER_FLAG_TRACKED | AXL_BUFFER_FLAG_PINNED));
  axl_buffer_t out = nullptr;
  require_status(axl_buffer_create(cpu.get(), 64, 1u << 5, &out), AXL_ERROR_INVALID_ARGUMENT, {"0x20"});
  CHECK(out == nullptr);
  CHECK(axl_buffer_flags(t.get(), nullptr) == AXL_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("completions: record, query, wait, poison", "[hazard][threads]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.create_queue();
  axl::Flag gate = cpu.create_flag();
  q.wait_flag(gate, 1);
  axl_completion_t c = nullptr;
  REQUIRE(axl_completion_record(q.get(), &c) == AXL_SUCCESS);
  CHECK(axl_completion_query(c) == AXL_ERROR_NOT_READY);
  {
    Watchdog w(gate, 200ms);
    auto t0 = std::chrono::steady_clock::now();
    CHECK(axl_completion_wait(c) == AXL_SUCCESS);
    w.check_waited();
    CHECK(ms_since(t0) >= 150);
  }
  CHECK(axl_completion_query(c) == AXL_SUCCESS);
  CHECK(axl_completion_wait(c) == AXL_SUCCESS);
  // A failure reported later outranks the completed event.
  REQUIRE(axl_completion_poison(c, "producer failed: disk on fire") == AXL_SUCCESS);
  CHECK(axl_completion_query(c) == AXL_SUCCESS);
  require_status(axl_completion_wait(c), AXL_ERROR_HOST_HAZARD, {"producer failed: disk on fire"});
  CHECK(axl_completion_poison(c, nullptr) == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(axl_completion_retain(c) == AXL_SUCCESS);
  CHECK(axl_completion_release(c) == AXL_SUCCESS);
  CHECK(axl_completion_release(c) == AXL_SUCCESS);

  axl_completion_t p = nullptr;
  REQUIRE(axl_completion_create_poisoned("never produced", &p) == AXL_SUCCESS);
  CHECK(axl_completion_query(p) == AXL_SUCCESS);
  axl_clear_last_error();
  CHECK(axl_completion_wait(p) == AXL_ERROR_HOST_HAZARD);
  CHECK(std::string(axl_last_error_message()) == "never produced");
  CHECK(axl_completion_release(p) == AXL_SUCCESS);
  CHECK(axl_completion_create_poisoned(nullptr, &p) == AXL_ERROR_INVALID_ARGUMENT);
  // A poisoned completion of a queue still blocked: wait fails at once.
  q.wait_flag(gate, 2);
  REQUIRE(axl_completion_record(q.get(), &c) == AXL_SUCCESS);
  CHECK(axl_completion_query(c) == AXL_ERROR_NOT_READY);
  REQUIRE(axl_completion_poison(c, "cancelled") == AXL_SUCCESS);
  auto t0 = std::chrono::steady_clock::now();
  require_status(axl_completion_wait(c), AXL_ERROR_HOST_HAZARD, {"cancelled"});
  CHECK(ms_since(t0) < 1000);
  gate.signal(2);
  q.synchronize();
  CHECK(axl_completion_release(c) == AXL_SUCCESS);
}

TEST_CASE("stamps: a write replaces the writer and forgets the readers", "[hazard]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.create_queue();
  axl::Buffer b = cpu.allocate(64, AXL_BUFFER_FLAG_TRACKED);
  axl::Buffer v = b.view(32, 32);
  axl_completion_t bad = nullptr, good = nullptr;
  REQUIRE(axl_completion_create_poisoned("reader failed", &bad) == AXL_SUCCESS);
  REQUIRE(axl_completion_record(q.get(), &good) == AXL_SUCCESS);
  q.synchronize();

  CHECK(axl_buffer_host_wait(b.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
  CHECK(axl_buffer_host_wait(b.get(), AXL_ACCESS_WRITE) == AXL_SUCCESS);
  // A poisoned reader: host reads need only the writer, host writes wait for
  // readers too. Stamped through a view, seen through the allocation.
  REQUIRE(axl_buffer_stamp(v.get(), bad, AXL_ACCESS_READ) == AXL_SUCCESS);
  CHECK(axl_buffer_host_wait(b.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
  require_status(axl_buffer_host_wait(b.get(), AXL_ACCESS_WRITE), AXL_ERROR_HOST_HAZARD, {"reader failed"});
  // A write forgets the readers.
  REQUIRE(axl_buffer_stamp(b.get(), good, AXL_ACCESS_WRITE) == AXL_SUCCESS);
  CHECK(axl_buffer_host_wait(v.get(), AXL_ACCESS_WRITE) == AXL_SUCCESS);
  // A poisoned writer blocks reads; a later good writer replaces it.
  REQUIRE(axl_buffer_stamp(b.get(), bad, AXL_ACCESS_WRITE) == AXL_SUCCESS);
  require_status(axl_buffer_host_wait(b.get(), AXL_ACCESS_READ), AXL_ERROR_HOST_HAZARD, {"reader failed"});
  REQUIRE(axl_buffer_stamp(b.get(), good, AXL_ACCESS_WRITE) == AXL_SUCCESS);
  CHECK(axl_buffer_host_wait(b.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
  // WRITE|READ: stamped as the writer, then a reader.
  REQUIRE(axl_buffer_stamp(b.get(), bad, AXL_ACCESS_WRITE | AXL_ACCESS_READ) == AXL_SUCCESS);
  CHECK(axl_buffer_host_wait(b.get(), AXL_ACCESS_READ) == AXL_ERROR_HOST_HAZARD);
  REQUIRE(axl_buffer_stamp(b.get(), good, AXL_ACCESS_WRITE) == AXL_SUCCESS);
  CHECK(axl_buffer_host_wait(b.get(), AXL_ACCESS_WRITE) == AXL_SUCCESS);

  // Untracked buffers ignore stamps.
  axl::Buffer u = cpu.allocate(64);
  CHECK(axl_buffer_stamp(u.get(), bad, AXL_ACCESS_WRITE) == AXL_SUCCESS);
  CHECK(axl_buffer_host_wait(u.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
  CHECK(axl_buffer_host_wait(u.get(), AXL_ACCESS_WRITE) == AXL_SUCCESS);
  // Many readers (the record prunes finished ones) and all are waited for.
  for (int i = 0; i < 40; ++i) {
    axl_completion_t r = nullptr;
    REQUIRE(axl_completion_record(q.get(), &r) == AXL_SUCCESS);
    REQUIRE(axl_buffer_stamp(b.get(), r, AXL_ACCESS_READ) == AXL_SUCCESS);
    axl_completion_release(r);
  }
  REQUIRE(axl_buffer_stamp(b.get(), bad, AXL_ACCESS_READ) == AXL_SUCCESS);
  CHECK(axl_buffer_host_wait(b.get(), AXL_ACCESS_WRITE) == AXL_ERROR_HOST_HAZARD);
  CHECK(axl_buffer_stamp(b.get(), nullptr, AXL_ACCESS_READ) == AXL_ERROR_INVALID_HANDLE);
  require_status(axl_buffer_stamp(b.get(), good, 0), AXL_ERROR_INVALID_ARGUMENT, {"access 0x0"});
  require_status(axl_buffer_host_wait(b.get(), 4), AXL_ERROR_INVALID_ARGUMENT, {"access 0x4"});
  CHECK(axl_buffer_host_wait(nullptr, AXL_ACCESS_READ) == AXL_ERROR_INVALID_HANDLE);
  axl_completion_release(bad);
  axl_completion_release(good);
}

TEST_CASE("automatic stamps: host_wait waits for the copy, fill and launch that wrote", "[hazard][threads]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.create_queue();
  axl::Buffer b = cpu.allocate(1024, AXL_BUFFER_FLAG_TRACKED);
  auto* p = static_cast<unsigned char*>(b.host_pointer());
  auto data = random_bytes(1024, 9);

  SECTION("copy_from_host behind a gate") {
    axl::Flag gate = cpu.create_flag();
    q.wait_flag(gate, 1);
    q.copy_from_host(b, data.data(), data.size());
    Watchdog w(gate, 200ms);
    REQUIRE(axl_buffer_host_wait(b.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    w.check_waited();
    CHECK(std::equal(data.begin(), data.end(), p));
  }
  SECTION("fill behind a gate") {
    axl::Flag gate = cpu.create_flag();
    q.wait_flag(gate, 1);
    q.fill(b, 0xabcd1234u, 4);
    Watchdog w(gate, 200ms);
    REQUIRE(axl_buffer_host_wait(b.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    w.check_waited();
    uint32_t v = 0;
    memcpy(&v, p + 1020, 4);
    CHECK(v == 0xabcd1234u);
  }
  SECTION("copy_layout into a tracked buffer behind a gate") {
    axl::Buffer src = filled(cpu, q, 1024, 10);
    auto s = read_back(q, src);
    axl::Flag gate = cpu.create_flag();
    q.wait_flag(gate, 1);
    axl_layout col = index_ok(make_layout(4, {64, 4}), {slice({}, {}), at(2)});
    axl_layout d = make_layout(4, {64});
    REQUIRE(axl_queue_copy_layout(q.get(), b.get(), &d, src.get(), &col) == AXL_SUCCESS);
    Watchdog w(gate, 200ms);
    REQUIRE(axl_buffer_host_wait(b.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    w.check_waited();
    for (int i = 0; i < 64; ++i) CHECK(memcmp(p + 4 * i, s.data() + 16 * i + 8, 4) == 0);
  }
  SECTION("a launch counts as a write of its buffer arguments") {
    axl::Kernel k = cpu.test_kernel(AXL_TEST_KERNEL_FILL_U32);
    axl::Flag gate = cpu.create_flag();
    const uint32_t n = 256, value = 0x600dcafe;
    q.wait_flag(gate, 1);
    q.launch(k, {1, 1, 1}, {32, 1, 1}, {axl::Arg::buffer(b), axl::Arg::scalar(n), axl::Arg::scalar(value)});
    Watchdog w(gate, 200ms);
    REQUIRE(axl_buffer_host_wait(b.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    w.check_waited();
    std::vector<uint32_t> words(n);
    memcpy(words.data(), p, 4 * n);
    CHECK(std::all_of(words.begin(), words.end(), [&](uint32_t x) { return x == value; }));
  }
  SECTION("a read of the buffer: host WRITE waits, host READ does not") {
    q.copy_from_host(b, data.data(), data.size());
    q.synchronize();
    axl::Queue q2 = cpu.create_queue();
    axl::Flag gate = cpu.create_flag();
    std::vector<unsigned char> out(1024, 0);
    q2.wait_flag(gate, 1);
    q2.copy_to_host(out.data(), b, 1024);
    Watchdog w(gate, 300ms);
    check_read_within(b, 250);
    REQUIRE(axl_buffer_host_wait(b.get(), AXL_ACCESS_WRITE) == AXL_SUCCESS);
    w.check_waited();
    CHECK(out == data);  // the reader finished before the host may write
  }
  SECTION("a host read does not wait for a later, slow host callback") {
    static std::atomic<bool> go{false};
    go = false;
    q.copy_from_host(b, data.data(), data.size());
    q.enqueue_host_func(
        [](void*) {
          auto until = std::chrono::steady_clock::now() + 5s;
          while (!go.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
        },
        nullptr);
    check_read_within(b, 2500);
    CHECK(std::equal(data.begin(), data.end(), p));
    go = true;
    q.synchronize();
  }
  SECTION("a host read does not wait for later work on the queue") {
    axl::Flag gate = cpu.create_flag();
    q.copy_from_host(b, data.data(), data.size());
    q.wait_flag(gate, 1);
    axl::Buffer other = cpu.allocate(1024);
    q.fill(other, 7, 1);
    Watchdog w(gate, 5000ms);
    check_read_within(b, 2500);
    CHECK(std::equal(data.begin(), data.end(), p));
    w.fire_now();
    q.synchronize();
  }
}

TEST_CASE("a copy on another queue waits for a tracked source's pending writer", "[hazard][threads]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue producer = cpu.create_queue(), consumer = cpu.create_queue();
  axl::Buffer src = cpu.allocate(1024, AXL_BUFFER_FLAG_TRACKED);
  axl::Buffer dst = cpu.allocate(1024, AXL_BUFFER_FLAG_TRACKED);
  auto old_bytes = random_bytes(1024, 21), new_bytes = random_bytes(1024, 22);
  memcpy(src.host_pointer(), old_bytes.data(), 1024);
  // The producer writes src only once the gate opens; the consumer's copy
  // out of src, enqueued meanwhile, must see the new bytes, not the old.
  axl::Flag gate = cpu.create_flag();
  producer.wait_flag(gate, 1);
  producer.copy_from_host(src, new_bytes.data(), new_bytes.size());
  const axl_layout whole = make_layout(1, {1024});
  REQUIRE(axl_queue_copy_layout(consumer.get(), dst.get(), &whole, src.get(), &whole) == AXL_SUCCESS);
  Watchdog w(gate, 200ms);
  REQUIRE(axl_buffer_host_wait(dst.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
  w.check_waited();
  auto* got = static_cast<unsigned char*>(dst.host_pointer());
  CHECK(std::equal(new_bytes.begin(), new_bytes.end(), got));
  producer.synchronize();
  consumer.synchronize();
}

TEST_CASE("host_wait from several threads sharing one queue", "[hazard][threads]") {
  // Each thread writes its own tracked buffer through the shared queue and
  // reads it back after host_wait: stamps of concurrent enqueues must each
  // cover their own op.
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.create_queue();
  constexpr int kThreads = 4, kIters = 200;
  constexpr size_t kBytes = 4096;
  std::atomic<int> wrong{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      axl_buffer_t b = nullptr;
      if (axl_buffer_create(cpu.get(), kBytes, AXL_BUFFER_FLAG_TRACKED, &b) != AXL_SUCCESS) {
        errors.fetch_add(1);
        return;
      }
      void* host = nullptr;
      axl_buffer_host_pointer(b, &host);
      std::vector<unsigned char> src(kBytes);
      for (int i = 0; i < kIters; ++i) {
        std::fill(src.begin(), src.end(), static_cast<unsigned char>(t * 50 + i % 50));
        if (axl_queue_copy_from_host(q.get(), b, 0, src.data(), kBytes) != AXL_SUCCESS ||
            axl_buffer_host_wait(b, AXL_ACCESS_READ) != AXL_SUCCESS) {
          errors.fetch_add(1);
          break;
        }
        if (memcmp(host, src.data(), kBytes) != 0) wrong.fetch_add(1);
        // The host write must not overtake a pending reader either.
        if (axl_buffer_host_wait(b, AXL_ACCESS_WRITE) != AXL_SUCCESS) errors.fetch_add(1);
      }
      axl_buffer_release(b);
    });
  for (auto& th : threads) th.join();
  q.synchronize();
  CHECK(errors.load() == 0);
  CHECK(wrong.load() == 0);
}

// ============================================================ copy_batch ==

TEST_CASE("copy_batch on cpu: values, skipped pairs, all-or-nothing", "[copy_batch]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.default_queue();
  axl::Buffer a = filled(cpu, q, 512, 21), b = filled(cpu, q, 512, 22), c = filled(cpu, q, 512, 23);

  SECTION("equals a loop of copies") {
    auto ra = read_back(q, a), rb = read_back(q, b), rc = read_back(q, c);
    std::vector<axl_copy_desc> d = {
        {b.get(), 0, a.get(), 100, 64},  {c.get(), 200, a.get(), 0, 300}, {a.get(), 400, b.get(), 8, 100},
        {b.get(), 0, a.get(), 100, 64},  // a repeat
        {c.get(), 0, c.get(), 0, 128},   // identity
        {b.get(), 500, c.get(), 0, 0},   // zero bytes
    };
    // The reference: the same copies one after another.
    auto cp = [](std::vector<unsigned char>& to, uint64_t to_off, const std::vector<unsigned char>& from,
                 uint64_t from_off, uint64_t n) { memmove(to.data() + to_off, from.data() + from_off, n); };
    cp(rb, 0, ra, 100, 64);
    cp(rc, 200, ra, 0, 300);
    cp(ra, 400, rb, 8, 100);
    REQUIRE(axl_copy_batch(d.data(), d.size()) == AXL_SUCCESS);
    q.synchronize();
    CHECK(read_back(q, a) == ra);
    CHECK(read_back(q, b) == rb);
    CHECK(read_back(q, c) == rc);
    CHECK(axl_copy_batch(nullptr, 0) == AXL_SUCCESS);
  }
  SECTION("a bad pair enqueues nothing") {
    auto rb = read_back(q, b), rc = read_back(q, c);
    std::vector<axl_copy_desc> d = {
        {b.get(), 0, a.get(), 0, 256},
        {c.get(), 400, a.get(), 0, 200},  // past c's end
    };
    require_status(axl_copy_batch(d.data(), d.size()), AXL_ERROR_OUT_OF_RANGE, {"copy 1"});
    q.synchronize();
    CHECK(read_back(q, b) == rb);
    CHECK(read_back(q, c) == rc);
    d = {{b.get(), 0, a.get(), 0, 256}, {c.get(), 0, nullptr, 0, 16}};
    CHECK(axl_copy_batch(d.data(), d.size()) == AXL_ERROR_INVALID_HANDLE);
    d = {{b.get(), 0, a.get(), 0, 256}, {c.get(), 0, a.get(), 510, 16}};
    CHECK(axl_copy_batch(d.data(), d.size()) == AXL_ERROR_OUT_OF_RANGE);
    q.synchronize();
    CHECK(read_back(q, b) == rb);
    CHECK(axl_copy_batch(nullptr, 2) == AXL_ERROR_INVALID_ARGUMENT);
  }
  SECTION("pairs of one device run in order") {
    auto ra = read_back(q, a);
    // b <- a, then c <- b: c sees a's bytes.
    std::vector<axl_copy_desc> d = {{b.get(), 0, a.get(), 0, 512}, {c.get(), 0, b.get(), 0, 512}};
    REQUIRE(axl_copy_batch(d.data(), d.size()) == AXL_SUCCESS);
    q.synchronize();
    CHECK((read_back(q, c) == ra));
  }
  SECTION("tracked destinations and sources are stamped") {
    axl::Buffer t = cpu.allocate(512, AXL_BUFFER_FLAG_TRACKED);
    axl::Buffer ts = filled(cpu, q, 512, 24, AXL_BUFFER_FLAG_TRACKED);
    axl::Flag gate = cpu.create_flag();
    q.wait_flag(gate, 1);
    std::vector<axl_copy_desc> d = {{t.get(), 0, a.get(), 0, 512}, {b.get(), 0, ts.get(), 0, 512}};
    REQUIRE(axl_copy_batch(d.data(), d.size()) == AXL_SUCCESS);
    Watchdog w(gate, 200ms);
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(axl_buffer_host_wait(ts.get(), AXL_ACCESS_READ) == AXL_SUCCESS);  // only read by the batch
    CHECK(ms_since(t0) < 150);
    REQUIRE(axl_buffer_host_wait(ts.get(), AXL_ACCESS_WRITE) == AXL_SUCCESS);  // waits for that read
    CHECK(ms_since(t0) >= 150);
    REQUIRE(axl_buffer_host_wait(t.get(), AXL_ACCESS_READ) == AXL_SUCCESS);
    w.check_waited();
    CHECK(memcmp(t.host_pointer(), a.host_pointer(), 512) == 0);
  }
}

// ======================================================= external buffers ==

namespace {
struct ReleaseProbe {
  std::atomic<int> calls{0};
  std::atomic<int> first_value{-1};
  const unsigned char* watch = nullptr;
};
void on_release(void* u) {
  auto* r = static_cast<ReleaseProbe*>(u);
  if (r->watch) r->first_value.store(r->watch[0]);
  r->calls.fetch_add(1);
}
}  // namespace

TEST_CASE("external buffers wrap host memory on cpu", "[external][threads]") {
  axl::Device cpu = axl::Device::cpu();
  axl::Queue q = cpu.create_queue();
  std::vector<unsigned char> mem(256, 0);
  ReleaseProbe probe;
  probe.watch = mem.data();
  const uint64_t addr = reinterpret_cast<uint64_t>(mem.data());

  SECTION("address, host pointer, size, copies land in the memory") {
    axl_buffer_t raw = nullptr;
    REQUIRE(axl_buffer_create_external(cpu.get(), addr, mem.data(), 256, AXL_BUFFER_FLAG_NONE, on_release, &probe,
                                       &raw) == AXL_SUCCESS);
    axl::Buffer b(raw);
    CHECK(b.device_address() == addr);
    CHECK(b.host_pointer() == mem.data());
    CHECK(b.size() == 256);
    uint32_t f = 9;
    REQUIRE(axl_buffer_flags(b.get(), &f) == AXL_SUCCESS);
    CHECK(f == 0);
    auto data = random_bytes(256, 31);
    q.copy_from_host(b, data.data(), 256);
    q.synchronize();
    CHECK(mem == data);
    // A view keeps it alive: the callback runs once, after the last release.
    axl::Buffer v = b.view(128, 64);
    CHECK(v.host_pointer() == mem.data() + 128);
    b = axl::Buffer();
    CHECK(probe.calls.load() == 0);
    v = axl::Buffer();
    // The release itself runs on the core's reaper thread once the queue
    // that used the memory has caught up.
    CHECK(eventually([&] { return probe.calls.load() == 1; }));
  }
  SECTION("the callback runs after pending work") {
    axl_buffer_t raw = nullptr;
    REQUIRE(axl_buffer_create_external(cpu.get(), addr, mem.data(), 256, AXL_BUFFER_FLAG_TRACKED, on_release,
                                       &probe, &raw) == AXL_SUCCESS);
    axl::Flag gate = cpu.create_flag();
    q.wait_flag(gate, 1);
    std::vector<unsigned char> ones(256, 0x5a);
    REQUIRE(axl_queue_copy_from_host(q.get(), raw, 0, ones.data(), 256) == AXL_SUCCESS);
    Watchdog w(gate, 200ms);
    // Releasing does not block behind the gate (it is the watchdog's job to
    // open it: a blocking release would deadlock a single-threaded caller).
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(axl_buffer_release(raw) == AXL_SUCCESS);
    CHECK(std::chrono::steady_clock::now() - t0 < 150ms);
    CHECK(probe.calls.load() == 0);  // the copy has not run yet
    w.join();
    q.synchronize();
    CHECK(eventually([&] { return probe.calls.load() == 1; }));
    CHECK(probe.first_value.load() == 0x5a);  // the copy had landed when it ran
  }
  SECTION("errors call nothing and keep nothing") {
    axl_buffer_t raw = nullptr;
    require_status(axl_buffer_create_external(cpu.get(), 0, nullptr, 256, 0, on_release, &probe, &raw),
                   AXL_ERROR_INVALID_ARGUMENT, {"address"});
    require_status(axl_buffer_create_external(cpu.get(), addr, mem.data(), 0, 0, on_release, &probe, &raw),
                   AXL_ERROR_INVALID_ARGUMENT, {"size"});
    require_status(axl_buffer_create_external(cpu.get(), addr, mem.data() + 1, 256, 0, on_release, &probe, &raw),
                   AXL_ERROR_INVALID_ARGUMENT, {"must equal"});
    require_status(axl_buffer_create_external(cpu.get(), addr, nullptr, 256, 0, on_release, &probe, &raw),
                   AXL_ERROR_INVALID_ARGUMENT, {"must equal"});
    require_status(axl_buffer_create_external(cpu.get(), addr, mem.data(), 256, 1u << 9, on_release, &probe, &raw),
                   AXL_ERROR_INVALID_ARGUMENT, {"flags"});
    CHECK(axl_buffer_create_external(cpu.get(), addr, mem.data(), 256, 0, on_release, &probe, nullptr) ==
          AXL_ERROR_INVALID_ARGUMENT);
    CHECK(raw == nullptr);
    CHECK(probe.calls.load() == 0);
    // A NULL callback is allowed.
    REQUIRE(axl_buffer_create_external(cpu.get(), addr, mem.data(), 256, 0, nullptr, nullptr, &raw) == AXL_SUCCESS);
    CHECK(axl_buffer_release(raw) == AXL_SUCCESS);
  }
}
