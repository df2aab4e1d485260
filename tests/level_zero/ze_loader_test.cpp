// The entry-point table and its loader (plugins/level_zero/src/ze_loader.cpp),
// linked in directly, against the fake loaders and, where installed, the
// real one.
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "ze_loader.hpp"

using axl::l0::EntryPoint;
using axl::l0::LoadResult;
using axl::l0::ZeApi;

namespace {

const EntryPoint* find(const std::string& name) {
  for (size_t i = 0; i < axl::l0::kEntryPointCount; ++i)
    if (name == axl::l0::kEntryPoints[i].name) return &axl::l0::kEntryPoints[i];
  return nullptr;
}

}  // namespace

TEST_CASE("the entry-point table: unique names, each with its own slot") {
  std::set<std::string> names;
  std::set<size_t> offsets;
  for (size_t i = 0; i < axl::l0::kEntryPointCount; ++i) {
    const EntryPoint& e = axl::l0::kEntryPoints[i];
    CHECK(names.insert(e.name).second);
    CHECK(offsets.insert(e.offset).second);
    CHECK(e.offset + sizeof(void*) <= sizeof(ZeApi));
  }
  CHECK(names.size() * sizeof(void*) == sizeof(ZeApi));
  REQUIRE(find("zeInit") != nullptr);
  CHECK(find("zeInit")->required);
  REQUIRE(find("zeInitDrivers") != nullptr);
  CHECK_FALSE(find("zeInitDrivers")->required);
  REQUIRE(find("zeMemAllocDevice") != nullptr);
  CHECK(find("zeMemAllocDevice")->required);
}

TEST_CASE("a missing required symbol refuses the loader and names it") {
  ZeApi api;
  LoadResult r = axl::l0::load_loader(AXL_FAKE_ZE_MISSING_SYMBOL_PATH, api);
  CHECK(r.kind == LoadResult::Kind::kMissingSymbol);
  CHECK(r.detail == "zeMemAllocDevice");
  CHECK(r.handle == nullptr);
  CHECK(r.path == AXL_FAKE_ZE_MISSING_SYMBOL_PATH);
  // Nothing half-resolved is left behind.
  CHECK(api.zeInit == nullptr);
}

TEST_CASE("a missing optional symbol is fine and stays NULL") {
  ZeApi api;
  LoadResult r = axl::l0::load_loader(AXL_FAKE_ZE_NO_DRIVERS_LEGACY_PATH, api);
  REQUIRE(r.kind == LoadResult::Kind::kOk);
  CHECK(api.zeInitDrivers == nullptr);
  CHECK(api.zeInit != nullptr);
  CHECK(api.zeKernelSetArgumentValue != nullptr);
  uint32_t n = 7;
  CHECK(api.zeDriverGet(&n, nullptr) == ZE_RESULT_SUCCESS);
  CHECK(n == 0);
}

TEST_CASE("an absent library is reported as absent with dlerror's text") {
  ZeApi api;
  LoadResult r = axl::l0::load_loader("/nonexistent/axl-test/libze_loader.so.1", api);
  CHECK(r.kind == LoadResult::Kind::kAbsent);
  CHECK(r.handle == nullptr);
  CHECK_THAT(r.detail, Catch::Contains("/nonexistent/axl-test/libze_loader.so.1"));
}

TEST_CASE("result names") {
  CHECK(std::string(axl::l0::result_name(ZE_RESULT_ERROR_UNINITIALIZED)) ==
        "ZE_RESULT_ERROR_UNINITIALIZED");
  CHECK(std::string(axl::l0::result_name(ZE_RESULT_ERROR_DEVICE_LOST)) ==
        "ZE_RESULT_ERROR_DEVICE_LOST");
  CHECK(std::string(axl::l0::result_name(static_cast<ze_result_t>(0x12345))) ==
        "ZE_RESULT_(unknown)");
}

#ifdef AXL_TEST_REAL_ZE_LOADER
TEST_CASE("the real loader has every required entry point") {
  ZeApi api;
  LoadResult r = axl::l0::load_loader(axl::l0::kDefaultLoaderName, api);
  INFO(r.detail);
  REQUIRE(r.kind == LoadResult::Kind::kOk);
  CHECK(r.path.front() == '/');
  CHECK_THAT(r.path, Catch::EndsWith("/libze_loader.so.1"));
  CHECK(api.zeInit(0) == ZE_RESULT_ERROR_UNINITIALIZED);
}
#endif
