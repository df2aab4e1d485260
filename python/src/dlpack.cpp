// DLPack (https://dmlc.github.io/dlpack/latest/): Buffer.__dlpack__,
// __dlpack_device__ and the import half of Buffer.from_dlpack.
//
// The structs below are declared from the DLPack 1.1 specification (an ABI
// every producer and consumer shares); axl does not vendor dlpack.h because
// Debian's libdlpack-dev is 0.6, which predates versioned capsules.
#include <cstring>

#include "common.hpp"

namespace axlpy {
namespace {

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // elements; NULL means compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
struct DLPackVersion {
  uint32_t major, minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};
constexpr uint64_t kFlagReadOnly = 1ull << 0, kFlagIsCopied = 1ull << 1, kFlagSubbytePadded = 1ull << 2;
// DLDeviceType values (dlpack.h, DLPack 1.1: kDLCPU = 1, kDLCUDA = 2,
// kDLCUDAHost = 3, kDLOpenCL = 4, ..., kDLOneAPI = 14).
enum : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLOpenCL = 4, kDLROCM = 10, kDLROCMHost = 11,
                 kDLExtDev = 12, kDLOneAPI = 14 };
constexpr const char* kVersioned = "dltensor_versioned";
constexpr const char* kUsedVersioned = "used_dltensor_versioned";
constexpr const char* kLegacy = "dltensor";
constexpr const char* kUsedLegacy = "used_dltensor";

// DType value (MAX numbering) <-> DLPack (code, bits).
struct DTypeCode {
  long dtype;
  uint8_t code, bits;
};
constexpr DTypeCode kCodes[] = {
    {1, 6, 8},     {79, 2, 16},  {80, 4, 16},  {81, 2, 32},  {82, 2, 64},  {134, 1, 8},  {135, 0, 8},
    {136, 1, 16},  {137, 0, 16}, {138, 1, 32}, {139, 0, 32}, {140, 1, 64}, {141, 0, 64}, {73, 14, 8},
    {75, 10, 8},   {76, 11, 8},  {77, 12, 8},  {78, 13, 8},  {64, 17, 4},  {65, 15, 6},  {66, 16, 6},
};

DTypeCode code_of(py::handle dtype) {
  const long v = dtype.attr("value").cast<long>();
  for (const auto& c : kCodes)
    if (c.dtype == v) return c;
  throw py::buffer_error("__dlpack__: " + std::string(py::str(dtype)) + " has no DLPack type code");
}

py::object dtype_of(DLDataType t) {
  if (t.lanes != 1)
    throw py::buffer_error("from_dlpack: vector types (lanes=" + std::to_string(t.lanes) + ") are not supported");
  for (const auto& c : kCodes)
    if (c.code == t.code && c.bits == t.bits) return py::module_::import("axl.dtype").attr("DType")(c.dtype);
  throw py::buffer_error("from_dlpack: DLPack dtype (code=" + std::to_string(t.code) +
                         ", bits=" + std::to_string(t.bits) + ") has no axl DType");
}

// The DLPack device of b: by backend, since a virtual device in virtual
// device mode reports the API it emulates but owns no such memory.
DLDevice dl_device_of(BufferObj& b) {
  const axl::DeviceInfo i = axl::Unowned<axl::Device>(b.device)->info();
  const std::string& backend = i.backend;
  if (i.is_host) return {kDLCPU, 0};
  const int32_t id = static_cast<int32_t>(i.backend_index);
  if (backend == "cuda") return b.pinned ? DLDevice{kDLCUDAHost, 0} : DLDevice{kDLCUDA, id};
  if (backend == "hip") return b.pinned ? DLDevice{kDLROCMHost, 0} : DLDevice{kDLROCM, id};
  if (b.pinned) return {kDLCPU, 0};  // plain host memory to every consumer
  if (backend == "level_zero") return {kDLOneAPI, id};
  if (backend == "opencl") return {kDLOpenCL, id};
  return {kDLExtDev, id};
}

// Device memory whose DLPack form no consumer can dereference: one rule for
// every such kind, refused at export (driver/buffer.py's __dlpack__ raises
// BufferError saying how to get a host copy) and at import (no axl export
// has these types, so a capsule that does is another producer's, holding
// something axl cannot wrap).
struct Unreadable {
  int32_t device_type;
  const char* name;
  const char* why;
};
constexpr Unreadable kUnreadable[] = {
    // dlpack.h: "This will be CUDA device pointer or cl_mem handle in
    // OpenCL"; axl.h names memory by address and hands out no cl_mem, and
    // the opencl backend's address is a synthetic one (a range per cl_mem
    // from 2^40) that no host code or OpenCL driver can dereference.
    {kDLOpenCL, "kDLOpenCL",
     "a kDLOpenCL tensor's data is a cl_mem handle, and axl has only a synthetic device address for it, which "
     "neither the host nor an OpenCL driver can dereference"},
    // The virtual backend's memory is no device DLPack has a type for.
    {kDLExtDev, "kDLExtDev", "its device type would be kDLExtDev, which names no memory a consumer knows"},
};

const Unreadable* unreadable(int32_t device_type) {
  for (const auto& u : kUnreadable)
    if (u.device_type == device_type) return &u;
  return nullptr;
}

// What a capsule owns: a reference to the exporting Buffer and the arrays.
struct ExportCtx {
  PyObject* owner;
  std::vector<int64_t> shape, strides;
};

void decref_owner(void* o) { Py_XDECREF(static_cast<PyObject*>(o)); }

// Called by the consumer, on whatever thread drops its tensor: that may be a
// driver callback thread (a consumer freeing in a stream callback), where the
// Buffer this releases must not be freed, so the reference goes to the
// release thread unless this is a plain Python thread.
template <typename Managed>
void export_deleter(Managed* m) {
  if (!m) return;
  auto* ctx = static_cast<ExportCtx*>(m->manager_ctx);
  PyObject* owner = ctx->owner;
  delete ctx;
  delete m;
  if (!owner || !interpreter_alive()) return;  // too late for Python: leaked
  if (python_may_run_here()) {
    PyGILState_STATE g = gil_ensure_or_park();
    Py_DECREF(owner);
    PyGILState_Release(g);
  } else {
    run_on_release_thread(decref_owner, owner);
  }
}

template <typename Managed>
void capsule_destructor(PyObject* capsule, const char* name) {
  // Consumed capsules were renamed "used_..."; the consumer owns those.
  if (!PyCapsule_IsValid(capsule, name)) return;
  auto* m = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (m && m->deleter) m->deleter(m);
}
void destroy_versioned(PyObject* c) { capsule_destructor<DLManagedTensorVersioned>(c, kVersioned); }
void destroy_legacy(PyObject* c) { capsule_destructor<DLManagedTensor>(c, kLegacy); }

// data is the host pointer of host-visible memory, else the device address
// kernels receive (memory in kUnreadable never gets here).
void fill_tensor(DLTensor& t, BufferObj& b, ExportCtx& ctx) {
  const uint64_t addr = b.buffer.device_address();
  void* host = b.host_visible ? b.buffer.host_pointer() : nullptr;
  t.data = host ? host : reinterpret_cast<void*>(addr);
  t.device = dl_device_of(b);
  t.ndim = static_cast<int32_t>(b.layout.rank);
  const DTypeCode c = code_of(b.dtype);
  t.dtype = {c.code, c.bits, 1};
  ctx.shape.assign(b.layout.shape, b.layout.shape + b.layout.rank);
  for (uint32_t k = 0; k < b.layout.rank; ++k) ctx.strides.push_back(b.layout.strides[k] / int64_t(b.layout.element_size));
  t.shape = ctx.shape.data();
  t.strides = ctx.strides.data();
  t.byte_offset = b.layout.offset;
}

py::capsule export_capsule(py::handle self, bool versioned, bool copied) {
  BufferObj& b = self.cast<BufferObj&>();
  auto ctx = std::make_unique<ExportCtx>();
  if (versioned) {
    auto m = std::make_unique<DLManagedTensorVersioned>();
    m->version = {1, 1};
    m->deleter = export_deleter<DLManagedTensorVersioned>;
    m->flags = (copied ? kFlagIsCopied : 0) | (b.layout.element_size * 8 > code_of(b.dtype).bits ? kFlagSubbytePadded : 0);
    fill_tensor(m->dl_tensor, b, *ctx);
    ctx->owner = self.inc_ref().ptr();
    m->manager_ctx = ctx.release();
    PyObject* cap = PyCapsule_New(m.get(), kVersioned, destroy_versioned);
    if (!cap) {
      export_deleter(m.release());
      throw py::error_already_set();
    }
    m.release();
    return py::reinterpret_steal<py::capsule>(cap);
  }
  if (code_of(b.dtype).bits < 8)
    throw py::buffer_error("__dlpack__: " + std::string(py::str(b.dtype)) +
                           " needs a versioned capsule (pass max_version=(1, 0) or newer)");
  auto m = std::make_unique<DLManagedTensor>();
  m->deleter = export_deleter<DLManagedTensor>;
  fill_tensor(m->dl_tensor, b, *ctx);
  ctx->owner = self.inc_ref().ptr();
  m->manager_ctx = ctx.release();
  PyObject* cap = PyCapsule_New(m.get(), kLegacy, destroy_legacy);
  if (!cap) {
    export_deleter(m.release());
    throw py::error_already_set();
  }
  m.release();
  return py::reinterpret_steal<py::capsule>(cap);
}

// ------------------------------------------------------------------ import
struct ImportCtx {
  DLManagedTensorVersioned* versioned = nullptr;
  DLManagedTensor* legacy = nullptr;
};

void call_producer_deleter(void* p) {
  auto* ctx = static_cast<ImportCtx*>(p);
  if (ctx->versioned && ctx->versioned->deleter) ctx->versioned->deleter(ctx->versioned);
  if (ctx->legacy && ctx->legacy->deleter) ctx->legacy->deleter(ctx->legacy);
  delete ctx;
}

// The core's external-memory release callback. It runs where the memory is
// freed: inline on the thread dropping the last reference, or on the core's
// reaper thread once the queues that used the memory caught up (and on any
// thread another binding in the process releases from). Producers' deleters
// drop Python objects (numpy's does, torch's may free CUDA memory), so off a
// plain Python thread they run on the release thread: never on a driver
// callback thread, and the reaper never waits for the GIL. After interpreter
// teardown they cannot run; the process is exiting and the memory goes with
// it.
void release_import(void* p) {
  auto* ctx = static_cast<ImportCtx*>(p);
  if (!interpreter_alive()) {
    delete ctx;
    return;
  }
  if (python_may_run_here()) {
    PyGILState_STATE g = gil_ensure_or_park();
    call_producer_deleter(ctx);
    PyGILState_Release(g);
  } else {
    run_on_release_thread(call_producer_deleter, ctx);
  }
}

// The axl device for a DLPack device: host types map to the CPU.
axl_device_t device_for(DLDevice d) {
  if (d.device_type == kDLCPU || d.device_type == kDLCUDAHost || d.device_type == kDLROCMHost) {
    return axl::Device::cpu().get();  // devices are immortal; the handle stays valid
  }
  const char* backend = d.device_type == kDLCUDA ? "cuda"
                        : d.device_type == kDLROCM ? "hip"
                        : d.device_type == kDLOneAPI ? "level_zero" : nullptr;
  if (backend) {
    const uint32_t n = axl::Device::count("gpu");
    for (uint32_t i = 0; i < n; ++i) {
      try {
        const axl::Device dev = axl::Device::get("gpu", i);
        const axl::DeviceInfo info = dev.info();
        if (info.backend == backend && info.backend_index == static_cast<uint32_t>(d.device_id))
          return dev.get();  // immortal, as above
      } catch (const axl::Error&) {
        // A device that cannot be opened or described is not the one.
      }
    }
  }
  throw py::buffer_error("from_dlpack: no axl device for DLPack device (" + std::to_string(d.device_type) + ", " +
                         std::to_string(d.device_id) + ")");
}

py::tuple import_capsule(py::capsule capsule) {
  auto ctx = std::make_unique<ImportCtx>();
  const DLTensor* t = nullptr;
  uint64_t flags = 0;
  if (PyCapsule_IsValid(capsule.ptr(), kVersioned)) {
    ctx->versioned = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule.ptr(), kVersioned));
    if (ctx->versioned->version.major > 1)
      throw py::buffer_error("from_dlpack: DLPack version " + std::to_string(ctx->versioned->version.major) +
                             " is newer than 1");
    t = &ctx->versioned->dl_tensor;
    flags = ctx->versioned->flags;
  } else if (PyCapsule_IsValid(capsule.ptr(), kLegacy)) {
    ctx->legacy = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kLegacy));
    t = &ctx->legacy->dl_tensor;
  } else {
    throw py::type_error("from_dlpack: expected a 'dltensor' or 'dltensor_versioned' capsule (already consumed?)");
  }
  if (const Unreadable* u = unreadable(t->device.device_type))
    throw py::buffer_error(std::string("from_dlpack: a ") + u->name + " tensor cannot be wrapped (" + u->why +
                           "); copy it to the host first");
  if (t->ndim < 0 || t->ndim > AXL_MAX_RANK)
    throw py::buffer_error("from_dlpack: ndim " + std::to_string(t->ndim) + " is outside 0.." +
                           std::to_string(AXL_MAX_RANK));
  py::object dtype = dtype_of(t->dtype);
  // DLPack packs sub-byte elements (two float4 per byte) unless the
  // producer sets the padded flag (DLPack 1.1); axl stores one element per
  // byte, so a packed tensor would be read as twice its bytes.
  if (t->dtype.bits < 8 && !(flags & kFlagSubbytePadded))
    throw py::buffer_error("from_dlpack: " + std::string(py::str(dtype)) +
                           " arrives packed (" + std::to_string(t->dtype.bits) +
                           " bits per element, no DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED); axl stores one "
                           "element per byte: unpack it first (e.g. to uint8 or float32)");
  const uint32_t es = dtype.attr("size_in_bytes").cast<uint32_t>();
  axl_device_t dev = device_for(t->device);
  axl::Layout layout = axl::Layout::contiguous(std::vector<int64_t>(t->shape, t->shape + t->ndim), es);
  if (t->strides)
    for (int k = 0; k < t->ndim; ++k)
      if (__builtin_mul_overflow(t->strides[k], int64_t(es), &layout.strides[k]))
        throw py::buffer_error("from_dlpack: stride " + std::to_string(t->strides[k]) + " of dimension " +
                               std::to_string(k) + " overflows a 64-bit byte stride");
  layout.offset = 0;
  const bool empty = layout.num_elements() == 0;
  // The bytes touched, relative to element 0, without wrapping: each
  // dimension spans (shape - 1) x |stride| bytes on its side of element 0.
  int64_t lo = 0, hi = static_cast<int64_t>(es), size = 0;
  for (uint32_t k = 0; k < layout.rank && !empty; ++k) {
    const int64_t st = layout.strides[k];
    int64_t span = 0;
    bool bad = st == INT64_MIN || __builtin_mul_overflow(layout.shape[k] - 1, st < 0 ? -st : st, &span);
    if (!bad) bad = st < 0 ? __builtin_sub_overflow(lo, span, &lo) : __builtin_add_overflow(hi, span, &hi);
    if (bad) throw py::buffer_error("from_dlpack: shape and strides span more than 2^63 bytes");
  }
  if (__builtin_sub_overflow(hi, lo, &size))
    throw py::buffer_error("from_dlpack: shape and strides span more than 2^63 bytes");
  uint64_t elem0 = 0, last = 0;
  if (!empty && (__builtin_add_overflow(reinterpret_cast<uint64_t>(t->data), t->byte_offset, &elem0) ||
                 elem0 < static_cast<uint64_t>(-lo) ||
                 __builtin_add_overflow(elem0, static_cast<uint64_t>(hi), &last)))
    throw py::buffer_error("from_dlpack: data " + std::to_string(reinterpret_cast<uint64_t>(t->data)) +
                           " + byte_offset " + std::to_string(t->byte_offset) +
                           " puts the tensor's bytes outside the address space");
  // Consumed: the producer must not free it when its capsule dies.
  PyCapsule_SetName(capsule.ptr(), ctx->versioned ? kUsedVersioned : kUsedLegacy);
  const axl::Unowned<axl::Device> device(dev);
  const bool is_host = device->info().is_host;
  const bool host_type = t->device.device_type == kDLCPU || t->device.device_type == kDLCUDAHost ||
                         t->device.device_type == kDLROCMHost;
  axl::Buffer h;
  ImportCtx* raw = ctx.release();
  if (empty) {
    release_import(raw);
    h = device->allocate(1, 0);
    layout.offset = 0;
  } else {
    const uint64_t base = elem0 + static_cast<uint64_t>(lo);
    const uint32_t f = is_host ? AXL_BUFFER_FLAG_TRACKED : 0;
    try {
      h = device->wrap_external(base, host_type ? reinterpret_cast<void*>(base) : nullptr,
                                static_cast<uint64_t>(size), f, release_import, raw);
    } catch (const axl::Error&) {
      release_import(raw);  // the core never calls it after a failure
      throw;
    }
    layout.offset = static_cast<uint64_t>(-lo);
  }
  py::object buf = make_buffer_object(std::move(h), dev, dtype, layout, 0, false);
  return py::make_tuple(buf, (flags & kFlagReadOnly) != 0);
}

}  // namespace

void register_dlpack(py::module_& m, py::class_<BufferObj>& cls) {
  // The device type Python checks itself (driver/_cuda_array_interface.py
  // exports kDLCUDA only): taken from the enum above rather than written
  // again there.
  m.attr("_DL_CUDA") = static_cast<int>(kDLCUDA);
  cls.def("_dlpack_device", [](BufferObj& b) {
    DLDevice d = dl_device_of(b);
    return py::make_tuple(d.device_type, d.device_id);
  });
  cls.def("_dlpack_unreadable", [](BufferObj& b) -> py::object {
    const Unreadable* u = unreadable(dl_device_of(b).device_type);
    if (u) return py::str(u->why);
    return py::none();
  }, "Why no DLPack consumer can read the buffer's memory (kUnreadable), or None.");
  cls.def("_dlpack_capsule", [](py::object self, bool versioned, bool copied) {
    return export_capsule(self, versioned, copied);
  }, py::arg("versioned"), py::arg("copied") = false);
  m.def("_from_dlpack_capsule", &import_capsule, py::arg("capsule"),
        "(Buffer, read_only) for a DLPack capsule, aliasing the producer's memory.");
}

}  // namespace axlpy
