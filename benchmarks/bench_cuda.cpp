// bench_cuda: the cuda backend against the raw CUDA Driver API, measured in
// the same process on the same device and primary context:
//   launch     host cost of an empty-kernel launch, axl_queue_launch vs a
//              cuLaunchKernel loop (RATIO, target <= 1.15)
//   htod/dtoh  256 MiB from/to pinned host memory, axl vs cuMemcpy*Async
//              (RATIO of bandwidths, target >= 0.95; GB/s of both)
//   trace      axl launch cost with the launch trace on vs off (report)
//   events     elapsed_ms of timing events around a ~10 ms spin kernel vs
//              the wall time of the same work (report)
// Output: "RATIO name value target" and "METRIC name value unit" lines, which
// tests/gpu/run.sh gathers into its summary. Without a CUDA device it says so
// and exits 0. Options: --quick (fewer repetitions, for smoke runs).
#include <dlfcn.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "axl/axl.h"

namespace {

using Clock = std::chrono::steady_clock;

// Hand-written PTX: an empty kernel and a spin of `cycles` SM clocks.
constexpr char kPtx[] = R"(
.version 6.0
.target sm_50
.address_size 64
.visible .entry axl_bench_empty() { ret; }
.visible .entry axl_bench_spin(.param .u64 cycles)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [cycles];
  mov.u64 %rd2, %clock64;
SPIN:
  mov.u64 %rd3, %clock64;
  sub.s64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p1, %rd4, %rd1;
  @%p1 bra SPIN;
  ret;
}
)";

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_cuda: %s\n", what.c_str());
  std::exit(2);
}

void check(axl_status s, const char* what) {
  if (s != AXL_SUCCESS) die(std::string(what) + ": " + axl_status_name(s) + ": " + axl_last_error_message());
}

// The raw driver, loaded the way the plugin loads it (libcuda.so.1).
struct Raw {
  PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
  PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
  PFN_cuDeviceGet_v2000 cuDeviceGet;
  PFN_cuStreamCreate_v2000 cuStreamCreate;
  PFN_cuStreamSynchronize_v2000 cuStreamSynchronize;
  PFN_cuModuleLoadData_v2000 cuModuleLoadData;
  PFN_cuModuleGetFunction_v2000 cuModuleGetFunction;
  PFN_cuLaunchKernel_v4000 cuLaunchKernel;
  PFN_cuMemAlloc_v3020 cuMemAlloc;
  PFN_cuMemHostAlloc_v2020 cuMemHostAlloc;
  PFN_cuMemcpyHtoDAsync_v3020 cuMemcpyHtoDAsync;
  PFN_cuMemcpyDtoHAsync_v3020 cuMemcpyDtoHAsync;
};

void cu(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) die(std::string(what) + " failed with CUresult " + std::to_string(r));
}

Raw load_raw() {
  const char* path = std::getenv("AXL_CUDA_DRIVER_PATH");
  void* h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) die(std::string("dlopen libcuda.so.1: ") + dlerror());
  auto gpa = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(h, "cuGetProcAddress_v2"));
  if (!gpa) die("libcuda lacks cuGetProcAddress_v2");
  Raw r{};
  auto get = [&](const char* name, int version, auto& fn) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult q{};
    cu(gpa(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &q), name);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  get("cuDevicePrimaryCtxRetain", 7000, r.cuDevicePrimaryCtxRetain);
  get("cuCtxSetCurrent", 4000, r.cuCtxSetCurrent);
  get("cuDeviceGet", 2000, r.cuDeviceGet);
  get("cuStreamCreate", 2000, r.cuStreamCreate);
  get("cuStreamSynchronize", 2000, r.cuStreamSynchronize);
  get("cuModuleLoadData", 2000, r.cuModuleLoadData);
  get("cuModuleGetFunction", 2000, r.cuModuleGetFunction);
  get("cuLaunchKernel", 4000, r.cuLaunchKernel);
  get("cuMemAlloc", 3020, r.cuMemAlloc);
  get("cuMemHostAlloc", 2020, r.cuMemHostAlloc);
  get("cuMemcpyHtoDAsync", 3020, r.cuMemcpyHtoDAsync);
  get("cuMemcpyDtoHAsync", 3020, r.cuMemcpyDtoHAsync);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The first device whose backend is "cuda", or NULL with the reason.
axl_device_t find_cuda_device(std::string* why) {
  uint32_t n = 0;
  check(axl_device_count("gpu", &n), "axl_device_count");
  for (uint32_t i = 0; i < n; ++i) {
    axl_device_t d = nullptr;
    if (axl_device_get("gpu", i, &d) != AXL_SUCCESS) continue;
    axl_device_info info{};
    info.struct_size = sizeof info;
    if (axl_device_get_info(d, &info) == AXL_SUCCESS && std::strcmp(info.backend, "cuda") == 0) return d;
    axl_device_release(d);
  }
  uint32_t plugins = 0;
  axl_plugin_count(&plugins);
  *why = "the cuda plugin was not found";
  for (uint32_t i = 0; i < plugins; ++i) {
    axl_plugin_record rec{};
    rec.struct_size = sizeof rec;
    if (axl_plugin_get_record(i, &rec) == AXL_SUCCESS && std::strcmp(rec.name, "cuda") == 0)
      *why = std::string("cuda plugin ") + axl_plugin_state_name(rec.state) + ", " +
             std::to_string(rec.device_count) + " device(s)" + (*rec.reason ? std::string(": ") + rec.reason : "");
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  std::string why;
  axl_device_t dev = find_cuda_device(&why);
  if (dev == nullptr) {
    std::printf("bench_cuda: no CUDA device (%s); nothing measured\n", why.c_str());
    return 0;
  }
  axl_device_info info{};
  info.struct_size = sizeof info;
  check(axl_device_get_info(dev, &info), "axl_device_get_info");
  std::printf("bench_cuda: %s (%s)\n", info.model_name, info.architecture_name);

  // ---- axl side
  axl_queue_t q = nullptr;
  check(axl_queue_create(dev, 0, &q), "axl_queue_create");
  axl_module_t mod = nullptr;
  check(axl_module_load_data(dev, kPtx, sizeof kPtx, AXL_MODULE_FORMAT_PTX, &mod), "axl_module_load_data");
  axl_kernel_t empty = nullptr, spin = nullptr;
  check(axl_module_get_kernel(mod, "axl_bench_empty", &empty), "get axl_bench_empty");
  check(axl_module_get_kernel(mod, "axl_bench_spin", &spin), "get axl_bench_spin");

  // ---- raw side, on the same primary context
  Raw raw = load_raw();
  CUdevice cudev = 0;
  CUcontext ctx = nullptr;
  cu(raw.cuDeviceGet(&cudev, 0), "cuDeviceGet");  // axl's first cuda device is CUDA ordinal 0
  cu(raw.cuDevicePrimaryCtxRetain(&ctx, cudev), "cuDevicePrimaryCtxRetain");
  cu(raw.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUstream stream = nullptr;
  cu(raw.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUmodule rmod = nullptr;
  CUfunction rempty = nullptr;
  cu(raw.cuModuleLoadData(&rmod, kPtx), "cuModuleLoadData");
  cu(raw.cuModuleGetFunction(&rempty, rmod, "axl_bench_empty"), "cuModuleGetFunction");

  // ---- launch host cost: batches of launches, only enqueue time counted
  const int batch = 512, reps = quick ? 5 : 31;
  const uint32_t one[3] = {1, 1, 1};
  auto axl_batch = [&] {
    auto t0 = Clock::now();
    for (int i = 0; i < batch; ++i) check(axl_queue_launch(q, empty, one, one, 0, nullptr, 0), "axl_queue_launch");
    const double s = seconds_since(t0);
    check(axl_queue_synchronize(q), "axl_queue_synchronize");
    return s / batch * 1e9;
  };
  auto raw_batch = [&] {
    auto t0 = Clock::now();
    for (int i = 0; i < batch; ++i)
      cu(raw.cuLaunchKernel(rempty, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), "cuLaunchKernel");
    const double s = seconds_since(t0);
    cu(raw.cuStreamSynchronize(stream), "cuStreamSynchronize");
    return s / batch * 1e9;
  };
  axl_batch();
  raw_batch();  // warm-up
  std::vector<double> axl_ns, raw_ns;
  for (int r = 0; r < reps; ++r) {  // interleaved, so drift hits both
    axl_ns.push_back(axl_batch());
    raw_ns.push_back(raw_batch());
  }
  const double launch_axl = median(axl_ns), launch_raw = median(raw_ns);
  std::printf("METRIC launch_axl_ns %.1f ns\nMETRIC launch_raw_ns %.1f ns\n", launch_axl, launch_raw);
  std::printf("RATIO launch_host_cost %.3f <=1.15\n", launch_axl / launch_raw);

  // ---- launch trace on vs off
  std::vector<double> on_ns, off_ns;
  for (int r = 0; r < reps; ++r) {
    off_ns.push_back(axl_batch());
    check(axl_launch_trace_begin(AXL_LAUNCH_TRACE_DEFAULT), "axl_launch_trace_begin");
    on_ns.push_back(axl_batch());
    axl_launch_trace_t trace = nullptr;
    check(axl_launch_trace_take(&trace), "axl_launch_trace_take");
    axl_launch_trace_release(trace);
  }
  std::printf("METRIC launch_trace_on_ns %.1f ns\nMETRIC launch_trace_off_ns %.1f ns\n", median(on_ns),
              median(off_ns));
  std::printf("RATIO launch_trace_on_vs_off %.3f report\n", median(on_ns) / median(off_ns));

  // ---- pinned 256 MiB copies
  const uint64_t bytes = 256ull << 20;
  axl_buffer_t pinned = nullptr, dbuf = nullptr;
  check(axl_buffer_create(dev, bytes, AXL_BUFFER_FLAG_PINNED, &pinned), "pinned buffer");
  check(axl_buffer_create(dev, bytes, 0, &dbuf), "device buffer");
  void* host = nullptr;
  check(axl_buffer_host_pointer(pinned, &host), "axl_buffer_host_pointer");
  std::memset(host, 1, bytes);
  void* rhost = nullptr;
  CUdeviceptr rdev = 0;
  cu(raw.cuMemHostAlloc(&rhost, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
  cu(raw.cuMemAlloc(&rdev, bytes), "cuMemAlloc");
  std::memset(rhost, 1, bytes);
  const int copy_reps = quick ? 3 : 9;
  auto gbps = [&](auto&& body) {
    std::vector<double> v;
    body();  // warm-up
    for (int r = 0; r < copy_reps; ++r) {
      auto t0 = Clock::now();
      body();
      v.push_back(bytes / seconds_since(t0) / 1e9);
    }
    return median(v);
  };
  const double htod_axl = gbps([&] {
    check(axl_queue_copy_from_host(q, dbuf, 0, host, bytes), "copy_from_host");
    check(axl_queue_synchronize(q), "sync");
  });
  const double htod_raw = gbps([&] {
    cu(raw.cuMemcpyHtoDAsync(rdev, rhost, bytes, stream), "cuMemcpyHtoDAsync");
    cu(raw.cuStreamSynchronize(stream), "sync");
  });
  const double dtoh_axl = gbps([&] {
    check(axl_queue_copy_to_host(q, host, dbuf, 0, bytes), "copy_to_host");
    check(axl_queue_synchronize(q), "sync");
  });
  const double dtoh_raw = gbps([&] {
    cu(raw.cuMemcpyDtoHAsync(rhost, rdev, bytes, stream), "cuMemcpyDtoHAsync");
    cu(raw.cuStreamSynchronize(stream), "sync");
  });
  std::printf("METRIC htod_axl_gbps %.2f GB/s\nMETRIC htod_raw_gbps %.2f GB/s\n", htod_axl, htod_raw);
  std::printf("METRIC dtoh_axl_gbps %.2f GB/s\nMETRIC dtoh_raw_gbps %.2f GB/s\n", dtoh_axl, dtoh_raw);
  std::printf("RATIO htod_256MiB_bandwidth %.3f >=0.95\n", htod_axl / htod_raw);
  std::printf("RATIO dtoh_256MiB_bandwidth %.3f >=0.95\n", dtoh_axl / dtoh_raw);

  // ---- event timing vs wall time for a ~10 ms spin
  axl_event_t start = nullptr, end = nullptr;
  check(axl_event_create(dev, AXL_EVENT_TIMING, &start), "event");
  check(axl_event_create(dev, AXL_EVENT_TIMING, &end), "event");
  uint64_t cycles = 20'000'000;  // about 10 ms at 2 GHz
  axl_launch_arg arg{AXL_KERNEL_ARG_SCALAR, sizeof cycles, nullptr, &cycles};
  std::vector<double> ev, wall;
  for (int r = 0; r < (quick ? 3 : 7); ++r) {
    check(axl_queue_synchronize(q), "sync");
    auto t0 = Clock::now();
    check(axl_queue_record_event(q, start), "record");
    check(axl_queue_launch(q, spin, one, one, 0, &arg, 1), "spin");
    check(axl_queue_record_event(q, end), "record");
    check(axl_event_synchronize(end), "event sync");
    wall.push_back(seconds_since(t0) * 1e3);
    float ms = 0;
    check(axl_event_elapsed_ms(start, end, &ms), "elapsed");
    ev.push_back(ms);
  }
  std::printf("METRIC spin_event_ms %.3f ms\nMETRIC spin_wall_ms %.3f ms\n", median(ev), median(wall));
  std::printf("RATIO event_elapsed_vs_wall %.3f report\n", median(ev) / median(wall));

  axl_event_release(start);
  axl_event_release(end);
  axl_buffer_release(pinned);
  axl_buffer_release(dbuf);
  axl_kernel_release(empty);
  axl_kernel_release(spin);
  axl_module_release(mod);
  axl_queue_release(q);
  axl_device_release(dev);
  return 0;
}
