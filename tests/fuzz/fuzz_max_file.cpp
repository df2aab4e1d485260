// libFuzzer target for axl_max_file_parse. Beyond "no crash, no out-of-bounds
// read" (ASan), it checks what a caller relies on:
//  * a successful parse describes data that lies inside the file, with a
//    consistent shape, element count and byte count;
//  * a whole file never yields AXL_ERROR_OUT_OF_RANGE (that status only asks
//    for more of a prefix);
//  * reading the file as a binding does, from a short prefix growing by
//    header_bytes each time, ends in the same result as parsing it whole.
// Any broken property aborts, which libFuzzer (and the replay test) report.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "axl/axl.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_max_file: property broken: %s (last error: %s)\n", what,
                 axl_last_error_message());
    std::abort();
  }
}

void check_header(const axl_max_file_header& h, uint64_t size) {
  require(h.version_major == 0, "version_major == 0");
  require(h.rank <= AXL_MAX_FILE_MAX_RANK, "rank <= 255");
  require(h.header_bytes <= size, "header inside the file");
  require(h.key_offset + h.key_size <= h.header_bytes, "key inside the header");
  uint32_t bits = 0;
  require(axl_dtype_size_bits(h.dtype, &bits) == AXL_SUCCESS && bits == h.dtype_size_bits, "known dtype");
  // Recompute the element count; with a zero extent it is 0.
  uint64_t n = 1;
  bool zero = false, overflow = false;
  for (uint32_t i = 0; i < h.rank; ++i) {
    zero = zero || h.dims[i] == 0;
    overflow = overflow || __builtin_mul_overflow(n, h.dims[i], &n);
  }
  for (uint32_t i = h.rank; i < AXL_MAX_FILE_MAX_RANK; ++i) require(h.dims[i] == 0, "dims past rank are 0");
  require(zero ? h.num_elements == 0 : !overflow && h.num_elements == n, "num_elements is the product of dims");
  require(h.data_bytes == h.num_elements * ((bits + 7) / 8), "data_bytes = elements * element bytes");
  require(h.data_offset <= size && h.data_bytes <= size - h.data_offset, "data inside the file");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  axl_max_file_header whole{};
  whole.struct_size = sizeof whole;
  const axl_status s = axl_max_file_parse(data, size, size, &whole);
  require(s == AXL_SUCCESS || s == AXL_ERROR_INVALID_ARGUMENT, "whole file: success or INVALID_ARGUMENT");
  if (s == AXL_SUCCESS) check_header(whole, size);
  else require(axl_last_error_message()[0] != '\0', "an error has a message");

  // A binding's read loop: start with a few bytes, read what the parser asks.
  uint64_t have = size < 16 ? size : 16 + data[0] % 32;
  if (have > size) have = size;
  axl_max_file_header part{};
  axl_status p;
  for (int round = 0;; ++round) {
    require(round < 8, "the header is read in a few rounds");
    part = axl_max_file_header{};
    part.struct_size = sizeof part;
    p = axl_max_file_parse(data, have, size, &part);
    if (p != AXL_ERROR_OUT_OF_RANGE) break;
    require(part.header_bytes > have && part.header_bytes <= size, "OUT_OF_RANGE asks for more, within the file");
    have = part.header_bytes;
  }
  require(p == s, "a prefix read ends like the whole file");
  if (s == AXL_SUCCESS) require(std::memcmp(&part, &whole, sizeof part) == 0, "same header from a prefix");
  return 0;
}
