// Python bindings of generated libraries (nanobind, header-only): a generated <lib>_python.cpp
// calls bind_kernel() once per kernel. A kernel is a callable object of its own type, called
// through vectorcall (no tuple or dict per call; config keywords matched by pointer and resolved
// once per set of names and values), with bind() for a launcher whose config is resolved once,
// choose(), variants() and run-time tuned tables. Arrays are torch tensors (read through DLPack's
// C exchange table when torch has one, else through their attributes; no build-time dependency on
// torch) or any object with __cuda_array_interface__ or __dlpack__; tensor-descriptor arguments
// take TensorDescriptor-like objects or whole arrays; launches go to the caller's current torch
// stream unless `stream=` says otherwise; errors become Python exceptions carrying the runtime's
// message. Functions hold the GIL (launches are short; time(), which runs a timing loop of
// taot/timing.h, lets it go while it times) and are thread-safe. Needs Python 3.9.
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
    doc = kernel_doc();
  }

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
// BLOCK=128)`): `values` holds every argument in order, then the values of the other keywords,
// which `kwnames()` names. Only calls with fewer positional arguments than the kernel takes come
// here: a call that gives them all in order pays nothing for it.
struct KeywordArgs {
  KeywordArgs(const KernelBinding& binding, PyObject* const* args, std::size_t nargs, PyObject* kwnames) {
    const table::KernelTable& table = binding.table;
    values.assign(args, args + nargs);
    values.resize(table.arg_count, nullptr);
    const std::size_t count = kwnames != nullptr ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
    std::vector<PyObject*> kept_names, kept_values;
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
    values.insert(values.end(), kept_values.begin(), kept_values.end());
    names = keyword_names(kept_names);
  }
  PyObject* kwnames() const noexcept { return names.is_valid() ? names.ptr() : nullptr; }

  std::vector<PyObject*> values;
  nb::object names;
};

// What a call does once its arguments and keywords are read: launch, say which variant a
// launch would use and which step chose it, or time launches.
enum class CallMode { launch, choose, time };

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
  if (nargs < binding.table.arg_count) {
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

// ---------------------------------------------------------------------------------------------
// time(): the call's own keywords plus the timing options of taot/timing.h (TAOT_TIMING_OPTIONS,
// same names and defaults), which are taken out before the call's keywords are read as usual.
// ---------------------------------------------------------------------------------------------

inline void read_timing_value(nb::handle item, double& value, const std::string& what) {
  value = PyFloat_AsDouble(item.ptr());
  if (value == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw nb::type_error((what + " takes a number, got " + nb::type_name(item.type()).c_str()).c_str());
  }
}
inline void read_timing_value(nb::handle item, std::int64_t& value, const std::string& what) {
  value = int64_of(item, [&] { return what; });
}
inline void read_timing_value(nb::handle item, bool& value, const std::string& what) {
  const int truth = PyObject_IsTrue(item.ptr());
  if (truth < 0) {
    PyErr_Clear();
    throw nb::type_error((what + " takes a bool, got " + nb::type_name(item.type()).c_str()).c_str());
  }
  value = truth != 0;
}

// A timing option as Python writes its default ("25", "True").
inline std::string python_default(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}
inline std::string python_default(std::int64_t value) { return std::to_string(value); }
inline std::string python_default(bool value) { return value ? "True" : "False"; }

// The timing keywords, interned once, each with how it sets its option.
struct TimingKeyword {
  nb::object name;
  void (*read)(nb::handle value, TimingOptions& options, const std::string& call);
};

inline const std::vector<TimingKeyword>& timing_keywords() {
  static const std::vector<TimingKeyword>* const keywords = [] {
    auto* list = new std::vector<TimingKeyword>();  // lives as long as the process
#define TAOT_TIMING_KEYWORD(type, name, default_value)                                         \
  list->push_back(TimingKeyword{nb::steal(interned(#name)),                                   \
                                [](nb::handle value, TimingOptions& options, const std::string& call) { \
                                  read_timing_value(value, options.name, call + ": " #name "="); \
                                }});
    TAOT_TIMING_OPTIONS(TAOT_TIMING_KEYWORD)
#undef TAOT_TIMING_KEYWORD
    return list;
  }();
  return *keywords;
}

// "warmup_ms=25, reps=0, ...": the timing keywords as time()'s signature shows them.
inline std::string timing_signature() {
  std::string text;
  const TimingOptions defaults;
#define TAOT_TIMING_SIGNATURE(type, name, default_value) \
  text += std::string(text.empty() ? "" : ", ") + #name "=" + python_default(defaults.name);
  TAOT_TIMING_OPTIONS(TAOT_TIMING_SIGNATURE)
#undef TAOT_TIMING_SIGNATURE
  return text;
}

// A time() call: the timing keywords read into `options`, the other arguments and keywords laid
// out again as vectorcall passes them (arguments, then the remaining keywords' values, named by
// `names`), for the call path every launch takes. A keyword that is neither a timing keyword nor
// one of the kernel's is refused here, naming both lists.
struct TimingCall {
  TimingOptions options;
  std::vector<PyObject*> values;
  nb::object names;  // a tuple, or null when no other keyword is left

  TimingCall(const KernelBinding& binding, PyObject* const* args, std::size_t nargs, PyObject* kwnames) {
    const std::string call = binding.name + ".time()";
    values.assign(args, args + nargs);
    const std::size_t count = kwnames != nullptr ? static_cast<std::size_t>(PyTuple_GET_SIZE(kwnames)) : 0;
    std::vector<PyObject*> kept;
    for (std::size_t k = 0; k < count; ++k) {
      PyObject* keyword = PyTuple_GET_ITEM(kwnames, static_cast<Py_ssize_t>(k));
      const TimingKeyword* timing = find(keyword);
      if (timing != nullptr) {
        if (args[nargs + k] != Py_None) timing->read(nb::handle(args[nargs + k]), options, call);
        continue;
      }
      if (binding.find_slot(keyword) == kUnknownKeyword) {
        std::string known;
        for (const TimingKeyword& entry : timing_keywords()) known += std::string(known.empty() ? "" : ", ") + nb::str(entry.name).c_str();
        for (const auto& entry : binding.keywords) known += std::string(", ") + nb::str(entry.first).c_str();
        throw nb::type_error((call + ": unknown keyword '" + nb::str(keyword).c_str() + "'; the keywords are: " +
                              known).c_str());
      }
      kept.push_back(keyword);
      values.push_back(args[nargs + k]);
    }
    names = keyword_names(kept);
  }
  PyObject* kwnames() const noexcept { return names.is_valid() ? names.ptr() : nullptr; }

 private:
  static const TimingKeyword* find(PyObject* keyword) {
    for (const TimingKeyword& timing : timing_keywords())
      if (timing.name.ptr() == keyword) return &timing;
    for (const TimingKeyword& timing : timing_keywords())  // a name made at run time: compare the text
      if (PyUnicode_Compare(keyword, timing.name.ptr()) == 0) return &timing;
    return nullptr;
  }
};

// C++ exceptions as Python errors, for the functions Python calls directly.
template <class Body>
PyObject* guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (nb::python_error& error) {
    error.restore();
  } catch (const nb::builtin_exception& error) {
    PyObject* type = PyExc_RuntimeError;
    switch (error.type()) {
      case nb::exception_type::type_error: type = PyExc_TypeError; break;
      case nb::exception_type::value_error: type = PyExc_ValueError; break;
      case nb::exception_type::index_error: type = PyExc_IndexError; break;
      case nb::exception_type::key_error: type = PyExc_KeyError; break;
      case nb::exception_type::attribute_error: type = PyExc_AttributeError; break;
      default: break;
    }
    PyErr_SetString(type, error.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
  return nullptr;
}

// The Python objects: a kernel (<lib>.<kernel>) and a bound launcher (<lib>.<kernel>.bind(...)),
// both called through vectorcall.
struct KernelObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  KernelBinding* binding;  // lives as long as the process
};

struct BoundObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  BoundLauncher* launcher;  // owned
};

inline KernelBinding& binding_of(PyObject* self) { return *reinterpret_cast<KernelObject*>(self)->binding; }
inline BoundLauncher& launcher_of(PyObject* self) { return *reinterpret_cast<BoundObject*>(self)->launcher; }

template <class Function>
PyCFunction as_method(Function function) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(function));
}

inline PyObject* kernel_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  return guarded([&] {
    return kernel_call(binding_of(self), args, static_cast<std::size_t>(PyVectorcall_NARGS(nargsf)), kwnames,
                       CallMode::launch);
  });
}

inline PyObject* kernel_choose(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    return kernel_call(binding_of(self), args, static_cast<std::size_t>(nargs), kwnames, CallMode::choose);
  });
}

inline PyObject* kernel_time(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    KernelBinding& binding = binding_of(self);
    const TimingCall timing(binding, args, static_cast<std::size_t>(nargs), kwnames);
    return kernel_call(binding, timing.values.data(), static_cast<std::size_t>(nargs), timing.kwnames(),
                       CallMode::time, &timing.options);
  });
}

inline PyTypeObject* bound_type();

inline PyObject* bound_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  return guarded([&] {
    return bound_call(launcher_of(self), args, static_cast<std::size_t>(PyVectorcall_NARGS(nargsf)), kwnames,
                      CallMode::launch);
  });
}

inline PyObject* kernel_bind(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    std::unique_ptr<BoundLauncher> launcher =
        bind_launcher(self, binding_of(self), static_cast<std::size_t>(nargs), args + nargs, kwnames);
    PyTypeObject* type = bound_type();
    PyObject* object = type->tp_alloc(type, 0);
    if (object == nullptr) throw nb::python_error();
    auto* bound = reinterpret_cast<BoundObject*>(object);
    bound->vectorcall = bound_vectorcall;
    bound->launcher = launcher.release();
    return object;
  });
}

inline PyObject* kernel_variants(PyObject* self, PyObject*);

inline PyObject* kernel_load_tuning(PyObject* self, PyObject* args, PyObject* kwargs) {
  return guarded([&]() -> PyObject* {
    static const char* keywords[] = {"path", "device", nullptr};
    PyObject* path = nullptr;
    PyObject* device = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:load_tuning", const_cast<char**>(keywords), &path, &device))
      return nullptr;
    nb::object file = nb::steal(PyOS_FSPath(path));
    if (!file.is_valid()) throw nb::python_error();
    nb::object bytes = PyBytes_Check(file.ptr()) ? file : nb::steal(PyUnicode_EncodeFSDefault(file.ptr()));
    if (!bytes.is_valid()) throw nb::python_error();
    std::string device_name;
    if (device != Py_None) {
      if (!PyUnicode_Check(device))
        throw nb::type_error((binding_of(self).name + ".load_tuning(): device= takes a str (the GPU's name) or None, got " +
                              nb::type_name(nb::handle(device).type()).c_str()).c_str());
      device_name = nb::cast<std::string>(nb::handle(device));
    }
    Status status = binding_of(self).kernel.load_tuning(std::string(PyBytes_AS_STRING(bytes.ptr()),
                                                                    static_cast<std::size_t>(PyBytes_GET_SIZE(bytes.ptr()))),
                                                        device_name);
    if (!status.ok()) raise(std::move(status));
    Py_RETURN_NONE;
  });
}

inline PyObject* kernel_reset_tuning(PyObject* self, PyObject*) {
  return guarded([&]() -> PyObject* {
    Status status = binding_of(self).kernel.reset_tuning();
    if (!status.ok()) raise(std::move(status));
    Py_RETURN_NONE;
  });
}

inline PyObject* bound_choose(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    return bound_call(launcher_of(self), args, static_cast<std::size_t>(nargs), kwnames, CallMode::choose);
  });
}

inline PyObject* bound_time(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    BoundLauncher& launcher = launcher_of(self);
    const TimingCall timing(launcher.binding, args, static_cast<std::size_t>(nargs), kwnames);
    return bound_call(launcher, timing.values.data(), static_cast<std::size_t>(nargs), timing.kwnames(),
                      CallMode::time, &timing.options);
  });
}

// time()'s docstring, for a kernel (`call_keywords`: "stream=None, variant=None, grid=None,
// **config") or a bound launcher ("stream=None, grid=None").
inline std::string time_doc(const std::string& call_keywords) {
  return "time(*args, " + timing_signature() + ", " + call_keywords +
         ")\n--\n\n"
         "Times launches with these arguments (as a call takes them) in C++, without Python between "
         "launches: warm-up for warmup_ms of GPU time, then `reps` timed reps (0: as many as fit in rep_ms), "
         "each of launches_per_rep launches (or one CUDA-graph replay of them, graph=True) between two CUDA "
         "events, the L2 flushed before every rep (flush_l2) outside the events. Returns a dict: ms (per "
         "launch, one per rep), min, p20, median, p80, max, mean, reps, warmup_reps, warmup_ms, flush_bytes, "
         "variant and step. Releases the GIL while it times; the stream must not be capturing.";
}

// Objects live as long as their module; a bound launcher owns its C++ state.
inline void object_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

inline void bound_dealloc(PyObject* self) {
  delete reinterpret_cast<BoundObject*>(self)->launcher;
  object_dealloc(self);
}

inline PyObject* text_object(const std::string& text) { return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size())); }

// The config a launcher was bound with: {field: value} for the fields bind() set.
inline nb::dict bound_config(const BoundLauncher& launcher) {
  nb::dict config;
  for (std::size_t f = 0; f < launcher.values.size(); ++f)
    if (launcher.values[f].is_valid()) config[launcher.binding.table.fields[f].name] = launcher.values[f];
  return config;
}

inline PyObject* bound_repr(PyObject* self) {
  return guarded([&] {
    const BoundLauncher& launcher = launcher_of(self);
    std::string text = "<" + launcher.binding.name + ".bind(";
    if (launcher.has_variant) text += "variant=" + std::to_string(launcher.variant);
    bool first = true;
    for (auto [name, value] : bound_config(launcher)) {
      text += (first ? "" : ", ") + std::string(nb::str(name).c_str()) + "=" + nb::repr(value).c_str();
      first = false;
    }
    return text_object(text + ")>");
  });
}

#if PY_VERSION_HEX < 0x030C0000
#define TAOT_PY_T_PYSSIZET T_PYSSIZET
#define TAOT_PY_READONLY READONLY
#else
#define TAOT_PY_T_PYSSIZET Py_T_PYSSIZET
#define TAOT_PY_READONLY Py_READONLY
#endif

// A callable heap type (vectorcall at `vectorcall_offset`), made once per module; instances are
// made by this header only. `methods` and `attributes` must live as long as the type.
inline PyTypeObject* make_type(const char* name, std::size_t size, std::size_t vectorcall_offset, destructor dealloc,
                               reprfunc repr, PyMethodDef* methods, PyGetSetDef* attributes) {
  PyMemberDef members[] = {  // copied into the type
      {"__vectorcalloffset__", TAOT_PY_T_PYSSIZET, static_cast<Py_ssize_t>(vectorcall_offset), TAOT_PY_READONLY,
       nullptr},
      {nullptr, 0, 0, 0, nullptr}};
  PyType_Slot slots[] = {{Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
                         {Py_tp_dealloc, reinterpret_cast<void*>(dealloc)},
                         {Py_tp_repr, reinterpret_cast<void*>(repr)},
                         {Py_tp_members, members},
                         {Py_tp_methods, methods},
                         {Py_tp_getset, attributes},
                         {0, nullptr}};
  unsigned long flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
#ifdef Py_TPFLAGS_DISALLOW_INSTANTIATION
  flags |= Py_TPFLAGS_DISALLOW_INSTANTIATION;
#endif
  PyType_Spec spec{name, static_cast<int>(size), 0, static_cast<unsigned int>(flags), slots};
  PyObject* type = PyType_FromSpec(&spec);
  if (type == nullptr) throw nb::python_error();
#ifndef Py_TPFLAGS_DISALLOW_INSTANTIATION
  reinterpret_cast<PyTypeObject*>(type)->tp_new = nullptr;
#endif
  return reinterpret_cast<PyTypeObject*>(type);
}

inline PyTypeObject* kernel_type() {
  static PyTypeObject* const type = [] {
    static const std::string time_text = time_doc("stream=None, variant=None, grid=None, **config");
    static PyMethodDef methods[] = {
        {"bind", as_method(kernel_bind), METH_FASTCALL | METH_KEYWORDS,
         "bind(*, variant=None, **config)\n--\n\n"
         "A launcher with this config (or variant) resolved once and checked against what was compiled: "
         "call it as the kernel, with stream= and grid= only. The variant is still chosen at every call "
         "from the arguments."},
        {"choose", as_method(kernel_choose), METH_FASTCALL | METH_KEYWORDS,
         "choose(*args, stream=None, variant=None, grid=None, **config)\n--\n\n"
         "(variant index, step) of the launch these arguments would make, without launching: the index "
         "into variants(), and how the config was chosen: 'variant', 'config', 'table', 'heuristics' or "
         "'default'."},
        {"time", as_method(kernel_time), METH_FASTCALL | METH_KEYWORDS, time_text.c_str()},
        {"variants", as_method(kernel_variants), METH_NOARGS,
         "variants()\n--\n\nThe compiled variants, as <kernel>_variants() lists them."},
        {"load_tuning", as_method(kernel_load_tuning), METH_VARARGS | METH_KEYWORDS,
         "load_tuning(path, device=None)\n--\n\n"
         "Reads a tuned table (taot's format or vLLM's) and uses it in place of this kernel's table for the "
         "same device; `device` overrides the GPU name the file gives."},
        {"reset_tuning", as_method(kernel_reset_tuning), METH_NOARGS,
         "reset_tuning()\n--\n\nDrops the tables load_tuning() loaded: the ones built into the library apply again."},
        {nullptr, nullptr, 0, nullptr}};
    static PyGetSetDef attributes[] = {
        {"__doc__", [](PyObject* self, void*) { return text_object(binding_of(self).doc); }, nullptr, nullptr, nullptr},
        {"__name__", [](PyObject* self, void*) { return PyUnicode_FromString(binding_of(self).table.name); }, nullptr,
         nullptr, nullptr},
        {"__qualname__", [](PyObject* self, void*) { return PyUnicode_FromString(binding_of(self).table.name); },
         nullptr, nullptr, nullptr},
        {"__module__", [](PyObject* self, void*) { return PyUnicode_FromString(binding_of(self).table.library); },
         nullptr, nullptr, nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};
    const reprfunc repr = [](PyObject* self) {
      return guarded([&] { return text_object("<taot kernel " + binding_of(self).name + ">"); });
    };
    return make_type("taot.Kernel", sizeof(KernelObject), offsetof(KernelObject, vectorcall), object_dealloc, repr,
                     methods, attributes);
  }();
  return type;
}

inline PyTypeObject* bound_type() {
  static PyTypeObject* const type = [] {
    static const std::string time_text = time_doc("stream=None, grid=None");
    static PyMethodDef methods[] = {
        {"choose", as_method(bound_choose), METH_FASTCALL | METH_KEYWORDS,
         "choose(*args, stream=None, grid=None)\n--\n\n"
         "(variant index, step) of the launch a call with these arguments would make, without launching."},
        {"time", as_method(bound_time), METH_FASTCALL | METH_KEYWORDS, time_text.c_str()},
        {nullptr, nullptr, 0, nullptr}};
    static PyGetSetDef attributes[] = {
        {"config", [](PyObject* self, void*) { return guarded([&] { return bound_config(launcher_of(self)).release().ptr(); }); },
         nullptr, "The config keywords given to bind() (None ones left out).", nullptr},
        {"variant", [](PyObject* self, void*) -> PyObject* {
           const BoundLauncher& launcher = launcher_of(self);
           if (!launcher.has_variant) Py_RETURN_NONE;
           return PyLong_FromSize_t(launcher.variant);
         }, nullptr, "The variant index given to bind(), or None.", nullptr},
        {"kernel", [](PyObject* self, void*) { return launcher_of(self).kernel.inc_ref().ptr(); }, nullptr,
         "The kernel this launcher launches.", nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};
    return make_type("taot.BoundKernel", sizeof(BoundObject), offsetof(BoundObject, vectorcall), bound_dealloc,
                     bound_repr, methods, attributes);
  }();
  return type;
}

}  // namespace detail

// The variants of `kernel` as a list of dicts: index, id, config, description, and images: per
// target, the launch facts (shared memory bytes, num_warps, num_ctas, scratch sizes, flags).
inline nb::list variants(const Kernel& kernel) {
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
      facts["target"] = image.target;
      facts["arch"] = image.arch;
      facts["shared"] = image.shared_bytes;
      facts["num_warps"] = image.num_warps;
      facts["num_ctas"] = image.num_ctas;
      facts["global_scratch_size"] = image.global_scratch_size;
      facts["profile_scratch_size"] = image.profile_scratch_size;
      facts["launch_cooperative_grid"] = image.cooperative;
      facts["launch_pdl"] = image.pdl;
      facts["triton_version"] = image.triton_version ? nb::object(nb::str(image.triton_version)) : nb::none();
      facts["ptxas_version"] = image.ptxas_version ? nb::object(nb::str(image.ptxas_version)) : nb::none();
      nb::dict launch_abi;  // as the manifest writes it
      launch_abi["tensordesc_layout"] = abi::tensordesc_layout_name(image.tensordesc_layout);
      launch_abi["scratch_pointers"] = abi::kScratchPointers;
      facts["launch_abi"] = launch_abi;
      facts["min_driver"] = toolchain::min_driver_for_ptxas(image.ptxas_version);
      images.append(facts);
    }
    entry["images"] = images;
    result.append(entry);
  }
  return result;
}

namespace detail {

inline PyObject* kernel_variants(PyObject* self, PyObject*) {
  return guarded([&] { return variants(binding_of(self).kernel).release().ptr(); });
}

// The kernel objects of this module, in binding order (the module holds them).
inline std::vector<nb::handle>& bound_kernels() {
  static std::vector<nb::handle> kernels;
  return kernels;
}

// Whether the op declares argument `arg` as written (arrays only; see written_array).
inline bool written(const table::KernelTable& table, const table::Arg& arg) {
  const bool is_array = table::visit_arg_kind(arg.kind, [](auto tag) { return PythonArgOf<decltype(tag)>::kIsArray; });
  return is_array && written_array(table, arg);
}

// The schema of a kernel as a torch custom op: the call arguments (written tensors marked so),
// then the config fields as optional keywords. No return value: kernels write into their arguments.
inline std::string torch_schema(const table::KernelTable& table) {
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

// Registers every kernel bound so far as torch.ops.<library>.<kernel> (torch.library.custom_op),
// declaring the spec's output pointers as mutated (all pointers when it names none), with a fake
// implementation that returns nothing, so calls work under torch.compile (fullgraph)
// and in CUDA graphs. Imports torch; registering twice is a no-op.
inline void register_torch_ops() {
  static bool registered = false;
  if (registered) return;
  nb::module_ torch_library = nb::module_::import_("torch.library");
  nb::object custom_op = torch_library.attr("custom_op");
  for (nb::handle kernel_object : detail::bound_kernels()) {
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
  registered = true;
}

// Adds the kernel object `<name>` to `module`: `<name>(*args, stream=None, variant=None, grid=None,
// **config)` launches, and its methods bind(), choose(), time(), variants(), load_tuning() and
// reset_tuning(); and `<name>_variants()`.
inline void bind_kernel(nb::module_& module, const char* name, Kernel& kernel) {
  static std::deque<std::string> strings;  // names handed to nanobind live as long as the module
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
  detail::bound_kernels().push_back(object);
}

// The stream a module-level call means: `stream` (an int or an object with `cuda_stream`), else
// torch's current stream when the program has imported torch, else the null stream.
inline CUstream stream_or_current(nb::handle stream) {
  if (!stream.is_none()) return detail::stream_arg(stream, detail::LaunchSite{});
  if (PyDict_GetItemString(PyImport_GetModuleDict(), "torch") == nullptr) return nullptr;
  nb::object current = nb::module_::import_("torch.cuda").attr("current_stream")();
  return reinterpret_cast<CUstream>(nb::cast<std::uint64_t>(current.attr("cuda_stream")));
}

// Adds the library-wide functions to `module`: `register_torch_ops()` (called now if the program
// has imported torch), `reserve_scratch(bytes, stream=None)` and `release_scratch()`.
inline void add_library_functions(nb::module_& module) {
  module.def("register_torch_ops", &register_torch_ops,
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
      "captures that stream. Call it before capture.");
  module.def(
      "release_scratch",
      []() {
        Status status = release_scratch();
        if (!status.ok()) detail::raise(std::move(status));
      },
      "Frees the current CUDA context's scratch buffers (waits for the device first).");
  if (PyDict_GetItemString(PyImport_GetModuleDict(), "torch") != nullptr) register_torch_ops();
}

}  // namespace taot::python
