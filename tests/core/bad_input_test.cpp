// Bad input through the C ABI: every error is checked for its status AND a
// message substring. Also the lifetime rules (a child keeps its parent
// alive) and the device-spec grammar. Meant to be clean under ASan+UBSan
// (LSan included).
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

using namespace axltest;

namespace {

// This process sees exactly two devices: the cpu and the t_good test
// plugin's accelerator (heap memory the core treats as device memory, with
// most optional slots NULL), so cross-device and UNSUPPORTED paths are real.
// Set before main: discovery reads the environment on the first axl call.
const int kEnvReady = [] {
  clear_axl_env();
  std::string list = std::string(AXL_CPU_PLUGIN_PATH) + "," + AXL_TEST_PLUGIN_DIR +
                     "/libaxl_plugin_t_good.so";
  setenv("AXL_PLUGINS", list.c_str(), 1);
  return 0;
}();

struct Cpu {
  axl_device_t dev = nullptr;
  axl_queue_t q = nullptr;
  Cpu() {
    REQUIRE(axl_device_get("cpu", 0, &dev) == AXL_SUCCESS);
    REQUIRE(axl_queue_create(dev, 0, &q) == AXL_SUCCESS);
  }
  ~Cpu() {
    axl_queue_release(q);
    axl_device_release(dev);
  }
  axl_buffer_t buffer(uint64_t n) {
    axl_buffer_t b = nullptr;
    REQUIRE(axl_buffer_create(dev, n, 0, &b) == AXL_SUCCESS);
    return b;
  }
};

// The test plugin's accelerator, gpu:0.
struct Gpu {
  axl_device_t dev = nullptr;
  axl_queue_t q = nullptr;
  Gpu() {
    REQUIRE(kEnvReady == 0);
    REQUIRE(axl_device_get("gpu", 0, &dev) == AXL_SUCCESS);
    axl_device_info info{};
    info.struct_size = sizeof info;
    REQUIRE(axl_device_get_info(dev, &info) == AXL_SUCCESS);
    REQUIRE(std::string(info.backend) == "t_good");
    REQUIRE(axl_queue_create(dev, 0, &q) == AXL_SUCCESS);
  }
  ~Gpu() {
    axl_queue_release(q);
    axl_device_release(dev);
  }
  axl_buffer_t buffer(uint64_t n) {
    axl_buffer_t b = nullptr;
    REQUIRE(axl_buffer_create(dev, n, 0, &b) == AXL_SUCCESS);
    return b;
  }
};

std::vector<axl_device_spec> parse(const std::string& text) {
  return axl::parse_device_spec(text);
}

bool is(const axl_device_spec& s, int acc, int id) { return s.is_accelerator == acc && s.id == id; }

}  // namespace

TEST_CASE("NULL handles", "[bad_input]") {
  uint64_t n = 0;
  void* p = nullptr;
  require_status(axl_buffer_size(nullptr, &n), AXL_ERROR_INVALID_HANDLE, {"buffer handle is NULL"});
  require_status(axl_buffer_host_pointer(nullptr, &p), AXL_ERROR_INVALID_HANDLE, {"NULL"});
  require_status(axl_buffer_release(nullptr), AXL_ERROR_INVALID_HANDLE, {"buffer handle is NULL"});
  require_status(axl_queue_synchronize(nullptr), AXL_ERROR_INVALID_HANDLE, {"queue handle is NULL"});
  require_status(axl_queue_release(nullptr), AXL_ERROR_INVALID_HANDLE, {"queue handle is NULL"});
  require_status(axl_device_release(nullptr), AXL_ERROR_INVALID_HANDLE, {"device handle is NULL"});
  require_status(axl_event_query(nullptr), AXL_ERROR_INVALID_HANDLE, {"event handle is NULL"});
  require_status(axl_event_release(nullptr), AXL_ERROR_INVALID_HANDLE, {"event handle is NULL"});
  require_status(axl_flag_signal(nullptr, 1), AXL_ERROR_INVALID_HANDLE, {"flag handle is NULL"});
  require_status(axl_module_release(nullptr), AXL_ERROR_INVALID_HANDLE, {"module handle is NULL"});
  require_status(axl_kernel_release(nullptr), AXL_ERROR_INVALID_HANDLE, {"kernel handle is NULL"});
  axl_queue_t q = nullptr;
  require_status(axl_queue_create(nullptr, 0, &q), AXL_ERROR_INVALID_HANDLE, {"device handle is NULL"});
  CHECK(q == nullptr);
  axl_device_info info{};
  info.struct_size = sizeof info;
  require_status(axl_device_get_info(nullptr, &info), AXL_ERROR_INVALID_HANDLE, {"device"});
  CHECK(std::string(axl_kernel_name(nullptr)) == "");
  CHECK(axl_device_equal(nullptr, nullptr) == 1);

  // A handle of the wrong kind.
  Cpu c;
  require_status(axl_buffer_size(reinterpret_cast<axl_buffer_t>(c.q), &n),
                 AXL_ERROR_INVALID_HANDLE, {"is not a live buffer"});
  require_status(axl_queue_synchronize(reinterpret_cast<axl_queue_t>(c.dev)),
                 AXL_ERROR_INVALID_HANDLE, {"is not a live queue"});
}

TEST_CASE("NULL out pointers", "[bad_input]") {
  Cpu c;
  axl_buffer_t b = c.buffer(16);
  require_status(axl_device_count("cpu", nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_count is NULL"});
  require_status(axl_device_get("cpu", 0, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_device is NULL"});
  require_status(axl_buffer_create(c.dev, 16, 0, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_buffer is NULL"});
  require_status(axl_buffer_view(b, 0, 8, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_view is NULL"});
  require_status(axl_buffer_size(b, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out is NULL"});
  require_status(axl_buffer_host_pointer(b, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out is NULL"});
  require_status(axl_queue_create(c.dev, 0, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_queue is NULL"});
  require_status(axl_event_create(c.dev, 0, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_event is NULL"});
  require_status(axl_flag_create(c.dev, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_flag is NULL"});
  require_status(axl_plugin_count(nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_count is NULL"});
  require_status(axl_plugin_get_record(0, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out is NULL"});
  require_status(axl_discovery_log(nullptr, 0, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_size is NULL"});
  require_status(axl_device_default_queue(c.dev, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out is NULL"});
  require_status(axl_device_get_memory_info(c.dev, nullptr, nullptr), AXL_ERROR_INVALID_ARGUMENT,
                 {"NULL output"});
  require_status(axl_queue_native_handle(c.q, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out is NULL"});
  require_status(axl_queue_copy_from_host(c.q, b, 0, nullptr, 4), AXL_ERROR_INVALID_ARGUMENT,
                 {"src is NULL"});
  require_status(axl_queue_copy_to_host(c.q, nullptr, b, 0, 4), AXL_ERROR_INVALID_ARGUMENT,
                 {"dst is NULL"});
  require_status(axl_queue_enqueue_host_func(c.q, nullptr, nullptr), AXL_ERROR_INVALID_ARGUMENT,
                 {"fn is NULL"});
  require_status(axl_device_spec_parse("cpu", nullptr, 0, nullptr), AXL_ERROR_INVALID_ARGUMENT,
                 {"out_count is NULL"});
  require_status(axl_device_spec_parse(nullptr, nullptr, 0, nullptr), AXL_ERROR_INVALID_ARGUMENT,
                 {"text is NULL"});
  require_status(axl_last_error(nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out is NULL"});
  axl_buffer_release(b);
}

TEST_CASE("wrong struct_size in info structs", "[bad_input]") {
  Cpu c;
  axl_device_info info{};
  info.struct_size = sizeof info - 8;
  require_status(axl_device_get_info(c.dev, &info), AXL_ERROR_INVALID_ARGUMENT,
                 {"struct_size " + std::to_string(sizeof info - 8),
                  std::to_string(sizeof(axl_device_info))});
  info.struct_size = 0;
  require_status(axl_device_get_info(c.dev, &info), AXL_ERROR_INVALID_ARGUMENT, {"struct_size 0"});
  axl_plugin_record r{};
  r.struct_size = 8;
  require_status(axl_plugin_get_record(0, &r), AXL_ERROR_INVALID_ARGUMENT, {"struct_size 8"});
  axl_error_info e{};
  e.struct_size = 4;
  axl_status s = axl_last_error(&e);
  CHECK(s == AXL_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(axl_last_error_message()), Catch::Contains("struct_size 4"));
  // A bigger struct (a newer caller) is fine.
  struct {
    axl_device_info info;
    char extra[64];
  } big{};
  big.info.struct_size = sizeof big;
  CHECK(axl_device_get_info(c.dev, &big.info) == AXL_SUCCESS);
  CHECK(std::string(big.info.label) == "cpu");
}

TEST_CASE("sizes: zero, past the end, offset + size overflow", "[bad_input]") {
  Cpu c;
  axl_buffer_t b = c.buffer(100), b2 = c.buffer(100), v = nullptr;
  unsigned char host[256] = {};
  require_status(axl_buffer_create(c.dev, 0, 0, &v), AXL_ERROR_INVALID_ARGUMENT, {"size_bytes is 0"});
  require_status(axl_buffer_create(c.dev, 16, 0x80, &v), AXL_ERROR_INVALID_ARGUMENT, {"unknown flags 0x80"});
  require_status(axl_buffer_create(c.dev, UINT64_MAX, 0, &v), AXL_ERROR_OUT_OF_DEVICE_MEMORY,
                 {"cannot allocate 18446744073709551615 bytes"});
  require_status(axl_buffer_view(b, 0, 0, &v), AXL_ERROR_INVALID_ARGUMENT, {"size_bytes is 0"});
  require_status(axl_buffer_view(b, 90, 11, &v), AXL_ERROR_OUT_OF_RANGE, {"[90, 101)", "100-byte"});
  require_status(axl_buffer_view(b, 101, 1, &v), AXL_ERROR_OUT_OF_RANGE, {"100-byte"});
  require_status(axl_buffer_view(b, UINT64_MAX, 2, &v), AXL_ERROR_OUT_OF_RANGE, {"100-byte"});
  require_status(axl_buffer_view(b, 2, UINT64_MAX, &v), AXL_ERROR_OUT_OF_RANGE, {"100-byte"});
  CHECK(v == nullptr);

  require_status(axl_queue_copy_from_host(c.q, b, 0, host, 0), AXL_ERROR_INVALID_ARGUMENT,
                 {"size_bytes is 0"});
  require_status(axl_queue_copy_from_host(c.q, b, 50, host, 51), AXL_ERROR_OUT_OF_RANGE,
                 {"[50, 101)", "100-byte"});
  require_status(axl_queue_copy_to_host(c.q, host, b, 100, 1), AXL_ERROR_OUT_OF_RANGE,
                 {"100-byte"});
  require_status(axl_queue_copy_to_host(c.q, host, b, UINT64_MAX, 2), AXL_ERROR_OUT_OF_RANGE,
                 {"100-byte"});
  require_status(axl_queue_copy_from_host(c.q, b, 1, host, UINT64_MAX), AXL_ERROR_OUT_OF_RANGE,
                 {"100-byte"});
  require_status(axl_queue_copy_buffer(c.q, b, 0, b2, 1, 100), AXL_ERROR_OUT_OF_RANGE,
                 {"(source)", "100-byte"});
  require_status(axl_queue_copy_buffer(c.q, b, UINT64_MAX, b2, 0, 1), AXL_ERROR_OUT_OF_RANGE,
                 {"(destination)"});
  require_status(axl_queue_copy_buffer(c.q, b, 0, b2, 0, 0), AXL_ERROR_INVALID_ARGUMENT,
                 {"size_bytes is 0"});
  require_status(axl_queue_fill(c.q, b, 96, 8, 0, 4), AXL_ERROR_OUT_OF_RANGE, {"100-byte"});
  require_status(axl_queue_fill(c.q, b, UINT64_MAX - 3, 4, 0, 4), AXL_ERROR_OUT_OF_RANGE, {"100-byte"});
  require_status(axl_queue_fill(c.q, b, 0, 0, 0, 1), AXL_ERROR_INVALID_ARGUMENT, {"size_bytes is 0"});
  // Nothing of the above was enqueued: the buffer still holds its zeros.
  REQUIRE(axl_queue_fill(c.q, b, 0, 100, 0, 1) == AXL_SUCCESS);
  REQUIRE(axl_queue_copy_to_host(c.q, host, b, 0, 100) == AXL_SUCCESS);
  REQUIRE(axl_queue_synchronize(c.q) == AXL_SUCCESS);
  for (int i = 0; i < 100; ++i) CHECK(host[i] == 0);
  axl_buffer_release(b);
  axl_buffer_release(b2);
}

TEST_CASE("device index, label and flags", "[bad_input]") {
  axl_device_t d = nullptr;
  uint32_t n = 0;
  REQUIRE(axl_device_count("cpu", &n) == AXL_SUCCESS);
  REQUIRE(n == 1);
  require_status(axl_device_get("cpu", 1, &d), AXL_ERROR_OUT_OF_RANGE,
                 {"device 1 of label 'cpu'", "1 such device(s) exist"});
  require_status(axl_device_get("cpu", UINT32_MAX, &d), AXL_ERROR_OUT_OF_RANGE,
                 {"4294967295", "1 such device(s)"});
  uint32_t ngpu = 0;
  REQUIRE(axl_device_count("gpu", &ngpu) == AXL_SUCCESS);
  require_status(axl_device_get("gpu", ngpu, &d), AXL_ERROR_OUT_OF_RANGE,
                 {"label 'gpu'", std::to_string(ngpu) + " such device(s)"});
  require_status(axl_device_get("tpu", 0, &d), AXL_ERROR_INVALID_ARGUMENT, {"'tpu'", "\"cpu\" or \"gpu\""});
  require_status(axl_device_count("CPU", &n), AXL_ERROR_INVALID_ARGUMENT, {"'CPU'"});
  require_status(axl_device_count("", &n), AXL_ERROR_INVALID_ARGUMENT, {"''"});
  CHECK(d == nullptr);
  Cpu c;
  axl_queue_t q = nullptr;
  require_status(axl_queue_create(c.dev, 1, &q), AXL_ERROR_INVALID_ARGUMENT, {"flags 0x1"});
  axl_event_t e = nullptr;
  require_status(axl_event_create(c.dev, 0x10, &e), AXL_ERROR_INVALID_ARGUMENT, {"unknown flags 0x10"});
  require_status(axl_set_log_level(5), AXL_ERROR_INVALID_ARGUMENT, {"log level 5"});
  require_status(axl_set_log_level(-1), AXL_ERROR_INVALID_ARGUMENT, {"log level -1"});
  uint32_t np = 0;
  REQUIRE(axl_plugin_count(&np) == AXL_SUCCESS);
  axl_plugin_record r{};
  r.struct_size = sizeof r;
  require_status(axl_plugin_get_record(np, &r), AXL_ERROR_OUT_OF_RANGE,
                 {"plugin index " + std::to_string(np), std::to_string(np) + " plugin file(s)"});
}

TEST_CASE("axl_queue_copy between buffers of different sizes names both", "[bad_input]") {
  Cpu c;
  axl_buffer_t a = c.buffer(100), b = c.buffer(64);
  require_status(axl_queue_copy(c.q, a, b), AXL_ERROR_INVALID_ARGUMENT,
                 {"destination is 100 bytes", "source is 64 bytes"});
  require_status(axl_queue_copy(c.q, b, a), AXL_ERROR_INVALID_ARGUMENT,
                 {"destination is 64 bytes", "source is 100 bytes"});
  axl::Queue q(c.q);
  axl_queue_retain(c.q);
  require_error([&] { q.copy(axl::Buffer(axl_buffer_t(nullptr)), axl::Buffer(axl_buffer_t(nullptr))); },
                AXL_ERROR_INVALID_HANDLE, {"destination buffer handle is NULL"});
  axl_buffer_release(a);
  axl_buffer_release(b);
}

TEST_CASE("fill: bad pattern size, misaligned size or offset, oversized pattern", "[bad_input]") {
  Cpu c;
  axl_buffer_t b = c.buffer(64);
  require_status(axl_queue_fill(c.q, b, 0, 64, 0, 3), AXL_ERROR_INVALID_ARGUMENT,
                 {"pattern_size 3", "1, 2 or 4"});
  require_status(axl_queue_fill(c.q, b, 0, 64, 0, 8), AXL_ERROR_INVALID_ARGUMENT, {"pattern_size 8"});
  require_status(axl_queue_fill(c.q, b, 0, 62, 0, 4), AXL_ERROR_INVALID_ARGUMENT,
                 {"size 62", "multiples of pattern_size 4"});
  require_status(axl_queue_fill(c.q, b, 2, 4, 0, 4), AXL_ERROR_INVALID_ARGUMENT,
                 {"offset 2", "multiples of pattern_size 4"});
  require_status(axl_queue_fill(c.q, b, 1, 2, 0, 2), AXL_ERROR_INVALID_ARGUMENT, {"offset 1"});
  require_status(axl_queue_fill(c.q, b, 0, 4, 0x1FF, 1), AXL_ERROR_INVALID_ARGUMENT,
                 {"pattern 0x1ff does not fit in 1 byte"});
  require_status(axl_queue_fill(c.q, b, 0, 4, 0x10000, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"pattern 0x10000 does not fit in 2 byte"});
  axl_buffer_release(b);
}

TEST_CASE("launch: zero grid, bad scalars, foreign kernels", "[bad_input]") {
  Cpu c;
  axl_kernel_t k = nullptr;
  REQUIRE(axl_device_get_test_kernel(c.dev, AXL_TEST_KERNEL_INCREMENT_U32, &k) == AXL_SUCCESS);
  axl_buffer_t b = c.buffer(64);
  uint32_t n = 16;
  axl_launch_arg args[2] = {};
  args[0].kind = AXL_KERNEL_ARG_BUFFER;
  args[0].buffer = b;
  args[1].kind = AXL_KERNEL_ARG_SCALAR;
  args[1].size = 4;
  args[1].value = &n;
  const uint32_t one[3] = {1, 1, 1};
  const uint32_t zero_x[3] = {0, 1, 1}, zero_z[3] = {1, 1, 0};
  require_status(axl_queue_launch(c.q, k, zero_x, one, 0, args, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"grid (0, 1, 1)", "must be >= 1"});
  require_status(axl_queue_launch(c.q, k, one, zero_z, 0, args, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"block (1, 1, 0)"});
  require_status(axl_queue_launch(c.q, k, nullptr, one, 0, args, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"grid or block is NULL"});
  require_status(axl_queue_launch(c.q, k, one, one, 0, nullptr, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"2 args but args is NULL"});

  unsigned char big[300] = {};
  axl_launch_arg bad = args[1];
  bad.size = 257;
  bad.value = big;
  axl_launch_arg two[2] = {args[0], bad};
  require_status(axl_queue_launch(c.q, k, one, one, 0, two, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"kernel argument 1", "scalar of 257 bytes", "1..256"});
  two[1].size = 0;
  require_status(axl_queue_launch(c.q, k, one, one, 0, two, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"scalar of 0 bytes"});
  two[1].size = 4;
  two[1].value = nullptr;
  require_status(axl_queue_launch(c.q, k, one, one, 0, two, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"kernel argument 1", "non-NULL value"});
  two[1] = args[1];
  two[1].kind = 7;
  require_status(axl_queue_launch(c.q, k, one, one, 0, two, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"kernel argument 1: kind 7"});
  two[1] = args[1];
  two[0].buffer = nullptr;
  require_status(axl_queue_launch(c.q, k, one, one, 0, two, 2), AXL_ERROR_INVALID_HANDLE,
                 {"kernel argument buffer handle is NULL"});
  // The backend checks the built-in kernel's parameter list.
  require_status(axl_queue_launch(c.q, k, one, one, 0, args, 1), AXL_ERROR_INVALID_ARGUMENT,
                 {"axl_test_increment_u32", "takes 2 arguments, got 1"});
  // Wrong handle kinds.
  require_status(axl_queue_launch(c.q, reinterpret_cast<axl_kernel_t>(b), one, one, 0, args, 2),
                 AXL_ERROR_INVALID_HANDLE, {"kernel"});
  require_status(axl_device_get_test_kernel(c.dev, 42, &k), AXL_ERROR_INVALID_ARGUMENT, {"test kernel 42"});

  // A kernel of another device, and a buffer argument of another device.
  Gpu g;
  require_status(axl_queue_launch(g.q, k, one, one, 0, args, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"kernel 'axl_test_increment_u32' belongs to cpu:0 (cpu)", "gpu:0 (t_good)"});
  axl_buffer_t gb = g.buffer(64);
  axl_launch_arg foreign[2] = {args[0], args[1]};
  foreign[0].buffer = gb;
  require_status(axl_queue_launch(c.q, k, one, one, 0, foreign, 2), AXL_ERROR_INVALID_ARGUMENT,
                 {"kernel argument 0 is a buffer on gpu:0 (t_good)", "the launch is on cpu:0 (cpu)"});
  axl_buffer_release(gb);

  // Still works with good arguments after all of that.
  REQUIRE(axl_queue_fill(c.q, b, 0, 64, 0, 1) == AXL_SUCCESS);
  REQUIRE(axl_queue_launch(c.q, k, one, one, 0, args, 2) == AXL_SUCCESS);
  uint32_t out[16] = {};
  REQUIRE(axl_queue_copy_to_host(c.q, out, b, 0, sizeof out) == AXL_SUCCESS);
  REQUIRE(axl_queue_synchronize(c.q) == AXL_SUCCESS);
  for (uint32_t v : out) CHECK(v == 1);
  axl_kernel_release(k);
  axl_buffer_release(b);
}

TEST_CASE("modules: bad bytes, missing file, bad format", "[bad_input]") {
  Cpu c;
  axl_module_t m = nullptr;
  const char junk[] = "this is not an ELF file";
  require_status(axl_module_load_data(c.dev, nullptr, 10, 0, &m), AXL_ERROR_INVALID_ARGUMENT,
                 {"expected a non-empty module"});
  require_status(axl_module_load_data(c.dev, junk, 0, 0, &m), AXL_ERROR_INVALID_ARGUMENT,
                 {"0 bytes"});
  require_status(axl_module_load_data(c.dev, junk, sizeof junk, 0, &m), AXL_ERROR_INVALID_ARGUMENT,
                 {"ELF"});
  require_status(axl_module_load_data(c.dev, junk, sizeof junk, 99, &m), AXL_ERROR_INVALID_ARGUMENT,
                 {"module format 99"});
  require_status(axl_module_load_data(c.dev, junk, sizeof junk, AXL_MODULE_FORMAT_PTX, &m),
                 AXL_ERROR_INVALID_ARGUMENT, {"PTX"});
  require_status(axl_module_load_file(c.dev, "/nonexistent/dir/kernels.so", 0, &m),
                 AXL_ERROR_NOT_FOUND, {"/nonexistent/dir/kernels.so"});
  require_status(axl_module_load_file(c.dev, "", 0, &m), AXL_ERROR_INVALID_ARGUMENT, {"path is empty"});
  require_status(axl_module_load_file(c.dev, nullptr, 0, &m), AXL_ERROR_INVALID_ARGUMENT,
                 {"path is empty"});
  CHECK(m == nullptr);
  REQUIRE(axl_module_load_file(c.dev, AXL_TEST_CPU_KERNELS_PATH, 0, &m) == AXL_SUCCESS);
  axl_kernel_t k = nullptr;
  require_status(axl_module_get_kernel(m, "", &k), AXL_ERROR_INVALID_ARGUMENT, {"name is empty"});
  require_status(axl_module_get_kernel(m, nullptr, &k), AXL_ERROR_INVALID_ARGUMENT, {"name is empty"});
  require_status(axl_module_get_kernel(m, "saxpy", nullptr), AXL_ERROR_INVALID_ARGUMENT,
                 {"out_kernel is NULL"});
  require_status(axl_module_get_kernel(m, "sax", &k), AXL_ERROR_NOT_FOUND, {"'sax'"});
  CHECK(k == nullptr);
  axl_module_release(m);
}

TEST_CASE("module compile: bad arguments, and a backend without a compiler", "[bad_input]") {
  Cpu c;
  axl_module_t m = nullptr;
  const char* src = "extern \"C\" __global__ void k() {}";
  const char* opts[] = {"-DA=1", nullptr};
  require_status(axl_module_compile(c.dev, AXL_SOURCE_LANGUAGE_CUDA, "", nullptr, nullptr, 0, &m),
                 AXL_ERROR_INVALID_ARGUMENT, {"source is empty"});
  require_status(axl_module_compile(c.dev, AXL_SOURCE_LANGUAGE_CUDA, nullptr, nullptr, nullptr, 0, &m),
                 AXL_ERROR_INVALID_ARGUMENT, {"source is empty"});
  require_status(axl_module_compile(c.dev, 7, src, nullptr, nullptr, 0, &m), AXL_ERROR_INVALID_ARGUMENT,
                 {"language 7"});
  require_status(axl_module_compile(c.dev, AXL_SOURCE_LANGUAGE_CUDA, src, nullptr, nullptr, 2, &m),
                 AXL_ERROR_INVALID_ARGUMENT, {"num_options is 2 but options is NULL"});
  require_status(axl_module_compile(c.dev, AXL_SOURCE_LANGUAGE_CUDA, src, nullptr, opts, 2, &m),
                 AXL_ERROR_INVALID_ARGUMENT, {"options[1] is NULL"});
  require_status(axl_module_compile(c.dev, AXL_SOURCE_LANGUAGE_CUDA, src, nullptr, nullptr, 0, nullptr),
                 AXL_ERROR_INVALID_ARGUMENT, {"out_module is NULL"});
  require_status(axl_module_compile(nullptr, AXL_SOURCE_LANGUAGE_CUDA, src, nullptr, nullptr, 0, &m),
                 AXL_ERROR_INVALID_HANDLE, {});
  // The cpu backend has no run-time compiler: the core names the slot.
  require_status(axl_module_compile(c.dev, AXL_SOURCE_LANGUAGE_CUDA, src, "k.cu", opts, 1, &m),
                 AXL_ERROR_UNSUPPORTED, {"module_compile"});
  CHECK(m == nullptr);
}

TEST_CASE("over-release and use after release of handles", "[bad_input]") {
  axl_device_t d = nullptr;
  REQUIRE(axl_device_get("cpu", 0, &d) == AXL_SUCCESS);
  REQUIRE(axl_device_retain(d) == AXL_SUCCESS);
  CHECK(axl_device_release(d) == AXL_SUCCESS);
  CHECK(axl_device_release(d) == AXL_SUCCESS);
  // The registry's own reference cannot be dropped by the application.
  require_status(axl_device_release(d), AXL_ERROR_INVALID_HANDLE,
                 {"released more times than it was obtained"});
  require_status(axl_device_release(d), AXL_ERROR_INVALID_HANDLE, {"released more times"});
  // ... and the device still works afterwards.
  axl_device_t d2 = nullptr;
  REQUIRE(axl_device_get("cpu", 0, &d2) == AXL_SUCCESS);
  CHECK(d2 == d);
  axl_buffer_t b = nullptr;
  CHECK(axl_buffer_create(d2, 8, 0, &b) == AXL_SUCCESS);
  axl_buffer_release(b);

  // The default queue cannot be over-released either.
  axl_queue_t dq = nullptr;
  REQUIRE(axl_device_default_queue(d2, &dq) == AXL_SUCCESS);
  CHECK(axl_queue_release(dq) == AXL_SUCCESS);
  require_status(axl_queue_release(dq), AXL_ERROR_INVALID_HANDLE,
                 {"default queue", "released more times"});
  REQUIRE(axl_device_default_queue(d2, &dq) == AXL_SUCCESS);
  CHECK(axl_queue_synchronize(dq) == AXL_SUCCESS);
  axl_queue_release(dq);
  axl_device_release(d2);
}

TEST_CASE("a failed allocation in the plugin leaves no half-made buffer", "[bad_input]") {
  // Pinned memory skips the core's max_single_alloc check, so the plugin
  // itself refuses: its detail must survive, and no reference, free or
  // synchronize may follow for the buffer that never was.
  axl_device_t d = nullptr;
  REQUIRE(axl_device_get("cpu", 0, &d) == AXL_SUCCESS);
  axl_buffer_t b = nullptr;
  for (int i = 0; i < 3; ++i) {
    require_status(axl_buffer_create(d, uint64_t(1) << 62, AXL_BUFFER_FLAG_PINNED, &b),
                   AXL_ERROR_OUT_OF_HOST_MEMORY, {"cpu: cannot pin 4611686018427387904 bytes"});
    axl_error_info e{};
    e.struct_size = sizeof e;
    REQUIRE(axl_last_error(&e) == AXL_SUCCESS);
    CHECK(std::string(e.backend) == "cpu");
    CHECK(b == nullptr);
  }
  // The device's reference count is intact: exactly one release is ours.
  CHECK(axl_device_release(d) == AXL_SUCCESS);
  require_status(axl_device_release(d), AXL_ERROR_INVALID_HANDLE, {"released more times"});
  REQUIRE(axl_device_get("cpu", 0, &d) == AXL_SUCCESS);
  CHECK(axl_buffer_create(d, 64, AXL_BUFFER_FLAG_PINNED, &b) == AXL_SUCCESS);
  axl_buffer_release(b);
  axl_device_release(d);
}

TEST_CASE("a queue keeps its device alive after the device handle is released", "[bad_input]") {
  axl_device_t d = nullptr;
  REQUIRE(axl_device_get("cpu", 0, &d) == AXL_SUCCESS);
  axl_queue_t q = nullptr;
  REQUIRE(axl_queue_create(d, 0, &q) == AXL_SUCCESS);
  axl_buffer_t b = nullptr;
  REQUIRE(axl_buffer_create(d, 32, 0, &b) == AXL_SUCCESS);
  REQUIRE(axl_device_release(d) == AXL_SUCCESS);
  // Still fully usable.
  unsigned char in[32], out[32] = {};
  for (int i = 0; i < 32; ++i) in[i] = static_cast<unsigned char>(i + 100);
  CHECK(axl_queue_copy_from_host(q, b, 0, in, 32) == AXL_SUCCESS);
  CHECK(axl_queue_copy_to_host(q, out, b, 0, 32) == AXL_SUCCESS);
  CHECK(axl_queue_synchronize(q) == AXL_SUCCESS);
  CHECK(memcmp(in, out, 32) == 0);
  axl_device_t qd = nullptr;
  REQUIRE(axl_queue_device(q, &qd) == AXL_SUCCESS);
  axl_device_info info{};
  info.struct_size = sizeof info;
  CHECK(axl_device_get_info(qd, &info) == AXL_SUCCESS);
  CHECK(std::string(info.label) == "cpu");
  axl_device_release(qd);
  axl_buffer_release(b);
  axl_queue_release(q);
}

TEST_CASE("a view keeps its base allocation alive", "[bad_input]") {
  Cpu c;
  axl_buffer_t base = c.buffer(256), view = nullptr;
  REQUIRE(axl_buffer_view(base, 64, 128, &view) == AXL_SUCCESS);
  REQUIRE(axl_buffer_release(base) == AXL_SUCCESS);  // the view holds it now
  unsigned char in[128], out[128] = {};
  for (int i = 0; i < 128; ++i) in[i] = static_cast<unsigned char>(255 - i);
  CHECK(axl_queue_copy_from_host(c.q, view, 0, in, 128) == AXL_SUCCESS);
  CHECK(axl_queue_fill(c.q, view, 0, 4, 0x77, 1) == AXL_SUCCESS);
  CHECK(axl_queue_copy_to_host(c.q, out, view, 0, 128) == AXL_SUCCESS);
  CHECK(axl_queue_synchronize(c.q) == AXL_SUCCESS);
  for (int i = 0; i < 4; ++i) CHECK(out[i] == 0x77);
  CHECK(memcmp(in + 4, out + 4, 124) == 0);
  // A view of a view, then drop the middle one.
  axl_buffer_t vv = nullptr;
  REQUIRE(axl_buffer_view(view, 8, 8, &vv) == AXL_SUCCESS);
  REQUIRE(axl_buffer_release(view) == AXL_SUCCESS);
  unsigned char eight[8] = {};
  CHECK(axl_queue_copy_to_host(c.q, eight, vv, 0, 8) == AXL_SUCCESS);
  CHECK(axl_queue_synchronize(c.q) == AXL_SUCCESS);
  CHECK(memcmp(eight, in + 8, 8) == 0);
  uint64_t size = 0;
  CHECK(axl_buffer_size(vv, &size) == AXL_SUCCESS);
  CHECK(size == 8);
  axl_buffer_release(vv);
}

TEST_CASE("event elapsed time: three distinct errors", "[bad_input][event]") {
  Cpu c;
  axl_event_t t0 = nullptr, t1 = nullptr, plain = nullptr;
  REQUIRE(axl_event_create(c.dev, AXL_EVENT_TIMING, &t0) == AXL_SUCCESS);
  REQUIRE(axl_event_create(c.dev, AXL_EVENT_TIMING, &t1) == AXL_SUCCESS);
  REQUIRE(axl_event_create(c.dev, AXL_EVENT_NONE, &plain) == AXL_SUCCESS);
  float ms = -1;
  std::string m_disabled, m_unrecorded, m_incomplete;

  // Never-recorded events are complete.
  CHECK(axl_event_query(t0) == AXL_SUCCESS);
  CHECK(axl_event_synchronize(t0) == AXL_SUCCESS);

  // Timing disabled (checked first, even for unrecorded events).
  require_status(axl_event_elapsed_ms(plain, t1, &ms), AXL_ERROR_INVALID_ARGUMENT,
                 {"timing", "start event"});
  m_disabled = axl_last_error_message();
  require_status(axl_event_elapsed_ms(t0, plain, &ms), AXL_ERROR_INVALID_ARGUMENT,
                 {"timing", "end event"});
  // Not recorded.
  REQUIRE(axl_queue_record_event(c.q, t0) == AXL_SUCCESS);
  require_status(axl_event_elapsed_ms(t0, t1, &ms), AXL_ERROR_INVALID_STATE,
                 {"never recorded", "end event"});
  m_unrecorded = axl_last_error_message();
  // Not complete: hold the queue with a flag between the two records (the
  // start event is let complete first so the end one is the incomplete one).
  REQUIRE(axl_event_synchronize(t0) == AXL_SUCCESS);
  axl_flag_t gate = nullptr;
  REQUIRE(axl_flag_create(c.dev, &gate) == AXL_SUCCESS);
  REQUIRE(axl_queue_wait_flag(c.q, gate, 1) == AXL_SUCCESS);
  REQUIRE(axl_queue_record_event(c.q, t1) == AXL_SUCCESS);
  CHECK(axl_event_query(t1) == AXL_ERROR_NOT_READY);
  require_status(axl_event_elapsed_ms(t0, t1, &ms), AXL_ERROR_NOT_READY,
                 {"not completed", "end event"});
  m_incomplete = axl_last_error_message();
  require_status(axl_event_elapsed_ms(t0, t1, nullptr), AXL_ERROR_INVALID_ARGUMENT, {"out_ms is NULL"});
  REQUIRE(axl_flag_signal(gate, 1) == AXL_SUCCESS);
  REQUIRE(axl_event_synchronize(t1) == AXL_SUCCESS);
  CHECK(axl_event_elapsed_ms(t0, t1, &ms) == AXL_SUCCESS);
  CHECK(ms >= 0.0f);
  CHECK(m_disabled != m_unrecorded);
  CHECK(m_unrecorded != m_incomplete);
  CHECK(m_disabled != m_incomplete);
  // Recording on a queue of another device is refused; same device is fine.
  axl_flag_release(gate);
  axl_event_release(t0);
  axl_event_release(t1);
  axl_event_release(plain);
}

TEST_CASE("two devices: host pointers, mismatched queues, unsupported slots", "[bad_input]") {
  Cpu c;
  Gpu g;
  axl_buffer_t cb = c.buffer(64), gb = g.buffer(64);
  void* p = nullptr;
  CHECK(axl_buffer_host_pointer(cb, &p) == AXL_SUCCESS);
  CHECK(p != nullptr);
  p = nullptr;
  require_status(axl_buffer_host_pointer(gb, &p), AXL_ERROR_INVALID_STATE,
                 {"device memory of gpu:0", "host cannot read"});
  CHECK(p == nullptr);
  CHECK(axl_device_equal(c.dev, g.dev) == 0);

  // An event is recorded on a queue of its own device.
  axl_event_t ce = nullptr;
  REQUIRE(axl_event_create(c.dev, 0, &ce) == AXL_SUCCESS);
  require_status(axl_queue_record_event(g.q, ce), AXL_ERROR_INVALID_ARGUMENT,
                 {"event belongs to cpu:0", "queue to gpu:0"});
  // A fill goes on a queue of the buffer's device.
  require_status(axl_queue_fill(c.q, gb, 0, 64, 0, 1), AXL_ERROR_INVALID_ARGUMENT,
                 {"buffer is on gpu:0 (t_good)", "queue on cpu:0 (cpu)"});
  // Flags are per backend.
  axl_flag_t cf = nullptr;
  REQUIRE(axl_flag_create(c.dev, &cf) == AXL_SUCCESS);
  require_status(axl_queue_wait_flag(g.q, cf, 1), AXL_ERROR_INVALID_ARGUMENT,
                 {"flag belongs to backend cpu", "queue to t_good"});
  // NULL slots of the test plugin: UNSUPPORTED naming the slot.
  require_status(axl_queue_fill(g.q, gb, 0, 64, 0, 1), AXL_ERROR_UNSUPPORTED,
                 {"t_good", "does not support queue_fill"});
  axl_flag_t gf = nullptr;
  require_status(axl_flag_create(g.dev, &gf), AXL_ERROR_UNSUPPORTED, {"flag_create"});
  axl_module_t m = nullptr;
  const char elf[] = "\x7f" "ELF....";
  require_status(axl_module_load_data(g.dev, elf, sizeof elf, 0, &m), AXL_ERROR_UNSUPPORTED,
                 {"module_load"});
  axl_kernel_t gk = nullptr;
  require_status(axl_device_get_test_kernel(g.dev, AXL_TEST_KERNEL_FILL_U32, &gk),
                 AXL_ERROR_UNSUPPORTED, {"device_get_test_kernel"});
  uint64_t free_b = 0, total_b = 0;
  require_status(axl_device_get_memory_info(g.dev, &free_b, &total_b), AXL_ERROR_UNSUPPORTED,
                 {"device_get_memory_info"});
  // A copy within gpu:0 must be enqueued on a queue of gpu:0.
  axl_buffer_t gb2 = g.buffer(64);
  require_status(axl_queue_copy(c.q, gb2, gb), AXL_ERROR_INVALID_ARGUMENT,
                 {"copy within gpu:0 (t_good)", "queue of cpu:0 (cpu)"});

  // Copies across backends go through host memory, in either queue's order.
  unsigned char in[64], out[64] = {};
  for (int i = 0; i < 64; ++i) in[i] = static_cast<unsigned char>(3 * i + 1);
  REQUIRE(axl_queue_copy_from_host(c.q, cb, 0, in, 64) == AXL_SUCCESS);
  REQUIRE(axl_queue_copy(c.q, gb, cb) == AXL_SUCCESS);          // cpu -> gpu on the cpu queue
  REQUIRE(axl_queue_copy_buffer(g.q, gb2, 8, gb, 0, 56) == AXL_SUCCESS);  // within gpu:0
  REQUIRE(axl_queue_synchronize(c.q) == AXL_SUCCESS);
  REQUIRE(axl_queue_synchronize(g.q) == AXL_SUCCESS);
  REQUIRE(axl_queue_copy_to_host(g.q, out, gb2, 8, 56) == AXL_SUCCESS);
  REQUIRE(axl_queue_synchronize(g.q) == AXL_SUCCESS);
  CHECK(memcmp(out, in, 56) == 0);
  memset(out, 0, sizeof out);
  REQUIRE(axl_queue_copy(g.q, cb, gb) == AXL_SUCCESS);  // gpu -> cpu on the gpu queue
  REQUIRE(axl_queue_copy_to_host(c.q, out, cb, 0, 64) == AXL_SUCCESS);
  REQUIRE(axl_queue_synchronize(g.q) == AXL_SUCCESS);
  REQUIRE(axl_queue_synchronize(c.q) == AXL_SUCCESS);
  CHECK(memcmp(out, in, 64) == 0);

  axl_flag_release(cf);
  axl_event_release(ce);
  axl_buffer_release(gb2);
  axl_buffer_release(gb);
  axl_buffer_release(cb);
}

// t_good does not set AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE, so the core holds its
// own lock around each enqueue (internal.hpp, Queue::submit); the plugin's
// queue_copy_htod fails if a second thread enters it on the same queue.
TEST_CASE("a backend without QUEUE_THREAD_SAFE gets one enqueue at a time per queue", "[bad_input][threads]") {
  Gpu g;
  constexpr int kThreads = 4;
  constexpr uint32_t kOps = 4000;
  axl_buffer_t gb = g.buffer(kThreads * 4);
  std::atomic<int> failures{0};
  std::vector<std::string> first(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < kOps; ++i) {
        const uint32_t v = (uint32_t(t) << 24) | i;  // t_good copies at enqueue: a stack value is enough
        if (axl_queue_copy_from_host(g.q, gb, uint64_t(t) * 4, &v, 4) != AXL_SUCCESS) {
          if (failures.fetch_add(1) == 0) first[t] = axl_last_error_message();
          return;
        }
      }
    });
  for (auto& th : threads) th.join();
  std::string why;
  for (const auto& m : first) why += m;
  INFO(why);
  REQUIRE(failures.load() == 0);
  uint32_t got[kThreads] = {};
  REQUIRE(axl_queue_copy_to_host(g.q, got, gb, 0, sizeof got) == AXL_SUCCESS);
  REQUIRE(axl_queue_synchronize(g.q) == AXL_SUCCESS);
  for (int t = 0; t < kThreads; ++t) CHECK(got[t] == ((uint32_t(t) << 24) | (kOps - 1)));
  axl_buffer_release(gb);
}

TEST_CASE("device spec parsing table", "[bad_input][spec]") {
  using V = std::vector<std::pair<int, int>>;
  auto as_pairs = [](const std::vector<axl_device_spec>& v) {
    V out;
    for (auto& s : v) out.emplace_back(s.is_accelerator, s.id);
    return out;
  };
  CHECK(as_pairs(parse("cpu")) == V{{0, -1}});
  CHECK(as_pairs(parse("CPU")) == V{{0, -1}});
  CHECK(as_pairs(parse("gpu")) == V{{1, 0}});
  CHECK(as_pairs(parse("gpu:0,1")) == V{{1, 0}, {1, 1}});
  CHECK(as_pairs(parse("GPU:2")) == V{{1, 2}});
  CHECK(as_pairs(parse("gpu: 1 , 5")) == V{{1, 1}, {1, 5}});
  CHECK(as_pairs(parse("0,2")) == V{{1, 0}, {1, 2}});
  CHECK(as_pairs(parse("gpu:3,1,3,1,0")) == V{{1, 3}, {1, 1}, {1, 0}});  // duplicates once
  CHECK(as_pairs(parse("  cpu  ")) == V{{0, -1}});
  // This process has one accelerator (t_good): gpu:all is [gpu 0].
  REQUIRE(axl::Device::count("gpu") == 1);
  auto all = parse("gpu:all");
  REQUIRE(all.size() == 1);
  CHECK(is(all[0], 1, 0));
  CHECK(parse("gpu:ALL").size() == 1);
  CHECK(parse("gpu: all ").size() == 1);
  {
    // With no accelerator at all (the default plugin folder: cpu and the
    // Metal stub, which reports 0 devices) gpu:all is empty, not an error.
    RunResult r = run({AXL_PROBE_PATH, "spec", "gpu:all"});
    KV kv(r.out);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_FALSE(sanitizer_report(r.err));
    CHECK(kv["devices.gpu"] == "0");
    CHECK(kv["spec.status"] == "AXL_SUCCESS");
    CHECK(kv["spec.count"] == "0");
  }

  // Two-call protocol: a short buffer gets the count, no writes.
  size_t n = 0;
  axl_device_spec specs[2] = {{9, 9}, {9, 9}};
  REQUIRE(axl_device_spec_parse("gpu:4,5,6", specs, 2, &n) == AXL_SUCCESS);
  CHECK(n == 3);
  CHECK(is(specs[0], 9, 9));

  // Errors name the bad token.
  auto bad = [](const std::string& text, const std::string& token) {
    INFO("spec '" << text << "'");
    require_error([&] { parse(text); }, AXL_ERROR_INVALID_ARGUMENT, {"'" + text + "'", token});
  };
  bad("gpu:x", "'x'");
  bad("gpu:", "after 'gpu:'");
  bad("tpu", "'tpu'");
  bad("gpu:-1", "'-1'");
  bad("gpu:1,,2", "''");
  bad("gpu:1,a", "'a'");
  bad("tpu:0", "'tpu'");
  bad("", "not a device label");
  bad("1,x", "'x'");
  bad("gpu:99999999999", "'99999999999'");
}

// One id grammar for axl_device_spec_parse and the CLI count: ASCII digits,
// the value within the ABI's int32_t id, refused (naming it) rather than
// wrapped. Each input below read differently before (a 9-digit cap in the
// spec parser; strtoll in the CLI count, which skips any leading whitespace,
// reports a long digit string as "not an integer" and let ids past 2^32
// wrap the uint32_t count).
TEST_CASE("device-id grammar: specs and CLI counts agree, ids are range-checked", "[bad_input][spec]") {
  const std::string long_digits(5000, '9');
  // Spec ids up to INT32_MAX, leading zeros included.
  CHECK(is(parse("gpu:2147483647").at(0), 1, INT32_MAX));
  CHECK(is(parse("gpu:0000000000007").at(0), 1, 7));
  CHECK(is(parse("2147483647").at(0), 1, INT32_MAX));
  auto bad_spec = [](const std::string& text, std::initializer_list<std::string> parts) {
    INFO("spec '" << text << "'");
    require_error([&] { parse(text); }, AXL_ERROR_INVALID_ARGUMENT, parts);
  };
  bad_spec("gpu:2147483648", {"'2147483648'", "out of range", "0..2147483647"});
  bad_spec("gpu:4294967296", {"'4294967296'", "out of range"});
  bad_spec("gpu:" + long_digits, {"out of range"});
  bad_spec("gpu:1_000", {"'1_000'", "not an accelerator id"});
  bad_spec("gpu:\xd9\xa3", {"not an accelerator id"});     // ARABIC-INDIC DIGIT THREE
  bad_spec("gpu:\xef\xbc\x93", {"not an accelerator id"});  // FULLWIDTH DIGIT THREE
  bad_spec("gpu:+3", {"'+3'", "non-negative"});

  auto cli = [](const std::string& in, uint32_t* out) {
    const char* p = in.c_str();
    return axl_calculate_virtual_device_count_from_cli(&p, 1, out);
  };
  uint32_t n = 0;
  REQUIRE(cli("gpu:2147483647", &n) == AXL_SUCCESS);
  CHECK(n == 2147483648u);
  REQUIRE(cli("gpu:0000000000007", &n) == AXL_SUCCESS);
  CHECK(n == 8);
  REQUIRE(cli("gpu:+3,-2147483648", &n) == AXL_SUCCESS);  // MAX's int() takes a sign
  CHECK(n == 4);
  auto bad_cli = [&](const std::string& in, std::initializer_list<std::string> parts) {
    INFO("CLI input '" << in << "'");
    uint32_t out = 12345;
    require_status(cli(in, &out), AXL_ERROR_INVALID_ARGUMENT, parts);
    CHECK(out == 12345);  // nothing written on error
  };
  bad_cli("gpu:4294967296", {"'4294967296'", "out of range", "-2147483648..2147483647"});
  bad_cli("gpu:2147483648", {"'2147483648'", "out of range"});
  bad_cli("gpu:-2147483649", {"'-2147483649'", "out of range"});
  bad_cli("gpu:18446744073709551617", {"out of range"});
  bad_cli("gpu:" + long_digits, {"out of range"});
  bad_cli("gpu:1_000", {"'1_000'", "not an accelerator id"});
  bad_cli("gpu:\xd9\xa3", {"not an accelerator id"});
  bad_cli("gpu:\xef\xbc\x93", {"not an accelerator id"});
  bad_cli("gpu:\v3", {"not an accelerator id"});  // strtoll skipped it
  bad_cli("gpu:\n3", {"not an accelerator id"});
  bad_cli("gpu:3 4", {"'3 4'"});
  bad_cli("gpu:-", {"'-'"});
}

TEST_CASE("last-error record and status names", "[bad_input]") {
  axl_clear_last_error();
  axl_error_info e{};
  e.struct_size = sizeof e;
  REQUIRE(axl_last_error(&e) == AXL_SUCCESS);
  CHECK(e.status == AXL_SUCCESS);
  CHECK(std::string(e.message) == "");
  CHECK(std::string(axl_status_name(AXL_ERROR_FORKED)) == "AXL_ERROR_FORKED");
  CHECK(std::string(axl_status_name(AXL_ERROR_PLUGIN_INVALID)) == "AXL_ERROR_PLUGIN_INVALID");
  CHECK(std::string(axl_status_name(12345)) == "AXL_STATUS_UNKNOWN");
  CHECK(std::string(axl_plugin_state_name(AXL_PLUGIN_STATE_LOADED)) == "loaded");
  CHECK(std::string(axl_plugin_state_name(AXL_PLUGIN_STATE_SHADOWED)) == "shadowed");
  CHECK(std::string(axl_plugin_state_name(AXL_PLUGIN_STATE_UNAVAILABLE)) == "unavailable");
  CHECK(std::string(axl_plugin_state_name(-1)) == "unknown");
  CHECK(axl_abi_version() == ((uint32_t(AXL_ABI_MAJOR) << 16) | AXL_ABI_MINOR));
  CHECK_FALSE(std::string(axl_version_string()).empty());
  // A backend error carries the backend's name.
  Cpu c;
  axl_module_t m = nullptr;
  REQUIRE(axl_module_load_file(c.dev, "/nonexistent.so", 0, &m) != AXL_SUCCESS);
  REQUIRE(axl_last_error(&e) == AXL_SUCCESS);
  CHECK(std::string(e.backend) == "cpu");
  // Errors are per thread.
  std::string other;
  std::thread([&] { other = axl_last_error_message(); }).join();
  CHECK(other == "");
}
