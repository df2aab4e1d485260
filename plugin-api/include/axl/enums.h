/* axl/enums.h: the constants both ABIs share.
 *
 * The application ABI (axl.h) and the plugin ABI (plugin.h) both include
 * this header, so an application gets these numbers without compiling
 * against the plugin ABI, and a value a plugin reports (a log level, a trace
 * kind, a module format) reaches the application unchanged. C99; depends on
 * nothing. Growth rule (docs/abi.md): values are appended, never renumbered
 * or removed; a consumer treats a value it does not know as "other".
 */
#ifndef AXL_ENUMS_H_
#define AXL_ENUMS_H_

/* Log levels (axl_set_log_level, host->log), the same numbers as spdlog's. */
enum {
  AXL_LOG_TRACE = 0,
  AXL_LOG_DEBUG = 1,
  AXL_LOG_INFO = 2,
  AXL_LOG_WARN = 3,
  AXL_LOG_ERROR = 4,
  AXL_LOG_OFF = 6
};

/* Launch-trace operation kinds (MAX's LaunchTraceEntry.OperationKind). */
enum {
  AXL_TRACE_KERNEL_LAUNCH = 0,
  AXL_TRACE_MEMCPY = 1,
  AXL_TRACE_MEMSET = 2
};

/* Copy directions (MAX's LaunchTraceEntry.MemcpyKind). */
enum {
  AXL_MEMCPY_NONE = 0,
  AXL_MEMCPY_HTOD = 1,
  AXL_MEMCPY_DTOH = 2,
  AXL_MEMCPY_DTOD = 3
};

/* Backend flags in axl_plugin_info.flags, listed once: X(name, bit, report
 * name), in bit order, each with its contract in the comment above it. The
 * enum below is generated from the list, and so are axl::plugin_flag_names
 * (axl-info, `python -m axl info`), the CTS's check for unknown bits and
 * Python's PLUGIN_FLAG_* constants, so a new flag is one entry here. A new
 * flag takes the next bit (a minor ABI addition: an older core ignores it);
 * a bit is never reused. */
#define AXL_PLUGIN_FLAGS(X)                                                                        \
  /* The backend keeps working in a child after fork(); otherwise the core                         \
   * answers AXL_ERROR_FORKED in the child once the backend was initialised. */                    \
  X(AXL_PLUGIN_FLAG_FORK_SAFE, 0, "fork_safe")                                                     \
  /* Devices are accelerators that only exist as compile targets. */                               \
  X(AXL_PLUGIN_FLAG_VIRTUAL, 1, "virtual")                                                         \
  /* Experimental: the core logs a warning when it loads the plugin. */                            \
  X(AXL_PLUGIN_FLAG_EXPERIMENTAL, 2, "experimental")                                               \
  /* The devices are host CPUs (label "cpu"); otherwise accelerators ("gpu").                      \
   * Declared here so the core can count devices by label without calling                          \
   * backend_init (which keeps fork() after discovery safe). */                                    \
  X(AXL_PLUGIN_FLAG_HOST, 3, "host")                                                               \
  /* ABI 1.5. The queue slots (queue_copy_*, queue_fill, queue_launch,                             \
   * queue_record_event, queue_wait_*, queue_write_flag,                                           \
   * queue_enqueue_host_fn) may be called from several threads at once on                          \
   * one queue: each call is atomic and calls that overlap are queued in                           \
   * some order, as with a CUDA stream. Then the core takes no lock of its                         \
   * own around an enqueue; without the flag it serialises them (plugin.h). */                     \
  X(AXL_PLUGIN_FLAG_QUEUE_THREAD_SAFE, 4, "queue_thread_safe")

#define AXL_PLUGIN_FLAG_ENUMERATOR_(name, bit, report_name) name = 1u << (bit),
enum { AXL_PLUGIN_FLAGS(AXL_PLUGIN_FLAG_ENUMERATOR_) AXL_PLUGIN_FLAG_FORCE_UINT32_ = 0x7fffffff };

/* Module binary formats, a hint for backends that accept several. */
enum {
  AXL_MODULE_FORMAT_AUTO = 0,
  AXL_MODULE_FORMAT_SHARED_OBJECT = 1, /* cpu: an ELF shared object */
  AXL_MODULE_FORMAT_PTX = 2,
  AXL_MODULE_FORMAT_CUBIN = 3,
  AXL_MODULE_FORMAT_FATBIN = 4,
  AXL_MODULE_FORMAT_HSACO = 5,
  AXL_MODULE_FORMAT_SPIRV = 6
};

/* Source languages of axl_compile_desc (ABI 1.1). */
enum {
  /* CUDA C++ as NVRTC compiles it. Kernels meant to be looked up by name
   * are declared extern "C" (NVRTC mangles other names). */
  AXL_SOURCE_LANGUAGE_CUDA = 1,
  /* HIP C++ as hipRTC compiles it; extern "C" as for CUDA. */
  AXL_SOURCE_LANGUAGE_HIP = 2,
  /* OpenCL C as clBuildProgram compiles it (ABI 1.4 / plugin ABI 1.3);
   * kernels are looked up by their __kernel name. */
  AXL_SOURCE_LANGUAGE_OPENCL_C = 3
};

/* Known kernels each backend can hand out without a compiler, so the
 * conformance suite can launch real work. Arguments, in order: */
enum {
  /* (axl_devaddr data, uint32_t n): data[i] += 1 for i < n, over uint32. */
  AXL_TEST_KERNEL_INCREMENT_U32 = 0,
  /* (axl_devaddr data, uint32_t n, uint32_t value): data[i] = value. */
  AXL_TEST_KERNEL_FILL_U32 = 1
};

#endif /* AXL_ENUMS_H_ */
