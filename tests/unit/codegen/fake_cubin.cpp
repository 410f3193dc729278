// A minimal ELF64 writer for the tests: sections in order, then the section header table.
#include "fake_cubin.h"

#include <cstring>

namespace taot::codegen::testing {

namespace {

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

struct SectionSpec {
  std::string name;
  std::uint32_t type = 1;  // PROGBITS
  std::string data;        // empty for NOBITS; size below
  std::uint64_t size = 0;
  std::uint32_t link = 0;
  std::uint64_t entry_size = 0;
};

void attribute_sval(std::string& out, std::uint8_t attribute, std::uint32_t symbol, std::uint32_t value) {
  put<std::uint8_t>(out, 0x04);
  put<std::uint8_t>(out, attribute);
  put<std::uint16_t>(out, 8);
  put<std::uint32_t>(out, symbol);
  put<std::uint32_t>(out, value);
}

}  // namespace

std::string fake_cubin(const std::vector<FakeFunction>& functions, std::uint8_t abi_version, std::uint32_t flags,
                       std::uint32_t reserved_shared) {
  // Symbols: 0 null, 1 a section symbol, then one per function.
  std::string strtab(1, '\0');
  std::string symtab(24, '\0');
  auto add_symbol = [&](const std::string& name, std::uint8_t info, std::uint8_t other) {
    put<std::uint32_t>(symtab, static_cast<std::uint32_t>(strtab.size()));
    strtab += name + '\0';
    put<std::uint8_t>(symtab, info);
    put<std::uint8_t>(symtab, other);
    put<std::uint16_t>(symtab, 0);
    put<std::uint64_t>(symtab, 0);
    put<std::uint64_t>(symtab, 0);
  };
  add_symbol(".text.section_symbol", 0x03, 0);
  std::string info;
  put<std::uint8_t>(info, 0x03);  // an HVAL attribute (EIATTR_SPARSE_MMA_MASK), skipped
  put<std::uint8_t>(info, 0x50);
  put<std::uint16_t>(info, 0);
  put<std::uint8_t>(info, 0x04);  // an SVAL of another size (EIATTR_CUDA_API_VERSION), skipped
  put<std::uint8_t>(info, 0x37);
  put<std::uint16_t>(info, 4);
  put<std::uint32_t>(info, 0x80);
  std::vector<SectionSpec> sections;
  for (std::size_t index = 0; index < functions.size(); ++index) {
    const FakeFunction& function = functions[index];
    const auto symbol = static_cast<std::uint32_t>(index + 2);
    add_symbol(function.name, 0x12, function.entry ? 0x10 : 0x00);
    attribute_sval(info, 0x2f, symbol, function.registers);
    attribute_sval(info, 0x11, symbol, function.frame_size);
    attribute_sval(info, 0x12, symbol, function.min_stack_size);
    if (function.max_stack_size) attribute_sval(info, 0x23, symbol, *function.max_stack_size);
    std::string own;
    if (function.max_registers) {
      put<std::uint8_t>(own, 0x03);
      put<std::uint8_t>(own, 0x1b);
      put<std::uint16_t>(own, *function.max_registers);
    }
    // Parameters as ptxas lists them: the last first, each a 12-byte EIATTR_KPARAM_INFO.
    std::vector<std::uint32_t> offsets;
    std::uint32_t offset = 0;
    for (std::uint32_t size : function.param_sizes) {
      const std::uint32_t align = size >= 8 ? 8 : size;
      offset = (offset + align - 1) / align * align;
      offsets.push_back(offset);
      offset += size;
    }
    for (std::size_t p = function.param_sizes.size(); p-- > 0;) {
      put<std::uint8_t>(own, 0x04);
      put<std::uint8_t>(own, 0x17);
      put<std::uint16_t>(own, 12);
      put<std::uint32_t>(own, 0);
      put<std::uint16_t>(own, static_cast<std::uint16_t>(p));
      put<std::uint16_t>(own, static_cast<std::uint16_t>(offsets[p]));
      put<std::uint32_t>(own, (function.param_sizes[p] << 18) | 0x1f000);
    }
    put<std::uint8_t>(own, 0x04);  // EIATTR_EXIT_INSTR_OFFSETS: 8 bytes that are no symbol/value pair
    put<std::uint8_t>(own, 0x1c);
    put<std::uint16_t>(own, 8);
    put<std::uint32_t>(own, 0x260);
    put<std::uint32_t>(own, 0x2f);
    sections.push_back({".nv.info." + function.name, 0x70000000, own, own.size(), 3, 0});
    sections.push_back({".text." + function.name, 1, std::string(64, '\x5a'), 64, 0, 0});
    if (function.static_shared) sections.push_back({".nv.shared." + function.name, 8, "", function.static_shared, 0, 0});
    if (function.local) sections.push_back({".nv.local." + function.name, 8, "", function.local, 0, 0});
    if (function.constant0)
      sections.push_back({".nv.constant0." + function.name, 1, std::string(function.constant0, '\0'), function.constant0, 0, 0});
  }
  std::vector<SectionSpec> all = {{"", 0, "", 0, 0, 0}, {".shstrtab", 3, "", 0, 0, 0}, {".strtab", 3, strtab, strtab.size(), 0, 0},
                                  {".symtab", 2, symtab, symtab.size(), 2, 24}, {".nv.info", 0x70000000, info, info.size(), 3, 0}};
  all.insert(all.end(), sections.begin(), sections.end());
  all.push_back({".nv.shared.reserved.0", 8, "", reserved_shared, 0, 0});
  std::string shstrtab(1, '\0');
  std::vector<std::uint32_t> name_offsets;
  for (const SectionSpec& section : all) {
    name_offsets.push_back(section.name.empty() ? 0 : static_cast<std::uint32_t>(shstrtab.size()));
    if (!section.name.empty()) shstrtab += section.name + '\0';
  }
  all[1].data = shstrtab;
  all[1].size = shstrtab.size();

  std::string out(64, '\0');
  std::vector<std::uint64_t> offsets;
  for (const SectionSpec& section : all) {
    offsets.push_back(out.size());
    out += section.data;
  }
  const std::uint64_t table = out.size();
  for (std::size_t index = 0; index < all.size(); ++index) {
    const SectionSpec& section = all[index];
    put<std::uint32_t>(out, name_offsets[index]);
    put<std::uint32_t>(out, section.type);
    put<std::uint64_t>(out, 0);
    put<std::uint64_t>(out, 0);
    put<std::uint64_t>(out, offsets[index]);
    put<std::uint64_t>(out, section.size);
    put<std::uint32_t>(out, section.link);
    put<std::uint32_t>(out, 0);
    put<std::uint64_t>(out, 1);
    put<std::uint64_t>(out, section.entry_size);
  }
  std::string header;
  header += "\x7f" "ELF";
  header += '\x02';  // 64-bit
  header += '\x01';  // little-endian
  header += '\x01';  // version
  header += '\x33';  // OS ABI (CUDA)
  header += static_cast<char>(abi_version);
  header.append(7, '\0');
  put<std::uint16_t>(header, 2);    // ET_EXEC
  put<std::uint16_t>(header, 190);  // EM_CUDA
  put<std::uint32_t>(header, 1);
  put<std::uint64_t>(header, 0);      // entry
  put<std::uint64_t>(header, 0);      // program headers
  put<std::uint64_t>(header, table);  // section headers
  put<std::uint32_t>(header, flags);
  put<std::uint16_t>(header, 64);
  put<std::uint16_t>(header, 56);
  put<std::uint16_t>(header, 0);
  put<std::uint16_t>(header, 64);
  put<std::uint16_t>(header, static_cast<std::uint16_t>(all.size()));
  put<std::uint16_t>(header, 1);  // .shstrtab
  out.replace(0, 64, header);
  return out;
}

}  // namespace taot::codegen::testing
