// bench_vs_pocl: axl.h against raw OpenCL on PoCL's CPU device, in one
// process, in interleaved rounds (issue 13 item 6, issue 16 item 1).
//
// Sides:
//   raw_cl      OpenCL called directly on PoCL's device: the plugin's own
//               loader table (plugins/opencl/src/cl_loader.cpp) resolved
//               from libOpenCL.so.1, a context and an in-order queue
//               without profiling (what an OpenCL program writes).
//   axl_opencl  axl.h on the opencl backend, on the same PoCL device
//               (AXL_OPENCL_DEVICE_TYPES=all is set here when unset).
//   axl_cpu     axl.h on the cpu backend, kernels from the module
//               bench_vs_pocl_kernels.c, built -O3 for this machine's CPU
//               (-march=native) as PoCL builds its kernels.
//   openmp      saxpy only: the same loop with OpenMP (saxpy_openmp.cpp),
//               built like the module, the machine's limit.
//   memcpy      256 MiB copy only: memcpy into a destination 64 bytes off a
//               page (issue 16 item 7's baseline).
//
// Work: empty-kernel enqueue (batches of 64 enqueues timed, then an untimed
// wait), launch + wait round trip (p50 and p90), 4-byte host->device write
// enqueue (batches of 64), 256 MiB host->device then device->host (each
// enqueue + wait), saxpy over 16M floats (enqueue + wait; 12 bytes moved per
// element; the process's CPU-seconds per wall-second over the same launches
// are recorded beside the GB/s). Every round runs every measurement on every side, the side
// order reversed on odd rounds. A round's figure is the median of its
// samples; the report gives per side the median and min-max over rounds, and
// each ratio as the median (min-max) of the per-round ratios of two sides
// measured in the same round. Results are checked after the last round:
// saxpy's y against the launches made, the copies' bytes against the source.
//
// After the rounds, each side alone: 10 windows of 3 saxpys with no other
// side's work between them (saxpy_GBps_alone, saxpy_cpu_s_per_s_alone; no
// target), which separates what the interleaving costs a side's first
// launch from what its threads do. Then the CPU the process burns in the second after its last
// saxpy on the cpu backend (the pool's helpers spinning, then parked) is
// printed as the pool's idle cost.
//
// AXL_BENCH_ROUNDS (default 15) sets the rounds. Without the ICD loader, a
// PoCL platform or the axl opencl device it prints why and exits 0.
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "axl/common/driver_library.hpp"
#include "axl/common/thread_pool.hpp"
#include "bench_common.hpp"
#include "cl_loader.hpp"
#include "saxpy_openmp.hpp"

namespace {

using namespace axl_bench;
using clock_type = std::chrono::steady_clock;

constexpr uint64_t kCopyBytes = 256ull << 20;
constexpr uint32_t kSaxpyN = 1u << 24;  // 16M floats
constexpr uint64_t kSaxpyBytesMoved = 12ull * kSaxpyN;  // read x, read y, write y
constexpr float kAlpha = 0.5f;
constexpr int kBatch = 64;           // enqueues per timed batch
constexpr int kBatchesPerRound = 24;
constexpr int kRoundTripsPerRound = 200;
constexpr int kCopiesPerRound = 3;
constexpr int kSaxpysPerRound = 3;
// Empty kernel: one block of 64; saxpy on OpenCL: work-groups of 256; on the
// cpu backend blocks of 1024 (one kernel call per block, so fewer, longer
// calls; the vectorised loop is the same).
constexpr uint32_t kEmptyBlock = 64;
constexpr uint32_t kClSaxpyBlock = 256;
constexpr uint32_t kCpuSaxpyBlock = 1024;

// One program for PoCL, raw and through the opencl backend.
constexpr const char* kClSource = R"CL(
__kernel void axl_bench_empty(void) {}
__kernel void axl_bench_saxpy(float a, __global const float* x, __global float* y, uint n) {
  const size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)CL";

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// ---------------------------------------------------------------------------
// Raw OpenCL on PoCL's device.
// ---------------------------------------------------------------------------
class RawCl {
 public:
  // Empty `why` and true: ready; false: the reason to skip.
  bool open(std::string* why) {
    const axl::opencl::LoadResult lr = axl::opencl::load_loader(lib_, cl_);
    if (lr.kind != axl::opencl::LoadResult::Kind::kOk) {
      *why = "no usable OpenCL ICD loader: " + lr.detail;
      return false;
    }
    cl_uint np = 0;
    if (cl_.clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) {
      *why = "the OpenCL ICD loader lists no platform";
      return false;
    }
    std::vector<cl_platform_id> ps(np);
    ok(cl_.clGetPlatformIDs(np, ps.data(), nullptr), "clGetPlatformIDs");
    for (cl_platform_id p : ps) {
      if (platform_string(p, CL_PLATFORM_NAME).find("Portable Computing Language") == std::string::npos)
        continue;
      cl_uint nd = 0;
      if (cl_.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &device_, &nd) == CL_SUCCESS && nd > 0) break;
      device_ = nullptr;
    }
    if (device_ == nullptr) {
      *why = "no PoCL platform with a device (platform name 'Portable Computing Language')";
      return false;
    }
    char name[256] = {};
    ok(cl_.clGetDeviceInfo(device_, CL_DEVICE_NAME, sizeof name - 1, name, nullptr), "clGetDeviceInfo");
    device_name_ = name;
    cl_int r = CL_SUCCESS;
    context_ = cl_.clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &r);
    ok(r, "clCreateContext");
    queue_ = cl_.clCreateCommandQueue(context_, device_, 0, &r);
    ok(r, "clCreateCommandQueue");
    const char* source = kClSource;
    program_ = cl_.clCreateProgramWithSource(context_, 1, &source, nullptr, &r);
    ok(r, "clCreateProgramWithSource");
    ok(cl_.clBuildProgram(program_, 1, &device_, "", nullptr, nullptr), "clBuildProgram");
    empty_ = cl_.clCreateKernel(program_, "axl_bench_empty", &r);
    ok(r, "clCreateKernel(axl_bench_empty)");
    saxpy_ = cl_.clCreateKernel(program_, "axl_bench_saxpy", &r);
    ok(r, "clCreateKernel(axl_bench_saxpy)");
    return true;
  }

  const axl::opencl::ClApi& cl() const { return cl_; }
  const std::string& device_name() const { return device_name_; }
  cl_command_queue queue() const { return queue_; }
  cl_kernel empty() const { return empty_; }
  cl_kernel saxpy() const { return saxpy_; }

  cl_mem buffer(uint64_t bytes) {
    cl_int r = CL_SUCCESS;
    cl_mem m = cl_.clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &r);
    ok(r, "clCreateBuffer");
    return m;
  }

  void ok(cl_int r, const char* what) const {
    if (r != CL_SUCCESS) die(std::string("raw OpenCL: ") + what + " failed: " + axl::opencl::result_name(r));
  }

 private:
  std::string platform_string(cl_platform_id p, cl_platform_info what) const {
    char buf[256] = {};
    if (cl_.clGetPlatformInfo(p, what, sizeof buf - 1, buf, nullptr) != CL_SUCCESS) return "";
    return buf;
  }

  // Stays mapped for the process, like the plugin's (vendor runtimes keep
  // threads and exit handlers); contexts and queues are left to exit too.
  axl::common::DriverLibrary lib_;
  axl::opencl::ClApi cl_{};
  cl_device_id device_ = nullptr;
  std::string device_name_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_program program_ = nullptr;
  cl_kernel empty_ = nullptr;
  cl_kernel saxpy_ = nullptr;
};

// ---------------------------------------------------------------------------
// One side of the comparison: the same operations, each an enqueue (wait()
// waits for all of them).
// ---------------------------------------------------------------------------
struct Side {
  std::string name;
  std::function<void()> launch_empty;
  std::function<void()> write4;
  std::function<void()> copy_in;   // 256 MiB host -> device
  std::function<void()> copy_out;  // 256 MiB device -> host
  std::function<void()> saxpy;
  std::function<void()> wait;
  // After the rounds: saxpy's y and the copied bytes, checked; a message
  // naming the first wrong element, empty when right.
  std::function<std::string(uint64_t saxpys)> check;
};

// Shared host memory: every side copies from the same source into the same
// destination, so page state and alignment are the same for all.
struct HostMemory {
  std::byte* src = nullptr;
  std::byte* dst = nullptr;
  std::vector<float> x0, y0;  // saxpy's initial arrays

  HostMemory() {
    src = static_cast<std::byte*>(std::aligned_alloc(4096, kCopyBytes));
    // The memcpy baseline writes 64 bytes past a page start: one allocation
    // with room for it (issue 16 item 7: page-aligned destinations are
    // slower on some CPUs, the axl copies land where their buffers are).
    dst = static_cast<std::byte*>(std::aligned_alloc(4096, kCopyBytes + 4096));
    if (src == nullptr || dst == nullptr) die("cannot allocate 2 x 256 MiB of host memory");
    for (uint64_t i = 0; i < kCopyBytes; ++i) src[i] = static_cast<std::byte>(i * 131 + 7);
    std::memset(dst, 0, kCopyBytes + 4096);
    x0.resize(kSaxpyN);
    y0.resize(kSaxpyN);
    for (uint32_t i = 0; i < kSaxpyN; ++i) {
      x0[i] = static_cast<float>(i % 7);  // a, x and y keep every result exact
      y0[i] = 1.0f;
    }
  }
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  ~HostMemory() {
    std::free(src);
    std::free(dst);
  }

  // The first element of y that is not y0 + saxpys * a * x0, or "".
  std::string check_saxpy(const std::vector<float>& y, uint64_t saxpys) const {
    for (uint32_t i = 0; i < kSaxpyN; ++i) {
      const float want = y0[i] + static_cast<float>(saxpys) * kAlpha * x0[i];
      if (y[i] != want)
        return "saxpy: y[" + std::to_string(i) + "] = " + std::to_string(y[i]) + " after " +
               std::to_string(saxpys) + " launches, expected " + std::to_string(want);
    }
    return "";
  }
  std::string check_copy() const {
    return std::memcmp(src, dst, kCopyBytes) == 0 ? "" : "256 MiB copy: bytes differ from the source";
  }
};

Side raw_side(RawCl& raw, HostMemory& host) {
  const auto& cl = raw.cl();
  cl_command_queue q = raw.queue();
  cl_mem small = raw.buffer(4);
  cl_mem big = raw.buffer(kCopyBytes);
  cl_mem x = raw.buffer(sizeof(float) * kSaxpyN);
  cl_mem y = raw.buffer(sizeof(float) * kSaxpyN);
  raw.ok(cl.clEnqueueWriteBuffer(q, x, CL_TRUE, 0, sizeof(float) * kSaxpyN, host.x0.data(), 0, nullptr, nullptr),
         "clEnqueueWriteBuffer(x)");
  raw.ok(cl.clEnqueueWriteBuffer(q, y, CL_TRUE, 0, sizeof(float) * kSaxpyN, host.y0.data(), 0, nullptr, nullptr),
         "clEnqueueWriteBuffer(y)");
  // Arguments set once, as an OpenCL program would.
  cl_kernel k = raw.saxpy();
  const cl_uint n = kSaxpyN;
  raw.ok(cl.clSetKernelArg(k, 0, sizeof kAlpha, &kAlpha), "clSetKernelArg(a)");
  raw.ok(cl.clSetKernelArg(k, 1, sizeof x, &x), "clSetKernelArg(x)");
  raw.ok(cl.clSetKernelArg(k, 2, sizeof y, &y), "clSetKernelArg(y)");
  raw.ok(cl.clSetKernelArg(k, 3, sizeof n, &n), "clSetKernelArg(n)");
  static const uint32_t value4 = 42;
  Side s;
  s.name = "raw_cl";
  s.launch_empty = [&raw, q] {
    const size_t global = kEmptyBlock, local = kEmptyBlock;
    raw.ok(raw.cl().clEnqueueNDRangeKernel(q, raw.empty(), 1, nullptr, &global, &local, 0, nullptr, nullptr),
           "clEnqueueNDRangeKernel(empty)");
  };
  s.write4 = [&raw, q, small] {
    raw.ok(raw.cl().clEnqueueWriteBuffer(q, small, CL_FALSE, 0, 4, &value4, 0, nullptr, nullptr),
           "clEnqueueWriteBuffer(4 bytes)");
  };
  s.copy_in = [&raw, &host, q, big] {
    raw.ok(raw.cl().clEnqueueWriteBuffer(q, big, CL_FALSE, 0, kCopyBytes, host.src, 0, nullptr, nullptr),
           "clEnqueueWriteBuffer(256 MiB)");
  };
  s.copy_out = [&raw, &host, q, big] {
    raw.ok(raw.cl().clEnqueueReadBuffer(q, big, CL_FALSE, 0, kCopyBytes, host.dst, 0, nullptr, nullptr),
           "clEnqueueReadBuffer(256 MiB)");
  };
  s.saxpy = [&raw, q, k] {
    const size_t global = kSaxpyN, local = kClSaxpyBlock;
    raw.ok(raw.cl().clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, &local, 0, nullptr, nullptr),
           "clEnqueueNDRangeKernel(saxpy)");
  };
  s.wait = [&raw, q] { raw.ok(raw.cl().clFinish(q), "clFinish"); };
  s.check = [&raw, &host, q, big, y](uint64_t saxpys) {
    std::vector<float> out(kSaxpyN);
    raw.ok(raw.cl().clEnqueueReadBuffer(q, y, CL_TRUE, 0, sizeof(float) * kSaxpyN, out.data(), 0, nullptr, nullptr),
           "clEnqueueReadBuffer(y)");
    std::string e = host.check_saxpy(out, saxpys);
    if (!e.empty()) return e;
    std::memset(host.dst, 0, kCopyBytes);
    raw.ok(raw.cl().clEnqueueReadBuffer(q, big, CL_TRUE, 0, kCopyBytes, host.dst, 0, nullptr, nullptr),
           "clEnqueueReadBuffer(256 MiB)");
    return host.check_copy();
  };
  return s;
}

// An axl device's side: a queue, the two kernels, the buffers.
Side axl_side(const std::string& name, axl_device_t dev, axl_module_t mod, uint32_t saxpy_block,
              HostMemory& host) {
  axl_queue_t q = nullptr;
  check(axl_queue_create(dev, 0, &q), "axl_queue_create");
  axl_kernel_t empty = nullptr, saxpy = nullptr;
  check(axl_module_get_kernel(mod, "axl_bench_empty", &empty), "axl_module_get_kernel(axl_bench_empty)");
  check(axl_module_get_kernel(mod, "axl_bench_saxpy", &saxpy), "axl_module_get_kernel(axl_bench_saxpy)");
  axl_buffer_t small = nullptr, big = nullptr, x = nullptr, y = nullptr;
  check(axl_buffer_create(dev, 4, 0, &small), "axl_buffer_create(4)");
  check(axl_buffer_create(dev, kCopyBytes, 0, &big), "axl_buffer_create(256 MiB)");
  check(axl_buffer_create(dev, sizeof(float) * kSaxpyN, 0, &x), "axl_buffer_create(x)");
  check(axl_buffer_create(dev, sizeof(float) * kSaxpyN, 0, &y), "axl_buffer_create(y)");
  check(axl_queue_copy_from_host(q, x, 0, host.x0.data(), sizeof(float) * kSaxpyN), "copy x");
  check(axl_queue_copy_from_host(q, y, 0, host.y0.data(), sizeof(float) * kSaxpyN), "copy y");
  check(axl_queue_synchronize(q), "axl_queue_synchronize");
  static const uint32_t value4 = 42;
  static const uint32_t n = kSaxpyN;
  // The argument list lives as long as the side (the lambdas refer to it).
  auto args = std::make_shared<std::vector<axl_launch_arg>>(std::vector<axl_launch_arg>{
      {AXL_KERNEL_ARG_SCALAR, sizeof kAlpha, nullptr, &kAlpha},
      {AXL_KERNEL_ARG_BUFFER, 0, x, nullptr},
      {AXL_KERNEL_ARG_BUFFER, 0, y, nullptr},
      {AXL_KERNEL_ARG_SCALAR, sizeof n, nullptr, &n}});
  Side s;
  s.name = name;
  s.launch_empty = [q, empty] {
    const uint32_t grid[3] = {1, 1, 1}, block[3] = {kEmptyBlock, 1, 1};
    check(axl_queue_launch(q, empty, grid, block, 0, nullptr, 0), "axl_queue_launch(empty)");
  };
  s.write4 = [q, small] { check(axl_queue_copy_from_host(q, small, 0, &value4, 4), "copy 4 bytes"); };
  s.copy_in = [q, big, &host] {
    check(axl_queue_copy_from_host(q, big, 0, host.src, kCopyBytes), "copy 256 MiB in");
  };
  s.copy_out = [q, big, &host] {
    check(axl_queue_copy_to_host(q, host.dst, big, 0, kCopyBytes), "copy 256 MiB out");
  };
  s.saxpy = [q, saxpy, args, saxpy_block] {
    const uint32_t grid[3] = {kSaxpyN / saxpy_block, 1, 1}, block[3] = {saxpy_block, 1, 1};
    check(axl_queue_launch(q, saxpy, grid, block, 0, args->data(), static_cast<uint32_t>(args->size())),
          "axl_queue_launch(saxpy)");
  };
  s.wait = [q] { check(axl_queue_synchronize(q), "axl_queue_synchronize"); };
  s.check = [q, big, y, &host](uint64_t saxpys) {
    std::vector<float> out(kSaxpyN);
    check(axl_queue_copy_to_host(q, out.data(), y, 0, sizeof(float) * kSaxpyN), "copy y out");
    check(axl_queue_synchronize(q), "axl_queue_synchronize");
    std::string e = host.check_saxpy(out, saxpys);
    if (!e.empty()) return e;
    std::memset(host.dst, 0, kCopyBytes);
    check(axl_queue_copy_to_host(q, host.dst, big, 0, kCopyBytes), "copy 256 MiB out");
    check(axl_queue_synchronize(q), "axl_queue_synchronize");
    return host.check_copy();
  };
  return s;
}

// The opencl backend's device that is raw's PoCL device (same device name), or
// NULL with the reason.
axl_device_t axl_opencl_device(const std::string& cl_name, std::string* why) {
  uint32_t n = 0;
  check(axl_device_count("gpu", &n), "axl_device_count(gpu)");
  for (uint32_t i = 0; i < n; ++i) {
    axl_device_t d = nullptr;
    check(axl_device_get("gpu", i, &d), "axl_device_get(gpu)");
    axl_device_info info{};
    info.struct_size = sizeof info;
    check(axl_device_get_info(d, &info), "axl_device_get_info");
    // The backend's model name is "<CL_DEVICE_VENDOR> <CL_DEVICE_NAME>".
    const std::string model = info.model_name;
    if (std::string(info.api) == "opencl" && model.size() >= cl_name.size() &&
        model.compare(model.size() - cl_name.size(), cl_name.size(), cl_name) == 0)
      return d;
    axl_device_release(d);
  }
  *why = "axl has no opencl device named '" + cl_name + "' (" + std::to_string(n) +
         " accelerators; is the opencl plugin built, and AXL_OPENCL_DEVICE_TYPES=all?)";
  return nullptr;
}

// ---------------------------------------------------------------------------
// Measurements: each records one figure per round per side into
// samples()["<measure>/<side>"] (bench_common.hpp).
// ---------------------------------------------------------------------------
void record(const std::string& measure, const Side& s, double v) {
  samples()[measure + "/" + s.name].push_back(v);
}

// ns per enqueue, the median of the round's batches.
void measure_enqueue(const std::string& measure, const Side& s, const std::function<void()>& op) {
  std::vector<double> per_batch;
  for (int b = 0; b < kBatchesPerRound; ++b) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < kBatch; ++i) op();
    per_batch.push_back(seconds_since(t0) * 1e9 / kBatch);
    s.wait();
  }
  record(measure, s, median(per_batch));
}

void measure_round_trip(const Side& s) {
  std::vector<double> ns;
  for (int i = 0; i < kRoundTripsPerRound; ++i) {
    const auto t0 = clock_type::now();
    s.launch_empty();
    s.wait();
    ns.push_back(seconds_since(t0) * 1e9);
  }
  record("launch_wait_p50_ns", s, percentile(ns, 0.5));
  record("launch_wait_p90_ns", s, percentile(ns, 0.9));
}

// GB/s (1e9 B/s) of `bytes` moved by op + wait, the round's median.
double timed_gbps(const Side& s, const std::function<void()>& op, uint64_t bytes, int times) {
  std::vector<double> v;
  for (int i = 0; i < times; ++i) {
    const auto t0 = clock_type::now();
    op();
    s.wait();
    v.push_back(static_cast<double>(bytes) / seconds_since(t0) / 1e9);
  }
  return median(v);
}

// The process's CPU time (every thread's), in seconds.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// saxpy_GBps as timed_gbps, and the CPU-seconds per wall-second the process
// spent over the same launches (issue 16 item 2: every core busy during the
// kernel). Process-wide: whatever the side's own threads do counts, and so
// does any other side's thread still spinning.
//
// Also GB moved per CPU-second over those launches: what the kernel code
// itself achieves per core. On a machine loaded by other processes the
// wall-clock figure mostly measures the scheduler (threads preempted for
// whole time slices), this one much less.
//
// `suffix` names the series: "" for the interleaved rounds, "_alone" for
// the windows of one side back to back (main()).
void measure_saxpy(const Side& s, const std::string& suffix = "") {
  const double cpu0 = process_cpu_seconds();
  const auto t0 = clock_type::now();
  record("saxpy_GBps" + suffix, s, timed_gbps(s, s.saxpy, kSaxpyBytesMoved, kSaxpysPerRound));
  const double wall = seconds_since(t0);
  const double cpu = process_cpu_seconds() - cpu0;
  record("saxpy_cpu_s_per_s" + suffix, s, cpu / wall);
  record("saxpy_GB_per_cpu_s" + suffix, s, static_cast<double>(kSaxpyBytesMoved) * kSaxpysPerRound / cpu / 1e9);
}

void measure_copies(const Side& s) {
  std::vector<double> in, out, both;
  for (int i = 0; i < kCopiesPerRound; ++i) {
    const auto t0 = clock_type::now();
    s.copy_in();
    s.wait();
    const double t_in = seconds_since(t0);
    const auto t1 = clock_type::now();
    s.copy_out();
    s.wait();
    const double t_out = seconds_since(t1);
    in.push_back(kCopyBytes / t_in / 1e9);
    out.push_back(kCopyBytes / t_out / 1e9);
    both.push_back(2.0 * kCopyBytes / (t_in + t_out) / 1e9);
  }
  record("copy_in_GBps", s, median(in));
  record("copy_out_GBps", s, median(out));
  record("copy_in_out_GBps", s, median(both));
}

// ---------------------------------------------------------------------------
// Report.
// ---------------------------------------------------------------------------
void print_series(const std::string& measure, const std::vector<std::string>& sides) {
  for (const std::string& side : sides) {
    auto it = samples().find(measure + "/" + side);
    if (it == samples().end() || it->second.empty()) continue;
    const std::vector<double>& v = it->second;
    std::printf("  %-20s %-12s median %10s  min-max %s-%s\n", measure.c_str(), side.c_str(),
                fmt(median(v)).c_str(), fmt(minimum(v)).c_str(),
                fmt(*std::max_element(v.begin(), v.end())).c_str());
  }
}

struct RatioSpec {
  std::string measure, num, den;
  enum Kind { kAtMost, kAtLeast, kReport } kind;
  double target;  // unused for kReport
  std::string issue;
};

// A side's best round: the lowest time (measures in ns) or the highest
// bandwidth (in GB/s). On a loaded machine the best rounds are the ones the
// other processes disturbed least.
double best(const std::string& measure, const std::vector<double>& v) {
  const bool is_time = measure.size() > 3 && measure.compare(measure.size() - 3, 3, "_ns") == 0;
  return is_time ? minimum(v) : *std::max_element(v.begin(), v.end());
}

// Per-round ratios of two sides; the verdict on their median. The ratio of
// the two sides' best rounds is printed alongside.
void print_ratio(const RatioSpec& r) {
  const auto& a = samples()[r.measure + "/" + r.num];
  const auto& b = samples()[r.measure + "/" + r.den];
  std::vector<double> q;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) q.push_back(a[i] / b[i]);
  if (q.empty()) return;
  const double med = median(q);
  const std::string what = r.measure + " " + r.num + "/" + r.den;
  const std::string range = "min-max " + fmt(minimum(q)) + "-" + fmt(*std::max_element(q.begin(), q.end())) +
                            " over " + std::to_string(q.size()) + " rounds; best/best " +
                            fmt(best(r.measure, a) / best(r.measure, b)) + "; " + r.issue;
  if (r.kind == RatioSpec::kReport) {
    std::printf("RATIO %s = %s (no target; %s)\n", what.c_str(), fmt(med).c_str(), range.c_str());
    return;
  }
  const bool at_most = r.kind == RatioSpec::kAtMost;
  const bool met = at_most ? med <= r.target : med >= r.target;
  std::printf("RATIO %s = %s (target %s %s; %s): %s\n", what.c_str(), fmt(med).c_str(), at_most ? "<=" : ">=",
              fmt(r.target, 2).c_str(), range.c_str(), met ? "MET" : "NOT MET");
}

// An absolute target on one side's median, printed as the ratio to the
// limit: at most `limit` (issue 16 item 3's latencies, in ns) or at least it
// (item 2's CPU-seconds per second).
void print_absolute(const std::string& measure, const std::string& side, double limit, RatioSpec::Kind kind,
                    const std::string& unit, const std::string& issue) {
  const auto& v = samples()[measure + "/" + side];
  if (v.empty()) return;
  const double med = median(v);
  const bool at_most = kind == RatioSpec::kAtMost;
  const bool met = at_most ? med <= limit : med >= limit;
  std::printf("RATIO %s %s/%s%s = %s (target %s 1.00; median %s, min-max %s-%s; %s): %s\n", measure.c_str(),
              side.c_str(), fmt(limit, at_most ? 0 : 2).c_str(), unit.c_str(), fmt(med / limit).c_str(),
              at_most ? "<=" : ">=", fmt(med).c_str(), fmt(minimum(v)).c_str(),
              fmt(*std::max_element(v.begin(), v.end())).c_str(), issue.c_str(), met ? "MET" : "NOT MET");
}

int rounds_from_env() {
  const char* e = std::getenv("AXL_BENCH_ROUNDS");
  const int n = e ? std::atoi(e) : 15;
  return n > 0 ? n : 15;
}

}  // namespace

int main() {
  // Before axl_init: the opencl backend counts CPU devices (PoCL's) only
  // when asked.
  setenv("AXL_OPENCL_DEVICE_TYPES", "all", 0);
  RawCl raw;
  std::string why;
  if (!raw.open(&why)) {
    std::printf("bench_vs_pocl: skipped: %s\n", why.c_str());
    return 0;
  }
  check(axl_init(), "axl_init");
  HostMemory host;
  std::vector<Side> sides;
  sides.push_back(raw_side(raw, host));

  axl_device_t ocl = axl_opencl_device(raw.device_name(), &why);
  if (ocl != nullptr) {
    axl_module_t mod = nullptr;
    check(axl_module_compile(ocl, AXL_SOURCE_LANGUAGE_OPENCL_C, kClSource, "bench_vs_pocl.cl", nullptr, 0, &mod),
          "axl_module_compile(OpenCL C)");
    sides.push_back(axl_side("axl_opencl", ocl, mod, kClSaxpyBlock, host));
  } else {
    std::printf("bench_vs_pocl: the opencl backend's side is skipped: %s\n", why.c_str());
  }
  axl_device_t cpu = nullptr;
  check(axl_device_get("cpu", 0, &cpu), "axl_device_get(cpu, 0)");
  axl_module_t cpu_mod = nullptr;
  check(axl_module_load_file(cpu, AXL_BENCH_VS_POCL_KERNELS, 0, &cpu_mod), "axl_module_load_file(" AXL_BENCH_VS_POCL_KERNELS ")");
  sides.push_back(axl_side("axl_cpu", cpu, cpu_mod, kCpuSaxpyBlock, host));

  // The two baselines that are not queues.
  std::vector<float> omp_x = host.x0, omp_y = host.y0;
  Side omp;
  omp.name = "openmp";
  omp.saxpy = [&] { saxpy_openmp(kAlpha, omp_x.data(), omp_y.data(), kSaxpyN); };
  omp.wait = [] {};
  Side mc;
  mc.name = "memcpy";
  mc.copy_in = [&] {
    std::memcpy(host.dst + 64, host.src, kCopyBytes);
    benchmark::ClobberMemory();
  };
  mc.wait = [] {};

  // One untimed pass of everything: starts workers, compiles, faults pages.
  for (Side& s : sides) {
    s.launch_empty();
    s.write4();
    s.copy_in();
    s.copy_out();
    s.wait();
  }
  mc.copy_in();

  const int rounds = rounds_from_env();
  uint64_t saxpys = 0;  // per side (each side launches as many)
  std::printf("bench_vs_pocl: PoCL device '%s'; %d interleaved rounds; sides:", raw.device_name().c_str(), rounds);
  for (const Side& s : sides) std::printf(" %s", s.name.c_str());
  std::printf(" (+ openmp, memcpy baselines); cpu kernels and openmp loop built %s\n", AXL_BENCH_KERNEL_FLAGS);
  std::fflush(stdout);
  for (int r = 0; r < rounds; ++r) {
    std::vector<const Side*> order;
    for (const Side& s : sides) order.push_back(&s);
    if (r % 2) std::reverse(order.begin(), order.end());
    for (const Side* s : order) measure_enqueue("enqueue_empty_ns", *s, s->launch_empty);
    for (const Side* s : order) measure_round_trip(*s);
    for (const Side* s : order) measure_enqueue("write4_enqueue_ns", *s, s->write4);
    std::vector<const Side*> copy_order = order;
    copy_order.insert(r % 2 ? copy_order.begin() : copy_order.end(), &mc);
    for (const Side* s : copy_order) {
      if (s == &mc) record("copy_in_GBps", mc, timed_gbps(mc, mc.copy_in, kCopyBytes, kCopiesPerRound));
      else measure_copies(*s);
    }
    std::vector<const Side*> saxpy_order = order;
    saxpy_order.insert(r % 2 ? saxpy_order.begin() : saxpy_order.end(), &omp);
    for (const Side* s : saxpy_order) measure_saxpy(*s);
    saxpys += kSaxpysPerRound;
    std::fprintf(stderr, "bench_vs_pocl: round %d/%d done\n", r + 1, rounds);
  }

  // Each side alone: windows of saxpys with no other side's work between
  // them, so a side's threads stay as warm as its own spin keeps them. In
  // the rounds above, each side's first launch follows the other sides'
  // work (its helpers parked meanwhile, another runtime's threads perhaps
  // still spinning); these figures separate that from the pool itself.
  // Every side launches as many, so the checks below still agree.
  constexpr int kAloneWindows = 10;
  std::vector<const Side*> alone_order;
  for (const Side& s : sides) alone_order.push_back(&s);
  alone_order.push_back(&omp);
  for (const Side* s : alone_order)
    for (int w = 0; w < kAloneWindows; ++w) measure_saxpy(*s, "_alone");
  saxpys += kAloneWindows * kSaxpysPerRound;

  // The pool's idle cost: CPU burnt in the second after the cpu backend's
  // last saxpy, its helpers spinning and then parked. Before the checks,
  // which launch nothing on the pool.
  // The other sides launch as many first, so that the checks agree, and
  // had 20 ms to stop any spinning of theirs by the end of the cpu side's.
  const Side& cpu_side = sides.back();
  for (const Side& s : sides) {
    if (&s == &cpu_side) continue;
    s.saxpy();
    s.wait();
  }
  omp.saxpy();
  cpu_side.saxpy();
  cpu_side.wait();
  saxpys += 1;
  const double idle_cpu0 = process_cpu_seconds();
  const auto idle_t0 = clock_type::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double idle_cpu_s_per_s = (process_cpu_seconds() - idle_cpu0) / seconds_since(idle_t0);

  // Results checked before anything is reported.
  bool all_right = true;
  for (const Side& s : sides) {
    const std::string e = s.check(saxpys);
    if (!e.empty()) {
      std::printf("bench_vs_pocl: WRONG RESULT on %s: %s\n", s.name.c_str(), e.c_str());
      all_right = false;
    }
  }
  if (const std::string e = host.check_saxpy(omp_y, saxpys); !e.empty()) {
    std::printf("bench_vs_pocl: WRONG RESULT on openmp: %s\n", e.c_str());
    all_right = false;
  }
  if (!all_right) return 1;
  std::printf("bench_vs_pocl: results checked (saxpy after %llu launches per side, 256 MiB round trip)\n",
              static_cast<unsigned long long>(saxpys));

  const std::vector<std::string> names = {"raw_cl", "axl_opencl", "axl_cpu", "openmp", "memcpy"};
  std::printf("\n# per side: median and min-max over rounds of each round's median (ns, or GB/s = 1e9 B/s)\n");
  for (const char* m : {"enqueue_empty_ns", "launch_wait_p50_ns", "launch_wait_p90_ns", "write4_enqueue_ns",
                        "copy_in_GBps", "copy_out_GBps", "copy_in_out_GBps", "saxpy_GBps", "saxpy_cpu_s_per_s", "saxpy_GB_per_cpu_s",
                        "saxpy_GBps_alone", "saxpy_cpu_s_per_s_alone"})
    print_series(m, names);

  const std::string i13 = "issue 13 item 6", i16 = "issue 16";
  const std::vector<RatioSpec> ratios = {
      {"enqueue_empty_ns", "axl_opencl", "raw_cl", RatioSpec::kAtMost, 1.15, i13},
      {"launch_wait_p50_ns", "axl_opencl", "raw_cl", RatioSpec::kAtMost, 1.15, i13},
      {"launch_wait_p90_ns", "axl_opencl", "raw_cl", RatioSpec::kReport, 0, i13},
      {"copy_in_out_GBps", "axl_opencl", "raw_cl", RatioSpec::kAtLeast, 0.95, i13},
      {"copy_in_GBps", "axl_opencl", "raw_cl", RatioSpec::kReport, 0, i13},
      {"copy_out_GBps", "axl_opencl", "raw_cl", RatioSpec::kReport, 0, i13},
      {"saxpy_GBps", "axl_opencl", "raw_cl", RatioSpec::kAtLeast, 0.95, i13},
      {"enqueue_empty_ns", "axl_cpu", "raw_cl", RatioSpec::kReport, 0, i16 + " item 1"},
      {"launch_wait_p50_ns", "axl_cpu", "raw_cl", RatioSpec::kReport, 0, i16 + " item 1"},
      {"launch_wait_p90_ns", "axl_cpu", "raw_cl", RatioSpec::kReport, 0, i16 + " item 1"},
      {"write4_enqueue_ns", "axl_cpu", "raw_cl", RatioSpec::kReport, 0, i16 + " item 1"},
      {"copy_in_GBps", "axl_cpu", "raw_cl", RatioSpec::kAtLeast, 1.0, i16 + " item 7"},
      {"copy_in_GBps", "axl_cpu", "memcpy", RatioSpec::kAtLeast, 0.95, i16 + " item 7"},
      {"saxpy_GBps", "axl_cpu", "raw_cl", RatioSpec::kAtLeast, 1.0, i16 + " item 2"},
      {"saxpy_GBps", "axl_cpu", "openmp", RatioSpec::kAtLeast, 0.95, i16 + " item 2"},
      {"saxpy_GBps", "raw_cl", "openmp", RatioSpec::kReport, 0, i16 + " item 2"},
      {"saxpy_GB_per_cpu_s", "axl_cpu", "raw_cl", RatioSpec::kReport, 0, i16 + " item 2"},
      {"saxpy_GB_per_cpu_s", "axl_cpu", "openmp", RatioSpec::kReport, 0, i16 + " item 2"},
  };
  std::printf("\n# ratios: median (min-max) of per-round ratios; verdict on the median\n");
  for (const RatioSpec& r : ratios) print_ratio(r);
  const std::string i16_3 = i16 + " item 3", i16_2 = i16 + " item 2";
  print_absolute("launch_wait_p50_ns", "axl_cpu", 1000, RatioSpec::kAtMost, "ns", i16_3);
  print_absolute("launch_wait_p90_ns", "axl_cpu", 3000, RatioSpec::kAtMost, "ns", i16_3);
  // Every core busy during the kernel: 1.9 on 2 cores, 0.95 per core.
  const double cores = axl::common::available_cpus();
  print_absolute("saxpy_cpu_s_per_s", "axl_cpu", 0.95 * cores, RatioSpec::kAtLeast, "", i16_2);
  for (const char* side : {"raw_cl", "openmp"}) {
    const auto& v = samples()[std::string("saxpy_cpu_s_per_s/") + side];
    if (v.empty()) continue;
    std::printf("RATIO saxpy_cpu_s_per_s %s/%s = %s (no target; median %s; the anchor's figure; %s)\n", side,
                fmt(0.95 * cores, 2).c_str(), fmt(median(v) / (0.95 * cores)).c_str(), fmt(median(v)).c_str(),
                i16_2.c_str());
  }
  // The same two figures with each side alone (no target: the issue's
  // targets are the interleaved ones above).
  for (const char* side : {"axl_cpu", "raw_cl", "openmp"}) {
    const auto& v = samples()[std::string("saxpy_cpu_s_per_s_alone/") + side];
    if (v.empty()) continue;
    std::printf("RATIO saxpy_cpu_s_per_s_alone %s/%s = %s (no target; median %s, min-max %s-%s over %d windows of "
                "%d saxpys back to back, no other side between; %s)\n",
                side, fmt(0.95 * cores, 2).c_str(), fmt(median(v) / (0.95 * cores)).c_str(), fmt(median(v)).c_str(),
                fmt(minimum(v)).c_str(), fmt(*std::max_element(v.begin(), v.end())).c_str(), kAloneWindows,
                kSaxpysPerRound, i16_2.c_str());
  }
  {
    const auto& a = samples()["saxpy_GBps_alone/axl_cpu"];
    const auto& b = samples()["saxpy_GBps_alone/openmp"];
    if (!a.empty() && !b.empty())
      std::printf("RATIO saxpy_GBps_alone axl_cpu/openmp = %s (no target; medians %s and %s GB/s, each side's %d "
                  "windows back to back; %s)\n",
                  fmt(median(a) / median(b)).c_str(), fmt(median(a)).c_str(), fmt(median(b)).c_str(), kAloneWindows,
                  i16_2.c_str());
  }
  std::printf("RATIO pool_idle_cpu_s_per_s axl_cpu = %s (no target; CPU-seconds per second of the whole process "
              "in the 1 s after the last saxpy: the pool's bounded spin, then parked; %s)\n",
              fmt(idle_cpu_s_per_s, 4).c_str(), i16_2.c_str());
  return 0;
}
