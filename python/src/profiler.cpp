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

bool profiling_on() { return __atomic_load_n(&axl_profile_level_word, __ATOMIC_RELAXED) != 0; }

// --------------------------------------------------------------- Trace --
// MAX's max._core.profiler.Trace: a span entered with `with` (or by hand).
class Trace {
 public:
  Trace(std::string message, const std::string& color)
      : message_(std::move(message)), argb_(axl_profile_color(color.c_str())) {
    c_string(message_, "Trace message");
  }
  Trace& enter() {
    if (!open_) open_ = axl_profile_push(message_.c_str(), argb_) != 0;
    return *this;
  }
  void exit() {
    if (!open_) return;
    open_ = false;
    axl_profile_pop();
  }
  void mark() const { axl_profile_mark(message_.c_str(), argb_); }
  bool is_open() const { return open_; }
  const std::string& message() const { return message_; }
  uint32_t color() const { return argb_; }

 private:
  std::string message_;
  uint32_t argb_;
  bool open_ = false;
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
};

PyObject* traced_vectorcall(PyObject* self_obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<TracedCall*>(self_obj);
  if (!profiling_on()) return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
  bool open = axl_profile_push(PyBytes_AS_STRING(self->message), self->argb) != 0;
  PyObject* result = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
  if (open) {
    // The span ends whether the call returned or raised; the exception in
    // flight is kept across the pop.
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    axl_profile_pop();
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

py::object make_traced_call(py::object func, const std::string& message, const std::string& color) {
  if (!PyCallable_Check(func.ptr())) throw py::type_error("traced: the decorated object is not callable");
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
  self->dict = nullptr;
  self->weakrefs = nullptr;
  self->message = msg;
  self->argb = axl_profile_color(color.c_str());
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
        check(axl_profile_set_level_name(state.c_str()));
      },
      py::arg("state"), py::pos_only());
  m.def("_profiler_level", &axl_profile_level);
  m.def("_profiler_color", [](const std::string& name) { return axl_profile_color(name.c_str()); });
  m.def("_profiler_depth", &axl_profile_depth);
  m.def("_profiler_sinks", [] {
    uint32_t s = axl_profile_sinks();
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
        check(axl_profile_set_output(path ? c_string(*path, "profile output path") : nullptr));
      },
      py::arg("path"));
  m.def("_profiler_get_output", [] {
    size_t n = 0;
    check(axl_profile_get_output(nullptr, 0, &n));
    std::string s(n, '\0');
    check(axl_profile_get_output(s.data(), s.size(), &n));
    s.resize(n ? n - 1 : 0);
    return to_str(s);
  });
  m.def("_profiler_flush", [] { without_gil([] { check(axl_profile_flush()); }); });
  m.def("_profiler_collector_start", [] { check(axl_profile_collector_start()); });
  m.def("_profiler_collector_take", [] {
    axl_profile_events_t h = nullptr;
    check(axl_profile_collector_take(&h));
    size_t n = 0;
    axl_status s = axl_profile_events_size(h, &n);
    const axl_profile_event* ev = axl_profile_events_data(h);
    py::list out;
    try {
      check(s);
      for (size_t i = 0; i < n; ++i) {
        const axl_profile_event& e = ev[i];
        py::dict d;
        d["name"] = to_str(e.name);
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
    } catch (...) {
      axl_profile_events_release(h);
      throw;
    }
    axl_profile_events_release(h);
    return out;
  });

  py::class_<Trace>(m, "Trace", "A profiling span (MAX's Trace): enter it with `with`.")
      .def(py::init<std::string, const std::string&>(), py::arg("message"),
           py::arg("color") = "modular_purple")
      .def("__enter__", &Trace::enter, py::return_value_policy::reference_internal)
      .def(
          "__exit__",
          [](Trace& t, py::object, py::object, py::object) {
            t.exit();
            return false;
          },
          py::arg("exc_type") = py::none(), py::arg("exc_value") = py::none(),
          py::arg("traceback") = py::none())
      .def("mark", &Trace::mark, "An instant marker with this span's message and colour.")
      .def_property_readonly("message", &Trace::message)
      .def_property_readonly("color", &Trace::color)
      .def_property_readonly("is_open", &Trace::is_open);

  g_traced_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&traced_spec));
  if (!g_traced_type) throw py::error_already_set();
  m.add_object("_TracedCall", reinterpret_cast<PyObject*>(g_traced_type));
  m.def("_profiler_traced_call", &make_traced_call, py::arg("func"), py::arg("message"), py::arg("color"));
}

}  // namespace axlpy
