// Builds the bytes of a small CUDA ELF (a cubin as ptxas lays it out: symbol table, .nv.info
// attribute lists with the kernel's parameters, shared/local/constant sections) for the tests of
// the cubin reader and of what reads cubins (taot gen's parameter check, the workbench).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taot::codegen::testing {

struct FakeFunction {
  std::string name;
  bool entry = true;
  std::uint32_t registers = 0;
  std::uint32_t frame_size = 0;
  std::uint32_t min_stack_size = 0;
  std::optional<std::uint32_t> max_stack_size{};
  std::optional<std::uint16_t> max_registers{};
  std::uint32_t static_shared = 0;
  std::uint32_t local = 0;
  std::uint32_t constant0 = 0;
  std::vector<std::uint32_t> param_sizes{};  // one EIATTR_KPARAM_INFO per entry, in bytes, naturally aligned
};

// `abi_version` and `flags` go into e_ident[EI_ABIVERSION] and e_flags (7 and 0x5a0d5a: sm_90a).
std::string fake_cubin(const std::vector<FakeFunction>& functions, std::uint8_t abi_version = 7,
                       std::uint32_t flags = 0x5a0d5a, std::uint32_t reserved_shared = 0);

}  // namespace taot::codegen::testing
