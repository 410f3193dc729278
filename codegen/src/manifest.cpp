// Reads manifest.json into the typed model of manifest.h, checking every rule the generator and
// the runtime's tables rely on. The first problem found is returned as a Status naming the
// manifest file and the JSON path.
#include "taot/codegen/manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <unordered_map>

#include "arg_kinds.h"
#include "json_reader.h"
#include "names.h"
#include "taot/codegen/sha256.h"

namespace taot::codegen {
namespace {

using detail::child;
using detail::describe;
using detail::join_names;
using detail::json;
using detail::kMaxI64;
using detail::kMaxU16;
using detail::kMaxU32;
using detail::Reader;

struct DTypeNames {
  DType dtype;
  std::string_view name;
  std::string_view enumerator;
  std::size_t bytes;
};
constexpr DTypeNames kDTypes[] = {
#define TAOT_DTYPE_NAMES(ENUM, name, value, bytes, dlpack_code, dlpack_bits, typestr, torch_name) \
  {DType::name, #name, "TAOT_DTYPE_" #ENUM, bytes},
    TAOT_DTYPES(TAOT_DTYPE_NAMES)
#undef TAOT_DTYPE_NAMES
};

struct LayoutNames {
  abi::TensordescLayout layout;
  std::string_view name;        // as in the manifest: "3.7"
  std::string_view enumerator;  // taot::abi::TensordescLayout::<this>
};
constexpr LayoutNames kLayouts[] = {
#define TAOT_LAYOUT_NAMES(enumerator, name) {abi::TensordescLayout::enumerator, name, #enumerator},
    TAOT_TENSORDESC_LAYOUTS(TAOT_LAYOUT_NAMES)
#undef TAOT_LAYOUT_NAMES
};

// "3.5" or "3.7", for messages.
std::string known_layout_names() {
  std::string text;
  for (std::size_t i = 0; i < std::size(kLayouts); ++i)
    text += (i == 0 ? "" : i + 1 == std::size(kLayouts) ? " or " : ", ") + json(std::string(kLayouts[i].name)).dump();
  return text;
}

// A ptxas version as the manifest records it: numbers separated by dots ("12.8.93").
bool is_version_text(const std::string& text) {
  if (text.empty() || text.front() == '.' || text.back() == '.') return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!((c >= '0' && c <= '9') || (c == '.' && text[i - 1] != '.'))) return false;
  }
  return true;
}


std::string join_strings(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

std::string describe_value(const ConfigValue& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return std::to_string(*integer);
  if (const auto* real = std::get_if<double>(&value)) return fmt::format("{}", *real);
  if (const auto* flag = std::get_if<bool>(&value)) return *flag ? "true" : "false";
  if (const auto* text = std::get_if<std::string>(&value)) return describe(json(*text));
  return std::string(dtype_name(std::get<DType>(value)));
}

std::string describe_values(const std::vector<ConfigValue>& values) {
  std::string text;
  for (const ConfigValue& value : values) text += (text.empty() ? "" : ", ") + describe_value(value);
  return text;
}

// Names the generated code defines for each kernel, to find clashes between kernels: C++ names
// in the library's namespace and C functions at global scope, kept apart by a tag that also
// reads well in the error message.
std::vector<std::string> generated_names(const std::string& library, const std::string& kernel) {
  return {"C++ name " + kernel,
          "C++ name " + kernel + "_config",
          "C++ name " + kernel + "_variant",
          "C++ name " + kernel + "_variants",
          "C++ name " + kernel + "_kernel",
          "C function " + library + "_" + kernel,
          "C function " + library + "_" + kernel + "_handle"};
}

// 64 lower-case hex digits, as a SHA-256 is written.
bool is_sha256(std::string_view text) {
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Names a kernel may not take: the library's own functions and namespaces, and names the
// generated code uses unqualified inside the library's namespace.
bool is_reserved_kernel_name(std::string_view name) {
  static const std::set<std::string_view> names = {"preload", "unload", "library", "detail", "std", "taot", "CUstream"};
  return names.count(name) != 0;
}

class ManifestParser {
 public:
  ManifestParser(const std::filesystem::path& path, const ReadOptions& options)
      : reader_(path.generic_string()), options_(options) {
    manifest_.path = path;
    manifest_.directory = path.parent_path();
  }

  Expected<Manifest> parse(std::string_view text) {
    json root;
    try {
      root = json::parse(text.begin(), text.end());
    } catch (const json::exception& error) {
      reader_.fail("", fmt::format("not valid JSON: {}", error.what()));
      return reader_.error();
    }
    if (!root.is_object()) {
      reader_.fail("", "expected a JSON object at the top, got " + describe(root));
      return reader_.error();
    }
    if (!check_schema(root)) return reader_.error();
    read_top(root);
    if (reader_.failed()) return reader_.error();
    return std::move(manifest_);
  }

 private:
  bool check_schema(const json& root) {
    const auto schema = root.find("schema");
    const auto version = root.find("schema_version");
    const bool schema_ok = schema != root.end() && schema->is_string() && *schema == kManifestSchema;
    const bool version_ok = version != root.end() && version->is_number_integer() && *version == kManifestSchemaVersion;
    if (schema_ok && version_ok) return true;
    if (schema_ok && version != root.end() && !version->is_number_integer()) {
      reader_.fail("schema_version", "expected an integer (this taot reads version " +
                                         std::to_string(kManifestSchemaVersion) + "), got " + describe(*version));
      return false;
    }
    reader_.fail("", fmt::format("schema {} version {} is not supported; this taot reads schema \"{}\" version {}",
                                 schema == root.end() ? "(missing)" : describe(*schema),
                                 version == root.end() ? "(missing)" : describe(*version), kManifestSchema,
                                 kManifestSchemaVersion));
    return false;
  }

  void read_top(const json& root) {
    const json* top = &root;
    manifest_.triton_version = reader_.get_string(top, "triton_version", "");
    manifest_.library = reader_.get_string(top, "library", "");
    if (!reader_.failed()) check_library_name(manifest_.library);
    manifest_.spec = reader_.get_string(top, "spec", "");
    if (const json* targets = reader_.get_array(top, "targets", "", 1)) {
      for (std::size_t i = 0; i < targets->size() && !reader_.failed(); ++i) {
        std::string target = reader_.string_value(&(*targets)[i], child("targets", i));
        if (reader_.failed()) break;
        if (target.empty()) reader_.fail(child("targets", i), "expected a target name, got \"\"");
        if (std::find(manifest_.targets.begin(), manifest_.targets.end(), target) != manifest_.targets.end()) {
          reader_.fail(child("targets", i), fmt::format("\"{}\" is listed twice", target));
        }
        manifest_.targets.push_back(std::move(target));
      }
    }
    const json* kernels = reader_.get_array(top, "kernels", "", 1);
    for (std::size_t i = 0; kernels != nullptr && i < kernels->size() && !reader_.failed(); ++i) {
      read_kernel((*kernels)[i], child("kernels", i));
    }
  }

  void check_library_name(const std::string& name) {
    if (!detail::is_identifier(name)) {
      reader_.fail("library", fmt::format("\"{}\" is not a C/C++ identifier ([A-Za-z_][A-Za-z0-9_]*)", name));
    } else if (detail::is_reserved_word(name)) {
      reader_.fail("library", fmt::format("\"{}\" is a C or C++ keyword", name));
    } else if (name == "std" || name == "taot" || name.rfind("taot_", 0) == 0 || name[0] == '_') {
      reader_.fail("library", fmt::format("\"{}\" is reserved (std, taot, taot_* and names starting with _ are "
                                          "taken by the C++ library, the taot runtime or the compiler)",
                                          name));
    }
  }

  void check_kernel_name(const std::string& name, const std::string& path, std::size_t index) {
    if (!detail::is_identifier(name)) {
      reader_.fail(path, fmt::format("\"{}\" is not a C/C++ identifier ([A-Za-z_][A-Za-z0-9_]*)", name));
      return;
    }
    if (detail::is_reserved_word(name)) {
      reader_.fail(path, fmt::format("\"{}\" is a C or C++ keyword", name));
      return;
    }
    if (is_reserved_kernel_name(name)) {
      reader_.fail(path, fmt::format("\"{}\" is reserved in a generated library (preload, unload, library, detail, "
                                     "std, taot and CUstream are)",
                                     name));
      return;
    }
    for (const std::string& generated : generated_names(manifest_.library, name)) {
      auto [owner, inserted] = generated_owner_.emplace(generated, index);
      if (!inserted) {
        const std::size_t other = owner->second;
        reader_.fail(path, other == index
                               ? fmt::format("\"{}\" is the name of another kernel (kernels[{}])", name, other)
                               : fmt::format("kernel \"{}\" would define {}, which kernel \"{}\" (kernels[{}]) also "
                                             "defines",
                                             name, generated, manifest_.kernels[other].name, other));
        return;
      }
    }
  }

  void read_kernel(const json& value, const std::string& path) {
    const json* object = reader_.object_value(&value, path);
    Kernel kernel;
    kernel.name = reader_.get_string(object, "name", path);
    if (!reader_.failed()) {
      for (const Kernel& other : manifest_.kernels) {
        if (other.name == kernel.name) {
          reader_.fail(child(path, "name"), fmt::format("\"{}\" is the name of another kernel", kernel.name));
        }
      }
      check_kernel_name(kernel.name, child(path, "name"), manifest_.kernels.size());
    }
    kernel.function = reader_.get_string(object, "function", path);
    if (!reader_.failed() && kernel.function.empty()) reader_.fail(child(path, "function"), "expected a function name");
    kernel.source = reader_.get_string(object, "source", path);
    kernel.source_hash = reader_.get_string(object, "source_hash", path);
    read_kernel_targets(kernel, reader_.get_array(object, "targets", path, 1), child(path, "targets"));
    if (object != nullptr && object->contains("grid") && (*object)["grid"].is_null()) {
      kernel.has_grid = false;  // every launch gives its grid
    } else if (const json* grid = reader_.get_array(object, "grid", path, 3, 3)) {
      for (std::size_t d = 0; d < 3; ++d) kernel.grid_text[d] = reader_.string_value(&(*grid)[d], child(child(path, "grid"), d));
    }
    read_args(kernel, reader_.get_array(object, "args", path), child(path, "args"));
    if (object != nullptr && object->contains("parameters"))
      read_parameters(kernel, reader_.get_array(object, "parameters", path), child(path, "parameters"));
    read_config_fields(kernel, reader_.get_array(object, "config", path), child(path, "config"));
    if (object != nullptr && object->contains("tuning_key"))
      read_tuning_key(kernel, reader_.get_array(object, "tuning_key", path), child(path, "tuning_key"));
    if (object != nullptr && object->contains("tuning")) {
      const json* files = reader_.get_array(object, "tuning", path, 0, kMaxU16);
      for (std::size_t i = 0; files != nullptr && i < files->size() && !reader_.failed(); ++i) {
        const std::string file = reader_.string_value(&(*files)[i], child(child(path, "tuning"), i));
        if (!reader_.failed()) kernel.tuning.push_back(manifest_.directory / file);
      }
    }
    if (object != nullptr && object->contains("autotune"))
      read_autotune(kernel, reader_.get_object(object, "autotune", path), child(path, "autotune"));
    if (object != nullptr && object->contains("heuristics"))
      read_heuristics(kernel, reader_.get_array(object, "heuristics", path, 0, kMaxU16), child(path, "heuristics"));
    if (object != nullptr && object->contains("requires"))
      read_requirements(kernel, reader_.get_array(object, "requires", path, 0, kMaxU16), child(path, "requires"));
    const json* variants = reader_.get_array(object, "variants", path, 1, kMaxU32);
    std::set<std::string> ids;
    for (std::size_t i = 0; variants != nullptr && i < variants->size() && !reader_.failed(); ++i) {
      const std::string variant_path = child(child(path, "variants"), i);
      kernel.variants.push_back(read_variant(kernel, (*variants)[i], variant_path));
      if (!reader_.failed() && !ids.insert(kernel.variants.back().id).second) {
        reader_.fail(child(variant_path, "id"),
                     fmt::format("\"{}\" is the id of another variant of this kernel", kernel.variants.back().id));
      }
    }
    manifest_.kernels.push_back(std::move(kernel));
  }

  // The kernel's targets: distinct, each one of the library's, in the library's order.
  void read_kernel_targets(Kernel& kernel, const json* list, const std::string& path) {
    std::size_t previous = 0;
    for (std::size_t i = 0; list != nullptr && i < list->size() && !reader_.failed(); ++i) {
      const std::string target = reader_.string_value(&(*list)[i], child(path, i));
      if (reader_.failed()) return;
      const auto found = std::find(manifest_.targets.begin(), manifest_.targets.end(), target);
      if (found == manifest_.targets.end()) {
        reader_.fail(child(path, i), fmt::format("\"{}\" is not one of the manifest's targets", target));
        return;
      }
      if (std::find(kernel.targets.begin(), kernel.targets.end(), target) != kernel.targets.end()) {
        reader_.fail(child(path, i), fmt::format("\"{}\" is listed twice", target));
        return;
      }
      const auto position = static_cast<std::size_t>(found - manifest_.targets.begin());
      if (i > 0 && position < previous) {
        reader_.fail(child(path, i), fmt::format("\"{}\" comes before \"{}\" in the manifest's targets; a kernel "
                                                 "lists its targets in that order",
                                                 target, kernel.targets.back()));
        return;
      }
      previous = position;
      kernel.targets.push_back(target);
    }
  }

  // "parameters": the function's parameter names in order, distinct, every argument that is not
  // launch-only among them in the order of "args".
  void read_parameters(Kernel& kernel, const json* list, const std::string& path) {
    std::size_t next_arg = 0;  // the next argument of "args" the list must name
    for (std::size_t i = 0; list != nullptr && i < list->size() && !reader_.failed(); ++i) {
      const std::string name = reader_.string_value(&(*list)[i], child(path, i));
      if (reader_.failed()) return;
      if (std::find(kernel.parameters.begin(), kernel.parameters.end(), name) != kernel.parameters.end()) {
        reader_.fail(child(path, i), fmt::format("\"{}\" is listed twice", name));
        return;
      }
      while (next_arg < kernel.args.size() && kernel.args[next_arg].launch_only) ++next_arg;
      if (next_arg < kernel.args.size() && kernel.args[next_arg].name == name) ++next_arg;
      kernel.parameters.push_back(name);
    }
    while (next_arg < kernel.args.size() && kernel.args[next_arg].launch_only) ++next_arg;
    if (list != nullptr && next_arg < kernel.args.size())
      reader_.fail(path, fmt::format("argument \"{}\" is not among the parameters, in the order of \"args\"",
                                     kernel.args[next_arg].name));
  }

  // "tuning_key": names of int call arguments or of int or bool config fields, distinct.
  void read_tuning_key(Kernel& kernel, const json* list, const std::string& path) {
    const std::vector<std::size_t> call_args = kernel.call_arguments();
    for (std::size_t i = 0; list != nullptr && i < list->size() && !reader_.failed(); ++i) {
      const std::string name = reader_.string_value(&(*list)[i], child(path, i));
      if (reader_.failed()) return;
      const auto field = std::find_if(kernel.config.begin(), kernel.config.end(),
                                      [&](const ConfigField& f) { return f.name == name; });
      if (field != kernel.config.end()) {
        if (field->kind != FieldKind::int_value && field->kind != FieldKind::bool_value) {
          reader_.fail(child(path, i), fmt::format("\"{}\" is a config field of {} values; a tuning key is made of ints "
                                                   "and bools", name, field_kind_text(field->kind)));
          return;
        }
      } else {
        const auto index = call_argument_index(kernel, call_args, name, child(path, i));
        if (!index) return;
        if (kernel.args[call_args[*index]].kind != ArgKind::int_scalar) {
          reader_.fail(child(path, i), fmt::format("\"{}\" is an argument of kind {}; a tuning key is made of int arguments "
                                                   "and int or bool config fields",
                                                   name, detail::arg_kind_rules(kernel.args[call_args[*index]].kind).manifest_name));
          return;
        }
      }
      if (std::find(kernel.tuning_key.begin(), kernel.tuning_key.end(), name) != kernel.tuning_key.end()) {
        reader_.fail(child(path, i), fmt::format("\"{}\" is listed twice", name));
        return;
      }
      kernel.tuning_key.push_back(name);
    }
  }

  // "autotune": {at_first_call, fields, reset_to_zero, restore_value}: config field names timed
  // (distinct, at least one), and pointer call arguments restored around timed runs; the kernel
  // needs a tuning key.
  void read_autotune(Kernel& kernel, const json* object, const std::string& path) {
    if (object == nullptr || reader_.failed()) return;
    if (kernel.tuning_key.empty()) {
      reader_.fail(path, "a kernel tuned at first call needs a \"tuning_key\"");
      return;
    }
    Autotune autotune;
    autotune.at_first_call = reader_.get_bool(object, "at_first_call", path);
    const json* fields = reader_.get_array(object, "fields", path, 1, kMaxU16);
    for (std::size_t i = 0; fields != nullptr && i < fields->size() && !reader_.failed(); ++i) {
      const std::string name = reader_.string_value(&(*fields)[i], child(child(path, "fields"), i));
      if (reader_.failed()) return;
      const auto field = std::find_if(kernel.config.begin(), kernel.config.end(),
                                      [&](const ConfigField& f) { return f.name == name; });
      if (field == kernel.config.end()) {
        reader_.fail(child(child(path, "fields"), i), fmt::format("\"{}\" is not a config field of the kernel", name));
        return;
      }
      const auto index = static_cast<std::size_t>(field - kernel.config.begin());
      if (std::find(autotune.fields.begin(), autotune.fields.end(), index) != autotune.fields.end()) {
        reader_.fail(child(child(path, "fields"), i), fmt::format("\"{}\" is listed twice", name));
        return;
      }
      autotune.fields.push_back(index);
    }
    std::sort(autotune.fields.begin(), autotune.fields.end());
    const std::vector<std::size_t> call_args = kernel.call_arguments();
    const std::pair<const char*, std::vector<std::size_t>*> buffers[] = {{"reset_to_zero", &autotune.reset_to_zero},
                                                                         {"restore_value", &autotune.restore_value}};
    for (const auto& [key, indexes_of_key] : buffers) {
      std::vector<std::size_t>& indexes = *indexes_of_key;
      if (!object->contains(key)) continue;
      const json* names = reader_.get_array(object, key, path, 0, kMaxU16);
      for (std::size_t i = 0; names != nullptr && i < names->size() && !reader_.failed(); ++i) {
        const std::string at = child(child(path, key), i);
        const std::string name = reader_.string_value(&(*names)[i], at);
        if (reader_.failed()) return;
        const auto index = call_argument_index(kernel, call_args, name, at);
        if (!index) return;
        if (kernel.args[call_args[*index]].kind != ArgKind::pointer) {
          reader_.fail(at, fmt::format("\"{}\" is an argument of kind {}; the runtime restores the memory of pointers",
                                       name, detail::arg_kind_rules(kernel.args[call_args[*index]].kind).manifest_name));
          return;
        }
        if (std::find(indexes.begin(), indexes.end(), *index) != indexes.end()) {
          reader_.fail(at, fmt::format("\"{}\" is listed twice", name));
          return;
        }
        indexes.push_back(*index);
      }
    }
    kernel.autotune = std::move(autotune);
  }

  // "heuristics": [{field, expression, program}], each field an int, bool or float config field.
  void read_heuristics(Kernel& kernel, const json* list, const std::string& path) {
    for (std::size_t i = 0; list != nullptr && i < list->size() && !reader_.failed(); ++i) {
      const std::string rule_path = child(path, i);
      const json* object = reader_.object_value(&(*list)[i], rule_path);
      Heuristic heuristic;
      heuristic.field = reader_.get_string(object, "field", rule_path);
      if (reader_.failed()) return;
      const auto field = std::find_if(kernel.config.begin(), kernel.config.end(),
                                      [&](const ConfigField& candidate) { return candidate.name == heuristic.field; });
      if (field == kernel.config.end()) {
        reader_.fail(child(rule_path, "field"), fmt::format("\"{}\" is not a config field of kernel {}",
                                                            heuristic.field, kernel.name));
        return;
      }
      if (!rule_readable(*field)) {
        reader_.fail(child(rule_path, "field"), fmt::format("\"{}\" holds {} values; heuristics compute int, bool "
                                                            "or float fields",
                                                            heuristic.field, field_kind_text(field->kind)));
        return;
      }
      heuristic.field_index = static_cast<std::size_t>(field - kernel.config.begin());
      heuristic.rule = read_rule(kernel, *object, rule_path);
      kernel.heuristics.push_back(std::move(heuristic));
    }
  }

  // "requires": [{expression, program}].
  void read_requirements(Kernel& kernel, const json* list, const std::string& path) {
    for (std::size_t i = 0; list != nullptr && i < list->size() && !reader_.failed(); ++i) {
      const std::string rule_path = child(path, i);
      const json* object = reader_.object_value(&(*list)[i], rule_path);
      if (reader_.failed()) return;
      kernel.requirements.push_back(read_rule(kernel, *object, rule_path));
    }
  }

  static bool rule_readable(const ConfigField& field) {
    return field.kind == FieldKind::int_value || field.kind == FieldKind::bool_value ||
           field.kind == FieldKind::float_value;
  }

  static std::string field_kind_text(FieldKind kind) {
    switch (kind) {
      case FieldKind::int_value: return "int";
      case FieldKind::float_value: return "float";
      case FieldKind::bool_value: return "bool";
      case FieldKind::dtype_value: return "dtype";
      case FieldKind::string_value: return "string";
    }
    return "unknown";
  }

  // {"expression": text, "program": [...]}: the program checked so that every path leaves one
  // value (jumps go forward, to an instruction or the end).
  Rule read_rule(const Kernel& kernel, const json& object, const std::string& path) {
    struct OpInfo {
      RuleOp op;
      int operands;
    };
    static const std::unordered_map<std::string, OpInfo> kOps = {
#define TAOT_RULE_OP_ENTRY(op, name, operands) {name, {RuleOp::op, operands}},
        TAOT_RULE_OPS(TAOT_RULE_OP_ENTRY)
#undef TAOT_RULE_OP_ENTRY
    };
    Rule rule;
    rule.expression = reader_.get_string(&object, "expression", path);
    if (reader_.failed()) return rule;
    if (rule.expression.empty()) {
      reader_.fail(child(path, "expression"), "expected an expression, got \"\"");
      return rule;
    }
    const std::string program_path = child(path, "program");
    const json* list = reader_.get_array(&object, "program", path, 1, kMaxU16);
    const std::vector<std::size_t> call_args = kernel.call_arguments();
    // The stack depth on entry to each instruction (and the end), -1 while unknown.
    std::vector<long> depth_at(list != nullptr ? list->size() + 1 : 1, -1);
    depth_at[0] = 0;
    for (std::size_t i = 0; list != nullptr && i < list->size() && !reader_.failed(); ++i) {
      const std::string instr_path = child(program_path, i);
      const json* instr_object = reader_.object_value(&(*list)[i], instr_path);
      const std::string op = reader_.get_string(instr_object, "op", instr_path);
      if (reader_.failed()) break;
      const auto found = kOps.find(op);
      if (found == kOps.end()) {
        std::string known;
        for (const auto& [name, info] : kOps) known += (known.empty() ? "" : ", ") + name;
        reader_.fail(child(instr_path, "op"), fmt::format("unknown rule op \"{}\" (expected one of {})", op, known));
        break;
      }
      RuleInstr instr;
      instr.op = found->second.op;
      const long depth = depth_at[i];
      if (depth < 0) {
        reader_.fail(instr_path, "no path of the program reaches this instruction");
        break;
      }
      if (depth < found->second.operands) {
        reader_.fail(instr_path, fmt::format("{} needs {} operand(s), the program has {} at that point", op,
                                             found->second.operands, depth));
        break;
      }
      switch (instr.op) {
        case RuleOp::lit:
          instr.integer = reader_.integer_value(reader_.member(instr_object, "value", instr_path), child(instr_path, "value"));
          break;
        case RuleOp::flit: {
          const json* value = reader_.member(instr_object, "value", instr_path);
          if (value != nullptr && value->is_number()) instr.real = value->get<double>();
          else if (value != nullptr) reader_.fail(child(instr_path, "value"), "expected a number");
          break;
        }
        case RuleOp::arg:
        case RuleOp::isnone: instr.operand = rule_argument(kernel, call_args, *instr_object, instr, instr_path); break;
        case RuleOp::field: instr.operand = rule_field(kernel, *instr_object, instr_path); break;
        default: break;
      }
      if (reader_.failed()) break;
      long after = depth - found->second.operands;
      const bool jumps = instr.op == RuleOp::jz || instr.op == RuleOp::jnz || instr.op == RuleOp::jmp;
      if (!jumps) ++after;
      if (after > TAOT_RULE_STACK_DEPTH) {
        reader_.fail(instr_path, fmt::format("the program holds {} values here; the runtime holds at most {}", after,
                                             TAOT_RULE_STACK_DEPTH));
        break;
      }
      if (jumps) {
        const std::int64_t to = reader_.integer_value(reader_.member(instr_object, "to", instr_path), child(instr_path, "to"));
        if (reader_.failed()) break;
        if (to <= static_cast<std::int64_t>(i) || to > static_cast<std::int64_t>(list->size())) {
          reader_.fail(child(instr_path, "to"), fmt::format("{} is not a later instruction of the program (it has {})",
                                                            to, list->size()));
          break;
        }
        instr.operand = static_cast<std::size_t>(to);
        if (!merge_depth(depth_at, instr.operand, after, instr_path)) break;
      }
      if (instr.op != RuleOp::jmp && !merge_depth(depth_at, i + 1, after, instr_path)) break;
      rule.program.push_back(instr);
    }
    if (!reader_.failed() && depth_at.back() != 1) {
      reader_.fail(program_path, fmt::format("the program leaves {} values; a rule program must leave exactly one",
                                             depth_at.back()));
    }
    return rule;
  }

  // Records that instruction `target` is entered with `depth` values; false (and fails) when
  // another path enters it with a different depth.
  bool merge_depth(std::vector<long>& depth_at, std::size_t target, long depth, const std::string& path) {
    if (depth_at[target] >= 0 && depth_at[target] != depth) {
      reader_.fail(path, fmt::format("paths reach instruction {} with {} and {} values", target, depth_at[target], depth));
      return false;
    }
    depth_at[target] = depth;
    return true;
  }

  // The call-argument index named by an arg (a scalar) or isnone (a pointer) instruction.
  std::size_t rule_argument(const Kernel& kernel, const std::vector<std::size_t>& call_args, const json& object,
                            const RuleInstr& instr, const std::string& path) {
    const std::string name = reader_.get_string(&object, "name", path);
    if (reader_.failed()) return 0;
    const auto index = call_argument_index(kernel, call_args, name, child(path, "name"));
    if (!index) return 0;
    const ArgKind kind = kernel.args[call_args[*index]].kind;
    const bool scalar = kind == ArgKind::int_scalar || kind == ArgKind::float_scalar || kind == ArgKind::bool_scalar ||
                        kind == ArgKind::scalar;
    if (instr.op == RuleOp::arg && !scalar)
      reader_.fail(child(path, "name"), fmt::format("\"{}\" is an argument of kind {}; arg reads int, float, bool or scalar "
                                                    "arguments",
                                                    name, detail::arg_kind_rules(kind).manifest_name));
    if (instr.op == RuleOp::isnone && kind != ArgKind::pointer && kind != ArgKind::scalar)
      reader_.fail(child(path, "name"), fmt::format("\"{}\" is an argument of kind {}; isnone tests pointer and scalar "
                                                    "arguments",
                                                    name, detail::arg_kind_rules(kind).manifest_name));
    return *index;
  }

  // The config-field index named by a field instruction (an int, bool or float field).
  std::size_t rule_field(const Kernel& kernel, const json& object, const std::string& path) {
    const std::string name = reader_.get_string(&object, "name", path);
    if (reader_.failed()) return 0;
    for (std::size_t f = 0; f < kernel.config.size(); ++f) {
      if (kernel.config[f].name != name) continue;
      if (!rule_readable(kernel.config[f]))
        reader_.fail(child(path, "name"), fmt::format("\"{}\" holds {} values; rules read int, bool or float fields",
                                                      name, field_kind_text(kernel.config[f].kind)));
      return f;
    }
    reader_.fail(child(path, "name"), fmt::format("\"{}\" is not a config field of kernel {}", name, kernel.name));
    return 0;
  }

  void read_args(Kernel& kernel, const json* args, const std::string& path) {
    std::size_t call_count = 0;
    for (std::size_t i = 0; args != nullptr && i < args->size() && !reader_.failed(); ++i) {
      const std::string arg_path = child(path, i);
      const json* object = reader_.object_value(&(*args)[i], arg_path);
      Arg arg;
      arg.name = reader_.get_string(object, "name", arg_path);
      if (reader_.failed()) return;
      if (!detail::is_identifier(arg.name)) {
        reader_.fail(child(arg_path, "name"), fmt::format("\"{}\" is not a C/C++ identifier", arg.name));
        return;
      }
      for (const Arg& other : kernel.args) {
        if (other.name == arg.name) {
          reader_.fail(child(arg_path, "name"), fmt::format("\"{}\" is the name of another argument", arg.name));
          return;
        }
      }
      const std::string kind = reader_.get_string(object, "kind", arg_path);
      if (reader_.failed()) return;
      const detail::ArgKindRules* rules = detail::arg_kind_by_manifest_name(kind);
      if (rules == nullptr) {
        reader_.fail(child(arg_path, "kind"),
                     fmt::format("unknown argument kind \"{}\" (expected {})", kind, detail::arg_kind_names()));
        return;
      }
      arg.kind = rules->kind;
      rules->read_arg(reader_, *object, arg_path, arg);
      if (!reader_.failed() && !arg.launch_only && !kernel.args.empty() && kernel.args.back().launch_only) {
        reader_.fail(arg_path, fmt::format("\"{}\" follows the launch-only argument \"{}\"; launch-only arguments "
                                           "come after the function's parameters",
                                           arg.name, kernel.args.back().name));
        return;
      }
      if (arg.is_call_argument() && ++call_count > kMaxU16) {
        reader_.fail(path, fmt::format("more than {} call arguments", kMaxU16));
      }
      kernel.args.push_back(std::move(arg));
    }
  }

  ConfigValue read_config_value(const json* value, FieldKind kind, const std::string& path) {
    if (value == nullptr || reader_.failed()) return std::int64_t{0};
    switch (kind) {
      case FieldKind::int_value: return reader_.integer_value(value, path);
      case FieldKind::float_value:
        if (!value->is_number()) {
          reader_.fail(path, "expected a number, got " + describe(*value));
          return 0.0;
        }
        return value->get<double>();
      case FieldKind::bool_value: return reader_.bool_value(value, path);
      case FieldKind::dtype_value: return reader_.dtype_value(value, path);
      case FieldKind::string_value: return reader_.string_value(value, path);
    }
    return std::int64_t{0};
  }

  void read_config_fields(Kernel& kernel, const json* fields, const std::string& path) {
    std::map<std::string, std::string> members;  // C++ member name -> field name
    for (std::size_t i = 0; fields != nullptr && i < fields->size() && !reader_.failed(); ++i) {
      const std::string field_path = child(path, i);
      const json* object = reader_.object_value(&(*fields)[i], field_path);
      ConfigField field;
      field.name = reader_.get_string(object, "name", field_path);
      if (reader_.failed()) return;
      if (!detail::is_identifier(field.name)) {
        reader_.fail(child(field_path, "name"), fmt::format("\"{}\" is not a C/C++ identifier", field.name));
        return;
      }
      const std::string member = detail::cpp_member_name(field.name);
      if (const auto [other, inserted] = members.emplace(member, field.name); !inserted) {
        reader_.fail(child(field_path, "name"),
                     other->second == field.name
                         ? fmt::format("\"{}\" is the name of another config field", field.name)
                         : fmt::format("config fields \"{}\" and \"{}\" would both be the C++ member {} (names "
                                       "that are keywords get a trailing underscore)",
                                       other->second, field.name, member));
        return;
      }
      const std::string kind = reader_.get_string(object, "kind", field_path);
      if (kind == "int") {
        field.kind = FieldKind::int_value;
      } else if (kind == "float") {
        field.kind = FieldKind::float_value;
      } else if (kind == "bool") {
        field.kind = FieldKind::bool_value;
      } else if (kind == "dtype") {
        field.kind = FieldKind::dtype_value;
      } else if (kind == "string") {
        field.kind = FieldKind::string_value;
      } else if (!reader_.failed()) {
        reader_.fail(child(field_path, "kind"),
                     fmt::format("unknown config kind \"{}\" (expected int, float, bool, dtype or string)", kind));
      }
      const json* values = reader_.get_array(object, "values", field_path, 1);
      for (std::size_t v = 0; values != nullptr && v < values->size() && !reader_.failed(); ++v) {
        const std::string value_path = child(child(field_path, "values"), v);
        ConfigValue value = read_config_value(&(*values)[v], field.kind, value_path);
        if (reader_.failed()) break;
        if (std::find(field.values.begin(), field.values.end(), value) != field.values.end()) {
          reader_.fail(value_path, fmt::format("{} is listed twice", describe_value(value)));
        }
        field.values.push_back(std::move(value));
      }
      const ConfigValue default_value =
          read_config_value(reader_.member(object, "default", field_path), field.kind, child(field_path, "default"));
      if (reader_.failed()) return;
      const auto found = std::find(field.values.begin(), field.values.end(), default_value);
      if (found == field.values.end()) {
        reader_.fail(child(field_path, "default"), fmt::format("{} is not one of the values of {} ({})",
                                                               describe_value(default_value), field.name,
                                                               describe_values(field.values)));
        return;
      }
      field.default_index = static_cast<std::size_t>(found - field.values.begin());
      if (object != nullptr && object->contains("required"))
        field.required = reader_.get_bool(object, "required", field_path);
      kernel.config.push_back(std::move(field));
    }
  }

  Variant read_variant(const Kernel& kernel, const json& value, const std::string& path) {
    Variant variant;
    const json* object = reader_.object_value(&value, path);
    variant.id = reader_.get_string(object, "id", path);
    if (!reader_.failed() &&
        (variant.id.empty() || !std::all_of(variant.id.begin(), variant.id.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        }))) {
      reader_.fail(child(path, "id"), fmt::format("\"{}\" is not a variant id ([A-Za-z0-9_]+)", variant.id));
    }
    variant.hash = reader_.get_string(object, "hash", path);
    const std::vector<std::size_t> call_args = kernel.call_arguments();
    read_specialization(kernel, call_args, variant, reader_.get_array(object, "specialization", path),
                        child(path, "specialization"));
    read_variant_config(kernel, variant, reader_.get_object(object, "config", path), child(path, "config"));
    read_params(kernel, call_args, variant, reader_.get_array(object, "params", path), child(path, "params"));
    check_params(kernel, call_args, variant, child(path, "params"));
    if (!kernel.has_grid) {
      if (object != nullptr && !(object->contains("grid") && (*object)["grid"].is_null()))
        reader_.fail(child(path, "grid"), "expected null: kernel " + kernel.name + " has no grid of its own");
    } else if (const json* grid = reader_.get_array(object, "grid", path, 3, 3)) {
      for (std::size_t d = 0; d < 3 && !reader_.failed(); ++d) {
        variant.grid[d] = read_grid_program(kernel, call_args, &(*grid)[d], child(child(path, "grid"), d));
      }
    }
    // One image per target of the kernel that has this variant, in the kernel's target order.
    const json* images = reader_.get_array(object, "images", path, options_.plan ? 0 : 1,
                                           std::max<std::size_t>(kernel.targets.size(), 1));
    std::size_t next_target = 0;  // images after this one come from later targets of the kernel
    for (std::size_t i = 0; images != nullptr && i < images->size() && !reader_.failed(); ++i) {
      const std::string image_path = child(child(path, "images"), i);
      Image image = read_image(kernel, (*images)[i], image_path);
      if (reader_.failed()) break;
      for (const Image& other : variant.images) {
        if (!reader_.failed() && other.target == image.target) {
          reader_.fail(child(image_path, "target"), fmt::format("a second image for target \"{}\"", image.target));
        }
      }
      const auto position = static_cast<std::size_t>(
          std::find(kernel.targets.begin(), kernel.targets.end(), image.target) - kernel.targets.begin());
      if (!reader_.failed() && position < next_target) {
        reader_.fail(child(image_path, "target"),
                     fmt::format("\"{}\" comes after \"{}\"; images follow the kernel's targets ({})", image.target,
                                 variant.images.back().target, join_strings(kernel.targets)));
      }
      next_target = position + 1;
      variant.images.push_back(std::move(image));
    }
    return variant;
  }

  // Launch-only arguments and arguments compiled None are never parameters; a None-able argument
  // that this variant compiles neither None nor ==1 is.
  void check_params(const Kernel& kernel, const std::vector<std::size_t>& call_args, const Variant& variant,
                    const std::string& path) {
    if (reader_.failed()) return;
    for (std::size_t i = 0; i < call_args.size(); ++i) {
      const Arg& arg = kernel.args[call_args[i]];
      const auto found = std::find(variant.params.begin(), variant.params.end(), i);
      const bool in_params = found != variant.params.end();
      const std::string at = in_params ? child(path, static_cast<std::size_t>(found - variant.params.begin())) : path;
      if (arg.launch_only && in_params) {
        reader_.fail(at, fmt::format("\"{}\" is a launch-only argument; the kernel does not take it", arg.name));
      } else if (variant.specialization[i].none && in_params) {
        reader_.fail(at, fmt::format("\"{}\" is compiled None in this variant; it is not a parameter", arg.name));
      } else if (arg.none && !variant.specialization[i].none && !in_params && variant.specialization[i].hint != 1) {
        reader_.fail(at, fmt::format("\"{}\" is not None in this variant, so it must be among its params", arg.name));
      }
      if (reader_.failed()) return;
    }
  }

  void read_specialization(const Kernel& kernel, const std::vector<std::size_t>& call_args, Variant& variant,
                           const json* list, const std::string& path) {
    if (list == nullptr || reader_.failed()) return;
    if (list->size() != call_args.size()) {
      std::string names;
      for (std::size_t index : call_args) names += (names.empty() ? "" : ", ") + kernel.args[index].name;
      reader_.fail(path, fmt::format("expected {} entries, one per call argument ({}), got {}", call_args.size(),
                                     names.empty() ? "none" : names, list->size()));
      return;
    }
    for (std::size_t i = 0; i < call_args.size() && !reader_.failed(); ++i) {
      const Arg& arg = kernel.args[call_args[i]];
      const std::string entry_path = child(path, i);
      const json* entry = reader_.object_value(&(*list)[i], entry_path);
      const std::string name = reader_.get_string(entry, "arg", entry_path);
      if (reader_.failed()) return;
      if (name != arg.name) {
        reader_.fail(child(entry_path, "arg"),
                     fmt::format("expected \"{}\" (call argument {} of {}), got \"{}\"", arg.name, i, kernel.name, name));
        return;
      }
      ArgSpecialization spec;
      const detail::ArgKindRules& rules = detail::arg_kind_rules(arg.kind);
      rules.read_specialization(reader_, arg, *entry, entry_path, spec);
      if (!reader_.failed() && std::find(arg.types.begin(), arg.types.end(), spec.type) == arg.types.end()) {
        reader_.fail(child(entry_path, rules.type_key),
                     fmt::format("\"{}\" is not among the types of {} argument {} ({})", dtype_name(spec.type),
                                 rules.manifest_name, arg.name, join_names(arg.types)));
      }
      variant.specialization.push_back(spec);
    }
  }

  void read_variant_config(const Kernel& kernel, Variant& variant, const json* object, const std::string& path) {
    if (object == nullptr || reader_.failed()) return;
    for (const ConfigField& field : kernel.config) {
      const std::string value_path = child(path, field.name);
      const ConfigValue value = read_config_value(reader_.member(object, field.name, path), field.kind, value_path);
      if (reader_.failed()) return;
      const auto found = std::find(field.values.begin(), field.values.end(), value);
      if (found == field.values.end()) {
        reader_.fail(value_path, fmt::format("{} is not one of the values of config field {}", describe_value(value),
                                             field.name));
        return;
      }
      variant.config.push_back(static_cast<std::size_t>(found - field.values.begin()));
    }
    for (const auto& item : object->items()) {
      const std::string& key = item.key();
      const bool known = std::any_of(kernel.config.begin(), kernel.config.end(),
                                     [&](const ConfigField& field) { return field.name == key; });
      if (!known) {
        reader_.fail(child(path, key), fmt::format("not a config field of kernel {}", kernel.name));
        return;
      }
    }
  }

  // The call-argument index of argument `name`, or a failure at `path` saying why there is none.
  std::optional<std::size_t> call_argument_index(const Kernel& kernel, const std::vector<std::size_t>& call_args,
                                                 const std::string& name, const std::string& path) {
    for (std::size_t i = 0; i < call_args.size(); ++i) {
      if (kernel.args[call_args[i]].name == name) return i;
    }
    const bool is_constexpr = std::any_of(kernel.args.begin(), kernel.args.end(),
                                          [&](const Arg& arg) { return arg.name == name; });
    reader_.fail(path, is_constexpr
                           ? fmt::format("\"{}\" is a constexpr argument, not a call argument", name)
                           : fmt::format("\"{}\" is not an argument of kernel {}", name, kernel.name));
    return std::nullopt;
  }

  void read_params(const Kernel& kernel, const std::vector<std::size_t>& call_args, Variant& variant,
                   const json* list, const std::string& path) {
    for (std::size_t i = 0; list != nullptr && i < list->size() && !reader_.failed(); ++i) {
      const std::string name = reader_.string_value(&(*list)[i], child(path, i));
      if (reader_.failed()) return;
      if (const auto index = call_argument_index(kernel, call_args, name, child(path, i))) {
        variant.params.push_back(*index);
      }
    }
  }

  GridProgram read_grid_program(const Kernel& kernel, const std::vector<std::size_t>& call_args, const json* value,
                                const std::string& path) {
    static const std::unordered_map<std::string, std::pair<GridOp, int>> kOps = {
        {"lit", {GridOp::literal, 0}}, {"arg", {GridOp::arg, 0}}, {"add", {GridOp::add, 2}},
        {"sub", {GridOp::sub, 2}},     {"mul", {GridOp::mul, 2}}, {"div", {GridOp::div, 2}},
        {"mod", {GridOp::mod, 2}},     {"cdiv", {GridOp::cdiv, 2}}, {"min", {GridOp::min, 2}},
        {"max", {GridOp::max, 2}},     {"neg", {GridOp::neg, 1}},  {"num_sms", {GridOp::num_sms, 0}},
    };
    GridProgram program;
    const json* list = reader_.array_value(value, path);
    std::size_t depth = 0;
    for (std::size_t i = 0; list != nullptr && i < list->size() && !reader_.failed(); ++i) {
      const std::string instr_path = child(path, i);
      const json* object = reader_.object_value(&(*list)[i], instr_path);
      const std::string op = reader_.get_string(object, "op", instr_path);
      if (reader_.failed()) break;
      const auto found = kOps.find(op);
      if (found == kOps.end()) {
        reader_.fail(child(instr_path, "op"), fmt::format("unknown grid op \"{}\" (expected lit, arg, num_sms, add, sub, "
                                                          "mul, div, mod, cdiv, min, max or neg)",
                                                          op));
        break;
      }
      GridInstr instr;
      instr.op = found->second.first;
      const auto operands = static_cast<std::size_t>(found->second.second);
      if (depth < operands) {
        reader_.fail(instr_path, fmt::format("{} needs {} operand(s), the program has {} at that point", op, operands, depth));
        break;
      }
      if (instr.op == GridOp::literal) {
        instr.value = reader_.integer_value(reader_.member(object, "value", instr_path), child(instr_path, "value"));
      } else if (instr.op == GridOp::arg) {
        const std::string name = reader_.get_string(object, "name", instr_path);
        if (reader_.failed()) break;
        if (const auto index = call_argument_index(kernel, call_args, name, child(instr_path, "name"))) {
          const Arg& arg = kernel.args[call_args[*index]];
          if (!detail::arg_kind_rules(arg.kind).grid_operand) {
            reader_.fail(child(instr_path, "name"), fmt::format("\"{}\" is a {} argument; a grid can only use int call "
                                                                "arguments",
                                                                name, detail::arg_kind_rules(arg.kind).manifest_name));
          }
          instr.arg = *index;
        }
      }
      depth = depth - operands + 1;
      program.push_back(instr);
    }
    if (!reader_.failed() && depth != 1) {
      reader_.fail(path, fmt::format("the program leaves {} values; a grid program must leave exactly one", depth));
    }
    return program;
  }

  // Reads every key of an image entry that taot/image_fields.h lists (its tables' members and the
  // keys only the manifest has); tests/unit/codegen/image_fields_test.cpp checks that none is missed.
  Image read_image(const Kernel& kernel, const json& value, const std::string& path) {
    Image image;
    const json* object = reader_.object_value(&value, path);
    image.target = reader_.get_string(object, "target", path);
    if (!reader_.failed() &&
        std::find(kernel.targets.begin(), kernel.targets.end(), image.target) == kernel.targets.end()) {
      reader_.fail(child(path, "target"), fmt::format("\"{}\" is not one of kernel {}'s targets ({})", image.target,
                                                      kernel.name, join_strings(kernel.targets)));
    }
    image.arch = static_cast<std::uint16_t>(reader_.get_unsigned(object, "arch", path, kMaxU16));
    image.arch_specific = reader_.get_bool(object, "arch_specific", path);
    read_vendor(image, object, path);
    image.dir = reader_.get_string(object, "dir", path);
    image.cubin = reader_.get_string(object, "cubin", path);
    image.cubin_sha256 = reader_.get_string(object, "cubin_sha256", path);
    if (!reader_.failed() && !is_sha256(image.cubin_sha256)) {
      reader_.fail(child(path, "cubin_sha256"),
                   fmt::format("expected 64 lower-case hex digits, got {}", json(image.cubin_sha256).dump()));
    }
    image.function_name = reader_.get_string(object, "function_name", path);
    if (!reader_.failed() && image.function_name.empty()) reader_.fail(child(path, "function_name"), "expected a name");
    image.num_warps = static_cast<std::uint16_t>(reader_.get_unsigned(object, "num_warps", path, kMaxU16));
    image.num_ctas = static_cast<std::uint16_t>(reader_.get_unsigned(object, "num_ctas", path, kMaxU16));
    if (!reader_.failed() && image.num_warps == 0) reader_.fail(child(path, "num_warps"), "expected at least 1, got 0");
    if (!reader_.failed() && image.num_ctas == 0) reader_.fail(child(path, "num_ctas"), "expected at least 1, got 0");
    image.num_stages = static_cast<std::uint32_t>(reader_.get_unsigned(object, "num_stages", path, kMaxU32));
    image.shared = static_cast<std::uint32_t>(reader_.get_unsigned(object, "shared", path, kMaxU32));
    image.global_scratch_size = reader_.get_unsigned(object, "global_scratch_size", path, kMaxI64);
    image.global_scratch_align = static_cast<std::uint32_t>(reader_.get_unsigned(object, "global_scratch_align", path, kMaxU32));
    image.profile_scratch_size = reader_.get_unsigned(object, "profile_scratch_size", path, kMaxI64);
    image.profile_scratch_align =
        static_cast<std::uint32_t>(reader_.get_unsigned(object, "profile_scratch_align", path, kMaxU32));
    image.launch_cooperative_grid = reader_.get_bool(object, "launch_cooperative_grid", path);
    image.launch_pdl = reader_.get_bool(object, "launch_pdl", path);
    if (const json* dims = reader_.get_array(object, "cluster_dims", path, 3, 3)) {
      for (std::size_t d = 0; d < 3; ++d) {
        image.cluster_dims[d] =
            static_cast<std::uint32_t>(reader_.unsigned_value(&(*dims)[d], child(child(path, "cluster_dims"), d), kMaxU32));
      }
    }
    image.tmem_size = reader_.get_unsigned(object, "tmem_size", path, kMaxI64);
    if (const json* maxnreg = reader_.member(object, "maxnreg", path); maxnreg != nullptr && !maxnreg->is_null()) {
      image.maxnreg = static_cast<std::uint32_t>(reader_.unsigned_value(maxnreg, child(path, "maxnreg"), kMaxU32));
    }
    read_tensordesc_meta(kernel, image, object, path);
    if (const json* artifacts = reader_.get_object(object, "artifacts", path)) {
      for (const auto& [stage, artifact] : artifacts->items()) {
        image.artifacts[stage] = reader_.string_value(&artifact, child(child(path, "artifacts"), stage));
      }
    }
    read_ptxas_report(image, object, path);
    read_override(image, object, path);
    read_toolchain(image, object, path);
    if (reader_.failed()) return image;
    image.cubin_path = manifest_.directory / image.cubin;
    if (options_.verify_cubins) verify_cubin(image, child(path, "cubin"));
    return image;
  }

  // "vendor" ("nvidia" or "amd") and "warp_size" (32 or 64), both optional: a manifest written
  // before AMD targets means nvidia, and a warp of 32 (64 for an amd image that does not say).
  void read_vendor(Image& image, const json* object, const std::string& path) {
    if (object == nullptr || reader_.failed()) return;
    if (const auto found = object->find("vendor"); found != object->end()) {
      const std::string vendor = reader_.string_value(&*found, child(path, "vendor"));
      if (reader_.failed()) return;
      if (vendor == "amd") {
        image.vendor = table::Vendor::amd;
      } else if (vendor != "nvidia") {
        reader_.fail(child(path, "vendor"), "expected \"nvidia\" or \"amd\", got " + describe(*found));
        return;
      }
    }
    image.warp_size = image.vendor == table::Vendor::amd ? 64 : 32;
    if (const auto found = object->find("warp_size"); found != object->end()) {
      const auto warp_size = reader_.unsigned_value(&*found, child(path, "warp_size"), kMaxU16);
      if (reader_.failed()) return;
      if (warp_size != 32 && warp_size != 64) {
        reader_.fail(child(path, "warp_size"), fmt::format("expected 32 or 64, got {}", warp_size));
        return;
      }
      image.warp_size = static_cast<std::uint16_t>(warp_size);
    }
  }

  // "ptxas" (optional): {"registers", "spill_stores", "spill_loads", "stack"}.
  void read_ptxas_report(Image& image, const json* object, const std::string& path) {
    if (object == nullptr || !object->contains("ptxas") || reader_.failed()) return;
    const json* report = reader_.member(object, "ptxas", path);
    if (report == nullptr || report->is_null()) return;
    const std::string report_path = child(path, "ptxas");
    if (reader_.object_value(report, report_path) == nullptr) return;
    PtxasReport read;
    read.registers = static_cast<std::uint32_t>(reader_.get_unsigned(report, "registers", report_path, kMaxU16));
    read.spill_stores = static_cast<std::uint32_t>(reader_.get_unsigned(report, "spill_stores", report_path, kMaxU32));
    read.spill_loads = static_cast<std::uint32_t>(reader_.get_unsigned(report, "spill_loads", report_path, kMaxU32));
    read.stack = static_cast<std::uint32_t>(reader_.get_unsigned(report, "stack", report_path, kMaxU32));
    if (!reader_.failed()) image.ptxas = read;
  }

  // "triton_version", "ptxas_version" (optional, null: unknown) and "launch_abi" (optional:
  // {"tensordesc_layout", "scratch_pointers"}; absent means Triton 3.5's, which taot assumed before
  // recording it).
  void read_toolchain(Image& image, const json* object, const std::string& path) {
    if (object == nullptr || reader_.failed()) return;
    if (const auto found = object->find("triton_version"); found != object->end() && !found->is_null())
      image.triton_version = reader_.string_value(&*found, child(path, "triton_version"));
    if (const auto found = object->find("ptxas_version"); found != object->end() && !found->is_null()) {
      std::string version = reader_.string_value(&*found, child(path, "ptxas_version"));
      if (!reader_.failed() && !is_version_text(version))
        reader_.fail(child(path, "ptxas_version"), "expected a version such as \"12.8.93\", got " + describe(*found));
      image.ptxas_version = std::move(version);
    }
    if (!object->contains("launch_abi") || reader_.failed()) return;
    const std::string abi_path = child(path, "launch_abi");
    const json* entry = reader_.get_object(object, "launch_abi", path);
    const std::string layout = reader_.get_string(entry, "tensordesc_layout", abi_path);
    if (reader_.failed()) return;
    const std::optional<abi::TensordescLayout> known = tensordesc_layout_from_name(layout);
    if (!known) {
      reader_.fail(child(abi_path, "tensordesc_layout"),
                   fmt::format("expected {}, got {}", known_layout_names(), describe(json(layout))));
      return;
    }
    image.launch_abi.tensordesc_layout = *known;
    const auto pointers = reader_.get_unsigned(entry, "scratch_pointers", abi_path, kMaxU32);
    if (!reader_.failed() && pointers != abi::kScratchPointers) {
      reader_.fail(child(abi_path, "scratch_pointers"),
                   fmt::format("this taot's runtime passes {} scratch pointers (Triton 3.5 to 3.9), got {}: the image "
                               "needs a taot that knows its Triton release",
                               abi::kScratchPointers, pointers));
      return;
    }
    image.launch_abi.scratch_pointers = static_cast<std::uint32_t>(pointers);
  }

  // "override" (optional): {"stage", "sha256", "file"} of the edited stage the image was rebuilt from.
  void read_override(Image& image, const json* object, const std::string& path) {
    if (object == nullptr || !object->contains("override") || reader_.failed()) return;
    const json* entry = reader_.member(object, "override", path);
    if (entry == nullptr || entry->is_null()) return;
    const std::string entry_path = child(path, "override");
    if (reader_.object_value(entry, entry_path) == nullptr) return;
    IrOverride read;
    read.stage = reader_.get_string(entry, "stage", entry_path);
    read.sha256 = reader_.get_string(entry, "sha256", entry_path);
    read.file = reader_.get_string(entry, "file", entry_path);
    if (reader_.failed()) return;
    static constexpr std::string_view kStages[] = {"ttir", "ttgir", "llir", "ptx", "cubin", "amdgcn", "hsaco"};
    if (std::find(std::begin(kStages), std::end(kStages), read.stage) == std::end(kStages)) {
      reader_.fail(child(entry_path, "stage"), fmt::format("expected one of ttir, ttgir, llir, ptx, cubin, amdgcn, "
                                                           "hsaco, got {}", json(read.stage).dump()));
      return;
    }
    if (!is_sha256(read.sha256)) {
      reader_.fail(child(entry_path, "sha256"), fmt::format("expected 64 lower-case hex digits, got {}", json(read.sha256).dump()));
      return;
    }
    image.override_from = std::move(read);
  }

  // "tensordesc_meta" (optional when the kernel has no descriptors): on sm_90+ one entry per
  // tensordesc call argument, whose box has the argument's rank; below sm_90 empty.
  void read_tensordesc_meta(const Kernel& kernel, Image& image, const json* object, const std::string& path) {
    if (object == nullptr || reader_.failed()) return;
    std::vector<const Arg*> descriptors;
    for (const Arg& arg : kernel.args)
      if (arg.kind == ArgKind::tensordesc) descriptors.push_back(&arg);
    const std::string meta_path = child(path, "tensordesc_meta");
    const json* list = object->contains("tensordesc_meta") ? reader_.get_array(object, "tensordesc_meta", path) : nullptr;
    const std::size_t count = list == nullptr ? 0 : list->size();
    const std::size_t expected = image.arch >= 90 ? descriptors.size() : 0;
    if (reader_.failed()) return;
    if (count != expected) {
      reader_.fail(meta_path, fmt::format("expected {} entries (one per tensordesc argument on sm_90 and newer, none "
                                          "below), got {}",
                                          expected, count));
      return;
    }
    for (std::size_t i = 0; i < count && !reader_.failed(); ++i) {
      const std::string entry_path = child(meta_path, i);
      const json* entry = reader_.object_value(&(*list)[i], entry_path);
      TensordescMeta meta;
      meta.swizzle = static_cast<std::uint8_t>(reader_.get_unsigned(entry, "swizzle", entry_path, 3));
      meta.elem_size = static_cast<std::uint8_t>(reader_.get_unsigned(entry, "elem_size", entry_path, 8));
      meta.elem_type = static_cast<std::uint8_t>(reader_.get_unsigned(entry, "elem_type", entry_path, 15));
      if (entry != nullptr && entry->contains("fp4_padded")) meta.fp4_padded = reader_.get_bool(entry, "fp4_padded", entry_path);
      if (!reader_.failed() && meta.elem_size != 1 && meta.elem_size != 2 && meta.elem_size != 4 && meta.elem_size != 8) {
        reader_.fail(child(entry_path, "elem_size"), fmt::format("expected 1, 2, 4 or 8, got {}", meta.elem_size));
      }
      meta.block_size = reader_.read_block(reader_.member(entry, "block_size", entry_path), child(entry_path, "block_size"),
                                   descriptors[i]->rank);
      image.tensordesc_meta.push_back(std::move(meta));
    }
  }

  void verify_cubin(const Image& image, const std::string& path) {
    Expected<FileContent> content = read_file_with_sha256(image.cubin_path);
    if (!content.ok()) {
      reader_.fail(path, content.status().message());
      return;
    }
    if (content->bytes.empty()) {
      reader_.fail(path, fmt::format("{}: the cubin is empty", image.cubin_path.generic_string()));
    } else if (content->sha256 != image.cubin_sha256) {
      reader_.fail(path, fmt::format("{}: sha256 is {} ({} bytes) but the manifest says {}: the cubin is truncated, "
                                     "corrupted or stale",
                                     image.cubin_path.generic_string(), content->sha256, content->bytes.size(),
                                     image.cubin_sha256));
    }
  }

  Reader reader_;
  ReadOptions options_;
  Manifest manifest_;
  std::unordered_map<std::string, std::size_t> generated_owner_;  // generated name -> kernel index
};

}  // namespace

namespace detail {

std::string known_dtype_names() {
  std::string text;
  for (const auto& entry : kDTypes) text += (text.empty() ? "" : ", ") + std::string(entry.name);
  return text;
}

}  // namespace detail

std::string_view dtype_name(DType dtype) noexcept {
  for (const auto& entry : kDTypes) {
    if (entry.dtype == dtype) return entry.name;
  }
  return "unknown";
}

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  for (const auto& entry : kDTypes) {
    if (entry.name == name) return entry.dtype;
  }
  return std::nullopt;
}

std::size_t dtype_size(DType dtype) noexcept {
  for (const auto& entry : kDTypes) {
    if (entry.dtype == dtype) return entry.bytes;
  }
  return 0;
}

std::string_view dtype_enumerator(DType dtype) noexcept {
  for (const auto& entry : kDTypes) {
    if (entry.dtype == dtype) return entry.enumerator;
  }
  return "TAOT_DTYPE_UNKNOWN";
}

std::string_view tensordesc_layout_enumerator(abi::TensordescLayout layout) noexcept {
  for (const auto& entry : kLayouts)
    if (entry.layout == layout) return entry.enumerator;
  return kLayouts[0].enumerator;
}

std::optional<abi::TensordescLayout> tensordesc_layout_from_name(std::string_view name) noexcept {
  for (const auto& entry : kLayouts)
    if (entry.name == name) return entry.layout;
  return std::nullopt;
}

std::vector<std::size_t> Kernel::call_arguments() const {
  std::vector<std::size_t> indices;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_call_argument()) indices.push_back(i);
  }
  return indices;
}

Expected<Manifest> parse_manifest(std::string_view json_text, const std::filesystem::path& path,
                                  const ReadOptions& options) {
  try {
    return ManifestParser(path, options).parse(json_text);
  } catch (const std::exception& error) {  // allocation failure or a bug; never leaves the library
    return input_error(fmt::format("{}: internal error reading the manifest: {}", path.generic_string(), error.what()));
  }
}

Expected<Manifest> read_manifest(const std::filesystem::path& path, const ReadOptions& options) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return input_error(path.generic_string() + ": " + (std::filesystem::exists(path, error) ? "not a regular file" : "file not found"));
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return input_error(path.generic_string() + ": cannot open for reading");
  const std::string text((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  if (stream.bad()) return input_error(path.generic_string() + ": read failed");
  return parse_manifest(text, path, options);
}

}  // namespace taot::codegen
