// axl/axl.hpp: header-only C++17 RAII wrapper over axl.h.
//
// One class per axl.h object (Device, Queue, Event, Flag, Buffer, Module,
// Kernel, Completion; Layout as a value type) and a function for every group
// of entry points (discovery and plugin records, devices and specs, buffers
// incl. external memory, layouts, strided and batched copies, host hazard
// tracking, launch, launch trace, virtual devices, MAX files, profiler,
// process exit). Nothing here adds behaviour: each call is the C function
// of the same name.
//
// Every failing call throws axl::Error, which carries the status, the backend,
// the native code and name and the core's message (axl_last_error). Handle
// classes own one reference and copy by retaining; moving transfers it.
// Sizes are bytes and times as named (ms, ns), as in axl.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "axl/axl.h"

namespace axl {

class Error : public std::runtime_error {
 public:
  Error(axl_status status, std::string backend, int64_t native_code, std::string native_name,
        const std::string& message)
      : std::runtime_error(message),
        status_(status),
        backend_(std::move(backend)),
        native_code_(native_code),
        native_name_(std::move(native_name)) {}
  axl_status status() const noexcept { return status_; }
  // Backend name, "" when the core itself failed.
  const std::string& backend() const noexcept { return backend_; }
  int64_t native_code() const noexcept { return native_code_; }
  // Vendor's code name, e.g. "CUDA_ERROR_STUB_LIBRARY"; "" if none.
  const std::string& native_name() const noexcept { return native_name_; }
  const char* status_name() const noexcept { return axl_status_name(status_); }

 private:
  axl_status status_;
  std::string backend_;
  int64_t native_code_;
  std::string native_name_;
};

// The error for status `s` (!= AXL_SUCCESS) from the thread's last-error
// record, copied at once: the record's strings only live until the next
// failing call. The message is the status name when the core gave none.
inline Error last_error(axl_status s) {
  axl_error_info e{};
  e.struct_size = sizeof e;
  axl_last_error(&e);
  std::string msg = (e.message && *e.message) ? e.message : axl_status_name(s);
  return Error(s, e.backend ? e.backend : "", e.native_code, e.native_name ? e.native_name : "",
               msg);
}

// Throws axl::Error built from the thread's last-error record if s != 0.
inline void check(axl_status s) {
  if (s == AXL_SUCCESS) return;
  throw last_error(s);
}

// A copy of one element of an array the core hands out (launch-trace
// entries, profile events), as this header declares the struct: fields the
// core did not fill (an older core's smaller struct_size) are zero, fields a
// newer core appended are not read. struct_size is the core's.
template <typename T>
T read_element(const T* element) noexcept {
  T out{};
  const size_t n = element->struct_size < sizeof(T) ? element->struct_size : sizeof(T);
  std::memcpy(static_cast<void*>(&out), element, n);
  return out;
}

namespace detail {
// One reference to a core handle; Retain/Release are the C functions.
template <typename H, axl_status (*Retain)(H), axl_status (*Release)(H)>
class Handle {
 public:
  using handle_type = H;
  Handle() = default;
  explicit Handle(H h) noexcept : h_(h) {}  // adopts a reference
  Handle(const Handle& o) : h_(o.h_) {
    if (h_) check(Retain(h_));
  }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~Handle() {
    if (h_) Release(h_);
  }
  H get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }
  H release() noexcept { return std::exchange(h_, nullptr); }

 protected:
  H h_ = nullptr;
};
}  // namespace detail

// Uses a handle through its C++ class without owning a reference, for a
// caller that keeps the object alive by other means (a binding whose devices
// live for the process): no retain, no release.
template <typename T>
class Unowned {
 public:
  explicit Unowned(typename T::handle_type h) noexcept : t_(h) {}
  ~Unowned() { t_.release(); }
  Unowned(const Unowned&) = delete;
  Unowned& operator=(const Unowned&) = delete;
  const T& operator*() const noexcept { return t_; }
  const T* operator->() const noexcept { return &t_; }

 private:
  T t_;
};

// A new reference to `h` (axl_<object>_retain), for code holding a borrowed
// handle, e.g. one a callback received.
template <typename T>
T share(typename T::handle_type h) {
  Unowned<T> borrowed(h);
  return *borrowed;  // the copy retains
}

class Device;
class Queue;

// ------------------------------------------------------------------ layouts --
// An n-d strided view of a buffer's bytes (axl.h "Layouts"): shape in
// elements, strides and offset in bytes. A value type; it is an axl_layout,
// so its fields read directly and it passes to the C functions as is. Pure:
// no handles, safe on any thread.
struct Layout : axl_layout {
  Layout() noexcept : axl_layout{} {}
  Layout(const axl_layout& l) noexcept : axl_layout(l) {}  // NOLINT: implicit by design
  // Row-major contiguous at offset 0 (axl_layout_init). Throws
  // INVALID_ARGUMENT for rank > AXL_MAX_RANK, a negative extent, element_size
  // 0 or a byte size past 2^63.
  static Layout contiguous(const std::vector<int64_t>& shape, uint32_t element_size) {
    Layout l;
    l.set_contiguous(shape, element_size);
    return l;
  }
  // The same, in place (no 528-byte copy); unchanged when it throws.
  void set_contiguous(const std::vector<int64_t>& shape, uint32_t element_size) {
    check(axl_layout_init(this, static_cast<uint32_t>(shape.size()), shape.data(), element_size));
  }
  // numpy basic indexing of the leading dimensions (axl_layout_index).
  // Throws OUT_OF_RANGE (an index out of bounds, too many indices) or
  // INVALID_ARGUMENT (a zero slice step), with numpy's text.
  Layout index(const std::vector<axl_index>& indices) const {
    Layout out;
    check(axl_layout_index(this, indices.data(), static_cast<uint32_t>(indices.size()), &out));
    return out;
  }
  // The same bytes as elements of `element_size`, rescaling the last
  // dimension (axl_layout_view with no shape).
  Layout view(uint32_t element_size) const {
    Layout out;
    check(axl_layout_view(this, element_size, 0, nullptr, &out));
    return out;
  }
  // The same bytes as `shape` x `element_size`; the layout must be
  // contiguous and hold exactly those bytes.
  Layout view(uint32_t element_size, const std::vector<int64_t>& shape) const {
    Layout out;
    const int64_t none = 0;  // rank 0 still needs a non-NULL shape
    check(axl_layout_view(this, element_size, static_cast<uint32_t>(shape.size()),
                          shape.empty() ? &none : shape.data(), &out));
    return out;
  }
  bool is_contiguous() const noexcept { return axl_layout_is_contiguous(this) != 0; }
  uint64_t num_elements() const noexcept { return axl_layout_num_elements(this); }
  // [begin, end) of the bytes touched; begin == end == offset when empty.
  std::pair<uint64_t, uint64_t> extent() const noexcept {
    uint64_t b = 0, e = 0;
    axl_layout_extent(this, &b, &e);
    return {b, e};
  }
};

// ------------------------------------------------------ host hazard tracking --
// A point in a queue the host can wait for (axl.h "Host hazard tracking");
// a poisoned one is ready at once and its waits throw HOST_HAZARD.
class Completion
    : public detail::Handle<axl_completion_t, axl_completion_retain, axl_completion_release> {
 public:
  using Handle::Handle;
  // Marks everything enqueued on `queue` so far (may record an event, so it
  // may block like an enqueue).
  static inline Completion record(const Queue& queue);
  static Completion poisoned(const std::string& message) {
    axl_completion_t c = nullptr;
    check(axl_completion_create_poisoned(message.c_str(), &c));
    return Completion(c);
  }
  void poison(const std::string& message) const { check(axl_completion_poison(h_, message.c_str())); }
  // True once ready (poisoned counts as ready).
  bool is_ready() const {
    axl_status s = axl_completion_query(h_);
    if (s == AXL_ERROR_NOT_READY) return false;
    check(s);
    return true;
  }
  // Blocks until ready; throws HOST_HAZARD with the poison message.
  void wait() const { check(axl_completion_wait(h_)); }
};

class Buffer : public detail::Handle<axl_buffer_t, axl_buffer_retain, axl_buffer_release> {
 public:
  using Handle::Handle;
  uint64_t size() const {
    uint64_t n = 0;
    check(axl_buffer_size(h_, &n));
    return n;
  }
  uint64_t device_address() const {
    uint64_t a = 0;
    check(axl_buffer_device_address(h_, &a));
    return a;
  }
  // Throws (AXL_ERROR_INVALID_STATE) for device memory.
  void* host_pointer() const {
    void* p = nullptr;
    check(axl_buffer_host_pointer(h_, &p));
    return p;
  }
  Buffer view(uint64_t offset, uint64_t size_bytes) const {
    axl_buffer_t v = nullptr;
    check(axl_buffer_view(h_, offset, size_bytes, &v));
    return Buffer(v);
  }
  // AXL_BUFFER_FLAG_* of the allocation (a view reports its allocation's).
  uint32_t flags() const {
    uint32_t f = 0;
    check(axl_buffer_flags(h_, &f));
    return f;
  }
  // Records `c` as a reader and/or the writer (AXL_ACCESS_*) of the
  // allocation; a no-op on untracked buffers.
  void stamp(const Completion& c, uint32_t access) const { check(axl_buffer_stamp(h_, c.get(), access)); }
  // Blocks until the host may READ (last writer done) or WRITE (readers too)
  // the bytes; throws HOST_HAZARD when a producer failed. No-op untracked.
  void host_wait(uint32_t access) const { check(axl_buffer_host_wait(h_, access)); }
  inline Device device() const;
  // Drops the reference now when that cannot wait (axl_buffer_try_release):
  // true and empty afterwards; false, still holding it, for any other answer,
  // when only a plain release (the destructor) may drop it. Never throws, so
  // destructors may call it.
  bool try_release() noexcept {
    if (h_ && axl_buffer_try_release(h_) != AXL_SUCCESS) return false;
    h_ = nullptr;
    return true;
  }
};

class Event : public detail::Handle<axl_event_t, axl_event_retain, axl_event_release> {
 public:
  using Handle::Handle;
  void synchronize() const { check(axl_event_synchronize(h_)); }
  bool is_ready() const {
    axl_status s = axl_event_query(h_);
    if (s == AXL_ERROR_NOT_READY) return false;
    check(s);
    return true;
  }
  // Milliseconds from this event to `end`.
  float elapsed_ms(const Event& end) const {
    float ms = 0;
    check(axl_event_elapsed_ms(h_, end.get(), &ms));
    return ms;
  }
};

class Flag : public detail::Handle<axl_flag_t, axl_flag_retain, axl_flag_release> {
 public:
  using Handle::Handle;
  uint64_t load() const {
    uint64_t v = 0;
    check(axl_flag_load(h_, &v));
    return v;
  }
  void signal(uint64_t v) const { check(axl_flag_signal(h_, v)); }
  void reset() const { check(axl_flag_reset(h_)); }
  uint64_t device_address() const {
    uint64_t a = 0;
    check(axl_flag_device_address(h_, &a));
    return a;
  }
};

class Kernel : public detail::Handle<axl_kernel_t, axl_kernel_retain, axl_kernel_release> {
 public:
  using Handle::Handle;
  std::string name() const { return axl_kernel_name(h_); }
};

class Module : public detail::Handle<axl_module_t, axl_module_retain, axl_module_release> {
 public:
  using Handle::Handle;
  Kernel kernel(const std::string& name) const {
    axl_kernel_t k = nullptr;
    check(axl_module_get_kernel(h_, name.c_str(), &k));
    return Kernel(k);
  }
};

// A kernel argument: a buffer (passed as its device address), a scalar, or
// local memory.
struct Arg {
  axl_launch_arg raw{};
  static Arg buffer(const Buffer& b) {
    Arg a;
    a.raw.kind = AXL_KERNEL_ARG_BUFFER;
    a.raw.buffer = b.get();
    return a;
  }
  // The value must outlive the launch call (not the launch itself).
  template <typename T>
  static Arg scalar(const T& v) {
    static_assert(sizeof(T) <= 256, "scalar kernel arguments are at most 256 bytes");
    Arg a;
    a.raw.kind = AXL_KERNEL_ARG_SCALAR;
    a.raw.size = sizeof(T);
    a.raw.value = &v;
    return a;
  }
  // `bytes` of memory local to each block: an OpenCL C __local parameter.
  static Arg local(uint32_t bytes) {
    Arg a;
    a.raw.kind = AXL_KERNEL_ARG_LOCAL;
    a.raw.size = bytes;
    return a;
  }
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

class Queue : public detail::Handle<axl_queue_t, axl_queue_retain, axl_queue_release> {
 public:
  using Handle::Handle;
  void synchronize() const { check(axl_queue_synchronize(h_)); }
  void copy_from_host(const Buffer& dst, const void* src, uint64_t bytes, uint64_t dst_offset = 0) const {
    check(axl_queue_copy_from_host(h_, dst.get(), dst_offset, src, bytes));
  }
  void copy_to_host(void* dst, const Buffer& src, uint64_t bytes, uint64_t src_offset = 0) const {
    check(axl_queue_copy_to_host(h_, dst, src.get(), src_offset, bytes));
  }
  void copy(const Buffer& dst, const Buffer& src) const { check(axl_queue_copy(h_, dst.get(), src.get())); }
  void copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src, uint64_t src_offset,
            uint64_t bytes) const {
    check(axl_queue_copy_buffer(h_, dst.get(), dst_offset, src.get(), src_offset, bytes));
  }
  void fill(const Buffer& dst, uint32_t pattern, uint32_t pattern_size, uint64_t offset = 0,
            uint64_t bytes = UINT64_MAX) const {
    if (bytes == UINT64_MAX) bytes = dst.size() - offset;
    check(axl_queue_fill(h_, dst.get(), offset, bytes, pattern, pattern_size));
  }
  // Element-wise copy between two layouts of two buffers (any devices; the
  // element counts and sizes must match), axl_queue_copy_layout.
  void copy(const Buffer& dst, const Layout& dst_layout, const Buffer& src, const Layout& src_layout) const {
    check(axl_queue_copy_layout(h_, dst.get(), &dst_layout, src.get(), &src_layout));
  }
  void wait_for(const Queue& other) const { check(axl_queue_wait_queue(h_, other.get())); }
  void record(const Event& e) const { check(axl_queue_record_event(h_, e.get())); }
  void wait(const Event& e) const { check(axl_queue_wait_event(h_, e.get())); }
  void wait_flag(const Flag& f, uint64_t value) const { check(axl_queue_wait_flag(h_, f.get(), value)); }
  void write_flag(const Flag& f, uint64_t value) const { check(axl_queue_write_flag(h_, f.get(), value)); }
  void enqueue_host_func(axl_host_callback fn, void* user) const {
    check(axl_queue_enqueue_host_func(h_, fn, user));
  }
  uint64_t native_handle() const {
    uint64_t n = 0;
    check(axl_queue_native_handle(h_, &n));
    return n;
  }
  void launch(const Kernel& k, Dim3 grid, Dim3 block, const std::vector<Arg>& args,
              uint64_t shared_mem_bytes = 0) const {
    std::vector<axl_launch_arg> raw;
    raw.reserve(args.size());
    for (const Arg& a : args) raw.push_back(a.raw);
    const uint32_t g[3] = {grid.x, grid.y, grid.z}, b[3] = {block.x, block.y, block.z};
    check(axl_queue_launch(h_, k.get(), g, b, shared_mem_bytes, raw.data(),
                           static_cast<uint32_t>(raw.size())));
  }
  inline Device device() const;
};

inline Completion Completion::record(const Queue& queue) {
  axl_completion_t c = nullptr;
  check(axl_completion_record(queue.get(), &c));
  return Completion(c);
}

// Enqueues `copies` grouped by destination device, each group on that
// device's default queue (axl_copy_batch); every pair is validated first.
inline void copy_batch(const std::vector<axl_copy_desc>& copies) {
  check(axl_copy_batch(copies.data(), copies.size()));
}

// axl_device_info with owned strings.
struct DeviceInfo {
  std::string backend, label, api, architecture_name, model_name;
  uint32_t id = 0;
  uint32_t backend_index = 0;  // index within its backend
  uint64_t total_memory_bytes = 0, max_single_alloc_bytes = 0;
  bool is_host = false, is_host_unified = false, is_compatible = false;
};

class Device : public detail::Handle<axl_device_t, axl_device_retain, axl_device_release> {
 public:
  using Handle::Handle;
  // The static get(label, index) below would otherwise hide the raw-handle
  // accessor get() for every Device (and break can_access).
  using Handle::get;
  // `label`: "cpu", "gpu", or nullptr for all devices.
  static uint32_t count(const char* label = nullptr) {
    uint32_t n = 0;
    check(axl_device_count(label, &n));
    return n;
  }
  static Device get(const char* label, uint32_t index) {
    axl_device_t d = nullptr;
    check(axl_device_get(label, index, &d));
    return Device(d);
  }
  static Device cpu() { return get("cpu", 0); }
  DeviceInfo info() const {
    axl_device_info i{};
    i.struct_size = sizeof i;
    check(axl_device_get_info(h_, &i));
    return DeviceInfo{i.backend, i.label, i.api, i.architecture_name, i.model_name, i.id, i.backend_index,
                      i.total_memory_bytes, i.max_single_alloc_bytes, i.is_host != 0,
                      i.is_host_unified != 0, i.is_compatible != 0};
  }
  std::pair<uint64_t, uint64_t> memory_info() const {  // (free, total) bytes
    uint64_t f = 0, t = 0;
    check(axl_device_get_memory_info(h_, &f, &t));
    return {f, t};
  }
  Queue default_queue() const {
    axl_queue_t q = nullptr;
    check(axl_device_default_queue(h_, &q));
    return Queue(q);
  }
  // max_pending: the most operations pending on the queue at once, 0 for
  // the default (axl_queue_options.max_pending).
  Queue create_queue(uint32_t max_pending = 0) const {
    axl_queue_t q = nullptr;
    axl_queue_options o{};
    o.struct_size = sizeof o;
    o.max_pending = max_pending;
    check(axl_queue_create_with_options(h_, &o, &q));
    return Queue(q);
  }
  // `bytes` (> 0, <= max_single_alloc_bytes); flags AXL_BUFFER_FLAG_*.
  Buffer allocate(uint64_t bytes, uint32_t flags = AXL_BUFFER_FLAG_NONE) const {
    axl_buffer_t b = nullptr;
    check(axl_buffer_create(h_, bytes, flags, &b));
    return Buffer(b);
  }
  // Wraps memory axl did not allocate, without copying
  // (axl_buffer_create_external): `address` is what kernels receive, `host`
  // the same byte for the host or nullptr. `release(user_data)` runs once
  // when the buffer dies, after the queues that used it finished; on a
  // throw it is not called and nothing is kept.
  Buffer wrap_external(uint64_t address, void* host, uint64_t bytes, uint32_t flags,
                       axl_buffer_release_callback release, void* user_data) const {
    axl_buffer_t b = nullptr;
    check(axl_buffer_create_external(h_, address, host, bytes, flags, release, user_data, &b));
    return Buffer(b);
  }
  Event create_event(bool timing = false) const {
    axl_event_t e = nullptr;
    check(axl_event_create(h_, timing ? AXL_EVENT_TIMING : AXL_EVENT_NONE, &e));
    return Event(e);
  }
  Flag create_flag() const {
    axl_flag_t f = nullptr;
    check(axl_flag_create(h_, &f));
    return Flag(f);
  }
  Module load_module(const void* data, size_t size, int32_t format = AXL_MODULE_FORMAT_AUTO) const {
    axl_module_t m = nullptr;
    check(axl_module_load_data(h_, data, size, format, &m));
    return Module(m);
  }
  Module load_module(const std::string& path, int32_t format = AXL_MODULE_FORMAT_AUTO) const {
    axl_module_t m = nullptr;
    check(axl_module_load_file(h_, path.c_str(), format, &m));
    return Module(m);
  }
  // Compiles `source` with the backend's run-time compiler (NVRTC on cuda);
  // axl_module_compile. The compiler's log is in the thrown error.
  Module compile_module(const std::string& source, const std::vector<std::string>& options = {},
                        const std::string& name = "axl_program.cu",
                        int32_t language = AXL_SOURCE_LANGUAGE_CUDA) const {
    std::vector<const char*> opts;
    for (const std::string& o : options) opts.push_back(o.c_str());
    axl_module_t m = nullptr;
    check(axl_module_compile(h_, language, source.c_str(), name.c_str(), opts.empty() ? nullptr : opts.data(),
                             static_cast<uint32_t>(opts.size()), &m));
    return Module(m);
  }
  Kernel test_kernel(int32_t which) const {
    axl_kernel_t k = nullptr;
    check(axl_device_get_test_kernel(h_, which, &k));
    return Kernel(k);
  }
  void synchronize() const { check(axl_device_synchronize(h_)); }
  bool can_access(const Device& peer) const {
    uint8_t v = 0;
    check(axl_device_can_access(h_, peer.get(), &v));
    return v != 0;
  }
  void enable_peer_access(const Device& peer) const { check(axl_device_enable_peer_access(h_, peer.get())); }
  // Whether the device can be a member of a multicast group
  // (axl_device_multicast_supported).
  bool multicast_supported() const {
    uint8_t v = 0;
    check(axl_device_multicast_supported(h_, &v));
    return v != 0;
  }
  bool operator==(const Device& o) const { return axl_device_equal(h_, o.h_) != 0; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

// A multicast group over two or more devices of one backend
// (axl_multicast_create): per member, a unicast buffer and a multicast view
// whose writes reach every member. The buffers keep the group alive.
class Multicast : public detail::Handle<axl_multicast_t, axl_multicast_retain, axl_multicast_release> {
 public:
  using Handle::Handle;
  static Multicast create(const std::vector<Device>& devices, uint64_t bytes) {
    std::vector<axl_device_t> raw;
    raw.reserve(devices.size());
    for (const Device& d : devices) raw.push_back(d.get());
    axl_multicast_t g = nullptr;
    check(axl_multicast_create(raw.data(), static_cast<uint32_t>(raw.size()), bytes, &g));
    return Multicast(g);
  }
  // Bytes each member holds: the request rounded up to the granularity.
  uint64_t reserved_bytes() const {
    uint64_t v = 0;
    check(axl_multicast_reserved_bytes(h_, &v));
    return v;
  }
  // Member `index`'s own memory, or its multicast view.
  Buffer unicast(uint32_t index) const { return view(index, AXL_MULTICAST_VIEW_UNICAST); }
  Buffer multicast(uint32_t index) const { return view(index, AXL_MULTICAST_VIEW_MULTICAST); }

 private:
  Buffer view(uint32_t index, uint32_t which) const {
    axl_buffer_t b = nullptr;
    check(axl_multicast_buffer(h_, index, which, &b));
    return Buffer(b);
  }
};

inline Device Buffer::device() const {
  axl_device_t d = nullptr;
  check(axl_buffer_device(h_, &d));
  return Device(d);
}

inline Device Queue::device() const {
  axl_device_t d = nullptr;
  check(axl_queue_device(h_, &d));
  return Device(d);
}

// ------------------------------------------------- version, log, discovery --
inline std::string version_string() { return axl_version_string(); }
// (major, minor) of the application ABI libaxl.so implements.
inline std::pair<uint32_t, uint32_t> abi_version() {
  const uint32_t v = axl_abi_version();
  return {v >> 16, v & 0xffffu};
}
inline std::string status_name(axl_status s) { return axl_status_name(s); }
// Runs discovery once; throws only when AXL_PLUGINS names a plugin that
// failed to load.
inline void init() { check(axl_init()); }
// AXL_LOG_* (plugin.h): TRACE 0 ... ERROR 4, OFF 6.
inline void set_log_level(int32_t level) { check(axl_set_log_level(level)); }
inline void enable_all_peer_access() { check(axl_enable_all_peer_access()); }

// One plugin file discovery considered (axl_plugin_record, strings owned).
struct PluginRecord {
  std::string path, name, api, version, reason;
  uint32_t abi_major = 0, abi_minor = 0;  // 0.0 if never negotiated
  int32_t state = AXL_PLUGIN_STATE_SKIPPED;  // AXL_PLUGIN_STATE_*
  axl_status status = AXL_SUCCESS;           // why skipped or unavailable
  uint32_t device_count = 0;                 // 0 unless loaded
  uint32_t flags = 0;                        // AXL_PLUGIN_FLAG_*

  PluginRecord() = default;
  explicit PluginRecord(const axl_plugin_record& r)
      : path(r.path ? r.path : ""),
        name(r.name ? r.name : ""),
        api(r.api ? r.api : ""),
        version(r.version ? r.version : ""),
        reason(r.reason ? r.reason : ""),
        abi_major(r.abi_major),
        abi_minor(r.abi_minor),
        state(r.state),
        status(r.status),
        device_count(r.device_count),
        flags(r.flags) {}
  // "loaded", "skipped", "shadowed", "disabled", "unavailable".
  const char* state_name() const noexcept { return axl_plugin_state_name(state); }
  bool loaded() const noexcept { return state == AXL_PLUGIN_STATE_LOADED; }
};

inline uint32_t plugin_count() {
  uint32_t n = 0;
  check(axl_plugin_count(&n));
  return n;
}
// Throws OUT_OF_RANGE past plugin_count().
inline PluginRecord plugin_record(uint32_t index) {
  axl_plugin_record r{};
  r.struct_size = sizeof r;
  check(axl_plugin_get_record(index, &r));
  return PluginRecord(r);
}
// Every plugin file discovery considered, in discovery order; none if the
// count cannot be read, and a record that cannot be read is left out (a
// report shows what it can).
inline std::vector<PluginRecord> plugin_records() {
  std::vector<PluginRecord> out;
  uint32_t n = 0;
  if (axl_plugin_count(&n) != AXL_SUCCESS) return out;
  for (uint32_t i = 0; i < n; ++i) {
    axl_plugin_record r{};
    r.struct_size = sizeof r;
    if (axl_plugin_get_record(i, &r) == AXL_SUCCESS) out.emplace_back(r);
  }
  return out;
}

// The AXL_PLUGIN_FLAG_* bits of `flags` by their report names, in bit
// order ("fork_safe", "virtual", "experimental", "host",
// "queue_thread_safe": axl/enums.h's list); bits this header does not know,
// shown as one hex value ("0x40") so that a newer plugin's are not hidden.
inline std::vector<std::string> plugin_flag_names(uint32_t flags) {
  static const struct {
    uint32_t bit;
    const char* name;
  } kFlags[] = {
#define AXL_HPP_FLAG_NAME_(name, bit, report_name) {name, report_name},
      AXL_PLUGIN_FLAGS(AXL_HPP_FLAG_NAME_)
#undef AXL_HPP_FLAG_NAME_
  };
  std::vector<std::string> out;
  for (const auto& f : kFlags)
    if (flags & f.bit) {
      out.emplace_back(f.name);
      flags &= ~f.bit;
    }
  if (flags) {
    static const char kHex[] = "0123456789abcdef";
    std::string hex;
    for (uint32_t v = flags; v; v >>= 4) hex.insert(hex.begin(), kHex[v & 0xf]);
    out.push_back("0x" + hex);
  }
  return out;
}

namespace detail {
// Reads a string through axl.h's two-call protocol (*out_size counts the NUL).
inline std::string two_call_string(axl_status (*fn)(char*, size_t, size_t*)) {
  size_t need = 0;
  check(fn(nullptr, 0, &need));
  std::string s(need, '\0');
  check(fn(s.data(), s.size(), &need));
  s.resize(strnlen(s.c_str(), s.size()));
  return s;
}
}  // namespace detail

// The discovery trace, one event a line.
inline std::string discovery_log() { return detail::two_call_string(axl_discovery_log); }

// ------------------------------------------------------------- launch trace --
namespace detail {
// Takes a snapshot the core hands over (a launch trace, profile events),
// copies each entry with its name (owned by the snapshot), releases it, and
// only then reports a failure to read its size.
template <typename Entry, typename H, typename Raw>
std::vector<Entry> take_snapshot(axl_status (*take)(H*), axl_status (*size)(H, size_t*),
                                 const Raw* (*data)(H), axl_status (*release)(H)) {
  H h = nullptr;
  check(take(&h));
  size_t n = 0;
  const axl_status s = size(h, &n);
  std::vector<Entry> out;
  if (s == AXL_SUCCESS) {
    const Raw* e = data(h);
    out.reserve(n);
    // The core's elements lie e->struct_size bytes apart (axl.h's
    // axl_launch_trace_entry_at / axl_profile_event_at), not sizeof(Raw).
    for (size_t i = 0; i < n; ++i) {
      const Raw c = read_element(reinterpret_cast<const Raw*>(
          reinterpret_cast<const char*>(e) + i * e->struct_size));
      out.push_back({c, c.name ? c.name : ""});
    }
  }
  release(h);
  check(s);
  return out;
}
}  // namespace detail

// One launch-trace entry with an owned name.
struct LaunchTraceEntry {
  axl_launch_trace_entry raw;
  std::string name;
};

inline void begin_launch_trace(bool include_host = false) {
  check(axl_launch_trace_begin(include_host ? AXL_LAUNCH_TRACE_INCLUDE_HOST : 0));
}

inline std::vector<LaunchTraceEntry> take_launch_trace() {
  return detail::take_snapshot<LaunchTraceEntry>(axl_launch_trace_take, axl_launch_trace_size,
                                                 axl_launch_trace_entries, axl_launch_trace_release);
}

// Parses a device spec ("cpu", "gpu:0,1", "gpu:all", ...).
inline std::vector<axl_device_spec> parse_device_spec(const std::string& text) {
  size_t n = 0;
  check(axl_device_spec_parse(text.c_str(), nullptr, 0, &n));
  std::vector<axl_device_spec> v(n);
  check(axl_device_spec_parse(text.c_str(), v.data(), v.size(), &n));
  v.resize(n);
  return v;
}

// Max(1, 1 + the largest accelerator id among `specs`).
inline uint32_t calculate_virtual_device_count(const std::vector<axl_device_spec>& specs) {
  uint32_t n = 0;
  check(axl_calculate_virtual_device_count(specs.data(), specs.size(), &n));
  return n;
}
// The same from MAX's CLI strings ("gpu", "gpu:all", "gpu:0,2", ...).
inline uint32_t calculate_virtual_device_count_from_cli(const std::vector<std::string>& inputs) {
  std::vector<const char*> p;
  p.reserve(inputs.size());
  for (const std::string& s : inputs) p.push_back(s.c_str());
  uint32_t n = 0;
  check(axl_calculate_virtual_device_count_from_cli(p.data(), p.size(), &n));
  return n;
}

// ---------------------------------------------------------- virtual devices --
// count > 0: the accelerators become `count` compile-only virtual devices
// (set the api and architecture first); 0: off. Throws INVALID_ARGUMENT
// (negative, > 1024) or BACKEND_UNAVAILABLE (no virtual plugin).
inline void set_virtual_device_count(int32_t count) { check(axl_set_virtual_device_count(count)); }
inline int32_t virtual_device_count() {
  int32_t n = 0;
  check(axl_get_virtual_device_count(&n));
  return n;
}
inline bool is_virtual_device_mode() { return axl_is_virtual_device_mode() != 0; }
inline void set_virtual_device_api(const std::string& api) { check(axl_set_virtual_device_api(api.c_str())); }
inline std::string virtual_device_api() { return detail::two_call_string(axl_get_virtual_device_api); }
inline void set_virtual_device_target_arch(const std::string& arch) {
  check(axl_set_virtual_device_target_arch(arch.c_str()));
}
inline std::string virtual_device_target_arch() {
  return detail::two_call_string(axl_get_virtual_device_target_arch);
}
// An LLVM CPU name, "generic" or "" (host); "native" throws INVALID_ARGUMENT.
inline void set_virtual_cpu_target(const std::string& cpu) { check(axl_set_virtual_cpu_target(cpu.c_str())); }
inline std::string virtual_cpu_target() { return detail::two_call_string(axl_get_virtual_cpu_target); }

// ------------------------------------------------------------- MAX files --
// Parses the header of a `.max` file of `file_size` bytes from its first
// `size` bytes into `out` (axl_max_file_parse). Throws INVALID_ARGUMENT for
// a malformed file (MAX's text), OUT_OF_RANGE when `size` bytes do not hold
// the header: out.header_bytes then says how many leading bytes to pass.
inline void parse_max_file(const void* bytes, uint64_t size, uint64_t file_size, axl_max_file_header& out) {
  out.struct_size = sizeof out;
  check(axl_max_file_parse(bytes, size, file_size, &out));
}
// Bits per element of a MAX DType code; throws INVALID_ARGUMENT if unknown.
inline uint32_t dtype_size_bits(uint32_t dtype_code) {
  uint32_t bits = 0;
  check(axl_dtype_size_bits(dtype_code, &bits));
  return bits;
}

// ----------------------------------------------------------- profiler spans --
// The profiling level (AXL_PROFILE_*) by one relaxed load: the core's word,
// whose address never changes, is looked up once per process.
inline int32_t profile_level_now() noexcept {
  static const int32_t* const word = axl_profile_level_address();
  return __atomic_load_n(word, __ATOMIC_RELAXED);
}

// A span for the enclosing scope (MAX's Trace): one relaxed load and a
// not-taken branch when profiling is off; otherwise axl_profile_push now and
// axl_profile_pop at scope exit, on the same thread.
class ScopedRange {
 public:
  explicit ScopedRange(const char* message, uint32_t argb = 0xFFB5BAF5u) noexcept
      : open_(__builtin_expect(profile_level_now() != 0, 0)
                  ? axl_profile_push(message, argb) != 0
                  : false) {}
  ~ScopedRange() {
    if (open_) axl_profile_pop();
  }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
  // An instant marker with this message (nothing when off).
  static void mark(const char* message, uint32_t argb = 0xFFB5BAF5u) noexcept {
    if (profile_level_now() != 0) axl_profile_mark(message, argb);
  }
  bool is_open() const noexcept { return open_; }

 private:
  bool open_;
};

inline bool profiling_enabled() noexcept {
  return profile_level_now() != AXL_PROFILE_OFF;
}
// "off", "on" or "detailed"; throws axl::Error (INVALID_ARGUMENT) otherwise.
inline void set_profiling_state(const std::string& state) {
  check(axl_profile_set_level_name(state.c_str()));
}

// AXL_PROFILE_OFF, _ON or _DETAILED.
inline int32_t profile_level() noexcept { return axl_profile_level(); }
inline void set_profile_level(int32_t level) { check(axl_profile_set_level(level)); }
// ARGB of one of MAX's colour names; modular_purple for any other.
inline uint32_t profile_color(const char* name) noexcept { return axl_profile_color(name); }
// Opens a span on this thread; true if one opened (then call profile_pop on
// this thread). ScopedRange does both for a scope.
inline bool profile_push(const char* message, uint32_t argb) noexcept {
  return axl_profile_push(message, argb) != 0;
}
// Closes this thread's innermost span. False if the thread had none open
// (axl_profile_pop's INVALID_ARGUMENT, in axl_last_error): noexcept, so a
// span can be closed from code that must not throw (a CPython slot).
inline bool profile_pop() noexcept { return axl_profile_pop() == AXL_SUCCESS; }
// An instant marker on this thread (nothing when profiling is off).
inline void profile_mark(const char* message, uint32_t argb) noexcept { axl_profile_mark(message, argb); }
inline uint32_t profile_depth() noexcept { return axl_profile_depth(); }
// The Chrome-trace JSON file ("" for none); written at flush and exit.
inline void set_profile_output(const char* path) { check(axl_profile_set_output(path)); }
inline std::string profile_output() { return detail::two_call_string(axl_profile_get_output); }
// Writes the JSON file now; INVALID_ARGUMENT if no output is set, INTERNAL
// naming the path when writing failed.
inline void profile_flush() { check(axl_profile_flush()); }
// AXL_PROFILE_SINK_* bits available now.
inline uint32_t profile_sinks() { return axl_profile_sinks(); }

// One collected profile event with an owned name.
struct ProfileEvent {
  axl_profile_event raw;  // raw.name is not valid: use `name`
  std::string name;
};

// Starts the in-process collector, discarding what it held.
inline void profile_collector_start() { check(axl_profile_collector_start()); }
// Stops the collector; its events in completion order.
inline std::vector<ProfileEvent> profile_collector_take() {
  return detail::take_snapshot<ProfileEvent>(axl_profile_collector_take, axl_profile_events_size,
                                             axl_profile_events_data, axl_profile_events_release);
}

// Tells axl the process is ending (axl.h: axl_process_exit_begin); returns
// the shared exit deadline, which later calls keep.
inline std::chrono::steady_clock::time_point process_exit_begin() {
  uint64_t ns = 0;
  check(axl_process_exit_begin(&ns));
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

}  // namespace axl
