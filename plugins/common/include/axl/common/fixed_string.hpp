// Copying a string into a fixed char array of the ABI (the name fields of
// axl_device_properties): cut to fit, always NUL-terminated. One copy for
// every backend that fills such fields itself.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string_view>

namespace axl::common {

// Copies at most capacity - 1 bytes of `src` into `dst` and terminates it.
// `capacity` is the array's size (>= 1).
inline void copy_string(char* dst, size_t capacity, std::string_view src) {
  const size_t n = std::min(capacity - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace axl::common
