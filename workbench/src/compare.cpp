// Facts of an image and their differences. metadata_facts and resource_facts show a row for each
// fact taot/image_fields.h names for `taot diff` (tests/unit/workbench/compare_test.cpp checks them);
// an AMD image's resource rows are its code object's metadata instead of ptxas' and the cubin's.
#include "taot/workbench/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>


namespace taot::workbench {

namespace {

std::string text(const std::optional<std::uint32_t>& value) { return value ? std::to_string(*value) : "-"; }

std::vector<Difference> differences(const std::vector<NamedValue>& a, const std::vector<NamedValue>& b) {
  std::vector<Difference> found;
  auto value_in = [](const std::vector<NamedValue>& values, const std::string& name) -> const std::string* {
    for (const NamedValue& value : values)
      if (value.name == name) return &value.value;
    return nullptr;
  };
  for (const NamedValue& left : a) {
    const std::string* right = value_in(b, left.name);
    if (right == nullptr || *right != left.value) found.push_back({left.name, left.value, right ? *right : "-"});
  }
  for (const NamedValue& right : b)
    if (value_in(a, right.name) == nullptr) found.push_back({right.name, "-", right.value});
  return found;
}

// The TMA maps an image takes, one "swizzle S, E-byte elements (type T), box AxB" per descriptor
// argument; "-" for none (below sm_90, or no descriptors).
std::string tensordesc_meta_text(const std::vector<codegen::TensordescMeta>& metas) {
  if (metas.empty()) return "-";
  std::string text;
  for (const codegen::TensordescMeta& meta : metas) {
    if (!text.empty()) text += "; ";
    text += fmt::format("swizzle {}, {}-byte elements (type {}{}), box {}", meta.swizzle, meta.elem_size,
                        meta.elem_type, meta.fp4_padded ? ", fp4 padded" : "", fmt::join(meta.block_size, "x"));
  }
  return text;
}

}  // namespace

std::optional<std::uint64_t> ResourceUsage::shared() const {
  if (!static_shared && !dynamic_shared) return std::nullopt;
  return static_shared.value_or(0) + dynamic_shared.value_or(0);
}

ResourceUsage resource_usage(const ImageView& image) {
  ResourceUsage usage;
  const std::optional<codegen::PtxasReport> ptxas =
      image.manifest_image ? image.manifest_image->ptxas : std::optional<codegen::PtxasReport>();
  if (ptxas) {
    usage.from_ptxas = true;
    usage.registers = ptxas->registers;
    usage.spill_stores = ptxas->spill_stores;
    usage.spill_loads = ptxas->spill_loads;
    usage.stack = ptxas->stack;
  }
  if (image.resources) {
    if (!usage.registers) usage.registers = image.resources->registers;
    if (!usage.stack) usage.stack = image.resources->stack();
    usage.local = image.resources->local;
    usage.static_shared = image.resources->static_shared;
  }
  if (image.manifest_image) usage.dynamic_shared = image.manifest_image->shared;
  return usage;
}

std::vector<NamedValue> metadata_facts(const ImageView& image) {
  std::vector<NamedValue> facts = {{"kernel", image.kernel}, {"target", image.target}};
  if (!image.manifest_image) return facts;
  const codegen::Image& m = *image.manifest_image;
  auto add = [&facts](std::string name, std::string value) { facts.push_back({std::move(name), std::move(value)}); };
  add("arch", std::to_string(m.arch) + (m.arch_specific ? "a" : ""));
  add("num_warps", std::to_string(m.num_warps));
  add("num_ctas", std::to_string(m.num_ctas));
  add("num_stages", std::to_string(m.num_stages));
  add("shared", std::to_string(m.shared));
  add("global_scratch_size", std::to_string(m.global_scratch_size));
  add("global_scratch_align", std::to_string(m.global_scratch_align));
  add("profile_scratch_size", std::to_string(m.profile_scratch_size));
  add("profile_scratch_align", std::to_string(m.profile_scratch_align));
  add("cluster_dims", fmt::format("{}x{}x{}", m.cluster_dims[0], m.cluster_dims[1], m.cluster_dims[2]));
  add("maxnreg", m.maxnreg ? std::to_string(*m.maxnreg) : "-");
  add("tmem_size", std::to_string(m.tmem_size));
  add("launch_pdl", m.launch_pdl ? "true" : "false");
  add("launch_cooperative_grid", m.launch_cooperative_grid ? "true" : "false");
  add("triton_version", m.triton_version.empty() ? "-" : m.triton_version);
  add("ptxas_version", m.ptxas_version ? *m.ptxas_version : "-");
  add("tensordesc_layout", abi::tensordesc_layout_name(m.launch_abi.tensordesc_layout));
  add("tensordesc_meta", tensordesc_meta_text(m.tensordesc_meta));
  add("override", m.override_from ? m.override_from->stage + " " + m.override_from->sha256.substr(0, 12) : "-");
  return facts;
}

std::vector<NamedValue> resource_facts(const ImageView& image) {
  if (image.amd()) {
    if (!image.amdgpu)
      return {{"vgprs", "-"},     {"sgprs", "-"},   {"agprs", "-"},         {"vgpr_spills", "-"}, {"sgpr_spills", "-"},
              {"lds_fixed", "-"}, {"scratch", "-"}, {"dynamic_stack", "-"}, {"wavefront_size", "-"}};
    const codegen::AmdgpuKernel& k = *image.amdgpu;
    return {{"vgprs", std::to_string(k.vgprs)},
            {"sgprs", std::to_string(k.sgprs)},
            {"agprs", text(k.agprs)},
            {"vgpr_spills", text(k.vgpr_spills)},
            {"sgpr_spills", text(k.sgpr_spills)},
            {"lds_fixed", std::to_string(k.lds)},
            {"scratch", std::to_string(k.scratch)},
            {"dynamic_stack", k.dynamic_stack ? "true" : "false"},
            {"wavefront_size", std::to_string(k.wavefront_size)}};
  }
  const ResourceUsage usage = resource_usage(image);
  return {{"registers", text(usage.registers)},     {"spill_stores", text(usage.spill_stores)},
          {"spill_loads", text(usage.spill_loads)}, {"stack", text(usage.stack)},
          {"local", text(usage.local)},             {"static_shared", text(usage.static_shared)}};
}

ImageComparison compare_images(const ImageView& a, const ImageView& b) {
  ImageComparison comparison;
  auto config_facts = [](const ImageView& image) {
    std::vector<NamedValue> facts;
    for (const ConfigSetting& setting : image.config) facts.push_back({setting.name, setting.text});
    return facts;
  };
  comparison.config = differences(config_facts(a), config_facts(b));
  comparison.specialization = differences(a.specialization, b.specialization);
  comparison.metadata = differences(metadata_facts(a), metadata_facts(b));
  comparison.resources = differences(resource_facts(a), resource_facts(b));
  return comparison;
}

}  // namespace taot::workbench
