// hiprtc through the hip plugin's loader, without a GPU: it compiles HIP C++
// for a named gfx target with the real runtime's compiler (Debian's
// libamdhip64.so.5 carries hiprtc). Includes the built-in test kernels'
// source, which the plugin compiles per device.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>

#include "hiprtc.hpp"

using axl::common::CompileResult;
using axl::hip::Hiprtc;

namespace {

const char* const kScale = R"(
extern "C" __global__ void scale(unsigned int* p) { p[threadIdx.x] *= FACTOR; }
)";

std::string bytes(const CompileResult& r) { return std::string(r.image.data(), r.image.size()); }

// A code object is an ELF image; hiprtc may wrap it in a clang offload bundle.
bool is_code_object(const std::string& b) {
  return b.rfind("\x7f" "ELF", 0) == 0 || b.rfind("__CLANG_OFFLOAD_BUNDLE__", 0) == 0;
}

}  // namespace

TEST_CASE("hiprtc compiles the built-in test kernels for a gfx target") {
  std::string why;
  if (Hiprtc::instance().load(&why) != AXL_SUCCESS) {
    WARN("skipped: " << why);
    return;
  }
  CompileResult r = Hiprtc::instance().compile(axl::hip::kTestKernelsSource, "axl_test_kernels.hip", {}, "gfx90a");
  INFO(r.message << "\n" << r.log);
  REQUIRE(r.status == AXL_SUCCESS);
  const std::string b = bytes(r);
  CHECK(is_code_object(b));
  // extern "C" keeps the names the plugin looks up.
  CHECK(b.find("axl_test_increment_u32") != std::string::npos);
  CHECK(b.find("axl_test_fill_u32") != std::string::npos);
  CHECK(b.find("gfx90a") != std::string::npos);
  CHECK_FALSE(r.is_ptx);
}

TEST_CASE("hiprtc passes options through and an explicit --offload-arch wins") {
  std::string why;
  if (Hiprtc::instance().load(&why) != AXL_SUCCESS) {
    WARN("skipped: " << why);
    return;
  }
  CompileResult r = Hiprtc::instance().compile(kScale, "scale.hip", {"-DFACTOR=3", "--offload-arch=gfx1030"},
                                               "gfx90a");
  INFO(r.message << "\n" << r.log);
  REQUIRE(r.status == AXL_SUCCESS);
  const std::string b = bytes(r);
  CHECK(is_code_object(b));
  CHECK(b.find("gfx1030") != std::string::npos);
  CHECK(b.find("gfx90a") == std::string::npos);
}

TEST_CASE("a program that does not compile gives INVALID_ARGUMENT with hiprtc's log") {
  std::string why;
  if (Hiprtc::instance().load(&why) != AXL_SUCCESS) {
    WARN("skipped: " << why);
    return;
  }
  CompileResult r = Hiprtc::instance().compile(kScale, "broken.hip", {}, "gfx90a");  // FACTOR undefined
  CHECK(r.status == AXL_ERROR_INVALID_ARGUMENT);
  INFO(r.message);
  CHECK(r.message.find("hiprtc") != std::string::npos);
  CHECK(r.message.find("could not compile 'broken.hip'") != std::string::npos);
  CHECK(r.message.find("--offload-arch=gfx90a") != std::string::npos);
  CHECK(r.message.find("FACTOR") != std::string::npos);  // the log itself
  CHECK(r.image.empty());
}

TEST_CASE("a missing hiprtc library is reported with what was tried") {
  setenv("AXL_HIPRTC_PATH", "/nonexistent/libhiprtc.so.6", 1);
  Hiprtc fresh;  // the process-wide instance may have loaded already
  std::string why;
  CHECK(fresh.load(&why) == AXL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(why.find("hiprtc") != std::string::npos);
  CHECK(why.find("/nonexistent/libhiprtc.so.6") != std::string::npos);
  CompileResult r = fresh.compile(kScale, "scale.hip", {}, "gfx90a");
  CHECK(r.status == AXL_ERROR_BACKEND_UNAVAILABLE);
  unsetenv("AXL_HIPRTC_PATH");
}
