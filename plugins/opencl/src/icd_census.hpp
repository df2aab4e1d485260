// The ICD census: which OpenCL drivers the ICD loader would load, read from
// the loader's own configuration (ICD files) without calling into any of
// them. The ICD loader loads and initialises every installed driver inside
// the first clGetPlatformIDs; PoCL starts its CPU devices there (measured:
// 80 to 220 ms and libpocl mapped into the process). When the device types
// asked for exclude CPU devices and every installed driver can only have
// CPU devices, discovery answers from the census and never calls the
// loader's clGetPlatformIDs, so a default axl process on a machine with
// PoCL installed pays none of that.
#pragma once

#include <string>
#include <vector>

namespace axl::opencl {

// One driver the loader would load: its library name (as written in the ICD
// file, or the OCL_ICD_FILENAMES entry) and where that name came from.
struct IcdDriver {
  std::string library;
  std::string source;
};

struct IcdCensus {
  // False when the census cannot tell what the loader would load (a folder
  // or ICD file it cannot read): discovery then asks the loader.
  bool known = true;
  std::vector<IcdDriver> drivers;
  // Where the ICD files were looked for, for messages.
  std::string where;
};

// Reads the ICD configuration the way ocl-icd (Debian's loader) and the
// Khronos loader read it: OCL_ICD_VENDORS names a folder of *.icd files
// (default /etc/OpenCL/vendors), or a file: an ICD file ("*.icd") or a
// driver library name; OCL_ICD_FILENAMES (Khronos loader) adds
// colon-separated driver libraries.
IcdCensus read_icd_census();

// True for a driver that has only CPU devices (PoCL as distributions build
// it, Intel's CPU runtime): matched by the library's file name, from one list.
bool cpu_only_driver(const std::string& library);

}  // namespace axl::opencl
