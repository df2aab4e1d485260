// A plugin's process-wide state: constructed on first use and never
// destroyed. First use is negotiate, which must not allocate (plugin.h), so
// the object lives in static storage rather than on the heap; and no
// destructor may run at exit, when the driver may already be unloaded and
// plugin threads may still be running (plugin.h: no static destructors
// calling the driver or joining threads).
#pragma once

#include <new>

namespace axl::common {

// The one T of this plugin, value-initialised on the first call
// (thread-safe, as any function-local static).
template <class T>
T& immortal() noexcept {
  alignas(T) static unsigned char storage[sizeof(T)];
  static T* const instance = ::new (static_cast<void*>(storage)) T();
  return *instance;
}

}  // namespace axl::common
