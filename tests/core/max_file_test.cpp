// axl_max_file_parse and axl_dtype_size_bits: MAX's .max layout (spec section
// 8), its worked example, and every malformed case with its message. The
// parser gets exact-size heap copies, so under ASan a read past the end of
// the given bytes fails the test.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "test_util.hpp"

using namespace axltest;

namespace {

// Writes a .max file as MAX's C++ writer does (spec 8.1); every field can be
// overridden to build malformed files.
struct MaxFile {
  std::vector<uint8_t> magic = {0x93, 0xF0, 0x9F, 0x94, 0xA5, 0x2B, 0x2B, 0x93};
  uint32_t major = 0, minor = 1;
  std::string key = "t";
  uint8_t dtype = 81;
  std::vector<uint32_t> dims = {2, 3};
  int64_t metadata_delta = 0;  // added to the correct metadata_size
  int64_t offset_delta = 0;    // added to the correct data offset
  uint64_t data_bytes = 24;

  uint64_t metadata_size() const { return 4 + key.size() + 1 + 1 + 4 * dims.size() + 8 + metadata_delta; }

  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> b(magic);
    auto put = [&](uint64_t v, int n) {
      for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
    };
    put(major, 4);
    put(minor, 4);
    put(metadata_size(), 8);
    put(key.size(), 4);
    b.insert(b.end(), key.begin(), key.end());
    put(dtype, 1);
    put(dims.size(), 1);
    for (uint32_t d : dims) put(d, 4);
    put(24 + metadata_size() + offset_delta, 8);
    for (uint64_t i = 0; i < data_bytes; ++i) b.push_back(static_cast<uint8_t>(i));
    return b;
  }
};

// Parses the first `size` bytes (all by default) of `file` from an exact-size
// heap copy.
axl_status parse(const std::vector<uint8_t>& file, axl_max_file_header& h, uint64_t size = UINT64_MAX) {
  if (size == UINT64_MAX) size = file.size();
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(copy.get(), file.data(), size);
  h.struct_size = sizeof h;
  return axl_max_file_parse(size ? copy.get() : nullptr, size, file.size(), &h);
}

void require_invalid(const MaxFile& f, std::initializer_list<std::string> parts) {
  axl_max_file_header h{};
  require_status(parse(f.bytes(), h), AXL_ERROR_INVALID_ARGUMENT, parts);
}

}  // namespace

TEST_CASE("the spec's worked example: float32 't' of shape [2, 3] is a 71-byte file") {
  MaxFile f;
  auto bytes = f.bytes();
  REQUIRE(bytes.size() == 71);
  axl_max_file_header h{};
  REQUIRE(parse(bytes, h) == AXL_SUCCESS);
  CHECK(h.struct_size == sizeof h);
  CHECK(h.version_major == 0);
  CHECK(h.version_minor == 1);
  CHECK(h.dtype == 81);
  CHECK(h.dtype_size_bits == 32);
  CHECK(h.rank == 2);
  CHECK(h.dims[0] == 2);
  CHECK(h.dims[1] == 3);
  CHECK(h.dims[2] == 0);
  CHECK(h.key_offset == 28);
  CHECK(h.key_size == 1);
  CHECK(bytes[h.key_offset] == 't');
  CHECK(h.header_bytes == 47);
  CHECK(h.num_elements == 6);
  CHECK(h.data_offset == 47);
  CHECK(h.data_bytes == 24);
}

TEST_CASE("rank 0, rank 255, empty shapes and long keys parse") {
  axl_max_file_header h{};
  SECTION("rank 0 is one element") {
    MaxFile f;
    f.dims = {};
    f.data_bytes = 4;
    REQUIRE(parse(f.bytes(), h) == AXL_SUCCESS);
    CHECK(h.rank == 0);
    CHECK(h.num_elements == 1);
    CHECK(h.data_bytes == 4);
    CHECK(h.data_offset == 39);
  }
  SECTION("rank 255, the format's largest") {
    MaxFile f;
    f.dims.assign(255, 1);
    f.dims[254] = 2;
    f.dtype = 80;  // bfloat16
    f.data_bytes = 4;
    REQUIRE(parse(f.bytes(), h) == AXL_SUCCESS);
    CHECK(h.rank == 255);
    CHECK(h.dims[254] == 2);
    CHECK(h.num_elements == 2);
    CHECK(h.data_bytes == 4);
  }
  SECTION("a zero extent makes 0 elements even beside extents whose product overflows") {
    MaxFile f;
    f.dims = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0};
    f.data_bytes = 0;
    REQUIRE(parse(f.bytes(), h) == AXL_SUCCESS);
    CHECK(h.num_elements == 0);
    CHECK(h.data_bytes == 0);
    CHECK(h.data_offset == f.bytes().size());
  }
  SECTION("an empty key and a long key") {
    for (size_t n : {size_t{0}, size_t{70000}}) {
      MaxFile f;
      f.key = std::string(n, 'k');
      REQUIRE(parse(f.bytes(), h) == AXL_SUCCESS);
      CHECK(h.key_size == n);
      CHECK(h.data_offset == 24 + 4 + n + 2 + 8 + 8);
    }
  }
  SECTION("the minor version is ignored, trailing bytes are allowed") {
    MaxFile f;
    f.minor = 12345;
    f.data_bytes = 30;
    REQUIRE(parse(f.bytes(), h) == AXL_SUCCESS);
    CHECK(h.version_minor == 12345);
    CHECK(h.data_bytes == 24);
  }
  SECTION("the stored data offset is trusted when the data fits (as MAX)") {
    MaxFile f;
    f.offset_delta = -40;  // points into the header
    REQUIRE(parse(f.bytes(), h) == AXL_SUCCESS);
    CHECK(h.data_offset == 7);
  }
}

TEST_CASE("every MAX dtype code has its size; float4/float6 take one byte per element") {
  struct Case {
    uint32_t code, bits, bytes;
  };
  const Case cases[] = {{1, 8, 1},    {64, 4, 1},   {65, 6, 1},   {66, 6, 1},   {73, 8, 1},
                        {75, 8, 1},   {76, 8, 1},   {77, 8, 1},   {78, 8, 1},   {79, 16, 2},
                        {80, 16, 2},  {81, 32, 4},  {82, 64, 8},  {134, 8, 1},  {135, 8, 1},
                        {136, 16, 2}, {137, 16, 2}, {138, 32, 4}, {139, 32, 4}, {140, 64, 8},
                        {141, 64, 8}};
  for (const Case& c : cases) {
    INFO("dtype " << c.code);
    uint32_t bits = 0;
    REQUIRE(axl_dtype_size_bits(c.code, &bits) == AXL_SUCCESS);
    CHECK(bits == c.bits);
    MaxFile f;
    f.dtype = static_cast<uint8_t>(c.code);
    f.data_bytes = 6 * c.bytes;
    axl_max_file_header h{};
    REQUIRE(parse(f.bytes(), h) == AXL_SUCCESS);
    CHECK(h.dtype_size_bits == c.bits);
    CHECK(h.data_bytes == 6 * c.bytes);
  }
  size_t known = 0;
  for (uint32_t code = 0; code < 256; ++code) {
    uint32_t bits = 0;
    if (axl_dtype_size_bits(code, &bits) == AXL_SUCCESS) ++known;
  }
  CHECK(known == std::size(cases));
  uint32_t bits = 7;
  require_status(axl_dtype_size_bits(74, &bits), AXL_ERROR_INVALID_ARGUMENT, {"74 is not a valid DType"});
  CHECK(bits == 7);
  require_status(axl_dtype_size_bits(1000, &bits), AXL_ERROR_INVALID_ARGUMENT, {"1000 is not a valid DType"});
  require_status(axl_dtype_size_bits(81, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_bits is NULL"});
}

TEST_CASE("malformed files: each a clear AXL_ERROR_INVALID_ARGUMENT with MAX's text") {
  const std::string not_max =
      "the file is not a max checkpoint. If this file was saved from the \"BINARY\" debug print option "
      "(and not \"BINARY_MAX_CHECKPOINT\"), please initialize `Buffer.mmap` directly.";
  SECTION("bad magic") {
    MaxFile f;
    f.magic = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    require_invalid(f, {not_max, "Its first bytes are 89 50 4E 47 0D 0A 1A 0A"});
    f.magic = {0x93, 0xF0, 0x9F, 0x94, 0xA5, 0x2B, 0x2B, 0x94};  // last byte off
    require_invalid(f, {not_max});
  }
  SECTION("files shorter than the magic") {
    for (size_t n : {0, 1, 7}) {
      std::vector<uint8_t> b = MaxFile{}.bytes();
      b.resize(n);
      axl_max_file_header h{};
      require_status(parse(b, h), AXL_ERROR_INVALID_ARGUMENT,
                     {not_max, "It is " + std::to_string(n) + " bytes long"});
    }
  }
  SECTION("major version > 0") {
    MaxFile f;
    f.major = 1;
    f.minor = 3;
    require_invalid(f, {"Unable to read from version > 0.", "version 1.3"});
    f.major = 0xFFFFFFFF;
    require_invalid(f, {"Unable to read from version > 0."});
  }
  SECTION("an unknown dtype code") {
    MaxFile f;
    for (uint8_t code : {0, 2, 63, 67, 74, 83, 133, 142, 255}) {
      f.dtype = code;
      require_invalid(f, {std::to_string(code) + " is not a valid DType"});
    }
  }
  SECTION("metadata_size that does not describe one tensor") {
    MaxFile f;
    f.metadata_delta = 1;
    require_invalid(f, {"Multiple buffers found in .max file. This is currently not supported.",
                        "metadata_size is 24", "has 23"});
    f.metadata_delta = -23;
    require_invalid(f, {"Multiple buffers found in .max file.", "metadata_size is 0"});
  }
  SECTION("an element count that overflows 64 bits") {
    MaxFile f;
    f.dims = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};
    require_invalid(f, {"element count overflows 64 bits at dimension 2", "4294967295"});
  }
  SECTION("a byte count that overflows 64 bits") {
    MaxFile f;
    f.dtype = 82;  // float64: (2^32 - 1)^2 elements fit in 64 bits, 8 times that does not
    f.dims = {0xFFFFFFFF, 0xFFFFFFFF};
    require_invalid(f, {"data size (18446744065119617025 elements of 8 bytes) overflows 64 bits"});
  }
  SECTION("data past the end of the file") {
    MaxFile f;
    f.data_bytes = 23;
    require_invalid(f, {"the data (6 elements of float32, 24 bytes, at offset 47) runs past the end of the file "
                        "(70 bytes)"});
    f.data_bytes = 24;
    f.offset_delta = 1;
    require_invalid(f, {"at offset 48) runs past the end of the file (71 bytes)"});
    f.offset_delta = INT64_MAX;  // offset + size would wrap around
    require_invalid(f, {"runs past the end of the file"});
    f.dims = {1u << 30, 1u << 31};  // 2^63 bytes: a size no file has
    f.offset_delta = 0;
    require_invalid(f, {"runs past the end of the file"});
  }
  SECTION("every truncation of a valid file") {
    const auto full = MaxFile{}.bytes();
    for (size_t n = 0; n < full.size(); ++n) {
      INFO("file cut to " << n << " bytes");
      std::vector<uint8_t> b(full.begin(), full.begin() + n);
      axl_max_file_header h{};
      if (n < 8)
        require_status(parse(b, h), AXL_ERROR_INVALID_ARGUMENT, {"not a max checkpoint"});
      else if (n < 47)
        require_status(parse(b, h), AXL_ERROR_INVALID_ARGUMENT,
                       {"truncated header: the file is " + std::to_string(n) + " bytes long but its"});
      else
        require_status(parse(b, h), AXL_ERROR_INVALID_ARGUMENT, {"runs past the end of the file"});
    }
  }
  SECTION("a dims table cut short by the end of the file names the field") {
    MaxFile f;
    f.dims.assign(200, 1);
    auto b = f.bytes();
    b.resize(100);
    axl_max_file_header h{};
    require_status(parse(b, h), AXL_ERROR_INVALID_ARGUMENT,
                   {"truncated header: the file is 100 bytes long but its shape and data offset ends at byte 839"});
  }
}

TEST_CASE("a prefix too short for the header asks for more (AXL_ERROR_OUT_OF_RANGE)") {
  MaxFile f;
  f.key = std::string(5000, 'x');
  const auto b = f.bytes();
  axl_max_file_header h{};
  uint64_t size = 0;
  std::vector<uint64_t> asked;
  axl_status s;
  while ((s = parse(b, h, size)) == AXL_ERROR_OUT_OF_RANGE) {
    REQUIRE(h.header_bytes > size);
    asked.push_back(h.header_bytes);
    size = h.header_bytes;
  }
  REQUIRE(s == AXL_SUCCESS);
  CHECK(asked == std::vector<uint64_t>{8, 16, 28, 5030, 5046});
  CHECK(h.header_bytes == 5046);
  CHECK(h.data_offset == 5046);
  h = {};
  require_status(parse(b, h, 20), AXL_ERROR_OUT_OF_RANGE, {"the first 20 bytes of the file do not hold its"});
}

TEST_CASE("argument errors, and a failed parse leaves the output alone") {
  const auto b = MaxFile{}.bytes();
  axl_max_file_header h{};
  h.struct_size = sizeof h;
  require_status(axl_max_file_parse(b.data(), b.size(), b.size(), nullptr), AXL_ERROR_INVALID_ARGUMENT,
                 {"out is NULL"});
  require_status(axl_max_file_parse(nullptr, 8, b.size(), &h), AXL_ERROR_INVALID_ARGUMENT, {"bytes is NULL"});
  require_status(axl_max_file_parse(b.data(), b.size(), b.size() - 1, &h), AXL_ERROR_INVALID_ARGUMENT,
                 {"size 71 is larger than file_size 70"});
  h.struct_size = sizeof h - 8;
  require_status(axl_max_file_parse(b.data(), b.size(), b.size(), &h), AXL_ERROR_INVALID_ARGUMENT,
                 {"struct_size"});

  MaxFile bad;
  bad.major = 2;
  const auto bb = bad.bytes();
  h = {};
  h.struct_size = sizeof h;
  h.dtype = 999;
  h.rank = 77;
  REQUIRE(axl_max_file_parse(bb.data(), bb.size(), bb.size(), &h) == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(h.dtype == 999);
  CHECK(h.rank == 77);
  CHECK(h.version_major == 0);
}
