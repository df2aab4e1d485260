// Python's buffer protocol (PEP 3118; PEP 688's __buffer__ on 3.12+) for
// Buffer: memoryview(buf), np.asarray via the protocol, struct, mpi4py's
// host path.
//
// Host-visible memory (CPU and staging) is exported as it is: element 0's
// address, the shape, byte strides, a struct format and writable. Device
// memory is refused with BufferError (the protocol's error) naming how to
// reach the host: its addresses are not the host's, and a consumer that
// dereferenced one would crash (mpi4py then falls back to DLPack, which
// hands CUDA memory to CUDA-aware MPI). The slots are set by hand rather
// than through pybind11's def_buffer: a refusal must be a BufferError with
// our message, and the export must wait for the buffer's producer first.
#include <cxxabi.h>
#include <memory>

#include "common.hpp"

namespace axlpy {
namespace {

enum : uint32_t { kRead = 1, kWrite = 2 };

// The struct format of each DType with a standard one (MAX's DType values).
// The others (bfloat16, float8/6/4) have none: numpy cannot take them
// through the protocol either, and a raw-bits format would mislabel them.
const char* format_of(long dtype) {
  switch (dtype) {
    case 1: return "?";
    case 79: return "e";
    case 81: return "f";
    case 82: return "d";
    case 134: return "B";
    case 135: return "b";
    case 136: return "H";
    case 137: return "h";
    case 138: return "I";
    case 139: return "i";
    case 140: return "Q";
    case 141: return "q";
    default: return nullptr;
  }
}

// Shape and strides in Py_ssize_t, owned by the view (Py_buffer::internal).
struct Export {
  std::vector<Py_ssize_t> shape, strides;
};

bool is_f_contiguous(const Export& e, Py_ssize_t itemsize) {
  Py_ssize_t step = itemsize;
  for (size_t k = 0; k < e.shape.size(); ++k) {
    if (e.shape[k] > 1 && e.strides[k] != step) return false;
    step *= e.shape[k];
  }
  return true;
}

int get_buffer(PyObject* self, Py_buffer* view, int flags) {
  view->obj = nullptr;
  try {
    BufferObj& b = py::handle(self).cast<BufferObj&>();
    const std::string dtype = py::str(b.dtype);
    if (!b.host_visible)
      throw py::buffer_error("Buffer: " + dtype + " memory on " + device_text(b.device) +
                             " is not addressable by the host; copy it there first: buf.to(CPU()) or "
                             "buf.to_numpy()");
    const char* format = format_of(b.dtype.attr("value").cast<long>());
    if (!format)
      throw py::buffer_error("Buffer: " + dtype + " has no buffer-protocol format; use buf.to_numpy() "
                             "(with ml_dtypes installed) or buf.view() as unsigned integers of its width");
    auto e = std::make_unique<Export>();
    e->shape.assign(b.layout.shape, b.layout.shape + b.layout.rank);
    e->strides.assign(b.layout.strides, b.layout.strides + b.layout.rank);
    const auto itemsize = static_cast<Py_ssize_t>(b.layout.element_size);
    const bool c_contiguous = b.layout.is_contiguous();
    const bool want_strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
    if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !c_contiguous)
      throw py::buffer_error("Buffer: the view is not C-contiguous; use buf.contiguous()");
    if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !is_f_contiguous(*e, itemsize))
      throw py::buffer_error("Buffer: the view is not Fortran-contiguous");
    if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !c_contiguous && !is_f_contiguous(*e, itemsize))
      throw py::buffer_error("Buffer: the view is not contiguous; use buf.contiguous()");
    if (!want_strides && !c_contiguous)
      throw py::buffer_error("Buffer: the view is strided and the consumer takes contiguous memory only; "
                             "use buf.contiguous()");
    // What a host read sees must include the device work that writes the
    // buffer; a writable export also waits for pending device reads.
    host_wait(b, (flags & PyBUF_WRITABLE) ? kWrite : kRead);
    view->buf = static_cast<char*>(b.buffer.host_pointer()) + b.layout.offset;
    view->len = static_cast<Py_ssize_t>(b.num_elements()) * itemsize;
    view->itemsize = itemsize;
    view->readonly = 0;  // a Buffer is always writable (copies and kernels write it too)
    view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(format) : nullptr;
    view->ndim = static_cast<int>(b.layout.rank);
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? e->shape.data() : nullptr;
    view->strides = want_strides ? e->strides.data() : nullptr;
    view->suboffsets = nullptr;
    view->internal = e.release();
    view->obj = py::handle(self).inc_ref().ptr();
    return 0;
  } catch (abi::__forced_unwind&) {
    throw;  // CPython ending this thread (common.hpp: without_gil)
  } catch (...) {
    set_python_error_from_current();
    return -1;
  }
}

void release_buffer(PyObject*, Py_buffer* view) { delete static_cast<Export*>(view->internal); }

}  // namespace

void add_buffer_protocol(py::handle buffer_type) {
  auto* type = reinterpret_cast<PyTypeObject*>(buffer_type.ptr());
  // pybind11 points tp_as_buffer at the heap type's own slots when the
  // class is declared with py::buffer_protocol(); replaced here.
  type->tp_as_buffer->bf_getbuffer = get_buffer;
  type->tp_as_buffer->bf_releasebuffer = release_buffer;
}

}  // namespace axlpy
