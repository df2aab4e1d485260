// Shared declarations of the axl._core extension.
//
// The extension is written against the public headers only (axl.hpp over
// axl.h): whatever Python can do, any other language binding can do too.
//
// GIL rules, and why they matter here:
//  * Host functions (DeviceQueue.enqueue_host_func) run Python on a backend
//    thread and must take the GIL. Any call that waits for queued work while
//    holding the GIL could therefore deadlock, so every call that may block
//    drops the GIL: synchronize, event waits, releasing a queue (which
//    finishes its pending work first), and every enqueue that reaches a
//    plugin (copies of every kind, fills, launches, event records and waits,
//    flag waits, host-function enqueues). Enqueues block on real drivers: a
//    CUDA copy between device and pageable host memory waits for earlier
//    work on the stream, any driver call blocks while the driver's queue is
//    full, and the core itself synchronizes a queue when it cannot record an
//    event to mark a tracked buffer's use (tests/python/test_gil.py drives
//    that path on the virtual backend). No backend is exempt: a cpu queue's
//    copy may chain through another device's queue, and the core's fallbacks
//    block on any backend, so there is no flag that could prove an enqueue
//    never blocks. The release costs ~50-100 ns (benchmarks/
//    python_overhead.py, docs/python.md).
//  * A backend thread never drops the last reference to a Python object: on
//    CUDA its callback thread must not call the driver, and a __del__ or a
//    Buffer release may. Host-function trampolines and external-memory
//    release callbacks hand such references to the release thread
//    (release.cpp: release_later, run_on_release_thread).
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include "axl/axl.hpp"

namespace py = pybind11;

namespace axlpy {

// False once the interpreter has begun finalizing: a backend thread must not
// then try to take the GIL (CPython would end that thread with pthread_exit,
// which unwinds through the backend's own catch blocks).
inline bool interpreter_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// Runs f with the GIL released when this thread holds it and the interpreter
// is not shutting down (during finalization nothing Python can be waiting on
// the work, see host functions, and releasing the GIL there is not allowed).
// PyEval_SaveThread/RestoreThread directly: pybind11's gil_scoped_release
// also looks up its internals, a measurable part of a launch.
//
// A thread that comes back for the GIL after finalization began (a daemon
// thread enqueueing, or dropping a queue or an event, when the program
// ends) would be ended by CPython with pthread_exit, whose forced unwind
// must not meet a noexcept frame (the destructors that release handles are
// noexcept: std::terminate) nor a catch (...) that swallows it ("exception
// not rethrown"): such a thread is parked for good instead (the process is
// ending; CPython 3.14 parks them too). The check before taking the GIL
// catches most; the unwind itself, if finalization began in between, is
// caught right where it starts and parks the thread too, so no frame of
// ours ever sees it.
[[noreturn]] void park_thread_forever();
// PyEval_RestoreThread, or park_thread_forever when CPython ends the thread.
void restore_thread_or_park(PyThreadState* state) noexcept;
// PyGILState_Ensure for a backend thread (a host function, a deleter), or
// park_thread_forever when CPython ends the thread: finalization may begin
// between the caller's interpreter_alive() check and the GIL.
PyGILState_STATE gil_ensure_or_park() noexcept;
template <typename F>
auto without_gil(F&& f) -> decltype(f()) {
  if (PyGILState_Check() && interpreter_alive()) {
    struct Reacquire {
      PyThreadState* state;
      ~Reacquire() { restore_thread_or_park(state); }
    } reacquire{PyEval_SaveThread()};
    return f();
  }
  return f();
}

// ---------------------------------------------------------- release thread
// (release.cpp) Python work that a backend thread must not do itself.

// Runs fn(arg) holding the GIL on the binding's release thread, in the order
// handed over. Never runs it once the interpreter is finalizing (leaked).
// Needs no GIL; safe on any thread.
void run_on_release_thread(void (*fn)(void*), void* arg);
// Drops the caller's reference to o (the caller holds the GIL): at once when
// it is not the last one, else on the release thread.
void release_later(PyObject* o);
// Waits (GIL released) until everything handed over so far has run, or
// until `deadline` (at exit: axl_process_exit_begin's).
void drain_release_thread(
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
// True on a thread where Python may drop references and run finalizers: a
// Python thread (it has a thread state) not inside a backend callback.
bool python_may_run_here();
// Marks the current thread as running a backend callback (trampolines).
struct BackendCallbackScope {
  BackendCallbackScope();
  ~BackendCallbackScope();
  BackendCallbackScope(const BackendCallbackScope&) = delete;
  BackendCallbackScope& operator=(const BackendCallbackScope&) = delete;
};

// Releases one reference to a core handle without holding the GIL: releasing
// the last reference to a queue waits for its pending work (a buffer's does
// not, but its external-memory release callback may take the GIL).
template <typename Handle>
void release_without_gil(Handle& h) {
  if (!h) return;
  without_gil([&h] { Handle dropped(std::move(h)); });  // released here, GIL dropped
}

// Throws axl::Error (translated to the axl.driver exception for its status).
// A Python str handed to the C ABI as a C string: an embedded NUL would cut
// it short silently (a kernel 'sax\0py' looked up as 'sax'), so refuse it as
// open() does.
inline const char* c_string(const std::string& s, const char* what) {
  if (s.find('\0') != std::string::npos)
    throw py::value_error(std::string(what) + " contains an embedded null character");
  return s.c_str();
}

// Diagnostic text (an error message a completion carries) handed to the C
// ABI: unlike a name, it must get through, since refusing it would lose the
// failure on the path that reports it; so each NUL (decoded bytes in an
// exception message) is written as the two characters "\0" instead.
inline std::string diagnostic_text(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '\0')
      out += "\\0";
    else
      out += c;
  }
  return out;
}

// A user's argument as T, or a TypeError naming the argument, what it must
// be and what it was. pybind11's own messages for these ("incompatible
// function arguments", "Unable to cast ... to C++ type '?'") name neither,
// so arguments that come from users are taken as py::handle and converted
// here (out-of-range ints included: MAX's binding refuses them with a
// TypeError too).
std::string describe(py::handle o);  // "int 3", "str 'x'"
// The one rule for an integer argument, here and in Python (axl/driver/
// _args.py calls it as _core._arg_index): anything with __index__ (numpy's
// integers too) as a Python int, of any size, but a bool, which is an int
// to Python and a mistake as a count, id or size (shapes and byte sizes
// refuse it too); pybind11's int caster takes True as 1. Anything else is a
// TypeError naming `what`, `expected` and the value.
py::int_ arg_index(py::handle o, const char* what, const char* expected);
template <typename T>
T arg_as(py::handle o, const char* what, const char* expected) {
  // pybind11's casters for these take too much (bytes for a str, anything
  // with __bool__ for a bool): arg_str and arg_bool below are strict.
  static_assert(!std::is_same_v<T, bool> && !std::is_same_v<T, std::string>, "use arg_bool / arg_str");
  py::object v = py::reinterpret_borrow<py::object>(o);
  if constexpr (std::is_integral_v<T>) v = arg_index(o, what, expected);
  try {
    return v.cast<T>();
  } catch (const py::cast_error&) {
    std::string range;
    if constexpr (std::is_integral_v<T>)  // the type is right, the value is not
      range = ": out of range [" + std::to_string(std::numeric_limits<T>::min()) + ", " +
              std::to_string(std::numeric_limits<T>::max()) + "]";
    throw py::type_error(std::string(what) + " must be " + expected + ", got " + describe(o) + range);
  }
}
template <typename Obj>
Obj& arg_ref(py::handle o, const char* what, const char* expected) {
  if (!py::isinstance<Obj>(o)) throw py::type_error(std::string(what) + " must be " + expected + ", got " + describe(o));
  return o.cast<Obj&>();
}

// The same for the kinds pybind11's casters would accept too loosely or name
// badly (errors.cpp). A str argument takes a str only: pybind11's
// std::string caster also takes bytes, which MAX's nanobind binding refuses.
std::string arg_str(py::handle o, const char* what);
// None, or a str as arg_str.
std::optional<std::string> arg_optional_str(py::handle o, const char* what);
// A sequence (list, tuple, any non-string iterable) of str. A bare str is
// refused, not split into characters, and so are bytes.
std::vector<std::string> arg_str_list(py::handle o, const char* what);
// True or False (numpy.bool_ too), as MAX's nanobind bools: an int, a str
// or None is a TypeError rather than read as truthy (pybind11's caster
// takes anything with __bool__, so enable_timing=1.5 meant True).
bool arg_bool(py::handle o, const char* what);

inline void check(axl_status s) {
  if (s != AXL_SUCCESS) axl::check(s);
}

// A C string from the core as a Python str. Paths, dlerror() text and model
// names are bytes, not necessarily UTF-8: undecodable bytes become surrogate
// escapes (os.fsdecode's rule) rather than an exception.
py::str to_str(const char* s);
py::str to_str(const std::string& s);

// ------------------------------------------------------- unconstructed use
// `Cls.__new__(Cls)` makes an instance whose C++ object was never built (no
// `__init__`). pybind11 then answers a method call on it by allocating raw
// memory for the object (type_caster_generic::load_value, "lazy allocation")
// and handing the method that garbage: a crash or nonsense, not an error. The
// allocation goes through the type's operator_new hook when it has one, so
// each class points that hook here and the call raises TypeError naming the
// class instead (inside pybind11's dispatcher, which turns it into Python's
// TypeError). Nothing in axl relies on the lazy allocation: every __init__
// installs a constructed object. Call once per class, after its py::class_.
[[noreturn]] void throw_unconstructed(const std::type_info& type);
template <class T>
void* refuse_unconstructed_allocation(size_t) {
  throw_unconstructed(typeid(T));
}
template <class T>
void refuse_unconstructed_use() {
  py::detail::get_type_info(typeid(T), /*throw_if_missing=*/true)->operator_new = &refuse_unconstructed_allocation<T>;
}

// ---------------------------------------------------------------- profiler
void register_profiler(py::module_& m);  // profiler.cpp (axl.profiler)

// ------------------------------------------------------------------ errors
void register_errors(py::module_& m);
// Sets the Python error for e (the axl.driver class registered for its
// status); for code that reports errors without C++ exceptions.
void set_python_error(const axl::Error& e);
// Sets the Python error for the exception in flight (axl::Error, pybind11
// errors, std::exception); used by the raw CPython fast paths.
void set_python_error_from_current();

// ----------------------------------------------------------------- devices
struct DeviceHandle {
  axl::Device device;
  std::string backend, label, api, architecture_name, model_name;
  uint32_t id = 0, backend_index = 0;
  uint64_t total_memory = 0, max_single_alloc = 0;
  bool is_host = false, is_host_unified = false, is_compatible = false;

  explicit DeviceHandle(axl::Device d);
  axl_device_t get() const { return device.get(); }
};

// The Python Device object (axl.driver.CPU / Accelerator) for a core device:
// one object per device for the life of the process, created on first use by
// the factory axl.driver registers.
py::object device_object(axl_device_t d);
// The core device of a Python Device (or of a DeviceHandle); a TypeError
// naming `what` ("DeviceQueue: device") for anything else.
axl_device_t device_of(py::handle device, const char* what);
// "Device(type=gpu,id=0)", for messages.
std::string device_text(axl_device_t d);
void register_devices(py::module_& m);

// ------------------------------------------------------ queues and friends
struct QueueObj {
  axl::Queue queue;
  axl_device_t device = nullptr;  // process lifetime; not counted
  ~QueueObj() { release_without_gil(queue); }
};

struct EventObj {
  axl::Event event;
  axl_device_t device = nullptr;
  bool timing = false;
  ~EventObj() { release_without_gil(event); }
};

struct FlagObj {
  axl::Flag flag;
  axl_device_t device = nullptr;
  ~FlagObj() { release_without_gil(flag); }
};

py::object make_queue_object(axl::Queue q);
void register_queues(py::module_& m);

// --------------------------------------------------------- modules, kernels
struct ModuleObj {
  axl::Module module;
  axl_device_t device = nullptr;
  std::string source;  // path, or "<N bytes>"
  ~ModuleObj() { release_without_gil(module); }
};

struct KernelObj {
  axl::Kernel kernel;
  axl_device_t device = nullptr;
  std::string name;
  ~KernelObj() { release_without_gil(kernel); }
};

void register_kernels(py::module_& m);
void register_program(py::module_& m);  // program.cpp: run-time compilation
// Adds DeviceQueue.launch (a METH_FASTCALL method, see kernels.cpp).
void add_launch_method(py::handle queue_type);

// ------------------------------------------------------------------ buffers
struct BufferObj {
  axl::Buffer buffer;            // the allocation (or wrapped external memory)
  axl::Buffer element0;          // view starting at element 0, made on demand
  axl_device_t device = nullptr;
  py::object dtype;              // axl.dtype.DType member
  py::object queue;              // bound DeviceQueue; None: the device's default
  axl::Layout layout;            // shape, byte strides and offset into `buffer`
  uint32_t usage = 0;            // MAX Usage bits: STAGING 1, UNTRACKED 2
  bool pinned = false;           // host memory bound to an accelerator
  bool host_visible = false;     // the host can address the bytes
  // What a kernel receives: a buffer whose byte 0 is element (0, ..., 0).
  axl_buffer_t launch_handle();
  uint64_t num_elements() const { return layout.num_elements(); }
  // Host-visible memory without a hazard record (Usage.UNTRACKED,
  // DevicePinnedBuffer): nothing orders it but its queue.
  bool untracked_host() const { return host_visible && !(buffer.flags() & AXL_BUFFER_FLAG_TRACKED); }
  // Released without the GIL: the last release of an allocation that queues
  // used records an event on each of them (the core frees it once they
  // caught up), an enqueue that blocks while a driver's queue is full. An
  // external buffer's callback (a DLPack deleter) that runs right here takes
  // the GIL itself.
  ~BufferObj() {
    if (!element0 && !buffer) return;
    // Most buffers die unused by any queue (a fresh host allocation): the
    // core frees those at once, so the GIL stays (~60 ns and ~500
    // instructions a Buffer of 16 floats, benchmarks/bench_buffers.py).
    if (!element0 && buffer.try_release()) return;
    without_gil([this] {
      axl::Buffer whole = std::move(buffer);
      axl::Buffer view = std::move(element0);  // released first, then whole
    });
  }
  BufferObj() = default;
  BufferObj(const BufferObj&) = delete;
  BufferObj& operator=(const BufferObj&) = delete;
};

// The Python type of Buffer (for fast isinstance checks in launch).
PyTypeObject* buffer_type();
void register_buffer(py::module_& m);
// Python's buffer protocol (memoryview, PEP 688) on the Buffer type
// (buffer_protocol.cpp).
void add_buffer_protocol(py::handle buffer_type);
// DLPack export (__dlpack__, __dlpack_device__) and import (_from_dlpack).
void register_dlpack(py::module_& m, py::class_<BufferObj>& cls);
// axl.driver.SymmetricPool's multicast groups (multicast.cpp).
void register_multicast(py::module_& m);
// Builds a Buffer object around an existing allocation (used by DLPack).
py::object make_buffer_object(axl::Buffer buffer, axl_device_t device, py::object dtype, const axl_layout& layout,
                              uint32_t usage, bool pinned);
// The queue work on b is enqueued on (its bound queue); b keeps it alive.
const axl::Queue& buffer_queue(BufferObj& b);
// Waits (GIL released) until the host may read or write b (hazard record).
void host_wait(BufferObj& b, uint32_t access);

// ---------------------------------------------- trace, discovery, benchmarks
void register_trace(py::module_& m);
void register_discovery(py::module_& m);
void register_bench(py::module_& m);
void register_max_file(py::module_& m);

}  // namespace axlpy
