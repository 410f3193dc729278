// A cubin's facts, read from its ELF: per function the .nv.info attributes ptxas wrote (registers,
// stack frame, stack sizes, the kernel's parameter list) and the sizes of its shared, local and
// constant sections; what `cuobjdump --dump-resource-usage` and `cuobjdump -elf` print, without
// running them. `taot gen` checks parameter lists with it; the workbench shows resource usage.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taot/codegen/errors.h"

namespace taot::codegen {

// One parameter of a kernel (EIATTR_KPARAM_INFO): its position, its offset in the parameter bank
// and its size, in bytes.
struct KernelParam {
  std::uint32_t ordinal = 0;
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
  bool operator==(const KernelParam&) const = default;
};

// One function of a cubin. Sizes are in bytes.
struct FunctionResources {
  std::string name;
  bool entry = false;                           // a kernel (STO_CUDA_ENTRY), not a device function
  std::uint32_t registers = 0;                  // EIATTR_REGCOUNT, per thread
  std::uint32_t frame_size = 0;                 // EIATTR_FRAME_SIZE, per thread: ptxas' "stack frame"
  std::optional<std::uint32_t> min_stack_size;  // EIATTR_MIN_STACK_SIZE, when recorded
  std::optional<std::uint32_t> max_stack_size;  // EIATTR_MAX_STACK_SIZE, when recorded
  std::optional<std::uint32_t> max_registers;   // EIATTR_MAXREG_COUNT: the cap ptxas compiled under
  std::uint32_t static_shared = 0;              // .nv.shared.<name>, per block
  std::uint32_t local = 0;                      // .nv.local.<name>, per thread
  std::uint32_t constant0 = 0;                  // .nv.constant0.<name>: the parameter bank
  std::vector<KernelParam> params;              // a kernel's parameters by ordinal; empty when not recorded

  // cuobjdump's STACK: the maximum stack size when recorded, else the minimum, else the frame.
  std::uint32_t stack() const noexcept { return max_stack_size.value_or(min_stack_size.value_or(frame_size)); }
};

struct CubinInfo {
  std::uint32_t arch = 0;            // compute capability as major*10+minor (90 for sm_90)
  bool arch_specific = false;        // built for sm_XXa (e_flags or .nv.compat: EF_CUDA_ACCELERATORS)
  std::uint32_t reserved_shared = 0; // .nv.shared.reserved.* together: shared memory reserved per block
  std::vector<FunctionResources> functions;  // every function symbol, in symbol-table order

  // The function named `name`, or null.
  const FunctionResources* find(std::string_view name) const noexcept;
  // "sm_90a", "sm_80".
  std::string target() const;
};

// Parses a cubin held in memory; `name` names it in messages. Fails, saying what is wrong, on
// anything that is not a 64-bit little-endian CUDA ELF or whose sections run past its end.
// Thread-safe.
Expected<CubinInfo> read_cubin(std::string_view bytes, const std::string& name);
// The same for a file.
Expected<CubinInfo> read_cubin_file(const std::filesystem::path& path);

}  // namespace taot::codegen
