// quickstart: the whole axl round trip on one device.
//
//   1. discover devices and print them;
//   2. pick the best device: the first usable accelerator, else the cpu;
//   3. load a kernel module, copy 1 Mi floats in, launch saxpy, copy out;
//   4. check every element against the same arithmetic on the host;
//   5. print the device-side timings and the launch trace.
//
// usage: axl-quickstart [path/to/libaxl_example_kernels.so]
// Exits 0 when every element matched, 1 on a mismatch or an axl error.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "axl/axl.hpp"

#ifndef AXL_EXAMPLE_KERNELS
#error "AXL_EXAMPLE_KERNELS must name the example kernel module (see examples/CMakeLists.txt)"
#endif

namespace {

double gib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024 * 1024); }

// Lists every device; a backend that cannot initialise (no driver, no GPU) is
// reported and skipped, because the cpu may still do the job.
void print_devices() {
  printf("%-8s %-12s %-8s %-40s %12s\n", "device", "backend", "api", "model", "memory");
  uint32_t count = axl::Device::count();
  for (uint32_t i = 0; i < count;) {
    try {
      const axl::Device d = axl::Device::get(nullptr, i);
      const axl::DeviceInfo info = d.info();
      const std::string name = info.label + ":" + std::to_string(info.id);
      printf("%-8s %-12s %-8s %-40.40s %8.2f GiB\n", name.c_str(), info.backend.c_str(),
             info.api.c_str(), info.model_name.c_str(), gib(info.total_memory_bytes));
      ++i;
    } catch (const axl::Error& e) {
      printf("%-8s %-12s not usable: %s: %s\n", "-", e.backend().c_str(), e.status_name(),
             e.what());
      // A failed backend drops out of the count and index i moves on to the
      // next backend's devices; otherwise step over the one bad device.
      const uint32_t now = axl::Device::count();
      if (now < count) count = now; else ++i;
    }
  }
  if (count == 0) printf("(no devices: is the cpu plugin next to libaxl.so, in axl/plugins/?)\n");
}

axl::Device pick_device() {
  // Accelerator 0 is retried while backends drop out, so an unusable CUDA
  // install does not hide a working HIP device behind it.
  for (uint32_t gpus = axl::Device::count("gpu"); gpus > 0;) {
    try {
      return axl::Device::get("gpu", 0);
    } catch (const axl::Error& e) {
      printf("accelerator gpu:0 is not usable (%s: %s)\n", e.status_name(), e.what());
      const uint32_t now = axl::Device::count("gpu");
      if (now >= gpus) break;
      gpus = now;
    }
  }
  return axl::Device::cpu();
}

const char* trace_kind(int32_t kind) {
  switch (kind) {
    case AXL_TRACE_KERNEL_LAUNCH: return "launch";
    case AXL_TRACE_MEMCPY: return "memcpy";
    case AXL_TRACE_MEMSET: return "memset";
    default: return "?";
  }
}

const char* memcpy_kind(int32_t kind) {
  switch (kind) {
    case AXL_MEMCPY_HTOD: return "HtoD";
    case AXL_MEMCPY_DTOH: return "DtoH";
    case AXL_MEMCPY_DTOD: return "DtoD";
    default: return "-";
  }
}

void print_trace(const std::vector<axl::LaunchTraceEntry>& trace) {
  printf("\nlaunch trace: %zu entries\n", trace.size());
  printf("%4s %-7s %-24s %-5s %10s %-14s %-14s %6s %18s\n", "seq", "kind", "name", "copy",
         "bytes", "grid", "block", "stream", "semantic_hash");
  for (const auto& t : trace) {
    const auto& e = t.raw;
    char grid[32] = "-", block[32] = "-";
    if (e.kind == AXL_TRACE_KERNEL_LAUNCH) {
      snprintf(grid, sizeof grid, "%ux%ux%u", e.grid[0], e.grid[1], e.grid[2]);
      snprintf(block, sizeof block, "%ux%ux%u", e.block[0], e.block[1], e.block[2]);
    }
    const uint64_t bytes = e.kind == AXL_TRACE_MEMCPY   ? e.memcpy_byte_size
                           : e.kind == AXL_TRACE_MEMSET ? e.memset_byte_size
                                                        : 0;
    printf("%4" PRIu64 " %-7s %-24.24s %-5s %10" PRIu64 " %-14s %-14s %6u 0x%016" PRIx64 "\n",
           e.sequence, trace_kind(e.kind), t.name.c_str(), memcpy_kind(e.memcpy_kind), bytes,
           grid, block, e.stream_index, e.semantic_hash);
  }
}

// saxpy for CUDA devices, with the CPU kernel's arguments (alpha, x, y, n);
// --fmad=false keeps two roundings, as the host computes it.
const char* const kSaxpyCuda = R"(
extern "C" __global__ void saxpy(float alpha, const float* x, float* y, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = alpha * x[i] + y[i];
}
)";

int run(const std::string& module_path) {
  printf("axl %s\n\n", axl_version_string());
  print_devices();

  axl::Device device = pick_device();
  axl::DeviceInfo info = device.info();
  // saxpy exists as a CPU shared object and as CUDA C++ compiled at run time
  // (NVRTC); other accelerators fall back to the cpu device.
  if (info.api != "cpu" && info.api != "cuda") {
    printf("\n%s:%u (%s, api %s) is the best device, but this example has no %s build "
           "of saxpy; falling back to the cpu device.\n",
           info.label.c_str(), info.id, info.model_name.c_str(), info.api.c_str(),
           info.api.c_str());
    device = axl::Device::cpu();
    info = device.info();
  }
  printf("\nusing %s:%u: %s (backend %s)\n", info.label.c_str(), info.id,
         info.model_name.c_str(), info.backend.c_str());

  axl::Module module;
  try {
    if (info.api == "cuda")
      module = device.compile_module(kSaxpyCuda, {"--fmad=false"}, "saxpy.cu");
    else
      module = device.load_module(module_path, AXL_MODULE_FORMAT_SHARED_OBJECT);
  } catch (const axl::Error& e) {
    fprintf(stderr, "cannot get the saxpy kernel (%s: %s)\n"
                    "on the cpu, pass the path of libaxl_example_kernels.so as the first argument\n",
            e.status_name(), e.what());
    return 1;
  }
  const axl::Kernel saxpy = module.kernel("saxpy");

  // Values on a coarse binary grid (multiples of 1/128, below 2^7) so that
  // alpha * x + y is exact in float whether or not either side fuses the
  // multiply-add: every element can then be compared bit for bit.
  const uint32_t n = 1u << 20;
  const float alpha = 1.5f;
  std::vector<float> x(n), y(n), result(n);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(static_cast<int32_t>((i * 7919u) % 4096u) - 2048) / 64.0f;
    y[i] = static_cast<float>(static_cast<int32_t>((i * 104729u) % 4096u) - 2048) / 128.0f;
  }
  const uint64_t bytes = uint64_t{n} * sizeof(float);

  const axl::Buffer xb = device.allocate(bytes);
  const axl::Buffer yb = device.allocate(bytes);
  const axl::Queue queue = device.default_queue();
  const axl::Event start = device.create_event(true), copied_in = device.create_event(true),
                   launched = device.create_event(true), copied_out = device.create_event(true);

  const uint32_t block = 256;
  const uint32_t grid = (n + block - 1) / block;

  // Host devices are left out of a trace by default (as in MAX); this example
  // runs on one, so ask for them.
  axl::begin_launch_trace(/*include_host=*/true);
  queue.record(start);
  queue.copy_from_host(xb, x.data(), bytes);
  queue.copy_from_host(yb, y.data(), bytes);
  queue.record(copied_in);
  queue.launch(saxpy, {grid, 1, 1}, {block, 1, 1},
               {axl::Arg::scalar(alpha), axl::Arg::buffer(xb), axl::Arg::buffer(yb),
                axl::Arg::scalar(n)});
  queue.record(launched);
  queue.copy_to_host(result.data(), yb, bytes);
  queue.record(copied_out);
  queue.synchronize();
  const auto trace = axl::take_launch_trace();

  uint32_t mismatches = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const float want = alpha * x[i] + y[i];
    if (result[i] != want) {
      if (++mismatches <= 5)
        fprintf(stderr, "mismatch at %u: got %.9g, want %.9g (x %.9g, y %.9g)\n", i,
                static_cast<double>(result[i]), static_cast<double>(want),
                static_cast<double>(x[i]), static_cast<double>(y[i]));
    }
  }

  const double mib = static_cast<double>(bytes) / (1024.0 * 1024);
  printf("\nsaxpy over %u floats, grid %u x block %u\n", n, grid, block);
  printf("  copy in  (2 x %.1f MiB) %8.3f ms\n", mib, start.elapsed_ms(copied_in));
  printf("  kernel                  %8.3f ms\n", copied_in.elapsed_ms(launched));
  printf("  copy out (%.1f MiB)     %8.3f ms\n", mib, launched.elapsed_ms(copied_out));
  print_trace(trace);

  if (mismatches) {
    fprintf(stderr, "\nFAILED: %u of %u elements differ from the host result\n", mismatches, n);
    return 1;
  }
  printf("\nOK: all %u elements match the host result\n", n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    fprintf(stderr, "usage: %s [path/to/libaxl_example_kernels.so]\n", argv[0]);
    return 2;
  }
  try {
    return run(argc == 2 ? argv[1] : AXL_EXAMPLE_KERNELS);
  } catch (const axl::Error& e) {
    fprintf(stderr, "axl error: %s%s%s: %s\n", e.status_name(), e.backend().empty() ? "" : " in ",
            e.backend().c_str(), e.what());
    return 1;
  }
}
