// An OpenCL device binary built by the OpenCL platform itself, so the module
// cases can load a module on api "opencl" (axl_module_load_data, device
// binary) without shipping one: a device binary is only valid for the
// device it was built for. Compiled where the OpenCL headers were found
// (AXL_CTS_HAVE_OPENCL); the ICD loader is dlopen()ed at run time, as the
// opencl backend does. tests/opencl uses it too, for its binary round trip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cts {

// Builds OpenCL C `source` for the device of `queue` (a cl_command_queue, as
// axl_queue_native_handle gives it on api "opencl") in that queue's context
// and returns CL_PROGRAM_BINARIES for that device. Empty, with `why` set,
// when OpenCL or the build fails or the CTS was built without OpenCL headers.
std::vector<uint8_t> opencl_program_binary(uint64_t queue, const std::string& source, std::string* why);

}  // namespace cts
