// Reading a cubin's ELF: the symbol table and the .nv.info attribute lists (the header and section
// headers: elf.h, shared with the AMDGPU code object reader).
//
// Why parse rather than run `cuobjdump --dump-resource-usage`: inspecting a library of hundreds of
// variants would start hundreds of processes, the workbench would need a CUDA toolkit present, and
// the parser is tested on bytes. The tests compare it with cuobjdump on real cubins.
//
// .nv.info sections are lists of attributes: a format byte, an attribute byte, then a 16-bit value
// (formats 1-3) or a 16-bit size and that many bytes (format 4, EIFMT_SVAL). Per-function values
// (register count, frame and stack sizes) are SVALs holding the function's symbol index and a
// 32-bit value. A kernel's own list (.nv.info.<name>) holds one EIATTR_KPARAM_INFO per parameter:
// a 12-byte SVAL of a 32-bit index, a 16-bit ordinal, a 16-bit offset and a 32-bit word whose
// bits 18-31 are the size in bytes (what `cuobjdump -elf` prints as Ordinal, Offset and Size).
// .nv.compat is a list of the same shape saying what a driver must support to load the cubin.
#include "taot/codegen/cubin.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>

#include "elf.h"

namespace taot::codegen {

namespace {

constexpr std::uint8_t kFormatBval = 0x02;  // EIFMT_BVAL: one byte inline
constexpr std::uint8_t kFormatSval = 0x04;  // EIFMT_SVAL: size + bytes; the others carry 16 bits inline
constexpr std::uint8_t kAttrFrameSize = 0x11;
constexpr std::uint8_t kAttrMinStackSize = 0x12;
constexpr std::uint8_t kAttrKernelParamInfo = 0x17;
constexpr std::uint8_t kAttrMaxRegCount = 0x1b;
constexpr std::uint8_t kAttrMaxStackSize = 0x23;
constexpr std::uint8_t kAttrRegCount = 0x2f;
constexpr std::uint8_t kCompatAcceleratorTarget = 0x09;  // EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET, in .nv.compat

constexpr std::uint8_t kSymbolTypeFunction = 2;  // STT_FUNC
constexpr std::uint8_t kOtherCudaEntry = 0x10;   // STO_CUDA_ENTRY

using elf::Section;

// The architecture in e_flags: ABI version 7 and before keep sm in bits 0-7 and
// EF_CUDA_ACCELERATORS (the "a" of sm_90a) in bit 11; version 8 keeps sm in bits 8-15, and ptxas
// 12.8-12.9 the "a" in bit 3. ptxas 13 writes version 8 for every sm and leaves the "a" out of
// e_flags (sm_90 and sm_90a get the same flags); it is in .nv.compat instead (read_cubin). The
// vectors: tests/unit/codegen/data/cubin_targets.json.
void decode_flags(std::uint8_t abi_version, std::uint32_t flags, CubinInfo& info) {
  if (abi_version >= 8) {
    info.arch = (flags >> 8) & 0xff;
    info.arch_specific = (flags & 0x8) != 0;
  } else {
    info.arch = flags & 0xff;
    info.arch_specific = (flags & 0x800) != 0;
  }
}

}  // namespace

const FunctionResources* CubinInfo::find(std::string_view name) const noexcept {
  for (const FunctionResources& function : functions)
    if (function.name == name) return &function;
  return nullptr;
}

std::string CubinInfo::target() const { return "sm_" + std::to_string(arch) + (arch_specific ? "a" : ""); }

Expected<CubinInfo> read_cubin(std::string_view bytes, const std::string& name) {
  const elf::Reader reader(bytes, name, "cubin");
  if (Status header = reader.check_header(elf::kMachineCuda, "not a CUDA ELF (e_machine is not EM_CUDA)"); !header.ok())
    return header;
  CubinInfo info;
  decode_flags(static_cast<std::uint8_t>(bytes[8]), reader.read<std::uint32_t>(48), info);
  Expected<std::vector<Section>> read_sections = reader.sections();
  if (!read_sections.ok()) return std::move(read_sections).take_status();
  const std::vector<Section>& sections = *read_sections;

  // Function symbols, by symbol index.
  std::map<std::uint32_t, std::size_t> function_of_symbol;
  for (const Section& section : sections) {
    if (section.type != elf::kSectionSymtab) continue;
    if (section.entry_size < 24 || section.link >= sections.size()) return reader.error("a malformed symbol table");
    const Section& strings = sections[section.link];
    const std::uint64_t count = section.file_size / section.entry_size;
    for (std::uint64_t symbol = 0; symbol < count; ++symbol) {
      const std::uint64_t at = section.offset + symbol * section.entry_size;
      const auto info_byte = reader.read<std::uint8_t>(at + 4);
      if ((info_byte & 0xf) != kSymbolTypeFunction) continue;
      FunctionResources function;
      function.name = reader.string_at(strings, reader.read<std::uint32_t>(at));
      function.entry = (reader.read<std::uint8_t>(at + 5) & kOtherCudaEntry) != 0;
      function_of_symbol[static_cast<std::uint32_t>(symbol)] = info.functions.size();
      info.functions.push_back(std::move(function));
    }
    break;
  }
  auto function_named = [&info](std::string_view function_name) -> FunctionResources* {
    for (FunctionResources& function : info.functions)
      if (function.name == function_name) return &function;
    return nullptr;
  };

  for (const Section& section : sections) {
    const std::string_view section_name = section.name;
    if (section_name.starts_with(".nv.shared.reserved.")) {
      info.reserved_shared += static_cast<std::uint32_t>(section.size);
    } else if (section_name.starts_with(".nv.shared.")) {
      if (FunctionResources* function = function_named(section_name.substr(11)))
        function->static_shared = static_cast<std::uint32_t>(section.size);
    } else if (section_name.starts_with(".nv.local.")) {
      if (FunctionResources* function = function_named(section_name.substr(10)))
        function->local = static_cast<std::uint32_t>(section.size);
    } else if (section_name.starts_with(".nv.constant0.")) {
      if (FunctionResources* function = function_named(section_name.substr(14)))
        function->constant0 = static_cast<std::uint32_t>(section.size);
    }
    if (section_name == ".nv.compat") {
      for (std::uint64_t at = section.offset; at + 4 <= section.offset + section.file_size;) {
        const auto format = reader.read<std::uint8_t>(at);
        if (format == kFormatBval && reader.read<std::uint8_t>(at + 1) == kCompatAcceleratorTarget &&
            reader.read<std::uint8_t>(at + 2) != 0)
          info.arch_specific = true;
        at += 4 + (format == kFormatSval ? reader.read<std::uint16_t>(at + 2) : 0);
      }
      continue;
    }
    if (section_name != ".nv.info" && !section_name.starts_with(".nv.info.")) continue;
    // A per-function list (.nv.info.<name>) holds its MAXREG_COUNT inline.
    FunctionResources* owner = section_name.size() > 9 ? function_named(section_name.substr(9)) : nullptr;
    std::uint64_t at = section.offset;
    const std::uint64_t end = section.offset + section.file_size;
    while (at + 4 <= end) {
      const auto format = reader.read<std::uint8_t>(at);
      const auto attribute = reader.read<std::uint8_t>(at + 1);
      const auto value16 = reader.read<std::uint16_t>(at + 2);
      if (format != kFormatSval) {
        if (attribute == kAttrMaxRegCount && owner != nullptr) owner->max_registers = value16;
        at += 4;
        continue;
      }
      const std::uint64_t value_at = at + 4;
      if (value_at + value16 > end) return reader.error("an attribute runs past the end of " + section.name);
      at = value_at + value16;
      if (attribute == kAttrKernelParamInfo && owner != nullptr && value16 >= 12) {
        const auto word = reader.read<std::uint32_t>(value_at + 8);
        owner->params.push_back({reader.read<std::uint16_t>(value_at + 4), reader.read<std::uint16_t>(value_at + 6),
                                 word >> 18});
        continue;
      }
      if (value16 != 8) continue;
      const auto symbol = reader.read<std::uint32_t>(value_at);
      const auto value = reader.read<std::uint32_t>(value_at + 4);
      auto found = function_of_symbol.find(symbol);
      if (found == function_of_symbol.end()) continue;
      FunctionResources& function = info.functions[found->second];
      switch (attribute) {
        case kAttrRegCount: function.registers = value; break;
        case kAttrFrameSize: function.frame_size = value; break;
        case kAttrMinStackSize: function.min_stack_size = value; break;
        case kAttrMaxStackSize: function.max_stack_size = value; break;
        default: break;
      }
    }
  }
  for (FunctionResources& function : info.functions)  // ptxas lists them last parameter first
    std::sort(function.params.begin(), function.params.end(),
              [](const KernelParam& a, const KernelParam& b) { return a.ordinal < b.ordinal; });
  return info;
}

Expected<CubinInfo> read_cubin_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return input_error("cannot read " + path.string());
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return read_cubin(bytes, path.string());
}

}  // namespace taot::codegen
