// Modules, kernels and DeviceQueue.launch.
//
// launch is the one call whose cost users notice per call, so it bypasses
// pybind11's dispatcher: it is a METH_FASTCALL method (no argument tuple, no
// overload resolution), scalars are read straight out of numpy scalar objects
// and the argument array lives on the stack for up to 16 arguments.
#include <cxxabi.h>
#include <array>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "common.hpp"

namespace axlpy {
namespace {

const char* kLaunchDoc = R"doc(launch($self, kernel, grid, block, /, *args, shared_mem_bytes=0)
--

Enqueues ``kernel`` over ``grid`` blocks of ``block`` threads.

grid, block: an int or a tuple/list of 1 to 3 ints (x, y, z), each >= 1 and
    < 2**32; missing dimensions are 1.
args: in the kernel's order, each one of
    * a Buffer on this queue's device: passed as its device address;
    * a numpy scalar (np.float32(2.0), np.uint32(n), ...): its bytes, at its
      own width;
    * a pair (value, axl.dtype.DType): value converted to that type.
    A plain Python int, float or bool is refused with TypeError: its width
    is ambiguous (is 3 an int32 or a uint64?) and the kernel would silently
    read garbage.
shared_mem_bytes: dynamic shared memory per block, bytes.

Raises TypeError/ValueError for malformed arguments, and the core's error
(e.g. InvalidArgumentError for a buffer on another device) otherwise.
Returns at once; the kernel runs in queue order.
)doc";

constexpr size_t kScalarSlot = 32;  // bytes kept per scalar (numpy clongdouble is 32)
constexpr size_t kInlineArgs = 16;

// Where a numpy scalar type keeps its value inside the object. Learnt once per
// type through the buffer protocol (numpy's own answer, so no layout is
// assumed), then read directly: a buffer export per argument would cost more
// than the launch.
struct ScalarLayout {
  Py_ssize_t offset = -1;  // -1: not a plain in-object value; use the buffer protocol every time
  Py_ssize_t size = 0;
};

struct NumpyTypes {
  PyObject* generic = nullptr;   // numpy.generic
  PyObject* flexible = nullptr;  // numpy.flexible (str_, bytes_, void: no fixed width)
  std::unordered_map<PyTypeObject*, ScalarLayout> layouts;
};

NumpyTypes& numpy_types() {
  static auto* t = new NumpyTypes();  // guarded by the GIL; leaked on purpose
  return *t;
}

// numpy.generic if numpy has been imported (a numpy scalar cannot exist
// otherwise, so numpy is never imported here).
bool is_numpy_scalar(PyObject* o) {
  NumpyTypes& t = numpy_types();
  if (!t.generic) {
    PyObject* np = PyImport_GetModule(py::str("numpy").ptr());
    if (!np) {
      PyErr_Clear();
      return false;
    }
    t.generic = PyObject_GetAttrString(np, "generic");
    t.flexible = PyObject_GetAttrString(np, "flexible");
    Py_DECREF(np);
    if (!t.generic || !t.flexible) throw py::error_already_set();
  }
  int r = PyObject_IsInstance(o, t.generic);
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

[[noreturn]] void arg_type_error(size_t i, const std::string& what) {
  throw py::type_error("launch: args[" + std::to_string(i) + "] " + what);
}

// Copies a numpy scalar's bytes into out; returns the size.
uint32_t pack_numpy_scalar(size_t i, PyObject* o, unsigned char* out) {
  NumpyTypes& t = numpy_types();
  PyTypeObject* type = Py_TYPE(o);
  auto it = t.layouts.find(type);
  if (it == t.layouts.end()) {
    if (PyObject_IsInstance(o, t.flexible) == 1)
      arg_type_error(i, std::string("is a numpy ") + type->tp_name +
                            ", which has no fixed width; pass a numeric numpy scalar");
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
    ScalarLayout l;
    l.size = view.len;
    const auto* base = reinterpret_cast<const char*>(o);
    const auto* p = static_cast<const char*>(view.buf);
    if (p >= base && p + view.len <= base + type->tp_basicsize) l.offset = p - base;
    PyBuffer_Release(&view);
    it = t.layouts.emplace(type, l).first;
  }
  const ScalarLayout& l = it->second;
  if (l.size <= 0 || static_cast<size_t>(l.size) > kScalarSlot)
    arg_type_error(i, std::string("is a numpy ") + type->tp_name + " of " + std::to_string(l.size) +
                          " bytes; kernel scalars are 1 to " + std::to_string(kScalarSlot) + " bytes");
  if (l.offset >= 0) {
    memcpy(out, reinterpret_cast<const char*>(o) + l.offset, static_cast<size_t>(l.size));
  } else {
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
    memcpy(out, view.buf, static_cast<size_t>(l.size));
    PyBuffer_Release(&view);
  }
  return static_cast<uint32_t>(l.size);
}

// IEEE binary16 from binary32, round to nearest even.
uint16_t half_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf / nan
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {                                                 // subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

// bfloat16 from binary32, round to nearest even (NaN stays NaN).
uint16_t bf16_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

PyObject* dtype_class() {
  static PyObject* cls = nullptr;
  if (!cls) {
    py::object c = py::module_::import("axl.dtype").attr("DType");
    cls = c.release().ptr();
  }
  return cls;
}

template <typename T>
uint32_t put(unsigned char* out, T v) {
  memcpy(out, &v, sizeof v);
  return sizeof v;
}

// (value, DType) -> bytes of that type. Codes are axl.dtype's (MAX's).
uint32_t pack_typed(size_t i, PyObject* value, PyObject* dtype, unsigned char* out) {
  const int code = py::reinterpret_borrow<py::object>(dtype).attr("value").cast<int>();
  auto integer = [&](bool is_signed, int bits) -> uint32_t {
    py::object idx = py::reinterpret_steal<py::object>(PyNumber_Index(value));
    if (!idx) {
      PyErr_Clear();
      arg_type_error(i, "is (" + std::string(Py_TYPE(value)->tp_name) + ", " +
                            std::string(py::str(py::handle(dtype))) + "); an integer dtype needs an integer value");
    }
    if (is_signed) {
      long long v = PyLong_AsLongLong(idx.ptr());
      if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
      const long long lo = bits == 64 ? INT64_MIN : -(1LL << (bits - 1));
      const long long hi = bits == 64 ? INT64_MAX : (1LL << (bits - 1)) - 1;
      if (v < lo || v > hi)
        throw py::value_error("launch: args[" + std::to_string(i) + "]: " + std::to_string(v) +
                              " does not fit in int" + std::to_string(bits));
      switch (bits) {
        case 8: return put(out, static_cast<int8_t>(v));
        case 16: return put(out, static_cast<int16_t>(v));
        case 32: return put(out, static_cast<int32_t>(v));
        default: return put(out, static_cast<int64_t>(v));
      }
    }
    if (PyObject_RichCompareBool(idx.ptr(), py::int_(0).ptr(), Py_LT) == 1)
      throw py::value_error("launch: args[" + std::to_string(i) + "]: " +
                            std::string(py::str(idx)) + " does not fit in uint" + std::to_string(bits));
    unsigned long long v = PyLong_AsUnsignedLongLong(idx.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      v = ~0ULL;
      bits = 0;  // force the range error below
    }
    if (bits == 0 || (bits < 64 && v > ((1ULL << bits) - 1)))
      throw py::value_error("launch: args[" + std::to_string(i) + "]: " + std::string(py::str(idx)) +
                            " does not fit in uint" + std::to_string(bits == 0 ? 64 : bits));
    switch (bits) {
      case 8: return put(out, static_cast<uint8_t>(v));
      case 16: return put(out, static_cast<uint16_t>(v));
      case 32: return put(out, static_cast<uint32_t>(v));
      default: return put(out, static_cast<uint64_t>(v));
    }
  };
  auto floating = [&]() -> double {
    double d = PyFloat_AsDouble(value);
    if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return d;
  };
  switch (code) {
    case 1: {  // bool
      int b = PyObject_IsTrue(value);
      if (b < 0) throw py::error_already_set();
      return put(out, static_cast<uint8_t>(b));
    }
    case 134: return integer(false, 8);
    case 135: return integer(true, 8);
    case 136: return integer(false, 16);
    case 137: return integer(true, 16);
    case 138: return integer(false, 32);
    case 139: return integer(true, 32);
    case 140: return integer(false, 64);
    case 141: return integer(true, 64);
    case 79: return put(out, half_bits(static_cast<float>(floating())));
    case 80: return put(out, bf16_bits(static_cast<float>(floating())));
    case 81: return put(out, static_cast<float>(floating()));
    case 82: return put(out, floating());
    default:
      throw py::value_error("launch: args[" + std::to_string(i) + "]: " +
                            std::string(py::str(py::handle(dtype))) +
                            " is not supported as a kernel scalar (bool, int8..int64, uint8..uint64, "
                            "float16, bfloat16, float32, float64 are)");
  }
}

// Fills arg i; scalar bytes go to slot.
void pack_arg(size_t i, PyObject* o, axl_launch_arg& a, unsigned char* slot) {
  if (PyObject_TypeCheck(o, buffer_type())) {
    a.kind = AXL_KERNEL_ARG_BUFFER;
    a.size = 0;
    a.buffer = py::handle(o).cast<BufferObj&>().launch_handle();
    a.value = nullptr;
    return;
  }
  // numpy scalars first: np.float64 is also a Python float.
  if (is_numpy_scalar(o)) {
    a.kind = AXL_KERNEL_ARG_SCALAR;
    a.size = pack_numpy_scalar(i, o, slot);
    a.value = slot;
    a.buffer = nullptr;
    return;
  }
  if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o)) {
    std::string r = py::repr(py::handle(o)).cast<std::string>();
    arg_type_error(i, "is a Python " + std::string(Py_TYPE(o)->tp_name) + " (" + r +
                          "), whose width the kernel cannot know; pass a typed scalar such as "
                          "np.uint32(" + r + ") or np.float32(" + r + "), or a (value, DType) pair "
                          "such as (" + r + ", DType.int32)");
  }
  if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 2) {
    PyObject* dt = PyTuple_GET_ITEM(o, 1);
    int r = PyObject_IsInstance(dt, dtype_class());
    if (r < 0) throw py::error_already_set();
    if (r == 1) {
      a.kind = AXL_KERNEL_ARG_SCALAR;
      a.size = pack_typed(i, PyTuple_GET_ITEM(o, 0), dt, slot);
      a.value = slot;
      a.buffer = nullptr;
      return;
    }
  }
  arg_type_error(i, "is a " + std::string(Py_TYPE(o)->tp_name) +
                        "; expected a Buffer, a numpy scalar or a (value, axl.dtype.DType) pair");
}

uint32_t dim_value(PyObject* o, const char* what) {
  py::object idx = py::reinterpret_steal<py::object>(PyNumber_Index(o));
  if (!idx) {
    PyErr_Clear();
    throw py::type_error(std::string("launch: ") + what + " entries must be ints, got " + Py_TYPE(o)->tp_name);
  }
  long long v = PyLong_AsLongLong(idx.ptr());
  if (v == -1 && PyErr_Occurred()) PyErr_Clear(), v = -1;
  if (v < 1 || v > 0xffffffffLL)
    throw py::value_error(std::string("launch: ") + what + " dimension " + std::string(py::str(idx)) +
                          " is out of range; each must be >= 1 and < 2**32");
  return static_cast<uint32_t>(v);
}

void parse_dims(PyObject* o, uint32_t out[3], const char* what) {
  out[0] = out[1] = out[2] = 1;
  if (PyLong_Check(o)) {
    out[0] = dim_value(o, what);
    return;
  }
  if (PyTuple_Check(o) || PyList_Check(o)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    if (n < 1 || n > 3)
      throw py::value_error(std::string("launch: ") + what + " has " + std::to_string(n) +
                            " dimensions; expected 1 to 3");
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t d = 0; d < n; ++d) out[d] = dim_value(items[d], what);
    return;
  }
  if (PyIndex_Check(o)) {  // numpy integers
    out[0] = dim_value(o, what);
    return;
  }
  throw py::type_error(std::string("launch: ") + what + " must be an int or a tuple of 1 to 3 ints, got " +
                       Py_TYPE(o)->tp_name);
}

PyObject* queue_launch(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    uint64_t shared_mem = 0;
    if (kwnames) {
      const Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
      for (Py_ssize_t k = 0; k < nk; ++k) {
        PyObject* name = PyTuple_GET_ITEM(kwnames, k);
        if (PyUnicode_CompareWithASCIIString(name, "shared_mem_bytes") != 0)
          throw py::type_error("launch() got an unexpected keyword argument '" +
                               py::reinterpret_borrow<py::str>(name).cast<std::string>() +
                               "' (only shared_mem_bytes is a keyword)");
        // Only when given: the common launch passes no keyword at all.
        // arg_as refuses bools and non-ints with the message naming it.
        const auto s = arg_as<int64_t>(args[nargs + k], "launch: shared_mem_bytes", "an int >= 0");
        if (s < 0) throw py::value_error("launch: shared_mem_bytes must be >= 0, got " + std::to_string(s));
        shared_mem = static_cast<uint64_t>(s);
      }
    }
    if (nargs < 3)
      throw py::type_error("launch(kernel, grid, block, *args, shared_mem_bytes=0) takes at least 3 "
                           "positional arguments (" + std::to_string(nargs) + " given)");
    QueueObj& q = py::handle(self).cast<QueueObj&>();
    if (!py::isinstance<KernelObj>(args[0]))
      throw py::type_error("launch: kernel (the first argument) must be a Kernel (module.kernel(name)), got " +
                           describe(args[0]));
    KernelObj& k = py::handle(args[0]).cast<KernelObj&>();
    uint32_t grid[3], block[3];
    parse_dims(args[1], grid, "grid");
    parse_dims(args[2], block, "block");

    const size_t n = static_cast<size_t>(nargs - 3);
    std::array<axl_launch_arg, kInlineArgs> inline_args;
    alignas(16) unsigned char inline_slots[kInlineArgs][kScalarSlot];
    std::vector<axl_launch_arg> heap_args;
    std::vector<std::array<unsigned char, kScalarSlot>> heap_slots;
    axl_launch_arg* packed = inline_args.data();
    if (n > kInlineArgs) {
      heap_args.resize(n);
      heap_slots.resize(n);
      packed = heap_args.data();
    }
    for (size_t i = 0; i < n; ++i) {
      unsigned char* slot = n > kInlineArgs ? heap_slots[i].data() : inline_slots[i];
      pack_arg(i, args[3 + i], packed[i], slot);
    }
    // Without the GIL: a driver's launch blocks while its queue is full
    // (common.hpp). The buffers are kept alive by the caller's frame (the
    // vectorcall arguments) for the call and by the core (which tracks their
    // use by this queue) afterwards.
    //
    // Raw axl_queue_launch on purpose, the binding's hottest path: the
    // arguments are packed in place above, while axl::Queue::launch would
    // copy them into a new std::vector per call, measured at ~50 ns more per
    // launch on the cpu backend (2000-launch batches, min of 200: 233 ns vs
    // 178 ns, an axl.hpp vs axl.h loop of the same kernel).
    axl_queue_t qh = q.queue.get();
    axl_kernel_t kh = k.kernel.get();
    const uint32_t num = static_cast<uint32_t>(n);
    check(without_gil([&] { return axl_queue_launch(qh, kh, grid, block, shared_mem, packed, num); }));
    Py_RETURN_NONE;
  } catch (abi::__forced_unwind&) {
    throw;  // CPython ending this thread (common.hpp: without_gil)
  } catch (...) {
    set_python_error_from_current();
    return nullptr;
  }
}

PyMethodDef g_launch_def = {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(queue_launch)),
                            METH_FASTCALL | METH_KEYWORDS, kLaunchDoc};

int32_t format_code(const py::object& format) {
  if (format.is_none()) return AXL_MODULE_FORMAT_AUTO;
  if (py::isinstance<py::int_>(format)) return arg_as<int32_t>(format, "load_module: format", "a str or an int32 code");
  if (!py::isinstance<py::str>(format))
    throw py::type_error("load_module: format must be a str (auto, shared_object, ptx, cubin, fatbin, hsaco, spirv), "
                         "got " + describe(format));
  std::string f = format.cast<std::string>();
  static const std::pair<const char*, int32_t> kNames[] = {
      {"auto", AXL_MODULE_FORMAT_AUTO},     {"shared_object", AXL_MODULE_FORMAT_SHARED_OBJECT},
      {"so", AXL_MODULE_FORMAT_SHARED_OBJECT}, {"ptx", AXL_MODULE_FORMAT_PTX},
      {"cubin", AXL_MODULE_FORMAT_CUBIN},   {"fatbin", AXL_MODULE_FORMAT_FATBIN},
      {"hsaco", AXL_MODULE_FORMAT_HSACO},   {"spirv", AXL_MODULE_FORMAT_SPIRV}};
  for (auto& [name, code] : kNames)
    if (f == name) return code;
  throw py::value_error("module format '" + f +
                        "' is not one of auto, shared_object, ptx, cubin, fatbin, hsaco, spirv");
}

}  // namespace

void add_launch_method(py::handle queue_type) {
  PyObject* descr = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(queue_type.ptr()), &g_launch_def);
  if (!descr) throw py::error_already_set();
  if (PyObject_SetAttrString(queue_type.ptr(), "launch", descr) != 0) {
    Py_DECREF(descr);
    throw py::error_already_set();
  }
  Py_DECREF(descr);
}

void register_kernels(py::module_& m) {
  py::class_<KernelObj>(m, "Kernel", "A kernel of a Module, launched with ``DeviceQueue.launch``.")
      .def_property_readonly("name", [](KernelObj& self) { return self.name; })
      .def_property_readonly("device", [](KernelObj& self) { return device_object(self.device); })
      .def("__repr__", [](KernelObj& self) {
        return "Kernel('" + self.name + "', device=" + device_text(self.device) + ")";
      });

  py::class_<ModuleObj>(m, "Module", R"doc(
A loaded backend-native module (axl extension; MAX has no kernel API).

Made by ``Device.load_module``: a shared object on the cpu backend, PTX /
cubin / fatbin on cuda, a code object on hip. ``module.kernel(name)`` gives a
Kernel to pass to ``DeviceQueue.launch``.
)doc")
      .def(
          "kernel",
          [](ModuleObj& self, py::handle name_arg) {
            const std::string name = arg_str(name_arg, "Module.kernel: name");
            auto k = std::make_unique<KernelObj>();
            k->kernel = self.module.kernel(c_string(name, "kernel name"));
            k->device = self.device;
            k->name = name;
            return k;
          },
          py::arg("name"),
          "The kernel called ``name``; NotFoundError (a RuntimeError) if there is none, "
          "InvalidArgumentError (a ValueError) if a cpu module declares a malformed signature for it "
          "(axl/cpu_kernel.h).")
      .def_property_readonly("device", [](ModuleObj& self) { return device_object(self.device); })
      .def("__repr__", [](ModuleObj& self) {
        return "Module(" + self.source + ", device=" + device_text(self.device) + ")";
      });

  m.def(
      "_load_module",
      [](py::handle device, py::object source, py::object format) {
        auto mod = std::make_unique<ModuleObj>();
        mod->device = device_of(device, "load_module: device");
        const int32_t fmt = format_code(format);
        const axl::Unowned<axl::Device> dev(mod->device);
        if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source) ||
            py::isinstance<py::memoryview>(source)) {
          py::buffer_info info = py::reinterpret_borrow<py::buffer>(source).request();
          // The bytes are read as one run from info.ptr: a strided view would
          // hand over memory that is not the view's.
          py::ssize_t expect = info.itemsize;
          for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
            if (info.shape[d] > 1 && info.strides[d] != expect)
              throw py::buffer_error("module bytes must be a C-contiguous buffer; pass bytes(view)");
            expect *= info.shape[d];
          }
          const size_t size = static_cast<size_t>(info.size * info.itemsize);
          mod->module = without_gil([&] { return dev->load_module(info.ptr, size, fmt); });
          mod->source = "<" + std::to_string(size) + " bytes>";
        } else {
          if (!PyUnicode_Check(source.ptr()) && !py::hasattr(source, "__fspath__"))
            throw py::type_error("load_module: source must be a path (str, os.PathLike) or the module's bytes, got " +
                                 describe(source));
          std::string path = py::str(py::module_::import("os").attr("fsdecode")(source)).cast<std::string>();
          const char* c_path = c_string(path, "module path");
          mod->module = without_gil([&] { return dev->load_module(std::string(c_path), fmt); });
          mod->source = "'" + path + "'";
        }
        return mod;
      },
      py::arg("device"), py::arg("source"), py::arg("format") = py::none());

  m.def(
      "_test_kernel",
      [](py::handle device, int32_t which) {
        auto k = std::make_unique<KernelObj>();
        k->device = device_of(device, "_test_kernel: device");
        k->kernel = axl::Unowned<axl::Device>(k->device)->test_kernel(which);
        k->name = k->kernel.name();
        return k;
      },
      py::arg("device"), py::arg("which"));
  refuse_unconstructed_use<KernelObj>();
  refuse_unconstructed_use<ModuleObj>();
}

}  // namespace axlpy
