// What a workbench command looks at: a built library (its folder), its manifest.json, a bare cubin or
// a bare AMD code object (.hsaco), loaded into a list of images (one per variant and target; for a
// bare file, one per kernel in it) with their facts: config, launch metadata, ptxas' report, the
// cubin's resource usage or the code object's metadata, the IR files and the kernel's source. And choosing images by kernel, config field, target and variant, with errors
// that name what exists.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "taot/codegen/amdgpu_code_object.h"
#include "taot/codegen/cubin.h"
#include "taot/codegen/manifest.h"
#include "taot/workbench/errors.h"
#include "taot/workbench/stages.h"

namespace taot::workbench {

// An argument's specialization or another fact, as text ("fp32 align 16", "i32 %16").
struct NamedValue {
  std::string name;
  std::string value;
  bool operator==(const NamedValue&) const = default;
};

// One config field's value in a variant, and as text ("1024", "bf16", "true").
struct ConfigSetting {
  std::string name;
  codegen::ConfigValue value;
  std::string text;
};

// One compiled binary: a variant's image for one target, or a kernel of a bare cubin or code object.
struct ImageView {
  std::string kernel;    // the kernel's name (a bare file: the function's)
  std::string function;  // the entry function in the image file
  std::string variant;   // the variant id; empty for a bare file
  std::string target;    // "sm_90" as the spec named it; a bare file: from its ELF ("sm_90a", "gfx942")
  std::vector<ConfigSetting> config;       // config fields in the kernel's order; empty for a bare file
  std::vector<NamedValue> specialization;  // per call argument: "fp32 align 16", "i32 %16", "None"
  // The manifest's entry (launch metadata, ptxas' report, override, artifacts); absent for a bare file.
  std::optional<codegen::Image> manifest_image;
  std::filesystem::path cubin;                    // the image file (a cubin or a .hsaco), resolved
  std::map<Stage, std::filesystem::path> stages;  // the IR files kept (resolved); sass is the cubin
  std::filesystem::path source;                   // the kernel's .py as the manifest names it; may be empty
  // From the cubin's ELF, when read: the entry function's resource usage and the cubin's facts.
  std::optional<codegen::FunctionResources> resources;
  std::uint32_t reserved_shared = 0;
  // From an AMD code object's metadata note, when read: the kernel's registers, spills, LDS and
  // scratch. An image has `resources` or `amdgpu`, by its file's e_machine, never both.
  std::optional<codegen::AmdgpuKernel> amdgpu;
  // Why the image file could not be read or does not match the manifest's SHA-256; empty when fine.
  std::string cubin_problem;

  // An AMD image: its facts are `amdgpu`'s. By the file's e_machine when it was read, else by the
  // target's name (gfx942) or the file's (.hsaco).
  bool amd() const;
  // table::Vendor::amd for an AMD image (amd()), else nvidia: which stages it can have.
  table::Vendor vendor() const { return amd() ? table::Vendor::amd : table::Vendor::nvidia; }

  // "kernel / variant / target" (or the bare file's path and function), for messages.
  std::string label() const;
};

// A kernel's config fields and their values as text, and its targets, for choosing images.
struct KernelFacts {
  std::string name;
  std::vector<std::string> targets;
  std::vector<std::pair<std::string, std::vector<std::string>>> fields;  // field -> values, manifest order
};

struct Inventory {
  enum class Origin { library, manifest, cubin, code_object };  // code_object: a bare AMD .hsaco
  Origin origin = Origin::library;
  std::filesystem::path path;  // the manifest.json, the cubin or the code object
  std::string library;         // empty for a bare file
  std::vector<std::string> targets;
  std::vector<KernelFacts> kernels;
  std::vector<ImageView> images;  // kernel order, then variant order, then target order

  // A bare cubin or code object: no manifest, no variants.
  bool bare() const noexcept { return origin == Origin::cubin || origin == Origin::code_object; }
};

struct LoadOptions {
  // Read every image's file (a cubin's resource usage or a code object's metadata, checked against
  // the manifest's SHA-256). Without it, images have no `resources` nor `amdgpu`, and inspect shows
  // ptxas' report alone.
  bool read_cubins = true;
};

// Loads `target`: a folder holding manifest.json, a manifest file, a `.cubin` or an AMD `.hsaco` (or
// any ELF: by its e_machine, EM_AMDGPU a code object, else a cubin). Fails naming the path when it
// is none of these, the manifest is invalid (the reader's message) or the bare file cannot be
// parsed; a library's image file that cannot be read is no failure but the image's `cubin_problem`.
// Thread-safe; reads files only.
Expected<Inventory> load_inventory(const std::filesystem::path& target, const LoadOptions& options = {});

// Which images to show. Empty lists choose everything.
struct ImageFilter {
  std::vector<std::string> kernels{};                        // kernel names
  std::vector<std::pair<std::string, std::string>> where{};   // FIELD=VALUE, all must hold
  std::vector<std::string> targets{};                         // "sm_90"
  std::vector<std::string> variants{};                        // ids, or parts of exactly one id (below)
};

// Parses "FIELD=VALUE"; fails naming the text when there is no '=' or either side is empty.
Expected<std::pair<std::string, std::string>> parse_where(std::string_view text);

// A variant is named by its id or by a run of whole '_'-separated parts of exactly one id:
// "BS256_w4" names "add_kernel_fp32a16_BS256_w4" when no other id has those parts; "BS2" names none.
//
// The images `filter` chooses, in inventory order. Fails naming the unknown kernel, field, value,
// target or variant together with what the inventory has (a value: the field's values; a variant
// text that matches several ids: some of them). A filter that is valid but leaves nothing is no
// error: the result is empty.
Expected<std::vector<const ImageView*>> select_images(const Inventory& inventory, const ImageFilter& filter);

// The one image `variant` (an id or parts of one) names in `inventory`, on `target` when given,
// else on the variant's first target. Fails naming the variant or the target and what exists.
Expected<const ImageView*> find_image(const Inventory& inventory, std::string_view variant,
                                      std::string_view target = {});

// A config value as text: ints in decimal, floats as their shortest text, bools true/false, dtypes
// by name, strings as they are.
std::string config_value_text(const codegen::ConfigValue& value);

}  // namespace taot::workbench
