// The cuda backend's entry point, its function table, the backend slots and
// the helpers every slot uses (errors, current context, deferred release).
#include <unistd.h>

#include "cuda_backend.hpp"

namespace axl::cuda {

Backend& backend() noexcept {
  // In static storage, constructed on first use (which allocates nothing, as
  // negotiate requires) and never destroyed: see the struct's comment.
  alignas(Backend) static unsigned char storage[sizeof(Backend)];
  static Backend* const b = ::new (static_cast<void*>(storage)) Backend();
  return *b;
}

const DriverProbe& probe() {
  Backend& b = backend();
  std::call_once(b.probe_once, [&b] {
    b.probe = load_driver(b.lib, b.api);
    b.probe_pid = getpid();
    b.host.log(b.probe.status == AXL_SUCCESS ? AXL_LOG_DEBUG : AXL_LOG_INFO, b.probe.message);
  });
  return b.probe;
}

axl_status require_driver() {
  const DriverProbe& p = probe();
  if (p.status != AXL_SUCCESS)
    return backend().host.report(p.status, p.message, p.native_code,
                                 p.native_name.empty() ? nullptr : p.native_name.c_str());
  // CUDA does not survive fork(): a child must not touch the parent's
  // contexts, and cuInit there fails in ways that explain nothing.
  if (backend().probe_pid != getpid())
    return fail(AXL_ERROR_FORKED,
                "the CUDA driver was initialised in the parent process before fork(); the child "
                "cannot use it: start workers with spawn instead");
  return AXL_SUCCESS;
}

axl_status fail(axl_status status, const std::string& message) noexcept {
  return backend().host.report(status, message);
}

axl_status fail_cu(CUresult r, const char* call, const std::string& context,
                   axl_status status) noexcept {
  const DriverApi& a = api();
  const char* name = nullptr;
  const char* text = nullptr;
  if (a.cuGetErrorName != nullptr && a.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
  if (a.cuGetErrorString != nullptr && a.cuGetErrorString(r, &text) != CUDA_SUCCESS) text = nullptr;
  return driver_errors().report(backend().host, r, call, name, text, context, status);
}

axl_status make_current(const Device& d) noexcept {
  CUcontext cur = nullptr;
  if (api().cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == d.ctx) return AXL_SUCCESS;
  return check(api().cuCtxSetCurrent(d.ctx), "cuCtxSetCurrent",
               common::str("making device ", d.index, "'s primary context current"));
}

axl_status release_after_queued_work(Device& d, std::function<void()> release) {
  Backend& b = backend();
  const DriverApi& a = api();
  std::vector<CUevent> marks;
  {
    std::lock_guard<std::mutex> lk(b.queues_mu);
    for (Queue* q : b.queues) {
      if (make_current(*q->device) != AXL_SUCCESS) continue;
      CUevent e = nullptr;
      if (a.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) continue;
      if (a.cuEventRecord(e, q->stream) != CUDA_SUCCESS) {
        a.cuEventDestroy(e);
        continue;
      }
      marks.push_back(e);
    }
  }
  Device* dev = &d;
  auto done = [marks] {
    for (CUevent e : marks)
      if (api().cuEventQuery(e) == CUDA_ERROR_NOT_READY) return false;
    return true;
  };
  auto free_all = [marks, dev, release = std::move(release)] {
    for (CUevent e : marks) api().cuEventDestroy(e);
    if (make_current(*dev) == AXL_SUCCESS) release();
  };
  b.graveyard.add(std::move(done), std::move(free_all));
  b.graveyard.sweep();
  return AXL_SUCCESS;
}

axl_status backend_init() noexcept {
  return guarded("backend_init", []() -> axl_status {
    if (axl_status s = require_driver()) return s;
    Backend& b = backend();
    std::lock_guard<std::mutex> lk(b.dev_mu);
    b.devices.resize(static_cast<size_t>(b.probe.device_count));
    return AXL_SUCCESS;
  });
}

axl_status backend_shutdown() noexcept {
  return guarded("backend_shutdown", []() -> axl_status {
    Backend& b = backend();
    const DriverApi& a = api();
    for (auto& d : b.devices)
      if (d && make_current(*d) == AXL_SUCCESS) a.cuCtxSynchronize();
    if (size_t left = b.graveyard.release_all())
      b.host.log(AXL_LOG_WARN, common::str("backend_shutdown released ", left,
                                           " module(s)/flag(s) whose queued work had not finished"));
    {
      std::lock_guard<std::mutex> lk(b.queues_mu);
      if (!b.queues.empty())
        b.host.log(AXL_LOG_WARN, common::str("backend_shutdown found ", b.queues.size(),
                                             " queue(s) still alive; destroying their streams"));
      for (Queue* q : b.queues) a.cuStreamDestroy(q->stream);
      b.queues.clear();
    }
    std::lock_guard<std::mutex> lk(b.dev_mu);
    for (auto& d : b.devices) {
      if (!d) continue;
      if (make_current(*d) == AXL_SUCCESS) {
        if (d->test_module != nullptr) a.cuModuleUnload(d->test_module->module);
        if (d->alloc_stream != nullptr) a.cuStreamDestroy(d->alloc_stream);
      }
      a.cuDevicePrimaryCtxRelease(d->dev);
      // The Device stays allocated: a late handle must not dangle.
      d.release();
    }
    b.devices.clear();
    return AXL_SUCCESS;
  });
}

axl_status backend_device_count(uint32_t* out_count) noexcept {
  return guarded("backend_device_count", [&]() -> axl_status {
    if (out_count == nullptr) return fail(AXL_ERROR_INVALID_ARGUMENT, "backend_device_count: out_count is NULL");
    // There is no accurate count without the driver (CUDA_VISIBLE_DEVICES,
    // MIG), so counting initialises it; a stub or absent library makes the
    // backend unavailable right at discovery, with the reason.
    if (axl_status s = require_driver()) return s;
    *out_count = static_cast<uint32_t>(probe().device_count);
    return AXL_SUCCESS;
  });
}

axl_status backend_set_tracing(uint8_t enabled) noexcept {
  backend().tracer.set_enabled(enabled != 0);
  return AXL_SUCCESS;
}

namespace {

const axl_plugin_info kInfo = {
    sizeof(axl_plugin_info),
    "cuda",
    "cuda",
    "0.1.0",
    0u,  // accelerators; not fork-safe (require_driver refuses in a child)
    0u,
};

constexpr axl_plugin_table make_table() {
  axl_plugin_table t{};
  t.struct_size = sizeof(axl_plugin_table);
  t.backend_init = backend_init;
  t.backend_shutdown = backend_shutdown;
  t.backend_device_count = backend_device_count;
  t.backend_set_tracing = backend_set_tracing;
  t.backend_set_option = nullptr;  // no options
  t.device_get = device_get;
  t.device_get_properties = device_get_properties;
  t.device_get_memory_info = device_get_memory_info;
  t.device_can_access_peer = device_can_access_peer;
  t.device_enable_peer_access = device_enable_peer_access;
  t.memory_alloc = memory_alloc;
  t.memory_free = memory_free;
  t.pinned_alloc = pinned_alloc;
  t.pinned_free = pinned_free;
  t.queue_create = queue_create;
  t.queue_destroy = queue_destroy;
  t.queue_synchronize = queue_synchronize;
  t.queue_copy_htod = queue_copy_htod;
  t.queue_copy_dtoh = queue_copy_dtoh;
  t.queue_copy_dtod = queue_copy_dtod;
  t.queue_copy_peer = queue_copy_peer;
  t.queue_fill = queue_fill;
  t.queue_record_event = queue_record_event;
  t.queue_wait_event = queue_wait_event;
  t.queue_wait_flag = queue_wait_flag;
  t.queue_write_flag = queue_write_flag;
  t.queue_enqueue_host_fn = queue_enqueue_host_fn;
  t.queue_get_native_handle = queue_get_native_handle;
  t.queue_launch = queue_launch;
  t.event_create = event_create;
  t.event_destroy = event_destroy;
  t.event_synchronize = event_synchronize;
  t.event_query = event_query;
  t.event_elapsed_ms = event_elapsed_ms;
  t.flag_create = flag_create;
  t.flag_destroy = flag_destroy;
  t.flag_get_device_address = flag_get_device_address;
  t.flag_get_host_address = flag_get_host_address;
  t.module_load = module_load;
  t.module_unload = module_unload;
  t.module_get_kernel = module_get_kernel;
  t.device_get_test_kernel = device_get_test_kernel;
  t.module_compile = module_compile;
  return t;
}

constexpr axl_plugin_table kTable = make_table();

}  // namespace

}  // namespace axl::cuda

extern "C" AXL_PLUGIN_EXPORT axl_status axl_plugin_negotiate(axl_negotiate_args* args) {
  return axl::common::negotiate(args, axl::cuda::backend().host, &axl::cuda::kInfo,
                                &axl::cuda::kTable);
}
