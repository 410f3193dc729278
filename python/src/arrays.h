// taot._native, part 1: Python objects as kernel arguments: torch tensors (through DLPack's C exchange
// table when torch has one, else their attributes), __cuda_array_interface__ and __dlpack__ objects,
// tensor descriptors; the stream and device a launch goes to.
#pragma once


#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#if PY_VERSION_HEX < 0x03090000
#error "taot's Python modules need Python 3.9 or newer (vectorcall objects)"
#endif
#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "taot/dlpack.h"
#include "taot/driver_api.h"
#include "taot/runtime.h"
#include "taot/timing.h"
#include "taot/toolchain.h"


namespace taot::python {

namespace nb = nanobind;

namespace detail {

// Interned attribute names, made once.
inline PyObject* interned(const char* text) { return PyUnicode_InternFromString(text); }

// What taot needs from torch, looked up once torch has been imported by the program (taot never
// imports it). References are kept for the life of the process.
struct Torch {
  bool ready = false;
  PyTypeObject* tensor_type = nullptr;
  PyObject* raw_stream = nullptr;      // torch._C._cuda_getCurrentRawStream(device)
  PyObject* current_device = nullptr;  // torch._C._cuda_getDevice()
  std::vector<std::pair<PyObject*, taot_dtype>> dtypes;
};

inline Torch& torch() {
  static Torch state;
  if (state.ready) return state;
  PyObject* module = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
  if (module == nullptr) return state;
  nb::handle torch_module(module);
  try {
    state.tensor_type = reinterpret_cast<PyTypeObject*>(torch_module.attr("Tensor").inc_ref().ptr());
    nb::object c_module = torch_module.attr("_C");
    state.raw_stream = c_module.attr("_cuda_getCurrentRawStream").inc_ref().ptr();
    state.current_device = c_module.attr("_cuda_getDevice").inc_ref().ptr();
  } catch (const nb::python_error&) {
    return state;  // a torch without CUDA: tensors still convert, streams default to 0
  }
  const std::pair<const char*, taot_dtype> names[] = {
#define TAOT_TORCH_NAME(ENUM, name, value, bytes, dlpack_code, dlpack_bits, typestr, torch_name) \
  {torch_name, TAOT_DTYPE_##ENUM},
      TAOT_DTYPES(TAOT_TORCH_NAME)
#undef TAOT_TORCH_NAME
  };
  for (const auto& [name, dtype] : names) {
    if (PyObject_HasAttrString(module, name)) state.dtypes.emplace_back(torch_module.attr(name).inc_ref().ptr(), dtype);
  }
  state.ready = true;
  return state;
}

// __cuda_array_interface__ typestr -> dtype ("<f4" -> fp32); unknown for anything else.
inline taot_dtype dtype_of_typestr(const std::string& typestr) {
  static const std::pair<const char*, taot_dtype> kinds[] = {
#define TAOT_TYPESTR(ENUM, name, value, bytes, dlpack_code, dlpack_bits, typestr, torch_name) \
  {typestr, TAOT_DTYPE_##ENUM},
      TAOT_DTYPES(TAOT_TYPESTR)
#undef TAOT_TYPESTR
  };
  if (typestr.size() < 3) return TAOT_DTYPE_UNKNOWN;
  for (const auto& [kind, dtype] : kinds)
    if (kind[0] != '\0' && typestr.compare(1, std::string::npos, kind) == 0) return dtype;
  return TAOT_DTYPE_UNKNOWN;
}

// DLPack element type -> dtype; unknown for vectors (lanes > 1) and types taot has no name for.
inline taot_dtype dtype_of_dlpack(dlpack::DataType type) {
  if (type.lanes != 1) return TAOT_DTYPE_UNKNOWN;
#define TAOT_DLPACK_TYPE(ENUM, name, value, bytes, dlpack_code, dlpack_bits, typestr, torch_name) \
  if (type.code == dlpack::dlpack_code && type.bits == dlpack_bits) return TAOT_DTYPE_##ENUM;
  TAOT_DTYPES(TAOT_DLPACK_TYPE)
#undef TAOT_DLPACK_TYPE
  return TAOT_DTYPE_UNKNOWN;
}

// The DLPack exchange table of a Python type (`type.__dlpack_c_exchange_api__`, torch >= 2.10),
// or null. Looked up once per type; types are kept alive by the cache. Needs the GIL.
inline const dlpack::ExchangeApi* exchange_api(PyTypeObject* type) {
  static PyObject* const attribute = interned("__dlpack_c_exchange_api__");
  static std::vector<std::pair<PyTypeObject*, const dlpack::ExchangeApi*>> known;
  for (const auto& [known_type, api] : known)
    if (known_type == type) return api;
  const dlpack::ExchangeApi* found = nullptr;
  if (PyObject* capsule = PyObject_GetAttr(reinterpret_cast<PyObject*>(type), attribute)) {
    if (PyCapsule_IsValid(capsule, "dlpack_exchange_api")) {
      // Walk to a table of major version 1, the layout declared in taot/dlpack.h.
      auto* header = static_cast<dlpack::ExchangeApiHeader*>(PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
      while (header != nullptr && header->version.major > 1) header = header->prev_api;
      const auto* api = reinterpret_cast<const dlpack::ExchangeApi*>(header);
      if (api != nullptr && api->header.version.major == 1 && api->dltensor_from_py_object_no_sync != nullptr &&
          api->current_work_stream != nullptr)
        found = api;  // DLPack: the table lives as long as the process
    }
    Py_DECREF(capsule);
  } else {
    PyErr_Clear();
  }
  constexpr std::size_t kMaxCachedTypes = 64;
  if (known.size() < kMaxCachedTypes) {
    Py_INCREF(type);
    known.emplace_back(type, found);
  }
  return found;
}

inline std::string prefix(const table::KernelTable& table, const table::Arg& arg) {
  return std::string(table.library) + "." + table.name + ": " + arg.name + ": ";
}

inline std::string shape_text(const std::int64_t* shape, std::int32_t ndim) {
  std::string text = "(";
  for (std::int32_t d = 0; d < ndim; ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + (ndim == 1 ? ",)" : ")");
}

// "(8, 8)" for a shape given as a Python sequence of ints (a tuple, torch.Size).
inline std::string shape_text(nb::handle sequence) {
  std::vector<std::int64_t> shape;
  for (nb::handle extent : sequence) shape.push_back(nb::cast<std::int64_t>(extent));
  return shape_text(shape.data(), static_cast<std::int32_t>(shape.size()));
}

// Where a launch goes, learned from its array arguments: the CUDA device they live on and how to
// find the caller's current stream there.
struct LaunchSite {
  std::int32_t device = -1;                           // -1: no argument said
  const char* device_arg = "";                        // the argument that set `device` (the table's name)
  const dlpack::ExchangeApi* stream_api = nullptr;    // a framework that knows the current stream
  bool legacy_torch = false;                          // a torch tensor read through its attributes
  std::vector<std::pair<std::size_t, nb::handle>> deferred;  // __dlpack__() objects, read once the stream is known
};

// Checks that an array on `device_type`:`device_id` can be argument `arg`, and records its device.
inline void check_device(const table::KernelTable& table, const table::Arg& arg, std::int32_t device_type,
                         std::int32_t device_id, LaunchSite& site) {
  if (device_type == dlpack::kCPU || device_type == dlpack::kCUDAHost)
    throw nb::value_error((prefix(table, arg) + "the array is in host memory; taot kernels take CUDA arrays").c_str());
  if (device_type != dlpack::kCUDA && device_type != dlpack::kCUDAManaged)
    throw nb::value_error((prefix(table, arg) + "the array is on a DLPack device of type " +
                           std::to_string(device_type) + ", not a CUDA device").c_str());
  if (site.device < 0) {
    site.device = device_id;
    site.device_arg = arg.name;
  } else if (site.device != device_id) {
    throw nb::value_error((prefix(table, arg) + "the array is on cuda:" + std::to_string(device_id) + " but " +
                           std::string(site.device_arg) + " is on cuda:" + std::to_string(site.device)).c_str());
  }
}

// The error for an array of another rank than the spec's `rank = N` (callers compare first, so
// that the shape text is only made for the message).
[[noreturn]] inline void throw_wrong_rank(const table::KernelTable& table, const table::Arg& arg,
                                          const std::string& shape) {
  throw nb::value_error((prefix(table, arg) + "expected a " + std::to_string(arg.rank) + "-D array, got shape " +
                         shape).c_str());
}

// A pointer argument from a DLPack view.
inline taot_arg view_arg(const table::KernelTable& table, const table::Arg& arg, const dlpack::Tensor& view,
                         LaunchSite& site) {
  check_device(table, arg, view.device.device_type, view.device.device_id, site);
  taot_arg value{};
  value.dtype = dtype_of_dlpack(view.dtype);
  if (value.dtype == TAOT_DTYPE_UNKNOWN)
    throw nb::type_error((prefix(table, arg) + "arrays of DLPack type (code " + std::to_string(view.dtype.code) +
                          ", " + std::to_string(view.dtype.bits) + " bits, " + std::to_string(view.dtype.lanes) +
                          " lanes) are not supported").c_str());
  if (arg.rank != 0 && view.ndim != arg.rank) throw_wrong_rank(table, arg, shape_text(view.shape, view.ndim));
  value.address = reinterpret_cast<std::uintptr_t>(view.data) + view.byte_offset;
  return value;
}

// A torch tensor read through its Python attributes (torch without the DLPack exchange table).
inline taot_arg torch_attribute_arg(const table::KernelTable& table, const table::Arg& arg, nb::handle object) {
  static PyObject* const data_ptr = interned("data_ptr");
  static PyObject* const is_cuda = interned("is_cuda");
  static PyObject* const dtype_name = interned("dtype");
  static PyObject* const shape_name = interned("shape");
  nb::object on_cuda = nb::steal(PyObject_GetAttr(object.ptr(), is_cuda));
  if (!on_cuda.is_valid()) throw nb::python_error();
  if (!PyObject_IsTrue(on_cuda.ptr()))
    throw nb::value_error((prefix(table, arg) + "the array is in host memory; taot kernels take CUDA arrays").c_str());
  taot_arg value{};
  nb::object dtype = nb::steal(PyObject_GetAttr(object.ptr(), dtype_name));
  if (!dtype.is_valid()) throw nb::python_error();
  value.dtype = TAOT_DTYPE_UNKNOWN;
  for (const auto& [torch_dtype, taot_type] : torch().dtypes)
    if (torch_dtype == dtype.ptr()) value.dtype = taot_type;
  if (value.dtype == TAOT_DTYPE_UNKNOWN)
    throw nb::type_error((prefix(table, arg) + "tensors of " + nb::str(dtype).c_str() + " are not supported").c_str());
  if (arg.rank != 0) {
    nb::tuple shape = nb::steal<nb::tuple>(PyObject_GetAttr(object.ptr(), shape_name));
    if (!shape.is_valid()) throw nb::python_error();
    if (shape.size() != arg.rank) throw_wrong_rank(table, arg, shape_text(shape));
  }
  nb::object address = nb::steal(PyObject_CallMethodNoArgs(object.ptr(), data_ptr));
  if (!address.is_valid()) throw nb::python_error();
  value.address = PyLong_AsUnsignedLongLong(address.ptr());
  return value;
}

// An object with __cuda_array_interface__ (version 2 or 3; its "stream" entry is not waited on).
inline taot_arg array_interface_arg(const table::KernelTable& table, const table::Arg& arg, nb::handle interface) {
  taot_arg value{};
  try {
    nb::dict description = nb::cast<nb::dict>(interface);
    nb::tuple data = nb::cast<nb::tuple>(description["data"]);
    value.address = nb::cast<std::uint64_t>(data[0]);
    value.dtype = dtype_of_typestr(nb::cast<std::string>(description["typestr"]));
    if (arg.rank != 0) {
      nb::tuple shape = nb::cast<nb::tuple>(description["shape"]);
      if (shape.size() != arg.rank) throw_wrong_rank(table, arg, shape_text(shape));
    }
  } catch (const nb::builtin_exception&) {
    throw;
  } catch (const std::exception&) {
    throw nb::type_error((prefix(table, arg) + "its __cuda_array_interface__ lacks data, typestr or shape").c_str());
  }
  if (value.dtype == TAOT_DTYPE_UNKNOWN)
    throw nb::type_error((prefix(table, arg) + "its __cuda_array_interface__ typestr is not a dtype taot knows").c_str());
  return value;
}

// A pointer argument: None (a null pointer, for an argument of one dtype), an array of a framework
// with the DLPack exchange table (torch >= 2.10: the fast path), a torch tensor, an object with
// __cuda_array_interface__, or one with __dlpack__ (left in `site.deferred`: read by dlpack_arg()
// once the stream is known).
inline taot_arg pointer_arg(const table::KernelTable& table, std::size_t index, nb::handle object, LaunchSite& site) {
  static PyObject* const cuda_array_interface = interned("__cuda_array_interface__");
  static PyObject* const dlpack_method = interned("__dlpack__");
  static PyObject* const array_interface = interned("__array_interface__");
  const table::Arg& arg = table.args[index];
  taot_arg value{};
  if (object.is_none()) {
    // A null pointer: for an argument with variants compiled with it None, it selects them (its
    // dtype does not matter). Otherwise (vLLM passes None for the scales of a bf16 GEMM, which the
    // chosen variant does not read) it is a pointer of the argument's dtype, which must then be
    // unambiguous.
    if (arg.none) {
      value.dtype = arg.types[0];
      return value;
    }
    if (arg.type_count != 1) {
      std::string types;
      for (std::uint16_t t = 0; t < arg.type_count; ++t)
        types += (t ? ", " : "") + std::string(taot::dtype_name(static_cast<DType>(arg.types[t])));
      throw nb::type_error((prefix(table, arg) + "None is accepted only for pointers of one dtype; this one takes " +
                            types).c_str());
    }
    value.dtype = arg.types[0];
    return value;
  }
  if (const dlpack::ExchangeApi* api = exchange_api(Py_TYPE(object.ptr()))) {
    dlpack::Tensor view{};
    if (api->dltensor_from_py_object_no_sync(object.ptr(), &view) != 0) throw nb::python_error();
    value = view_arg(table, arg, view, site);
    if (site.stream_api == nullptr) site.stream_api = api;
    return value;
  }
  const Torch& torch_state = torch();
  if (torch_state.tensor_type != nullptr && PyObject_TypeCheck(object.ptr(), torch_state.tensor_type)) {
    site.legacy_torch = true;
    return torch_attribute_arg(table, arg, object);
  }
  if (nb::object interface = nb::steal(PyObject_GetAttr(object.ptr(), cuda_array_interface)); interface.is_valid())
    return array_interface_arg(table, arg, interface);
  PyErr_Clear();
  if (PyObject_HasAttr(object.ptr(), dlpack_method)) {
    site.deferred.emplace_back(index, object);
    return value;
  }
  const std::string type_name = nb::type_name(object.type()).c_str();
  if (PyObject_HasAttr(object.ptr(), array_interface))
    throw nb::value_error((prefix(table, arg) + "a " + type_name + " in host memory; taot kernels take CUDA arrays").c_str());
  throw nb::type_error((prefix(table, arg) + "expected a CUDA array (a torch tensor, or an object with __dlpack__ or "
                        "__cuda_array_interface__), got " + type_name).c_str());
}

// Reads an object through the DLPack protocol, asking its producer to order its pending work
// before `stream` (the stream the kernel will run on). The capsule is never renamed, so its
// producer keeps ownership and frees it when the capsule goes; the caller holds the object.
inline taot_arg dlpack_arg(const table::KernelTable& table, const table::Arg& arg, nb::handle object, CUstream stream,
                           LaunchSite& site) {
  nb::tuple device = nb::cast<nb::tuple>(object.attr("__dlpack_device__")());
  check_device(table, arg, nb::cast<std::int32_t>(device[0]), nb::cast<std::int32_t>(device[1]), site);
  // DLPack's stream numbers: 1 is the legacy default stream (CUDA's null stream), 2 the per-thread
  // one; any other value is the stream itself.
  const std::uintptr_t stream_number = stream == nullptr ? 1 : reinterpret_cast<std::uintptr_t>(stream);
  nb::object capsule;
  try {
    capsule = object.attr("__dlpack__")(nb::arg("stream") = stream_number,
                                         nb::arg("max_version") = nb::make_tuple(1, 3));
  } catch (const nb::python_error& error) {
    if (!error.matches(PyExc_TypeError)) throw;
    capsule = object.attr("__dlpack__")(nb::arg("stream") = stream_number);  // a producer older than DLPack 1.0
  }
  const dlpack::Tensor* view = nullptr;
  if (PyCapsule_IsValid(capsule.ptr(), "dltensor_versioned")) {
    auto* managed = static_cast<dlpack::ManagedTensorVersioned*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor_versioned"));
    if (managed->version.major != 1)
      throw nb::type_error((prefix(table, arg) + "its __dlpack__() gave DLPack version " +
                            std::to_string(managed->version.major) + ", taot reads version 1").c_str());
    view = &managed->dl_tensor;
  } else if (PyCapsule_IsValid(capsule.ptr(), "dltensor")) {
    view = &static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"))->dl_tensor;
  } else {
    throw nb::type_error((prefix(table, arg) + "its __dlpack__() did not return a DLPack capsule").c_str());
  }
  return view_arg(table, arg, *view, site);
}

// The address, dtype, shape and strides (in elements) of an array a descriptor is made over.
struct ArrayView {
  std::uint64_t address = 0;
  taot_dtype dtype = TAOT_DTYPE_UNKNOWN;
  std::vector<std::int64_t> shape, strides;
};

// Reads `object` for a descriptor argument: an array of a framework with the DLPack exchange
// table, a torch tensor, or an object with __cuda_array_interface__ (objects with only __dlpack__
// are not read here: their capsule needs the launch stream, known only later).
inline ArrayView descriptor_array(const table::KernelTable& table, const table::Arg& arg, nb::handle object,
                                  LaunchSite& site) {
  static PyObject* const cuda_array_interface = interned("__cuda_array_interface__");
  table::Arg any_rank = arg;  // the array readers check a pointer's rank; a base array has any
  any_rank.rank = 0;
  ArrayView array;
  if (const dlpack::ExchangeApi* api = exchange_api(Py_TYPE(object.ptr()))) {
    dlpack::Tensor view{};
    if (api->dltensor_from_py_object_no_sync(object.ptr(), &view) != 0) throw nb::python_error();
    const taot_arg pointer = view_arg(table, any_rank, view, site);
    if (site.stream_api == nullptr) site.stream_api = api;
    array.address = pointer.address;
    array.dtype = static_cast<taot_dtype>(pointer.dtype);
    array.shape.assign(view.shape, view.shape + view.ndim);
    if (view.strides != nullptr) {
      array.strides.assign(view.strides, view.strides + view.ndim);
    } else {
      array.strides.assign(static_cast<std::size_t>(view.ndim), 1);
      for (std::int32_t d = view.ndim - 1; d > 0; --d) array.strides[d - 1] = array.strides[d] * view.shape[d];
    }
    return array;
  }
  const Torch& torch_state = torch();
  if (torch_state.tensor_type != nullptr && PyObject_TypeCheck(object.ptr(), torch_state.tensor_type)) {
    site.legacy_torch = true;
    const taot_arg pointer = torch_attribute_arg(table, any_rank, object);
    array.address = pointer.address;
    array.dtype = static_cast<taot_dtype>(pointer.dtype);
    for (nb::handle extent : object.attr("shape")) array.shape.push_back(nb::cast<std::int64_t>(extent));
    for (nb::handle stride : object.attr("stride")()) array.strides.push_back(nb::cast<std::int64_t>(stride));
    return array;
  }
  if (nb::object interface = nb::steal(PyObject_GetAttr(object.ptr(), cuda_array_interface)); interface.is_valid()) {
    const taot_arg pointer = array_interface_arg(table, any_rank, interface);
    array.address = pointer.address;
    array.dtype = static_cast<taot_dtype>(pointer.dtype);
    nb::dict description = nb::cast<nb::dict>(interface);
    for (nb::handle extent : nb::cast<nb::tuple>(description["shape"])) array.shape.push_back(nb::cast<std::int64_t>(extent));
    const auto element = static_cast<std::int64_t>(dtype_size(static_cast<DType>(array.dtype)));
    if (description.contains("strides") && !description["strides"].is_none()) {
      for (nb::handle stride : nb::cast<nb::tuple>(description["strides"])) {
        const auto bytes = nb::cast<std::int64_t>(stride);
        if (bytes % element != 0)
          throw nb::value_error((prefix(table, arg) + "a stride of " + std::to_string(bytes) +
                                 " bytes is not a whole number of elements").c_str());
        array.strides.push_back(bytes / element);
      }
    } else {
      array.strides.assign(array.shape.size(), 1);
      for (std::size_t d = array.shape.size(); d > 1; --d) array.strides[d - 2] = array.strides[d - 1] * array.shape[d - 1];
    }
    return array;
  }
  PyErr_Clear();
  throw nb::type_error((prefix(table, arg) + "expected a tensor descriptor (an object with base, shape, strides and "
                        "block_shape, such as triton.tools.tensor_descriptor.TensorDescriptor) or a CUDA array (a "
                        "torch tensor or an object with __cuda_array_interface__), got " +
                        nb::type_name(object.type()).c_str()).c_str());
}

// `count` ints from a Python sequence attribute of a descriptor object, named in errors.
inline void descriptor_ints(const table::KernelTable& table, const table::Arg& arg, nb::handle sequence,
                            const char* what, std::int64_t* out) {
  std::size_t count = 0;
  for (nb::handle item : sequence) {
    if (count == arg.rank) break;
    out[count++] = nb::cast<std::int64_t>(item);
  }
  if (count != arg.rank || nb::len(sequence) != arg.rank)
    throw nb::value_error((prefix(table, arg) + "the descriptor's " + what + " has " +
                           std::to_string(nb::len(sequence)) + " entries; the kernel takes a rank " +
                           std::to_string(arg.rank) + " descriptor").c_str());
}

// A descriptor argument: a TensorDescriptor-like object (base array, shape, strides, block_shape,
// padding "zero" or "nan"; its block_shape selects variants compiled for that block) or a CUDA
// array (a descriptor over the whole array, the block of the selected variant, zero padding).
inline void descriptor_arg(const table::KernelTable& table, const table::Arg& arg, nb::handle object,
                           LaunchSite& site, taot_tensordesc& desc) {
  static PyObject* const base_name = interned("base");
  static PyObject* const block_shape_name = interned("block_shape");
  desc = taot_tensordesc{};
  desc.rank = arg.rank;
  if (PyObject_HasAttr(object.ptr(), block_shape_name) && PyObject_HasAttr(object.ptr(), base_name)) {
    const ArrayView base = descriptor_array(table, arg, object.attr("base"), site);
    desc.base = base.address;
    desc.dtype = base.dtype;
    descriptor_ints(table, arg, object.attr("shape"), "shape", desc.shape);
    descriptor_ints(table, arg, object.attr("strides"), "strides", desc.strides);
    std::int64_t block[TAOT_TENSORDESC_MAX_RANK] = {};
    descriptor_ints(table, arg, object.attr("block_shape"), "block_shape", block);
    for (std::uint8_t d = 0; d < arg.rank; ++d) desc.block_shape[d] = static_cast<std::int32_t>(block[d]);
    const std::string padding = nb::hasattr(object, "padding") ? nb::cast<std::string>(nb::str(object.attr("padding")))
                                                               : std::string("zero");
    if (padding != "zero" && padding != "nan")
      throw nb::value_error((prefix(table, arg) + "padding \"" + padding + "\"; expected \"zero\" or \"nan\"").c_str());
    desc.padding = padding == "nan" ? TAOT_PADDING_NAN : TAOT_PADDING_ZERO;
    return;
  }
  const ArrayView array = descriptor_array(table, arg, object, site);
  if (array.shape.size() != arg.rank)
    throw nb::value_error((prefix(table, arg) + "expected a " + std::to_string(arg.rank) +
                           "-D array (the descriptor's rank), got shape " +
                           shape_text(array.shape.data(), static_cast<std::int32_t>(array.shape.size()))).c_str());
  desc.base = array.address;
  desc.dtype = array.dtype;
  for (std::uint8_t d = 0; d < arg.rank; ++d) {
    desc.shape[d] = array.shape[d];
    desc.strides[d] = array.strides[d];
  }
}

// What a call's Python arguments become: the taot_arg values, where the arrays live, and the
// descriptor values the taot_args point to (the first few here, the rest in a vector sized once,
// so that the values may point into both).
struct Conversion {
  explicit Conversion(taot_arg* converted) : values(converted) {}
  taot_arg* values;
  LaunchSite site;
  static constexpr std::size_t kInlineDescriptors = 4;
  taot_tensordesc inline_descriptors[kInlineDescriptors];
  std::vector<taot_tensordesc> more_descriptors;
  std::size_t descriptor_count = 0;

  taot_tensordesc& next_descriptor(std::size_t arg_count) {
    const std::size_t d = descriptor_count++;
    if (d < kInlineDescriptors) return inline_descriptors[d];
    if (more_descriptors.empty()) more_descriptors.resize(arg_count);
    return more_descriptors[d - kInlineDescriptors];
  }
};

// Whether the op declares argument `arg` (an array: pointer or descriptor) as written: the spec's
// outputs, or every array when the spec names none (taot cannot tell which a kernel stores through).
inline bool written_array(const table::KernelTable& table, const table::Arg& arg) {
  for (std::size_t a = 0; a < table.arg_count; ++a)
    if (table.args[a].output) return arg.output;
  return true;
}

// "Tensor" or, for a written array argument number `index`, "Tensor(w<index>!)".
inline std::string tensor_schema(const table::KernelTable& table, std::size_t index) {
  return written_array(table, table.args[index]) ? "Tensor(w" + std::to_string(index) + "!)" : std::string("Tensor");
}

}  // namespace detail
}  // namespace taot::python
