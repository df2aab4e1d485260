// Buffer (MAX: max.driver.Buffer): an n-d strided view of one allocation.
//
// The metadata is a core axl_layout (shape, byte strides, offset), so the
// index arithmetic, contiguity, dtype views, strided copies and host hazard
// waits are the core's (axl.h), shared with every other binding. This file
// holds what must be fast from Python (construction, properties, indexing,
// views, copies, the numpy alias); the rest of MAX's Buffer API is Python,
// in axl/driver/buffer.py.
#include <pybind11/numpy.h>

#include <cxxabi.h>
#include <cstring>
#include <unordered_map>

#include "common.hpp"

namespace axlpy {
namespace {

PyTypeObject* g_buffer_type = nullptr;

enum : uint32_t { kUsageStaging = 1, kUsageUntracked = 2 };

// Python objects looked up once: construction is on the hot path (the
// benchmark compares it with numpy.empty).
struct Cache {
  py::object dtype_cls, usage_cls, cpu_device;
  std::unordered_map<PyObject*, uint32_t> element_size;  // DType member -> bytes
  std::unordered_map<PyObject*, PyObject*> numpy_dtype;  // DType member -> numpy.dtype (both held)
  std::unordered_map<axl_device_t, bool> is_host;
  std::unordered_map<PyObject*, axl_device_t> device_of;  // Device object -> handle
};
Cache& cache() {
  static Cache* c = new Cache();  // leaked: outlives interpreter teardown
  return *c;
}

uint32_t element_size_of(py::handle dtype) {
  Cache& c = cache();
  if (auto it = c.element_size.find(dtype.ptr()); it != c.element_size.end()) return it->second;
  if (!c.dtype_cls) c.dtype_cls = py::module_::import("axl.dtype").attr("DType");
  if (!py::isinstance(dtype, c.dtype_cls))
    throw py::type_error("Buffer: dtype must be an axl.dtype.DType, got " +
                         std::string(py::str(py::type::handle_of(dtype).attr("__name__"))));
  // Enum members are singletons: keyed by identity, no attribute lookup.
  const auto size = dtype.attr("size_in_bytes").cast<uint32_t>();
  c.element_size.emplace(dtype.inc_ref().ptr(), size);
  return size;
}

// DType member -> its numpy.dtype (DType.to_numpy), cached once found: the
// answer depends only on the member and on whether ml_dtypes imports, fixed
// for the process. A DType without one raises from to_numpy every time.
py::handle numpy_dtype_of(py::handle dtype) {
  Cache& c = cache();
  if (auto it = c.numpy_dtype.find(dtype.ptr()); it != c.numpy_dtype.end()) return it->second;
  py::object found = dtype.attr("to_numpy")();
  c.numpy_dtype.emplace(dtype.inc_ref().ptr(), found.ptr());
  return found.release();
}

bool is_dtype(py::handle o) {
  Cache& c = cache();
  if (c.element_size.count(o.ptr())) return true;
  if (!c.dtype_cls) c.dtype_cls = py::module_::import("axl.dtype").attr("DType");
  return py::isinstance(o, c.dtype_cls);
}

bool device_is_host(axl_device_t d) {
  Cache& c = cache();
  if (auto it = c.is_host.find(d); it != c.is_host.end()) return it->second;
  const bool host = axl::Unowned<axl::Device>(d)->info().is_host;
  c.is_host.emplace(d, host);
  return host;
}

py::object default_cpu() {
  Cache& c = cache();
  if (!c.cpu_device) c.cpu_device = py::module_::import("axl.driver").attr("CPU")();
  return c.cpu_device;
}

bool is_queue(py::handle o) { return py::isinstance<QueueObj>(o); }

uint32_t usage_bits(py::handle usage) {
  if (usage.is_none()) return 0;
  py::object v = py::hasattr(usage, "value") ? usage.attr("value") : py::reinterpret_borrow<py::object>(usage);
  if (PyBool_Check(v.ptr()) || !PyLong_Check(v.ptr()))
    throw py::type_error("Buffer: usage must be a Usage, got " + describe(usage));
  int overflow = 0;
  const long bits = PyLong_AsLongAndOverflow(v.ptr(), &overflow);
  if (overflow) throw py::value_error("Buffer: usage " + std::string(py::repr(usage)) + " is not a Usage");
  if (bits < 0 || bits > 3) throw py::value_error("Buffer: usage " + std::string(py::repr(usage)) + " is not a Usage");
  return static_cast<uint32_t>(bits);
}

std::string shape_text(const axl_layout& l) {
  std::string s = "(";
  for (uint32_t k = 0; k < l.rank; ++k)
    s += std::to_string(l.shape[k]) + (l.rank == 1 ? "," : (k + 1 < l.rank ? ", " : ""));
  return s + ")";
}

// An integer (anything with __index__) as int64; *overflow set, and 0
// returned, when it lies outside int64 (no layout can hold it, and the
// caller words the error for what the integer was).
int64_t index_int64(PyObject* o, bool* overflow) {
  PyObject* i = PyLong_Check(o) ? (Py_INCREF(o), o) : PyNumber_Index(o);
  if (!i) throw py::error_already_set();
  int over = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i, &over);
  Py_DECREF(i);
  if (v == -1 && !over && PyErr_Occurred()) throw py::error_already_set();
  *overflow = over != 0;
  return over ? 0 : v;
}

int64_t shape_entry(PyObject* d) {
  if (PyBool_Check(d) || !PyIndex_Check(d))
    throw py::type_error("Buffer: shape entries must be ints, got " + std::string(py::repr(d)));
  bool overflow = false;
  const int64_t v = index_int64(d, &overflow);
  // numpy's type and text for an extent no array can have.
  if (overflow)
    throw py::value_error("Buffer: shape entry " + std::string(py::repr(d)) +
                          " is out of range: maximum allowed dimension exceeded (2**63 - 1)");
  return v;
}

std::vector<int64_t> parse_shape(py::handle shape) {
  std::vector<int64_t> dims;
  if (PyLong_Check(shape.ptr())) {
    dims.push_back(shape_entry(shape.ptr()));
  } else if (PyTuple_CheckExact(shape.ptr()) || PyList_CheckExact(shape.ptr())) {
    // The common case, without the generic iterator protocol.
    PyObject* seq = shape.ptr();
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    dims.reserve(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) dims.push_back(shape_entry(PySequence_Fast_GET_ITEM(seq, i)));
  } else {
    // Text and bytes are sequences too, of characters and of small ints, but
    // never a shape (numpy refuses both).
    if (!PySequence_Check(shape.ptr()) || PyUnicode_Check(shape.ptr()) || PyBytes_Check(shape.ptr()) ||
        PyByteArray_Check(shape.ptr()))
      throw py::type_error("Buffer: shape must be a sequence of ints, got " +
                           std::string(py::str(py::type::handle_of(shape).attr("__name__"))));
    for (py::handle d : py::reinterpret_borrow<py::sequence>(shape)) dims.push_back(shape_entry(d.ptr()));
  }
  for (int64_t v : dims)
    if (v < 0) throw py::value_error("Buffer: shape entries must be >= 0, got " + std::string(py::str(shape)));
  return dims;
}

// Allocates dtype x shape on `device` (or on stream's device) with `usage`.
void allocate(BufferObj& b, py::handle dtype, py::handle shape, py::object device, py::object stream,
              uint32_t usage) {
  const uint32_t es = element_size_of(dtype);
  const std::vector<int64_t> dims = parse_shape(shape);
  b.layout.set_contiguous(dims, es);
  if (!stream.is_none()) {
    b.queue = stream;
    b.device = stream.cast<QueueObj&>().device;
  } else {
    if (device.is_none()) device = default_cpu();
    // Device objects live as long as the process (one per device), so the
    // handle can be cached by identity instead of read through `_h`.
    Cache& c = cache();
    if (auto it = c.device_of.find(device.ptr()); it != c.device_of.end()) {
      b.device = it->second;
    } else {
      b.device = device_of(device, "Buffer: device");
      if (device_object(b.device).ptr() == device.ptr()) c.device_of.emplace(device.inc_ref().ptr(), b.device);
    }
  }
  b.dtype = py::reinterpret_borrow<py::object>(dtype);
  b.usage = usage;
  const bool host = device_is_host(b.device);
  b.pinned = !host && (usage & kUsageStaging);
  b.host_visible = host || b.pinned;
  uint32_t flags = b.pinned ? AXL_BUFFER_FLAG_PINNED : 0;
  // Host-visible memory is tracked (axl tracks CPU buffers too, so reading a
  // buffer after an asynchronous copy needs no synchronize); device memory
  // is only ever read through a copy on its queue, as in MAX.
  if (b.host_visible && !(usage & kUsageUntracked)) flags |= AXL_BUFFER_FLAG_TRACKED;
  uint64_t nbytes = b.num_elements() * es;
  // An empty buffer still gets one byte, so it has an address.
  b.buffer = axl::Unowned<axl::Device>(b.device)->allocate(nbytes ? nbytes : 1, flags);
}

void copy_fields(BufferObj& to, const BufferObj& from) {
  to.buffer = from.buffer;  // retains
  to.device = from.device;
  to.dtype = from.dtype;
  to.queue = from.queue;
  to.layout = from.layout;
  to.usage = from.usage;
  to.pinned = from.pinned;
  to.host_visible = from.host_visible;
}

// One index of __getitem__/__setitem__.
axl_index parse_index(py::handle o) {
  axl_index ix{};
  if (PySlice_Check(o.ptr())) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(o.ptr(), &start, &stop, &step) < 0) throw py::error_already_set();
    ix.kind = AXL_INDEX_SLICE;
    ix.flags = AXL_INDEX_HAS_START | AXL_INDEX_HAS_STOP | AXL_INDEX_HAS_STEP;
    ix.start = start;
    ix.stop = stop;
    ix.step = step;
    return ix;
  }
  if (!PyBool_Check(o.ptr()) && PyIndex_Check(o.ptr())) {
    ix.kind = AXL_INDEX_INTEGER;
    bool overflow = false;
    ix.start = index_int64(o.ptr(), &overflow);
    // Beyond int64 no axis is that long: numpy's IndexError for an integer
    // out of bounds.
    if (overflow) {
      const py::object value = py::reinterpret_steal<py::object>(PyNumber_Index(o.ptr()));
      throw py::index_error("Buffer index " + std::string(py::str(value)) + " is out of bounds");
    }
    return ix;
  }
  if (PyList_Check(o.ptr()))
    throw py::type_error("Buffer indices must be integers or slices, got the list " + std::string(py::repr(o)) +
                         " (numpy would read it as an integer-array index, which copies; axl has views only: "
                         "use a tuple to give one index per axis)");
  throw py::type_error("Buffer indices must be integers or slices, got " + std::string(py::repr(o)));
}

// A tuple gives one index per axis. A list is refused (parse_index): numpy
// reads b[[1, 2]] as rows 1 and 2, not as b[1, 2], so accepting it either
// way would surprise someone.
std::vector<axl_index> parse_key(py::handle key) {
  std::vector<axl_index> out;
  if (PyTuple_Check(key.ptr())) {
    for (py::handle k : py::reinterpret_borrow<py::sequence>(key)) out.push_back(parse_index(k));
  } else {
    out.push_back(parse_index(key));
  }
  return out;
}

py::object np_array_alias(BufferObj& b, py::handle self, py::handle np_dtype) {
  void* host = b.buffer.host_pointer();
  std::vector<py::ssize_t> shape(b.layout.shape, b.layout.shape + b.layout.rank);
  std::vector<py::ssize_t> strides(b.layout.strides, b.layout.strides + b.layout.rank);
  py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(np_dtype));
  if (static_cast<uint32_t>(dt.itemsize()) != b.layout.element_size)
    throw py::value_error("to_numpy: numpy dtype " + std::string(py::str(dt)) + " has " +
                          std::to_string(dt.itemsize()) + " bytes per element, the buffer " +
                          std::to_string(b.layout.element_size));
  return py::array(dt, shape, strides, static_cast<char*>(host) + b.layout.offset, self);
}

}  // namespace

axl_buffer_t BufferObj::launch_handle() {
  if (layout.offset == 0) return buffer.get();
  if (!element0) element0 = buffer.view(layout.offset, buffer.size() - layout.offset);
  return element0.get();
}

PyTypeObject* buffer_type() { return g_buffer_type; }

const axl::Queue& buffer_queue(BufferObj& b) {
  if (b.queue.is_none() || !b.queue) b.queue = device_object(b.device).attr("default_queue");
  return b.queue.cast<QueueObj&>().queue;
}

void host_wait(BufferObj& b, uint32_t access) {
  const axl::Buffer& h = b.buffer;  // set at construction, never replaced
  without_gil([&] { h.host_wait(access); });
}

py::object make_buffer_object(axl::Buffer buffer, axl_device_t device, py::object dtype, const axl_layout& layout,
                              uint32_t usage, bool pinned) {
  auto b = std::make_unique<BufferObj>();
  b->buffer = std::move(buffer);
  b->device = device;
  b->dtype = std::move(dtype);
  b->queue = py::none();
  b->layout = layout;
  b->usage = usage;
  b->pinned = pinned;
  b->host_visible = pinned || device_is_host(device);
  return py::cast(std::move(b));
}

namespace {

// pybind11's __init__ slot (CPython's slot_tp_init, which looks up the
// bound py::init below): every form of Buffer(...) but the common one.
initproc g_pybind_init = nullptr;
py::detail::type_info* g_buffer_info = nullptr;  // pybind11's record of BufferObj

// Buffer(dtype, shape) and Buffer(dtype, shape, device) for a DType and a
// Device object this binding has seen before, the construction the benchmark
// compares with numpy.empty: the same allocate() as the py::init below,
// without pybind11's dispatcher (the __init__ lookup, seven arguments read
// into a heap vector: ~2,300 of the ~7,100 instructions a Buffer of 16
// floats took, benchmarks/bench_buffers.py). Anything else, errors included,
// takes that path, so the forms and messages are written once.
int buffer_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (Py_TYPE(self) != g_buffer_type || (kwargs && PyDict_GET_SIZE(kwargs) != 0) || !PyTuple_CheckExact(args))
    return g_pybind_init(self, args, kwargs);
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 2 || n > 3) return g_pybind_init(self, args, kwargs);
  PyObject* dtype = PyTuple_GET_ITEM(args, 0);
  PyObject* shape = PyTuple_GET_ITEM(args, 1);
  PyObject* device = n == 3 ? PyTuple_GET_ITEM(args, 2) : Py_None;
  Cache& c = cache();
  // A member seen before is a DType (the cache holds only those); a known
  // Device is not a queue (so no stream form) and not an array (so no copy).
  if (shape == Py_None || !c.element_size.count(dtype) || (device != Py_None && !c.device_of.count(device)))
    return g_pybind_init(self, args, kwargs);
  try {
    auto* inst = reinterpret_cast<py::detail::instance*>(self);
    py::detail::value_and_holder v_h = inst->get_value_and_holder(g_buffer_info);
    // Only C code can reach tp_init on a live instance (Python's b.__init__
    // is pybind11's): ignored, as pybind11 ignores a second __init__,
    // rather than registering the instance twice.
    if (v_h.instance_registered()) return 0;
    auto b = std::make_unique<BufferObj>();
    allocate(*b, dtype, shape, py::reinterpret_borrow<py::object>(device), py::none(), 0);
    // What py::init's factory does with the unique_ptr it returns.
    v_h.value_ptr() = b.get();
    v_h.type->init_instance(v_h.inst, &b);
    return 0;
  } catch (abi::__forced_unwind&) {
    throw;  // CPython ending this thread (common.hpp: without_gil)
  } catch (...) {
    set_python_error_from_current();
    return -1;
  }
}

}  // namespace

void register_buffer(py::module_& m) {
  py::class_<BufferObj> cls(m, "Buffer", py::buffer_protocol(), R"doc(
An n-d array on one device (MAX: ``max.driver.Buffer``).

``Buffer(dtype, shape, device=None, usage=Usage.DEFAULT, *, stream=None)``
(MAX's positional order) allocates ``prod(shape)`` elements of ``dtype`` (an ``axl.dtype.DType``) on
``device`` (CPU() when None), or on ``stream``'s device bound to that queue
(``Buffer(dtype, shape, queue)`` also works, as in MAX). Contents start
uninitialised. ``Buffer(shape=ndarray, device=dev)`` copies an array to
``dev``. Indexing gives views sharing the memory; see docs/python.md for the
whole API and where axl differs from MAX.

Raises:
    TypeError: dtype is not a DType, shape not a sequence of ints.
    ValueError: a negative extent, an unknown usage.
    OutOfMemoryError: the device cannot hold the bytes.
)doc");
  cls.def(py::init([](py::object dtype, py::object shape, py::object device, py::object usage, py::object stream,
                       py::object pinned, py::object like) {
            auto b = std::make_unique<BufferObj>();
            if (!like.is_none()) {
              copy_fields(*b, like.cast<BufferObj&>());
              return b;
            }
            // Buffer(dtype, shape, queue): MAX's stream overload, positionally.
            if (!device.is_none() && !cache().device_of.count(device.ptr()) && is_queue(device)) {
              if (stream.is_none()) stream = device;
              device = py::none();
            }
            // MAX's rule: a stream replaces the device (the buffer lives on
            // the stream's device, bound to it), whatever device was given.
            if (!stream.is_none()) {
              if (!is_queue(stream))
                throw py::type_error("Buffer: stream must be a DeviceQueue, got " + std::string(py::repr(stream)));
              device = py::none();
            }
            // Buffer(ndarray, dev) positionally: MAX's third overload.
            // (A DType is the common case: checked first, since hasattr on
            // a missing attribute raises and clears an AttributeError.)
            if (!dtype.is_none() && !is_dtype(dtype) && !PyType_Check(dtype.ptr()) &&
                py::hasattr(dtype, "__array_interface__")) {
              if (!device.is_none() || !stream.is_none())
                throw py::type_error("Buffer(array, device): give the device once");
              device = shape;
              shape = dtype;
              dtype = py::none();
            }
            // Buffer(shape=ndarray, device=dev): MAX's third overload, a copy.
            if (dtype.is_none() && !shape.is_none() && !PyType_Check(shape.ptr()) &&
                py::hasattr(shape, "__array_interface__")) {
              py::object buf = py::module_::import("axl.driver.buffer").attr("_from_array")(shape, device);
              copy_fields(*b, buf.cast<BufferObj&>());
              return b;
            }
            if (dtype.is_none() || shape.is_none()) throw py::type_error("Buffer() needs a dtype and a shape");
            // S1's fourth positional was `pinned` (a bool); MAX's since S2 is
            // `usage`, as here.
            if (PyBool_Check(usage.ptr()) && pinned.is_none()) {
              pinned = usage;
              usage = py::none();
            }
            uint32_t bits = usage_bits(usage);
            // MAX's S1 keyword (max-driver.md, construction: `pinned=True`
            // became `usage=Usage.STAGING`), kept so S1 code runs: True is
            // STAGING, False the default; with usage= too it is ambiguous.
            if (!pinned.is_none()) {
              const bool pin = arg_bool(pinned, "Buffer: pinned");
              if (!usage.is_none())
                throw py::type_error("Buffer: give usage= or the older pinned=, not both");
              if (pin) bits = kUsageStaging;
            }
            allocate(*b, dtype, shape, device, stream, bits);
            return b;
          }),
          // MAX's positional order: (dtype, shape, device | stream, usage)
          // (max-driver.md 4.1, overloads A and B); stream= by keyword.
          py::arg("dtype") = py::none(), py::arg("shape") = py::none(), py::arg("device") = py::none(),
          py::arg("usage") = py::none(), py::kw_only(), py::arg("stream") = py::none(),
          py::arg("pinned") = py::none(), py::arg("_like") = py::none());
  cls.def_property_readonly("dtype", [](BufferObj& b) { return b.dtype; }, "The element type (DType).")
      .def_property_readonly("shape", [](BufferObj& b) {
        py::tuple t(b.layout.rank);
        for (uint32_t k = 0; k < b.layout.rank; ++k) t[k] = py::int_(b.layout.shape[k]);
        return t;
      }, "Elements along each dimension.")
      .def_property_readonly("strides", [](BufferObj& b) {
        py::tuple t(b.layout.rank);
        for (uint32_t k = 0; k < b.layout.rank; ++k) t[k] = py::int_(b.layout.strides[k] / int64_t(b.layout.element_size));
        return t;
      }, "Step between neighbours along each dimension, in elements (MAX; numpy's are bytes).")
      .def_property_readonly("rank", [](BufferObj& b) { return b.layout.rank; })
      .def_property_readonly("num_elements", [](BufferObj& b) { return b.num_elements(); },
                             "Product of the shape (1 for rank 0).")
      .def_property_readonly("element_size", [](BufferObj& b) { return b.layout.element_size; }, "Bytes per element.")
      .def_property_readonly("is_contiguous", [](BufferObj& b) { return b.layout.is_contiguous(); },
                             "Row-major and dense (extent-1 dimensions ignored).")
      .def_property_readonly("device", [](BufferObj& b) { return device_object(b.device); },
                             "The device the buffer belongs to (for staging memory: the accelerator).")
      .def_property_readonly("stream", [](BufferObj& b) {
        buffer_queue(b);
        return b.queue;
      }, "The DeviceQueue the buffer's copies run on (the device's default unless bound).")
      .def_property_readonly("is_host", [](BufferObj& b) { return device_is_host(b.device); },
                             "True on the CPU; False for accelerator and staging memory (MAX).")
      .def_property_readonly("pinned", [](BufferObj& b) { return b.pinned; },
                             "Page-locked host memory bound to an accelerator.")
      .def_property_readonly("_usage_bits", [](BufferObj& b) { return b.usage; })
      .def_property_readonly("_host_visible", [](BufferObj& b) { return b.host_visible; })
      .def_property_readonly("_untracked_host", [](BufferObj& b) { return b.untracked_host(); })
      .def_property_readonly("_host_hazard_tracked", [](BufferObj& b) {
        return (b.buffer.flags() & AXL_BUFFER_FLAG_TRACKED) != 0;
      })
      .def_property_readonly("_nbytes", [](BufferObj& b) { return b.num_elements() * b.layout.element_size; })
      .def_property_readonly("_offset", [](BufferObj& b) { return b.layout.offset; },
                             "Byte offset of element 0 in the allocation.")
      .def("_data_ptr", [](BufferObj& b) {
        return b.buffer.device_address() + b.layout.offset;
      }, "The device address of element 0 (what a kernel receives).")
      .def("__getitem__", [](BufferObj& b, py::handle key) {
        std::vector<axl_index> idx = parse_key(key);
        axl::Layout out = b.layout.index(idx);
        auto v = std::make_unique<BufferObj>();
        copy_fields(*v, b);
        v->layout = out;
        return v;
      }, py::arg("index"), R"doc(
A view (sharing memory) selected by ints and slices, numpy's basic indexing.
Integers remove their dimension; fewer indices than the rank keep the rest.

Raises:
    IndexError: an integer out of range, too many indices.
    ValueError: a slice step of 0.
    TypeError: an index that is neither int nor slice.
)doc")
      .def("_index_is_element", [](BufferObj& b, py::handle key) {
        // True when key picks exactly one element with one int per axis
        // (MAX's __setitem__ rule; a rank-0 buffer also takes [0]).
        std::vector<axl_index> idx = parse_key(key);
        if (b.layout.rank == 0) return idx.size() == 1 && idx[0].kind == AXL_INDEX_INTEGER;
        if (idx.size() != b.layout.rank) return false;
        for (auto& i : idx)
          if (i.kind != AXL_INDEX_INTEGER) return false;
        return true;
      })
      .def("_view", [](BufferObj& b, py::handle dtype, py::object shape) {
        const uint32_t es = element_size_of(dtype);
        axl::Layout out = shape.is_none() ? b.layout.view(es) : b.layout.view(es, parse_shape(shape));
        auto v = std::make_unique<BufferObj>();
        copy_fields(*v, b);
        v->layout = out;
        v->dtype = py::reinterpret_borrow<py::object>(dtype);
        return v;
      }, py::arg("dtype"), py::arg("shape") = py::none())
      .def("_with_queue", [](BufferObj& b, py::object queue) {
        auto v = std::make_unique<BufferObj>();
        copy_fields(*v, b);
        v->queue = queue;
        return v;
      })
      .def("_copy_from", [](BufferObj& dst, BufferObj& src, py::object queue) {
        const axl::Queue& q = queue.is_none() ? buffer_queue(dst) : queue.cast<QueueObj&>().queue;
        // Without the GIL: a copy may block until earlier queue work ran
        // (pageable memory on CUDA, the core's fallbacks; common.hpp). The
        // arguments keep both buffers and the queue alive meanwhile.
        without_gil([&] { q.copy(dst.buffer, dst.layout, src.buffer, src.layout); });
      }, py::arg("src"), py::arg("queue") = py::none(),
         "Enqueues an element-wise copy of src into self (any layouts, any devices).")
      .def("_copy_ordered", [](BufferObj& dst, BufferObj& src) {
        // MAX's inplace_copy_from texts, checked here with the copy so that
        // the call is one crossing into C++ (the 1 KiB round trip, issue 16);
        // the other callers pass buffers made alike, which always pass.
        if (dst.num_elements() != src.num_elements()) throw py::value_error("Cannot copy buffers of different sizes");
        if (!dst.dtype.is(src.dtype) && dst.dtype.not_equal(src.dtype))
          throw py::value_error("Cannot copy buffers of different dtypes");
        // The queue a copy runs on, made to wait for the other buffer's
        // queue. Device memory is ordered by its queue, so a device
        // destination's queue runs the copy (later work on it sees the
        // data); into host-visible memory the source's queue does (MAX: a
        // copy into staging memory runs on the source's queue), and hazard
        // tracking orders the host reads. When the other buffer is device
        // memory bound to another queue, the copy waits (on the device) for
        // that queue; tracked host-visible buffers need no such wait: the
        // core orders a copy after their writer when it is still pending. An
        // untracked one (Usage.UNTRACKED, DevicePinnedBuffer) has no writer
        // record, so its queue is waited for like device memory's: axl's own
        // copies stay in order whatever the usage.
        BufferObj* runs = &dst;
        BufferObj* other = &src;
        if (dst.host_visible && !src.host_visible) std::swap(runs, other);
        const axl::Queue& q = buffer_queue(*runs);
        const axl::Queue& oq = buffer_queue(*other);
        // Without the GIL: a copy may block until earlier queue work ran
        // (pageable memory on CUDA, the core's fallbacks; common.hpp), and a
        // wait across backends without host callbacks synchronizes `oq`,
        // which may run Python. The arguments keep both buffers alive.
        without_gil([&] {
          if (oq.get() != q.get() && (!other->host_visible || other->untracked_host())) q.wait_for(oq);
          q.copy(dst.buffer, dst.layout, src.buffer, src.layout);
        });
      }, py::arg("src"),
         "Enqueues a copy of src (same element count and dtype, else ValueError) into self on the queue the "
         "copy belongs to, ordered after the other side's queue where its memory needs that "
         "(Buffer.inplace_copy_from).")
      .def("_host_numpy", [](py::object self) -> py::object {
        // to_numpy's host half: the numpy dtype (raising for a DType numpy
        // lacks) before anything else; None for device memory (the caller
        // copies it to the host), else the alias after the producer's wait.
        BufferObj& b = self.cast<BufferObj&>();
        py::handle np_dtype = numpy_dtype_of(b.dtype);
        if (!b.host_visible) return py::none();
        host_wait(b, AXL_ACCESS_READ);
        return np_array_alias(b, self, np_dtype);
      }, "The numpy alias of host-visible memory after waiting for its writer; None for device memory.")
      .def("_fill_zero", [](BufferObj& b) {
        if (!b.num_elements()) return;
        if (!b.layout.is_contiguous()) throw py::value_error("_fill_zero needs a contiguous buffer");
        const auto [begin, end] = b.layout.extent();
        const axl::Queue& q = buffer_queue(b);
        without_gil([&] { q.fill(b.buffer, 0, 1, begin, end - begin); });
      }, "Enqueues a zero fill on the buffer's queue (asynchronous, as MAX's zeros).")
      .def("_host_wait", [](BufferObj& b, uint32_t access) { host_wait(b, access); }, py::arg("access"),
           "Blocks until the host may access the buffer: 1 read, 2 write (raises HostHazardError).")
      .def("_as_numpy", [](py::object self, py::handle np_dtype) {
        return np_array_alias(self.cast<BufferObj&>(), self, np_dtype);
      }, "A numpy array aliasing host-visible memory (no wait, no copy).")
      .def("__repr__", [](BufferObj& b) {
        buffer_queue(b);
        return "axl.driver.Buffer(" + std::string(py::str(b.dtype)) + ", " + shape_text(b.layout) + ", " +
               std::string(py::repr(b.queue)) + ")";
      });
  g_buffer_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  // Set once, before any subclass exists (DevicePinnedBuffer inherits it and
  // takes the pybind11 path through the type check).
  g_pybind_init = g_buffer_type->tp_init;
  g_buffer_info = py::detail::get_type_info(typeid(BufferObj));
  g_buffer_type->tp_init = buffer_init;
  add_buffer_protocol(cls);

  // ------------------------------------------------------ HostHazardCompletion
  struct CompletionObj {
    axl::Completion c;
  };
  py::class_<CompletionObj>(m, "HostHazardCompletion", R"doc(
A point in a queue that host accesses wait for (MAX:
``max._core.driver.HostHazardCompletion``). Compared and hashed by identity.
)doc")
      .def_static("record_on", [](py::handle queue) {
        QueueObj& q = arg_ref<QueueObj>(queue, "HostHazardCompletion.record_on: queue", "a DeviceQueue");
        auto o = std::make_unique<CompletionObj>();
        o->c = without_gil([&] { return axl::Completion::record(q.queue); });  // records an event
        return o;
      }, py::arg("queue"), "A completion for the work already enqueued on queue.")
      .def_static("poisoned", [](py::handle queue, py::handle error) {
        // MAX's signature takes the queue; a poisoned completion needs none,
        // but a wrong one is still refused rather than ignored.
        arg_ref<QueueObj>(queue, "HostHazardCompletion.poisoned: queue", "a DeviceQueue");
        const auto text = arg_str(error, "HostHazardCompletion.poisoned: error");
        auto o = std::make_unique<CompletionObj>();
        o->c = axl::Completion::poisoned(diagnostic_text(text).c_str());
        return o;
      }, py::arg("queue"), py::arg("error"),
         "A completion whose waits raise HostHazardError(error); a NUL in error reads \\0 there.")
      .def("is_ready", [](CompletionObj& o) { return o.c.is_ready(); }, "True once the work ran, or when poisoned.")
      .def("wait", [](CompletionObj& o) {
        const axl::Completion& c = o.c;
        without_gil([&c] { c.wait(); });
      }, "Blocks until ready; raises HostHazardError with the poison message.")
      .def("poison", [](CompletionObj& o, py::handle message) {
        const auto text = arg_str(message, "HostHazardCompletion.poison: message");
        o.c.poison(diagnostic_text(text).c_str());
      }, py::arg("message"), "Makes the completion's waits raise HostHazardError(message); a NUL reads \\0.");
  cls.def("_stamp", [](BufferObj& b, CompletionObj& c, uint32_t access) { b.buffer.stamp(c.c, access); });

  m.attr("MAX_RANK") = AXL_MAX_RANK;
  m.def("_copy_batch", [](py::sequence pairs) {
    // pairs: (dst, src) Buffers, contiguous, equal byte sizes (checked by
    // the Python caller). The core groups them by destination device.
    std::vector<axl_copy_desc> descs;
    // References to the pairs: while the GIL is released another thread may
    // empty `pairs`, which must not free a buffer the core is copying.
    std::vector<py::object> keep;
    for (py::handle p : pairs) {
      auto t = py::reinterpret_borrow<py::tuple>(p);
      keep.push_back(t);
      BufferObj& d = t[0].cast<BufferObj&>();
      BufferObj& s = t[1].cast<BufferObj&>();
      const auto [db, de] = d.layout.extent();
      const uint64_t sb = s.layout.extent().first;
      descs.push_back({d.buffer.get(), db, s.buffer.get(), sb, de - db});
    }
    without_gil([&] { axl::copy_batch(descs); });
  }, py::arg("pairs"));

  register_dlpack(m, cls);
  refuse_unconstructed_use<BufferObj>();
  refuse_unconstructed_use<CompletionObj>();
}

}  // namespace axlpy
