// A child process for the profiler tests: reports the level and sinks it
// started with, opens spans, and ends the way argv[1] says:
//   ok     close every span, return 0
//   throw  an uncaught C++ exception inside an open span (std::terminate)
//   exit   exit(3) with a span open
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "axl/axl.hpp"

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "ok";
  printf("level=%d\n", axl_profile_level());
  printf("sinks=%u\n", axl_profile_sinks());
  {
    axl::ScopedRange outer("outer", axl_profile_color("red"));
    printf("outer_open=%d\n", outer.is_open() ? 1 : 0);
    {
      axl::ScopedRange inner("inner", axl_profile_color("blue"));
      axl::ScopedRange::mark("tick", axl_profile_color("green"));
    }
  }
  fflush(stdout);
  if (strcmp(mode, "throw") == 0) {
    axl::ScopedRange doomed("doomed");
    throw std::runtime_error("probe: uncaught on purpose");
  }
  if (strcmp(mode, "exit") == 0) {
    axl_profile_push("open_at_exit", 0);
    exit(3);
  }
  return 0;
}
