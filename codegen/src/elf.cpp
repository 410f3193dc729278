// The ELF header and section headers, for the cubin and AMDGPU code object readers.
#include "elf.h"

namespace taot::codegen::elf {

std::optional<std::uint16_t> machine(std::string_view bytes) noexcept {
  if (bytes.size() < 64 || std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0) return std::nullopt;
  if (bytes[4] != 2 || bytes[5] != 1) return std::nullopt;
  std::uint16_t value = 0;
  std::memcpy(&value, bytes.data() + 18, sizeof value);
  return value;
}

std::string Reader::string_at(const Section& table, std::uint64_t index) const {
  if (index >= table.file_size) return {};
  const char* start = bytes_.data() + table.offset + index;
  const std::size_t limit = static_cast<std::size_t>(table.file_size - index);
  return std::string(start, strnlen(start, limit));
}

Status Reader::error(const std::string& what) const {
  return input_error(name_ + ": not a valid " + std::string(kind_) + ": " + what);
}

Status Reader::check_header(std::uint16_t machine, const std::string& wrong_machine) const {
  if (bytes_.size() < 64 || std::memcmp(bytes_.data(), "\x7f" "ELF", 4) != 0) return error("no ELF header");
  if (bytes_[4] != 2 || bytes_[5] != 1) return error("not a 64-bit little-endian ELF");
  if (read<std::uint16_t>(18) != machine) return error(wrong_machine);
  return Status();
}

Expected<std::vector<Section>> Reader::sections() const {
  const auto section_offset = read<std::uint64_t>(40);
  const auto section_entry_size = read<std::uint16_t>(58);
  const auto section_count = read<std::uint16_t>(60);
  const auto names_index = read<std::uint16_t>(62);
  if (section_entry_size < 64 || !has(section_offset, std::uint64_t{section_entry_size} * section_count))
    return error("the section header table runs past the end");
  if (names_index >= section_count) return error("no section name table");
  std::vector<Section> sections(section_count);
  for (std::uint16_t index = 0; index < section_count; ++index) {
    const std::uint64_t at = section_offset + std::uint64_t{section_entry_size} * index;
    Section& section = sections[index];
    section.type = read<std::uint32_t>(at + 4);
    section.offset = read<std::uint64_t>(at + 24);
    section.size = read<std::uint64_t>(at + 32);
    section.link = read<std::uint32_t>(at + 40);
    section.alignment = read<std::uint64_t>(at + 48);
    section.entry_size = read<std::uint64_t>(at + 56);
    section.file_size = section.type == kSectionNoBits ? 0 : section.size;
    if (section.file_size > 0 && !has(section.offset, section.file_size))
      return error("section " + std::to_string(index) + " runs past the end");
  }
  for (std::uint16_t index = 0; index < section_count; ++index) {
    const std::uint64_t at = section_offset + std::uint64_t{section_entry_size} * index;
    sections[index].name = string_at(sections[names_index], read<std::uint32_t>(at));
  }
  return sections;
}

}  // namespace taot::codegen::elf
