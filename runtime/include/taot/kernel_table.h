// The data a generated library hands to the runtime: one KernelTable per kernel, made of plain
// constant aggregates (no constructors, no logic) so that it is constant-initialized; and the list
// of argument kinds with the one switch over it.
// The code generator writes these from manifest.json; the runtime reads them. Field meanings follow
// docs/manifest.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "taot/c_api.h"
#include "taot/image_fields.h"
#include "taot/launch_abi.h"
#include "taot/rule_ops.h"

namespace taot::table {

// What a call argument is, listed once (X(kind)). Constexpr parameters are not call arguments.
// What each kind means to dispatch and launch is in the runtime's src/arg_kinds.h, to the Python
// binding in python/src/calls.h, to the code generator in codegen/src/arg_kinds.cpp.
#define TAOT_ARG_KINDS(X) X(pointer) X(int_scalar) X(float_scalar) X(bool_scalar) X(tensordesc) X(scalar)

enum class ArgKind : std::uint8_t {
#define TAOT_ARG_KIND_ENUMERATOR(kind) kind,
  TAOT_ARG_KINDS(TAOT_ARG_KIND_ENUMERATOR)
#undef TAOT_ARG_KIND_ENUMERATOR
};

// Calls `visitor(std::integral_constant<ArgKind, K>{})` for K = `kind` and returns its result, so
// that code per kind can be written once per kind (a template specialized on the kind) and
// reached through this one switch; inlines to a plain switch.
template <class Visitor>
constexpr decltype(auto) visit_arg_kind(ArgKind kind, Visitor&& visitor) {
  switch (kind) {
#define TAOT_ARG_KIND_CASE(name) \
  case ArgKind::name: return visitor(std::integral_constant<ArgKind, ArgKind::name>{});
    TAOT_ARG_KINDS(TAOT_ARG_KIND_CASE)
#undef TAOT_ARG_KIND_CASE
  }
  return visitor(std::integral_constant<ArgKind, ArgKind::pointer>{});  // not a kind: treated as a pointer
}

// One call argument. `types` lists, for pointers and tensor descriptors, the element dtypes some
// variant accepts (in manifest order); for ints the integer types (TAOT_DTYPE_I32 /
// TAOT_DTYPE_I64); for floats the one float type; for bools TAOT_DTYPE_I1; for `scalar` arguments
// (whose form is chosen at launch) the int types and at most one float type it may take. `output`: the spec says
// the kernel writes through this pointer or descriptor (torch custom ops declare such arguments as
// mutated). `rank`: for pointers the number of dimensions an array given from Python must have
// (0: any; raw pointers carry no rank), for descriptors their rank (1 to 5). `blocks`: for
// descriptors, the `block_count` distinct block shapes the variants compiled, `rank` dims each,
// outermost first; null otherwise. `none`: for pointers and `scalar` arguments, some variants were
// compiled with the argument None; a null pointer (a None scalar) selects exactly those. `launch_only`: for ints, a call argument the
// kernel does not take (never in a variant's params), for the grid to read.
struct Arg {
  const char* name;
  ArgKind kind;
  const taot_dtype* types;
  std::uint16_t type_count;
  bool output;
  std::uint8_t rank;
  const std::uint32_t* blocks;
  std::uint16_t block_count;
  bool none;
  bool launch_only;
};

enum class FieldKind : std::uint8_t { int_value, float_value, bool_value, dtype_value, string_value };

// One config field (a constexpr parameter or a compile option). Int, bool and dtype values live in
// `int_values` (dtypes as taot_dtype), float values in `float_values`, string values in
// `string_values`; the others are null. `required`: a launch that is not given a variant must give
// this field (a constexpr the function has no default for, as Triton's JIT requires it); the
// default is never taken for it.
struct ConfigField {
  const char* name;
  FieldKind kind;
  const std::int64_t* int_values;
  const double* float_values;
  std::uint16_t value_count;
  std::uint16_t default_index;
  const char* const* string_values;
  bool required;
};

// How a variant was specialized for one call argument.
//  pointer: `type` is the element dtype; `hint` 16 = compiled for 16-byte alignment, 0 = any.
//  int:     `type` is TAOT_DTYPE_I32 or TAOT_DTYPE_I64; `hint` 1 = ==1, 16 = %16==0, 0 = none.
//  float / bool: `type` is the scalar type; `hint` is 0.
//  scalar: `type` is the int or float type compiled (its `hint` as for ints), or `none`.
//  tensordesc: `type` is the element dtype; `block` the index of the variant's block shape in the
//  argument's `blocks`.
// `none`: a pointer or scalar compiled None (its argument has `none`); such a variant takes only None.
struct ArgSpecialization {
  taot_dtype type;
  std::uint8_t hint;
  std::uint16_t block;
  bool none;
};

// How to encode the TMA map of one descriptor argument in an sm_90+ image (Triton's
// tensordesc_meta): `swizzle` is a CUtensorMapSwizzle value, `elem_type` Triton's device-side data
// type number (the runtime maps it to CUtensorMapDataType), `box` the box dims, outermost first
// (may be smaller than the argument's block), `fp4_padded` doubles the innermost dim.
struct TensordescMeta {
  std::uint8_t swizzle;
  std::uint8_t elem_size;
  std::uint8_t elem_type;
  bool fp4_padded;
  std::uint32_t box[TAOT_TENSORDESC_MAX_RANK];
};

enum class GridOp : std::uint8_t { literal, arg, add, sub, mul, div, mod, cdiv, min, max, neg, num_sms };

// One instruction of a postfix grid program: `literal` pushes `value`, `arg` pushes call argument
// number `arg` (an int scalar), `num_sms` the launching device's multiprocessor count; the others
// pop their operands and push the result.
struct GridInstr {
  GridOp op;
  std::uint16_t arg;
  std::int64_t value;
};

struct GridProgram {
  const GridInstr* code;
  std::uint16_t length;
};

// Whose GPU an image runs on, and so which driver loads it (docs/runtime.md, "Two drivers"): an
// NVIDIA image is a cubin chosen by compute capability, an AMD image an .hsaco code object chosen
// by the device's gfx name (its `target`, "gfx942"; its `arch` is 0).
enum class Vendor : std::uint8_t { nvidia, amd };

// "nvidia", "amd": the manifest's name of a vendor.
constexpr const char* vendor_name(Vendor vendor) noexcept { return vendor == Vendor::amd ? "amd" : "nvidia"; }

// A member's type as written in a list of members: FieldType<std::uint32_t[3]> x declares an array.
template <class T>
using FieldType = T;

// One compiled binary of a variant for one target: the members of taot/image_fields.h's list, in
// its order (their meanings are there). Notes on some:
//  vendor: nvidia or amd; manifests written before it was recorded mean nvidia.
//  warp_size: threads per warp (32 on NVIDIA, 64 on gfx942/gfx950): a block is num_warps of them.
//  cubin: ELF bytes, `cubin_size` long (a cubin, or an AMD image's .hsaco code object).
//  global_scratch_size, profile_scratch_size: bytes per program (times num_ctas).
//  tensordescs: one entry per descriptor argument, in order, when the image takes TMA maps (sm_90+);
//   else null and 0: descriptors are passed as pointer, shapes and strides (Triton's decomposition).
//  tensordesc_layout: the parameters a descriptor expands to, by the Triton release that compiled it.
//  registers, spill_stores, spill_loads, stack_bytes: what ptxas reported, per thread (registers 0
//   when not recorded).
//  triton_version ("3.9.0"), ptxas_version ("12.8.93", for the driver it needs: taot/toolchain.h):
//   null when not recorded.
//  override_stage ("ttgir", ...), override_sha256 (hex): the stage `taot from-ir` rebuilt it from and
//   that file's SHA-256; both null for an image as compiled.
struct Image {
#define TAOT_IMAGE_MEMBER(field, type, manifest_key, info, python, compare) FieldType<type> field;
  TAOT_IMAGE_FIELDS(TAOT_IMAGE_MEMBER)
#undef TAOT_IMAGE_MEMBER
};

// How many members Image has: generated tables check that they were written for this list.
inline constexpr std::size_t kImageFieldCount = 0
#define TAOT_IMAGE_FIELD_COUNT(field, type, manifest_key, info, python, compare) +1
    TAOT_IMAGE_FIELDS(TAOT_IMAGE_FIELD_COUNT);
#undef TAOT_IMAGE_FIELD_COUNT

// One variant: a specialization plus a config, with an image for each of the kernel's targets it
// was compiled for (in the kernel's target order).
// `specialization` has one entry per call argument; `config` one value index per config field;
// `params` lists the call arguments passed to the kernel, in order (constexprs and ==1 ints are
// compiled in); the runtime expands each descriptor into the parameters the image takes and
// appends the scratch pointers every Triton kernel takes (taot/launch_abi.h).
struct Variant {
  const char* id;
  const ArgSpecialization* specialization;
  const std::uint16_t* config;
  const std::uint16_t* params;
  std::uint16_t param_count;
  GridProgram grid[3];
  const Image* images;
  std::uint16_t image_count;
};

// Launch-time rules (docs/manifest.md, "Rule programs"): postfix programs over ints (int64) and
// floats (double); bools are the ints 0 and 1.
enum class RuleOp : std::uint8_t {
#define TAOT_RULE_OP_ENUMERATOR(op, name, operands) op,
  TAOT_RULE_OPS(TAOT_RULE_OP_ENUMERATOR)
#undef TAOT_RULE_OP_ENUMERATOR
};

// One instruction. `operand`: for arg and isnone the call argument's index, for field the config
// field's index, for jz, jnz and jmp the instruction to continue at (up to the program's length).
// `integer`: lit's value; `real`: flit's value.
struct RuleInstr {
  RuleOp op;
  std::uint16_t operand;
  std::int64_t integer;
  double real;
};

// A rule as written ("n_cols <= BLOCK_SIZE") and compiled; the program leaves one value.
struct RuleProgram {
  const char* text;
  const RuleInstr* code;
  std::uint16_t length;
};

// A heuristic: config field `field` takes the value of `rule`, computed at launch.
struct Heuristic {
  std::uint16_t field;
  RuleProgram rule;
};

// How a tuned table maps a key it has no entry for: to the nearest entry (vLLM: smallest
// absolute difference, the smaller key on a tie), or to the largest entry not above it
// (aotriton's binning; keys below the first entry take the first).
enum class TuningMatch : std::uint8_t { nearest, floor };

// A config field a tuned entry leaves to the later steps (heuristics, then the default).
inline constexpr std::uint16_t kUnsetValue = 0xFFFF;

// A tuned table for one device: `entry_count` entries, each a key (one value per tuning-key
// argument) and a config (one value index per config field, or kUnsetValue). Entries are sorted
// by key, lexicographically, with no key twice.
struct TunedTable {
  const char* device;  // as the driver names it ("NVIDIA H100 80GB HBM3"); "" for any device
  const char* source;  // the file it was read from, for messages
  TuningMatch match;
  std::uint32_t entry_count;
  const std::int64_t* keys;      // entry_count x tuning_key_count
  const std::uint16_t* configs;  // entry_count x field_count
};

// One part of a tuning key: call argument `index` (an int scalar) when `field` is false, else
// config field `index` (an int or bool field, as `@triton.autotune(key=[...])` may name a
// constexpr): its value is the one the caller gives, and a call that leaves it to the runtime has
// no key, so the tuned tables are passed over.
struct TuningKeyPart {
  std::uint16_t index;
  bool field;
};

// First-call autotuning (docs/runtime.md, "Autotuning at first call"): when a launch leaves the
// config to the runtime and no tuned table covers its device, the runtime times the compiled
// configs that take the call's arguments, per value of the tuning key, and keeps the fastest.
// `fields`: the config fields the kernel's config list sets (the ones timed; the others come from
// the caller, the heuristics or the default). `reset_to_zero`, `restore_value`: call arguments
// (pointers) whose memory the timed runs may change, restored before every timed run and before
// the call's own launch. `at_first_call`: on unless switched off (the configs came from
// @triton.autotune, as Triton's JIT tunes them); else off unless switched on.
struct Autotune {
  bool at_first_call;
  const std::uint16_t* fields;
  std::uint16_t field_count;
  const std::uint16_t* reset_to_zero;
  std::uint16_t reset_count;
  const std::uint16_t* restore_value;
  std::uint16_t restore_count;
};

struct KernelTable {
  const char* library;
  const char* name;
  const char* grid_text[3];  // null for a kernel with no grid of its own (every launch gives one)
  const Arg* args;
  std::uint16_t arg_count;
  const ConfigField* fields;
  std::uint16_t field_count;
  const Variant* variants;
  std::uint32_t variant_count;
  const char* const* targets;  // the kernel's targets, as in the spec ("sm_80"), for messages
  std::uint16_t target_count;
  // The arguments and config fields whose values key tuned tables, in order; may be empty.
  const TuningKeyPart* tuning_key;
  std::uint16_t tuning_key_count;
  // Heuristics in declaration order: later ones read earlier ones' results through `field`.
  const Heuristic* heuristics;
  std::uint16_t heuristic_count;
  // Rules every automatically selected variant satisfies (`field` reads the variant's config).
  const RuleProgram* requirements;
  std::uint16_t requirement_count;
  // Tuned tables baked into the library (at most one per device name).
  const TunedTable* tuned;
  std::uint16_t tuned_count;
  // The function's parameters in order, constexprs among them (by name: an argument's or a config
  // field's, or a constexpr compiled in at its function default), for callers that pass
  // constexprs by position as Triton's JIT takes them; null when not recorded.
  const char* const* parameters;
  std::uint16_t parameter_count;
  // How the runtime tunes the kernel at a key's first call; null: it does not (no tuning key, or
  // fewer than two configs).
  const Autotune* autotune;
};

}  // namespace taot::table
