// Compiled, never run: the installed axl.hpp must build against the installed
// C headers alone.
#include <axl/axl.hpp>

int consumer_header_check() { return axl::Device::count() > 0 ? 0 : 1; }
