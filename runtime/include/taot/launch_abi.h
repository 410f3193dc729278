// The kernel parameters a launch passes, by the Triton release that compiled the image: what a
// host tensor descriptor expands to, the hidden scratch pointers, and the bytes of each. Defined
// once: the runtime packs launches by it (src/tensordesc.cpp, src/kernel.cpp) and `taot gen`
// checks every cubin's own parameter list against it (taot/codegen/launch_check.h).
// Pure constants and constexpr functions; C++17.
#pragma once

#include <cstddef>
#include <cstdint>

namespace taot::abi {

// Every kernel takes these pointers after the call arguments: global scratch, profile scratch
// (Triton 3.5 to 3.9).
inline constexpr std::size_t kScratchPointers = 2;
inline constexpr std::size_t kPointerBytes = 8;
inline constexpr std::size_t kTensorMapBytes = 128;  // a CUtensorMap, passed by value

// The launch ABIs of host tensor descriptors, listed once: X(enumerator, manifest name). The
// manifest name is the first Triton release with that ABI (an image's "launch_abi"."tensordesc_layout").
//   triton_3_5 (Triton 3.5, 3.6): without TMA, base, shape i64, strides i64, nan_padding i1, shape
//     i32, strides i64; with TMA, the map, shape i32, strides i64, where an fp4_padded
//     descriptor's shape has its innermost dim doubled, as in the map.
//   triton_3_7 (Triton 3.7 on): without TMA, round_f32_to_tf32 i1 follows nan_padding; with TMA,
//     as triton_3_5 but the shape passed is the caller's (only the map doubles fp4_padded dims).
#define TAOT_TENSORDESC_LAYOUTS(X) X(triton_3_5, "3.5") X(triton_3_7, "3.7")

enum class TensordescLayout : std::uint8_t {
#define TAOT_TENSORDESC_LAYOUT_ENUMERATOR(enumerator, name) enumerator,
  TAOT_TENSORDESC_LAYOUTS(TAOT_TENSORDESC_LAYOUT_ENUMERATOR)
#undef TAOT_TENSORDESC_LAYOUT_ENUMERATOR
};

// "3.5": the layout's manifest name; null for a value that is no layout.
constexpr const char* tensordesc_layout_name(TensordescLayout layout) noexcept {
  switch (layout) {
#define TAOT_TENSORDESC_LAYOUT_CASE(enumerator, name) \
  case TensordescLayout::enumerator: return name;
    TAOT_TENSORDESC_LAYOUTS(TAOT_TENSORDESC_LAYOUT_CASE)
#undef TAOT_TENSORDESC_LAYOUT_CASE
  }
  return nullptr;
}

// What one kernel parameter of a descriptor holds.
enum class DescriptorValue : std::uint8_t {
  tensor_map,         // the CUtensorMap (TMA images)
  base,               // the base address
  shape_i64,          // one dim of the shape
  strides_i64,        // one stride, in elements
  nan_padding,        // 1 when out-of-bounds reads give NaN
  round_f32_to_tf32,  // 1 to round fp32 to tf32 (taot always passes 0)
  shape_i32,          // one dim of the shape, as i32
};

constexpr std::size_t descriptor_value_bytes(DescriptorValue value) noexcept {
  switch (value) {
    case DescriptorValue::tensor_map: return kTensorMapBytes;
    case DescriptorValue::base:
    case DescriptorValue::shape_i64:
    case DescriptorValue::strides_i64: return 8;
    case DescriptorValue::nan_padding:
    case DescriptorValue::round_f32_to_tf32: return 1;
    case DescriptorValue::shape_i32: return 4;
  }
  return 0;
}

// A run of a descriptor's parameters: `value` once, or once per dim, outermost first.
struct DescriptorRun {
  DescriptorValue value;
  bool per_dim;
};

// A descriptor's parameters in order: `count` runs.
struct DescriptorParams {
  const DescriptorRun* runs;
  std::size_t count;
};

namespace detail {
inline constexpr DescriptorRun kWithMap[] = {
    {DescriptorValue::tensor_map, false}, {DescriptorValue::shape_i32, true}, {DescriptorValue::strides_i64, true}};
inline constexpr DescriptorRun kDecomposed35[] = {
    {DescriptorValue::base, false},        {DescriptorValue::shape_i64, true}, {DescriptorValue::strides_i64, true},
    {DescriptorValue::nan_padding, false}, {DescriptorValue::shape_i32, true}, {DescriptorValue::strides_i64, true}};
inline constexpr DescriptorRun kDecomposed37[] = {
    {DescriptorValue::base, false},        {DescriptorValue::shape_i64, true},
    {DescriptorValue::strides_i64, true},  {DescriptorValue::nan_padding, false},
    {DescriptorValue::round_f32_to_tf32, false}, {DescriptorValue::shape_i32, true},
    {DescriptorValue::strides_i64, true}};
}  // namespace detail

// The parameters of one descriptor in an image of `layout`, with TMA maps (`with_map`: the image
// has tensordesc metadata) or without.
constexpr DescriptorParams descriptor_params(TensordescLayout layout, bool with_map) noexcept {
  if (with_map) return {detail::kWithMap, sizeof detail::kWithMap / sizeof detail::kWithMap[0]};
  if (layout == TensordescLayout::triton_3_7)
    return {detail::kDecomposed37, sizeof detail::kDecomposed37 / sizeof detail::kDecomposed37[0]};
  return {detail::kDecomposed35, sizeof detail::kDecomposed35 / sizeof detail::kDecomposed35[0]};
}

// How many kernel parameters a descriptor of `rank` takes.
constexpr std::size_t descriptor_param_count(TensordescLayout layout, bool with_map, std::size_t rank) noexcept {
  const DescriptorParams params = descriptor_params(layout, with_map);
  std::size_t count = 0;
  for (std::size_t r = 0; r < params.count; ++r) count += params.runs[r].per_dim ? rank : 1;
  return count;
}

// Whether the shape_i32 parameters of an fp4_padded descriptor (TMA images) carry the doubled
// innermost dim the map counts, rather than the caller's.
constexpr bool fp4_padded_shape_doubled(TensordescLayout layout) noexcept {
  return layout == TensordescLayout::triton_3_5;
}

// Rank 2: base, 2 + 2, padding, 2 + 2 (Triton 3.6); the same and round_f32_to_tf32 (3.7); with TMA
// the map, 2 shape, 2 strides.
static_assert(descriptor_param_count(TensordescLayout::triton_3_5, false, 2) == 10, "");
static_assert(descriptor_param_count(TensordescLayout::triton_3_7, false, 2) == 11, "");
static_assert(descriptor_param_count(TensordescLayout::triton_3_5, true, 2) == 5, "");

}  // namespace taot::abi
