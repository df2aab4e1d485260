// The cuda plugin against a driver with devices: the fake of
// fake_cuda_device.c, in a fresh process per case (fake_device_client), with
// the fake's call log read back. Each case pins down one rule of the real
// driver the plugin must follow; see the fake's header comment for what it
// models.
#include <cuda.h>

#include "fake_device_run.hpp"

using fakecuda::client;
using fakecuda::Outcome;

TEST_CASE("events are waited on, queried and timed from a thread with no current context") {
  Outcome o = client("events");
  INFO(o.run.out << o.run.err);
  CHECK(o.run.exit_code == 0);
  CHECK(o.run.out.find("ok") != std::string::npos);
}

TEST_CASE("allocations come from axl's own pool; the default pool is left alone") {
  Outcome o = client("alloc");
  INFO(o.run.out << o.run.err);
  REQUIRE(o.run.exit_code == 0);
  // The process-wide default pool: no attribute set, nothing allocated.
  CHECK_FALSE(o.has("cuMemPoolSetAttribute pool=default"));
  CHECK_FALSE(o.has("cuMemAllocAsync"));
  CHECK(o.count("cuMemPoolCreate device=0") == 1);
  // The release threshold raised on axl's pool, and allocations from it.
  CHECK(o.has("cuMemPoolSetAttribute pool=pool1 attr=" + std::to_string(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) +
              " value=18446744073709551615"));
  CHECK(o.count("cuMemAllocFromPoolAsync bytes=") == 6);
  CHECK(o.count("cuMemAllocFromPoolAsync bytes=400000 pool=pool1") == 2);
  CHECK(o.count("cuMemFreeAsync") == 6);
  CHECK_FALSE(o.has("cuMemAlloc "));
}

TEST_CASE("running out of memory trims axl's pool and retries once") {
  Outcome o = client("oom", {{"FAKE_CUDA_MEMORY_BYTES", std::to_string(1 << 20)}});
  INFO(o.run.out << o.run.err);
  CHECK(o.run.exit_code == 0);
  const std::string big = "cuMemAllocFromPoolAsync bytes=" + std::to_string(700 << 10) + " pool=pool1";
  const long first = o.find(big);
  REQUIRE(first >= 0);
  CHECK(o.log.at(static_cast<size_t>(first) + 1) == "  -> cuMemAllocFromPoolAsync error=2");
  const long trim = o.find("cuMemPoolTrimTo pool=pool1 keep=0", first);
  REQUIRE(trim > first);
  const long again = o.find(big, trim);
  REQUIRE(again > trim);
  CHECK(o.log.at(static_cast<size_t>(again) + 1).rfind("  -> ptr=", 0) == 0);
  CHECK(o.count(big) == 2);  // once more only
}

TEST_CASE("more than 48 KiB of dynamic shared memory is opted in to once per kernel, within the device's limit") {
  Outcome o = client("shared");
  INFO(o.run.out << o.run.err);
  CHECK(o.run.exit_code == 0);
  CHECK(o.count("cuFuncSetAttribute name=axl_test_fill_u32 attr=" +
                std::to_string(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) + " value=65536") == 1);
  CHECK(o.count("cuFuncSetAttribute") == 1);
  CHECK(o.count("cuLaunchKernel name=axl_test_fill_u32") == 4);  // the refused one never reaches the driver
  CHECK(o.run.out.find("too much: AXL_ERROR_INVALID_ARGUMENT") != std::string::npos);
  CHECK(o.run.out.find("300000 bytes of dynamic shared memory") != std::string::npos);
  CHECK(o.run.out.find("allows at most 232448 per block (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)") !=
        std::string::npos);
}

TEST_CASE("stream-ordered allocation refused at run time falls back to cuMemAlloc for good") {
  Outcome o = client("fallback", {{"FAKE_CUDA_ASYNC_ALLOC_OK", "1"}});
  INFO(o.run.out << o.run.err);
  CHECK(o.run.exit_code == 0);
  // One pool allocation, one refused, then the plain allocator only (for
  // the two others and the last one).
  CHECK(o.count("cuMemAllocFromPoolAsync") == 2);
  CHECK(o.count("cuMemAlloc bytes=4096") == 3);
  // The pool allocation is freed into the pool, the others with cuMemFree
  // (the fake refuses cuMemFreeAsync on plain memory, as the driver may).
  CHECK(o.count("cuMemFreeAsync") == 1);
  CHECK(o.count("cuMemFree ptr=") == 3);
}

TEST_CASE("the core's exit drain runs before the driver's own exit teardown") {
  Outcome o = client("exit");
  INFO(o.run.out << o.run.err);
  CHECK(o.run.exit_code == 0);
  CHECK(o.run.out.find("ok") != std::string::npos);
  CHECK(o.run.err.find("call after teardown") == std::string::npos);
  // The release waited for the queue and freed the buffer before exit.
  CHECK(o.has("cuEventSynchronize"));
}

TEST_CASE("the fake catches a host function that calls the driver (the check the other cases rely on)") {
  Outcome o = client("hostfn", {}, false);
  INFO(o.run.out << o.run.err);
  CHECK(o.run.exit_code == 86);
  CHECK(o.run.err.find("FAKE_CUDA: driver call from a host function: cuCtxGetCurrent") != std::string::npos);
}
