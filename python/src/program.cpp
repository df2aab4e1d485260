// axl.driver.Program: source code compiled at run time for one device by its
// backend's compiler (NVRTC on cuda, hipRTC on hip, clBuildProgram on opencl)
// through axl_module_compile, so every binding shares one compiler path. An axl extension (MAX compiles through
// its graph compiler instead).
#include <pybind11/stl.h>

#include <optional>

#include "common.hpp"

namespace axlpy {

namespace {

// The source languages: the one list the constructor, the language property
// and the error text derive from. A device whose api is `api` compiles
// `name` unless the user names another language.
struct Language {
  const char* name;
  int32_t code;
  const char* api;
  const char* default_program_name;
};
constexpr Language kLanguages[] = {
    {"cuda", AXL_SOURCE_LANGUAGE_CUDA, "cuda", "axl_program.cu"},
    {"hip", AXL_SOURCE_LANGUAGE_HIP, "hip", "axl_program.cu"},
    {"opencl", AXL_SOURCE_LANGUAGE_OPENCL_C, "opencl", "axl_program.cl"},
};
// Devices of any other api (the cpu, virtual devices) are given CUDA C++, as
// before there were other languages; their backends refuse it if they have
// no compiler.
constexpr const Language& kFallback = kLanguages[0];

const Language& language_named(const std::string& name) {
  std::string known;
  for (const Language& l : kLanguages) {
    if (name == l.name) return l;
    known += std::string(known.empty() ? "'" : ", '") + l.name + "'";
  }
  throw py::value_error("Program language '" + name + "' is not one of " + known);
}

const Language& language_of_api(const std::string& api) {
  for (const Language& l : kLanguages)
    if (api == l.api) return l;
  return kFallback;
}

struct ProgramObj {
  std::string source;
  std::string name;
  std::vector<std::string> options;
  const Language* language = &kFallback;
  axl_device_t device = nullptr;  // process lifetime; not counted
  py::object module;              // the compiled Module once compile() ran
};

}  // namespace

void register_program(py::module_& m) {
  py::class_<ProgramObj>(m, "Program", R"doc(
Source code compiled at run time for one device (axl extension).

``Program(source, device=gpu, options=("-DN=4",), name="k.cu").compile()``
compiles with the device backend's compiler (NVRTC for CUDA C++ on cuda
devices, hipRTC for HIP C++ on hip devices, clBuildProgram for OpenCL C on
opencl devices) and returns a :class:`Module`; ``module.kernel("name")``
then gives a launchable :class:`Kernel`. ``language`` is ``"cuda"``,
``"hip"`` or ``"opencl"`` (OpenCL C); by default the device's own (by its
api), CUDA C++ on other devices. CUDA and HIP kernels looked up by name are
declared ``extern "C"``; OpenCL C kernels are found by their ``__kernel``
name. A program that does not compile raises InvalidArgumentError (a
ValueError) whose message carries the compiler's log; a backend without a
run-time compiler raises UnsupportedError.
)doc")
      .def(py::init([](py::handle source_arg, py::handle device, py::handle options_arg, py::handle name_arg,
                       py::handle language_arg) {
             // Every argument is converted before anything is built.
             std::string source = arg_str(source_arg, "Program: source");
             std::vector<std::string> options = arg_str_list(options_arg, "Program: options");
             const std::optional<std::string> name = arg_optional_str(name_arg, "Program: name");
             const std::optional<std::string> language = arg_optional_str(language_arg, "Program: language");
             const axl_device_t dev = device_of(device, "Program: device");  // None too: a TypeError
             if (source.empty()) throw py::value_error("Program source is empty");
             if (source.find('\0') != std::string::npos)
               throw py::value_error("Program source contains a NUL character");
             auto p = std::make_unique<ProgramObj>();
             p->device = dev;
             p->source = std::move(source);
             for (const std::string& o : options) c_string(o, "compiler option");
             p->options = std::move(options);
             p->language = language ? &language_named(*language)
                                    : &language_of_api(axl::Unowned<axl::Device>(p->device)->info().api);
             p->name = name.value_or(p->language->default_program_name);
             c_string(p->name, "program name");
             return p;
           }),
           py::arg("source"), py::kw_only(), py::arg("device"), py::arg("options") = py::tuple(),
           py::arg("name") = py::none(), py::arg("language") = py::none())
      .def(
          "compile",
          [](ProgramObj& self) -> py::object {
            if (self.module) return self.module;
            const axl::Unowned<axl::Device> dev(self.device);
            axl::Module compiled = without_gil([&] {
              return dev->compile_module(self.source, self.options, self.name, self.language->code);
            });
            auto mod = std::make_unique<ModuleObj>();
            mod->module = std::move(compiled);
            mod->device = self.device;
            mod->source = "Program '" + self.name + "'";
            self.module = py::cast(std::move(mod));
            return self.module;
          },
          "Compiles (once; later calls return the same Module) and loads the result on the device.")
      .def_property_readonly("source", [](ProgramObj& self) { return self.source; })
      .def_property_readonly("name", [](ProgramObj& self) { return self.name; })
      .def_property_readonly("options", [](ProgramObj& self) { return self.options; })
      .def_property_readonly("language", [](ProgramObj& self) { return self.language->name; })
      .def_property_readonly("device", [](ProgramObj& self) { return device_object(self.device); })
      .def("__repr__", [](ProgramObj& self) {
        return "Program('" + self.name + "', device=" + device_text(self.device) + ")";
      });
  refuse_unconstructed_use<ProgramObj>();
}

}  // namespace axlpy
