#include "axl/common/driver_library.hpp"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>

namespace axl::common {

namespace {

std::string real_path_of(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr ||
      map->l_name[0] == '\0')
    return fallback;
  char buf[PATH_MAX];
  if (realpath(map->l_name, buf) != nullptr) return buf;
  return map->l_name;
}

}  // namespace

bool DriverLibrary::open(const char* env_var, const std::vector<std::string>& names,
                         std::string* why) {
  std::vector<std::string> tried;
  const char* override_path = env_var != nullptr ? secure_getenv(env_var) : nullptr;
  if (override_path != nullptr && *override_path != '\0') {
    tried.emplace_back(override_path);
  } else {
    tried = names;
  }
  std::string last_error;
  for (const std::string& name : tried) {
    dlerror();
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      handle_ = h;
      requested_ = name;
      path_ = real_path_of(h, name);
      return true;
    }
    const char* e = dlerror();
    last_error = e != nullptr ? e : "dlopen failed";
  }
  if (why != nullptr) {
    std::string list;
    for (const std::string& n : tried) list += (list.empty() ? "" : ", ") + n;
    *why = (override_path != nullptr && *override_path != '\0'
                ? std::string("the library named by ") + env_var + " (" + list + ") could not be loaded"
                : "none of " + list + " could be loaded") +
           "; last error: " + last_error;
  }
  return false;
}

void* DriverLibrary::symbol(const char* name) const noexcept {
  if (handle_ == nullptr) return nullptr;
  return dlsym(handle_, name);
}

}  // namespace axl::common
