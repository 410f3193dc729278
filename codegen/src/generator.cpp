// Renders a Manifest through the embedded mustache templates into the files of a kernel library,
// and writes them only where their content changed. The values handed to the templates are all
// spelled here (literals, names, C types); the templates own every line of generated code.
#include "taot/codegen/generator.h"
#include "taot/codegen/tuning.h"

#include <fmt/format.h>
#include <mstch/mstch.hpp>

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <utility>

#include "arg_kinds.h"
#include "literals.h"
#include "names.h"
#include "taot/codegen/launch_check.h"
#include "taot/codegen/sha256.h"
#include "taot/image_fields.h"
#include "templates.h"

namespace taot::codegen {
namespace {

using detail::c_string_literal;
using detail::comment_text;

// Every item of a template list carries "first" and "last", so that templates can place
// separators; each item sets them itself so lookups never fall through to an enclosing list.
mstch::array as_list(std::vector<mstch::map> items) {
  mstch::array list;
  list.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    items[i]["first"] = i == 0;
    items[i]["last"] = i + 1 == items.size();
    list.emplace_back(std::move(items[i]));
  }
  return list;
}

template <class T>
std::string number(T value) {
  return fmt::format("{}", value);
}

std::string boolean(bool value) { return value ? "true" : "false"; }

// A section rule after a kernel's name in comments, filling the line to 100 columns.
std::string rule(std::string_view name) {
  const std::size_t used = 4 + name.size();
  return std::string(used < 96 ? 96 - used : 3, '-');
}

// Parameter names of the wrappers: the argument's name (keywords get a trailing underscore); a
// name that would clash with the wrappers' own names or an earlier parameter gets a trailing
// underscore, or if it has one, a number after it (never "__", which is reserved).
std::vector<std::string> parameter_names(const Kernel& kernel, const std::vector<std::size_t>& call_args) {
  std::set<std::string> taken = {"stream", "config", "grid", "variant_index", "args", "fields"};
  std::vector<std::string> names;
  for (std::size_t index : call_args) {
    std::string name = detail::cpp_member_name(kernel.args[index].name);
    if (taken.count(name) != 0) {
      const std::string stem = name.back() == '_' ? name : name + "_";
      name = stem;
      for (int suffix = 2; taken.count(name) != 0; ++suffix) name = stem + std::to_string(suffix);
    }
    taken.insert(name);
    names.push_back(std::move(name));
  }
  return names;
}

// What each kind of config field is in generated code: the config struct's member type, the
// table's FieldKind enumerator, the C++ type of the table's value array and which array it is.
struct FieldKindCode {
  FieldKind kind;
  std::string_view member_type;
  std::string_view enumerator;
  std::string_view value_type;
  std::string_view array;  // "int_values", "float_values" or "string_values"
};
constexpr FieldKindCode kFieldKinds[] = {
    {FieldKind::int_value, "std::int64_t", "int_value", "std::int64_t", "int_values"},
    {FieldKind::float_value, "double", "float_value", "double", "float_values"},
    {FieldKind::bool_value, "bool", "bool_value", "std::int64_t", "int_values"},
    {FieldKind::dtype_value, "taot::DType", "dtype_value", "std::int64_t", "int_values"},
    {FieldKind::string_value, "std::string_view", "string_value", "const char*", "string_values"},
};

const FieldKindCode& field_kind_code(FieldKind kind) {
  for (const FieldKindCode& code : kFieldKinds)
    if (code.kind == kind) return code;
  return kFieldKinds[0];
}

// A config value as an element of the field's table array (int64, double or a string literal).
std::string table_value(const ConfigValue& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return detail::int64_literal(*integer);
  if (const auto* real = std::get_if<double>(&value)) return detail::double_literal(*real);
  if (const auto* flag = std::get_if<bool>(&value)) return *flag ? "1" : "0";
  if (const auto* text = std::get_if<std::string>(&value)) return c_string_literal(*text);
  return std::string(dtype_enumerator(std::get<DType>(value)));
}

// A config value for documentation comments (strings quoted).
std::string doc_value(const ConfigValue& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return number(*integer);
  if (const auto* real = std::get_if<double>(&value)) return number(*real);
  if (const auto* flag = std::get_if<bool>(&value)) return boolean(*flag);
  if (const auto* text = std::get_if<std::string>(&value)) return "\"" + *text + "\"";
  return std::string(dtype_name(std::get<DType>(value)));
}

std::string rule_op(RuleOp op) {
  switch (op) {
#define TAOT_RULE_OP_CASE(name, text, operands) \
  case RuleOp::name: return #name;
    TAOT_RULE_OPS(TAOT_RULE_OP_CASE)
#undef TAOT_RULE_OP_CASE
  }
  return "lit";
}

// A rule program as the template writes it: {"code": [{op, operand, integer, real}], ...}.
mstch::map rule_context(const Rule& rule, const std::string& array_name) {
  std::vector<mstch::map> code;
  for (const RuleInstr& instr : rule.program) {
    code.push_back(mstch::map{
        {"op", rule_op(instr.op)},
        {"operand", number(instr.operand)},
        {"integer", detail::int64_literal(instr.integer)},
        {"real", detail::double_literal(instr.real)},
    });
  }
  return mstch::map{
      {"array", array_name},
      {"code", as_list(std::move(code))},
      {"length", number(rule.program.size())},
      {"text_literal", c_string_literal(rule.expression)},
      {"text", comment_text(rule.expression)},
  };
}

std::string grid_op(GridOp op) {
  switch (op) {
    case GridOp::literal: return "literal";
    case GridOp::arg: return "arg";
    case GridOp::add: return "add";
    case GridOp::sub: return "sub";
    case GridOp::mul: return "mul";
    case GridOp::div: return "div";
    case GridOp::mod: return "mod";
    case GridOp::cdiv: return "cdiv";
    case GridOp::min: return "min";
    case GridOp::max: return "max";
    case GridOp::neg: return "neg";
    case GridOp::num_sms: return "num_sms";
  }
  return "literal";
}

mstch::array value_list(const std::vector<std::string>& values) {
  std::vector<mstch::map> items;
  for (const std::string& value : values) items.push_back(mstch::map{{"value", value}});
  return as_list(std::move(items));
}

// The members of taot::table::Image, in taot/image_fields.h's order: each image's row is written
// from this list, one value per member (image_value).
enum class ImageField : std::uint8_t {
#define TAOT_IMAGE_ENUMERATOR(field, type, manifest_key, info, python, compare) field,
  TAOT_IMAGE_FIELDS(TAOT_IMAGE_ENUMERATOR)
#undef TAOT_IMAGE_ENUMERATOR
};

constexpr ImageField kImageFields[] = {
#define TAOT_IMAGE_FIELD_VALUE(field, type, manifest_key, info, python, compare) ImageField::field,
    TAOT_IMAGE_FIELDS(TAOT_IMAGE_FIELD_VALUE)
#undef TAOT_IMAGE_FIELD_VALUE
};

// The members' names, for the comment above each table of images, in lines of at most 100 columns.
std::vector<std::string> image_field_lines() {
  static constexpr std::string_view kNames[] = {
#define TAOT_IMAGE_FIELD_NAME(field, type, manifest_key, info, python, compare) #field,
      TAOT_IMAGE_FIELDS(TAOT_IMAGE_FIELD_NAME)
#undef TAOT_IMAGE_FIELD_NAME
  };
  std::vector<std::string> lines(1);
  for (std::size_t i = 0; i < std::size(kNames); ++i) {
    const std::string item = std::string(kNames[i]) + (i + 1 < std::size(kNames) ? "," : "");
    if (!lines.back().empty() && 3 + lines.back().size() + 1 + item.size() > 100) lines.emplace_back();
    lines.back() += (lines.back().empty() ? "" : " ") + item;
  }
  return lines;
}

// One embedded array per distinct cubin, in order of first use.
struct Cubin {
  std::string sha256;
  std::string bytes;
  std::string source;  // the first image's cubin path, as written in the manifest
};

class Renderer {
 public:
  Renderer(const Manifest& manifest, bool python,
           const std::map<std::string, std::vector<std::filesystem::path>>& tuning_files)
      : manifest_(manifest), python_(python), tuning_files_(tuning_files) {}

  Expected<std::vector<GeneratedFile>> render() {
    if (auto status = collect_cubins(); !status.ok()) return std::move(status).take_status();
    for (const Kernel& kernel : manifest_.kernels) {
      std::vector<std::filesystem::path> files = kernel.tuning;
      if (const auto extra = tuning_files_.find(kernel.name); extra != tuning_files_.end())
        files.insert(files.end(), extra->second.begin(), extra->second.end());
      if (files.empty()) continue;
      Expected<std::vector<BakedTable>> baked = bake_tuning(kernel, files);
      if (!baked.ok()) return std::move(baked).take_status();
      baked_[kernel.name] = std::move(baked).value();
    }
    mstch::map context = {
        {"manifest_path", comment_text(manifest_.path.generic_string())},
        {"library", manifest_.library},
        {"library_literal", c_string_literal(manifest_.library)},
        {"guard", guard()},
        {"python", python_},
        {"image_field_count", number(std::size(kImageFields))},
        {"image_fields", value_list(image_field_lines())},
    };
    std::vector<mstch::map> kernels;
    for (const Kernel& kernel : manifest_.kernels) kernels.push_back(kernel_context(kernel));
    context["kernel_count"] = number(kernels.size());
    context["kernels"] = as_list(std::move(kernels));
    std::vector<mstch::map> cubins;
    for (std::size_t i = 0; i < cubins_.size(); ++i) {
      cubins.push_back(mstch::map{
          {"index", number(i)},
          {"size", number(cubins_[i].bytes.size())},
          {"sha256", cubins_[i].sha256},
          {"source", comment_text(cubins_[i].source)},
          {"literal", detail::bytes_literal(cubins_[i].bytes, "    ")},
      });
    }
    context["cubins"] = as_list(std::move(cubins));

    const std::string& lib = manifest_.library;
    const std::pair<std::string, std::string_view> files[] = {
        {lib + ".h", "library.h.mustache"},
        {lib + "_c.h", "library_c.h.mustache"},
        {lib + ".cpp", "library.cpp.mustache"},
        {lib + "_tables.cpp", "library_tables.cpp.mustache"},
        {lib + "_cubins.cpp", "library_cubins.cpp.mustache"},
        {"CMakeLists.txt", "CMakeLists.txt.mustache"},
        {lib + "_python.cpp", "library_python.cpp.mustache"},
    };
    std::vector<GeneratedFile> rendered;
    for (const auto& [name, template_name] : files) {
      if (template_name == "library_python.cpp.mustache" && !python_) continue;
      Expected<std::string> text = render_template(template_name, context);
      if (!text.ok()) return std::move(text).take_status();
      rendered.push_back(GeneratedFile{name, std::move(text).value()});
    }
    return rendered;
  }

 private:
  static Expected<std::string> render_template(std::string_view name, const mstch::map& context) {
    const auto templates = detail::embedded_templates();
    const auto found = std::find_if(templates.begin(), templates.end(),
                                    [&](const detail::EmbeddedTemplate& entry) { return entry.name == name; });
    if (found == templates.end()) return input_error(fmt::format("internal error: template {} is not embedded", name));
    try {
      return mstch::render(std::string(found->text), context);
    } catch (const std::exception& error) {
      return input_error(fmt::format("internal error rendering template {}: {}", name, error.what()));
    }
  }

  std::string guard() const {
    std::string guard = manifest_.library + "_C_H_";
    std::transform(guard.begin(), guard.end(), guard.begin(),
                   [](char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; });
    return guard;
  }

  // Reads each distinct cubin once and checks every image's against the parameters the runtime
  // will pass it (launch_check.h).
  Expected<bool> collect_cubins() {
    for (const Kernel& kernel : manifest_.kernels) {
      for (const Variant& variant : kernel.variants) {
        for (const Image& image : variant.images) {
          if (cubin_index_.count(image.cubin_sha256) == 0) {
            Expected<FileContent> content = read_file_with_sha256(image.cubin_path);
            if (!content.ok()) return input_error("cannot embed cubin: " + content.status().message());
            if (content->sha256 != image.cubin_sha256) {
              return input_error(fmt::format("cannot embed cubin {}: its sha256 is {} ({} bytes) but {} says {}: the "
                                             "file changed after the manifest was written",
                                             image.cubin_path.generic_string(), content->sha256, content->bytes.size(),
                                             manifest_.path.generic_string(), image.cubin_sha256));
            }
            cubin_index_[image.cubin_sha256] = cubins_.size();
            cubins_.push_back(Cubin{image.cubin_sha256, std::move(content->bytes), image.cubin});
          }
          const std::string& bytes = cubins_[cubin_index_.at(image.cubin_sha256)].bytes;
          if (Status status = check_launch_abi(kernel, variant, image, bytes); !status.ok()) return status;
        }
      }
    }
    return true;
  }

  mstch::map kernel_context(const Kernel& kernel) {
    const std::vector<std::size_t> call_args = kernel.call_arguments();
    const std::vector<std::string> params = parameter_names(kernel, call_args);
    const bool has_call_args = !call_args.empty();
    const bool has_fields = !kernel.config.empty();

    std::vector<mstch::map> arg_items;
    for (std::size_t i = 0; i < call_args.size(); ++i) {
      const Arg& arg = kernel.args[call_args[i]];
      const detail::ArgKindRules& rules = detail::arg_kind_rules(arg.kind);
      std::vector<std::string> types;
      for (DType dtype : arg.types) types.emplace_back(dtype_enumerator(dtype));
      const std::string c_arg =
          rules.arg_expression != nullptr ? rules.arg_expression(arg, params[i]) : fmt::format("taot::arg({})", params[i]);
      std::vector<std::string> block_dims;
      for (const auto& block : arg.blocks)
        for (std::uint32_t dim : block) block_dims.push_back(number(dim));
      const bool has_blocks = !block_dims.empty();
      arg_items.push_back(mstch::map{
          {"index", number(i)},
          {"arg_name", arg.name},
          {"name_literal", c_string_literal(arg.name)},
          {"param", params[i]},
          {"description", rules.description(arg)},
          {"cpp_type", rules.cpp_type(arg)},
          {"c_type", rules.c_type(arg)},
          {"c_arg", c_arg},
          {"kind", std::string(rules.table_enumerator)},
          {"types", value_list(types)},
          {"type_count", number(arg.types.size())},
          {"output", std::string(arg.output ? "true" : "false")},
          {"rank", number(static_cast<unsigned>(arg.rank))},
          {"has_blocks", has_blocks},
          {"block_dims", value_list(block_dims)},
          {"blocks_ref", has_blocks ? fmt::format("arg_{}_blocks", i) : std::string("nullptr")},
          {"block_count", number(arg.blocks.size())},
          {"none", boolean(arg.none)},
          {"launch_only", boolean(arg.launch_only)},
      });
    }

    std::vector<mstch::map> field_items;
    for (std::size_t i = 0; i < kernel.config.size(); ++i) {
      const ConfigField& field = kernel.config[i];
      std::vector<std::string> values;
      std::string values_text;
      for (std::size_t v = 0; v < field.values.size(); ++v) {
        values.push_back(table_value(field.values[v]));
        if (v > 0) values_text += ", ";
        values_text += v == field.default_index ? fmt::format("[{}]", doc_value(field.values[v]))
                                                : doc_value(field.values[v]);
      }
      const FieldKindCode& code = field_kind_code(field.kind);
      const std::string array = fmt::format("field_{}_values", i);
      const auto array_ref = [&](std::string_view which) { return code.array == which ? array : std::string("nullptr"); };
      field_items.push_back(mstch::map{
          {"index", number(i)},
          {"field_name", field.name},
          {"member", detail::cpp_member_name(field.name)},
          {"field_label", detail::cpp_member_name(field.name) == field.name
                              ? field.name
                              : fmt::format("{} (member {})", field.name, detail::cpp_member_name(field.name))},
          {"name_literal", c_string_literal(field.name)},
          {"cpp_type", std::string(code.member_type)},
          {"kind", std::string(code.enumerator)},
          {"value_type", std::string(code.value_type)},
          {"values", value_list(values)},
          {"values_text", comment_text(values_text)},
          {"int_values", array_ref("int_values")},
          {"float_values", array_ref("float_values")},
          {"string_values", array_ref("string_values")},
          {"value_count", number(field.values.size())},
          {"default_index", number(field.default_index)},
          {"required", std::string(field.required ? "true" : "false")},
      });
    }

    std::vector<mstch::map> variant_items;
    for (std::size_t i = 0; i < kernel.variants.size(); ++i) variant_items.push_back(variant_context(kernel.variants[i], i));

    std::string targets_text;
    std::vector<std::string> target_literals;
    for (const std::string& target : kernel.targets) {
      targets_text += (targets_text.empty() ? "" : ", ") + target;
      target_literals.push_back(c_string_literal(target));
    }
    std::vector<std::string> parameter_literals;
    for (const std::string& parameter : kernel.parameters) parameter_literals.push_back(c_string_literal(parameter));
    const bool partial_targets = std::any_of(kernel.variants.begin(), kernel.variants.end(), [&](const Variant& variant) {
      return variant.images.size() != kernel.targets.size();
    });

    std::vector<mstch::map> heuristics, requirements, rule_programs;
    for (std::size_t h = 0; h < kernel.heuristics.size(); ++h) {
      mstch::map program = rule_context(kernel.heuristics[h].rule, fmt::format("heuristic_{}_code", h));
      rule_programs.push_back(program);
      program["field"] = number(kernel.heuristics[h].field_index);
      program["field_name"] = comment_text(kernel.heuristics[h].field);
      heuristics.push_back(std::move(program));
    }
    for (std::size_t r = 0; r < kernel.requirements.size(); ++r) {
      mstch::map program = rule_context(kernel.requirements[r], fmt::format("requirement_{}_code", r));
      rule_programs.push_back(program);
      requirements.push_back(std::move(program));
    }
    std::vector<std::string> tuning_key;  // {index, field}: manifest.cpp checked that each name is one or the other
    for (const std::string& name : kernel.tuning_key) {
      for (std::size_t c = 0; c < call_args.size(); ++c)
        if (kernel.args[call_args[c]].name == name) tuning_key.push_back(fmt::format("{{{}, false}}", c));
      for (std::size_t f = 0; f < kernel.config.size(); ++f)
        if (kernel.config[f].name == name) tuning_key.push_back(fmt::format("{{{}, true}}", f));
    }
    const bool has_heuristics = !heuristics.empty(), has_requirements = !requirements.empty();
    const bool has_tuning_key = !tuning_key.empty();
    std::vector<mstch::map> tuned;
    if (const auto found = baked_.find(kernel.name); found != baked_.end()) {
      for (std::size_t t = 0; t < found->second.size(); ++t) {
        const BakedTable& table = found->second[t];
        std::vector<std::string> keys, configs;
        for (const auto& key : table.keys)
          for (std::int64_t value : key) keys.push_back(detail::int64_literal(value));
        for (const auto& config : table.configs)
          for (std::uint16_t value : config) configs.push_back(number(value));
        tuned.push_back(mstch::map{
            {"index", number(t)},
            {"device_literal", c_string_literal(table.device)},
            {"source_literal", c_string_literal(source_text(table.source))},
            {"device", comment_text(table.device.empty() ? "any device" : table.device)},
            {"match", std::string(table.match == table::TuningMatch::floor ? "floor" : "nearest")},
            {"entry_count", number(table.keys.size())},
            {"keys", value_list(keys)},
            {"configs", value_list(configs)},
        });
      }
    }
    const bool has_tuned = !tuned.empty();
    const std::size_t tuned_count = tuned.size();
    // What first-call autotuning reads: the fields timed and the buffers restored, as indexes.
    const auto index_list = [](const std::vector<std::size_t>& indexes) {
      std::vector<std::string> values;
      for (std::size_t index : indexes) values.push_back(number(index));
      return values;
    };
    mstch::map autotune;
    if (kernel.autotune) {
      const Autotune& tune = *kernel.autotune;
      autotune = mstch::map{
          {"at_first_call", std::string(tune.at_first_call ? "true" : "false")},
          {"fields", value_list(index_list(tune.fields))},
          {"field_count", number(tune.fields.size())},
          {"has_reset", !tune.reset_to_zero.empty()},
          {"reset", value_list(index_list(tune.reset_to_zero))},
          {"reset_ref", std::string(tune.reset_to_zero.empty() ? "nullptr" : "autotune_reset")},
          {"reset_count", number(tune.reset_to_zero.size())},
          {"has_restore", !tune.restore_value.empty()},
          {"restore", value_list(index_list(tune.restore_value))},
          {"restore_ref", std::string(tune.restore_value.empty() ? "nullptr" : "autotune_restore")},
          {"restore_count", number(tune.restore_value.size())},
      };
    }

    return mstch::map{
        {"name", kernel.name},
        {"rule", rule(kernel.name)},
        {"rule_programs", as_list(std::move(rule_programs))},
        {"has_heuristics", has_heuristics},
        {"heuristics", as_list(std::move(heuristics))},
        {"heuristics_ref", std::string(has_heuristics ? "heuristics" : "nullptr")},
        {"heuristic_count", number(kernel.heuristics.size())},
        {"has_requirements", has_requirements},
        {"requirements", as_list(std::move(requirements))},
        {"requirements_ref", std::string(has_requirements ? "requirements" : "nullptr")},
        {"requirement_count", number(kernel.requirements.size())},
        {"has_tuning_key", has_tuning_key},
        {"tuning_key", value_list(tuning_key)},
        {"tuning_key_ref", std::string(has_tuning_key ? "tuning_key" : "nullptr")},
        {"tuning_key_count", number(tuning_key.size())},
        {"has_tuned", has_tuned},
        {"tuned", as_list(std::move(tuned))},
        {"tuned_ref", std::string(has_tuned ? "tuned" : "nullptr")},
        {"tuned_count", number(tuned_count)},
        {"has_autotune", kernel.autotune.has_value()},
        {"autotune", autotune},
        {"autotune_ref", std::string(kernel.autotune ? "&autotune" : "nullptr")},
        {"name_literal", c_string_literal(kernel.name)},
        {"function", comment_text(kernel.function)},
        {"source", comment_text(kernel.source)},
        {"grid_description",
         kernel.has_grid ? comment_text(fmt::format("the grid ({}, {}, {})", kernel.grid_text[0], kernel.grid_text[1],
                                                    kernel.grid_text[2]))
                         : std::string("the grid each launch gives (the kernel has no grid of its own: launch "
                                       "with a taot::Grid in C++, taot_launch_ex with a grid in C)")},
        {"grid_x_literal", kernel.has_grid ? c_string_literal(kernel.grid_text[0]) : std::string("nullptr")},
        {"grid_y_literal", kernel.has_grid ? c_string_literal(kernel.grid_text[1]) : std::string("nullptr")},
        {"grid_z_literal", kernel.has_grid ? c_string_literal(kernel.grid_text[2]) : std::string("nullptr")},
        {"targets", comment_text(targets_text)},
        {"target_literals", value_list(target_literals)},
        {"target_count", number(kernel.targets.size())},
        {"has_parameters", !parameter_literals.empty()},
        {"parameter_literals", value_list(parameter_literals)},
        {"parameters_ref", std::string(parameter_literals.empty() ? "nullptr" : "parameters")},
        {"parameter_count", number(parameter_literals.size())},
        {"partial_targets", partial_targets},
        {"variant_count", number(kernel.variants.size())},
        {"variants_text", fmt::format("{} compiled variant{}", kernel.variants.size(), kernel.variants.size() == 1 ? "" : "s")},
        {"last_variant", number(kernel.variants.size() - 1)},
        {"call_args", as_list(std::move(arg_items))},
        {"has_call_args", has_call_args},
        {"args_ref", std::string(has_call_args ? "args" : "nullptr")},
        {"arg_count", number(call_args.size())},
        {"fields", as_list(std::move(field_items))},
        {"has_fields", has_fields},
        {"fields_ref", std::string(has_fields ? "fields" : "nullptr")},
        {"field_count", number(kernel.config.size())},
        {"variants", as_list(std::move(variant_items))},
    };
  }

  mstch::map variant_context(const Variant& variant, std::size_t index) {
    const std::string prefix = fmt::format("variant_{}_", index);
    std::vector<mstch::map> specialization;
    for (const ArgSpecialization& spec : variant.specialization) {
      specialization.push_back(mstch::map{{"type", std::string(dtype_enumerator(spec.type))},
                                          {"hint", number(spec.hint)},
                                          {"block", number(spec.block)},
                                          {"none", boolean(spec.none)}});
    }
    std::vector<std::string> config;
    for (std::size_t value_index : variant.config) config.push_back(number(value_index));
    std::vector<std::string> params;
    for (std::size_t param : variant.params) params.push_back(number(param));

    static constexpr const char* kAxes[3] = {"x", "y", "z"};
    std::vector<mstch::map> grid;  // empty for a kernel with no grid of its own: {} programs
    for (std::size_t d = 0; d < 3 && !variant.grid[0].empty(); ++d) {
      std::vector<mstch::map> code;
      for (const GridInstr& instr : variant.grid[d]) {
        code.push_back(mstch::map{
            {"op", grid_op(instr.op)},
            {"arg", number(instr.op == GridOp::arg ? instr.arg : 0)},
            {"value", detail::int64_literal(instr.op == GridOp::literal ? instr.value : 0)},
        });
      }
      grid.push_back(mstch::map{
          {"axis", std::string(kAxes[d])},
          {"code", as_list(std::move(code))},
          {"length", number(variant.grid[d].size())},
      });
    }

    std::vector<mstch::map> images;
    for (std::size_t i = 0; i < variant.images.size(); ++i) {
      const Image& image = variant.images[i];
      const std::size_t cubin = cubin_index_.at(image.cubin_sha256);
      std::vector<mstch::map> tensordescs;
      for (const TensordescMeta& meta : image.tensordesc_meta) {
        std::vector<std::string> box;
        for (std::uint32_t dim : meta.block_size) box.push_back(number(dim));
        tensordescs.push_back(mstch::map{
            {"swizzle", number(static_cast<unsigned>(meta.swizzle))},
            {"elem_size", number(static_cast<unsigned>(meta.elem_size))},
            {"elem_type", number(static_cast<unsigned>(meta.elem_type))},
            {"fp4_padded", boolean(meta.fp4_padded)},
            {"box", value_list(box)},
        });
      }
      const bool has_tensordescs = !tensordescs.empty();
      std::vector<std::string> row;
      for (ImageField field : kImageFields) row.push_back(image_value(field, image, cubin, prefix, i));
      images.push_back(mstch::map{
          {"image_index", number(i)},
          {"has_tensordescs", has_tensordescs},
          {"tensordescs", as_list(std::move(tensordescs))},
          {"row", value_list(row)},
      });
    }

    const bool has_specialization = !variant.specialization.empty();
    const bool has_config = !variant.config.empty();
    const bool has_params = !variant.params.empty();
    return mstch::map{
        {"index", number(index)},
        {"id", comment_text(variant.id)},
        {"id_literal", c_string_literal(variant.id)},
        {"has_specialization", has_specialization},
        {"specialization", as_list(std::move(specialization))},
        {"specialization_ref", has_specialization ? prefix + "specialization" : std::string("nullptr")},
        {"has_config", has_config},
        {"config", value_list(config)},
        {"config_ref", has_config ? prefix + "config" : std::string("nullptr")},
        {"has_params", has_params},
        {"params", value_list(params)},
        {"params_ref", has_params ? prefix + "params" : std::string("nullptr")},
        {"param_count", number(variant.params.size())},
        {"grid", as_list(std::move(grid))},
        {"images", as_list(std::move(images))},
        {"image_count", number(variant.images.size())},
    };
  }

  // The initializer of member `field` of image `index` of the variant whose arrays start with
  // `prefix`, whose cubin is embedded as cubin_<cubin>.
  std::string image_value(ImageField field, const Image& image, std::size_t cubin, const std::string& prefix,
                          std::size_t index) const {
    auto optional_text = [](bool present, const std::string& text) {
      return present ? c_string_literal(text) : std::string("nullptr");
    };
    switch (field) {
      case ImageField::target: return c_string_literal(image.target);
      case ImageField::arch: return number(image.arch);
      case ImageField::arch_specific: return boolean(image.arch_specific);
      case ImageField::vendor: return std::string("taot::table::Vendor::") + table::vendor_name(image.vendor);
      case ImageField::warp_size: return number(image.warp_size);
      case ImageField::cubin: return fmt::format("::{}::detail::cubin_{}", manifest_.library, cubin);
      case ImageField::cubin_size: return number(cubins_[cubin].bytes.size());
      case ImageField::function_name: return c_string_literal(image.function_name);
      case ImageField::shared_bytes: return number(image.shared);
      case ImageField::num_warps: return number(image.num_warps);
      case ImageField::num_ctas: return number(image.num_ctas);
      case ImageField::cluster_dims:
        return fmt::format("{{{}, {}, {}}}", image.cluster_dims[0], image.cluster_dims[1], image.cluster_dims[2]);
      case ImageField::global_scratch_size: return detail::uint64_literal(image.global_scratch_size);
      case ImageField::global_scratch_align: return number(image.global_scratch_align);
      case ImageField::profile_scratch_size: return detail::uint64_literal(image.profile_scratch_size);
      case ImageField::profile_scratch_align: return number(image.profile_scratch_align);
      case ImageField::cooperative: return boolean(image.launch_cooperative_grid);
      case ImageField::pdl: return boolean(image.launch_pdl);
      case ImageField::tensordescs:
        return image.tensordesc_meta.empty() ? std::string("nullptr") : fmt::format("{}image_{}_tensordescs", prefix, index);
      case ImageField::tensordesc_count: return number(image.tensordesc_meta.size());
      case ImageField::tensordesc_layout:
        return fmt::format("taot::abi::TensordescLayout::{}", tensordesc_layout_enumerator(image.launch_abi.tensordesc_layout));
      case ImageField::registers: return number(image.ptxas ? image.ptxas->registers : 0u);
      case ImageField::spill_stores: return number(image.ptxas ? image.ptxas->spill_stores : 0u);
      case ImageField::spill_loads: return number(image.ptxas ? image.ptxas->spill_loads : 0u);
      case ImageField::stack_bytes: return number(image.ptxas ? image.ptxas->stack : 0u);
      case ImageField::triton_version: return optional_text(!image.triton_version.empty(), image.triton_version);
      case ImageField::ptxas_version: return optional_text(image.ptxas_version.has_value(), image.ptxas_version.value_or(""));
      case ImageField::override_stage:
        return optional_text(image.override_from.has_value(), image.override_from ? image.override_from->stage : "");
      case ImageField::override_sha256:
        return optional_text(image.override_from.has_value(), image.override_from ? image.override_from->sha256 : "");
    }
    return "{}";  // not reached: the switch names every member (-Wswitch)
  }

  // A tuned table's file as messages name it: relative to the manifest's folder where it can be
  // (so that generated code does not depend on where it was built), else its file name.
  std::string source_text(const std::string& source) const {
    const std::filesystem::path path(source);
    const std::filesystem::path relative = path.lexically_relative(manifest_.directory);
    return relative.empty() ? path.filename().generic_string() : relative.generic_string();
  }

  const Manifest& manifest_;
  const bool python_;
  const std::map<std::string, std::vector<std::filesystem::path>>& tuning_files_;
  std::map<std::string, std::vector<BakedTable>> baked_;  // kernel name -> its tables
  std::vector<Cubin> cubins_;
  std::map<std::string, std::size_t> cubin_index_;  // sha256 -> index into cubins_
};

}  // namespace

Expected<std::vector<GeneratedFile>> render_library(
    const Manifest& manifest, bool python, const std::map<std::string, std::vector<std::filesystem::path>>& tuning_files) {
  try {
    return Renderer(manifest, python, tuning_files).render();
  } catch (const std::exception& error) {  // allocation failure or a bug; never leaves the library
    return input_error(fmt::format("internal error generating {}: {}", manifest.library, error.what()));
  }
}

std::vector<std::filesystem::path> GenerateResult::changed() const {
  std::vector<std::filesystem::path> paths;
  for (const FileStatus& file : files) {
    if (file.changed) paths.push_back(file.path);
  }
  return paths;
}

Expected<GenerateResult> generate(const Manifest& manifest, const GenerateOptions& options) {
  Expected<std::vector<GeneratedFile>> files = render_library(manifest, options.python, options.tuning_files);
  if (!files.ok()) return std::move(files).take_status();
  std::error_code error;
  std::filesystem::create_directories(options.output_dir, error);
  if (error) {
    return input_error(fmt::format("{}: cannot create the output folder: {}", options.output_dir.generic_string(),
                             error.message()));
  }
  GenerateResult result;
  for (const GeneratedFile& file : *files) {
    const std::filesystem::path path = options.output_dir / file.name;
    Expected<bool> changed = write_if_changed(path, file.content);
    if (!changed.ok()) return std::move(changed).take_status();
    result.files.push_back(FileStatus{path, *changed});
  }
  return result;
}

}  // namespace taot::codegen
