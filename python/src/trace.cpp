// Launch tracing (MAX: begin_launch_trace / take_launch_trace). The entries
// become axl.driver.LaunchTraceEntry objects in Python (axl/driver/_trace.py);
// here they are plain tuples, copied out before the core's trace is released.
#include "common.hpp"

namespace axlpy {

void register_trace(py::module_& m) {
  m.def(
      "_launch_trace_begin",
      [](py::handle include_host) {
        axl::begin_launch_trace(arg_bool(include_host, "begin_launch_trace: include_host"));
      },
      py::arg("include_host") = false);
  m.def("_launch_trace_take", [] {
    std::vector<axl::LaunchTraceEntry> entries = axl::take_launch_trace();
    py::list out;
    for (const auto& t : entries) {
      const axl_launch_trace_entry& e = t.raw;
      out.append(py::make_tuple(
          e.kind, e.memcpy_kind, to_str(t.name), e.semantic_hash,
          py::make_tuple(e.grid[0], e.grid[1], e.grid[2]), py::make_tuple(e.block[0], e.block[1], e.block[2]),
          e.shared_mem_bytes, e.stream_index, e.device_id, e.memcpy_byte_size, e.memset_byte_size,
          e.memset_value, e.memset_value_size, e.sequence));
    }
    return out;
  });
}

}  // namespace axlpy
