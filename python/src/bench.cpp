// C++ baselines for benchmarks/python_overhead.py: the same operations as the
// Python benchmark, looped in C++ straight through axl.h, so the printed
// ratio is "what the binding adds". Each returns nanoseconds per operation.
// The raw axl_* calls here are the point (the baseline is the C ABI itself,
// with nothing of axl.hpp in the loop), not a hot path to justify.
#include <chrono>

#include "common.hpp"

namespace axlpy {
namespace {

template <typename F>
double time_ns(int64_t iters, F&& body) {
  const auto t0 = std::chrono::steady_clock::now();
  body();
  const auto t1 = std::chrono::steady_clock::now();
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) /
         static_cast<double>(iters);
}

}  // namespace

void register_bench(py::module_& m) {
  m.def(
      "_bench_launch",
      [](QueueObj& q, KernelObj& k, BufferObj& buf, uint32_t n, int64_t iters) {
        py::gil_scoped_release nogil;
        const uint32_t dims[3] = {1, 1, 1};
        axl_launch_arg args[2]{};
        args[0].kind = AXL_KERNEL_ARG_BUFFER;
        args[0].buffer = buf.launch_handle();
        args[1].kind = AXL_KERNEL_ARG_SCALAR;
        args[1].size = sizeof n;
        args[1].value = &n;
        return time_ns(iters, [&] {
          for (int64_t i = 0; i < iters; ++i) check(axl_queue_launch(q.queue.get(), k.kernel.get(), dims, dims, 0, args, 2));
          check(axl_queue_synchronize(q.queue.get()));
        });
      },
      py::arg("queue"), py::arg("kernel"), py::arg("buffer"), py::arg("n"), py::arg("iters"),
      "ns per launch of a (buffer, uint32 n) kernel on a 1x1 grid, including a final synchronize.");
  m.def(
      "_bench_event_record",
      [](QueueObj& q, EventObj& e, int64_t iters) {
        py::gil_scoped_release nogil;
        return time_ns(iters, [&] {
          for (int64_t i = 0; i < iters; ++i) check(axl_queue_record_event(q.queue.get(), e.event.get()));
          check(axl_queue_synchronize(q.queue.get()));
        });
      },
      py::arg("queue"), py::arg("event"), py::arg("iters"));
  m.def(
      "_bench_device_get",
      [](const std::string& label, int64_t iters) {
        py::gil_scoped_release nogil;
        return time_ns(iters, [&] {
          for (int64_t i = 0; i < iters; ++i) {
            axl_device_t d = nullptr;
            check(axl_device_get(label.c_str(), 0, &d));
            axl_device_release(d);
          }
        });
      },
      py::arg("label"), py::arg("iters"), "ns per axl_device_get(label, 0) + release.");
  m.def(
      "_bench_queue_sync",
      [](QueueObj& q, int64_t iters) {
        py::gil_scoped_release nogil;
        return time_ns(iters, [&] {
          for (int64_t i = 0; i < iters; ++i) check(axl_queue_synchronize(q.queue.get()));
        });
      },
      py::arg("queue"), py::arg("iters"), "ns per synchronize of an idle queue.");
}

}  // namespace axlpy
