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

/* Backend flags in axl_plugin_info.flags. */
enum {
  /* The backend keeps working in a child after fork(); otherwise the core
   * answers AXL_ERROR_FORKED in the child once the backend was initialised. */
  AXL_PLUGIN_FLAG_FORK_SAFE = 1u << 0,
  /* Devices are accelerators that only exist as compile targets. */
  AXL_PLUGIN_FLAG_VIRTUAL = 1u << 1,
  /* Experimental: the core logs a warning when it loads the plugin. */
  AXL_PLUGIN_FLAG_EXPERIMENTAL = 1u << 2,
  /* The devices are host CPUs (label "cpu"); otherwise accelerators ("gpu").
   * Declared here so the core can count devices by label without calling
   * backend_init (which keeps fork() after discovery safe). */
  AXL_PLUGIN_FLAG_HOST = 1u << 3
};

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
