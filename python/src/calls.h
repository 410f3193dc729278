// taot._native, part 2: calls. What each argument kind and config field is to Python, a call's
// keywords resolved once per set of names and values, a kernel's call and a bound launcher's.
#pragma once

#include <cstring>

#include "arrays.h"

namespace taot::python::detail {
// What each kind of call argument (table::ArgKind) is to Python, in one place per kind:
// `convert` reads argument `index` from a Python object into `conversion.values[index]`;
// `schema_type` is its type in the torch custom op's schema; `kIsArray` says whether a torch op
// may declare it mutated.
template <table::ArgKind Kind>
struct PythonArg;

template <>
struct PythonArg<table::ArgKind::pointer> {
  static constexpr bool kIsArray = true;
  static void convert(const table::KernelTable& table, std::size_t index, nb::handle object, Conversion& conversion) {
    conversion.values[index] = pointer_arg(table, index, object, conversion.site);
  }
  // None-able pointers are optional tensors.
  static std::string schema_type(const table::KernelTable& table, std::size_t index) {
    return tensor_schema(table, index) + (table.args[index].none ? "?" : "");
  }
};

template <>
struct PythonArg<table::ArgKind::tensordesc> {
  static constexpr bool kIsArray = true;  // a whole tensor (a descriptor object is no torch type)
  static void convert(const table::KernelTable& table, std::size_t index, nb::handle object, Conversion& conversion) {
    taot_tensordesc& desc = conversion.next_descriptor(table.arg_count);
    descriptor_arg(table, table.args[index], object, conversion.site, desc);
    conversion.values[index] = taot::arg(desc);
  }
  static std::string schema_type(const table::KernelTable& table, std::size_t index) { return tensor_schema(table, index); }
};

template <>
struct PythonArg<table::ArgKind::int_scalar> {
  static constexpr bool kIsArray = false;
  static void convert(const table::KernelTable& table, std::size_t index, nb::handle object, Conversion& conversion) {
    const table::Arg& arg = table.args[index];
    if (!PyLong_Check(object.ptr()))
      throw nb::type_error((prefix(table, arg) + "expected an int, got " + nb::type_name(object.type()).c_str()).c_str());
    int overflow = 0;
    taot_arg value{};
    value.integer = PyLong_AsLongLongAndOverflow(object.ptr(), &overflow);
    if (overflow != 0) throw nb::value_error((prefix(table, arg) + "the value does not fit in 64 bits").c_str());
    conversion.values[index] = value;
  }
  static std::string schema_type(const table::KernelTable&, std::size_t) { return "int"; }
};

template <>
struct PythonArg<table::ArgKind::float_scalar> {
  static constexpr bool kIsArray = false;
  static void convert(const table::KernelTable& table, std::size_t index, nb::handle object, Conversion& conversion) {
    const table::Arg& arg = table.args[index];
    const double real = PyFloat_AsDouble(object.ptr());
    if (real == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw nb::type_error((prefix(table, arg) + "expected a float, got " + nb::type_name(object.type()).c_str()).c_str());
    }
    taot_arg value{};
    if (arg.type_count > 0 && arg.types[0] == TAOT_DTYPE_FP64) value.real64 = real;
    else value.real32 = static_cast<float>(real);
    conversion.values[index] = value;
  }
  static std::string schema_type(const table::KernelTable&, std::size_t) { return "float"; }
};

template <>
struct PythonArg<table::ArgKind::bool_scalar> {
  static constexpr bool kIsArray = false;
  static void convert(const table::KernelTable&, std::size_t index, nb::handle object, Conversion& conversion) {
    conversion.values[index] = taot::arg(PyObject_IsTrue(object.ptr()) != 0);
  }
  static std::string schema_type(const table::KernelTable&, std::size_t) { return "bool"; }
};

// None, an int or a float, each selecting the variants compiled for that form (as Triton's JIT
// specializes on the Python value); a float is stored as the argument's float type.
template <>
struct PythonArg<table::ArgKind::scalar> {
  static constexpr bool kIsArray = false;
  static void convert(const table::KernelTable& table, std::size_t index, nb::handle object, Conversion& conversion) {
    const table::Arg& arg = table.args[index];
    taot_dtype float_type = TAOT_DTYPE_UNKNOWN;
    bool takes_int = false;
    for (std::uint16_t t = 0; t < arg.type_count; ++t) {
      if (arg.types[t] == TAOT_DTYPE_FP32 || arg.types[t] == TAOT_DTYPE_FP64) float_type = arg.types[t];
      else takes_int = true;
    }
    taot_scalar scalar{TAOT_DTYPE_UNKNOWN, 0, 0.0};
    if (object.is_none() && arg.none) {
      // None: the form stays TAOT_DTYPE_UNKNOWN
    } else if (takes_int && PyLong_Check(object.ptr()) && !PyBool_Check(object.ptr())) {
      int overflow = 0;
      scalar.dtype = TAOT_DTYPE_I64;
      scalar.integer = PyLong_AsLongLongAndOverflow(object.ptr(), &overflow);
      if (overflow != 0) throw nb::value_error((prefix(table, arg) + "the value does not fit in 64 bits").c_str());
    } else if (float_type != TAOT_DTYPE_UNKNOWN &&
               (PyFloat_Check(object.ptr()) || (PyLong_Check(object.ptr()) && !PyBool_Check(object.ptr())))) {
      // a float, or an int where no int form was compiled (taken as the float, as float arguments take it)
      scalar.dtype = TAOT_DTYPE_FP64;
      scalar.real = PyFloat_AsDouble(object.ptr());
      if (scalar.real == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        throw nb::value_error((prefix(table, arg) + "the value does not fit in a float").c_str());
      }
    } else {
      std::string expected = takes_int ? "an int" : "";
      if (float_type != TAOT_DTYPE_UNKNOWN) expected += std::string(expected.empty() ? "" : ", ") + "a float";
      if (arg.none) expected += std::string(expected.empty() ? "" : ", ") + "None";
      throw nb::type_error(
          (prefix(table, arg) + "expected " + expected + ", got " + nb::type_name(object.type()).c_str()).c_str());
    }
    conversion.values[index] = taot::arg(scalar, float_type);
  }
  static std::string schema_type(const table::KernelTable& table, std::size_t index) {
    return table.args[index].none ? "Scalar?" : "Scalar";
  }
};

template <class Tag>
using PythonArgOf = PythonArg<Tag::value>;

// The stream to launch on: `stream=` when given (an int, or an object with a `cuda_stream` int such
// as torch.cuda.Stream), else the current stream of the arrays' framework on their device (torch's
// current stream), else the null stream.
inline CUstream stream_arg(nb::handle stream, const LaunchSite& site) {
  if (stream.is_valid() && !stream.is_none()) {
    if (PyLong_Check(stream.ptr())) return reinterpret_cast<CUstream>(PyLong_AsUnsignedLongLong(stream.ptr()));
    return reinterpret_cast<CUstream>(nb::cast<std::uint64_t>(stream.attr("cuda_stream")));
  }
  if (site.stream_api != nullptr) {
    void* current = nullptr;
    if (site.stream_api->current_work_stream(dlpack::kCUDA, site.device, &current) != 0) throw nb::python_error();
    return static_cast<CUstream>(current);
  }
  const Torch& torch_state = torch();
  if (!site.legacy_torch || torch_state.raw_stream == nullptr) return nullptr;
  nb::object device = nb::steal(PyObject_CallNoArgs(torch_state.current_device));
  if (!device.is_valid()) throw nb::python_error();
  nb::object raw = nb::steal(PyObject_CallOneArg(torch_state.raw_stream, device.ptr()));
  if (!raw.is_valid()) throw nb::python_error();
  return reinterpret_cast<CUstream>(PyLong_AsUnsignedLongLong(raw.ptr()));
}

// Launches go to the current context: refuse arrays of another device (their addresses would be
// wild there) instead of faulting the context.
inline void check_current_device(const table::KernelTable& table, const LaunchSite& site) {
  if (site.device < 0) return;
  const driver::Api* api = driver::loaded();
  if (api == nullptr) {
    Expected<const driver::Api*> loaded = driver::get();
    if (!loaded.ok()) return;  // the launch reports it
    api = *loaded;
  }
  CUcontext context = nullptr;
  if (api->cuCtxGetCurrent(&context) != CUDA_SUCCESS || context == nullptr) return;  // the launch reports it
  // The device of this thread's last context, asked once per context (cuCtxGetDevice costs far
  // more than cuCtxGetCurrent on some drivers).
  thread_local CUcontext known_context = nullptr;
  thread_local CUdevice known_device = 0;
  if (context != known_context) {
    if (api->cuCtxGetDevice(&known_device) != CUDA_SUCCESS) return;
    known_context = context;
  }
  const CUdevice device = known_device;
  if (device != site.device)
    throw nb::value_error((std::string(table.library) + "." + table.name + ": the arrays are on cuda:" +
                           std::to_string(site.device) + " (" + site.device_arg + ") but the current CUDA device is cuda:" +
                           std::to_string(device) + "; launch under torch.cuda.device(" + std::to_string(site.device) +
                           ") or make that device's context current").c_str());
}

inline void raise(Status status) {
  if (status.code() == TAOT_INVALID_ARGUMENT || status.code() == TAOT_NO_MATCHING_VARIANT)
    throw nb::value_error(status.message().c_str());
  throw std::runtime_error(status.message());
}

// What each kind of config field is to Python, in one place: a compiled value as a Python
// object, a keyword's value as a request, and the field's type in a torch op schema.
inline nb::object field_value(const table::ConfigField& field, std::uint16_t index) {
  switch (field.kind) {
    case table::FieldKind::float_value: return nb::float_(field.float_values[index]);
    case table::FieldKind::bool_value: return nb::bool_(field.int_values[index] != 0);
    case table::FieldKind::dtype_value: return nb::str(dtype_name(static_cast<DType>(field.int_values[index])));
    case table::FieldKind::string_value: return nb::str(field.string_values[index]);
    case table::FieldKind::int_value: break;
  }
  return nb::int_(field.int_values[index]);
}

// A Python int as an int64 (ints and objects with __index__); a TypeError saying that `what()`
// (made only for the message) takes an int for anything else, a ValueError for an int beyond 64 bits.
template <class What>
std::int64_t int64_of(nb::handle item, const What& what) {
  nb::object index;
  PyObject* integer = item.ptr();
  if (!PyLong_Check(integer)) {
    if (!PyIndex_Check(integer))
      throw nb::type_error((what() + " takes an int, got " + nb::type_name(item.type()).c_str()).c_str());
    index = nb::steal(PyNumber_Index(integer));
    if (!index.is_valid()) throw nb::python_error();
    integer = index.ptr();
  }
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(integer, &overflow);
  if (overflow != 0) throw nb::value_error((what() + ": " + nb::str(item).c_str() + " does not fit in 64 bits").c_str());
  if (value == -1 && PyErr_Occurred()) throw nb::python_error();
  return value;
}

// The request for a config keyword's value; a TypeError naming the field for a value of the wrong
// type. A string's text points into `item`, which must outlive the launch.
inline FieldRequest field_request(const table::KernelTable& table, const table::ConfigField& field, nb::handle item) {
  const auto what = [&] { return std::string(table.library) + "." + table.name + "(): config " + field.name; };
  FieldRequest request;
  request.set = true;
  switch (field.kind) {
    case table::FieldKind::float_value:
      request.real = PyFloat_AsDouble(item.ptr());
      if (request.real == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        throw nb::type_error((what() + " takes a float, got " + nb::type_name(item.type()).c_str()).c_str());
      }
      break;
    case table::FieldKind::dtype_value:
    case table::FieldKind::string_value: {
      Py_ssize_t size = 0;
      const char* text = PyUnicode_Check(item.ptr()) ? PyUnicode_AsUTF8AndSize(item.ptr(), &size) : nullptr;
      if (text == nullptr) {
        PyErr_Clear();
        throw nb::type_error((what() + " takes a " + (field.kind == table::FieldKind::dtype_value ? "dtype name (a str)" : "str") +
                              ", got " + nb::type_name(item.type()).c_str()).c_str());
      }
      const std::string_view view(text, static_cast<std::size_t>(size));
      if (field.kind == table::FieldKind::dtype_value) request.integer = static_cast<std::int64_t>(dtype_from_name(view));
      else request.text = view;
      break;
    }
    case table::FieldKind::int_value:
    case table::FieldKind::bool_value: request.integer = int64_of(item, what); break;
  }
  return request;
}

inline const char* field_schema_type(const table::ConfigField& field) {
  switch (field.kind) {
    case table::FieldKind::float_value: return "float?";
    case table::FieldKind::bool_value: return "bool?";
    case table::FieldKind::dtype_value:
    case table::FieldKind::string_value: return "str?";
    case table::FieldKind::int_value: break;
  }
  return "int?";
}

// The `grid=` keyword: an int (x) or a tuple or list of 1 to 3 ints (x, y, z); missing dims are 1.
inline Grid grid_arg(const table::KernelTable& table, nb::handle item) {
  const auto what = [&] { return std::string(table.library) + "." + table.name + "(): grid="; };
  const auto fail = [&]() {
    return nb::type_error((what() + " takes an int or a tuple or list of 1 to 3 ints, got " +
                           nb::type_name(item.type()).c_str()).c_str());
  };
  std::int64_t dims[3] = {1, 1, 1};
  if (PyLong_Check(item.ptr())) {
    dims[0] = int64_of(item, what);
  } else if (PyTuple_Check(item.ptr()) || PyList_Check(item.ptr())) {
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(item.ptr());
    if (count < 1 || count > 3) throw fail();
    for (Py_ssize_t d = 0; d < count; ++d) {
      nb::handle dim(PySequence_Fast_GET_ITEM(item.ptr(), d));
      if (!PyLong_Check(dim.ptr())) throw fail();
      dims[d] = int64_of(dim, what);
    }
  } else {
    throw fail();
  }
  return Grid{dims[0], dims[1], dims[2]};
}

// ---------------------------------------------------------------------------------------------
// Calls. A kernel is a Python object of its own type, called through vectorcall: a call's
// arguments and keywords arrive as an array and a tuple of names, and no tuple or dict is made.
// ---------------------------------------------------------------------------------------------

// A call's arguments as taot_args (the first 32 in place), read from the Python objects in order.
class CallArgs {
 public:
  // Reads args[0 .. table.arg_count), whose count the caller checked.
  CallArgs(const table::KernelTable& table, PyObject* const* args) : conversion_(nullptr) {
    if (table.arg_count > kInlineArgs) heap_values_.resize(table.arg_count);
    conversion_.values = table.arg_count > kInlineArgs ? heap_values_.data() : inline_values_;
    for (std::size_t a = 0; a < table.arg_count; ++a) {
      table::visit_arg_kind(table.args[a].kind, [&](auto tag) {
        PythonArgOf<decltype(tag)>::convert(table, a, nb::handle(args[a]), conversion_);
      });
    }
  }
  CallArgs(const CallArgs&) = delete;
  CallArgs& operator=(const CallArgs&) = delete;

  // Checks that the arrays are on the current device, finds the stream (`stream`: the stream=
  // keyword, or null) and reads the arrays given through __dlpack__, which need it.
  CUstream finish(const table::KernelTable& table, nb::handle stream) {
    LaunchSite& site = conversion_.site;
    check_current_device(table, site);
    const CUstream launch_stream = stream_arg(stream, site);
    for (const auto& [index, object] : site.deferred)
      conversion_.values[index] = dlpack_arg(table, table.args[index], object, launch_stream, site);
    return launch_stream;
  }
  const taot_arg* values() const noexcept { return conversion_.values; }

 private:
  static constexpr std::size_t kInlineArgs = 32;
  taot_arg inline_values_[kInlineArgs];
  std::vector<taot_arg> heap_values_;
  Conversion conversion_;
};

// A call's config requests, one per field in table order, all unset at first (the first 32 in
// place; only the kernel's fields are initialized).
class FieldRequests {
 public:
  explicit FieldRequests(std::size_t count) {
    if (count > kInlineFields) heap_requests_.resize(count);
    data_ = count > kInlineFields ? heap_requests_.data() : inline_.requests;
    if (count <= kInlineFields) std::uninitialized_fill_n(data_, count, FieldRequest{});
  }
  FieldRequests(const FieldRequests&) = delete;
  FieldRequests& operator=(const FieldRequests&) = delete;
  FieldRequest* data() noexcept { return data_; }

 private:
  static constexpr std::size_t kInlineFields = 32;
  union InlineRequests {
    InlineRequests() noexcept {}  // left uninitialized: the constructor fills what the kernel uses
    FieldRequest requests[kInlineFields];
  } inline_;
  std::vector<FieldRequest> heap_requests_;
  FieldRequest* data_ = nullptr;
};

// What a call keyword names: a config field (its index, >= 0) or one of these.
constexpr std::int32_t kStreamKeyword = -1;
constexpr std::int32_t kVariantKeyword = -2;
constexpr std::int32_t kGridKeyword = -3;
constexpr std::int32_t kUnknownKeyword = -4;

// What a call's keywords ask for besides config fields.
struct CallOptions {
  nb::handle stream;  // stream=, or null
  bool has_grid = false;
  Grid grid;
  bool has_variant = false;
  std::size_t variant = 0;
  bool has_config = false;  // some config keyword was given and not None
};

// One set of keyword names a kernel was called with, resolved (see KeywordCache).
struct ResolvedKeywords {
  std::vector<nb::object> names;     // held, so that a pointer match is a match
  std::vector<std::int32_t> slots;   // per keyword: a field index or k...Keyword
  std::vector<nb::object> values;    // per config keyword: its value when immutable (held), else null
  std::vector<FieldRequest> fields;  // what those values request, in table order
  bool reusable = false;             // every config value is held: `fields` holds for the same values
  bool has_config = false;
};

// Config keywords resolved to field requests, for the last few sets of keyword names a kernel was
// called with. A call whose keyword names are the same string objects as an entry's (Python
// interns the keywords written in a call, and a dict's keys stay the same objects) reuses the
// entry's slots; if its config values are also the same objects as the entry's, which holds them
// and admits only immutable ones (exact ints, floats, strs, bools, None), it reuses the requests.
// Other values (int subclasses, objects with __index__) are read at every call, so the cache never
// answers for a value that may have changed. It only resolves keywords: the variant is chosen by
// the runtime at every call from the arguments. The GIL guards it; a call copies what it takes
// before anything that may run Python code.
class KeywordCache {
 public:
  // The entry for `names` (the same objects, in order), or null.
  ResolvedKeywords* find(PyObject* const* names, std::size_t count) noexcept {
    for (ResolvedKeywords& entry : entries_) {
      if (entry.names.size() != count) continue;
      std::size_t k = 0;
      while (k < count && entry.names[k].ptr() == names[k]) ++k;
      if (k == count) return &entry;
    }
    return nullptr;
  }
  // The entry new names go into: the one filled longest ago.
  ResolvedKeywords& oldest() noexcept {
    ResolvedKeywords& entry = entries_[next_];
    next_ = (next_ + 1) % kEntries;
    return entry;
  }

 private:
  static constexpr std::size_t kEntries = 4;
  ResolvedKeywords entries_[kEntries];
  std::size_t next_ = 0;
};

// Whether a value cannot change while it is held, so that the same object means the same value.
inline bool immutable_value(PyObject* value) noexcept {
  return value == Py_None || PyLong_CheckExact(value) || PyBool_Check(value) || PyFloat_CheckExact(value) ||
         PyUnicode_CheckExact(value);
}

// The keyword a call gives its own option `option` ("stream", "variant", "grid") by: the option's
// name, or, when a config field or an argument has that name (a `stream: tl.constexpr`, a
// `grid` tensor), the name with underscores appended until none has it. The kernel's name keeps
// its meaning, as in Triton, where `stream=` sets the constexpr and `grid=` the argument.
inline std::string launch_keyword(const table::KernelTable& table, std::string option) {
  const auto is_taken = [&](const std::string& name) {
    for (std::size_t f = 0; f < table.field_count; ++f)
      if (name == table.fields[f].name) return true;
    for (std::size_t a = 0; a < table.arg_count; ++a)
      if (name == table.args[a].name) return true;
    return false;
  };
  while (is_taken(option)) option += '_';
  return option;
}

// What a module keeps per kernel, for the life of the process: the kernel, the keywords its calls
// take (interned, so that a call's keywords match by pointer), the keyword cache, and its name and
// doc for Python.
struct KernelBinding {
  explicit KernelBinding(Kernel& bound_kernel)
      : kernel(bound_kernel),
        table(bound_kernel.table()),
        name(std::string(table.library) + "." + table.name),
        stream_keyword(launch_keyword(table, "stream")),
        variant_keyword(launch_keyword(table, "variant")),
        grid_keyword(launch_keyword(table, "grid")) {
    keywords.emplace_back(nb::steal(interned(stream_keyword.c_str())), kStreamKeyword);
    keywords.emplace_back(nb::steal(interned(variant_keyword.c_str())), kVariantKeyword);
    keywords.emplace_back(nb::steal(interned(grid_keyword.c_str())), kGridKeyword);
    for (std::size_t f = 0; f < table.field_count; ++f)
      keywords.emplace_back(nb::steal(interned(table.fields[f].name)), static_cast<std::int32_t>(f));
    for (std::size_t p = 0; p < table.parameter_count; ++p) positions.push_back(position_of(table.parameters[p]));
    for (std::size_t a = 0; a < table.arg_count && !positions.empty(); ++a)
      if (table.args[a].launch_only) positions.push_back({Position::argument, a});
    doc = kernel_doc();
  }

  // What a value given by position fills, in the function's parameter order (then the launch-only
  // arguments), as Triton's JIT binds `kernel[grid](x, out, n, 1024)`: a call argument, a config
  // field, or a constexpr compiled in at its default (which cannot be given).
  struct Position {
    enum Kind { argument, field, fixed } kind;
    std::size_t index;  // of the argument or field
  };
  Position position_of(const char* parameter) const noexcept {
    for (std::size_t a = 0; a < table.arg_count; ++a)
      if (std::strcmp(table.args[a].name, parameter) == 0) return {Position::argument, a};
    for (std::size_t f = 0; f < table.field_count; ++f)
      if (std::strcmp(table.fields[f].name, parameter) == 0) return {Position::field, f};
    return {Position::fixed, 0};
  }
  // The field's keyword object (interned), for a value given by position: `keywords` holds the
  // call's own three keywords first, then the fields in table order.
  PyObject* field_keyword(std::size_t f) const noexcept { return keywords[kOwnKeywords + f].first.ptr(); }
  static constexpr std::size_t kOwnKeywords = 3;  // stream, variant, grid

  // The slot keyword `keyword` fills, or kUnknownKeyword.
  std::int32_t find_slot(PyObject* keyword) const noexcept {
    for (const auto& [known, slot] : keywords)
      if (known.ptr() == keyword) return slot;
    for (const auto& [known, slot] : keywords)  // a name made at run time: compare the text
      if (PyUnicode_Compare(keyword, known.ptr()) == 0) return slot;
    return kUnknownKeyword;
  }
  // The kernel's __doc__: its call, grid and config keywords, and its methods.
  std::string kernel_doc() const {
    std::string text = std::string("Launches ") + name + "(";
    for (std::size_t a = 0; a < table.arg_count; ++a) text += (a ? ", " : "") + std::string(table.args[a].name);
    text += ", *, " + stream_keyword + "=None, " + variant_keyword + "=None, " + grid_keyword + "=None, **config) on " +
            (table.grid_text[0] == nullptr ? "the " + grid_keyword + "= given (the kernel has no grid of its own)"
                                           : "the grid (" + std::string(table.grid_text[0]) + ", " +
                                                 table.grid_text[1] + ", " + table.grid_text[2] + ")") +
            "; config keywords:";
    for (std::size_t f = 0; f < table.field_count; ++f) text += std::string(" ") + table.fields[f].name;
    return text + ".\n\nbind(**config) or bind(variant=i) makes a launcher with the config resolved once; "
                  "choose(*args, **config) says which variant a call would launch and how it was chosen; "
                  "time(*args, **config) times launches (taot/timing.h) and returns the median and quantiles.";
  }

  // The index of the argument named `keyword`, or arg_count.
  std::size_t arg_index(PyObject* keyword) const noexcept {
    std::size_t a = 0;
    while (a < table.arg_count && PyUnicode_CompareWithASCIIString(keyword, table.args[a].name) != 0) ++a;
    return a;
  }
  nb::builtin_exception doubled_argument(std::size_t a) const {
    return nb::type_error((name + "() got multiple values for argument '" + table.args[a].name + "'").c_str());
  }
  // The error for a keyword that is none of the kernel's, or names an argument given in order.
  nb::builtin_exception unknown_keyword(PyObject* keyword) const {
    if (const std::size_t a = arg_index(keyword); a < table.arg_count) return doubled_argument(a);
    std::string known;
    for (const auto& entry : keywords) known += (known.empty() ? "" : ", ") + std::string(nb::str(entry.first).c_str());
    return nb::type_error((name + "(): unknown keyword '" + nb::str(keyword).c_str() + "'; the keywords are: " +
                           known).c_str());
  }

  Kernel& kernel;
  const table::KernelTable& table;
  std::string name;  // "vector_add.add_kernel"
  std::string stream_keyword, variant_keyword, grid_keyword;  // see launch_keyword
  std::string doc;
  std::vector<std::pair<nb::object, std::int32_t>> keywords;  // stream, variant, grid, then the fields
  std::vector<Position> positions;  // empty when the library does not record the function's parameters
  KeywordCache cache;
};

// A `variant=` value: an index into the variant list. Messages name the call: the kernel's name
// and `call` ("()", ".bind()").
inline std::size_t variant_index_arg(const KernelBinding& binding, nb::handle item, const char* call) {
  const std::int64_t index = int64_of(item, [&] { return binding.name + call + ": " + binding.variant_keyword + "="; });
  if (index < 0 || static_cast<std::uint64_t>(index) >= binding.table.variant_count)
    throw nb::value_error((binding.name + call + ": variant index " + std::to_string(index) +
                           " is out of range (the kernel has " + std::to_string(binding.table.variant_count) +
                           " variants)").c_str());
  return static_cast<std::size_t>(index);
}

// Reads one of the call's own keywords (stream, variant, grid) into `options`; None is unset.
inline void read_option(const KernelBinding& binding, std::int32_t slot, nb::handle value, CallOptions& options) {
  if (value.is_none()) return;
  if (slot == kStreamKeyword) {
    options.stream = value;
  } else if (slot == kVariantKeyword) {
    options.variant = variant_index_arg(binding, value, "()");
    options.has_variant = true;
  } else if (slot == kGridKeyword) {
    options.grid = grid_arg(binding.table, value);
    options.has_grid = true;
  }
}

// Reads a call's keywords (`kwnames`, with their `values` as vectorcall passes them) into `options`
// and `fields`, through the kernel's keyword cache.
inline void read_keywords(KernelBinding& binding, PyObject* const* values, PyObject* kwnames, CallOptions& options,
                          FieldRequest* fields) {
  const std::size_t count = static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames));
  PyObject* const* names = reinterpret_cast<PyTupleObject*>(kwnames)->ob_item;
  const std::size_t field_count = binding.table.field_count;
  ResolvedKeywords* entry = binding.cache.find(names, count);
  bool reuse = entry != nullptr && entry->reusable;
  for (std::size_t k = 0; reuse && k < count; ++k)
    reuse = entry->slots[k] < 0 || entry->values[k].ptr() == values[k];
  if (reuse) {
    std::copy(entry->fields.begin(), entry->fields.end(), fields);
    options.has_config = entry->has_config;
  } else {
    // Resolved aside (reading a value may run Python code, a call of this kernel even), then
    // stored in one move.
    ResolvedKeywords resolved;
    resolved.slots.resize(count);
    for (std::size_t k = 0; k < count; ++k) {
      resolved.slots[k] = entry != nullptr ? entry->slots[k] : binding.find_slot(names[k]);
      if (resolved.slots[k] == kUnknownKeyword) throw binding.unknown_keyword(names[k]);
    }
    resolved.values.resize(count);
    resolved.reusable = true;
    for (std::size_t k = 0; k < count; ++k) {
      const std::int32_t slot = resolved.slots[k];
      if (slot < 0) continue;
      nb::handle value(values[k]);
      if (!value.is_none()) {
        fields[slot] = field_request(binding.table, binding.table.fields[slot], value);
        resolved.has_config = true;
      }
      if (immutable_value(value.ptr())) resolved.values[k] = nb::borrow(value);
      else resolved.reusable = false;
    }
    resolved.names.reserve(count);
    for (std::size_t k = 0; k < count; ++k) resolved.names.push_back(nb::borrow(names[k]));
    resolved.fields.assign(fields, fields + field_count);
    options.has_config = resolved.has_config;
    ResolvedKeywords* known = binding.cache.find(names, count);
    ResolvedKeywords& target = known != nullptr ? *known : binding.cache.oldest();
    std::swap(target, resolved);  // what the entry held is released with `resolved`
    entry = &target;
  }
  for (std::size_t k = 0; k < count; ++k)
    if (entry->slots[k] < 0) read_option(binding, entry->slots[k], values[k], options);
}

// The selection a kernel call's keywords ask for.
inline Selection call_selection(const KernelBinding& binding, const CallOptions& options, const FieldRequest* fields) {
  if (options.has_variant && options.has_config)
    throw nb::type_error((binding.name + "(): give either " + binding.variant_keyword +
                          "= or config keywords, not both").c_str());
  if (options.has_variant) return Selection::variant(options.variant);
  if (options.has_config) return Selection::config(fields);
  return Selection::automatic();
}

inline void check_arg_count(const KernelBinding& binding, std::size_t count) {
  if (count != binding.table.arg_count)
    throw nb::type_error((binding.name + "() takes " + std::to_string(binding.table.arg_count) + " arguments, got " +
                          std::to_string(count)).c_str());
}

// The kwnames tuple of a call that passes on `kept` of its keywords (null for none).
inline nb::object keyword_names(const std::vector<PyObject*>& kept) {
  if (kept.empty()) return {};
  nb::object names = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(kept.size())));
  if (!names.is_valid()) throw nb::python_error();
  for (std::size_t k = 0; k < kept.size(); ++k) {
    Py_INCREF(kept[k]);
    PyTuple_SET_ITEM(names.ptr(), static_cast<Py_ssize_t>(k), kept[k]);
  }
  return names;
}

// A call that gives some arguments by keyword, as Triton's callers do (`k[grid](x, out, n=n,
// BLOCK=128)`), or constexprs by position (`k[grid](x, out, n, 128)`: more values than call
// arguments are bound in the function's parameter order): `values` holds every argument in order,
// then the values of the other keywords and of the constexprs given by position, which `kwnames()`
// names. A call that gives exactly its arguments in order pays nothing for this.
struct KeywordArgs {
  KeywordArgs(const KernelBinding& binding, PyObject* const* args, std::size_t nargs, PyObject* kwnames) {
    const table::KernelTable& table = binding.table;
    std::vector<PyObject*> kept_names, kept_values;
    if (nargs <= table.arg_count) {
      values.assign(args, args + nargs);
    } else {
      if (nargs > binding.positions.size())
        throw nb::type_error((binding.name + "() takes " + std::to_string(table.arg_count) + " arguments" +
                              (binding.positions.empty() ? std::string()
                                                         : " (" + std::to_string(binding.positions.size()) +
                                                               " with its constexprs, in the function's order)") +
                              ", got " + std::to_string(nargs)).c_str());
      for (std::size_t i = 0; i < nargs; ++i) {
        const KernelBinding::Position& position = binding.positions[i];
        if (position.kind == KernelBinding::Position::argument) {
          if (values.size() <= position.index) values.resize(position.index + 1, nullptr);
          values[position.index] = args[i];
        } else if (position.kind == KernelBinding::Position::field) {
          kept_names.push_back(binding.field_keyword(position.index));
          kept_values.push_back(args[i]);
        } else {
          throw nb::type_error((binding.name + "(): parameter " + std::to_string(i + 1) + " (" + table.parameters[i] +
                                ") is a constexpr compiled in at its default in the function; give nothing for it")
                                   .c_str());
        }
      }
    }
    values.resize(table.arg_count, nullptr);
    const std::size_t count = kwnames != nullptr ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
    for (std::size_t k = 0; k < count; ++k) {
      PyObject* keyword = PyTuple_GET_ITEM(kwnames, static_cast<Py_ssize_t>(k));
      const std::size_t a = binding.arg_index(keyword);
      if (a == table.arg_count) {
        kept_names.push_back(keyword);
        kept_values.push_back(args[nargs + k]);
      } else if (values[a] != nullptr) {
        throw binding.doubled_argument(a);
      } else {
        values[a] = args[nargs + k];
      }
    }
    std::string missing;
    std::size_t missing_count = 0;
    for (std::size_t a = 0; a < table.arg_count; ++a)
      if (values[a] == nullptr) missing += std::string(missing_count++ ? ", '" : "'") + table.args[a].name + "'";
    if (missing_count != 0)
      throw nb::type_error((binding.name + "() takes " + std::to_string(table.arg_count) +
                            " arguments (in order or by name), and " + missing +
                            (missing_count == 1 ? " is" : " are") + " missing").c_str());
    for (std::size_t i = 0; i < kept_names.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (PyUnicode_Compare(kept_names[i], kept_names[j]) == 0)
          throw nb::type_error((binding.name + "() got multiple values for argument '" +
                                nb::str(kept_names[i]).c_str() + "'").c_str());
    values.insert(values.end(), kept_values.begin(), kept_values.end());
    names = keyword_names(kept_names);
  }
  PyObject* kwnames() const noexcept { return names.is_valid() ? names.ptr() : nullptr; }

  std::vector<PyObject*> values;
  nb::object names;
};

// What a call does once its arguments and keywords are read: launch, say which variant a
// launch would use and which step chose it, time launches, or tune the call's key ahead of time
// (first-call autotuning's warmup) and say what a launch chooses then.
enum class CallMode { launch, choose, time, warmup };

// What time() returns: {"ms": [per launch, one per rep], "min", "p20", "median", "p80", "max",
// "mean", "reps", "warmup_reps", "warmup_ms", "flush_bytes", "variant", "step"}.
inline nb::dict timings_dict(const Timings& timings) {
  nb::list ms;
  for (double value : timings.ms) ms.append(value);
  nb::dict result;
  result["ms"] = ms;
  result["min"] = timings.stats.min;
  result["p20"] = timings.stats.p20;
  result["median"] = timings.stats.median;
  result["p80"] = timings.stats.p80;
  result["max"] = timings.stats.max;
  result["mean"] = timings.stats.mean;
  result["reps"] = timings.ms.size();
  result["warmup_reps"] = timings.warmup_reps;
  result["warmup_ms"] = timings.warmup_ms;
  result["flush_bytes"] = timings.flush_bytes;
  result["variant"] = timings.choice.variant;
  result["step"] = step_name(timings.choice.step);
  return result;
}

// `timing` is the time() call's options (mode time only).
inline PyObject* finish_call(KernelBinding& binding, CallArgs& call, const CallOptions& options,
                             const Selection& selection, CallMode mode, const TimingOptions* timing = nullptr) {
  const table::KernelTable& table = binding.table;
  const CUstream stream = call.finish(table, options.stream);
  if (mode == CallMode::choose) {
    Expected<Choice> choice = binding.kernel.choose(call.values(), table.arg_count, selection);
    if (!choice.ok()) raise(std::move(choice).take_status());
    return nb::make_tuple(choice->variant, step_name(choice->step)).release().ptr();
  }
  if (mode == CallMode::warmup) {
    std::optional<Expected<Choice>> choice;
    {
      nb::gil_scoped_release unlocked;  // the arguments stay alive: the caller's frame holds them
      choice.emplace(options.has_grid ? binding.kernel.warmup(stream, call.values(), table.arg_count, selection, options.grid)
                                      : binding.kernel.warmup(stream, call.values(), table.arg_count, selection));
    }
    if (!choice->ok()) raise(std::move(*choice).take_status());
    return nb::make_tuple((*choice)->variant, step_name((*choice)->step)).release().ptr();
  }
  if (mode == CallMode::time) {
    // The arguments stay alive meanwhile: the caller's frame holds every object they were read from.
    std::optional<Expected<Timings>> timings;
    {
      nb::gil_scoped_release unlocked;
      timings.emplace(time_launches(binding.kernel, stream, call.values(), table.arg_count, selection,
                                    options.has_grid ? &options.grid : nullptr, *timing));
    }
    if (!timings->ok()) raise(std::move(*timings).take_status());
    return timings_dict(timings->value()).release().ptr();
  }
  Status status = options.has_grid ? binding.kernel.launch(stream, call.values(), table.arg_count, selection, options.grid)
                                   : binding.kernel.launch(stream, call.values(), table.arg_count, selection);
  if (!status.ok()) raise(std::move(status));
  Py_RETURN_NONE;
}

// A call of a kernel object: arguments, then keywords (stream, variant, grid, config fields).
inline PyObject* kernel_call(KernelBinding& binding, PyObject* const* args, std::size_t nargs, PyObject* kwnames,
                             CallMode mode, const TimingOptions* timing = nullptr) {
  if (nargs != binding.table.arg_count) {
    const KeywordArgs given(binding, args, nargs, kwnames);
    return kernel_call(binding, given.values.data(), binding.table.arg_count, given.kwnames(), mode, timing);
  }
  check_arg_count(binding, nargs);
  CallArgs call(binding.table, args);
  CallOptions options;
  if (kwnames == nullptr || PyTuple_GET_SIZE(kwnames) == 0)
    return finish_call(binding, call, options, Selection::automatic(), mode, timing);
  FieldRequests fields(binding.table.field_count);
  read_keywords(binding, args + nargs, kwnames, options, fields.data());
  return finish_call(binding, call, options, call_selection(binding, options, fields.data()), mode, timing);
}

// A launcher made by <kernel>.bind(): the config (or variant) fixed once, checked against what was
// compiled; the variant is still chosen at every call from the arguments.
struct BoundLauncher {
  BoundLauncher(nb::handle kernel_object, KernelBinding& kernel_binding)
      : kernel(nb::borrow(kernel_object)),
        binding(kernel_binding),
        fields(kernel_binding.table.field_count),
        values(kernel_binding.table.field_count) {}

  Selection selection() const noexcept {
    if (has_variant) return Selection::variant(variant);
    if (has_config) return Selection::config(fields.data());
    return Selection::automatic();
  }

  nb::object kernel;                // the kernel object
  KernelBinding& binding;
  std::vector<FieldRequest> fields;  // per field; texts point into `values`
  std::vector<nb::object> values;    // per field, the value given to bind(), or null
  bool has_config = false;
  bool has_variant = false;
  std::size_t variant = 0;
};

// Fails unless some variant was compiled with every value `launcher` sets: names the first value
// that was not compiled, with the field's compiled values, or the combination, with those compiled.
// Values compare as Python compares them with the compiled ones (<kernel>_variants() shows those).
inline void check_bound_config(const BoundLauncher& launcher) {
  const KernelBinding& binding = launcher.binding;
  const table::KernelTable& table = binding.table;
  const auto text = [](nb::handle value) { return std::string(nb::repr(value).c_str()); };
  std::vector<std::size_t> set;
  std::vector<std::vector<std::uint16_t>> matching(table.field_count);  // per set field, its compiled values equal to the one given
  for (std::size_t f = 0; f < table.field_count; ++f) {
    if (!launcher.values[f].is_valid()) continue;
    set.push_back(f);
    const table::ConfigField& field = table.fields[f];
    std::string compiled;
    for (std::uint16_t i = 0; i < field.value_count; ++i) {
      const nb::object value = field_value(field, i);
      if (value.equal(launcher.values[f])) matching[f].push_back(i);
      compiled += (i ? ", " : "") + text(value);
    }
    if (matching[f].empty())
      throw nb::value_error((binding.name + ".bind(): " + field.name + "=" + text(launcher.values[f]) +
                             " was not compiled; compiled values: " + compiled).c_str());
  }
  const auto has = [&](const table::Variant& variant, std::size_t f) {
    return std::find(matching[f].begin(), matching[f].end(), variant.config[f]) != matching[f].end();
  };
  std::vector<std::string> combinations;  // of the set fields, as compiled
  for (std::size_t v = 0; v < table.variant_count; ++v) {
    const table::Variant& variant = table.variants[v];
    if (std::all_of(set.begin(), set.end(), [&](std::size_t f) { return has(variant, f); })) return;
    std::string combination;
    for (std::size_t f : set)
      combination += (combination.empty() ? "(" : ", ") + std::string(table.fields[f].name) + "=" +
                     text(field_value(table.fields[f], variant.config[f]));
    combination += ")";
    if (std::find(combinations.begin(), combinations.end(), combination) == combinations.end())
      combinations.push_back(combination);
  }
  std::string given, compiled;
  for (std::size_t f : set) given += (given.empty() ? "" : ", ") + std::string(table.fields[f].name) + "=" + text(launcher.values[f]);
  constexpr std::size_t kShown = 16;
  for (std::size_t c = 0; c < combinations.size() && c < kShown; ++c) compiled += (c ? ", " : "") + combinations[c];
  if (combinations.size() > kShown) compiled += ", and " + std::to_string(combinations.size() - kShown) + " more";
  throw nb::value_error((binding.name + ".bind(): no variant was compiled with " + given +
                         " together; compiled: " + compiled).c_str());
}

// bind(*, variant=None, **config): reads and checks the keywords into a new launcher.
inline std::unique_ptr<BoundLauncher> bind_launcher(nb::handle kernel_object, KernelBinding& binding,
                                                    std::size_t nargs, PyObject* const* values, PyObject* kwnames) {
  if (nargs != 0)
    throw nb::type_error((binding.name + ".bind() takes config keywords or " + binding.variant_keyword +
                          "=, not positional arguments").c_str());
  auto launcher = std::make_unique<BoundLauncher>(kernel_object, binding);
  const std::size_t count = kwnames != nullptr ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
  for (std::size_t k = 0; k < count; ++k) {
    PyObject* keyword = PyTuple_GET_ITEM(kwnames, static_cast<Py_ssize_t>(k));
    const std::int32_t slot = binding.find_slot(keyword);
    if (slot == kUnknownKeyword) throw binding.unknown_keyword(keyword);
    if (slot == kStreamKeyword || slot == kGridKeyword)
      throw nb::type_error((binding.name + ".bind(): " + nb::str(keyword).c_str() +
                            "= is given to each call of the bound launcher, not to bind()").c_str());
    nb::handle value(values[k]);
    if (value.is_none()) continue;
    if (slot == kVariantKeyword) {
      launcher->variant = variant_index_arg(binding, value, ".bind()");
      launcher->has_variant = true;
      continue;
    }
    launcher->fields[slot] = field_request(binding.table, binding.table.fields[slot], value);
    launcher->values[slot] = nb::borrow(value);  // holds a string field's text
    launcher->has_config = true;
  }
  if (launcher->has_variant && launcher->has_config)
    throw nb::type_error((binding.name + ".bind(): give either " + binding.variant_keyword +
                          "= or config keywords, not both").c_str());
  check_bound_config(*launcher);
  return launcher;
}

// A call of a bound launcher: arguments, then stream= and grid= only.
inline PyObject* bound_call(BoundLauncher& launcher, PyObject* const* args, std::size_t nargs, PyObject* kwnames,
                            CallMode mode, const TimingOptions* timing = nullptr) {
  KernelBinding& binding = launcher.binding;
  if (nargs < binding.table.arg_count) {
    const KeywordArgs given(binding, args, nargs, kwnames);
    return bound_call(launcher, given.values.data(), binding.table.arg_count, given.kwnames(), mode, timing);
  }
  check_arg_count(binding, nargs);
  CallArgs call(binding.table, args);
  CallOptions options;
  const std::size_t count = kwnames != nullptr ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
  for (std::size_t k = 0; k < count; ++k) {
    PyObject* keyword = PyTuple_GET_ITEM(kwnames, static_cast<Py_ssize_t>(k));
    const std::int32_t slot = binding.find_slot(keyword);
    if (slot != kStreamKeyword && slot != kGridKeyword)
      throw nb::type_error((binding.name + "(): a bound launcher takes " + binding.stream_keyword + "= and " +
                            binding.grid_keyword + "=, not " +
                            nb::str(keyword).c_str() + "= (bind() fixed its config)").c_str());
    read_option(binding, slot, args[nargs + k], options);
  }
  return finish_call(binding, call, options, launcher.selection(), mode, timing);
}

}  // namespace taot::python::detail
