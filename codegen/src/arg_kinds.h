// What each kind of argument (ArgKind) means to the code generator, in one place: its name in the
// manifest, how its entry in "args" and its variants' "specialization" entries are read and
// checked, its C++ and C parameter types, its runtime table enumerator, its description in
// generated comments and the kernel parameters the runtime passes for it (checked against cubins). Adding a kind is one entry in arg_kinds.cpp (and its enumerator in
// manifest.h and the runtime's kernel_table.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "json_reader.h"
#include "taot/codegen/manifest.h"

namespace taot::codegen::detail {

struct ArgKindRules {
  ArgKind kind;
  std::string_view manifest_name;     // "pointer", as "kind" says in the manifest
  std::string_view table_enumerator;  // taot::table::ArgKind::<this>; empty for constexprs
  std::string_view type_key;          // the key of a specialization's type: "dtype" or "type"
  // Reads the kind's own fields of an "args" entry (`object`, at `path`) into `arg`.
  void (*read_arg)(Reader& reader, const json& object, const std::string& path, Arg& arg);
  // Reads a variant's "specialization" entry for `arg` (its "arg" name already checked) into `spec`;
  // the caller then checks that the type is among the argument's.
  void (*read_specialization)(Reader& reader, const Arg& arg, const json& entry, const std::string& path,
                              ArgSpecialization& spec);
  std::string (*cpp_type)(const Arg& arg);     // the generated C++ wrappers' parameter type
  std::string (*c_type)(const Arg& arg);       // the generated C entry points' parameter type
  std::string (*description)(const Arg& arg);  // for generated comments: "pointer to fp32 or fp16"
  bool grid_operand;                           // a grid program may read it ("arg" op)
  // Appends the bytes of each kernel parameter the runtime passes for a value of `arg`, compiled as
  // `spec`, to an image compiled for `launch_abi` with (`with_map`) or without TMA maps: one for
  // values passed in place, a descriptor's per taot/launch_abi.h, none for constexprs.
  void (*param_sizes)(const Arg& arg, const ArgSpecialization& spec, const LaunchAbi& launch_abi, bool with_map,
                      std::vector<std::uint32_t>& sizes);
  // The expression that makes the runtime's taot_arg of a wrapper parameter `value` (C++ or C);
  // null: taot::arg(value).
  std::string (*arg_expression)(const Arg& arg, const std::string& value) = nullptr;
};

// The rules of `kind`.
const ArgKindRules& arg_kind_rules(ArgKind kind);
// The rules of the kind the manifest calls `name`, or null.
const ArgKindRules* arg_kind_by_manifest_name(std::string_view name);
// "pointer, int, float, bool, tensordesc or constexpr", for messages.
std::string arg_kind_names();

}  // namespace taot::codegen::detail
