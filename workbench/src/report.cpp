// Tables and JSON for inspect and diff.
#include "taot/workbench/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "taot/toolchain.h"

namespace taot::workbench {

namespace {

using json = nlohmann::json;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// Columns padded to their widest cell; `right` marks right-aligned (numeric) columns. No trailing
// spaces.
std::string render_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                         const std::vector<bool>& right, std::string_view indent = "") {
  std::vector<std::size_t> widths(header.size());
  for (std::size_t column = 0; column < header.size(); ++column) widths[column] = header[column].size();
  for (const auto& row : rows)
    for (std::size_t column = 0; column < row.size() && column < widths.size(); ++column)
      widths[column] = std::max(widths[column], row[column].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text(indent);
    for (std::size_t column = 0; column < cells.size(); ++column) {
      if (column > 0) text += "  ";
      const std::size_t pad = widths[column] - std::min(widths[column], cells[column].size());
      if (right[column]) text += std::string(pad, ' ') + cells[column];
      else text += cells[column] + std::string(pad, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out;
}

std::string optional_text(const std::optional<std::uint32_t>& value) { return value ? std::to_string(*value) : "-"; }
std::string optional_text(const std::optional<std::uint64_t>& value) { return value ? std::to_string(*value) : "-"; }

// `out` with the schema of `taot COMMAND --json`.
json with_schema(json out, const char* command) {
  out["schema"] = std::string("taot.") + command;
  out["schema_version"] = kJsonSchemaVersion;
  return out;
}

json optional_json(const std::optional<std::uint32_t>& value) { return value ? json(*value) : json(nullptr); }
json optional_json(const std::optional<std::uint64_t>& value) { return value ? json(*value) : json(nullptr); }

json config_json(const codegen::ConfigValue& value) {
  return std::visit(Overloaded{[](std::int64_t integer) { return json(integer); }, [](double real) { return json(real); },
                               [](bool flag) { return json(flag); },
                               [](codegen::DType dtype) { return json(std::string(codegen::dtype_name(dtype))); },
                               [](const std::string& text) { return json(text); }},
                    value);
}

std::string origin_name(Inventory::Origin origin) {
  switch (origin) {
    case Inventory::Origin::library: return "library";
    case Inventory::Origin::manifest: return "manifest";
    case Inventory::Origin::cubin: return "cubin";
    case Inventory::Origin::code_object: return "code_object";
  }
  return "?";
}

// The oldest NVIDIA driver release that loads the image's cubin, by its ptxas' CUDA release; 0
// when unknown.
unsigned min_driver(const codegen::Image& image) {
  return image.ptxas_version ? toolchain::min_driver_for_ptxas(image.ptxas_version->c_str()) : 0;
}

std::string override_text(const ImageView& image) {
  if (!image.manifest_image || !image.manifest_image->override_from) return "-";
  const codegen::IrOverride& from = *image.manifest_image->override_from;
  return from.stage + " " + from.sha256.substr(0, 12);
}

std::string distinct_listing(const std::vector<const ImageView*>& images, std::string ImageView::*member) {
  std::vector<std::string> seen;
  for (const ImageView* image : images)
    if (std::find(seen.begin(), seen.end(), image->*member) == seen.end()) seen.push_back(image->*member);
  std::string text;
  for (const std::string& item : seen) text += (text.empty() ? "" : ", ") + item;
  return text;
}

std::size_t distinct_count(const std::vector<const ImageView*>& images, std::string ImageView::*member) {
  std::set<std::string> seen;
  for (const ImageView* image : images) seen.insert(image->*member);
  return seen.size();
}

void add_differences(std::string& out, std::string_view title, const std::vector<Difference>& found) {
  if (found.empty()) {
    out += fmt::format("{}: same\n", title);
    return;
  }
  out += fmt::format("{} (a -> b):\n", title);
  std::size_t name_width = 0, a_width = 0;
  for (const Difference& difference : found) {
    name_width = std::max(name_width, difference.name.size());
    a_width = std::max(a_width, difference.a.size());
  }
  for (const Difference& difference : found)
    out += fmt::format("  {:<{}}  {:>{}} -> {}\n", difference.name, name_width, difference.a, a_width, difference.b);
}

// An AMD image's LDS per workgroup: the code object's fixed LDS and the dynamic LDS its launch asks
// for (the manifest's "shared"; Triton's AMD backend allocates all of it so). Absent when neither
// is known.
struct LdsUsage {
  std::optional<std::uint32_t> fixed;
  std::optional<std::uint64_t> dynamic;
  std::optional<std::uint64_t> total() const {
    if (!fixed && !dynamic) return std::nullopt;
    return fixed.value_or(0) + dynamic.value_or(0);
  }
};

LdsUsage lds_usage(const ImageView& image) {
  LdsUsage lds;
  if (image.amdgpu) lds.fixed = image.amdgpu->lds;
  if (image.manifest_image) lds.dynamic = image.manifest_image->shared;
  return lds;
}

// The cells of an image's launch options: num_warps, num_stages, num_ctas ("-" for a bare file).
std::vector<std::string> launch_cells(const codegen::Image* m) {
  return {m ? std::to_string(m->num_warps) : "-", m ? std::to_string(m->num_stages) : "-",
          m ? std::to_string(m->num_ctas) : "-"};
}

// The rows of AMD images: the code object's metadata where it was read, "-" where not.
std::string amd_table(const std::vector<const ImageView*>& images, bool bare) {
  std::vector<std::vector<std::string>> rows;
  for (const ImageView* image : images) {
    const codegen::Image* m = image->manifest_image ? &*image->manifest_image : nullptr;
    const std::optional<codegen::AmdgpuKernel>& k = image->amdgpu;
    std::string spills = "-";
    if (k && (k->vgpr_spills || k->sgpr_spills)) spills = optional_text(k->vgpr_spills) + "/" + optional_text(k->sgpr_spills);
    std::vector<std::string> row = {image->kernel};
    if (!bare) row.push_back(image->variant);
    row.insert(row.end(), {image->target, k ? std::to_string(k->vgprs) : "-", k ? std::to_string(k->sgprs) : "-",
                           k ? optional_text(k->agprs) : "-", spills, optional_text(lds_usage(*image).total()),
                           k ? std::to_string(k->scratch) + (k->dynamic_stack ? "+" : "") : "-",
                           k ? std::to_string(k->wavefront_size) : "-"});
    const std::vector<std::string> launch = launch_cells(m);
    row.insert(row.end(), launch.begin(), launch.end());
    if (!bare)
      row.insert(row.end(), {m && !m->triton_version.empty() ? m->triton_version : "-", override_text(*image)});
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"KERNEL"};
  std::vector<bool> right = {false};
  if (!bare) header.push_back("VARIANT"), right.push_back(false);
  for (const char* name : {"TARGET", "VGPRS", "SGPRS", "AGPRS", "SPILL V/S", "LDS", "SCRATCH", "WAVE", "WARPS", "STAGES", "CTAS"}) {
    header.push_back(name);
    right.push_back(std::string_view(name) != "TARGET");
  }
  if (!bare) {
    header.insert(header.end(), {"TRITON", "OVERRIDE"});
    right.insert(right.end(), {false, false});
  }
  return render_table(header, rows, right);
}

json amdgpu_json(const ImageView& image) {
  if (!image.amdgpu) return nullptr;
  const codegen::AmdgpuKernel& k = *image.amdgpu;
  const LdsUsage lds = lds_usage(image);
  return {{"symbol", k.symbol},
          {"vgprs", k.vgprs},
          {"sgprs", k.sgprs},
          {"agprs", optional_json(k.agprs)},
          {"vgpr_spills", optional_json(k.vgpr_spills)},
          {"sgpr_spills", optional_json(k.sgpr_spills)},
          {"lds", optional_json(lds.total())},
          {"lds_fixed", k.lds},
          {"lds_dynamic", optional_json(lds.dynamic)},
          {"scratch", k.scratch},
          {"dynamic_stack", k.dynamic_stack},
          {"wavefront_size", k.wavefront_size},
          {"kernarg_size", k.kernarg_size},
          {"max_flat_workgroup_size", k.max_flat_workgroup_size}};
}

json differences_json(const std::vector<Difference>& found) {
  json object = json::object();
  for (const Difference& difference : found) object[difference.name] = {{"a", difference.a}, {"b", difference.b}};
  return object;
}

}  // namespace

std::string inspect_table(const Inventory& inventory, const std::vector<const ImageView*>& images) {
  const bool bare = inventory.bare();
  // NVIDIA and AMD images have different facts: a table each, NVIDIA's first (alone when no image
  // was chosen).
  std::vector<const ImageView*> nvidia, amd;
  for (const ImageView* image : images) (image->amd() ? amd : nvidia).push_back(image);
  const bool show_nvidia = !nvidia.empty() || amd.empty();
  std::vector<std::vector<std::string>> rows;
  bool all_from_ptxas = true;
  for (const ImageView* image : nvidia) {
    const ResourceUsage usage = resource_usage(*image);
    all_from_ptxas = all_from_ptxas && usage.from_ptxas;
    const codegen::Image* m = image->manifest_image ? &*image->manifest_image : nullptr;
    std::string spills = "-";
    if (usage.spill_stores || usage.spill_loads) spills = optional_text(usage.spill_stores) + "/" + optional_text(usage.spill_loads);
    std::string scratch = "-";
    if (m) {
      scratch = std::to_string(m->global_scratch_size);
      if (m->profile_scratch_size > 0) scratch += fmt::format("+{}p", m->profile_scratch_size);
    }
    std::vector<std::string> row = {image->kernel};
    if (!bare) row.push_back(image->variant);
    row.insert(row.end(), {image->target, optional_text(usage.registers), spills, optional_text(usage.stack),
                           optional_text(usage.shared()), optional_text(usage.local),
                           m ? std::to_string(m->num_warps) : "-", m ? std::to_string(m->num_stages) : "-",
                           m ? std::to_string(m->num_ctas) : "-", scratch});
    if (!bare) {
      const unsigned driver = m ? min_driver(*m) : 0;
      row.insert(row.end(), {m && !m->triton_version.empty() ? m->triton_version : "-",
                             m && m->ptxas_version ? *m->ptxas_version : "-", driver ? std::to_string(driver) : "-",
                             override_text(*image)});
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"KERNEL"};
  std::vector<bool> right = {false};
  if (!bare) header.push_back("VARIANT"), right.push_back(false);
  for (const char* name : {"TARGET", "REGS", "SPILL ST/LD", "STACK", "SMEM", "LOCAL", "WARPS", "STAGES", "CTAS", "SCRATCH"}) {
    header.push_back(name);
    right.push_back(std::string_view(name) != "TARGET");
  }
  if (!bare) {
    header.insert(header.end(), {"TRITON", "PTXAS", "DRIVER", "OVERRIDE"});
    right.insert(right.end(), {false, false, true, false});
  }
  std::string out = show_nvidia ? render_table(header, rows, right) : std::string();
  if (!amd.empty()) {
    if (show_nvidia) out += "\n";
    out += amd_table(amd, bare);
  }

  const std::size_t kernels = distinct_count(images, &ImageView::kernel);
  if (bare) {
    out += fmt::format("{} kernel{} in {} ({})\n", images.size(), images.size() == 1 ? "" : "s",
                       inventory.path.string(), distinct_listing(images, &ImageView::target));
  } else {
    const std::string of_total = images.size() == inventory.images.size() ? "" : fmt::format(" of {}", inventory.images.size());
    out += fmt::format("{}{} image{}: {} variant{} of {} kernel{} ({}), targets {}\n", images.size(), of_total,
                       inventory.images.size() == 1 ? "" : "s", distinct_count(images, &ImageView::variant),
                       distinct_count(images, &ImageView::variant) == 1 ? "" : "s", kernels, kernels == 1 ? "" : "s",
                       distinct_listing(images, &ImageView::kernel), distinct_listing(images, &ImageView::target));
  }
  if (show_nvidia)
    out += std::string("REGS per thread") + (bare || !all_from_ptxas ? " (from the cubin where ptxas' report was not recorded)" : " (ptxas' report)") +
           "; SPILL ST/LD, STACK, LOCAL: bytes per thread; SMEM: bytes per block (static + dynamic); "
           "SCRATCH: global scratch bytes per program" +
           (bare ? std::string() : "; DRIVER: the oldest NVIDIA driver that loads the cubin (CUDA minor-version "
                                   "compatibility of its ptxas' release)") +
           "\n";
  if (!amd.empty())
    out += std::string("AMD images, from the code object's metadata note: VGPRS per work-item (with the AGPRS on "
                       "gfx90a and later, whose one register file holds both), AGPRS per work-item, SGPRS per "
                       "wavefront; SPILL V/S: spill stores of VGPRs/SGPRs; LDS: bytes per workgroup (the code object's fixed "
                       "LDS") +
           (bare ? "" : " + the launch's dynamic LDS") +
           "); SCRATCH: private bytes per work-item (+: more at run time, the stack is dynamic); WAVE: lanes per "
           "wavefront" +
           (bare ? "" : "; WARPS: wavefronts per workgroup") + "\n";
  for (const ImageView* image : images)
    if (!image->cubin_problem.empty()) out += fmt::format("note: {}: {}\n", image->label(), image->cubin_problem);
  return out;
}

std::string inspect_json(const Inventory& inventory, const std::vector<const ImageView*>& images) {
  json out = {{"origin", origin_name(inventory.origin)}, {"path", inventory.path.string()}, {"library", inventory.library},
              {"count", images.size()}, {"total", inventory.images.size()}};
  json list = json::array();
  for (const ImageView* image : images) {
    const ResourceUsage usage = resource_usage(*image);
    json entry = {{"kernel", image->kernel},
                  {"function", image->function},
                  {"variant", image->variant.empty() ? json(nullptr) : json(image->variant)},
                  {"target", image->target},
                  {"cubin", image->cubin.string()},
                  {"registers", optional_json(usage.registers)},
                  {"registers_from", image->amd() ? json(nullptr) : json(usage.from_ptxas ? "ptxas" : "cubin")},
                  {"spill_stores", optional_json(usage.spill_stores)},
                  {"spill_loads", optional_json(usage.spill_loads)},
                  {"stack", optional_json(usage.stack)},
                  {"local", optional_json(usage.local)},
                  {"shared_static", optional_json(usage.static_shared)},
                  {"shared_dynamic", optional_json(usage.dynamic_shared)},
                  {"shared", optional_json(usage.shared())},
                  {"shared_reserved", image->reserved_shared}};
    json config = json::object();
    for (const ConfigSetting& setting : image->config) config[setting.name] = config_json(setting.value);
    entry["config"] = config;
    json specialization = json::object();
    for (const NamedValue& value : image->specialization) specialization[value.name] = value.value;
    entry["specialization"] = specialization;
    if (const codegen::Image* m = image->manifest_image ? &*image->manifest_image : nullptr) {
      entry["num_warps"] = m->num_warps;
      entry["num_stages"] = m->num_stages;
      entry["num_ctas"] = m->num_ctas;
      entry["cluster_dims"] = m->cluster_dims;
      entry["global_scratch_size"] = m->global_scratch_size;
      entry["profile_scratch_size"] = m->profile_scratch_size;
      entry["tmem_size"] = m->tmem_size;
      entry["triton_version"] = m->triton_version.empty() ? json(nullptr) : json(m->triton_version);
      entry["ptxas_version"] = m->ptxas_version ? json(*m->ptxas_version) : json(nullptr);
      entry["min_driver"] = min_driver(*m) ? json(min_driver(*m)) : json(nullptr);
      entry["launch_abi"] = {{"tensordesc_layout", abi::tensordesc_layout_name(m->launch_abi.tensordesc_layout)},
                             {"scratch_pointers", m->launch_abi.scratch_pointers}};
      entry["maxnreg"] = m->maxnreg ? json(*m->maxnreg) : json(nullptr);
      entry["ptxas"] = m->ptxas ? json{{"registers", m->ptxas->registers}, {"spill_stores", m->ptxas->spill_stores},
                                       {"spill_loads", m->ptxas->spill_loads}, {"stack", m->ptxas->stack}}
                                : json(nullptr);
      entry["override"] = m->override_from ? json{{"stage", m->override_from->stage}, {"sha256", m->override_from->sha256},
                                                  {"file", m->override_from->file}}
                                           : json(nullptr);
      json stages = json::object();
      for (const auto& [stage, path] : image->stages) stages[std::string(stage_name(stage))] = path.string();
      entry["stages"] = stages;
    }
    if (image->resources) {
      const codegen::FunctionResources& r = *image->resources;
      entry["cubin_resources"] = {{"registers", r.registers},   {"stack", r.stack()},
                                  {"frame_size", r.frame_size}, {"static_shared", r.static_shared},
                                  {"local", r.local},           {"constant0", r.constant0},
                                  {"max_registers", r.max_registers ? json(*r.max_registers) : json(nullptr)}};
    } else {
      entry["cubin_resources"] = nullptr;
    }
    entry["amdgpu"] = amdgpu_json(*image);
    entry["problem"] = image->cubin_problem.empty() ? json(nullptr) : json(image->cubin_problem);
    list.push_back(std::move(entry));
  }
  out["images"] = std::move(list);
  return with_schema(std::move(out), "inspect").dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string stage_json(const ImageView& image, Stage stage, const std::string& text, const OpCounts& counts) {
  json ops = json::object();
  for (const auto& [op, count] : counts) ops[op] = count;
  json out = {{"kernel", image.kernel},
                    {"variant", image.variant.empty() ? json(nullptr) : json(image.variant)},
                    {"target", image.target},
                    {"stage", std::string(stage_name(stage))},
                    {"op_counts", ops},
                    {"text", text}};
  return with_schema(std::move(out), "inspect").dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string op_counts_text(const OpCounts& counts) {
  std::vector<std::pair<std::string, std::size_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  std::size_t total = 0;
  for (const auto& [op, count] : sorted) {
    out += fmt::format("{:>8}  {}\n", count, op);
    total += count;
  }
  out += fmt::format("{:>8}  in all ({} distinct)\n", total, sorted.size());
  return out;
}

std::string comparison_text(const ComparisonReport& report) {
  std::string out = fmt::format("a: {}\nb: {}\n", report.a_label, report.b_label);
  if (report.images) {
    add_differences(out, "config", report.images->config);
    add_differences(out, "specialization", report.images->specialization);
    add_differences(out, "metadata", report.images->metadata);
    add_differences(out, "resources", report.images->resources);
  }
  if (report.stage && !report.ops.empty()) {
    std::vector<std::vector<std::string>> rows;
    std::size_t changed = 0;
    for (const OpCountRow& row : report.ops) {
      const bool differs = row.a != row.b;
      changed += differs;
      rows.push_back({differs ? "*" : "", row.op, std::to_string(row.a), std::to_string(row.b)});
    }
    out += fmt::format("op counts ({}, * where they differ: {} of {}):\n", stage_name(*report.stage), changed,
                       report.ops.size());
    out += render_table({"", "op", "a", "b"}, rows, {false, false, true, true}, "  ");
  }
  if (report.diff_asked) {
    if (report.unified_diff.empty()) out += fmt::format("{}: same text\n", report.stage ? stage_name(*report.stage) : "text");
    else out += report.unified_diff;
  }
  return out;
}

std::string comparison_json(const ComparisonReport& report) {
  json out = {{"a", report.a_label}, {"b", report.b_label}};
  if (report.images) {
    out["config"] = differences_json(report.images->config);
    out["specialization"] = differences_json(report.images->specialization);
    out["metadata"] = differences_json(report.images->metadata);
    out["resources"] = differences_json(report.images->resources);
  }
  if (report.stage) {
    out["stage"] = std::string(stage_name(*report.stage));
    json ops = json::object();
    for (const OpCountRow& row : report.ops) ops[row.op] = {row.a, row.b};
    out["op_counts"] = ops;
  }
  if (report.diff_asked) out["diff"] = report.unified_diff;
  return with_schema(std::move(out), "diff").dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace taot::workbench
