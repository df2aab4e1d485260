// Modules and kernels: loading from a file and from bytes (good and bad
// input), kernel lookup, unloading while launches are queued, and run-time
// compilation.
//
// The raw axl_module_* calls stay raw on purpose: they are the C ABI under
// test, loading from a path and from bytes with the exact statuses for bad
// input (junk and cut-short bytes, missing files and kernels, broken
// source); the modules loaded are then held and used through axl.hpp.
//
// A module is backend-native, so the CTS needs one per api. Every module it
// loads has the kernel axl_cts_increment_u32 (axl_devaddr data, uint32_t n):
// data[i] += 1 for i < n, AXL_TEST_KERNEL_INCREMENT_U32's contract. It finds
//   * `--module NAME=FILE` for backend NAME (a third party's own build);
//   * for api "cpu", its own build of kernels/cts_kernels_cpu.c;
//   * for api "opencl", a device binary of kOpenclSource that the OpenCL
//     platform builds for the device under test (opencl_program.hpp);
//   * for a virtual backend (AXL_PLUGIN_FLAG_VIRTUAL), a kernel list naming
//     it (such backends accept any module and run nothing);
// and skips the parts that need a module elsewhere, saying how to give one.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>

#include "cts.hpp"
#include "hold.hpp"
#include "opencl_program.hpp"
#include "temp_file.hpp"

namespace cts {
namespace {

constexpr const char* kKernel = "axl_cts_increment_u32";

// kKernel in OpenCL C: compiled by cts.module.compile, and built into the
// device binary the other module cases load on api "opencl".
constexpr const char* kOpenclSource =
    "__kernel void axl_cts_increment_u32(__global uint* data, uint n) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < n) data[i] += 1;\n"
    "}\n";

struct ModuleSource {
  std::string path;            // a file holding the module
  std::vector<uint8_t> bytes;  // the same module, read into memory
  std::string missing;         // why there is no module, "" if there is one
  std::unique_ptr<TempFile> temp;
};

// The module for the device under test, as the file comment says.
ModuleSource module_for(Ctx& c) {
  ModuleSource m;
  const BackendUnderTest& b = c.backend();
  auto given = options().modules.find(b.name);
  if (given != options().modules.end()) {
    m.path = given->second;
  } else if (b.is_virtual()) {
    const std::string list = cat("# axl-cts\n", kKernel, "\n");
    m.bytes.assign(list.begin(), list.end());
    m.temp = std::make_unique<TempFile>(m.bytes);
    m.path = m.temp->path();
    if (m.path.empty()) m.missing = "cannot write a temporary module file (TMPDIR, else /tmp)";
    return m;
  } else if (c.info().api == "cpu" && !options().cpu_module.empty()) {
    m.path = options().cpu_module;
  } else if (c.info().api == "opencl") {
    axl::Queue q = c.dev().create_queue();
    uint64_t handle = 0;
    std::string why;
    if (axl_queue_native_handle(q.get(), &handle) != AXL_SUCCESS) {
      m.missing = cat("axl_queue_native_handle failed: ", last_error().message);
      return m;
    }
    m.bytes = opencl_program_binary(handle, kOpenclSource, &why);
    if (m.bytes.empty()) {
      m.missing = cat("the OpenCL platform did not build the CTS kernel: ", why);
      return m;
    }
    m.temp = std::make_unique<TempFile>(m.bytes);
    m.path = m.temp->path();
    if (m.path.empty()) m.missing = "cannot write a temporary module file (TMPDIR, else /tmp)";
    return m;
  } else {
    m.missing = cat("the CTS has no module for api '", c.info().api, "': pass --module ", b.name,
                    "=FILE, a module with the kernel ", kKernel,
                    " (axl_devaddr data, uint32_t n), AXL_TEST_KERNEL_INCREMENT_U32's contract");
    return m;
  }
  std::ifstream in(m.path, std::ios::binary);
  m.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) m.bytes.clear();
  if (m.bytes.empty()) m.missing = cat("the module file '", m.path, "' cannot be read");
  return m;
}

// Launches the CTS kernel `times` times over n elements of a fresh buffer of
// zeros and checks the result (on backends that run kernels).
void check_increments(Ctx& c, const axl::Kernel& k, int times, const std::string& what) {
  const axl::Device& dev = c.dev();
  axl::Queue q = dev.create_queue();
  const uint32_t n = 1000;
  axl::Buffer buf = dev.allocate(n * 4);
  const std::vector<uint32_t> zeros(n, 0);
  q.copy_from_host(buf, zeros.data(), n * 4);
  for (int t = 0; t < times; ++t)
    q.launch(k, {4, 1, 1}, {256, 1, 1}, {axl::Arg::buffer(buf), axl::Arg::scalar(n)});
  std::vector<uint32_t> out(n, 0);
  q.copy_to_host(out.data(), buf, n * 4);
  q.synchronize();
  if (c.backend().is_virtual()) return;
  size_t bad = 0;
  for (uint32_t v : out) bad += v != uint32_t(times);
  c.check(bad == 0, cat(what, ": ", bad, " of ", n, " elements are not ", times, " (first ", out[0], ")"));
}

axl::Module load_file(Ctx& c, const std::string& path, const std::string& what) {
  axl_module_t m = nullptr;
  c.ok(axl_module_load_file(c.dev().get(), path.c_str(), AXL_MODULE_FORMAT_AUTO, &m), what);
  return axl::Module(m);
}

axl::Module load_bytes(Ctx& c, const std::vector<uint8_t>& bytes, const std::string& what) {
  axl_module_t m = nullptr;
  c.ok(axl_module_load_data(c.dev().get(), bytes.data(), bytes.size(), AXL_MODULE_FORMAT_AUTO, &m), what);
  return axl::Module(m);
}

// Requires a module; skips the whole case without one.
ModuleSource need_module(Ctx& c) {
  ModuleSource m = module_for(c);
  if (!m.missing.empty()) c.skip(m.missing);
  return m;
}

}  // namespace

TEST_CASE("cts.module.load", "[module]") {
  for_each_device("cts.module.load", [](Ctx& c) {
    c.need_slot("module_load");
    const axl_device_t d = c.dev().get();
    // Bad input first: it needs no module of the backend's own.
    static const unsigned char junk[] = "not a module of any backend";
    axl_module_t m = nullptr;
    c.expect_status(axl_module_load_data(d, junk, sizeof junk, AXL_MODULE_FORMAT_AUTO, &m),
                    AXL_ERROR_INVALID_ARGUMENT, "loading 28 bytes that are no module");
    c.check(m == nullptr, "a failed load handed out a module");
    const std::string nowhere = "/nonexistent/axl-cts/no-such-module";
    c.expect_status(axl_module_load_file(d, nowhere.c_str(), AXL_MODULE_FORMAT_AUTO, &m), AXL_ERROR_NOT_FOUND,
                    "loading a module file that does not exist", nowhere);
    c.check(m == nullptr, "a failed load handed out a module");

    ModuleSource src = module_for(c);
    if (!src.missing.empty()) {
      c.skip_part(cat("only bad input checked: ", src.missing));
      return;
    }
    if (c.info().api == "opencl") {
      // The module is the driver's own binary, which only the driver parses,
      // and PoCL 3.1 reads past the end of a truncated one (a crash).
      c.skip_part("a module cut short is not loaded on api 'opencl': an OpenCL device binary is "
                  "the driver's format, and PoCL 3.1 crashes in clCreateProgramWithBinary on a "
                  "truncated one");
    } else if (!c.backend().is_virtual()) {
      // A module cut short is refused, from bytes and from a file alike; it
      // must not crash the process (a dlopen of a truncated ELF does).
      const std::vector<uint8_t> half(src.bytes.begin(), src.bytes.begin() + src.bytes.size() / 2);
      c.expect_status(axl_module_load_data(d, half.data(), half.size(), AXL_MODULE_FORMAT_AUTO, &m),
                      AXL_ERROR_INVALID_ARGUMENT, cat("loading the first ", half.size(), " bytes of a module"));
      TempFile cut(half);
      if (!cut.path().empty())
        c.expect_status(axl_module_load_file(d, cut.path().c_str(), AXL_MODULE_FORMAT_AUTO, &m),
                        AXL_ERROR_INVALID_ARGUMENT, "loading a module file cut in half");
    }

    // The same module from its file and from its bytes; both run.
    axl::Module from_file = load_file(c, src.path, cat("loading the module file '", src.path, "'"));
    std::vector<uint8_t> bytes = src.bytes;
    axl::Module from_bytes = load_bytes(c, bytes, cat("loading the module from ", bytes.size(), " bytes"));
    // The bytes are the caller's only during the call (plugin.h, axl_module_desc).
    std::fill(bytes.begin(), bytes.end(), uint8_t{0});
    check_increments(c, from_file.kernel(kKernel), 1, "a kernel of the module loaded from a file");
    check_increments(c, from_bytes.kernel(kKernel), 2,
                     "a kernel of the module loaded from bytes the caller then overwrote");
  });
}

TEST_CASE("cts.module.get_kernel", "[module]") {
  for_each_device("cts.module.get_kernel", [](Ctx& c) {
    c.need_slot("module_load");
    c.need_slot("module_get_kernel");
    ModuleSource src = need_module(c);
    axl::Module mod = load_file(c, src.path, cat("loading '", src.path, "'"));
    axl::Kernel k = mod.kernel(kKernel);
    c.check(k.name() == kKernel, cat("the kernel looked up as ", kKernel, " is named '", k.name(), "'"));
    axl::Kernel again = mod.kernel(kKernel);
    c.check(static_cast<bool>(again), "looking the same kernel up twice failed");

    const std::string missing = "axl_cts_no_such_kernel";
    axl_kernel_t none = nullptr;
    c.expect_status(axl_module_get_kernel(mod.get(), missing.c_str(), &none), AXL_ERROR_NOT_FOUND,
                    "looking up a kernel the module does not have", missing);
    c.check(none == nullptr, "a failed lookup handed out a kernel");
    // A prefix of a real name is another name.
    c.expect_status(axl_module_get_kernel(mod.get(), "axl_cts_increment", &none), AXL_ERROR_NOT_FOUND,
                    "looking up a prefix of a kernel's name", "axl_cts_increment");

    // The kernel lives as long as its module, which the kernel keeps: the
    // application's module handle may go first.
    mod = axl::Module();
    check_increments(c, k, 3, "a kernel whose module handle was released");
  });
}

TEST_CASE("cts.module.unload_while_queued", "[module]") {
  for_each_device("cts.module.unload_while_queued", [](Ctx& c) {
    for (const char* s : {"module_load", "module_get_kernel", "module_unload", "queue_launch"}) c.need_slot(s);
    ModuleSource src = need_module(c);
    const axl::Device& dev = c.dev();
    axl::Queue q = dev.create_queue();
    const uint32_t n = 4096;
    constexpr int kLaunches = 4;
    axl::Buffer buf = dev.allocate(n * 4);
    const std::vector<uint32_t> zeros(n, 0);
    q.copy_from_host(buf, zeros.data(), n * 4);
    q.synchronize();

    Hold hold(c, q);
    if (!hold.held())
      c.skip("no host callbacks and no completion flags: a queue cannot be held, so launches cannot be "
             "kept pending while the module is unloaded");
    {
      axl::Module mod = load_bytes(c, src.bytes, "loading the module");
      axl::Kernel k = mod.kernel(kKernel);
      for (int t = 0; t < kLaunches; ++t)
        q.launch(k, {16, 1, 1}, {256, 1, 1}, {axl::Arg::buffer(buf), axl::Arg::scalar(n)});
      // The last references go here: the core calls module_unload now, with
      // every launch still behind the held gate.
    }
    axl::Event done = dev.create_event();
    q.record(done);
    c.check(!done.is_ready(), "the queue ran past its gate before it was opened");
    hold.release();
    // plugin.h: the plugin defers the unload until the launches ran.
    const axl_status s = axl_queue_synchronize(q.get());
    c.expect_status(s, AXL_SUCCESS, "synchronizing the queue whose module was unloaded under its launches");
    if (c.backend().is_virtual()) return;
    std::vector<uint32_t> out(n, 0);
    q.copy_to_host(out.data(), buf, n * 4);
    q.synchronize();
    size_t bad = 0;
    for (uint32_t v : out) bad += v != uint32_t(kLaunches);
    c.check(bad == 0, cat(kLaunches, " launches queued before their module was unloaded: ", bad, " of ", n,
                          " elements are not ", kLaunches, " (first ", out[0], ")"));
  });
}

TEST_CASE("cts.module.compile", "[module]") {
  for_each_device("cts.module.compile", [](Ctx& c) {
    c.need_slot("module_compile");
    const std::string& api = c.info().api;
    int32_t language = 0, other = 0;
    if (api == "cuda") language = AXL_SOURCE_LANGUAGE_CUDA, other = AXL_SOURCE_LANGUAGE_HIP;
    if (api == "hip") language = AXL_SOURCE_LANGUAGE_HIP, other = AXL_SOURCE_LANGUAGE_CUDA;
    if (api == "opencl") language = AXL_SOURCE_LANGUAGE_OPENCL_C, other = AXL_SOURCE_LANGUAGE_CUDA;
    if (!language) c.skip(cat("module_compile is filled but the CTS knows no source language for api '", api, "'"));
    const axl_device_t d = c.dev().get();
    // One text is CUDA C++ and HIP C++; OpenCL C has its own.
    const std::string source = language == AXL_SOURCE_LANGUAGE_OPENCL_C
                                   ? std::string(kOpenclSource)
                                   : cat("extern \"C\" __global__ void ", kKernel,
                                         "(unsigned* data, unsigned n) {\n"
                                         "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                         "  if (i < n) data[i] += 1;\n"
                                         "}\n");
    axl_module_t m = nullptr;
    const axl_status s = axl_module_compile(d, language, source.c_str(), "axl_cts.cu", nullptr, 0, &m);
    if (s == AXL_ERROR_BACKEND_UNAVAILABLE) {
      // plugin.h: the compiler library cannot be loaded; the message says what was tried.
      const LastError e = last_error();
      c.check(!e.message.empty(), "module_compile answered BACKEND_UNAVAILABLE with no message");
      c.skip(cat("no run-time compiler here: ", e.message));
    }
    c.ok(s, "compiling a 4-line kernel");
    axl::Module mod(m);
    check_increments(c, mod.kernel(kKernel), 1, "the compiled kernel");

    const char* broken = "extern \"C\" __global__ void broken( { this is not C++ }";
    axl_module_t bad = nullptr;
    c.expect_status(axl_module_compile(d, language, broken, "broken.cu", nullptr, 0, &bad),
                    AXL_ERROR_INVALID_ARGUMENT, "compiling a program with syntax errors");
    c.check(bad == nullptr, "a failed compile handed out a module");
    const axl_status o = axl_module_compile(d, other, source.c_str(), "axl_cts.cu", nullptr, 0, &bad);
    if (o == AXL_SUCCESS) {
      axl_module_release(bad);
      c.note(cat("the backend also compiles language ", other));
    } else {
      c.expect_status(o, AXL_ERROR_UNSUPPORTED, cat("compiling language ", other, " on api '", api, "'"));
    }
  });
}

}  // namespace cts
