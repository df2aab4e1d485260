// Building blocks of the traits a driver-API backend gives DriverPlugin
// (driver_plugin.hpp): its types, its result codes and flag values, and the
// words its messages use, each declared in one line of the backend's traits.
#pragma once

#include "axl/common/driver_plugin.hpp"

namespace axl::common {

// The vendor's types. `Self` is the traits class (CRTP), so the plugin's
// objects can be named from its own declarations.
template <class Self, class ApiT, class NamesT, class ResultT, class DevicePtrT, class DeviceIdT,
          class ContextT, class StreamT, class EventT, class ModuleT, class FunctionT, class PoolT,
          class AccessDescT>
struct DriverTypes {
  using Api = ApiT;                // the resolved entry points, generic member names
  using Names = NamesT;            // the same members as the vendor's call names
  using Result = ResultT;          // CUresult, hipError_t
  using DevicePtr = DevicePtrT;    // CUdeviceptr, hipDeviceptr_t
  using DeviceId = DeviceIdT;      // CUdevice, hipDevice_t
  using Context = ContextT;        // CUcontext; HIP: the device ordinal
  using Stream = StreamT;
  using EventH = EventT;
  using ModuleH = ModuleT;
  using Function = FunctionT;
  using Pool = PoolT;              // the stream-ordered allocator's pool
  using AccessDesc = AccessDescT;  // a pool access grant
  using Device = DriverDevice<Self>;
  using Module = DriverModule<Self>;
};

// The result codes the shared slots test for and the flag values they pass.
template <auto Success, auto NotReady, auto NotFound, auto OutOfMemory, auto NotSupported, auto PeerAlreadyEnabled,
          auto StreamNonBlocking, auto EventDefault, auto EventDisableTiming, auto HostAllocFlags,
          auto WriteValueDefault, auto PoolReleaseThreshold, auto LocationDevice, auto ProtReadWrite>
struct DriverValues {
  static constexpr auto kSuccess = Success;
  static constexpr auto kNotReady = NotReady;
  static constexpr auto kNotFound = NotFound;
  static constexpr auto kOutOfMemory = OutOfMemory;
  static constexpr auto kNotSupported = NotSupported;  // stream-ordered allocation refused at run time
  static constexpr auto kPeerAlreadyEnabled = PeerAlreadyEnabled;
  static constexpr unsigned kStreamNonBlocking = StreamNonBlocking;    // stream_create
  static constexpr unsigned kEventDefault = EventDefault;              // event_create, timed
  static constexpr unsigned kEventDisableTiming = EventDisableTiming;  // event_create, untimed
  static constexpr unsigned kHostAllocFlags = HostAllocFlags;          // portable + device-mapped
  static constexpr unsigned kWriteValueDefault = WriteValueDefault;    // stream_write_value64
  static constexpr auto kPoolReleaseThreshold = PoolReleaseThreshold;  // pool_set_attribute
  static constexpr auto kLocationDevice = LocationDevice;              // AccessDesc.location.type
  static constexpr auto kProtReadWrite = ProtReadWrite;                // AccessDesc.flags
};

// The words of a backend's messages.
struct DriverText {
  const char* vendor;               // "CUDA": "... on CUDA device 0"
  const char* plugin;               // "cuda"
  const char* retain_call;          // the call that retains a device's primary context
  const char* missing_kernel_hint;  // appended when a kernel name is not found
  const char* module_formats;       // what module_load accepts, e.g. "PTX, CUBIN, FATBIN or AUTO"
  const char* language;             // "AXL_SOURCE_LANGUAGE_CUDA (1)"
  const char* compiler;             // "NVRTC"
  const char* default_source_name;  // module_compile's name when the caller gives none
  const char* shared_limit;         // the device attribute behind Device::max_dynamic_shared
};

}  // namespace axl::common
