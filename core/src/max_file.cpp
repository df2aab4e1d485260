// Parser of MAX's .max checkpoint header (spec section 8). The file comes
// from disk, so every field is hostile until checked: each read is bounds-
// checked against the bytes we were given, each size computation against
// 64-bit overflow, and the data range against the file size. Integers are
// decoded little-endian byte by byte (the format is a native-endian memory
// dump from little-endian hosts), so no unaligned loads either.
#include <cinttypes>
#include <cstring>

#include "internal.hpp"

using namespace axl::core;

namespace {

// The struct is ABI: no hidden padding, fixed size on LP64.
static_assert(sizeof(size_t) != 8 || sizeof(axl_max_file_header) == 8 + 6 * 4 + 6 * 8 + 255 * 8,
              "axl_max_file_header layout changed");

constexpr uint8_t kMagic[8] = {0x93, 0xF0, 0x9F, 0x94, 0xA5, 0x2B, 0x2B, 0x93};

// Fixed part before the key: magic, major, minor, metadata_size, key_size.
constexpr uint64_t kFixedBytes = 8 + 4 + 4 + 8 + 4;

class Reader {
 public:
  Reader(const uint8_t* bytes, uint64_t size, uint64_t file_size, axl_max_file_header& out)
      : bytes_(bytes), size_(size), file_size_(file_size), out_(out) {}

  // Succeeds when bytes [0, end) are available; `what` names the field that
  // ends at `end` for the message.
  axl_status need(uint64_t end, const char* what) const {
    if (end > file_size_)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "truncated header: the file is %" PRIu64 " bytes long but its %s ends at byte %" PRIu64,
                  file_size_, what, end);
    if (end > size_) {
      out_.header_bytes = end;
      return fail(AXL_ERROR_OUT_OF_RANGE,
                  "the first %" PRIu64 " bytes of the file do not hold its %s, which ends at byte %" PRIu64
                  "; pass at least that many",
                  size_, what, end);
    }
    return AXL_SUCCESS;
  }

  uint64_t le(uint64_t at, unsigned n) const {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) v |= uint64_t{bytes_[at + i]} << (8 * i);
    return v;
  }

 private:
  const uint8_t* bytes_;
  uint64_t size_, file_size_;
  axl_max_file_header& out_;
};

std::string hex_bytes(const uint8_t* p, uint64_t n) {
  std::string s;
  char b[4];
  for (uint64_t i = 0; i < n; ++i) {
    snprintf(b, sizeof b, i ? " %02X" : "%02X", p[i]);
    s += b;
  }
  return s;
}

axl_status check_magic(const uint8_t* bytes, uint64_t file_size, const Reader& r) {
  // MAX's text, so that the binding can put the path in front of it.
  static const char* kNotMax =
      "the file is not a max checkpoint. If this file was saved from the \"BINARY\" debug print "
      "option (and not \"BINARY_MAX_CHECKPOINT\"), please initialize `Buffer.mmap` directly.";
  if (file_size < sizeof kMagic)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "%s (It is %" PRIu64 " bytes long; a .max file starts with the 8 bytes "
                "93 F0 9F 94 A5 2B 2B 93.)",
                kNotMax, file_size);
  if (axl_status s = r.need(sizeof kMagic, "magic")) return s;
  if (std::memcmp(bytes, kMagic, sizeof kMagic) != 0)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "%s (Its first bytes are %s; a .max file starts with 93 F0 9F 94 A5 2B 2B 93.)", kNotMax,
                hex_bytes(bytes, sizeof kMagic).c_str());
  return AXL_SUCCESS;
}

axl_status parse(const uint8_t* bytes, uint64_t size, uint64_t file_size, axl_max_file_header& h) {
  Reader r(bytes, size, file_size, h);
  if (axl_status s = check_magic(bytes, file_size, r)) return s;

  if (axl_status s = r.need(16, "version")) return s;
  h.version_major = static_cast<uint32_t>(r.le(8, 4));
  h.version_minor = static_cast<uint32_t>(r.le(12, 4));
  if (h.version_major > 0)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "Unable to read from version > 0. (The file is version %u.%u; axl reads version 0.x.)",
                h.version_major, h.version_minor);

  if (axl_status s = r.need(kFixedBytes, "metadata size and key size")) return s;
  const uint64_t metadata_size = r.le(16, 8);
  h.key_size = r.le(24, 4);
  h.key_offset = kFixedBytes;

  // The u32 key size keeps these sums far from overflowing.
  const uint64_t dtype_at = kFixedBytes + h.key_size;
  if (axl_status s = r.need(dtype_at + 2, "key, dtype and rank")) return s;
  h.dtype = static_cast<uint32_t>(r.le(dtype_at, 1));
  h.rank = static_cast<uint32_t>(r.le(dtype_at + 1, 1));
  // MAX fails here too, in DType(code), before reading the shape.
  if (axl_status s = axl_dtype_size_bits(h.dtype, &h.dtype_size_bits)) return s;

  const uint64_t dims_at = dtype_at + 2;
  const uint64_t offset_at = dims_at + 4 * uint64_t{h.rank};
  if (axl_status s = r.need(offset_at + 8, "shape and data offset")) return s;
  for (uint32_t i = 0; i < h.rank; ++i) h.dims[i] = r.le(dims_at + 4 * uint64_t{i}, 4);
  h.data_offset = r.le(offset_at, 8);
  h.header_bytes = offset_at + 8;

  // What MAX's writer stores for a single tensor; anything else MAX reads as
  // "more than one buffer" (spec 8.2 step 5).
  const uint64_t expected = 4 + h.key_size + 2 + 4 * uint64_t{h.rank} + 8;
  if (metadata_size != expected)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "Multiple buffers found in .max file. This is currently not supported. (metadata_size is "
                "%" PRIu64 "; one tensor with a %" PRIu64 "-byte key and rank %u has %" PRIu64 ".)",
                metadata_size, h.key_size, h.rank, expected);

  // A zero extent anywhere makes the product 0, whatever the other extents.
  h.num_elements = 1;
  bool empty = false;
  for (uint32_t i = 0; i < h.rank; ++i) empty = empty || h.dims[i] == 0;
  if (empty) {
    h.num_elements = 0;
  } else {
    for (uint32_t i = 0; i < h.rank; ++i)
      if (__builtin_mul_overflow(h.num_elements, h.dims[i], &h.num_elements))
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    "the shape's element count overflows 64 bits at dimension %u (extent %" PRIu64 ")", i,
                    h.dims[i]);
  }
  const uint64_t elem_bytes = (h.dtype_size_bits + 7) / 8;
  if (__builtin_mul_overflow(h.num_elements, elem_bytes, &h.data_bytes))
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "the data size (%" PRIu64 " elements of %" PRIu64 " bytes) overflows 64 bits", h.num_elements,
                elem_bytes);

  if (h.data_offset > file_size || h.data_bytes > file_size - h.data_offset)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "the data (%" PRIu64 " elements of %s, %" PRIu64 " bytes, at offset %" PRIu64
                ") runs past the end of the file (%" PRIu64 " bytes)",
                h.num_elements, dtype_name(h.dtype), h.data_bytes, h.data_offset, file_size);
  return AXL_SUCCESS;
}

}  // namespace

extern "C" AXL_API axl_status axl_max_file_parse(const void* bytes, uint64_t size, uint64_t file_size,
                                                 axl_max_file_header* out) {
  return guard([&]() -> axl_status {
    if (!out) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_max_file_parse: out is NULL");
    if (out->struct_size < sizeof(axl_max_file_header))
      return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_max_file_parse: struct_size %zu, expected >= %zu",
                  out->struct_size, sizeof(axl_max_file_header));
    if (!bytes && size > 0) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_max_file_parse: bytes is NULL");
    if (size > file_size)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "axl_max_file_parse: size %" PRIu64 " is larger than file_size %" PRIu64
                  " (size is how many leading bytes of the file are given)",
                  size, file_size);
    // Filled privately and copied out only on success: a failed parse leaves
    // *out as it was, except header_bytes after AXL_ERROR_OUT_OF_RANGE.
    axl_max_file_header h{};
    h.struct_size = sizeof h;
    axl_status s = parse(static_cast<const uint8_t*>(bytes), size, file_size, h);
    if (s == AXL_ERROR_OUT_OF_RANGE) out->header_bytes = h.header_bytes;
    if (s != AXL_SUCCESS) return s;
    *out = h;
    return AXL_SUCCESS;
  });
}
