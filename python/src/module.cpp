// axl._core: the native half of the axl Python package.
//
// Public names are re-exported, with MAX's module layout, by axl.driver;
// names starting with '_' are internal to the package (tests and the
// benchmark use a few).
#include "common.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "Native bindings of libaxl (axl.h); use axl.driver instead.";
  axlpy::register_errors(m);
  axlpy::register_devices(m);
  axlpy::register_buffer(m);  // before queues: launch checks for Buffer
  axlpy::register_multicast(m);
  axlpy::register_queues(m);
  axlpy::register_kernels(m);
  axlpy::register_program(m);  // after kernels: compile() returns a Module
  axlpy::register_trace(m);
  axlpy::register_discovery(m);
  axlpy::register_bench(m);
  axlpy::register_max_file(m);
  axlpy::register_profiler(m);
}
