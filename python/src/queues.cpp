// DeviceQueue, DeviceEvent, CompletionFlag and host functions.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "common.hpp"

namespace axlpy {
namespace {

// Host functions enqueued and not yet run. At exit (atexit, before the
// interpreter finalizes) the known devices are drained while this is
// non-zero, so every callback runs while Python can still take it.
std::atomic<int64_t> g_pending_host_funcs{0};

// Prints a raising host function's traceback to stderr and carries on: the
// exception has nowhere to go (the enqueuing frame is long gone), and a
// callback must never take the process down (MAX prints, synchronize does
// not raise). The exception and its traceback (whose frames hold the
// function's locals) are released on the release thread, not here.
void report_host_func_error(PyObject* fn) {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb && value) PyException_SetTraceback(value, tb);
  bool printed = false;
  try {
    py::module_ sys = py::module_::import("sys");
    py::object err = sys.attr("stderr");
    if (!err.is_none()) {
      std::string what;
      try {
        what = py::repr(py::handle(fn)).cast<std::string>();
      } catch (...) {
        what = "<unprintable callable>";
      }
      err.attr("write")("axl: exception in host function " + what +
                        " (enqueued with DeviceQueue.enqueue_host_func); the queue goes on:\n");
      py::module_::import("traceback")
          .attr("print_exception")(py::handle(type ? type : Py_None), py::handle(value ? value : Py_None),
                                   py::handle(tb ? tb : Py_None), py::arg("file") = err);
      err.attr("flush")();
      printed = true;
    }
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("axl: reporting a host function's exception");
  }
  if (!printed && (type || value)) {
    // WriteUnraisable consumes the error: keep references of our own so
    // that the last ones are still dropped off this thread.
    Py_XINCREF(type);
    Py_XINCREF(value);
    Py_XINCREF(tb);
    PyErr_Restore(type, value, tb);
    PyErr_WriteUnraisable(fn);
  }
  release_later(tb);
  release_later(value);
  release_later(type);
}

// Runs on a backend thread (on CUDA the driver's callback thread, where
// driver calls are forbidden); user_data is a strong reference to the
// callable, taken at enqueue. The call runs here (cuLaunchHostFunc's
// contract), but the callable and the result are released on the release
// thread: dropping the last reference may run a __del__ or free a Buffer,
// which calls the driver.
void host_func_trampoline(void* user_data) {
  auto* fn = static_cast<PyObject*>(user_data);
  if (!interpreter_alive()) {
    // Too late to run Python; the reference is deliberately leaked.
    g_pending_host_funcs.fetch_sub(1);
    return;
  }
  PyGILState_STATE st = gil_ensure_or_park();
  {
    BackendCallbackScope on_backend_thread;
    PyObject* r = PyObject_CallNoArgs(fn);
    if (r) release_later(r);
    else report_host_func_error(fn);
    release_later(fn);
  }
  PyGILState_Release(st);
  g_pending_host_funcs.fetch_sub(1);
}

QueueObj& queue_from(py::handle h) { return h.cast<QueueObj&>(); }

std::string hex(uintptr_t p) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(p));
  return buf;
}

}  // namespace

py::object make_queue_object(axl::Queue q) {
  auto obj = std::make_unique<QueueObj>();
  obj->device = q.device().get();
  obj->queue = std::move(q);
  return py::cast(std::move(obj));
}

void register_queues(py::module_& m) {

  // ------------------------------------------------------------ DeviceEvent
  py::class_<EventObj>(m, "DeviceEvent", R"doc(
A point in a queue's work (MAX: ``max.driver.DeviceEvent``).

``DeviceEvent(device, enable_timing=False)``; record it with
``queue.record_event(event)``. Timing is off by default (as cuda.core and
PyTorch) because timestamps cost something on every record.
)doc")
      .def(py::init([](py::handle device, py::handle timing_arg) {
             const bool enable_timing = arg_bool(timing_arg, "DeviceEvent: enable_timing");
             auto ev = std::make_unique<EventObj>();
             ev->device = device_of(device, "DeviceEvent: device");
             ev->timing = enable_timing;
             ev->event = axl::Unowned<axl::Device>(ev->device)->create_event(enable_timing);
             return ev;
           }),
           py::arg("device"), py::arg("enable_timing") = false)
      .def(
          "synchronize",
          [](EventObj& self) { without_gil([&] { self.event.synchronize(); }); },
          "Blocks (without the GIL) until the last record completed; an event never recorded is complete.")
      .def("is_ready", [](EventObj& self) { return self.event.is_ready(); },
           "True once the last record completed (or if never recorded).")
      .def(
          "elapsed_time",
          [](EventObj& self, py::handle end) {
            EventObj& e = arg_ref<EventObj>(end, "DeviceEvent.elapsed_time: end_event", "a DeviceEvent");
            return static_cast<double>(self.event.elapsed_ms(e.event));
          },
          py::arg("end_event"), R"doc(
Milliseconds from this event to ``end_event`` (float).

Both events need ``enable_timing=True``, must have been recorded, and must
have completed (synchronize ``end_event`` first). The three failures are
distinct: never recorded -> ``InvalidStateError``; not complete ->
``NotReadyError``; timing disabled -> ``InvalidArgumentError`` (also a
ValueError). All are RuntimeError subclasses, as MAX documents RuntimeError.
)doc")
      .def_property_readonly("device", [](EventObj& self) { return device_object(self.device); })
      .def_readonly("enable_timing", &EventObj::timing)
      .def("__eq__", [](EventObj& self, py::handle other) {
        if (!py::isinstance<EventObj>(other)) return false;
        return self.event.get() == other.cast<EventObj&>().event.get();
      })
      .def("__hash__", [](EventObj& self) { return std::hash<const void*>()(self.event.get()); })
      .def("__str__",
           [](EventObj& self) {
             const axl::DeviceInfo i = axl::Unowned<axl::Device>(self.device)->info();
             return i.api + "[" + std::to_string(i.id) + "]:event@" +
                    hex(reinterpret_cast<uintptr_t>(self.event.get()));
           })
      .def("__repr__", [](py::handle self) { return py::str(self); });

  // --------------------------------------------------------- CompletionFlag
  py::class_<FlagObj>(m, "CompletionFlag", R"doc(
An 8-byte unsigned value in host memory that the device can read and write
(MAX: ``max.driver.CompletionFlag``). Starts at 0.

Queues can wait for it (``DeviceQueue.wait_for_host_value``); the host stores
with ``signal`` (release order) and reads with ``load`` (acquire order).
Supported wherever the backend implements flags (cpu does; MAX documents
CUDA only).
)doc")
      .def(py::init([](py::handle device) {
             auto f = std::make_unique<FlagObj>();
             f->device = device_of(device, "CompletionFlag: device");
             f->flag = axl::Unowned<axl::Device>(f->device)->create_flag();
             return f;
           }),
           py::arg("device"))
      .def("signal", [](FlagObj& self, py::handle v) {
        self.flag.signal(arg_as<uint64_t>(v, "CompletionFlag.signal: value", "an int in [0, 2**64)"));
      }, py::arg("value"),
           "Release-ordered store of ``value``.")
      .def("load", [](FlagObj& self) { return self.flag.load(); }, "Acquire-ordered load.")
      .def("reset", [](FlagObj& self) { self.flag.reset(); }, "Relaxed store of 0.")
      .def_property_readonly("device_ptr", [](FlagObj& self) { return self.flag.device_address(); },
                             "The device-visible address of the value (int).")
      .def_property_readonly("device", [](FlagObj& self) { return device_object(self.device); })
      .def("__repr__", [](FlagObj& self) {
        return "CompletionFlag(device=" + device_text(self.device) + ", value=" +
               std::to_string(self.flag.load()) + ")";
      });

  // ------------------------------------------------------------ DeviceQueue
  py::class_<QueueObj> queue(m, "DeviceQueue", R"doc(
An in-order queue of work on one device (MAX: ``max.driver.DeviceQueue``).

``DeviceQueue(device, max_pending=None)`` makes a new queue; several queues
of one device may run concurrently. ``device.default_queue`` is the queue
created with the device. Work is enqueued by ``launch``, ``record_event``,
``wait_for``, ``wait_for_host_value``, ``enqueue_host_func`` and copies, and
runs in order.

A queue holds at most ``max_pending`` operations that have not finished (an
axl extension; ``None``: ``AXL_QUEUE_MAX_PENDING`` if set, else the backend's
default, 4096 on cpu and virtual; cuda, hip and level_zero keep their
driver's own bound). Enqueueing on a full queue blocks, without the GIL,
until the queue has made room. If the queue makes no progress for
``AXL_QUEUE_FULL_TIMEOUT_MS`` (default 10000; 0: never) because its oldest
operation is a ``wait_for_host_value`` that only the blocked thread could
satisfy, the enqueue raises ``AxlTimeoutError`` (a RuntimeError) naming the
flag and the value, and enqueues nothing.
)doc");
  queue
      .def(py::init([](py::handle device, py::handle max_pending) {
             // Checked before anything is created, so a bad value leaks nothing.
             uint32_t bound = 0;  // 0: the default (axl_queue_options)
             if (!max_pending.is_none()) {
               // Any integer with __index__ (numpy's too, as shapes take them).
               if (PyBool_Check(max_pending.ptr()) || !PyIndex_Check(max_pending.ptr()))
                 throw py::type_error("DeviceQueue: max_pending must be an int > 0 or None, got " +
                                      std::string(py::repr(max_pending)) + " (" +
                                      std::string(py::str(py::type::handle_of(max_pending).attr("__name__"))) +
                                      ")");
               const py::object as_int = py::reinterpret_steal<py::object>(PyNumber_Index(max_pending.ptr()));
               if (!as_int) throw py::error_already_set();
               int overflow = 0;
               const long long v = PyLong_AsLongLongAndOverflow(as_int.ptr(), &overflow);
               if (overflow != 0 || v < 1 || v > static_cast<long long>(UINT32_MAX))
                 throw py::value_error("DeviceQueue: max_pending must be from 1 to 4294967295, got " +
                                       std::string(py::repr(max_pending)));
               bound = static_cast<uint32_t>(v);
             }
             auto obj = std::make_unique<QueueObj>();
             obj->device = device_of(device, "DeviceQueue: device");
             obj->queue = axl::Unowned<axl::Device>(obj->device)->create_queue(bound);
             return obj;
           }),
           py::arg("device"), py::arg("max_pending") = py::none(),
           "A new in-order queue on ``device`` holding at most ``max_pending`` unfinished operations.")
      .def(
          "synchronize",
          [](QueueObj& self) { without_gil([&] { self.queue.synchronize(); }); },
          R"doc(
Blocks (without the GIL) until every operation enqueued so far has finished.

Raises the axl error of the first operation that failed since the previous
synchronize, e.g. ``DeviceLostError`` (a RuntimeError), with the backend and
its native code. MAX documents ValueError for this case; axl keeps the type of
the failure instead.
)doc")
      .def(
          "record_event",
          // One def for MAX's two overloads, so that a wrong argument gets a
          // message naming it rather than pybind11's overload list.
          [](QueueObj& self, py::handle event) -> py::object {
            if (event.is_none()) {
              auto ev = std::make_unique<EventObj>();
              ev->device = self.device;
              ev->event = axl::Unowned<axl::Device>(self.device)->create_event();
              without_gil([&] { self.queue.record(ev->event); });
              return py::cast(std::move(ev));
            }
            EventObj& ev = arg_ref<EventObj>(event, "DeviceQueue.record_event: event", "a DeviceEvent or None");
            without_gil([&] { self.queue.record(ev.event); });
            return py::none();
          },
          py::arg("event") = py::none(),
          "``record_event()`` records and returns a new DeviceEvent (timing off) that completes once everything "
          "enqueued so far has run; ``record_event(event)`` re-records ``event`` (same device) and returns None.")
      .def(
          "wait_for",
          // One def for MAX's overloads (wait_for(stream) / wait_for(device))
          // and axl's event, so that a wrong argument gets a message naming
          // it rather than pybind11's overload list. MAX's keyword names
          // still work: exactly one of other / stream / device / event.
          [](QueueObj& self, py::handle other, py::handle stream, py::handle device, py::handle event) {
            const int given = !other.is_none() + !stream.is_none() + !device.is_none() + !event.is_none();
            if (given != 1)
              throw py::type_error("DeviceQueue.wait_for: pass exactly one of other, stream, device or event, got " +
                                   std::to_string(given));
            const char* what = "DeviceQueue.wait_for: other";
            py::handle target = other;
            if (!stream.is_none()) target = stream, what = "DeviceQueue.wait_for: stream";
            if (!device.is_none()) target = device, what = "DeviceQueue.wait_for: device";
            if (!event.is_none()) target = event, what = "DeviceQueue.wait_for: event";
            if (py::isinstance<EventObj>(target) && stream.is_none() && device.is_none()) {
              EventObj& ev = target.cast<EventObj&>();
              without_gil([&] { self.queue.wait(ev.event); });
              return;
            }
            if (py::isinstance<QueueObj>(target) && device.is_none() && event.is_none()) {
              QueueObj& q = target.cast<QueueObj&>();
              // Without the GIL: across backends without host callbacks the
              // core falls back to synchronizing `q`, which may run Python.
              without_gil([&] { self.queue.wait_for(q.queue); });
              return;
            }
            if (!event.is_none())
              throw py::type_error(std::string(what) + " must be a DeviceEvent, got " + describe(target));
            if (!stream.is_none())
              throw py::type_error(std::string(what) + " must be a DeviceQueue, got " + describe(target));
            axl_device_t dev = nullptr;
            try {
              dev = device_of(target, what);
            } catch (const py::type_error&) {
              if (!device.is_none()) throw;
              throw py::type_error(std::string(what) + " must be a DeviceQueue, a Device or a DeviceEvent, got " +
                                   describe(target));
            }
            axl::Queue q = axl::Unowned<axl::Device>(dev)->default_queue();
            // Its reference is dropped without the GIL too (common.hpp).
            without_gil([&] {
              const axl::Queue released_here = std::move(q);
              self.queue.wait_for(released_here);
            });
          },
          py::arg("other") = py::none(), py::kw_only(), py::arg("stream") = py::none(),
          py::arg("device") = py::none(), py::arg("event") = py::none(),
          "Later work on this queue waits for all work enqueued so far on ``other``: a DeviceQueue, a Device "
          "(its default queue) or a DeviceEvent (its last record; axl extension). The host does not block.")
      .def(
          "wait_for_host_value",
          [](QueueObj& self, py::handle flag_arg, py::handle value_arg) {
            FlagObj& flag = arg_ref<FlagObj>(flag_arg, "DeviceQueue.wait_for_host_value: flag", "a CompletionFlag");
            const auto value =
                arg_as<uint64_t>(value_arg, "DeviceQueue.wait_for_host_value: value", "an int in [0, 2**64)");
            without_gil([&] { self.queue.wait_flag(flag.flag, value); });
          },
          py::arg("flag"), py::arg("value"), R"doc(
Stalls later work on this queue until ``flag.load() >= value``
(cuStreamWaitValue64 with GEQ; MAX documents "equals"). The host does not
block. The flag must belong to the same backend as the queue.
)doc")
      .def(
          "enqueue_host_func",
          [](QueueObj& self, py::object fn) {
            if (!PyCallable_Check(fn.ptr()))
              throw py::type_error("DeviceQueue.enqueue_host_func: fn must be a callable taking no arguments, got " +
                                   describe(fn));
            PyObject* ref = fn.inc_ref().ptr();
            g_pending_host_funcs.fetch_add(1);
            try {
              without_gil([&] { self.queue.enqueue_host_func(host_func_trampoline, ref); });
            } catch (const axl::Error&) {
              // The callback will never run (the ABI's rule): undo both.
              g_pending_host_funcs.fetch_sub(1);
              Py_DECREF(ref);
              throw;
            }
          },
          py::arg("fn"), R"doc(
Runs ``fn()`` on a backend thread once all earlier work on this queue has run
(cuLaunchHostFunc's contract). ``fn`` takes the GIL to run and must not call
blocking axl functions (synchronize, waits) on this queue. On CUDA that thread
is the driver's callback thread, where driver calls are forbidden: ``fn`` must
not call axl or the driver at all there (no launches, copies, allocations or
Buffer frees; signal a CompletionFlag or a threading.Event instead). If it
raises, the traceback is printed to stderr and the queue carries on; the
exception is not re-raised anywhere. The callable is kept alive until it has
run; it, its result and a raised exception are released afterwards on the
binding's own release thread, never on the backend thread, so a ``__del__``
they trigger may use axl.
)doc")
      .def_property_readonly("device", [](QueueObj& self) { return device_object(self.device); },
                             "The Device this queue belongs to.")
      .def_property_readonly(
          "native_stream_handle", [](QueueObj& self) { return self.queue.native_handle(); },
          "CUstream / hipStream_t as an int; 0 where the backend has none (cpu). Not owned by the caller.")
      .def("_device_context_ptr", [](QueueObj& self) { return reinterpret_cast<uintptr_t>(self.queue.get()); },
           "The core queue handle as an int (a per-queue key).")
      .def("__eq__", [](QueueObj& self, py::handle other) {
        if (!py::isinstance<QueueObj>(other)) return false;
        return self.queue.get() == queue_from(other).queue.get();
      })
      .def("__hash__", [](QueueObj& self) { return std::hash<const void*>()(self.queue.get()); })
      .def("__repr__", [](QueueObj& self) {
        return "DeviceQueue(device=" + device_text(self.device) + ", handle=" +
               hex(reinterpret_cast<uintptr_t>(self.queue.get())) + ")";
      });
  add_launch_method(queue);

  m.def(
      "_exit_begin",
      [] {
        // Exit must always end (axl.h: axl_process_exit_begin): from here on
        // the core bounds the drain of every queue released, and the waits
        // below end at the same deadline.
        const auto deadline = axl::process_exit_begin();
        // Host functions still queued run while Python can take them (their
        // trampolines need the GIL, so it is released while waiting).
        int64_t left = g_pending_host_funcs.load();
        if (left > 0) {
          without_gil([&] {
            while ((left = g_pending_host_funcs.load()) > 0 && std::chrono::steady_clock::now() < deadline)
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
          });
        }
        if (left > 0) {
          std::fprintf(stderr,
                       "axl: at exit, %lld host function(s) enqueued with DeviceQueue.enqueue_host_func had "
                       "not finished by the exit deadline (AXL_EXIT_GRACE_MS): each is still running or still "
                       "waiting on its queue; those waiting will not run\n",
                       static_cast<long long>(left));
        }
        // Then the references they left to the release thread, so that their
        // finalizers run before the interpreter does not let them.
        drain_release_thread(deadline);
      },
      "Begins the bounded exit: waits, until the exit deadline, for pending host functions and deferred "
      "releases (registered with atexit by axl.driver).");
  m.def("_drain_release_thread", [] { drain_release_thread(); },
        "Waits until the release thread dropped every reference handed to it so far.");
  m.def("_pending_host_funcs", [] { return g_pending_host_funcs.load(); });
  refuse_unconstructed_use<EventObj>();
  refuse_unconstructed_use<FlagObj>();
  refuse_unconstructed_use<QueueObj>();
}

}  // namespace axlpy
