// axl-info: lists what plugin discovery considered and every device it found.
//
// The report itself is axl/report.hpp (over axl.hpp), which `python -m axl
// info` prints too; this file is the command line around it.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "axl/report.hpp"

namespace {

void usage(FILE* f) {
  fputs(
      "usage: axl-info [--json] [--verbose] [--help]\n"
      "\n"
      "Lists every plugin file axl's discovery considered (loaded, skipped,\n"
      "shadowed, disabled or unavailable, with the reason) and every device\n"
      "with its properties.\n"
      "\n"
      "  --json     print one JSON object {core, plugins, devices} (for bug reports)\n"
      "  --verbose  also print the discovery trace (folders searched, files\n"
      "             tried) and log at level info, unless AXL_LOG_LEVEL is set\n"
      "  --help     show this help\n"
      "\n"
      "Environment: AXL_PLUGINS, AXL_PLUGIN_PATH, AXL_PLUGINS_DISABLE,\n"
      "AXL_LOG_LEVEL, AXL_LOG_FILE (see docs/).\n"
      "\n"
      "Exit status: 0, or 1 if axl_init failed (e.g. AXL_PLUGINS names a file\n"
      "that does not load); what could be learnt is printed either way.\n",
      f);
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false, verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--json") json = true;
    else if (a == "--verbose" || a == "-v") verbose = true;
    else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "axl-info: unknown argument '%s'\n\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  try {
    // Logging starts before discovery so the loader's info lines show; an
    // explicit AXL_LOG_LEVEL wins because the user asked for it by name.
    if (verbose && !getenv("AXL_LOG_LEVEL")) axl::set_log_level(AXL_LOG_INFO);
    const axl::Report r = axl::collect_report(verbose);
    const std::string text = axl::format_report(r, {json, verbose});
    fwrite(text.data(), 1, text.size(), stdout);
    if (json && r.init_error)
      fprintf(stderr, "axl-info: axl_init failed: %s\n", axl::describe(*r.init_error).c_str());
    fflush(stdout);
    return r.init_error ? 1 : 0;
  } catch (const std::exception& e) {
    fprintf(stderr, "axl-info: %s\n", e.what());
    return 1;
  }
}
