// The driver-loading pieces of plugins/common the cuda (and hip) backends
// share: the symbol-table resolver, the error table, the library loader and
// deferred releases. No driver needed.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "axl/common/census.hpp"
#include "axl/common/deferred_release.hpp"
#include "axl/common/driver_errors.hpp"
#include "axl/common/driver_library.hpp"
#include "axl/common/driver_symbols.hpp"
#include "host_services.hpp"

namespace common = axl::common;

namespace {

int fn_a() { return 1; }
int fn_b() { return 2; }

struct Table {
  int (*a)() = nullptr;
  int (*b)() = nullptr;
  int (*c)() = nullptr;
};

const common::DriverSymbol kTable[] = {
    {"a", 1000, true, offsetof(Table, a)},
    {"b", 2000, false, offsetof(Table, b)},
    {"c", 3000, true, offsetof(Table, c)},
};

}  // namespace

TEST_CASE("resolve_driver_symbols fills found entries and names missing ones by kind") {
  Table t;
  t.c = fn_a;  // must be overwritten with NULL when missing
  std::vector<std::string> asked;
  auto r = common::resolve_driver_symbols(
      kTable, 3, &t, [&](const char* name, int version, std::string* detail) -> void* {
        asked.push_back(std::string(name) + "@" + std::to_string(version));
        if (std::string(name) == "a") return reinterpret_cast<void*>(fn_a);
        *detail = "not found";
        return nullptr;
      });
  CHECK(asked == std::vector<std::string>{"a@1000", "b@2000", "c@3000"});
  REQUIRE(t.a != nullptr);
  CHECK(t.a() == 1);
  CHECK(t.b == nullptr);
  CHECK(t.c == nullptr);
  CHECK_FALSE(r.ok());
  CHECK(r.missing_required == std::vector<std::string>{"c (version 3000: not found)"});
  CHECK(r.missing_optional == std::vector<std::string>{"b (version 2000: not found)"});

  auto all = common::resolve_driver_symbols(kTable, 3, &t, [](const char* name, int, std::string*) -> void* {
    return reinterpret_cast<void*>(std::string(name) == "b" ? fn_b : fn_a);
  });
  CHECK(all.ok());
  CHECK(all.missing_optional.empty());
  CHECK(t.b() == 2);
}

TEST_CASE("DriverErrors maps codes, prefers the driver's name and formats the report") {
  const common::DriverErrorCode codes[] = {
      {34, "CUDA_ERROR_STUB_LIBRARY", AXL_ERROR_BACKEND_UNAVAILABLE},
      {2, "CUDA_ERROR_OUT_OF_MEMORY", AXL_ERROR_OUT_OF_DEVICE_MEMORY},
  };
  common::DriverErrors errors(codes, 2, AXL_ERROR_INTERNAL);
  CHECK(errors.status_of(2) == AXL_ERROR_OUT_OF_DEVICE_MEMORY);
  CHECK(errors.status_of(12345) == AXL_ERROR_INTERNAL);
  CHECK(errors.name_of(34) == "CUDA_ERROR_STUB_LIBRARY");
  CHECK(errors.name_of(7) == "unknown error 7");

  axl_test::FakeHost& fake = axl_test::new_host();
  common::HostServices host;
  host.attach(fake.services());
  CHECK(errors.report(host, 2, "cuMemAlloc", nullptr, "out of memory", "4096 bytes on device 0") ==
        AXL_ERROR_OUT_OF_DEVICE_MEMORY);
  axl_test::ErrorReport seen = fake.last_report();
  CHECK(seen.status == AXL_ERROR_OUT_OF_DEVICE_MEMORY);
  CHECK(seen.message == "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory: 4096 bytes on device 0");
  CHECK(seen.native_code == 2);
  CHECK(seen.native_name == "CUDA_ERROR_OUT_OF_MEMORY");
  // The driver's own name wins; an explicit status overrides the table's.
  CHECK(errors.report(host, 999, "cuX", "CUDA_ERROR_UNKNOWN", nullptr, "", AXL_ERROR_DEVICE_LOST) ==
        AXL_ERROR_DEVICE_LOST);
  seen = fake.last_report();
  CHECK(seen.status == AXL_ERROR_DEVICE_LOST);
  CHECK(seen.message == "cuX failed: CUDA_ERROR_UNKNOWN (999)");
  CHECK(fake.report_count() == 2);
}

TEST_CASE("DriverLibrary tries the names in order and reports what it tried") {
  unsetenv("AXL_TEST_DRIVER_OVERRIDE");
  common::DriverLibrary missing;
  std::string why;
  CHECK_FALSE(missing.open("AXL_TEST_DRIVER_OVERRIDE", {"libaxl_none_1.so", "libaxl_none_2.so"}, &why));
  CHECK_FALSE(missing.is_open());
  CHECK(why.find("none of libaxl_none_1.so, libaxl_none_2.so could be loaded") != std::string::npos);

  common::DriverLibrary libc;
  REQUIRE(libc.open("AXL_TEST_DRIVER_OVERRIDE", {"libaxl_none_1.so", "libc.so.6"}, &why));
  CHECK(libc.requested() == "libc.so.6");
  // The real, absolute path of what was mapped.
  CHECK(libc.path().front() == '/');
  CHECK(libc.path().find("libc") != std::string::npos);
  CHECK(libc.symbol("malloc") != nullptr);
  CHECK(libc.symbol("axl_no_such_symbol") == nullptr);

  // The override replaces the list entirely.
  setenv("AXL_TEST_DRIVER_OVERRIDE", "/nonexistent/libfoo.so", 1);
  common::DriverLibrary over;
  CHECK_FALSE(over.open("AXL_TEST_DRIVER_OVERRIDE", {"libc.so.6"}, &why));
  CHECK(why.find("AXL_TEST_DRIVER_OVERRIDE") != std::string::npos);
  CHECK(why.find("/nonexistent/libfoo.so") != std::string::npos);
  unsetenv("AXL_TEST_DRIVER_OVERRIDE");
}

TEST_CASE("DeferredReleases frees each object once its work is done") {
  common::DeferredReleases d;
  bool a_done = false, b_done = false;
  int a_freed = 0, b_freed = 0;
  d.add([&] { return a_done; }, [&] { ++a_freed; });
  d.add([&] { return b_done; }, [&] { ++b_freed; });
  d.sweep();
  CHECK(d.pending() == 2);
  CHECK(a_freed + b_freed == 0);
  b_done = true;
  d.sweep();
  CHECK(b_freed == 1);
  CHECK(a_freed == 0);
  CHECK(d.pending() == 1);
  d.sweep();
  CHECK(b_freed == 1);  // never twice
  CHECK(d.release_all() == 1);  // a was still pending
  CHECK(a_freed == 1);
  CHECK(d.pending() == 0);
}

// ---- the census's visible-device rule (axl/common/census.hpp) ------------

TEST_CASE("visible_devices follows CUDA_VISIBLE_DEVICES's rule") {
  using axl::common::visible_devices;
  CHECK(visible_devices(nullptr, 3) == 3);  // unset: every device
  CHECK(visible_devices("", 3) == 0);
  CHECK(visible_devices("0", 3) == 1);
  CHECK(visible_devices(" 2 , 0 ", 3) == 2);  // blanks around entries are ignored
  CHECK(visible_devices("1abc,0", 3) == 2);  // leading digits count
  CHECK(visible_devices("0,5,1", 3) == 1);   // ends at the first out-of-range ordinal
  CHECK(visible_devices("0,-1,1", 3) == 1);  // ... or the first that is none
  CHECK(visible_devices("0,x", 3) == 1);
  CHECK(visible_devices("1,0,1", 3) == 0);   // a repeat hides everything
  CHECK(visible_devices("0,1,2,0", 8) == 0);
  CHECK(visible_devices("0,1,2", 2) == 2);   // never more than there are
  const std::vector<std::string> ids = {"GPU-aaaa-0", "GPU-abcd-1", "GPU-bbbb-2"};
  CHECK(visible_devices("GPU-bbbb", 3, ids) == 1);
  CHECK(visible_devices("GPU-bbbb,GPU-aaaa-0", 3, ids) == 2);
  CHECK(visible_devices("GPU-a", 3, ids) == 0);       // ambiguous prefix
  CHECK(visible_devices("GPU-bbbb,GPU-zz", 3, ids) == 1);
  CHECK(visible_devices("GPU-bbbb,1", 3, ids) == 1);  // an ordinal ends a UUID list
  CHECK(visible_devices("GPU-bbbb,GPU-bbbb-2", 3, ids) == 0);  // the same device twice
  CHECK(visible_devices("GPU-x,GPU-y", 3) == 2);      // ids unknown: every UUID entry counts
  CHECK(visible_devices("MIG-1,MIG-2,MIG-3,MIG-4", 3) == 3);
}

TEST_CASE("visible_devices: MIG ids are not matched against the GPUs' ids") {
  using axl::common::visible_devices;
  // NVML's census lists whole GPUs ("GPU-..."); a MIG instance's id
  // ("MIG-...", or the older "MIG-GPU-<uuid>/gi/ci") is none of them, so a
  // MIG list cannot be resolved against them and must not count as naming
  // no device: the driver, at first use, sees the instances.
  const std::vector<std::string> ids = {"GPU-aaaa-0", "GPU-bbbb-1"};
  CHECK(visible_devices("MIG-5c2d1c5e-aaaa", 2, ids) == 1);
  CHECK(visible_devices("MIG-GPU-aaaa-0/1/0", 2, ids) == 1);
  CHECK(visible_devices("MIG-1,MIG-2", 2, ids) == 2);
  CHECK(visible_devices("MIG-1,MIG-1", 2, ids) == 0);  // a repeat still hides everything
}

TEST_CASE("visible_devices: a repeat hides everything however many devices there are") {
  using axl::common::visible_devices;
  // The rule does not depend on whether the repeat comes after every
  // device was named already.
  CHECK(visible_devices("1,0,1", 3) == 0);
  CHECK(visible_devices("1,0,1", 2) == 0);
  CHECK(visible_devices("0,0", 1) == 0);
  CHECK(visible_devices("0,1,5", 2) == 2);  // an out-of-range entry still just ends the list
  const std::vector<std::string> ids = {"GPU-aaaa-0", "GPU-bbbb-1"};
  CHECK(visible_devices("GPU-aaaa,GPU-bbbb,GPU-aaaa-0", 2, ids) == 0);
  CHECK(visible_devices("GPU-aaaa,GPU-bbbb,GPU-zz", 2, ids) == 2);
}

TEST_CASE("read_small_file reads sysfs-sized files and never blocks on a FIFO") {
  char dir[] = "/tmp/axl_census_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  // Removed when a check below throws too.
  const std::unique_ptr<char, void (*)(char*)> remove_dir(dir, [](char* d) {
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
  });
  const std::string file = std::string(dir) + "/vendor", fifo = std::string(dir) + "/fifo";
  {
    FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("0x8086\n", f);
    std::fclose(f);
  }
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(axl::common::read_small_file(file) == "0x8086\n");
  CHECK(axl::common::read_small_file(fifo).empty());  // returns at once: no writer, no data
  CHECK(axl::common::read_small_file(std::string(dir) + "/absent").empty());
}
