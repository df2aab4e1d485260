// MAX's element types by numeric code (spec section 11, S2-S4 numbering: the
// values of max.dtype.DType and the dtype byte of .max files). The Python
// DType enum carries the same table; this copy serves C callers and the .max
// parser, which must reject unknown codes before sizing the data.

#include "internal.hpp"

namespace axl::core {
namespace {

struct DTypeInfo {
  uint32_t code;
  uint32_t bits;  // float4/float6 are stored one element per byte
  const char* name;
};

constexpr DTypeInfo kDTypes[] = {
    {1, 8, "bool"},
    {64, 4, "float4_e2m1fn"},
    {65, 6, "float6_e2m3fn"},
    {66, 6, "float6_e3m2fn"},
    {73, 8, "float8_e8m0fnu"},
    {75, 8, "float8_e4m3fn"},
    {76, 8, "float8_e4m3fnuz"},
    {77, 8, "float8_e5m2"},
    {78, 8, "float8_e5m2fnuz"},
    {79, 16, "float16"},
    {80, 16, "bfloat16"},
    {81, 32, "float32"},
    {82, 64, "float64"},
    {134, 8, "uint8"},
    {135, 8, "int8"},
    {136, 16, "uint16"},
    {137, 16, "int16"},
    {138, 32, "uint32"},
    {139, 32, "int32"},
    {140, 64, "uint64"},
    {141, 64, "int64"},
};

const DTypeInfo* find(uint32_t code) {
  for (const auto& d : kDTypes)
    if (d.code == code) return &d;
  return nullptr;
}

}  // namespace

uint32_t dtype_bits(uint32_t code) {
  const DTypeInfo* d = find(code);
  return d ? d->bits : 0;
}

const char* dtype_name(uint32_t code) {
  const DTypeInfo* d = find(code);
  return d ? d->name : nullptr;
}

}  // namespace axl::core

using namespace axl::core;

extern "C" AXL_API axl_status axl_dtype_size_bits(uint32_t dtype_code, uint32_t* out_bits) {
  if (!out_bits) return fail(AXL_ERROR_INVALID_ARGUMENT, "axl_dtype_size_bits: out_bits is NULL");
  uint32_t bits = dtype_bits(dtype_code);
  if (bits == 0)
    return fail(AXL_ERROR_INVALID_ARGUMENT,
                "%u is not a valid DType (expected a MAX dtype code: 1, 64-66, 73, 75-82 or 134-141)",
                dtype_code);
  *out_bits = bits;
  return AXL_SUCCESS;
}
