// hiprtc's library names (hiprtc.hpp) and the test kernels' source.
#include "hiprtc.hpp"

namespace axl::hip {

const std::vector<std::string>& hiprtc_library_names() {
  // Function-local: built on first use, from the plugin's threads only.
  static const std::vector<std::string> kNames{"libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5",
                                               "libamdhip64.so.5"};
  return kNames;
}

//   axl_test_increment_u32(uint32_t* data, uint32_t n): data[i] += 1
//   axl_test_fill_u32(uint32_t* data, uint32_t n, uint32_t value): data[i] = value
const char* const kTestKernelsSource = R"(
extern "C" __global__ void axl_test_increment_u32(unsigned int* data, unsigned int n) {
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] += 1u;
}
extern "C" __global__ void axl_test_fill_u32(unsigned int* data, unsigned int n, unsigned int value) {
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    data[i] = value;
}
)";

}  // namespace axl::hip
