// Host-side tensor descriptors at launch: the checks a taot_tensordesc must pass, and the kernel
// parameters the image takes for it, in the image's launch ABI (taot/launch_abi.h): on sm_90 images
// (with tensordesc metadata) a 128-byte CUtensorMap passed by value, then its shape as i32 and its
// strides as i64; below sm_90 the base pointer, shape and strides as i64, a padding flag (i1), from
// Triton 3.7 a round_f32_to_tf32 flag (i1), then shape as i32 and strides as i64 again.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "taot/driver_api.h"
#include "taot/kernel_table.h"
#include "taot/launch_abi.h"
#include "taot/status.h"

namespace taot::detail {

// The driver requires a tensor map to be 64-byte aligned; cuda.h's type carries that alignment
// (128 bytes in CUDA 13), which clang refuses to see lowered by an alignas.
static_assert(alignof(CUtensorMap) >= 64, "CUtensorMap must be at least 64-byte aligned");

// The values one descriptor argument passes, kept alive until the launch call returns.
struct TensordescParams {
  CUtensorMap map;
  std::uint64_t base;
  std::int64_t shape64[TAOT_TENSORDESC_MAX_RANK];
  std::int64_t strides[TAOT_TENSORDESC_MAX_RANK];
  std::int32_t shape32[TAOT_TENSORDESC_MAX_RANK];
  std::uint8_t nan_padding;
  std::uint8_t round_f32_to_tf32;  // always 0: taot has no way to ask for it
};

// "[64, 32]": `count` dims (a block, a box, a shape, strides) for messages.
template <class T>
std::string dims_text(const T* dims, std::size_t count) {
  std::string text = "[";
  for (std::size_t i = 0; i < count; ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

// How many kernel parameters a descriptor argument of rank `rank` takes in `image`.
inline std::size_t tensordesc_param_count(std::size_t rank, const table::Image& image) noexcept {
  return abi::descriptor_param_count(image.tensordesc_layout, image.tensordesc_count > 0, rank);
}

// Checks `desc` for argument `arg` (rank, alignment, shape and stride limits) and fills `out` for
// an image of descriptor layout `layout` with TMA map `meta` (null: no TMA), encoding the map with
// cuTensorMapEncodeTiled. Then stores pointers to the values, in the kernel's parameter order
// (abi::descriptor_params), at `params` (which has room for tensordesc_param_count entries).
// Errors name the argument and the offending value.
Status build_tensordesc_params(const driver::Api& api, const table::Arg& arg, const taot_tensordesc& desc,
                               abi::TensordescLayout layout, const table::TensordescMeta* meta,
                               TensordescParams& out, void** params);

// Triton's device-side TMA data type number (tensordesc_meta's elem_type) as the host's
// CUtensorMapDataType: equal except 8 -> 10, 9 -> 8, 10 -> 9.
CUtensorMapDataType host_tensor_map_type(std::uint8_t device_elem_type) noexcept;

}  // namespace taot::detail
