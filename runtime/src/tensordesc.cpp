// Host-side tensor descriptors at launch; see tensordesc.h.
#include "tensordesc.h"

#include <limits>
#include <string>

#include "taot/runtime.h"

namespace taot::detail {
namespace {

constexpr std::int64_t kMaxShape = std::numeric_limits<std::int32_t>::max();  // passed as i32
constexpr std::int64_t kMaxStrideBytes = std::int64_t{1} << 40;                // TMA's limit

Status invalid(const table::Arg& arg, const std::string& problem) {
  return Status::error(TAOT_INVALID_ARGUMENT, std::string("argument ") + arg.name + ": " + problem);
}

// The checks Triton's TensorDescriptor makes, plus the limits of the kernel's i32 shape parameters.
Status check(const table::Arg& arg, const taot_tensordesc& desc) {
  if (desc.rank != arg.rank)
    return invalid(arg, "a descriptor of rank " + std::to_string(desc.rank) + "; the kernel takes rank " +
                            std::to_string(arg.rank));
  const std::size_t rank = arg.rank;
  const std::size_t element = dtype_size(static_cast<DType>(desc.dtype));
  if (element == 0) return invalid(arg, "unknown dtype " + std::to_string(desc.dtype));
  if (desc.base % 16 != 0)
    return invalid(arg, "base address " + std::to_string(desc.base) + " is not 16-byte aligned (TMA needs 16)");
  for (std::size_t d = 0; d < rank; ++d) {
    if (desc.shape[d] < 1 || desc.shape[d] > kMaxShape)
      return invalid(arg, "shape[" + std::to_string(d) + "] = " + std::to_string(desc.shape[d]) +
                              " is outside 1 to 2147483647 (shape " + dims_text(desc.shape, rank) + ")");
  }
  if (desc.strides[rank - 1] != 1)
    return invalid(arg, "strides[" + std::to_string(rank - 1) + "] = " + std::to_string(desc.strides[rank - 1]) +
                            "; the innermost dim must be contiguous (stride 1; strides " +
                            dims_text(desc.strides, rank) + ")");
  for (std::size_t d = 0; d + 1 < rank; ++d) {
    const std::int64_t stride = desc.strides[d];
    const bool in_range = stride > 0 && stride < kMaxStrideBytes / static_cast<std::int64_t>(element);
    if (!in_range || (stride * static_cast<std::int64_t>(element)) % 16 != 0)
      return invalid(arg, "strides[" + std::to_string(d) + "] = " + std::to_string(stride) + " elements of " +
                              std::to_string(element) + " bytes; TMA needs a positive multiple of 16 bytes below 2^40 "
                              "(strides " + dims_text(desc.strides, rank) + ")");
  }
  if (desc.padding != TAOT_PADDING_ZERO && desc.padding != TAOT_PADDING_NAN)
    return invalid(arg, "padding " + std::to_string(desc.padding) + " is neither TAOT_PADDING_ZERO nor TAOT_PADDING_NAN");
  return Status();
}

// The address of the value parameter `value` (dim `dim` of it when per dim) is read from.
void* value_address(TensordescParams& out, abi::DescriptorValue value, std::size_t dim) noexcept {
  switch (value) {
    case abi::DescriptorValue::tensor_map: return &out.map;
    case abi::DescriptorValue::base: return &out.base;
    case abi::DescriptorValue::shape_i64: return &out.shape64[dim];
    case abi::DescriptorValue::strides_i64: return &out.strides[dim];
    case abi::DescriptorValue::nan_padding: return &out.nan_padding;
    case abi::DescriptorValue::round_f32_to_tf32: return &out.round_f32_to_tf32;
    case abi::DescriptorValue::shape_i32: return &out.shape32[dim];
  }
  return nullptr;
}

// Pointers to the descriptor's values at `params`, in the order of `layout`.
void store_params(TensordescParams& out, abi::TensordescLayout layout, bool with_map, std::size_t rank,
                  void** params) noexcept {
  const abi::DescriptorParams order = abi::descriptor_params(layout, with_map);
  std::size_t p = 0;
  for (std::size_t r = 0; r < order.count; ++r) {
    const abi::DescriptorRun& run = order.runs[r];
    const std::size_t count = run.per_dim ? rank : 1;
    for (std::size_t d = 0; d < count; ++d) params[p++] = value_address(out, run.value, d);
  }
}

}  // namespace

CUtensorMapDataType host_tensor_map_type(std::uint8_t device_elem_type) noexcept {
  switch (device_elem_type) {
    case 8: return static_cast<CUtensorMapDataType>(10);
    case 9: return static_cast<CUtensorMapDataType>(8);
    case 10: return static_cast<CUtensorMapDataType>(9);
    default: return static_cast<CUtensorMapDataType>(device_elem_type);
  }
}

Status build_tensordesc_params(const driver::Api& api, const table::Arg& arg, const taot_tensordesc& desc,
                               abi::TensordescLayout layout, const table::TensordescMeta* meta,
                               TensordescParams& out, void** params) {
  if (Status status = check(arg, desc); !status.ok()) return status;
  const std::size_t rank = arg.rank;
  out.base = desc.base;
  for (std::size_t d = 0; d < rank; ++d) {
    out.shape64[d] = desc.shape[d];
    out.shape32[d] = static_cast<std::int32_t>(desc.shape[d]);
    out.strides[d] = desc.strides[d];
  }
  out.nan_padding = desc.padding == TAOT_PADDING_NAN ? 1 : 0;
  out.round_f32_to_tf32 = 0;

  if (meta == nullptr) {  // Triton's decomposition
    store_params(out, layout, false, rank, params);
    return Status();
  }

  if (api.cuTensorMapEncodeTiled == nullptr)
    return Status::error(TAOT_NOT_SUPPORTED, std::string("argument ") + arg.name +
                                                 ": tensor descriptors need cuTensorMapEncodeTiled, a CUDA 12.0 or "
                                                 "newer driver");
  if (meta->fp4_padded) {  // two fp4 values per byte, padded: the map counts bytes along the innermost dim
    if (out.shape64[rank - 1] > kMaxShape / 2)
      return invalid(arg, "shape[" + std::to_string(rank - 1) + "] = " + std::to_string(out.shape64[rank - 1]) +
                              " is too large for an fp4-padded descriptor");
    out.shape64[rank - 1] *= 2;
    if (abi::fp4_padded_shape_doubled(layout)) out.shape32[rank - 1] *= 2;
  }
  // The driver's dims are innermost first; strides are in bytes and omit the innermost dim.
  cuuint64_t global_dim[TAOT_TENSORDESC_MAX_RANK] = {};
  cuuint64_t global_strides[TAOT_TENSORDESC_MAX_RANK] = {};
  cuuint32_t box[TAOT_TENSORDESC_MAX_RANK] = {};
  cuuint32_t element_strides[TAOT_TENSORDESC_MAX_RANK] = {1, 1, 1, 1, 1};
  for (std::size_t i = 0; i < rank; ++i) {
    global_dim[i] = static_cast<cuuint64_t>(out.shape64[rank - 1 - i]);
    box[i] = meta->box[rank - 1 - i];
  }
  for (std::size_t i = 0; i + 1 < rank; ++i)
    global_strides[i] = static_cast<cuuint64_t>(out.strides[rank - 2 - i]) * meta->elem_size;
  const CUresult result = api.cuTensorMapEncodeTiled(
      &out.map, host_tensor_map_type(meta->elem_type), static_cast<cuuint32_t>(rank),
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(desc.base)), global_dim, global_strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, static_cast<CUtensorMapSwizzle>(meta->swizzle),
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      out.nan_padding ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    return driver::call_error(api, "cuTensorMapEncodeTiled", result)
        .with_context(std::string("argument ") + arg.name + " (" + dtype_name(static_cast<DType>(desc.dtype)) +
                      ", shape " + dims_text(desc.shape, rank) + ", strides " + dims_text(desc.strides, rank) +
                      ", box " + dims_text(meta->box, rank) + ", swizzle " + std::to_string(meta->swizzle) +
                      (out.nan_padding ? ", NaN padding" : "") + ")");
  store_params(out, layout, true, rank, params);
  return Status();
}

}  // namespace taot::detail
