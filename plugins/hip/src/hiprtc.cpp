// hiprtc's library names (hiprtc.hpp) and the test kernels' source.
#include "hiprtc.hpp"

#include "test_kernels_hip.hpp"

namespace axl::hip {

const std::vector<std::string>& hiprtc_library_names() {
  // Function-local: built on first use, from the plugin's threads only.
  static const std::vector<std::string> kNames{"libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5",
                                               "libamdhip64.so.5"};
  return kNames;
}

// src/test_kernels.hip, embedded at configure time.
const char* const kTestKernelsSource = kTestKernelsHip;

}  // namespace axl::hip
