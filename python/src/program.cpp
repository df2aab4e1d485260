// axl.driver.Program: source code compiled at run time for one device by its
// backend's compiler (NVRTC on cuda) through axl_module_compile, so every
// binding shares one compiler path. An axl extension (MAX compiles through
// its graph compiler instead).
#include <pybind11/stl.h>

#include <optional>

#include "common.hpp"

namespace axlpy {

namespace {

struct ProgramObj {
  std::string source;
  std::string name;
  std::vector<std::string> options;
  int32_t language = AXL_SOURCE_LANGUAGE_CUDA;
  axl_device_t device = nullptr;  // process lifetime; not counted
  py::object module;              // the compiled Module once compile() ran
};

int32_t language_code(const std::string& language) {
  if (language == "cuda") return AXL_SOURCE_LANGUAGE_CUDA;
  if (language == "hip") return AXL_SOURCE_LANGUAGE_HIP;
  throw py::value_error("Program language '" + language + "' is not 'cuda' or 'hip'");
}

}  // namespace

void register_program(py::module_& m) {
  py::class_<ProgramObj>(m, "Program", R"doc(
Source code compiled at run time for one device (axl extension).

``Program(source, device=gpu, options=("-DN=4",), name="k.cu").compile()``
compiles with the device backend's compiler (NVRTC for CUDA C++ on cuda
devices) and returns a :class:`Module`; ``module.kernel("name")`` then gives a
launchable :class:`Kernel`. Kernels looked up by name are declared
``extern "C"``. A program that does not compile raises InvalidArgumentError
(a ValueError) whose message carries the compiler's log; a backend without a
run-time compiler raises UnsupportedError.
)doc")
      .def(py::init([](std::string source, py::handle device, std::vector<std::string> options,
                       std::optional<std::string> name, std::optional<std::string> language) {
             if (source.empty()) throw py::value_error("Program source is empty");
             if (source.find('\0') != std::string::npos)
               throw py::value_error("Program source contains a NUL character");
             if (device.is_none()) throw py::value_error("Program needs a device, e.g. device=Accelerator()");
             auto p = std::make_unique<ProgramObj>();
             p->device = device_of(device);
             p->source = std::move(source);
             for (const std::string& o : options) c_string(o, "compiler option");
             p->options = std::move(options);
             p->name = name.value_or("axl_program.cu");
             c_string(p->name, "program name");
             if (language) {
               p->language = language_code(*language);
             } else {
               // The device's own language: hip devices compile HIP C++.
               const bool hip = axl::Unowned<axl::Device>(p->device)->info().api == "hip";
               p->language = hip ? AXL_SOURCE_LANGUAGE_HIP : AXL_SOURCE_LANGUAGE_CUDA;
             }
             return p;
           }),
           py::arg("source"), py::kw_only(), py::arg("device"), py::arg("options") = std::vector<std::string>{},
           py::arg("name") = py::none(), py::arg("language") = py::none())
      .def(
          "compile",
          [](ProgramObj& self) -> py::object {
            if (self.module) return self.module;
            const axl::Unowned<axl::Device> dev(self.device);
            axl::Module compiled = without_gil([&] {
              return dev->compile_module(self.source, self.options, self.name, self.language);
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
      .def_property_readonly("language", [](ProgramObj& self) {
        return self.language == AXL_SOURCE_LANGUAGE_HIP ? "hip" : "cuda";
      })
      .def_property_readonly("device", [](ProgramObj& self) { return device_object(self.device); })
      .def("__repr__", [](ProgramObj& self) {
        return "Program('" + self.name + "', device=" + device_text(self.device) + ")";
      });
}

}  // namespace axlpy
