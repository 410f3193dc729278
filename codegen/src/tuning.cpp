// Tuned tables baked into a generated library: the runtime's parser and checks applied to a
// manifest kernel (see taot/codegen/tuning.h).
#include "taot/codegen/tuning.h"

#include <fmt/format.h>

#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

#include "names.h"
#include "taot/tuning_file.h"

namespace taot::codegen {
namespace {

table::FieldKind table_kind(FieldKind kind) {
  switch (kind) {
    case FieldKind::float_value: return table::FieldKind::float_value;
    case FieldKind::bool_value: return table::FieldKind::bool_value;
    case FieldKind::dtype_value: return table::FieldKind::dtype_value;
    case FieldKind::string_value: return table::FieldKind::string_value;
    case FieldKind::int_value: break;
  }
  return table::FieldKind::int_value;
}

TuningValue tuning_value(const ConfigValue& value) {
  TuningValue result;
  std::visit(
      [&result](const auto& held) {
        using Held = std::decay_t<decltype(held)>;
        if constexpr (std::is_same_v<Held, std::int64_t>) {
          result.integer = held;
        } else if constexpr (std::is_same_v<Held, double>) {
          result.kind = TuningValue::Kind::real;
          result.real = held;
        } else if constexpr (std::is_same_v<Held, bool>) {
          result.kind = TuningValue::Kind::boolean;
          result.integer = held ? 1 : 0;
        } else if constexpr (std::is_same_v<Held, DType>) {
          result.integer = static_cast<std::int64_t>(held);  // the runtime's taot_dtype value
        } else {
          result.kind = TuningValue::Kind::text;
          result.text = held;
        }
      },
      value);
  return result;
}

// The kernel as the runtime's checks see it.
TuningTarget tuning_target(const Kernel& kernel) {
  TuningTarget target;
  target.kernel = kernel.name;
  target.key = kernel.tuning_key;
  for (const ConfigField& field : kernel.config) {
    TuningTarget::Field& described = target.fields.emplace_back();
    described.name = field.name;
    described.kind = table_kind(field.kind);
    for (const ConfigValue& value : field.values) described.values.push_back(tuning_value(value));
  }
  return target;
}

std::string device_text(const std::string& device) {
  return device.empty() ? std::string("any device") : fmt::format("device \"{}\"", device);
}

std::string kernel_names(const Manifest& manifest) {
  std::string names;
  for (const Kernel& kernel : manifest.kernels) names += (names.empty() ? "" : ", ") + kernel.name;
  return names;
}

}  // namespace

Expected<std::vector<BakedTable>> bake_tuning(const Kernel& kernel, const std::vector<std::filesystem::path>& files) {
  const TuningTarget target = tuning_target(kernel);
  std::vector<BakedTable> baked;
  for (const std::filesystem::path& path : files) {
    Expected<TuningFile> file = read_tuning_file(path.generic_string());
    if (!file.ok()) return std::move(file).take_status();
    Expected<ResolvedTuning> resolved = resolve_tuning_file(*file, target);
    if (!resolved.ok()) return std::move(resolved).take_status();
    for (const BakedTable& earlier : baked)
      if (same_device_name(earlier.device, resolved->device))
        return input_error(fmt::format("{}: kernel \"{}\" already has a table for {}, from {}; give one table per device",
                                       resolved->source, kernel.name, device_text(resolved->device), earlier.source));
    BakedTable& table = baked.emplace_back();
    table.device = resolved->device;
    table.source = resolved->source;
    table.match = resolved->match;
    for (std::uint32_t e = 0; e < resolved->entry_count; ++e) {
      const auto key = resolved->keys.begin() + static_cast<std::ptrdiff_t>(e * resolved->key_count);
      const auto config = resolved->configs.begin() + static_cast<std::ptrdiff_t>(e * resolved->field_count);
      table.keys.emplace_back(key, key + static_cast<std::ptrdiff_t>(resolved->key_count));
      table.configs.emplace_back(config, config + static_cast<std::ptrdiff_t>(resolved->field_count));
    }
  }
  return baked;
}

TuningFileArgument parse_tuning_argument(std::string_view text) {
  const std::size_t equals = text.find('=');
  std::error_code error;
  if (equals != std::string_view::npos && detail::is_identifier(text.substr(0, equals)) &&
      !std::filesystem::exists(std::filesystem::path(text), error))
    return {std::string(text.substr(0, equals)), std::filesystem::path(text.substr(equals + 1))};
  return {std::string(), std::filesystem::path(text)};
}

Expected<std::map<std::string, std::vector<std::filesystem::path>>> assign_tuning_files(
    const Manifest& manifest, const std::vector<TuningFileArgument>& arguments) {
  std::map<std::string, std::vector<std::filesystem::path>> assigned;
  for (const TuningFileArgument& argument : arguments) {
    const std::string given = argument.kernel.empty() ? argument.path.generic_string()
                                                      : argument.kernel + "=" + argument.path.generic_string();
    std::string kernel = argument.kernel;
    if (kernel.empty()) {
      Expected<TuningFile> file = read_tuning_file(argument.path.generic_string());
      if (!file.ok()) return std::move(file).take_status();
      if (file->format == TuningFormat::vllm)
        return input_error(fmt::format("--tuning {}: a vLLM table does not name its kernel; write --tuning KERNEL={}",
                                       given, given));
      kernel = file->kernel;
    }
    bool found = false;
    for (const Kernel& candidate : manifest.kernels) found = found || candidate.name == kernel;
    if (!found)
      return input_error(fmt::format("--tuning {}: {} has no kernel \"{}\"; its kernels: {}", given,
                                     manifest.path.generic_string(), kernel, kernel_names(manifest)));
    assigned[kernel].push_back(argument.path);
  }
  for (const Kernel& kernel : manifest.kernels) {
    const auto files = assigned.find(kernel.name);
    if (files == assigned.end()) continue;
    Expected<std::vector<BakedTable>> baked = bake_tuning(kernel, files->second);
    if (!baked.ok()) return std::move(baked).take_status();
  }
  return assigned;
}

}  // namespace taot::codegen
