// Modules: ELF shared objects loaded with dlopen, from a file or from bytes
// (through an anonymous memfd, so nothing touches the file system).
#include <elf.h>
#include <fstream>
#include <iterator>
#include <vector>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "axl/common/module_format.hpp"
#include "axl/common/slot_checks.hpp"
#include "cpu_backend.hpp"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U  // Linux 6.3; older headers lack it
#endif

namespace axl::cpu {

namespace {

std::string last_dl_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dynamic loader error";
}

// An fd that closes itself.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Creates an executable-capable anonymous file. Kernels that set
// vm.memfd_noexec=1 make memfds non-executable unless MFD_EXEC is given,
// and kernels before 6.3 reject that flag with EINVAL: try both.
int make_memfd() {
  int fd = memfd_create("axl-cpu-module", MFD_CLOEXEC | MFD_EXEC);
  if (fd < 0 && errno == EINVAL) fd = memfd_create("axl-cpu-module", MFD_CLOEXEC);
  return fd;
}

bool write_all(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// dlopen maps every loadable segment the program headers name; a file cut
// short maps pages past its end, and the loader's first touch of them is a
// SIGBUS that kills the process. So the headers are checked against the
// size first, and a truncated or corrupt module is an error instead.
bool elf_fits(const unsigned char* data, uint64_t size, std::string* why) {
  Elf64_Ehdr eh;
  if (size < sizeof eh || std::memcmp(data, ELFMAG, SELFMAG) != 0) {
    *why = "it does not start with an ELF header (magic 7f 45 4c 46)";
    return false;
  }
  std::memcpy(&eh, data, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) {
    *why = "it is not a 64-bit ELF object";
    return false;
  }
  auto table_fits = [&](uint64_t off, uint64_t n, uint64_t entsize) {
    return off <= size && n * entsize <= size - off;
  };
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || !table_fits(eh.e_phoff, eh.e_phnum, eh.e_phentsize)) {
    *why = common::str("its program header table (", eh.e_phnum, " entries at offset ", eh.e_phoff,
                       ") lies outside its ", size, " bytes: truncated or corrupt");
    return false;
  }
  if (eh.e_shnum != 0 && !table_fits(eh.e_shoff, eh.e_shnum, eh.e_shentsize)) {
    *why = common::str("its section header table lies outside its ", size,
                       " bytes: truncated or corrupt");
    return false;
  }
  for (uint32_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, data + eh.e_phoff + uint64_t{i} * sizeof ph, sizeof ph);
    if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset) {
      *why = common::str("segment ", i, " (bytes ", ph.p_offset, "..", ph.p_offset + ph.p_filesz,
                         ") lies outside its ", size, " bytes: truncated or corrupt");
      return false;
    }
  }
  return true;
}

static_assert(int{AXL_CPU_PARAM_BUFFER} == int{AXL_ARG_DEVADDR} && int{AXL_CPU_PARAM_SCALAR} == int{AXL_ARG_SCALAR},
              "cpu_kernel.h's parameter kinds are plugin.h's argument kinds");

// The signature kernel `name` of module `m` exports beside it (cpu_kernel.h,
// AXL_CPU_KERNEL_SIGNATURE), copied into m.signatures so launches of k are checked
// against it; none exported leaves k unchecked. A malformed one is an error
// naming what is wrong: a module that declares a signature means launches to
// be checked, and quietly checking nothing would hide its mistake. The limits
// are a launch's.
axl_status read_signature(Module& m, const char* name, Kernel& k) {
  constexpr uint32_t max_params = kMaxArgs, max_scalar_bytes = kMaxScalarBytes;
  const std::string symbol = common::str(name, AXL_CPU_SIGNATURE_SUFFIX);
  const auto* sig = static_cast<const axl_cpu_kernel_signature*>(dlsym(m.handle, symbol.c_str()));
  if (sig == nullptr) return AXL_SUCCESS;
  const auto bad = [&](const std::string& why) {
    return fail(AXL_ERROR_INVALID_ARGUMENT, common::str("kernel '", name, "' of module '", m.label,
                                                        "' declares a malformed signature (",
                                                        symbol, "): ", why));
  };
  if (sig->struct_size < offsetof(axl_cpu_kernel_signature, params) + sizeof sig->params)
    return bad(common::str("struct_size is ", sig->struct_size, "; expected at least ",
                           sizeof(axl_cpu_kernel_signature)));
  if (sig->num_params > max_params)
    return bad(common::str(sig->num_params, " parameters; a launch takes at most ", max_params));
  if (sig->num_params != 0 && sig->params == nullptr)
    return bad(common::str("num_params is ", sig->num_params, " but params is NULL"));
  auto params = std::make_unique<Param[]>(sig->num_params);
  for (uint32_t i = 0; i < sig->num_params; ++i) {
    const axl_cpu_kernel_param& p = sig->params[i];
    if (p.kind == AXL_CPU_PARAM_BUFFER && p.size != 8)
      return bad(common::str("parameter ", i, " is a buffer of ", p.size, " bytes; a buffer is 8"));
    if (p.kind == AXL_CPU_PARAM_SCALAR && (p.size == 0 || p.size > max_scalar_bytes))
      return bad(common::str("parameter ", i, " is a scalar of ", p.size, " bytes; expected 1 to ",
                             max_scalar_bytes));
    if (p.kind != AXL_CPU_PARAM_BUFFER && p.kind != AXL_CPU_PARAM_SCALAR)
      return bad(common::str("parameter ", i, " has kind ", p.kind,
                             "; expected AXL_CPU_PARAM_BUFFER (0) or AXL_CPU_PARAM_SCALAR (1)"));
    params[i] = Param{p.kind, p.size};
  }
  k.params = params.get();
  k.param_count = static_cast<int32_t>(sig->num_params);
  m.signatures.push_back(std::move(params));
  return AXL_SUCCESS;
}

// Reads a whole module file so its headers can be checked before dlopen.
bool read_file(const char* path, std::vector<unsigned char>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

axl_status module_load(axl_pdevice, const axl_module_desc* desc, axl_pmodule* out_module) noexcept {
  return guarded("module_load", [&]() -> axl_status {
    Backend& b = backend();
    if (desc == nullptr || out_module == nullptr ||
        desc->struct_size < offsetof(axl_module_desc, format) + sizeof(desc->format)) {
      return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                           "module_load: desc or out_module is NULL, or desc->struct_size "
                           "is too small for an axl_module_desc");
    }
    if (desc->format != AXL_MODULE_FORMAT_AUTO &&
        desc->format != AXL_MODULE_FORMAT_SHARED_OBJECT) {
      return b.host.report(
          AXL_ERROR_INVALID_ARGUMENT,
          common::str("module_load: format ", desc->format, " (", common::module_format_name(desc->format),
                      ") is not one the cpu backend loads; it expects an ELF shared object "
                      "(AXL_MODULE_FORMAT_SHARED_OBJECT or AUTO)"));
    }
    // Adopted: released (and, once loaded, dlclosed) on every error path.
    common::Ref<Module> m = common::make_ref<Module>();
    if (desc->path != nullptr) {
      m->label = desc->path;
      struct stat st;
      if (stat(desc->path, &st) != 0) {
        const int err = errno;
        return b.host.report_errno(
            err == ENOENT || err == ENOTDIR ? AXL_ERROR_NOT_FOUND : AXL_ERROR_INVALID_ARGUMENT,
            common::str("module file '", desc->path, "' cannot be opened"), err);
      }
      // dlopen searches the library path for a name without a slash; the
      // caller means the file, which stat() just found relative to the cwd.
      const std::string file =
          std::strchr(desc->path, '/') != nullptr ? desc->path : std::string("./") + desc->path;
      std::vector<unsigned char> bytes;
      std::string why;
      if (S_ISDIR(st.st_mode) || !read_file(file.c_str(), bytes)) {
        return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                             common::str("module '", desc->path, "' cannot be read as a file"));
      }
      if (!elf_fits(bytes.data(), bytes.size(), &why)) {
        return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                             common::str("module '", desc->path,
                                         "' is not a loadable shared object: ", why));
      }
      dlerror();
      m->handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (m->handle == nullptr) {
        return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                             common::str("module '", desc->path,
                                         "' is not a loadable shared object: ", last_dl_error()));
      }
    } else {
      if (desc->data == nullptr || desc->size == 0) {
        return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                             "module_load: the descriptor has neither a path nor any bytes "
                             "(data is NULL or size is 0)");
      }
      m->label = common::str("<", desc->size, "-byte module from memory>");
      std::string why;
      if (!elf_fits(static_cast<const unsigned char*>(desc->data), desc->size, &why)) {
        return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                             common::str("module_load: the ", desc->size,
                                         " bytes given are not an ELF shared object: ", why));
      }
      Fd fd{make_memfd()};
      if (fd.fd < 0) {
        return b.host.report_errno(AXL_ERROR_OUT_OF_HOST_MEMORY,
                                   "module_load: memfd_create for the module bytes failed",
                                   errno);
      }
      if (!write_all(fd.fd, desc->data, desc->size)) {
        return b.host.report_errno(
            AXL_ERROR_OUT_OF_HOST_MEMORY,
            common::str("module_load: writing ", desc->size, " bytes to a memfd failed"),
            errno);
      }
      // The loader maps the file; once mapped, closing the fd is harmless.
      const std::string proc_path = common::str("/proc/self/fd/", fd.fd);
      dlerror();
      m->handle = dlopen(proc_path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (m->handle == nullptr) {
        return b.host.report(AXL_ERROR_INVALID_ARGUMENT,
                             common::str("module_load: the ", desc->size,
                                         " bytes given are not a loadable shared object: ",
                                         last_dl_error()));
      }
    }
    m->retain();  // the handle's reference, dropped by module_unload
    *out_module = reinterpret_cast<axl_pmodule>(m.get());
    return AXL_SUCCESS;
  });
}

Module::~Module() {
  if (handle == nullptr) return;  // load failed before dlopen succeeded
  dlerror();
  if (dlclose(handle) != 0) {
    // The module's kernels are gone from our tables either way; a loader
    // complaint is worth a log line, not a failure (nobody could receive it:
    // this may run on a queue worker after the last pending launch).
    try {
      backend().host.log(AXL_LOG_WARN,
                         common::str("dlclose of module '", label, "' failed: ", last_dl_error()));
    } catch (...) {
    }
  }
}

axl_status module_unload(axl_pmodule module) noexcept {
  // Launches still queued hold their own references; see Module.
  from(module)->release();
  return AXL_SUCCESS;
}

axl_status module_get_kernel(axl_pmodule module, const char* name,
                             axl_pkernel* out_kernel) noexcept {
  return guarded("module_get_kernel", [&]() -> axl_status {
    if (axl_status s = common::check_module_get_kernel(fail, name, out_kernel)) return s;
    Module* m = from(module);
    const size_t n = std::strlen(name), suffix = std::strlen(AXL_CPU_SIGNATURE_SUFFIX);
    if (n > suffix && std::strcmp(name + n - suffix, AXL_CPU_SIGNATURE_SUFFIX) == 0)
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("'", name, "' names a kernel's declared signature (data, ending in ",
                              AXL_CPU_SIGNATURE_SUFFIX, "), not a kernel; ask for the kernel's own name"));
    Kernel* k = nullptr;
    const axl_status s = m->kernels.get(
        name,
        [&](const char* key, std::unique_ptr<Kernel>& out) -> axl_status {
          dlerror();
          void* sym = dlsym(m->handle, name);
          if (sym == nullptr)
            return fail(AXL_ERROR_NOT_FOUND, common::str("kernel '", name, "' not found in module '",
                                                         m->label, "' (", last_dl_error(), ")"));
          auto k = std::make_unique<Kernel>();
          k->fn = reinterpret_cast<axl_cpu_kernel_fn>(sym);
          k->name = key;
          k->module = m;
          if (axl_status s = read_signature(*m, name, *k)) return s;
          out = std::move(k);
          return AXL_SUCCESS;
        },
        &k);
    if (s == AXL_SUCCESS) *out_kernel = common::to_handle<axl_pkernel>(k);
    return s;
  });
}

}  // namespace axl::cpu
