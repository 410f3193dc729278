// Reading an AMDGPU code object's metadata note.
//
// ELF notes are records of a 32-bit name size, a 32-bit descriptor size, a 32-bit type, then the
// name (with its NUL) and the descriptor, each padded to the note section's alignment (4, or 8
// when the section says so). Code objects v3 and later keep their metadata in one note of type
// NT_AMDGPU_METADATA (32) named "AMDGPU" whose descriptor is a MessagePack map (LLVM's
// AMDGPUUsage, "Code Object V3 Metadata" and later); Triton 3.6 writes v5. The tests compare the
// facts with what pyelftools and msgpack read from real code objects.
#include "taot/codegen/amdgpu_code_object.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "elf.h"

namespace taot::codegen {

namespace {

using json = nlohmann::json;

constexpr std::uint32_t kNoteAmdgpuMetadata = 32;  // NT_AMDGPU_METADATA
constexpr std::string_view kNoteOwner = "AMDGPU";

// The descriptor of the NT_AMDGPU_METADATA note; nullopt when there is none; an error when a note
// runs past the end of its section.
Expected<std::optional<std::string_view>> metadata_note(const elf::Reader& reader,
                                                        const std::vector<elf::Section>& sections) {
  for (const elf::Section& section : sections) {
    if (section.type != elf::kSectionNote) continue;
    const std::uint64_t align = section.alignment == 8 ? 8 : 4;
    auto padded = [align](std::uint64_t size) { return (size + align - 1) / align * align; };
    const std::uint64_t end = section.offset + section.file_size;
    for (std::uint64_t at = section.offset; end - at >= 12;) {
      const auto name_size = reader.read<std::uint32_t>(at);
      const auto descriptor_size = reader.read<std::uint32_t>(at + 4);
      const auto type = reader.read<std::uint32_t>(at + 8);
      const std::uint64_t descriptor_at = at + 12 + padded(name_size);
      if (descriptor_at > end || descriptor_size > end - descriptor_at)
        return reader.error("a note runs past the end of " + section.name);
      std::string_view owner = reader.bytes(at + 12, name_size);
      if (!owner.empty() && owner.back() == '\0') owner.remove_suffix(1);
      if (type == kNoteAmdgpuMetadata && owner == kNoteOwner)
        return std::optional<std::string_view>(reader.bytes(descriptor_at, descriptor_size));
      at = std::min(end, descriptor_at + padded(descriptor_size));
    }
  }
  return std::optional<std::string_view>();
}

// A kernel's entries of the metadata map, read with messages that name the kernel and the key.
class KernelEntries {
 public:
  KernelEntries(const json& map, std::string label) : map_(map), label_(std::move(label)) {}

  // A count that must be there.
  std::uint32_t count(const char* key) {
    std::optional<std::uint32_t> value = optional_count(key);
    if (!value && problem_.empty()) problem_ = label_ + " has no " + key;
    return value.value_or(0);
  }
  std::optional<std::uint32_t> optional_count(const char* key) {
    auto found = map_.find(key);
    if (found == map_.end()) return std::nullopt;
    if (!found->is_number_unsigned() || found->get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
      if (problem_.empty()) problem_ = label_ + "'s " + key + " is not a count: " + found->dump();
      return std::nullopt;
    }
    return static_cast<std::uint32_t>(found->get<std::uint64_t>());
  }
  std::string text(const char* key) {
    auto found = map_.find(key);
    if (found != map_.end() && found->is_string()) return found->get<std::string>();
    if (problem_.empty())
      problem_ = found == map_.end() ? label_ + " has no " + key : label_ + "'s " + key + " is not a string";
    return {};
  }
  // A flag, false when absent (MessagePack booleans; LLVM has also written them as 0 and 1).
  bool flag(const char* key) {
    auto found = map_.find(key);
    if (found == map_.end()) return false;
    if (found->is_boolean()) return found->get<bool>();
    if (found->is_number_unsigned()) return found->get<std::uint64_t>() != 0;
    if (problem_.empty()) problem_ = label_ + "'s " + key + " is not a flag: " + found->dump();
    return false;
  }
  // The first entry that was missing or of the wrong kind; empty when none was.
  const std::string& problem() const { return problem_; }

 private:
  const json& map_;
  std::string label_;
  std::string problem_;
};

AmdgpuKernel read_kernel(const json& map, std::size_t index, std::string& problem) {
  AmdgpuKernel kernel;
  const auto name = map.find(".name");
  KernelEntries entries(map, name != map.end() && name->is_string()
                                 ? "kernel " + name->get<std::string>()
                                 : "kernel " + std::to_string(index) + " of amdhsa.kernels");
  kernel.name = entries.text(".name");
  kernel.symbol = entries.text(".symbol");
  kernel.vgprs = entries.count(".vgpr_count");
  kernel.sgprs = entries.count(".sgpr_count");
  kernel.agprs = entries.optional_count(".agpr_count");
  kernel.vgpr_spills = entries.optional_count(".vgpr_spill_count");
  kernel.sgpr_spills = entries.optional_count(".sgpr_spill_count");
  kernel.lds = entries.count(".group_segment_fixed_size");
  kernel.scratch = entries.count(".private_segment_fixed_size");
  kernel.dynamic_stack = entries.flag(".uses_dynamic_stack");
  kernel.wavefront_size = entries.count(".wavefront_size");
  kernel.kernarg_size = entries.count(".kernarg_segment_size");
  kernel.max_flat_workgroup_size = entries.count(".max_flat_workgroup_size");
  problem = entries.problem();
  return kernel;
}

}  // namespace

const AmdgpuKernel* AmdgpuCodeObject::find(std::string_view name) const noexcept {
  for (const AmdgpuKernel& kernel : kernels)
    if (kernel.name == name) return &kernel;
  return nullptr;
}

std::string AmdgpuCodeObject::processor() const {
  // "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-" (Triton 3.6's LLVM), "amdgpu9.42-amd-amdhsa-unknown-gfx942"
  // (3.9's): the component that starts with "gfx", without its features.
  std::size_t start = 0;
  while (start < target_id.size()) {
    const std::size_t end = std::min(target_id.find('-', start), target_id.size());
    if (target_id.compare(start, 3, "gfx") == 0) {
      const std::string component = target_id.substr(start, end - start);
      return component.substr(0, component.find(':'));
    }
    start = end + 1;
  }
  return {};
}

bool is_amdgpu_code_object(std::string_view bytes) noexcept { return elf::machine(bytes) == elf::kMachineAmdgpu; }

Expected<AmdgpuCodeObject> read_amdgpu_code_object(std::string_view bytes, const std::string& name) {
  const elf::Reader reader(bytes, name, "AMDGPU code object");
  if (Status header = reader.check_header(elf::kMachineAmdgpu, "not an AMDGPU ELF (e_machine is not EM_AMDGPU)");
      !header.ok())
    return header;
  Expected<std::vector<elf::Section>> sections = reader.sections();
  if (!sections.ok()) return std::move(sections).take_status();
  Expected<std::optional<std::string_view>> note = metadata_note(reader, *sections);
  if (!note.ok()) return std::move(note).take_status();
  if (!note->has_value())
    return reader.error("no AMDGPU metadata note (NT_AMDGPU_METADATA; code objects v3 and later have one)");

  json metadata;
  try {
    metadata = json::from_msgpack(**note, /*strict=*/true, /*allow_exceptions=*/false);
  } catch (const json::exception& error) {  // the parser's own failures come back discarded; this is for the rest
    return reader.error(std::string("its metadata note is not MessagePack: ") + error.what());
  }
  if (metadata.is_discarded()) return reader.error("its metadata note is not MessagePack");
  if (!metadata.is_object()) return reader.error("its metadata note is not a MessagePack map");
  const auto kernels = metadata.find("amdhsa.kernels");
  if (kernels == metadata.end() || !kernels->is_array())
    return reader.error("its metadata note has no amdhsa.kernels list");

  AmdgpuCodeObject object;
  if (const auto target = metadata.find("amdhsa.target"); target != metadata.end() && target->is_string())
    object.target_id = target->get<std::string>();
  for (std::size_t index = 0; index < kernels->size(); ++index) {
    const json& entry = (*kernels)[index];
    if (!entry.is_object()) return reader.error("entry " + std::to_string(index) + " of amdhsa.kernels is not a map");
    std::string problem;
    object.kernels.push_back(read_kernel(entry, index, problem));
    if (!problem.empty()) return reader.error(problem);
  }
  return object;
}

Expected<AmdgpuCodeObject> read_amdgpu_code_object_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return input_error("cannot read " + path.string());
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return read_amdgpu_code_object(bytes, path.string());
}

}  // namespace taot::codegen
