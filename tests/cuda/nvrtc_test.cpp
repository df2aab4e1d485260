// NVRTC through the cuda plugin's loader (plugins/cuda/src/nvrtc.cpp):
// compiling needs no GPU, so CI checks real compilations, the compiler log
// in errors, and a missing library.
#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "nvrtc.hpp"

using axl::cuda::CompileResult;
using axl::cuda::Nvrtc;

namespace {

const char* kIncrement = R"(
extern "C" __global__ void axl_inc(unsigned* data, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += STEP;
}
)";

std::string text(const CompileResult& r) { return std::string(r.image.data(), r.image.size()); }

}  // namespace

TEST_CASE("NVRTC compiles CUDA C++ to PTX for a virtual architecture") {
  Nvrtc& nv = Nvrtc::instance();
  std::string why;
  REQUIRE(nv.load(&why) == AXL_SUCCESS);
  INFO("NVRTC " << nv.version() << " at " << nv.path());
  CompileResult r = nv.compile(kIncrement, "inc.cu", {"-DSTEP=3"}, "compute_90");
  INFO(r.message);
  REQUIRE(r.status == AXL_SUCCESS);
  CHECK(r.is_ptx);
  const std::string ptx = text(r);
  CHECK(ptx.find(".entry axl_inc") != std::string::npos);  // extern "C": unmangled
  CHECK(ptx.find(".target sm_90") != std::string::npos);
  CHECK(ptx.find("add.s32") != std::string::npos);
  REQUIRE(!r.image.empty());
  CHECK(r.image.back() == '\0');  // the driver reads PTX up to its NUL
}

TEST_CASE("NVRTC compiles to a cubin for a real architecture, and options pass through") {
  CompileResult r = Nvrtc::instance().compile(kIncrement, "inc.cu", {"-DSTEP=1"}, "sm_90");
  INFO(r.message);
  REQUIRE(r.status == AXL_SUCCESS);
  CHECK_FALSE(r.is_ptx);
  REQUIRE(r.image.size() > 4);
  CHECK(std::string(r.image.data(), 4) == "\x7f" "ELF");
  // An explicit architecture option replaces the default one.
  CompileResult ptx = Nvrtc::instance().compile(kIncrement, "inc.cu", {"-DSTEP=1", "-arch=compute_80"}, "sm_90");
  INFO(ptx.message);
  REQUIRE(ptx.status == AXL_SUCCESS);
  CHECK(ptx.is_ptx);
  CHECK(text(ptx).find(".target sm_80") != std::string::npos);
}

TEST_CASE("a program with errors fails with NVRTC's log in the message") {
  CompileResult r = Nvrtc::instance().compile(
      "extern \"C\" __global__ void k(int* p) { *p = undefined_thing; }", "broken.cu", {}, "compute_90");
  CHECK(r.status == AXL_ERROR_INVALID_ARGUMENT);
  INFO(r.message);
  CHECK(r.message.find("could not compile 'broken.cu'") != std::string::npos);
  CHECK(r.message.find("NVRTC_ERROR_COMPILATION") != std::string::npos);
  CHECK(r.message.find("undefined_thing") != std::string::npos);  // the log itself
  CHECK(r.log.find("broken.cu") != std::string::npos);            // log lines name the file
  CHECK(r.image.empty());

  CompileResult bad_option = Nvrtc::instance().compile(kIncrement, "inc.cu", {"--no-such-option"}, "compute_90");
  CHECK(bad_option.status == AXL_ERROR_INVALID_ARGUMENT);
  CHECK(bad_option.message.find("--no-such-option") != std::string::npos);
}

TEST_CASE("a missing NVRTC library is reported with what was tried") {
  setenv("AXL_NVRTC_PATH", "/nonexistent/libnvrtc.so.13", 1);
  Nvrtc fresh;  // the process-wide instance has loaded already
  std::string why;
  CHECK(fresh.load(&why) == AXL_ERROR_BACKEND_UNAVAILABLE);
  CHECK(why.find("NVRTC") != std::string::npos);
  CHECK(why.find("/nonexistent/libnvrtc.so.13") != std::string::npos);
  CompileResult r = fresh.compile(kIncrement, "inc.cu", {}, "compute_90");
  CHECK(r.status == AXL_ERROR_BACKEND_UNAVAILABLE);
  unsetenv("AXL_NVRTC_PATH");
}
