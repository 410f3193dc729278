// What the cubin reader and the AMDGPU code object reader share of a 64-bit little-endian ELF:
// bounds-checked reads, the header checks, and the section headers with their names. Private to
// taot_codegen.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taot/codegen/errors.h"

namespace taot::codegen::elf {

constexpr std::uint16_t kMachineCuda = 190;    // EM_CUDA: cubins
constexpr std::uint16_t kMachineAmdgpu = 224;  // EM_AMDGPU: AMD GPU code objects (.hsaco)

constexpr std::uint32_t kSectionSymtab = 2;  // SHT_SYMTAB
constexpr std::uint32_t kSectionNote = 7;    // SHT_NOTE
constexpr std::uint32_t kSectionNoBits = 8;  // SHT_NOBITS

struct Section {
  std::string name;
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;       // in memory (a NOBITS section's, such as .nv.shared.*, says how much)
  std::uint64_t file_size = 0;  // bytes in the file, which readers may touch: 0 for NOBITS
  std::uint32_t link = 0;
  std::uint64_t alignment = 0;  // sh_addralign
  std::uint64_t entry_size = 0;
};

// The e_machine of `bytes` when they start with a 64-bit little-endian ELF header, else nullopt.
std::optional<std::uint16_t> machine(std::string_view bytes) noexcept;

// Reads one ELF held in memory. `name` (the file, in messages) must outlive the reader; `kind`
// says what the bytes should be ("cubin"): errors read "NAME: not a valid KIND: what".
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& name, std::string_view kind)
      : bytes_(bytes), name_(name), kind_(kind) {}

  bool has(std::uint64_t offset, std::uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  // The value at `offset`, which has() must have allowed.
  template <class T>
  T read(std::uint64_t offset) const {  // little-endian host assumed (x86-64, aarch64)
    T value{};
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }
  // `size` bytes at `offset`, which has() must have allowed.
  std::string_view bytes(std::uint64_t offset, std::uint64_t size) const {
    return bytes_.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(size));
  }
  // The NUL-terminated string at `index` of a string table; empty past its end.
  std::string string_at(const Section& table, std::uint64_t index) const;
  Status error(const std::string& what) const;

  // The ELF identification and e_machine: fails saying "no ELF header", "not a 64-bit
  // little-endian ELF" or, when e_machine is not `machine`, `wrong_machine`.
  Status check_header(std::uint16_t machine, const std::string& wrong_machine) const;
  // Every section header, named. Fails when the table, its name table or a section's bytes run
  // past the end. Needs check_header first.
  Expected<std::vector<Section>> sections() const;

 private:
  std::string_view bytes_;
  const std::string& name_;
  std::string_view kind_;
};

}  // namespace taot::codegen::elf
