// A libroctx64.so that lacks roctxRangePop and roctxMarkA: the core must
// warn and leave roctx off rather than call a missing function.
extern "C" __attribute__((visibility("default"))) int roctxRangePushA(const char*) { return 0; }
