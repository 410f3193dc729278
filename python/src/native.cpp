// taot._native: the one Python binding of every taot library, built once with taot. A generated
// library's Python module holds its tables and cubins and calls make_module (the capsule
// taot._native.make_module, through taot/python_module.h) from its PyInit; this file makes the
// module's kernel objects, each a taot::Kernel of the process's one runtime, and its functions.
// The call path itself is in arrays.h, calls.h, timing_call.h and objects.h.
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/optional.h>

#include "objects.h"
#include "taot/python_module.h"

namespace taot::python {

namespace {
// An image's member as Python shows it: numbers and flags as they are, a null string as None.
template <class T>
nb::object fact(const T& value) {
  return nb::cast(value);
}
nb::object fact(const char* text) { return text ? nb::object(nb::str(text)) : nb::none(); }
}  // namespace

// The variants of `kernel` as a list of dicts: index, id, config, description, and images: per
// target, the launch facts taot/image_fields.h lists for Python (shared memory bytes, num_warps,
// num_ctas, scratch sizes, flags, versions, launch ABI) and the driver it needs.
nb::list variants(const Kernel& kernel) {
  const table::KernelTable& table = kernel.table();
  nb::list result;
  for (VariantInfo info : kernel.variants()) {
    nb::dict config;
    for (std::size_t f = 0; f < table.field_count; ++f)
      config[table.fields[f].name] = detail::field_value(table.fields[f], info.data().config[f]);
    nb::dict entry;
    entry["index"] = info.index();
    entry["id"] = info.id();
    entry["config"] = config;
    entry["description"] = info.describe();
    nb::list images;
    const table::Variant& variant = info.data();
    for (std::uint16_t i = 0; i < variant.image_count; ++i) {
      const table::Image& image = variant.images[i];
      nb::dict facts;
      // Under its manifest key, each member taot/image_fields.h marks copy for Python, in its order;
      // then those it marks own.
#define TAOT_IMAGE_FACT_copy(field, manifest_key) facts[manifest_key] = fact(image.field);
#define TAOT_IMAGE_FACT_own(field, manifest_key)
#define TAOT_IMAGE_FACT_none(field, manifest_key)
#define TAOT_IMAGE_FACT(field, type, manifest_key, info, python, compare) TAOT_IMAGE_FACT_##python(field, manifest_key)
      TAOT_IMAGE_FIELDS(TAOT_IMAGE_FACT)
#undef TAOT_IMAGE_FACT
#undef TAOT_IMAGE_FACT_copy
#undef TAOT_IMAGE_FACT_own
#undef TAOT_IMAGE_FACT_none
      nb::dict launch_abi;  // as the manifest writes it
      launch_abi["tensordesc_layout"] = abi::tensordesc_layout_name(image.tensordesc_layout);
      launch_abi["scratch_pointers"] = abi::kScratchPointers;
      facts["launch_abi"] = launch_abi;
      facts["min_driver"] = toolchain::min_driver_for_ptxas(image.ptxas_version);
      facts["vendor"] = table::vendor_name(image.vendor);
      images.append(facts);
    }
    entry["images"] = images;
    result.append(entry);
  }
  return result;
}

namespace detail {

PyObject* kernel_variants(PyObject* self, PyObject*) {
  return guarded([&] { return variants(binding_of(self).kernel).release().ptr(); });
}

// Whether the op declares argument `arg` as written (arrays only; see written_array).
bool written(const table::KernelTable& table, const table::Arg& arg) {
  const bool is_array = table::visit_arg_kind(arg.kind, [](auto tag) { return PythonArgOf<decltype(tag)>::kIsArray; });
  return is_array && written_array(table, arg);
}

// The schema of a kernel as a torch custom op: the call arguments (written tensors marked so),
// then the config fields as optional keywords. No return value: kernels write into their arguments.
std::string torch_schema(const table::KernelTable& table) {
  std::string schema = "(";
  for (std::size_t a = 0; a < table.arg_count; ++a) {
    const table::Arg& arg = table.args[a];
    if (a > 0) schema += ", ";
    schema += table::visit_arg_kind(arg.kind, [&](auto tag) { return PythonArgOf<decltype(tag)>::schema_type(table, a); });
    schema += std::string(" ") + arg.name;
  }
  if (table.field_count > 0) schema += table.arg_count > 0 ? ", *" : "*";
  for (std::size_t f = 0; f < table.field_count; ++f) {
    const table::ConfigField& field = table.fields[f];
    schema += std::string(", ") + detail::field_schema_type(field) + " " + field.name + "=None";
  }
  return schema + ") -> ()";
}

}  // namespace detail

namespace {

// One imported library: its kernels (made here, on this runtime), the C ABI's view of them and
// the Python objects bound to them. Lives as long as the process, as the module's tables do.
struct LibraryBinding {
  std::string name;
  PyModuleDef definition{};
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<Kernel*> kernel_pointers;
  std::unique_ptr<Library> library;
  std::vector<nb::handle> kernel_objects;  // in table order; the module holds them
  bool torch_ops_registered = false;
};

// Every library imported in this process, in import order (a deque: bindings never move).
std::deque<LibraryBinding>& libraries() {
  static std::deque<LibraryBinding> bound;
  return bound;
}

// Registers the library's kernels as torch.ops.<library>.<kernel> (torch.library.custom_op),
// declaring the spec's output pointers as mutated (all pointers when it names none), with a fake
// implementation that returns nothing, so calls work under torch.compile (fullgraph) and in CUDA
// graphs. Imports torch; registering twice is a no-op.
void register_torch_ops(LibraryBinding& library) {
  if (library.torch_ops_registered) return;
  nb::module_ torch_library = nb::module_::import_("torch.library");
  nb::object custom_op = torch_library.attr("custom_op");
  for (nb::handle kernel_object : library.kernel_objects) {
    const table::KernelTable& table = detail::binding_of(kernel_object.ptr()).table;
    // The op's implementation: a function calling the kernel object, as torch expects of one.
    nb::object function = nb::cpp_function(
        [kernel_object](nb::args args, nb::kwargs kwargs) {
          nb::object result = nb::steal(PyObject_Call(kernel_object.ptr(), args.ptr(), kwargs.ptr()));
          if (!result.is_valid()) throw nb::python_error();
        },
        nb::name(table.name));
    nb::list mutated;
    for (std::size_t a = 0; a < table.arg_count; ++a)
      if (detail::written(table, table.args[a])) mutated.append(nb::str(table.args[a].name));
    nb::object op = custom_op(std::string(table.library) + "::" + table.name, function,
                              nb::arg("mutates_args") = nb::tuple(mutated),
                              nb::arg("schema") = detail::torch_schema(table));
    op.attr("register_fake")(nb::cpp_function([](nb::args, nb::kwargs) {}));
  }
  library.torch_ops_registered = true;
}

// Adds the kernel object `<name>` to `module`: `<name>(*args, stream=None, variant=None, grid=None,
// **config)` launches, and its methods bind(), choose(), time(), variants(), load_tuning(),
// reset_tuning(), warmup(), set_autotune() and reset_autotune(); and `<name>_variants()`.
void bind_kernel(nb::module_& module, LibraryBinding& library, Kernel& kernel) {
  static std::deque<std::string> strings;  // names handed to nanobind live as long as the process
  const char* name = kernel.table().name;
  auto* binding = new detail::KernelBinding(kernel);  // lives as long as the process
  PyTypeObject* type = detail::kernel_type();
  nb::object object = nb::steal(type->tp_alloc(type, 0));
  if (!object.is_valid()) throw nb::python_error();
  auto* kernel_object = reinterpret_cast<detail::KernelObject*>(object.ptr());
  kernel_object->vectorcall = detail::kernel_vectorcall;
  kernel_object->binding = binding;
  module.attr(name) = object;
  const char* variants_name = strings.emplace_back(std::string(name) + "_variants").c_str();
  module.def(variants_name, [&kernel]() { return variants(kernel); },
             "The compiled variants: a list of dicts with index, id, config, description and images (per target: "
             "shared memory bytes, num_warps, num_ctas, scratch sizes, cooperative and PDL flags).");
  library.kernel_objects.push_back(object);
}

// The stream a module-level call means: `stream` (an int or an object with `cuda_stream`), else
// torch's current stream when the program has imported torch, else the null stream.
CUstream stream_or_current(nb::handle stream) {
  if (!stream.is_none()) return detail::stream_arg(stream, detail::LaunchSite{});
  if (PyDict_GetItemString(PyImport_GetModuleDict(), "torch") == nullptr) return nullptr;
  nb::object current = nb::module_::import_("torch.cuda").attr("current_stream")();
  return reinterpret_cast<CUstream>(nb::cast<std::uint64_t>(current.attr("cuda_stream")));
}

// Adds the library-wide functions to `module`: `register_torch_ops()` (called now if the program
// has imported torch), `reserve_scratch(bytes, stream=None)`, `release_scratch()`,
// `set_autotune(on)` and `set_autotune_dir(path)`.
void add_library_functions(nb::module_& module, LibraryBinding& library) {
  module.def("register_torch_ops", [&library]() { register_torch_ops(library); },
             "Registers the kernels as torch custom ops, torch.ops.<library>.<kernel> (imports torch).");
  module.def(
      "reserve_scratch",
      [](std::uint64_t bytes, nb::handle stream) {
        Status status = reserve_scratch(stream_or_current(stream), bytes);
        if (!status.ok()) detail::raise(std::move(status));
      },
      nb::arg("bytes"), nb::arg("stream") = nb::none(),
      "Makes the scratch buffer for launches on `stream` (default: torch's current stream, else the null "
      "stream) at least `bytes` long, for kernels needing global scratch launched while a CUDA graph "
      "captures that stream; the buffer serves every taot library of the process. Call it before capture.");
  module.def(
      "set_autotune",
      [](std::optional<bool> on) { set_autotune(on); }, nb::arg("on").none(),
      "First-call autotuning for every kernel of the process: True, False, or None for each kernel's default "
      "(on for kernels whose configs came from @triton.autotune). Replaces $TAOT_AUTOTUNE.");
  module.def(
      "set_autotune_dir", [](const std::string& path) { set_autotune_dir(path); }, nb::arg("path"),
      "The folder first-call autotuning's results persist in (<path>/<library>/<kernel>/<device>.json, "
      "taot's tuned-table format), read when a kernel is first used; \"\" keeps them in memory. Replaces "
      "$TAOT_AUTOTUNE_DIR; set it before the first launch.");
  module.def(
      "release_scratch",
      []() {
        Status status = release_scratch();
        if (!status.ok()) detail::raise(std::move(status));
      },
      "Frees the current CUDA context's scratch buffers (waits for the device first).");
  if (PyDict_GetItemString(PyImport_GetModuleDict(), "torch") != nullptr) register_torch_ops(library);
}

// Checks what a generated module hands over before anything is made of it; a ValueError naming
// the library and what is wrong.
void check_registration(const taot_python_library& registration) {
  const std::string name = registration.name != nullptr ? registration.name : "";
  if (registration.abi_version != TAOT_ABI_VERSION)
    throw nb::value_error(("the taot library " + name + " was generated for taot's ABI version " +
                           std::to_string(registration.abi_version) + ", and this taot._native has version " +
                           std::to_string(TAOT_ABI_VERSION) +
                           ": rebuild the library with this taot (taot build, or taot gen and CMake)")
                              .c_str());
  if (name.empty()) throw nb::value_error("a taot library registered itself with no name");
  for (std::size_t k = 0; k < registration.table_count; ++k) {
    const table::KernelTable* table = registration.tables[k];
    if (table == nullptr || table->library == nullptr || name != table->library)
      throw nb::value_error(("the taot library " + name + ": kernel table " + std::to_string(k) +
                             " belongs to another library (" +
                             (table == nullptr || table->library == nullptr ? "none" : table->library) + ")")
                                .c_str());
  }
}

PyObject* make_module(const taot_python_library* registration) noexcept {
  return detail::guarded([&]() -> PyObject* {
    if (registration == nullptr) throw nb::value_error("taot._native.make_module: no library");
    check_registration(*registration);
    LibraryBinding& library = libraries().emplace_back();
    library.name = registration->name;
    for (std::size_t k = 0; k < registration->table_count; ++k) {
      library.kernels.push_back(std::make_unique<Kernel>(*registration->tables[k]));
      library.kernel_pointers.push_back(library.kernels.back().get());
    }
    library.library = std::make_unique<Library>(TAOT_ABI_VERSION, library.name.c_str(),
                                                library.kernel_pointers.data(), library.kernel_pointers.size());
    library.definition = PyModuleDef{PyModuleDef_HEAD_INIT, library.name.c_str(),
                                     "taot kernel library: AOT-compiled Triton kernels.", -1, nullptr,
                                     nullptr, nullptr, nullptr, nullptr};
    nb::module_ module = nb::steal<nb::module_>(PyModule_Create(&library.definition));
    if (!module.is_valid()) throw nb::python_error();
    for (const std::unique_ptr<Kernel>& kernel : library.kernels) bind_kernel(module, library, *kernel);
    add_library_functions(module, library);
    return module.release().ptr();
  });
}

}  // namespace
}  // namespace taot::python

NB_MODULE(_native, module) {
  namespace nb = nanobind;
  using taot::python::libraries;
  module.doc() =
      "taot's Python binding: the kernel objects of every taot library's Python module, on one runtime "
      "per process.";
  module.attr("abi_version") = TAOT_ABI_VERSION;
  module.attr("make_module") = nb::steal(PyCapsule_New(reinterpret_cast<void*>(&taot::python::make_module),
                                                       taot::python::kMakeModuleCapsule, nullptr));
  module.def(
      "libraries",
      []() {
        nb::list result;
        for (const taot::python::LibraryBinding& library : libraries()) {
          nb::list kernels;
          for (const std::unique_ptr<taot::Kernel>& kernel : library.kernels) kernels.append(kernel->table().name);
          result.append(nb::make_tuple(library.name, kernels));
        }
        return result;
      },
      "The taot libraries imported in this process, in import order: (name, [kernel names]).");
}
