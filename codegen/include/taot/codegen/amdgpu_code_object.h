// An AMD GPU code object's facts (the `.hsaco` ELF that Triton's AMD backend writes), read from the
// code object's own metadata: the NT_AMDGPU_METADATA note (owner "AMDGPU"), a MessagePack map
// whose "amdhsa.kernels" list holds per kernel the registers, spills and segment sizes the
// compiler chose; what `llvm-readelf --notes` prints, without running it. The workbench shows
// them for AMD images as the cubin reader's facts are shown for NVIDIA ones.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taot/codegen/errors.h"

namespace taot::codegen {

// One kernel of a code object, as its metadata note records it. Sizes are in bytes. The optional
// counts are absent when the note leaves them out (AGPRs exist on gfx908 and gfx90a and later; the
// spill counts are optional metadata).
struct AmdgpuKernel {
  std::string name;    // .name: the kernel's name
  std::string symbol;  // .symbol: its kernel descriptor ("name.kd")
  // .vgpr_count: vector registers per work-item. On gfx90a and later, whose one register file
  // holds VGPRs and then AGPRs (from an offset aligned to 4), it counts both: 72 for 56 VGPRs and
  // 16 AGPRs (LLVM's TotalNumVgprs).
  std::uint32_t vgprs = 0;
  std::uint32_t sgprs = 0;             // .sgpr_count: scalar registers per wavefront
  std::optional<std::uint32_t> agprs;  // .agpr_count: accumulation registers per work-item
  // .vgpr_spill_count, .sgpr_spill_count: the register allocator's spill stores of vector and of
  // scalar registers (instructions, not bytes).
  std::optional<std::uint32_t> vgpr_spills;
  std::optional<std::uint32_t> sgpr_spills;
  // .group_segment_fixed_size: LDS per workgroup fixed at compile time; the dynamic LDS a launch
  // asks for (all of Triton's) comes on top.
  std::uint32_t lds = 0;
  std::uint32_t scratch = 0;                  // .private_segment_fixed_size: private memory per work-item
  bool dynamic_stack = false;                 // .uses_dynamic_stack: `scratch` is then a lower bound
  std::uint32_t wavefront_size = 0;           // .wavefront_size: 32 or 64 lanes
  std::uint32_t kernarg_size = 0;             // .kernarg_segment_size: the kernel's argument block
  std::uint32_t max_flat_workgroup_size = 0;  // .max_flat_workgroup_size: work-items per workgroup
  bool operator==(const AmdgpuKernel&) const = default;
};

struct AmdgpuCodeObject {
  // amdhsa.target: "amdgcn-amd-amdhsa--gfx942", with target features (":sramecc+:xnack-") when the
  // code object was built for them; empty when the note has none (code object v3).
  std::string target_id;
  std::vector<AmdgpuKernel> kernels;  // in the note's order

  // The kernel whose .name is `name`, or null.
  const AmdgpuKernel* find(std::string_view name) const noexcept;
  // The processor of target_id without its features ("gfx942"); empty when unknown.
  std::string processor() const;
};

// Whether `bytes` start with a 64-bit little-endian ELF header whose e_machine is EM_AMDGPU (224);
// a cubin's is EM_CUDA (190). Pure.
bool is_amdgpu_code_object(std::string_view bytes) noexcept;

// Parses a code object held in memory; `name` names it in messages ("NAME: not a valid AMDGPU
// code object: ..."). Fails on anything that is not a 64-bit little-endian AMDGPU ELF, whose
// sections or notes run past its end, that has no AMDGPU metadata note, whose note is not
// MessagePack, or whose kernels lack a required key (.name, .symbol, the register counts, the
// segment sizes, .wavefront_size). Never throws. Thread-safe.
Expected<AmdgpuCodeObject> read_amdgpu_code_object(std::string_view bytes, const std::string& name);
// The same for a file.
Expected<AmdgpuCodeObject> read_amdgpu_code_object_file(const std::filesystem::path& path);

}  // namespace taot::codegen
