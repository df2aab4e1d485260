// The negotiate_throws variant: test_plugin.c compiled as C++ so that an
// exception can leave axl_plugin_negotiate. A separate file rather than a
// LANGUAGE property on test_plugin.c, because source properties are shared by
// every target of the directory and the other variants must stay C.
#include "test_plugin.c"
