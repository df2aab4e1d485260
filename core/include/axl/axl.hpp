// axl/axl.hpp: header-only C++17 RAII wrapper over axl.h.
//
// Every failing call throws axl::Error, which carries the status, the backend,
// the native code and name and the core's message (axl_last_error). Handle
// classes own one reference and copy by retaining; moving transfers it.
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

// Throws axl::Error built from the thread's last-error record if s != 0.
inline void check(axl_status s) {
  if (s == AXL_SUCCESS) return;
  axl_error_info e{};
  e.struct_size = sizeof e;
  axl_last_error(&e);
  std::string msg = (e.message && *e.message) ? e.message : axl_status_name(s);
  throw Error(s, e.backend ? e.backend : "", e.native_code, e.native_name ? e.native_name : "",
              msg);
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

class Device;
class Queue;

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
  inline Device device() const;
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

// A kernel argument: a buffer (passed as its device address) or a scalar.
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

struct DeviceInfo {
  std::string backend, label, api, architecture_name, model_name;
  uint32_t id = 0;
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
    return DeviceInfo{i.backend, i.label, i.api, i.architecture_name, i.model_name, i.id,
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
  Buffer allocate(uint64_t bytes, uint32_t flags = AXL_BUFFER_FLAG_NONE) const {
    axl_buffer_t b = nullptr;
    check(axl_buffer_create(h_, bytes, flags, &b));
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
  bool operator==(const Device& o) const { return axl_device_equal(h_, o.h_) != 0; }
  bool operator!=(const Device& o) const { return !(*this == o); }
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

// One launch-trace entry with an owned name.
struct LaunchTraceEntry {
  axl_launch_trace_entry raw;
  std::string name;
};

inline void begin_launch_trace(bool include_host = false) {
  check(axl_launch_trace_begin(include_host ? AXL_LAUNCH_TRACE_INCLUDE_HOST : 0));
}

inline std::vector<LaunchTraceEntry> take_launch_trace() {
  axl_launch_trace_t t = nullptr;
  check(axl_launch_trace_take(&t));
  size_t n = 0;
  axl_status s = axl_launch_trace_size(t, &n);
  std::vector<LaunchTraceEntry> out;
  if (s == AXL_SUCCESS) {
    const axl_launch_trace_entry* e = axl_launch_trace_entries(t);
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const axl_launch_trace_entry c = read_element(axl_launch_trace_entry_at(e, i));
      out.push_back({c, c.name ? c.name : ""});
    }
  }
  axl_launch_trace_release(t);
  check(s);
  return out;
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

// Tells axl the process is ending (axl.h: axl_process_exit_begin); returns
// the shared exit deadline, which later calls keep.
inline std::chrono::steady_clock::time_point process_exit_begin() {
  uint64_t ns = 0;
  check(axl_process_exit_begin(&ns));
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

}  // namespace axl
