// The .max checkpoint header parser (axl_max_file_parse) for
// axl/driver/_max_file.py, which opens the file and builds the Buffer.
#include "common.hpp"

namespace axlpy {

void register_max_file(py::module_& m) {
  m.def(
      "_max_file_parse",
      [](py::buffer prefix, uint64_t file_size) {
        py::buffer_info info = prefix.request();
        if (info.itemsize != 1 || info.ndim != 1)
          throw py::value_error("_max_file_parse: expected a 1-D buffer of bytes");
        axl_max_file_header h{};
        axl_status s = AXL_SUCCESS;
        std::string message;
        try {
          axl::parse_max_file(info.ptr, static_cast<uint64_t>(info.size), file_size, h);
        } catch (const axl::Error& e) {
          s = e.status();
          message = e.what();
        }
        py::dict out;
        out["status"] = static_cast<int>(s);
        out["message"] = to_str(message);
        out["header_bytes"] = h.header_bytes;
        if (s != AXL_SUCCESS) return out;
        py::list dims;
        for (uint32_t i = 0; i < h.rank; ++i) dims.append(h.dims[i]);
        out["version"] = py::make_tuple(h.version_major, h.version_minor);
        out["dtype"] = h.dtype;
        out["shape"] = py::tuple(dims);
        out["key_offset"] = h.key_offset;
        out["key_size"] = h.key_size;
        out["num_elements"] = h.num_elements;
        out["data_offset"] = h.data_offset;
        out["data_bytes"] = h.data_bytes;
        return out;
      },
      py::arg("prefix"), py::arg("file_size"),
      "Parses the header of a .max file of file_size bytes from its first bytes. Returns a dict: "
      "status (0 parsed; 2, AXL_ERROR_OUT_OF_RANGE: pass at least header_bytes bytes; other: "
      "malformed, see message), message, header_bytes and, when parsed, version, dtype (MAX code), "
      "shape, key_offset, key_size, num_elements, data_offset, data_bytes.");
}

}  // namespace axlpy
