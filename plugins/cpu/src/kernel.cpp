// Kernel launch: the grid's blocks run on the backend's thread pool, driven
// from the queue's worker so the launch keeps its place in queue order. Also
// the built-in test kernels of plugin.h.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "cpu_backend.hpp"

namespace axl::cpu {

namespace {

// Most a launch may ask for per block: every pool thread holds one block's
// scratch at a time, so this times the thread count must fit in memory.
constexpr uint64_t kMaxSharedMemBytes = 256ull << 20;

constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// memcpy of one argument value, with the common sizes (a pointer, a 32-bit
// scalar) as fixed-size moves instead of a call into libc on every launch
// (benchmarks/bench_enqueue).
inline void copy_value(std::byte* dst, const void* src, uint32_t size) noexcept {
  if (size == 8) {
    std::memcpy(dst, src, 8);
  } else if (size == 4) {
    std::memcpy(dst, src, 4);
  } else if (size != 0) {
    std::memcpy(dst, src, size);
  }
}

// Copies of a launch's argument values, made at enqueue time because the
// caller's memory is only valid during the call. Small sets (a handful of
// pointers and scalars) live inside the queue slot, larger ones in one heap
// block. Layout: uint32 offsets[count], then each value at its offset,
// 8-byte aligned (16 for values wider than 8 bytes, e.g. a float4).
class ArgPack {
 public:
  static constexpr size_t kInlineBytes = 64;

  // User-provided, so that a value-initialised ArgPack (LaunchOp{..., {}})
  // does not zero inline_ on every launch.
  ArgPack() noexcept {}
  ArgPack(ArgPack&&) noexcept = default;

  // Copies `args`. Arguments were validated by the caller. Throws bad_alloc.
  void assign(const axl_kernel_arg* args, uint32_t count) {
    uint64_t size = align_up(uint64_t{count} * sizeof(uint32_t), 16);
    for (uint32_t i = 0; i < count; ++i) {
      size = align_up(size, args[i].size > 8 ? 16 : 8) + args[i].size;
    }
    std::byte* base = inline_;
    if (size > kInlineBytes) {
      heap_.reset(new std::max_align_t[(size + sizeof(std::max_align_t) - 1) /
                                       sizeof(std::max_align_t)]);
      base = reinterpret_cast<std::byte*>(heap_.get());
    }
    count_ = count;
    uint64_t off = align_up(uint64_t{count} * sizeof(uint32_t), 16);
    for (uint32_t i = 0; i < count; ++i) {
      off = align_up(off, args[i].size > 8 ? 16 : 8);
      const auto off32 = static_cast<uint32_t>(off);
      std::memcpy(base + i * sizeof(uint32_t), &off32, sizeof off32);
      copy_value(base + off, args[i].value, args[i].size);
      off += args[i].size;
    }
  }

  uint32_t count() const noexcept { return count_; }

  // Fills out[i] with the address of value i. Addresses are into this
  // object, which stays put in its queue slot while the launch runs.
  void pointers(void** out) noexcept {
    std::byte* base = heap_ ? reinterpret_cast<std::byte*>(heap_.get()) : inline_;
    for (uint32_t i = 0; i < count_; ++i) {
      uint32_t off;
      std::memcpy(&off, base + i * sizeof(uint32_t), sizeof off);
      out[i] = base + off;
    }
  }

 private:
  uint32_t count_ = 0;
  std::unique_ptr<std::max_align_t[]> heap_;
  // Not zeroed: assign() writes every byte that pointers() reads.
  alignas(16) std::byte inline_[kInlineBytes];
};

struct FreeDeleter {
  void operator()(void* p) const noexcept { std::free(p); }
};

// The queued operation of one launch.
struct LaunchOp {
  common::Ref<Module> module;  // keeps the kernel's code mapped; NULL for built-ins
  axl_cpu_kernel_fn fn;
  uint32_t grid[3];
  uint32_t block[3];
  uint64_t shared_mem_bytes;
  uint64_t blocks;  // grid[0] * grid[1] * grid[2], checked for overflow
  ArgPack args;

  axl_status operator()(std::string& message) {
    constexpr uint32_t kStackArgs = 16;
    void* stack_argv[kStackArgs];
    std::vector<void*> heap_argv;
    void** argv = stack_argv;
    if (args.count() > kStackArgs) {
      heap_argv.resize(args.count());
      argv = heap_argv.data();
    }
    args.pointers(argv);

    auto run_blocks = [&](uint64_t begin, uint64_t end) {
      // One scratch area per range, reused by its blocks one after another:
      // like GPU shared memory, its contents at block start are undefined.
      std::unique_ptr<void, FreeDeleter> scratch;
      if (shared_mem_bytes != 0) {
        scratch.reset(std::aligned_alloc(64, align_up(shared_mem_bytes, 64)));
        if (!scratch) throw std::bad_alloc();
      }
      axl_cpu_kernel_ctx ctx{};
      ctx.struct_size = sizeof(axl_cpu_kernel_ctx);
      for (int d = 0; d < 3; ++d) {
        ctx.grid[d] = grid[d];
        ctx.block[d] = block[d];
      }
      ctx.num_args = static_cast<uint32_t>(args.count());
      ctx.shared_mem = scratch.get();
      ctx.shared_mem_bytes = shared_mem_bytes;
      // The range's first block index by division, the rest by counting:
      // three 64-bit divisions per block (tens of cycles each) were most of
      // this loop's own time (bench_vs_pocl's saxpy, by callgrind: 20 -> 14
      // instructions per block). The count is kept here and stored into ctx
      // for each block, so a kernel that wrote to its ctx regardless of the
      // const cannot move the next block.
      const uint64_t gx = grid[0];
      const uint64_t gxy = gx * grid[1];
      auto x = static_cast<uint32_t>(begin % gx);
      auto y = static_cast<uint32_t>((begin / gx) % grid[1]);
      auto z = static_cast<uint32_t>(begin / gxy);
      for (uint64_t i = begin; i < end; ++i) {
        ctx.block_idx[0] = x;
        ctx.block_idx[1] = y;
        ctx.block_idx[2] = z;
        fn(&ctx, argv);
        if (++x == grid[0]) {
          x = 0;
          if (++y == grid[1]) {
            y = 0;
            ++z;
          }
        }
      }
    };
    try {
      backend().pool.parallel_for(blocks, run_blocks);
    } catch (const std::bad_alloc&) {
      message = common::str("kernel launch: allocating ", shared_mem_bytes,
                            " bytes of shared memory per block failed");
      return AXL_ERROR_OUT_OF_HOST_MEMORY;
    }
    return AXL_SUCCESS;
  }
};

static_assert(sizeof(LaunchOp) <= common::WorkQueue::kInlineBytes,
              "a launch with few arguments should not allocate per enqueue");

// The built-in kernels of plugin.h. Grid-stride loops, so any grid covers n.
axl_devaddr devaddr_arg(void* const* a, int i) noexcept {
  axl_devaddr v;
  std::memcpy(&v, a[i], sizeof v);
  return v;
}
uint32_t u32_arg(void* const* a, int i) noexcept {
  uint32_t v;
  std::memcpy(&v, a[i], sizeof v);
  return v;
}

template <class PerElement>
void for_each_element(const axl_cpu_kernel_ctx* c, uint32_t n, PerElement&& f) noexcept {
  const uint64_t threads = uint64_t{c->block[0]} * c->block[1] * c->block[2];
  const uint64_t blocks = uint64_t{c->grid[0]} * c->grid[1] * c->grid[2];
  const uint64_t block_id =
      c->block_idx[0] + uint64_t{c->grid[0]} * (c->block_idx[1] + uint64_t{c->grid[1]} * c->block_idx[2]);
  for (uint64_t base = block_id * threads; base < n; base += blocks * threads) {
    const uint64_t end = std::min<uint64_t>(n, base + threads);
    for (uint64_t i = base; i < end; ++i) f(i);
  }
}

void test_increment_u32(const axl_cpu_kernel_ctx* c, void* const* a) {
  auto* data = reinterpret_cast<uint32_t*>(devaddr_arg(a, 0));
  for_each_element(c, u32_arg(a, 1), [&](uint64_t i) { data[i] += 1; });
}

void test_fill_u32(const axl_cpu_kernel_ctx* c, void* const* a) {
  auto* data = reinterpret_cast<uint32_t*>(devaddr_arg(a, 0));
  const uint32_t value = u32_arg(a, 2);
  for_each_element(c, u32_arg(a, 1), [&](uint64_t i) { data[i] = value; });
}

constexpr Param kIncrementParams[] = {{AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}};
constexpr Param kFillParams[] = {{AXL_ARG_DEVADDR, 8}, {AXL_ARG_SCALAR, 4}, {AXL_ARG_SCALAR, 4}};
// Static, const-initialised: they live until backend_shutdown and beyond.
Kernel kTestIncrement{test_increment_u32, "axl_test_increment_u32", kIncrementParams, 2};
Kernel kTestFill{test_fill_u32, "axl_test_fill_u32", kFillParams, 3};

// Checks what the core cannot know: the cpu backend's limits and, for
// built-in kernels, the parameter list. Returns SUCCESS or a reported error.
axl_status validate_launch(const Kernel& k, const axl_launch_config* config,
                           const axl_kernel_arg* args, uint32_t num_args, uint64_t& blocks) {
  const common::HostServices& host = backend().host;
  if (axl_status s = common::check_launch_config(fail, k.name, config)) return s;
  uint64_t gxy = 0;
  if (__builtin_mul_overflow(uint64_t{config->grid[0]}, uint64_t{config->grid[1]}, &gxy) ||
      __builtin_mul_overflow(gxy, uint64_t{config->grid[2]}, &blocks)) {
    return host.report(AXL_ERROR_INVALID_ARGUMENT,
                       common::str("launch of '", k.name, "': grid ", config->grid[0], "x",
                                   config->grid[1], "x", config->grid[2],
                                   " has more than 2^64 blocks"));
  }
  if (config->shared_mem_bytes > kMaxSharedMemBytes) {
    return host.report(AXL_ERROR_INVALID_ARGUMENT,
                       common::str("launch of '", k.name, "': shared_mem_bytes = ",
                                   config->shared_mem_bytes, " exceeds the cpu backend's limit of ",
                                   kMaxSharedMemBytes, " bytes per block"));
  }
  const std::string bad = common::check_launch_args(
      k.name, k.params, k.param_count, args, num_args, {kMaxArgs, kMaxScalarBytes});
  if (!bad.empty()) return host.report(AXL_ERROR_INVALID_ARGUMENT, bad);
  return AXL_SUCCESS;
}


}  // namespace

axl_status queue_launch(axl_pqueue queue, axl_pkernel kernel, const axl_launch_config* config,
                        const axl_kernel_arg* args, uint32_t num_args) noexcept {
  return guarded("queue_launch", [&]() -> axl_status {
    Backend& b = backend();
    Queue* q = from(queue);
    const Kernel& k = *from(kernel);
    uint64_t blocks = 0;
    const axl_status v = validate_launch(k, config, args, num_args, blocks);
    if (v != AXL_SUCCESS) return v;

    LaunchOp op{common::Ref<Module>(k.module), k.fn, {}, {}, config->shared_mem_bytes, blocks, {}};
    for (int d = 0; d < 3; ++d) {
      op.grid[d] = config->grid[d];
      op.block[d] = config->block[d];
    }
    op.args.assign(args, num_args);
    const axl_status s = q->work.enqueue(common::OpInfo{common::OpKind::kLaunch, 0}, std::move(op));
    if (s != AXL_SUCCESS) {
      return b.host.report(
          s, common::str("cannot launch '", k.name, "': ", common::WorkQueue::refusal_message()));
    }
    if (b.tracer.enabled()) {
      b.tracer.launch(q->trace_id, k.name, config->grid, config->block, config->shared_mem_bytes,
                      common::Tracer::hash_args(args, num_args));
    }
    return AXL_SUCCESS;
  });
}

axl_status device_get_test_kernel(axl_pdevice, int32_t which, axl_pkernel* out_kernel) noexcept {
  return guarded("device_get_test_kernel", [&]() -> axl_status {
    Backend& b = backend();
    if (out_kernel == nullptr) {
      return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                           "device_get_test_kernel: out_kernel is NULL");
    }
    switch (which) {
      case AXL_TEST_KERNEL_INCREMENT_U32:
        *out_kernel = reinterpret_cast<axl_pkernel>(&kTestIncrement);
        return AXL_SUCCESS;
      case AXL_TEST_KERNEL_FILL_U32:
        *out_kernel = reinterpret_cast<axl_pkernel>(&kTestFill);
        return AXL_SUCCESS;
      default:
        return b.host.report(AXL_ERROR_NOT_FOUND,
                             common::str("no test kernel ", which,
                                         " (known: 0 = INCREMENT_U32, 1 = FILL_U32)"));
    }
  });
}

}  // namespace axl::cpu
