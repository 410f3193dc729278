// A typed model of manifest.json (docs/manifest.md, schema "taot.manifest" version 2) and its
// reader. The reader checks everything the generator relies on, so that a Manifest it returns
// always generates code that compiles: every error names the manifest file and the JSON path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "taot/codegen/errors.h"
#include "taot/dtype_list.h"
#include "taot/kernel_table.h"
#include "taot/launch_abi.h"
#include "taot/rule_ops.h"

namespace taot::codegen {

inline constexpr std::string_view kManifestSchema = "taot.manifest";
inline constexpr int kManifestSchemaVersion = 2;

// Element and scalar types by their Triton names (taot/dtype_list.h); the values are the
// runtime's taot_dtype values.
enum class DType : std::uint8_t {
#define TAOT_DTYPE_ENUMERATOR(ENUM, name, value, bytes, dlpack_code, dlpack_bits, typestr, torch_name) name = value,
  TAOT_DTYPES(TAOT_DTYPE_ENUMERATOR)
#undef TAOT_DTYPE_ENUMERATOR
};

// "fp32", "bf16", ...
std::string_view dtype_name(DType dtype) noexcept;
// The dtype of a Triton name, or nothing for a name the runtime does not know.
std::optional<DType> dtype_from_name(std::string_view name) noexcept;
// The C ABI enumerator, e.g. "TAOT_DTYPE_FP32".
std::string_view dtype_enumerator(DType dtype) noexcept;
// The bytes of one element or scalar (1 for i1).
std::size_t dtype_size(DType dtype) noexcept;

enum class ArgKind : std::uint8_t { pointer, int_scalar, float_scalar, bool_scalar, tensordesc, scalar, constexpr_value };

// Tensor descriptors have 1 to 5 dimensions (TMA's limit); block dims are 1 to 256 elements.
inline constexpr std::size_t kMaxTensordescRank = 5;

// One parameter of the @triton.jit function, in order.
struct Arg {
  std::string name;
  ArgKind kind = ArgKind::pointer;
  // pointer, tensordesc: the element dtypes some variant accepts ("dtypes", manifest order); int:
  // i32 and/or i64 ("types"); float: exactly one of fp32, fp64; bool: {i1}; constexpr: empty.
  std::vector<DType> types;
  // pointer, tensordesc: the kernel writes through it ("output", default false).
  bool output = false;
  // pointer: the number of dimensions an array passed from Python must have ("rank", 1 to 8;
  // absent or 0: any). tensordesc: the descriptor's rank (1 to 5), the length of every block.
  std::uint8_t rank = 0;
  // tensordesc: the distinct block shapes the variants compiled ("blocks"), outermost dim first.
  std::vector<std::vector<std::uint32_t>> blocks;
  // pointer: some variants were compiled with this pointer None ("none"); a null pointer selects them.
  bool none = false;
  // int: a call argument the grid (and launch-time rules) read but the kernel does not take
  // ("launch_only"); never in a variant's params. Launch-only arguments follow all others.
  bool launch_only = false;

  // Constexpr parameters are compiled in; every other parameter is a call argument.
  bool is_call_argument() const noexcept { return kind != ArgKind::constexpr_value; }
};

enum class FieldKind : std::uint8_t { int_value, float_value, bool_value, dtype_value, string_value };

// A config value; the alternative matches the field's kind.
using ConfigValue = std::variant<std::int64_t, double, bool, DType, std::string>;

// One config field: a constexpr argument or a compile option (num_warps, ...).
struct ConfigField {
  std::string name;
  FieldKind kind = FieldKind::int_value;
  std::vector<ConfigValue> values;  // every value some variant has, distinct, in manifest order
  std::size_t default_index = 0;    // into `values`
  bool required = false;            // every launch must give it (a constexpr the function has no default for)
};

// How one variant was specialized for one call argument. pointer: `type` is the element dtype,
// `hint` 16 (16-byte aligned) or 0; int: `type` i32/i64, `hint` 1 (==1), 16 (%16==0) or 0;
// float/bool: the scalar type, `hint` 0; tensordesc: `type` the element dtype, `block` the index
// of the variant's block shape in the argument's `blocks`.
// pointer with `none`: compiled with the pointer None (then not among the variant's params).
struct ArgSpecialization {
  DType type = DType::i32;
  std::uint8_t hint = 0;
  std::uint16_t block = 0;
  bool none = false;
};

// Triton's tensordesc_meta entry for one descriptor argument of an sm_90+ image: how its TMA map
// must be encoded. `elem_type` is the device-side (PTX) data type number Triton reports;
// `block_size` the box, which may be smaller than the argument's block (split by swizzle width or
// cluster); `swizzle` a CUtensorMapSwizzle value.
struct TensordescMeta {
  std::uint8_t swizzle = 0;
  std::uint8_t elem_size = 1;
  std::uint8_t elem_type = 0;
  bool fp4_padded = false;
  std::vector<std::uint32_t> block_size;
};

// What ptxas reported compiling an image (`ptxas -v`): registers per thread and bytes of spill
// stores, spill loads and stack frame per thread.
struct PtxasReport {
  std::uint32_t registers = 0;
  std::uint32_t spill_stores = 0;
  std::uint32_t spill_loads = 0;
  std::uint32_t stack = 0;
};

// The launch ABI an image was compiled for ("launch_abi"; taot/launch_abi.h): what its descriptors
// expand to and how many scratch pointers follow the call arguments. Manifests written before it
// was recorded mean Triton 3.5's, which the runtime assumed then.
struct LaunchAbi {
  abi::TensordescLayout tensordesc_layout = abi::TensordescLayout::triton_3_5;
  std::uint32_t scratch_pointers = abi::kScratchPointers;
};

// The C++ enumerator of a layout ("triton_3_7"), and the layout of a manifest name ("3.7"; nothing
// for a name no layout has). abi::tensordesc_layout_name gives the manifest name.
std::string_view tensordesc_layout_enumerator(abi::TensordescLayout layout) noexcept;
std::optional<abi::TensordescLayout> tensordesc_layout_from_name(std::string_view name) noexcept;

// An image rebuilt from an edited IR stage (`taot from-ir`): the stage it was rebuilt from and the
// SHA-256 of that file, which the library and `taot inspect` show and later builds keep.
struct IrOverride {
  std::string stage;   // "ttir", "ttgir", "llir", "ptx" or "cubin"
  std::string sha256;  // 64 lower-case hex digits
  std::string file;    // the edited file as kept, relative to the manifest's folder
};

enum class GridOp : std::uint8_t { literal, arg, add, sub, mul, div, mod, cdiv, min, max, neg, num_sms };

// One instruction of a postfix grid program: `literal` pushes `value`; `arg` pushes call argument
// number `arg` (an index into the kernel's call arguments, always an int argument); `num_sms`
// pushes the launching device's multiprocessor count; the others pop their operands and push the
// result. The reader guarantees every program leaves one value.
struct GridInstr {
  GridOp op = GridOp::literal;
  std::size_t arg = 0;
  std::int64_t value = 0;
};
using GridProgram = std::vector<GridInstr>;

// One compiled binary of a variant for one target: a manifest image entry, whose keys
// taot/image_fields.h lists (the generator writes table::Image's members from these).
struct Image {
  std::string target;  // as in the manifest's "targets"
  std::uint16_t arch = 0;
  bool arch_specific = false;
  // Whose GPU runs it and its threads per warp: "vendor" and "warp_size", absent from manifests
  // written before AMD targets (nvidia, 32). An AMD image's target is its gfx name, its arch 0 and
  // its "cubin" file an .hsaco code object.
  table::Vendor vendor = table::Vendor::nvidia;
  std::uint16_t warp_size = 32;
  std::string dir;            // as written (relative to the manifest's folder)
  std::string cubin;          // as written (relative to the manifest's folder)
  std::filesystem::path cubin_path;  // `cubin` resolved against the manifest's folder
  std::string cubin_sha256;   // 64 lower-case hex digits
  std::string function_name;
  std::uint16_t num_warps = 1;
  std::uint16_t num_ctas = 1;
  std::uint32_t num_stages = 0;
  std::uint32_t shared = 0;
  std::uint64_t global_scratch_size = 0;
  std::uint32_t global_scratch_align = 1;
  std::uint64_t profile_scratch_size = 0;
  std::uint32_t profile_scratch_align = 1;
  bool launch_cooperative_grid = false;
  bool launch_pdl = false;
  std::array<std::uint32_t, 3> cluster_dims = {1, 1, 1};
  std::uint64_t tmem_size = 0;
  std::optional<std::uint32_t> maxnreg;
  // One entry per tensordesc call argument in order on sm_90+ (TMA maps); empty below sm_90, where
  // Triton passes descriptors as pointer, shape and strides.
  std::vector<TensordescMeta> tensordesc_meta;
  std::map<std::string, std::string> artifacts;  // stage ("ttir", "ptx", ...) -> path as written
  std::optional<PtxasReport> ptxas;             // absent when the compile did not record it
  // The Triton version that compiled it ("3.7.1"); empty when the manifest does not say.
  std::string triton_version;
  // The version of the ptxas that assembled it ("12.8.93"); absent when unknown.
  std::optional<std::string> ptxas_version;
  LaunchAbi launch_abi;
  std::optional<IrOverride> override_from;      // absent unless rebuilt from an edited stage
};

// One compiled variant: a specialization plus a config, with an image for each of the kernel's
// targets it was compiled for (1 or more, in the kernel's target order).
struct Variant {
  std::string id;
  std::string hash;
  std::vector<ArgSpecialization> specialization;  // one per call argument, in argument order
  std::vector<std::size_t> config;                // one value index per config field
  std::vector<std::size_t> params;                // call-argument indices of the kernel's parameters
  std::array<GridProgram, 3> grid;
  std::vector<Image> images;
};

// The operations of launch-time rule programs (taot/rule_ops.h; docs/manifest.md, "Rule programs").
enum class RuleOp : std::uint8_t {
#define TAOT_RULE_OP_ENUMERATOR(op, name, operands) op,
  TAOT_RULE_OPS(TAOT_RULE_OP_ENUMERATOR)
#undef TAOT_RULE_OP_ENUMERATOR
};

// One instruction of a rule program. `operand`: for arg and isnone the call argument's index
// (among the call arguments), for field the config field's index, for jz/jnz/jmp the instruction
// to continue at. `integer`: lit's value; `real`: flit's value. The reader guarantees that every
// path through the program leaves one value and jumps go forward.
struct RuleInstr {
  RuleOp op = RuleOp::lit;
  std::size_t operand = 0;
  std::int64_t integer = 0;
  double real = 0.0;
};

// A rule as written and compiled.
struct Rule {
  std::string expression;
  std::vector<RuleInstr> program;
};

// A launch-time rule for a config field ("heuristics"): the field takes the rule's value.
struct Heuristic {
  std::string field;        // a config field of the kernel
  std::size_t field_index = 0;
  Rule rule;
};

// How the runtime tunes a kernel at a key's first call ("autotune"): the config fields timed, and
// the call arguments (pointers) whose memory timed runs restore. Needs a tuning key.
struct Autotune {
  bool at_first_call = false;              // on by default (the configs came from @triton.autotune)
  std::vector<std::size_t> fields;         // indexes into Kernel::config, ascending
  std::vector<std::size_t> reset_to_zero;  // indexes among the call arguments (Kernel::call_arguments)
  std::vector<std::size_t> restore_value;
};

struct Kernel {
  std::string name;      // the C++ function name
  std::string function;  // the @triton.jit function's name
  std::string source;
  std::string source_hash;
  std::vector<std::string> targets;      // a subset of the library's targets, in its order
  std::array<std::string, 3> grid_text;  // as written, for messages and docs
  bool has_grid = true;  // false: no grid of its own ("grid": null); every launch gives one
  std::vector<std::string> parameters;   // the function's parameter names in order; empty when not recorded
  std::vector<std::string> tuning_key;   // names of int call arguments and int or bool config fields; may be empty
  // Tuned-table files to bake in ("tuning"), resolved against the manifest's folder; may be empty.
  std::vector<std::filesystem::path> tuning;
  std::vector<Heuristic> heuristics;     // in declaration order; may be empty
  std::vector<Rule> requirements;        // "requires": rules every automatic choice satisfies
  std::optional<Autotune> autotune;      // absent: the runtime never tunes it at first call
  std::vector<Arg> args;                 // every parameter, constexprs included
  std::vector<ConfigField> config;
  std::vector<Variant> variants;

  // Indices into `args` of the call arguments (the non-constexpr ones), in order.
  std::vector<std::size_t> call_arguments() const;
};

struct Manifest {
  std::filesystem::path path;       // as given to the reader
  std::filesystem::path directory;  // the folder relative paths inside it start from
  int schema_version = kManifestSchemaVersion;
  std::string triton_version;
  std::string library;
  std::string spec;
  std::vector<std::string> targets;
  std::vector<Kernel> kernels;
};

struct ReadOptions {
  // Check that every image's cubin exists and its SHA-256 equals cubin_sha256.
  bool verify_cubins = true;
  // A plan: the manifest a compile will write, written before it with no images yet (variants'
  // "images" may be empty). Everything else is checked as in a manifest, so that `taot compile`
  // finds what `taot gen` would refuse before compiling anything.
  bool plan = false;
};

// Reads and checks the manifest at `path`. Fails, naming the file and the JSON path (e.g.
// "kernels[0].variants[3].images[1].shared: expected an unsigned integer, got -1"), on: a wrong
// schema or unknown schema_version (naming both), a missing or mistyped field, an unknown dtype,
// a name that is no valid C/C++ identifier or clashes with another generated name, params or grid
// naming something that is not a (for grids: int) call argument, a count above what the
// runtime's tables hold (65535), and, with verify_cubins, a cubin that is missing, truncated or
// corrupted. Thread-safe; reads only the manifest and the cubins.
Expected<Manifest> read_manifest(const std::filesystem::path& path, const ReadOptions& options = {});

// The same for manifest text already in memory; `path` is where it came from (relative paths
// start at its folder; messages name it).
Expected<Manifest> parse_manifest(std::string_view json_text, const std::filesystem::path& path,
                                  const ReadOptions& options = {});

}  // namespace taot::codegen
