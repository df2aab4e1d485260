/* The one-device variant of the fake loader (fake_ze_loader.c, built with
 * every name defined here renamed away): one driver with one GPU whose
 * properties are fixed below, a context, and device memory that is plain
 * host memory. Enough for the plugin's discovery, properties and memory
 * slots; everything else still fails with UNSUPPORTED_FEATURE. */
#include <level_zero/ze_api.h>
#include <stdlib.h>
#include <string.h>

#include "../core/fake_driver_util.h"

#define EXPORT __attribute__((visibility("default")))

static const uintptr_t kDriver = 0xd1, kDevice = 0xde, kContext = 0xc0;

EXPORT ze_result_t zeInitDrivers(uint32_t* count, ze_driver_handle_t* drivers, void* desc) {
  (void)desc;
  fake_log_call("zeInitDrivers");
  if (drivers != NULL && *count >= 1) drivers[0] = (ze_driver_handle_t)kDriver;
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeDeviceGet(ze_driver_handle_t driver, uint32_t* count, ze_device_handle_t* devices) {
  if (driver != (ze_driver_handle_t)kDriver) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (devices != NULL && *count >= 1) devices[0] = (ze_device_handle_t)kDevice;
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeDeviceGetProperties(ze_device_handle_t device, ze_device_properties_t* p) {
  if (device != (ze_device_handle_t)kDevice) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->deviceId = 0x56a0;
  p->flags = 0;
  p->maxMemAllocSize = 1ull << 30;
  p->timerResolution = 52;
  p->timestampValidBits = 32;
  strcpy(p->name, "Fake Level Zero GPU");
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeDeviceGetComputeProperties(ze_device_handle_t device,
                                                ze_device_compute_properties_t* c) {
  (void)device;
  c->maxTotalGroupSize = 1024;
  c->maxGroupSizeX = 1024;
  c->maxGroupSizeY = 1024;
  c->maxGroupSizeZ = 64;
  c->maxGroupCountX = c->maxGroupCountY = c->maxGroupCountZ = 65535;
  return ZE_RESULT_SUCCESS;
}

/* Two memory regions of 8 GiB and 4 GiB: the total is their sum. */
EXPORT ze_result_t zeDeviceGetMemoryProperties(ze_device_handle_t device, uint32_t* count,
                                               ze_device_memory_properties_t* m) {
  (void)device;
  if (m != NULL && *count >= 2) {
    m[0].totalSize = 8ull << 30;
    m[1].totalSize = 4ull << 30;
  }
  *count = 2;
  return ZE_RESULT_SUCCESS;
}

/* Group 0 copies only; group 1 computes, so the plugin must pick ordinal 1. */
EXPORT ze_result_t zeDeviceGetCommandQueueGroupProperties(
    ze_device_handle_t device, uint32_t* count, ze_command_queue_group_properties_t* g) {
  (void)device;
  if (g != NULL && *count >= 2) {
    g[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    g[1].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
  }
  *count = 2;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeContextCreate(ze_driver_handle_t driver, const ze_context_desc_t* desc,
                                   ze_context_handle_t* out) {
  (void)desc;
  if (driver != (ze_driver_handle_t)kDriver) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  *out = (ze_context_handle_t)kContext;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeContextDestroy(ze_context_handle_t context) {
  return context == (ze_context_handle_t)kContext ? ZE_RESULT_SUCCESS
                                                  : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

EXPORT ze_result_t zeMemAllocDevice(ze_context_handle_t context, const ze_device_mem_alloc_desc_t* desc,
                                    size_t size, size_t alignment, ze_device_handle_t device,
                                    void** out) {
  (void)desc;
  if (context != (ze_context_handle_t)kContext || device != (ze_device_handle_t)kDevice)
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  *out = aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  return *out != NULL ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
}

EXPORT ze_result_t zeMemFree(ze_context_handle_t context, void* p) {
  if (context != (ze_context_handle_t)kContext) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  free(p);
  return ZE_RESULT_SUCCESS;
}
