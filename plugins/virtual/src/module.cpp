// Modules: accepted as opaque bytes (copied at load; nothing is compiled or
// run). Which kernel names a module has follows one rule, so lookups of
// unknown names fail as they would on a real device:
//   * text (no NUL byte before the trailing NULs, no control characters
//     other than whitespace) containing ".entry": PTX; its kernels are the
//     names after each ".entry" directive;
//   * other text: a kernel list, one name per line; blank lines and lines
//     starting with '#' or "//" are ignored;
//   * anything else is a binary (cubin, fatbin, code object, SPIR-V, ELF
//     shared object): a kernel exists if its name occurs in the bytes as a
//     whole NUL-terminated string, as in the string table of an ELF file or
//     a SPIR-V entry point. (A compressed fatbin hides its names: list them
//     in a text module instead.)
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "virtual_backend.hpp"

namespace axl::virt {

namespace {

bool ident_char(unsigned char c) {
  return std::isalnum(c) != 0 || c == '_' || c == '$' || c == '.' || c == '%';
}

bool is_text(const std::vector<unsigned char>& bytes) {
  size_t n = bytes.size();
  while (n > 0 && bytes[n - 1] == 0) --n;  // cuModuleLoadData wants PTX NUL-terminated
  if (n == 0) return false;
  return std::all_of(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n), [](unsigned char c) {
    return c >= 0x20 || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  });
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r\f\v");
  if (a == std::string::npos) return {};
  const auto b = s.find_last_not_of(" \t\r\f\v");
  return s.substr(a, b - a + 1);
}

// The names after each ".entry" (".visible .entry saxpy(" and the like).
std::set<std::string> ptx_entries(const std::string& text) {
  std::set<std::string> names;
  const std::string directive = ".entry";
  for (size_t pos = text.find(directive); pos != std::string::npos;
       pos = text.find(directive, pos + directive.size())) {
    const size_t after = pos + directive.size();
    const bool starts = pos == 0 || std::isspace(static_cast<unsigned char>(text[pos - 1])) != 0;
    if (!starts || after >= text.size() || std::isspace(static_cast<unsigned char>(text[after])) == 0)
      continue;
    size_t i = after;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t end = i;
    while (end < text.size() && ident_char(static_cast<unsigned char>(text[end]))) ++end;
    if (end > i) names.insert(text.substr(i, end - i));
  }
  return names;
}

// The kernel list's names, or the first line that is not a name.
axl_status list_names(const std::string& text, std::set<std::string>& names) {
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    while (!line.empty() && line.back() == '\0') line.pop_back();
    if (line.empty() || line[0] == '#' || line.compare(0, 2, "//") == 0) continue;
    if (!std::all_of(line.begin(), line.end(), [](unsigned char c) { return ident_char(c); }))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  common::str("module_load: a text module is PTX (with .entry directives) or a "
                              "kernel list (one name per line); line ",
                              line_no, " '", line.substr(0, 80), "' is neither"));
    names.insert(line);
  }
  return AXL_SUCCESS;
}

bool binary_has(const std::vector<unsigned char>& bytes, const std::string& name) {
  const auto* first = bytes.data();
  const auto* last = bytes.data() + bytes.size();
  const auto* n_first = reinterpret_cast<const unsigned char*>(name.data());
  const auto* n_last = n_first + name.size();
  for (const unsigned char* p = std::search(first, last, n_first, n_last); p != last;
       p = std::search(p + 1, last, n_first, n_last)) {
    const unsigned char* end = p + name.size();
    const bool whole_start = p == first || !ident_char(p[-1]);
    if (whole_start && end < last && *end == '\0') return true;
  }
  return false;
}

axl_status read_file(const char* path, std::vector<unsigned char>& out) {
  FILE* f = std::fopen(path, "rbe");
  if (f == nullptr) {
    const int err = errno;
    return backend().host.report_errno(err == ENOENT ? AXL_ERROR_NOT_FOUND : AXL_ERROR_INVALID_ARGUMENT,
                                       common::str("module_load: cannot open '", path, "'"), err);
  }
  unsigned char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed)
    return backend().host.report_errno(AXL_ERROR_INVALID_ARGUMENT,
                                       common::str("module_load: reading '", path, "' failed"), err);
  return AXL_SUCCESS;
}

std::string some_names(const std::set<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  size_t shown = 0;
  for (const std::string& n : names) {
    if (shown++ == 8) {
      out += common::str(", ... (", names.size(), " in all)");
      break;
    }
    out += (out.empty() ? "" : ", ") + n;
  }
  return out;
}

}  // namespace

axl_status module_load(axl_pdevice, const axl_module_desc* desc, axl_pmodule* out_module) noexcept {
  return guarded("module_load", [&]() -> axl_status {
    if (desc == nullptr || out_module == nullptr ||
        desc->struct_size < offsetof(axl_module_desc, format) + sizeof(desc->format))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "module_load: desc or out_module is NULL, or desc->struct_size is too small");
    const bool from_path = desc->path != nullptr && desc->path[0] != '\0';
    if (!from_path && (desc->data == nullptr || desc->size == 0))
      return fail(AXL_ERROR_INVALID_ARGUMENT,
                  "module_load: neither a path nor non-empty data was given");
    if (std::optional<FaultHit> hit = backend().faults.check(FaultOp::kModuleLoad)) return fail(*hit);
    auto m = std::make_unique<Module>();
    if (from_path) {
      if (axl_status s = read_file(desc->path, m->bytes)) return s;
      if (m->bytes.empty())
        return fail(AXL_ERROR_INVALID_ARGUMENT,
                    common::str("module_load: '", desc->path, "' is empty"));
    } else {
      const auto* p = static_cast<const unsigned char*>(desc->data);
      m->bytes.assign(p, p + desc->size);
    }
    if (is_text(m->bytes)) {
      const std::string text(m->bytes.begin(), m->bytes.end());
      if (text.find(".entry") != std::string::npos) {
        m->kind = Module::Kind::kPtx;
        m->names = ptx_entries(text);
      } else {
        m->kind = Module::Kind::kKernelList;
        if (axl_status s = list_names(text, m->names)) return s;
      }
    }
    *out_module = reinterpret_cast<axl_pmodule>(m.release());
    return AXL_SUCCESS;
  });
}

axl_status module_unload(axl_pmodule module) noexcept {
  // Launches are recorded, never run, so queued work needs nothing from the
  // module (or its kernels): it can go at once.
  delete from(module);
  return AXL_SUCCESS;
}

axl_status module_get_kernel(axl_pmodule module, const char* name, axl_pkernel* out_kernel) noexcept {
  return guarded("module_get_kernel", [&]() -> axl_status {
    if (out_kernel == nullptr)
      return fail(AXL_ERROR_INVALID_ARGUMENT, "module_get_kernel: out_kernel is NULL");
    Module* m = from(module);
    const std::string n = name != nullptr ? name : "";
    bool found = false;
    std::string why;
    switch (m->kind) {
      case Module::Kind::kPtx:
        found = m->names.count(n) != 0;
        why = "its .entry kernels are: " + some_names(m->names);
        break;
      case Module::Kind::kKernelList:
        found = m->names.count(n) != 0;
        why = "the kernel list names: " + some_names(m->names);
        break;
      case Module::Kind::kBinary:
        found = !n.empty() && binary_has(m->bytes, n);
        why = "a binary module has the kernels whose names occur in it as NUL-terminated strings";
        break;
    }
    if (!found)
      return fail(AXL_ERROR_NOT_FOUND, common::str("module has no kernel named '", n, "' (", why, ")"));
    Kernel* k = nullptr;
    const axl_status s = m->kernels.get(
        n.c_str(),
        [&](const char*, std::unique_ptr<Kernel>& out) {
          out = std::make_unique<Kernel>();
          out->name = n;
          out->module = m;
          return AXL_SUCCESS;
        },
        &k);
    if (s == AXL_SUCCESS) *out_kernel = common::to_handle<axl_pkernel>(k);
    return s;
  });
}

}  // namespace axl::virt
