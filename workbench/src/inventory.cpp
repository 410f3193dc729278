// Loading a library, manifest, cubin or AMD code object into images, and choosing among them.
#include "taot/workbench/inventory.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <system_error>

#include "taot/codegen/sha256.h"

namespace taot::workbench {

namespace {

namespace fs = std::filesystem;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// "a, b, c" for messages, at most `limit` items and "... (N in all)".
std::string listing(const std::vector<std::string>& items, std::size_t limit = 12) {
  std::string text;
  for (std::size_t index = 0; index < items.size() && index < limit; ++index) {
    if (index > 0) text += ", ";
    text += items[index];
  }
  if (items.size() > limit) text += fmt::format(", ... ({} in all)", items.size());
  return text.empty() ? "none" : text;
}

std::string specialization_text(const codegen::Arg& arg, const codegen::ArgSpecialization& specialization) {
  const std::string type(codegen::dtype_name(specialization.type));
  switch (arg.kind) {
    case codegen::ArgKind::pointer:
      if (specialization.none) return "None";
      return specialization.hint == 16 ? type + " align 16" : type;
    case codegen::ArgKind::int_scalar:
      if (specialization.hint == 1) return type + " ==1";
      return specialization.hint == 16 ? type + " %16" : type;
    case codegen::ArgKind::tensordesc: {
      std::string text = type;
      if (specialization.block < arg.blocks.size()) {
        text += " block [";
        for (std::size_t dim = 0; dim < arg.blocks[specialization.block].size(); ++dim)
          text += (dim ? ", " : "") + std::to_string(arg.blocks[specialization.block][dim]);
        text += "]";
      }
      return text;
    }
    default: return type;
  }
}

// Reads the code object of a manifest's AMD image: its kernel's metadata, or why there is none.
void read_image_code_object(ImageView& view, std::string_view bytes) {
  Expected<codegen::AmdgpuCodeObject> object = codegen::read_amdgpu_code_object(bytes, view.cubin.string());
  if (!object.ok()) {
    view.cubin_problem = object.status().message();
    return;
  }
  if (const codegen::AmdgpuKernel* kernel = object->find(view.function)) {
    view.amdgpu = *kernel;
  } else if (view.cubin_problem.empty()) {
    view.cubin_problem = "the code object has no kernel " + view.function;
  }
}

// Reads the image file of a manifest image: resources of its entry function (a cubin) or its
// kernel's metadata (an AMD code object, by e_machine), or why there are none.
void read_image_file(ImageView& view, const std::string& expected_sha256) {
  Expected<codegen::FileContent> content = codegen::read_file_with_sha256(view.cubin);
  if (!content.ok()) {
    view.cubin_problem = content.status().message();
    return;
  }
  const bool amdgpu = codegen::is_amdgpu_code_object(content->bytes);
  if (!expected_sha256.empty() && content->sha256 != expected_sha256)
    view.cubin_problem = fmt::format("the {} changed since the manifest was written (its SHA-256 differs)",
                                     amdgpu ? "code object" : "cubin");
  if (amdgpu) {
    read_image_code_object(view, content->bytes);
    return;
  }
  Expected<codegen::CubinInfo> info = codegen::read_cubin(content->bytes, view.cubin.string());
  if (!info.ok()) {
    view.cubin_problem = info.status().message();
    return;
  }
  view.reserved_shared = info->reserved_shared;
  if (const codegen::FunctionResources* function = info->find(view.function)) {
    view.resources = *function;
  } else if (view.cubin_problem.empty()) {
    view.cubin_problem = "the cubin has no function " + view.function;
  }
}

Expected<Inventory> load_manifest(const fs::path& path, Inventory::Origin origin, const LoadOptions& options) {
  codegen::ReadOptions read_options;
  read_options.verify_cubins = false;  // each cubin is read (and its SHA-256 checked) once, below
  Expected<codegen::Manifest> manifest = codegen::read_manifest(path, read_options);
  if (!manifest.ok()) return std::move(manifest).take_status();
  Inventory inventory;
  inventory.origin = origin;
  inventory.path = path;
  inventory.library = manifest->library;
  inventory.targets = manifest->targets;
  for (const codegen::Kernel& kernel : manifest->kernels) {
    KernelFacts facts;
    facts.name = kernel.name;
    facts.targets = kernel.targets;
    for (const codegen::ConfigField& field : kernel.config) {
      std::vector<std::string> values;
      for (const codegen::ConfigValue& value : field.values) values.push_back(config_value_text(value));
      facts.fields.emplace_back(field.name, std::move(values));
    }
    inventory.kernels.push_back(std::move(facts));
    const std::vector<std::size_t> call_arguments = kernel.call_arguments();
    const fs::path source = kernel.source.empty() ? fs::path() : (manifest->directory / kernel.source).lexically_normal();
    for (const codegen::Variant& variant : kernel.variants) {
      ImageView base;
      base.kernel = kernel.name;
      base.variant = variant.id;
      base.source = source;
      for (std::size_t field = 0; field < kernel.config.size() && field < variant.config.size(); ++field) {
        const codegen::ConfigValue& value = kernel.config[field].values[variant.config[field]];
        base.config.push_back({kernel.config[field].name, value, config_value_text(value)});
      }
      for (std::size_t index = 0; index < call_arguments.size() && index < variant.specialization.size(); ++index) {
        const codegen::Arg& arg = kernel.args[call_arguments[index]];
        base.specialization.push_back({arg.name, specialization_text(arg, variant.specialization[index])});
      }
      for (const codegen::Image& image : variant.images) {
        ImageView view = base;
        view.function = image.function_name;
        view.target = image.target;
        view.cubin = image.cubin_path;
        for (const auto& [stage_text, file] : image.artifacts)
          if (std::optional<Stage> stage = stage_from_name(stage_text))
            view.stages[*stage] = (manifest->directory / file).lexically_normal();
        view.manifest_image = image;
        if (options.read_cubins) read_image_file(view, image.cubin_sha256);
        inventory.images.push_back(std::move(view));
      }
    }
  }
  return inventory;
}

Expected<Inventory> load_cubin(const fs::path& path, std::string_view bytes) {
  Expected<codegen::CubinInfo> info = codegen::read_cubin(bytes, path.string());
  if (!info.ok()) return std::move(info).take_status();
  Inventory inventory;
  inventory.origin = Inventory::Origin::cubin;
  inventory.path = path;
  inventory.targets = {info->target()};
  for (const codegen::FunctionResources& function : info->functions) {
    if (!function.entry) continue;
    ImageView view;
    view.kernel = function.name;
    view.function = function.name;
    view.target = info->target();
    view.cubin = path;
    view.resources = function;
    view.reserved_shared = info->reserved_shared;
    inventory.kernels.push_back({function.name, {view.target}, {}});
    inventory.images.push_back(std::move(view));
  }
  if (inventory.images.empty()) return usage_error(path.string() + " holds no kernel (no entry function)");
  return inventory;
}

// A bare AMD code object: one image per kernel of its metadata note.
Expected<Inventory> load_code_object(const fs::path& path, std::string_view bytes) {
  Expected<codegen::AmdgpuCodeObject> object = codegen::read_amdgpu_code_object(bytes, path.string());
  if (!object.ok()) return std::move(object).take_status();
  const std::string target = object->processor().empty() ? "amdgcn" : object->processor();
  Inventory inventory;
  inventory.origin = Inventory::Origin::code_object;
  inventory.path = path;
  inventory.targets = {target};
  for (const codegen::AmdgpuKernel& kernel : object->kernels) {
    ImageView view;
    view.kernel = kernel.name;
    view.function = kernel.name;
    view.target = target;
    view.cubin = path;
    view.amdgpu = kernel;
    inventory.kernels.push_back({kernel.name, {target}, {}});
    inventory.images.push_back(std::move(view));
  }
  if (inventory.images.empty()) return usage_error(path.string() + " holds no kernel (its amdhsa.kernels is empty)");
  return inventory;
}

bool is_elf(const fs::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  char magic[4] = {};
  const bool elf = std::fread(magic, 1, 4, file) == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' &&
                   magic[3] == 'F';
  std::fclose(file);
  return elf;
}

// A bare image file: an AMD code object when it says so (e_machine) or is named .hsaco, else a cubin.
Expected<Inventory> load_image_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return usage_error("cannot read " + path.string());
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (codegen::is_amdgpu_code_object(bytes) || path.extension() == ".hsaco") return load_code_object(path, bytes);
  return load_cubin(path, bytes);
}

// Two value texts name the same value: equal text, the same number, or the same bool.
bool same_value(std::string_view a, std::string_view b) {
  if (a == b) return true;
  auto as_bool = [](std::string_view text) -> std::optional<bool> {
    if (text == "true" || text == "True") return true;
    if (text == "false" || text == "False") return false;
    return std::nullopt;
  };
  if (auto left = as_bool(a), right = as_bool(b); left && right) return *left == *right;
  auto as_number = [](std::string_view text) -> std::optional<double> {
    double value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
  };
  if (auto left = as_number(a), right = as_number(b); left && right) return *left == *right;
  return false;
}

const std::string* value_of(const std::vector<ConfigSetting>& settings, std::string_view name) {
  for (const ConfigSetting& setting : settings)
    if (setting.name == name) return &setting.text;
  return nullptr;
}

// Whether `text` is a run of whole '_'-separated parts of `id` ("BS256_w4" of
// "add_kernel_fp32a16_BS256_w4", but not "BS2").
bool names_parts_of(std::string_view id, std::string_view text) {
  if (text.empty()) return false;
  for (std::size_t at = id.find(text); at != std::string_view::npos; at = id.find(text, at + 1)) {
    const bool starts = at == 0 || id[at - 1] == '_';
    const bool ends = at + text.size() == id.size() || id[at + text.size()] == '_';
    if (starts && ends) return true;
  }
  return false;
}

// The distinct variant ids `text` names: itself when it is an id, else every id it is a part of.
std::vector<std::string> variants_named(const Inventory& inventory, std::string_view text) {
  std::vector<std::string> ids;
  for (const ImageView& image : inventory.images)
    if (image.variant == text) return {image.variant};
  for (const ImageView& image : inventory.images)
    if (!image.variant.empty() && names_parts_of(image.variant, text) &&
        std::find(ids.begin(), ids.end(), image.variant) == ids.end())
      ids.push_back(image.variant);
  return ids;
}

Expected<std::string> resolve_variant(const Inventory& inventory, std::string_view text) {
  if (inventory.bare())
    return usage_error(fmt::format("{} is a bare {}: it has no variants (name a library folder or manifest.json)",
                                   inventory.path.string(),
                                   inventory.origin == Inventory::Origin::cubin ? "cubin" : "code object"));
  std::vector<std::string> ids = variants_named(inventory, text);
  if (ids.size() == 1) return ids.front();
  if (ids.empty()) {
    std::vector<std::string> all;
    for (const ImageView& image : inventory.images)
      if (all.empty() || all.back() != image.variant) all.push_back(image.variant);
    return usage_error(fmt::format("no variant '{}' in {} (variants: {})", text, inventory.path.string(), listing(all, 6)));
  }
  return usage_error(fmt::format("'{}' names {} variants; give a whole id or more of its parts ({})", text,
                                 ids.size(), listing(ids, 6)));
}

bool target_matches(std::string_view wanted, std::string_view target) {
  return wanted == target || (target.size() == wanted.size() + 1 && target.substr(0, wanted.size()) == wanted &&
                              target.back() == 'a');
}

}  // namespace

bool ImageView::amd() const {
  if (amdgpu || resources) return amdgpu.has_value();  // the file's e_machine said
  return target.starts_with("gfx") || cubin.extension() == ".hsaco";
}

std::string ImageView::label() const {
  if (variant.empty()) return fmt::format("{} ({}, {})", function, cubin.string(), target);
  return fmt::format("{} {} {}", kernel, variant, target);
}

std::string config_value_text(const codegen::ConfigValue& value) {
  return std::visit(Overloaded{[](std::int64_t integer) { return std::to_string(integer); },
                               [](double real) { return fmt::format("{}", real); },
                               [](bool flag) { return std::string(flag ? "true" : "false"); },
                               [](codegen::DType dtype) { return std::string(codegen::dtype_name(dtype)); },
                               [](const std::string& text) { return text; }},
                    value);
}

Expected<Inventory> load_inventory(const fs::path& target, const LoadOptions& options) {
  std::error_code error;
  if (fs::is_directory(target, error)) {
    const fs::path manifest = target / "manifest.json";
    if (!fs::is_regular_file(manifest, error))
      return usage_error(target.string() + " has no manifest.json (name a folder written by `taot build`, "
                                           "a manifest.json, a .cubin or a .hsaco)");
    return load_manifest(manifest, Inventory::Origin::library, options);
  }
  if (!fs::exists(target, error)) return usage_error(target.string() + " does not exist");
  if (target.extension() == ".cubin" || target.extension() == ".hsaco" || is_elf(target)) return load_image_file(target);
  return load_manifest(target, Inventory::Origin::manifest, options);
}

Expected<std::pair<std::string, std::string>> parse_where(std::string_view text) {
  const std::size_t equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0 || equals + 1 == text.size())
    return usage_error(fmt::format("--where takes FIELD=VALUE (e.g. BLOCK_SIZE=1024), got '{}'", text));
  return std::pair<std::string, std::string>(std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)));
}

Expected<std::vector<const ImageView*>> select_images(const Inventory& inventory, const ImageFilter& filter) {
  std::vector<std::string> kernel_names;
  for (const KernelFacts& kernel : inventory.kernels) kernel_names.push_back(kernel.name);
  for (const std::string& kernel : filter.kernels)
    if (std::find(kernel_names.begin(), kernel_names.end(), kernel) == kernel_names.end())
      return usage_error(fmt::format("no kernel '{}' in {} (kernels: {})", kernel, inventory.path.string(),
                                     listing(kernel_names)));
  for (const std::string& target : filter.targets) {
    const bool known = std::any_of(inventory.targets.begin(), inventory.targets.end(),
                                   [&](const std::string& have) { return target_matches(target, have); });
    if (!known)
      return usage_error(fmt::format("no target '{}' in {} (targets: {})", target, inventory.path.string(),
                                     listing(inventory.targets)));
  }
  auto kernel_chosen = [&filter](std::string_view name) {
    return filter.kernels.empty() || std::find(filter.kernels.begin(), filter.kernels.end(), name) != filter.kernels.end();
  };
  for (const auto& [field, value] : filter.where) {
    bool field_found = false;
    bool value_found = false;
    std::vector<std::string> fields;
    std::vector<std::string> values;
    for (const KernelFacts& kernel : inventory.kernels) {
      if (!kernel_chosen(kernel.name)) continue;
      for (const auto& [name, field_values] : kernel.fields) {
        if (std::find(fields.begin(), fields.end(), name) == fields.end()) fields.push_back(name);
        if (name != field) continue;
        field_found = true;
        for (const std::string& have : field_values) {
          if (std::find(values.begin(), values.end(), have) == values.end()) values.push_back(have);
          value_found = value_found || same_value(value, have);
        }
      }
    }
    if (!field_found)
      return usage_error(fmt::format("no config field '{}' (fields: {})", field, listing(fields, 40)));
    if (!value_found)
      return usage_error(fmt::format("no variant has {}={} (its values: {})", field, value, listing(values, 40)));
  }
  std::vector<std::string> variant_ids;
  for (const std::string& text : filter.variants) {
    Expected<std::string> id = resolve_variant(inventory, text);
    if (!id.ok()) return std::move(id).take_status();
    variant_ids.push_back(*id);
  }

  std::vector<const ImageView*> chosen;
  for (const ImageView& image : inventory.images) {
    if (!kernel_chosen(image.kernel)) continue;
    if (!filter.targets.empty() && std::none_of(filter.targets.begin(), filter.targets.end(), [&](const std::string& t) {
          return target_matches(t, image.target);
        }))
      continue;
    if (!variant_ids.empty() && std::find(variant_ids.begin(), variant_ids.end(), image.variant) == variant_ids.end())
      continue;
    const bool all_hold = std::all_of(filter.where.begin(), filter.where.end(), [&](const auto& condition) {
      const std::string* have = value_of(image.config, condition.first);
      return have != nullptr && same_value(condition.second, *have);
    });
    if (all_hold) chosen.push_back(&image);
  }
  return chosen;
}

Expected<const ImageView*> find_image(const Inventory& inventory, std::string_view variant, std::string_view target) {
  Expected<std::string> id = resolve_variant(inventory, variant);
  if (!id.ok()) return std::move(id).take_status();
  std::vector<std::string> targets;
  for (const ImageView& image : inventory.images) {
    if (image.variant != *id) continue;
    if (target.empty() || target_matches(target, image.target)) return &image;
    targets.push_back(image.target);
  }
  return usage_error(fmt::format("variant {} has no image for target '{}' (its targets: {})", *id, target,
                                 listing(targets)));
}

}  // namespace taot::workbench
