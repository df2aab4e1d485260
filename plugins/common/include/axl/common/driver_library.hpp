// Loading a vendor driver library at run time, for backends that link
// nothing against the driver (cuda, hip): the candidate names are tried in
// order, an environment variable may name the file instead (ignored in
// setuid/setgid programs, via secure_getenv), and the path that was really
// mapped is kept for messages ("CUDA_ERROR_STUB_LIBRARY ... at /usr/...").
#pragma once

#include <string>
#include <vector>

namespace axl::common {

class DriverLibrary {
 public:
  DriverLibrary() = default;
  DriverLibrary(const DriverLibrary&) = delete;
  DriverLibrary& operator=(const DriverLibrary&) = delete;
  // The library stays mapped: vendor drivers register exit handlers and
  // threads that must outlive any dlclose, so closing one is never safe.
  ~DriverLibrary() = default;

  // Opens the file named by `env_var` (when set and non-empty, read with
  // secure_getenv) or else the first of `names` that dlopen accepts
  // (RTLD_NOW | RTLD_LOCAL). True on success. On failure `why` says which
  // names were tried and dlopen's last message; the caller decides whether
  // that is "absent" (usually) or an error.
  bool open(const char* env_var, const std::vector<std::string>& names, std::string* why);

  bool is_open() const noexcept { return handle_ != nullptr; }
  // The file that was mapped, resolved through dlinfo and realpath, e.g.
  // "/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"; the name asked for
  // if the loader cannot tell.
  const std::string& path() const noexcept { return path_; }
  // What was asked for: the override's value or the candidate name.
  const std::string& requested() const noexcept { return requested_; }
  // dlsym in this library only; NULL when absent.
  void* symbol(const char* name) const noexcept;

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string requested_;
};

}  // namespace axl::common
