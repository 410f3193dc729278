// The code generator's rules per argument kind; see arg_kinds.h.
#include "arg_kinds.h"

#include <fmt/format.h>

#include <algorithm>

namespace taot::codegen::detail {
namespace {

bool takes_i64(const Arg& arg) { return std::find(arg.types.begin(), arg.types.end(), DType::i64) != arg.types.end(); }

std::string or_list(const std::vector<DType>& dtypes) {
  std::string text;
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    if (i > 0) text += i + 1 == dtypes.size() ? " or " : ", ";
    text += dtype_name(dtypes[i]);
  }
  return text;
}

std::string block_text(const std::vector<std::uint32_t>& block) {
  std::string text = "[";
  for (std::size_t d = 0; d < block.size(); ++d) text += (d ? ", " : "") + fmt::format("{}", block[d]);
  return text + "]";
}

// The optional "output" flag of an array argument.
void read_output(Reader& reader, const json& object, const std::string& path, Arg& arg) {
  if (object.contains("output")) arg.output = reader.get_bool(&object, "output", path);
}

// A specialization's type, under `key`; the caller checks it is among the argument's types.
DType read_type(Reader& reader, const json& entry, const std::string& path, std::string_view key) {
  return reader.dtype_value(reader.member(&entry, key, path), child(path, key));
}

std::string no_type(const Arg&) { return "void"; }

// Kernel parameters: a pointer's address; a scalar of its type's size (i1: one byte); none.
void pointer_param(const Arg&, const ArgSpecialization&, const LaunchAbi&, bool, std::vector<std::uint32_t>& sizes) {
  sizes.push_back(static_cast<std::uint32_t>(abi::kPointerBytes));
}
void scalar_param(const Arg&, const ArgSpecialization& spec, const LaunchAbi&, bool, std::vector<std::uint32_t>& sizes) {
  sizes.push_back(static_cast<std::uint32_t>(dtype_size(spec.type)));
}
void no_param(const Arg&, const ArgSpecialization&, const LaunchAbi&, bool, std::vector<std::uint32_t>&) {}

// pointer ---------------------------------------------------------------------------------------
void read_pointer(Reader& reader, const json& object, const std::string& path, Arg& arg) {
  arg.types = reader.read_dtype_list(reader.get_array(&object, "dtypes", path, 1), child(path, "dtypes"), {});
  read_output(reader, object, path, arg);
  if (object.contains("rank")) {
    arg.rank = static_cast<std::uint8_t>(reader.get_unsigned(&object, "rank", path, kMaxRank));
    if (!reader.failed() && arg.rank == 0) reader.fail(child(path, "rank"), "expected 1 to 8, got 0");
  }
  if (object.contains("none")) arg.none = reader.get_bool(&object, "none", path);
}
void read_pointer_specialization(Reader& reader, const Arg& arg, const json& entry, const std::string& path,
                                 ArgSpecialization& spec) {
  spec.type = read_type(reader, entry, path, "dtype");
  const auto align = reader.get_unsigned(&entry, "align", path, kMaxU32);
  if (!reader.failed() && align != 0 && align != 16) {
    reader.fail(child(path, "align"), fmt::format("expected 16 or 0 (any), got {}", align));
  }
  spec.hint = static_cast<std::uint8_t>(align);
  if (entry.contains("none")) spec.none = reader.get_bool(&entry, "none", path);
  if (!reader.failed() && spec.none && !arg.none) {
    reader.fail(child(path, "none"), fmt::format("argument {} was not declared none: true, so no variant can compile "
                                                 "it None",
                                                 arg.name));
  }
}

// tensordesc ------------------------------------------------------------------------------------
void read_tensordesc(Reader& reader, const json& object, const std::string& path, Arg& arg) {
  arg.types = reader.read_dtype_list(reader.get_array(&object, "dtypes", path, 1), child(path, "dtypes"), {});
  read_output(reader, object, path, arg);
  arg.rank = static_cast<std::uint8_t>(reader.get_unsigned(&object, "rank", path, kMaxTensordescRank));
  if (!reader.failed() && arg.rank == 0) reader.fail(child(path, "rank"), "expected 1 to 5, got 0");
  if (!reader.failed())
    arg.blocks = reader.read_blocks(reader.get_array(&object, "blocks", path, 1), child(path, "blocks"), arg.rank);
}
void read_tensordesc_specialization(Reader& reader, const Arg& arg, const json& entry, const std::string& path,
                                    ArgSpecialization& spec) {
  spec.type = read_type(reader, entry, path, "dtype");
  const std::vector<std::uint32_t> block = reader.read_block(reader.member(&entry, "block", path), child(path, "block"), arg.rank);
  const auto found = std::find(arg.blocks.begin(), arg.blocks.end(), block);
  if (!reader.failed() && found == arg.blocks.end()) {
    reader.fail(child(path, "block"),
                fmt::format("{} is not among the blocks of tensordesc argument {}", json(block).dump(), arg.name));
  }
  spec.block = static_cast<std::uint16_t>(found - arg.blocks.begin());
}
void tensordesc_params(const Arg& arg, const ArgSpecialization&, const LaunchAbi& launch_abi, bool with_map,
                       std::vector<std::uint32_t>& sizes) {
  const abi::DescriptorParams params = abi::descriptor_params(launch_abi.tensordesc_layout, with_map);
  for (std::size_t r = 0; r < params.count; ++r) {
    const std::size_t count = params.runs[r].per_dim ? arg.rank : 1;
    for (std::size_t d = 0; d < count; ++d)
      sizes.push_back(static_cast<std::uint32_t>(abi::descriptor_value_bytes(params.runs[r].value)));
  }
}
std::string describe_tensordesc(const Arg& arg) {
  std::string blocks;
  for (const auto& block : arg.blocks) blocks += (blocks.empty() ? "" : ", ") + block_text(block);
  return fmt::format("rank {} tensor descriptor of {}, block {}", arg.rank, or_list(arg.types), blocks);
}

// int -------------------------------------------------------------------------------------------
void read_int(Reader& reader, const json& object, const std::string& path, Arg& arg) {
  arg.types = reader.read_dtype_list(reader.get_array(&object, "types", path, 1), child(path, "types"),
                                     {DType::i32, DType::i64});
  if (object.contains("launch_only")) arg.launch_only = reader.get_bool(&object, "launch_only", path);
}
void read_int_specialization(Reader& reader, const Arg& arg, const json& entry, const std::string& path,
                             ArgSpecialization& spec) {
  spec.type = read_type(reader, entry, path, "type");
  const auto hint = reader.get_unsigned(&entry, "hint", path, kMaxU32);
  if (!reader.failed() && hint != 0 && hint != 1 && hint != 16) {
    reader.fail(child(path, "hint"), fmt::format("expected 1 (==1), 16 (%16==0) or 0 (none), got {}", hint));
  }
  if (!reader.failed() && arg.launch_only && hint != 0) {
    reader.fail(child(path, "hint"), fmt::format("{} is launch-only: the kernel is not specialized for it (hint 0), "
                                                 "got {}",
                                                 arg.name, hint));
  }
  spec.hint = static_cast<std::uint8_t>(hint);
}

// float, bool -----------------------------------------------------------------------------------
void read_float(Reader& reader, const json& object, const std::string& path, Arg& arg) {
  arg.types = reader.read_dtype_list(reader.get_array(&object, "types", path, 1, 1), child(path, "types"),
                                     {DType::fp32, DType::fp64});
}
void read_bool(Reader&, const json&, const std::string&, Arg& arg) { arg.types = {DType::i1}; }
void read_scalar_specialization(Reader& reader, const Arg&, const json& entry, const std::string& path,
                                ArgSpecialization& spec) {
  spec.type = read_type(reader, entry, path, "type");
}
std::string float_type(const Arg& arg) { return arg.types.at(0) == DType::fp64 ? "double" : "float"; }

// scalar: None, an int or a float, its form chosen at launch ------------------------------------
bool is_float(DType type) { return type == DType::fp32 || type == DType::fp64; }
void read_scalar(Reader& reader, const json& object, const std::string& path, Arg& arg) {
  arg.types = reader.read_dtype_list(reader.get_array(&object, "types", path, 1), child(path, "types"),
                                     {DType::i32, DType::i64, DType::fp32, DType::fp64});
  if (object.contains("none")) arg.none = reader.get_bool(&object, "none", path);
  if (std::count_if(arg.types.begin(), arg.types.end(), is_float) > 1 && !reader.failed())
    reader.fail(child(path, "types"), "expected at most one float type (the form a float value takes)");
}
void read_scalar_form(Reader& reader, const Arg& arg, const json& entry, const std::string& path,
                      ArgSpecialization& spec) {
  spec.type = read_type(reader, entry, path, "type");
  if (entry.contains("none")) spec.none = reader.get_bool(&entry, "none", path);
  if (!reader.failed() && spec.none && !arg.none) {
    reader.fail(child(path, "none"), fmt::format("argument {} was not declared none: true, so no variant can compile "
                                                 "it None",
                                                 arg.name));
  }
  const auto hint = entry.contains("hint") ? reader.get_unsigned(&entry, "hint", path, kMaxU32) : 0;
  if (!reader.failed() && hint != 0 && (is_float(spec.type) || (hint != 1 && hint != 16)))
    reader.fail(child(path, "hint"), fmt::format("expected 1 (==1), 16 (%16==0) or 0 (none) for an int form, 0 for a "
                                                 "float, got {}",
                                                 hint));
  spec.hint = static_cast<std::uint8_t>(hint);
}
std::string describe_scalar(const Arg& arg) {
  std::vector<DType> ints, floats;
  for (DType type : arg.types) (is_float(type) ? floats : ints).push_back(type);
  std::string text = ints.empty() ? "" : or_list(ints) + " integer";
  if (!floats.empty()) text += (text.empty() ? "" : " or ") + or_list(floats) + " float";
  if (arg.none) text += " or None (None: selects the variants compiled with " + arg.name + " None)";
  return text + " (taot::Scalar: the form selects the variants)";
}
// taot::arg(value, float type, takes ints): a float value is stored as the argument's float type, an
// int as that float when the argument takes no int.
std::string scalar_arg_expression(const Arg& arg, const std::string& value) {
  std::string float_type = "TAOT_DTYPE_UNKNOWN";
  bool takes_ints = false;
  for (DType type : arg.types) {
    if (is_float(type)) float_type = type == DType::fp32 ? "TAOT_DTYPE_FP32" : "TAOT_DTYPE_FP64";
    else takes_ints = true;
  }
  return fmt::format("taot::arg({}, {}, {})", value, float_type, takes_ints ? "true" : "false");
}

// constexpr: compiled in, not a call argument ---------------------------------------------------
void read_constexpr(Reader&, const json&, const std::string&, Arg&) {}
void read_no_specialization(Reader&, const Arg&, const json&, const std::string&, ArgSpecialization&) {}

const ArgKindRules kRules[] = {
    {ArgKind::pointer, "pointer", "pointer", "dtype", read_pointer, read_pointer_specialization,
     [](const Arg&) -> std::string { return "taot::Ptr"; }, [](const Arg&) -> std::string { return "taot_ptr"; },
     [](const Arg& arg) {
       return "pointer to " + or_list(arg.types) +
              (arg.none ? ", or null (None: selects the variants compiled with " + arg.name + " None)" : "");
     },
     false, pointer_param},
    {ArgKind::int_scalar, "int", "int_scalar", "type", read_int, read_int_specialization,
     [](const Arg& arg) -> std::string { return takes_i64(arg) ? "std::int64_t" : "std::int32_t"; },
     [](const Arg& arg) -> std::string { return takes_i64(arg) ? "int64_t" : "int32_t"; },
     [](const Arg& arg) {
       return or_list(arg.types) + " integer" +
              (arg.launch_only ? ", launch-only (read by the grid; not passed to the kernel)" : "");
     },
     true, scalar_param},
    {ArgKind::float_scalar, "float", "float_scalar", "type", read_float, read_scalar_specialization, float_type, float_type,
     [](const Arg& arg) { return std::string(dtype_name(arg.types.at(0))) + " scalar"; }, false, scalar_param},
    {ArgKind::bool_scalar, "bool", "bool_scalar", "type", read_bool, read_scalar_specialization,
     [](const Arg&) -> std::string { return "bool"; }, [](const Arg&) -> std::string { return "bool"; },
     [](const Arg&) -> std::string { return "bool"; }, false, scalar_param},
    {ArgKind::tensordesc, "tensordesc", "tensordesc", "dtype", read_tensordesc, read_tensordesc_specialization,
     [](const Arg&) -> std::string { return "const taot::TensorDesc&"; },
     [](const Arg&) -> std::string { return "const taot_tensordesc*"; }, describe_tensordesc, false,
     tensordesc_params},
    {ArgKind::scalar, "scalar", "scalar", "type", read_scalar, read_scalar_form,
     [](const Arg&) -> std::string { return "taot::Scalar"; }, [](const Arg&) -> std::string { return "taot_scalar"; },
     describe_scalar, false, scalar_param, scalar_arg_expression},
    {ArgKind::constexpr_value, "constexpr", "", "", read_constexpr, read_no_specialization, no_type, no_type,
     [](const Arg&) -> std::string { return ""; }, false, no_param},
};

}  // namespace

const ArgKindRules& arg_kind_rules(ArgKind kind) {
  for (const ArgKindRules& rules : kRules)
    if (rules.kind == kind) return rules;
  return kRules[0];
}

const ArgKindRules* arg_kind_by_manifest_name(std::string_view name) {
  for (const ArgKindRules& rules : kRules)
    if (rules.manifest_name == name) return &rules;
  return nullptr;
}

std::string arg_kind_names() {
  std::string text;
  const std::size_t count = std::size(kRules);
  for (std::size_t i = 0; i < count; ++i)
    text += (i == 0 ? "" : i + 1 == count ? " or " : ", ") + std::string(kRules[i].manifest_name);
  return text;
}

}  // namespace taot::codegen::detail
