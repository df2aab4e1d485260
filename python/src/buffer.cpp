// Buffer: the minimal n-d buffer queues and kernels need (MAX:
// max.driver.Buffer). Contiguous, row-major, one allocation per buffer.
//
// Kept deliberately small for the buffers issue to extend: metadata is dtype +
// shape (strides, views, slicing, staging and DLPack come later, on top of
// axl_buffer_view), and host copies are byte copies through the device's
// default queue. The Python side (axl/driver/buffer.py) adds from_numpy,
// to_numpy and zeros the way MAX adds its Python methods.
#include "common.hpp"

namespace axlpy {
namespace {

PyTypeObject* g_buffer_type = nullptr;

// A contiguous host view of obj (numpy array, bytes, memoryview...).
struct HostView {
  Py_buffer view{};
  bool held = false;
  HostView(py::handle obj, bool writable) {
    const int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj.ptr(), &view, flags) != 0) throw py::error_already_set();
    held = true;
  }
  ~HostView() {
    if (held) PyBuffer_Release(&view);
  }
  uint64_t size() const { return static_cast<uint64_t>(view.len); }
};

void check_size(const BufferObj& b, uint64_t host_bytes, const char* what) {
  if (host_bytes != b.nbytes)
    throw py::value_error(std::string(what) + ": the host memory has " + std::to_string(host_bytes) +
                          " bytes but the buffer " + std::to_string(b.nbytes));
}

}  // namespace

PyTypeObject* buffer_type() { return g_buffer_type; }

void register_buffer(py::module_& m) {
  py::class_<BufferObj> cls(m, "Buffer", R"doc(
A contiguous n-d array on one device (MAX: ``max.driver.Buffer``).

``Buffer(dtype, shape, device=None)`` allocates ``prod(shape)`` elements of
``dtype`` (an ``axl.dtype.DType``) on ``device`` (CPU() when None); contents
start uninitialised. Pass a Buffer to ``DeviceQueue.launch`` and the kernel
receives its device address. ``Buffer.from_numpy``, ``to_numpy`` and
``Buffer.zeros`` are defined in axl/driver/buffer.py.
)doc");
  cls.def(py::init([](py::object dtype, py::object shape, py::object device) {
              auto b = std::make_unique<BufferObj>();
              py::object dtype_cls = py::module_::import("axl.dtype").attr("DType");
              if (!py::isinstance(dtype, dtype_cls))
                throw py::type_error("Buffer: dtype must be an axl.dtype.DType, got " +
                                     std::string(py::str(py::type::handle_of(dtype).attr("__name__"))));
              b->dtype = dtype;
              b->element_size = dtype.attr("size_in_bytes").cast<uint64_t>();
              uint64_t count = 1;
              if (py::isinstance<py::int_>(shape)) shape = py::make_tuple(shape);
              for (py::handle d : shape) {
                const int64_t v = py::reinterpret_borrow<py::object>(d).cast<int64_t>();
                if (v < 0) throw py::value_error("Buffer: shape entries must be >= 0, got " + std::string(py::str(shape)));
                b->shape.push_back(v);
                if (__builtin_mul_overflow(count, static_cast<uint64_t>(v), &count))
                  throw py::value_error("Buffer: shape " + std::string(py::str(shape)) + " is too large");
              }
              if (__builtin_mul_overflow(count, b->element_size, &b->nbytes))
                throw py::value_error("Buffer: shape " + std::string(py::str(shape)) + " is too large");
              if (device.is_none()) device = py::module_::import("axl.driver").attr("CPU")();
              b->device = device_of(device);
              // The core refuses 0-byte allocations; an empty buffer still gets
              // an address (one byte) so it can be passed to a kernel.
              axl_buffer_t h = nullptr;
              check(axl_buffer_create(b->device, b->nbytes ? b->nbytes : 1, AXL_BUFFER_FLAG_NONE, &h));
              b->buffer = axl::Buffer(h);
              return b;
            }),
            py::arg("dtype"), py::arg("shape"), py::arg("device") = py::none())
      .def_property_readonly("dtype", [](BufferObj& b) { return b.dtype; })
      .def_property_readonly("shape", [](BufferObj& b) {
        py::tuple t(b.shape.size());
        for (size_t i = 0; i < b.shape.size(); ++i) t[i] = py::int_(b.shape[i]);
        return t;
      })
      .def_property_readonly("rank", [](BufferObj& b) { return b.shape.size(); })
      .def_property_readonly("num_elements", [](BufferObj& b) { return b.element_size ? b.nbytes / b.element_size : 0; },
                             "Product of the shape (1 for rank 0).")
      .def_property_readonly("element_size", [](BufferObj& b) { return b.element_size; }, "Bytes per element.")
      .def_property_readonly("is_contiguous", [](BufferObj&) { return true; },
                             "Always True until views and slicing arrive.")
      .def_property_readonly("device", [](BufferObj& b) { return device_object(b.device); })
      .def_property_readonly("is_host", [](BufferObj& b) {
        axl_device_info i{};
        i.struct_size = sizeof i;
        check(axl_device_get_info(b.device, &i));
        return i.is_host != 0;
      })
      .def_property_readonly("_nbytes", [](BufferObj& b) { return b.nbytes; })
      .def("_data_ptr", [](BufferObj& b) { return b.buffer.device_address(); },
           "The device address of the first element (what a kernel receives).")
      .def(
          "_copy_from_host",
          [](BufferObj& b, py::handle src) {
            HostView v(src, false);
            check_size(b, v.size(), "copy into buffer");
            if (!b.nbytes) return;
            check(axl_device_retain(b.device));
            axl::Queue q = axl::Device(b.device).default_queue();
            // The host memory must stay untouched until the copy ran, so the
            // call waits for it (without the GIL).
            axl_status s = without_gil([&] {
              axl_status r = axl_queue_copy_from_host(q.get(), b.buffer.get(), 0, v.view.buf, b.nbytes);
              return r ? r : axl_queue_synchronize(q.get());
            });
            check(s);
          },
          py::arg("src"), "Copies a C-contiguous host object of exactly the buffer's size in; waits for it.")
      .def(
          "_copy_to_host",
          [](BufferObj& b, py::handle dst) {
            HostView v(dst, true);
            check_size(b, v.size(), "copy out of buffer");
            if (!b.nbytes) return;
            check(axl_device_retain(b.device));
            axl::Queue q = axl::Device(b.device).default_queue();
            axl_status s = without_gil([&] {
              axl_status r = axl_queue_copy_to_host(q.get(), v.view.buf, b.buffer.get(), 0, b.nbytes);
              return r ? r : axl_queue_synchronize(q.get());
            });
            check(s);
          },
          py::arg("dst"), "Copies the buffer out into a writable C-contiguous host object; waits for it.")
      .def(
          "_fill_zero",
          [](BufferObj& b) {
            if (!b.nbytes) return;
            check(axl_device_retain(b.device));
            axl::Queue q = axl::Device(b.device).default_queue();
            check(axl_queue_fill(q.get(), b.buffer.get(), 0, b.nbytes, 0, 1));
          },
          "Enqueues a zero fill on the device's default queue (asynchronous, as MAX's zeros).")
      .def("__repr__", [](BufferObj& b) {
        std::string shape = "(";
        for (size_t i = 0; i < b.shape.size(); ++i)
          shape += std::to_string(b.shape[i]) + (b.shape.size() == 1 ? "," : (i + 1 < b.shape.size() ? ", " : ""));
        shape += ")";
        return "axl.driver.Buffer(" + std::string(py::str(b.dtype)) + ", " + shape + ", " + device_text(b.device) + ")";
      });
  g_buffer_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
}

}  // namespace axlpy
