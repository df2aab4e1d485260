// axl::Error -> the axl.driver exception class registered for its status.
//
// The classes themselves are Python (axl/_errors.py) so that they can carry
// attributes and pickle; axl/_errors.py hands them to _set_error_types at
// import. Until then (only while axl itself is importing) the builtin types
// MAX uses stand in: ValueError, IndexError, RuntimeError.
#include <cstring>
#include <exception>
#include <unordered_map>

#include "common.hpp"

namespace axlpy {
namespace {

struct ErrorTypes {
  std::unordered_map<int32_t, PyObject*> by_status;  // strong references, never dropped
  PyObject* base = nullptr;                          // AxlError
};

ErrorTypes& types() {
  static auto* t = new ErrorTypes();  // leaked: used until the very end
  return *t;
}

PyObject* builtin_for(axl_status s) {
  switch (s) {
    case AXL_ERROR_INVALID_ARGUMENT: return PyExc_ValueError;
    case AXL_ERROR_OUT_OF_RANGE: return PyExc_IndexError;
    default: return PyExc_RuntimeError;
  }
}

}  // namespace

py::str to_str(const char* s) {
  if (!s) s = "";
  PyObject* o = PyUnicode_DecodeUTF8(s, static_cast<Py_ssize_t>(strlen(s)), "surrogateescape");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

py::str to_str(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

void throw_unconstructed(const std::type_info& type) {
  const py::detail::type_info* info = py::detail::get_type_info(type);
  const std::string name =
      info ? py::handle(reinterpret_cast<PyObject*>(info->type)).attr("__name__").cast<std::string>() : "axl object";
  throw py::type_error(name + " object was made by " + name + ".__new__() without __init__ and holds nothing; "
                       "construct it by calling " + name + "(...) or the function that returns one");
}

void set_python_error(const axl::Error& e) {
  ErrorTypes& t = types();
  PyObject* cls = nullptr;
  if (auto it = t.by_status.find(e.status()); it != t.by_status.end()) cls = it->second;
  else if (t.base) cls = t.base;
  try {
    if (cls) {
      py::object exc = py::reinterpret_borrow<py::object>(cls)(
          to_str(e.what()), static_cast<int>(e.status()), to_str(e.backend()), e.native_code(),
          to_str(e.native_name()));
      PyErr_SetObject(cls, exc.ptr());
      return;
    }
  } catch (py::error_already_set& pe) {
    // Building the exception failed (it should not); report that instead of
    // losing both.
    pe.restore();
    return;
  }
  std::string msg = std::string(e.what()) + " [" + e.status_name() +
                    (e.backend().empty() ? "" : ", backend '" + e.backend() + "'") + "]";
  PyErr_SetString(builtin_for(e.status()), msg.c_str());
}

std::string describe(py::handle o) {
  return std::string(py::str(py::type::handle_of(o).attr("__name__"))) + " " + std::string(py::repr(o));
}

py::int_ arg_index(py::handle o, const char* what, const char* expected) {
  if (!PyBool_Check(o.ptr())) {
    if (PyLong_CheckExact(o.ptr())) return py::reinterpret_borrow<py::int_>(o);
    if (PyObject* i = PyNumber_Index(o.ptr())) return py::reinterpret_steal<py::int_>(i);
    // Only "not an integer" becomes our TypeError; anything else an
    // __index__ raised (KeyboardInterrupt, its own ValueError) goes on.
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
    PyErr_Clear();
  }
  throw py::type_error(std::string(what) + " must be " + expected + ", got " + describe(o));
}

std::string arg_str(py::handle o, const char* what) {
  if (!PyUnicode_Check(o.ptr())) throw py::type_error(std::string(what) + " must be a str, got " + describe(o));
  return o.cast<std::string>();
}

std::optional<std::string> arg_optional_str(py::handle o, const char* what) {
  if (o.is_none()) return std::nullopt;
  if (!PyUnicode_Check(o.ptr()))
    throw py::type_error(std::string(what) + " must be a str or None, got " + describe(o));
  return o.cast<std::string>();
}

std::vector<std::string> arg_str_list(py::handle o, const char* what) {
  const auto refuse = [&] {
    return py::type_error(std::string(what) + " must be a sequence of str, got " + describe(o));
  };
  if (PyUnicode_Check(o.ptr()) || PyBytes_Check(o.ptr()) || PyByteArray_Check(o.ptr())) throw refuse();
  PyObject* it = PyObject_GetIter(o.ptr());
  if (!it) {
    PyErr_Clear();
    throw refuse();
  }
  const py::object iter = py::reinterpret_steal<py::object>(it);
  std::vector<std::string> out;
  while (PyObject* item = PyIter_Next(it)) {
    const py::object held = py::reinterpret_steal<py::object>(item);
    if (!PyUnicode_Check(item))
      throw py::type_error(std::string(what) + "[" + std::to_string(out.size()) + "] must be a str, got " +
                           describe(item));
    out.push_back(held.cast<std::string>());
  }
  if (PyErr_Occurred()) throw py::error_already_set();
  return out;
}

bool arg_bool(py::handle o, const char* what) {
  if (o.ptr() == Py_True) return true;
  if (o.ptr() == Py_False) return false;
  // numpy.bool_ ("numpy.bool" from numpy 2 on), without importing numpy.
  const std::string type_name = Py_TYPE(o.ptr())->tp_name;
  if (type_name == "numpy.bool" || type_name == "numpy.bool_") {
    const int truth = PyObject_IsTrue(o.ptr());
    if (truth < 0) throw py::error_already_set();
    return truth != 0;
  }
  throw py::type_error(std::string(what) + " must be a bool, got " + describe(o));
}

void set_python_error_from_current() {
  try {
    throw;
  } catch (const axl::Error& e) {
    set_python_error(e);
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "axl: unknown C++ exception");
  }
}

void register_errors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const axl::Error& e) {
      set_python_error(e);
    }
  });

  m.def(
      "_set_error_types",
      [](py::object base, py::dict by_status) {
        ErrorTypes& t = types();
        // Replacing is allowed (importlib.reload); the old classes leak.
        t.base = base.release().ptr();
        for (auto item : by_status)
          t.by_status[item.first.cast<int32_t>()] =
              py::reinterpret_borrow<py::object>(item.second).release().ptr();
      },
      py::arg("base"), py::arg("by_status"),
      "Registers the exception classes raised for core errors (axl/_errors.py calls this).");

  // status.h's list as (value, name) pairs, e.g. (1, "AXL_ERROR_INVALID_ARGUMENT"):
  // axl/_errors.py builds axl.Status and checks its exception classes
  // against it, so a code added to status.h reaches Python without a second
  // list.
  m.def(
      "status_table",
      []() {
        py::list out;
#define AXL_PY_STATUS_ENTRY_(name, value, meaning) \
  out.append(py::make_tuple(static_cast<int32_t>(name), std::string(#name)));
        AXL_STATUS_CODES(AXL_PY_STATUS_ENTRY_)
#undef AXL_PY_STATUS_ENTRY_
        return out;
      },
      "Every axl_status code the core was built with, as (value, name) pairs in value order.");

  m.def(
      "_arg_index", [](py::handle value, const std::string& what) { return arg_index(value, what.c_str(), "an int"); },
      py::arg("value"), py::arg("what"),
      "value as an int (anything with __index__, numpy's integers too) but a bool; otherwise a "
      "TypeError naming `what` and the value. The rule of every native integer argument.");

  m.def(
      "status_name", [](int32_t s) { return axl::status_name(s); }, py::arg("status"),
      "The name of an axl_status code, e.g. 'AXL_ERROR_INVALID_ARGUMENT'.");
}

}  // namespace axlpy
