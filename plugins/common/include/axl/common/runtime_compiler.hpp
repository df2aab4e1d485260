// A vendor's run-time compiler (NVRTC for cuda, hiprtc for hip) loaded like
// the driver: dlopen at run time, entry points from one data table, nothing
// linked. Independent of the driver and of any device, so it is unit-tested
// on machines without a GPU. NVRTC and hiprtc share their program API
// (create, compile with options, log, destroy); the traits `R` name the
// library, the calls and what differs:
//   Api, Program, Result, kSuccess (CompilerTypes): Api's members are
//                       create_program, destroy_program, compile_program,
//                       get_program_log_size, get_program_log,
//                       get_error_string, version (plus the image getters)
//   text (CompilerText) the override variable and the compiler's names
//   symbols(size_t*)    the DriverSymbol table that fills Api
//   library_names()     the names tried, newest first
//   is_arch_option(o), arch_option(arch)  the target option and its default
//   is_user_error(r), is_out_of_memory(r)
//   fetch_image(api, prog, CompileResult&, fail)  the compiled image
#pragma once

#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "axl/common/driver_library.hpp"
#include "axl/common/driver_plugin.hpp"
#include "axl/common/driver_symbols.hpp"
#include "axl/common/plugin_support.hpp"

namespace axl::common {

template <class ApiT, class ProgramT, auto Success>
struct CompilerTypes {
  using Api = ApiT;
  using Program = ProgramT;
  using Result = decltype(Success);
  static constexpr Result kSuccess = Success;
};

struct CompilerText {
  const char* env_var;      // the override, e.g. "AXL_NVRTC_PATH"
  const char* name;         // "NVRTC"
  const char* title;        // "NVRTC (the CUDA run-time compiler)"
  const char* create_call;  // "nvrtcCreateProgram"
};

template <class R>
class RuntimeCompiler {
 public:
  using Api = typename R::Api;

  // The process-wide instance (loaded on first use, never unloaded).
  static RuntimeCompiler& instance() {
    alignas(RuntimeCompiler) static unsigned char storage[sizeof(RuntimeCompiler)];
    static RuntimeCompiler* const c = ::new (static_cast<void*>(storage)) RuntimeCompiler();
    return *c;
  }

  // Loads the library once; AXL_SUCCESS or BACKEND_UNAVAILABLE with `why`.
  axl_status load(std::string* why) {
    std::call_once(once_, [this] {
      std::string detail;
      if (!lib_.open(R::text.env_var, R::library_names(), &detail)) {
        status_ = AXL_ERROR_BACKEND_UNAVAILABLE;
        why_ = str(R::text.title, " is not available: ", detail);
        return;
      }
      size_t count = 0;
      const DriverSymbol* symbols = R::symbols(&count);
      const SymbolResolution r = resolve_driver_symbols(
          symbols, count, &api_, [this](const char* name, int, std::string*) { return lib_.symbol(name); });
      if (!r.ok()) {
        status_ = AXL_ERROR_BACKEND_UNAVAILABLE;
        why_ = str(R::text.name, " at ", lib_.path(), " lacks ", join(r.missing_required));
      }
    });
    if (why != nullptr) *why = why_;
    return status_;
  }

  const std::string& path() const noexcept { return lib_.path(); }

  // "13.0".
  std::string version() const {
    int major = 0, minor = 0;
    if (api_.version == nullptr || api_.version(&major, &minor) != R::kSuccess) return "?";
    return std::to_string(major) + "." + std::to_string(minor);
  }

  // Compiles `source` for `arch` (R::arch_option). `options` are passed
  // through; an architecture option among them replaces `arch`.
  CompileResult compile(const std::string& source, const std::string& name,
                        const std::vector<std::string>& options, const std::string& arch) {
    CompileResult out;
    if (axl_status s = load(&out.message); s != AXL_SUCCESS) {
      out.status = s;
      return out;
    }
    auto fail = [&](typename R::Result r, const char* call) {
      out.status = R::is_out_of_memory(r) ? AXL_ERROR_OUT_OF_HOST_MEMORY : AXL_ERROR_INTERNAL;
      out.message = str(call, " failed: ", api_.get_error_string(r), " (", static_cast<int>(r), ")");
      out.image.clear();
      return out;
    };
    typename R::Program prog = nullptr;
    if (auto r = api_.create_program(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr); r != R::kSuccess)
      return fail(r, R::text.create_call);
    struct Destroy {
      const Api& api;
      typename R::Program& prog;
      ~Destroy() { (void)api.destroy_program(&prog); }
    } destroy{api_, prog};

    std::vector<std::string> all = options;
    bool has_arch = false;
    for (const std::string& o : options) has_arch = has_arch || R::is_arch_option(o);
    if (!has_arch) all.push_back(R::arch_option(arch));
    std::vector<const char*> argv;
    for (const std::string& o : all) argv.push_back(o.c_str());

    const auto cr = api_.compile_program(prog, static_cast<int>(argv.size()), argv.data());
    size_t log_size = 0;
    if (api_.get_program_log_size(prog, &log_size) == R::kSuccess && log_size > 1) {
      out.log.resize(log_size);
      if (api_.get_program_log(prog, out.log.data()) == R::kSuccess)
        out.log.resize(log_size - 1);  // drop the NUL
      else
        out.log.clear();
    }
    if (cr != R::kSuccess) {
      std::string options_text;
      for (const std::string& o : all) options_text += " " + o;
      out.status = R::is_user_error(cr) ? AXL_ERROR_INVALID_ARGUMENT : AXL_ERROR_INTERNAL;
      out.message = str(R::text.name, " ", version(), " could not compile '", name, "' (options:", options_text,
                        "): ", api_.get_error_string(cr), out.log.empty() ? "" : "\n", out.log);
      return out;
    }
    return R::fetch_image(api_, prog, out, fail);
  }

 private:
  std::once_flag once_;
  axl_status status_ = AXL_SUCCESS;
  std::string why_;
  DriverLibrary lib_;
  Api api_;
};

}  // namespace axl::common
