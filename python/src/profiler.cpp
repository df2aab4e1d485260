// Profiler spans (axl_profile_*), the native half of axl.profiler: MAX's
// Trace, is_profiling_enabled and set_gpu_profiling_state, the traced-call
// wrapper behind @traced, and the collector/JSON controls the tests use.
//
// The traced-call wrapper is a small CPython type with vectorcall rather than
// a Python closure: with profiling off a call through it costs one relaxed
// load and one extra vectorcall, which keeps `@traced` within 1.3x of the bare
// function (benchmarks/profiler_overhead.py). It is a descriptor like a
// Python function, so it decorates methods too.
#include <pybind11/stl.h>
#include <structmember.h>

#include <cstring>
#include <optional>

#include "common.hpp"

namespace axlpy {
namespace {

bool profiling_on() { return axl::profiling_enabled(); }

// --------------------------------------------------------------- Trace --
// MAX's max._core.profiler.Trace: a span entered with `with` (or by hand).
// A plain CPython type (not pybind11) so that `with Trace(...)` costs about
// what the span itself costs: construction, __enter__ and __exit__ are
// direct C calls (benchmarks/profiler_overhead.py).
struct TraceObj {
  PyObject_HEAD
  PyObject* message;  // bytes, UTF-8
  uint32_t argb;
  bool open;
};

// A str argument of Trace as a C string, or nullptr with the Python error
// set (TypeError naming the parameter; ValueError for an embedded NUL).
const char* trace_str_arg(PyObject* o, const char* name) {
  if (!PyUnicode_Check(o)) {
    PyErr_Format(PyExc_TypeError, "Trace: %s must be a str, got %s %R", name, Py_TYPE(o)->tp_name, o);
    return nullptr;
  }
  Py_ssize_t size = 0;
  const char* s = PyUnicode_AsUTF8AndSize(o, &size);
  if (s && static_cast<size_t>(size) != std::strlen(s)) {
    PyErr_Format(PyExc_ValueError, "Trace: %s contains an embedded null character", name);
    return nullptr;
  }
  return s;
}

int trace_init(PyObject* self_obj, PyObject* args, PyObject* kwargs) {
  auto* self = reinterpret_cast<TraceObj*>(self_obj);
  static const char* kw[] = {"message", "color", nullptr};
  PyObject* message_arg = nullptr;
  PyObject* color_arg = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:Trace", const_cast<char**>(kw), &message_arg, &color_arg))
    return -1;
  // Checked here rather than with "s", whose TypeError says "argument 1"
  // instead of the parameter's name; a C string refuses embedded NULs.
  const char* message = trace_str_arg(message_arg, "message");
  if (!message) return -1;
  const char* color = color_arg ? trace_str_arg(color_arg, "color") : "modular_purple";
  if (!color) return -1;
  PyObject* bytes = PyBytes_FromString(message);
  if (!bytes) return -1;
  Py_XSETREF(self->message, bytes);
  self->argb = axl::profile_color(color);
  self->open = false;
  return 0;
}

void trace_dealloc(PyObject* self_obj) {
  auto* self = reinterpret_cast<TraceObj*>(self_obj);
  Py_CLEAR(self->message);
  PyTypeObject* tp = Py_TYPE(self_obj);
  tp->tp_free(self_obj);
  Py_DECREF(tp);
}

const char* trace_message(TraceObj* self) { return self->message ? PyBytes_AS_STRING(self->message) : ""; }

PyObject* trace_enter(PyObject* self_obj, PyObject*) {
  auto* self = reinterpret_cast<TraceObj*>(self_obj);
  if (!self->open) self->open = axl::profile_push(trace_message(self), self->argb);
  Py_INCREF(self_obj);
  return self_obj;
}

// __exit__(exc_type=None, exc_value=None, traceback=None): never suppresses.
PyObject* trace_exit(PyObject* self_obj, PyObject* const*, size_t nargsf, PyObject* kwnames) {
  Py_ssize_t n = PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  if (n > 3) {
    PyErr_Format(PyExc_TypeError, "__exit__ takes at most 3 arguments (%zd given)", n);
    return nullptr;
  }
  auto* self = reinterpret_cast<TraceObj*>(self_obj);
  if (self->open) {
    self->open = false;
    axl::profile_pop();
  }
  Py_RETURN_NONE;
}

PyObject* trace_mark(PyObject* self_obj, PyObject*) {
  auto* self = reinterpret_cast<TraceObj*>(self_obj);
  axl::profile_mark(trace_message(self), self->argb);
  Py_RETURN_NONE;
}

PyObject* trace_get_message(PyObject* self_obj, void*) {
  return PyUnicode_FromString(trace_message(reinterpret_cast<TraceObj*>(self_obj)));
}
PyObject* trace_get_color(PyObject* self_obj, void*) {
  return PyLong_FromUnsignedLong(reinterpret_cast<TraceObj*>(self_obj)->argb);
}
PyObject* trace_get_open(PyObject* self_obj, void*) {
  return PyBool_FromLong(reinterpret_cast<TraceObj*>(self_obj)->open);
}

PyMethodDef trace_methods[] = {
    {"__enter__", trace_enter, METH_NOARGS, "Opens the span (when profiling is on); returns self."},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(trace_exit)),
     METH_FASTCALL | METH_KEYWORDS,
     "Closes the span if it was opened; exceptions propagate."},
    {"mark", trace_mark, METH_NOARGS, "An instant marker with this span's message and colour."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef trace_getset[] = {
    {"message", trace_get_message, nullptr, "The span's message.", nullptr},
    {"color", trace_get_color, nullptr, "The span's colour, ARGB.", nullptr},
    {"is_open", trace_get_open, nullptr, "Whether __enter__ opened a span not yet closed.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot trace_slots[] = {
    {Py_tp_init, reinterpret_cast<void*>(trace_init)},
    {Py_tp_new, reinterpret_cast<void*>(PyType_GenericNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(trace_dealloc)},
    {Py_tp_methods, trace_methods},
    {Py_tp_getset, trace_getset},
    {Py_tp_doc, const_cast<char*>("Trace(message, color='modular_purple'): a profiling span (MAX's Trace); "
                                  "enter it with `with`. Unknown colours fall back to modular_purple.")},
    {0, nullptr},
};

PyType_Spec trace_spec = {
    "axl._core.Trace",
    sizeof(TraceObj),
    0,
    Py_TPFLAGS_DEFAULT,
    trace_slots,
};

// ------------------------------------------------------ traced wrapper --
struct TracedCall {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* func;
  PyObject* dict;
  PyObject* weakrefs;
  PyObject* message;  // bytes: the span name, UTF-8
  uint32_t argb;
  vectorcallfunc func_vectorcall;  // the callee's own, when it has one
};

// The wrapped call, through the callee's vectorcall slot when it has one
// (one indirection fewer than PyObject_Vectorcall).
inline PyObject* call_wrapped(TracedCall* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  if (self->func_vectorcall) return self->func_vectorcall(self->func, args, nargsf, kwnames);
  return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
}

PyObject* traced_vectorcall(PyObject* self_obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<TracedCall*>(self_obj);
  if (!profiling_on()) return call_wrapped(self, args, nargsf, kwnames);
  bool open = axl::profile_push(PyBytes_AS_STRING(self->message), self->argb);
  PyObject* result = call_wrapped(self, args, nargsf, kwnames);
  if (open) {
    // The span ends whether the call returned or raised; the exception in
    // flight is kept across the pop.
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    axl::profile_pop();
    PyErr_Restore(type, value, tb);
  }
  return result;
}

int traced_traverse(PyObject* self_obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<TracedCall*>(self_obj);
  Py_VISIT(self->func);
  Py_VISIT(self->dict);
  return 0;
}

int traced_clear(PyObject* self_obj) {
  auto* self = reinterpret_cast<TracedCall*>(self_obj);
  Py_CLEAR(self->func);
  Py_CLEAR(self->dict);
  return 0;
}

void traced_dealloc(PyObject* self_obj) {
  auto* self = reinterpret_cast<TracedCall*>(self_obj);
  PyObject_GC_UnTrack(self_obj);
  if (self->weakrefs) PyObject_ClearWeakRefs(self_obj);
  traced_clear(self_obj);
  Py_CLEAR(self->message);
  PyTypeObject* tp = Py_TYPE(self_obj);
  tp->tp_free(self_obj);
  Py_DECREF(tp);
}

// Binds like a function: instance.method gives a bound method.
PyObject* traced_descr_get(PyObject* self, PyObject* obj, PyObject* /*type*/) {
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

PyObject* traced_repr(PyObject* self_obj) {
  auto* self = reinterpret_cast<TracedCall*>(self_obj);
  return PyUnicode_FromFormat("<axl.profiler traced %R>", self->func);
}

PyMemberDef traced_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(TracedCall, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(TracedCall, weakrefs), READONLY, nullptr},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(TracedCall, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyGetSetDef traced_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot traced_slots[] = {
    {Py_tp_getset, traced_getset},
    {Py_tp_dealloc, reinterpret_cast<void*>(traced_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(traced_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(traced_clear)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_descr_get, reinterpret_cast<void*>(traced_descr_get)},
    {Py_tp_repr, reinterpret_cast<void*>(traced_repr)},
    {Py_tp_members, traced_members},
    {Py_tp_doc, const_cast<char*>("A function wrapped by axl.profiler.traced: a span around each call "
                                  "while profiling is enabled.")},
    {0, nullptr},
};

PyType_Spec traced_spec = {
    "axl._core._TracedCall",
    sizeof(TracedCall),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    traced_slots,
};

PyTypeObject* g_traced_type = nullptr;

py::object make_traced_call(py::object func, py::handle message_arg, py::handle color_arg) {
  if (!PyCallable_Check(func.ptr())) throw py::type_error("traced: the decorated object is not callable");
  const std::string message = arg_str(message_arg, "traced: message");
  const std::string color = arg_str(color_arg, "traced: color");
  c_string(message, "traced message");
  PyObject* msg = PyBytes_FromStringAndSize(message.data(), static_cast<Py_ssize_t>(message.size()));
  if (!msg) throw py::error_already_set();
  auto* self = PyObject_GC_New(TracedCall, g_traced_type);
  if (!self) {
    Py_DECREF(msg);
    throw py::error_already_set();
  }
  self->vectorcall = traced_vectorcall;
  self->func = func.release().ptr();
  self->func_vectorcall = PyVectorcall_Function(self->func);
  self->dict = nullptr;
  self->weakrefs = nullptr;
  self->message = msg;
  self->argb = axl::profile_color(color.c_str());
  PyObject_GC_Track(reinterpret_cast<PyObject*>(self));
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(self));
}

const char* event_kind_name(int32_t k) {
  switch (k) {
    case AXL_PROFILE_EVENT_SPAN: return "span";
    case AXL_PROFILE_EVENT_MARK: return "mark";
    case AXL_PROFILE_EVENT_LAUNCH: return "launch";
    case AXL_PROFILE_EVENT_DEVICE: return "device";
    default: return "unknown";
  }
}

}  // namespace

void register_profiler(py::module_& m) {
  m.def("_profiler_is_enabled", &profiling_on, "Returns whether profiling is enabled.");
  m.def(
      "_profiler_set_state",
      [](const std::string& state) {
        if (state != "off" && state != "on" && state != "detailed")
          throw py::value_error("set_gpu_profiling_state: invalid state '" + state +
                                "'; expected one of 'off', 'on', 'detailed'");
        axl::set_profiling_state(state);
      },
      py::arg("state"), py::pos_only());
  m.def("_profiler_level", [] { return axl::profile_level(); });
  m.def("_profiler_color", [](const std::string& name) { return axl::profile_color(name.c_str()); });
  m.def("_profiler_depth", [] { return axl::profile_depth(); });
  m.def("_profiler_sinks", [] {
    const uint32_t s = axl::profile_sinks();
    py::dict d;
    d["nvtx"] = bool(s & AXL_PROFILE_SINK_NVTX);
    d["roctx"] = bool(s & AXL_PROFILE_SINK_ROCTX);
    d["json"] = bool(s & AXL_PROFILE_SINK_JSON);
    d["collector"] = bool(s & AXL_PROFILE_SINK_COLLECTOR);
    return d;
  });
  m.def(
      "_profiler_set_output",
      [](std::optional<std::string> path) {
        axl::set_profile_output(path ? c_string(*path, "profile output path") : nullptr);
      },
      py::arg("path"));
  m.def("_profiler_get_output", [] { return to_str(axl::profile_output()); });
  m.def("_profiler_flush", [] { without_gil([] { axl::profile_flush(); }); });
  m.def("_profiler_collector_start", [] { axl::profile_collector_start(); });
  m.def("_profiler_collector_take", [] {
    py::list out;
    for (const axl::ProfileEvent& p : axl::profile_collector_take()) {
      const axl_profile_event& e = p.raw;
      py::dict d;
      d["name"] = to_str(p.name);
      d["kind"] = event_kind_name(e.kind);
      d["color"] = e.color;
      d["thread_id"] = e.thread_id;
      d["queue_id"] = e.queue_id;
      d["depth"] = e.depth;
      d["launch_kind"] = e.launch_kind;
      d["start_ns"] = e.start_ns;
      d["end_ns"] = e.end_ns;
      d["bytes"] = e.bytes;
      out.append(d);
    }
    return out;
  });

  auto* trace_type = PyType_FromSpec(&trace_spec);
  if (!trace_type) throw py::error_already_set();
  m.add_object("Trace", trace_type);

  g_traced_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&traced_spec));
  if (!g_traced_type) throw py::error_already_set();
  m.add_object("_TracedCall", reinterpret_cast<PyObject*>(g_traced_type));
  m.def("_profiler_traced_call", &make_traced_call, py::arg("func"), py::arg("message"), py::arg("color"));
}

}  // namespace axlpy
