// `taot diff`: two variants (of one library, or LIB:VARIANT each), two stage files or two AMD code
// objects: config, metadata and resource differences, op counts side by side, a unified diff of a
// stage.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "taot/workbench/diff.h"
#include "taot/workbench/inventory.h"
#include "taot/workbench/report.h"

namespace taot::tool {

namespace {

namespace wb = taot::workbench;
namespace fs = std::filesystem;

struct DiffCommandOptions {
  std::vector<std::string> operands;
  std::string target;
  std::string stage;
  bool json = false;
  bool keep_locations = false;
  std::size_t context = 3;
};

int fail(const Status& status) { return report_error(status.message()); }

// One side: LIB:VARIANT, split at the last ':' whose left part exists.
struct VariantReference {
  fs::path library;
  std::string variant;
};

Expected<VariantReference> parse_reference(const std::string& operand) {
  const std::size_t colon = operand.rfind(':');
  if (colon != std::string::npos && colon > 0 && colon + 1 < operand.size()) {
    std::error_code error;
    const fs::path library = operand.substr(0, colon);
    if (fs::exists(library, error)) return VariantReference{library, operand.substr(colon + 1)};
  }
  std::error_code error;
  if (fs::is_directory(operand, error))
    return wb::usage_error(fmt::format("{} is a library folder: name a variant of it as {}:VARIANT, or give the "
                                       "library then two variants (taot diff LIB VARIANT_A VARIANT_B)",
                                       operand, operand));
  if (fs::exists(operand, error))
    return wb::usage_error(fmt::format("{} is no stage file (.ttir, .ttgir, .llir, .ptx, .amdgcn, .cubin, or .gz of "
                                       "those; or an AMD .hsaco) and names no variant: give two stage files, "
                                       "LIB:VARIANT twice, or LIB VARIANT_A VARIANT_B", operand));
  return wb::usage_error(fmt::format("{} does not exist (give two stage files, LIB:VARIANT twice, or LIB VARIANT_A "
                                     "VARIANT_B)", operand));
}

int print(const Expected<wb::ComparisonReport>& report, bool json) {
  if (!report.ok()) return fail(report.status());
  fmt::print("{}", json ? wb::comparison_json(*report) : wb::comparison_text(*report));
  return 0;
}

int run_diff(const DiffCommandOptions& options) {
  wb::DiffOptions diff_options;
  diff_options.keep_locations = options.keep_locations;
  diff_options.context = options.context;
  if (!options.stage.empty()) {
    diff_options.stage = wb::stage_from_name(options.stage);
    if (!diff_options.stage)
      return fail(wb::usage_error(fmt::format("no stage '{}' (stages: {})", options.stage, wb::stage_names())));
  }
  const std::vector<std::string>& operands = options.operands;
  std::error_code error;
  if (operands.size() == 2 && fs::is_regular_file(operands[0], error) && fs::is_regular_file(operands[1], error) &&
      fs::path(operands[0]).filename() != "manifest.json") {
    return print(wb::diff_files(operands[0], operands[1], diff_options), options.json);
  }
  if (operands.size() == 2)
    for (std::size_t side = 0; side < 2; ++side)
      if (fs::is_regular_file(operands[side], error) && wb::stage_of_file(operands[side]) &&
          !fs::exists(operands[1 - side], error))
        return fail(wb::usage_error(fmt::format("{} does not exist (to diff against {})", operands[1 - side],
                                                operands[side])));
  VariantReference a, b;
  if (operands.size() == 3) {
    a = {operands[0], operands[1]};
    b = {operands[0], operands[2]};
  } else {
    Expected<VariantReference> left = parse_reference(operands[0]);
    if (!left.ok()) return fail(left.status());
    Expected<VariantReference> right = parse_reference(operands[1]);
    if (!right.ok()) return fail(right.status());
    a = *left;
    b = *right;
  }
  wb::LoadOptions load_options;
  Expected<wb::Inventory> a_inventory = wb::load_inventory(a.library, load_options);
  if (!a_inventory.ok()) return fail(a_inventory.status());
  std::optional<wb::Inventory> other;
  if (fs::weakly_canonical(a.library, error) != fs::weakly_canonical(b.library, error)) {
    Expected<wb::Inventory> b_inventory = wb::load_inventory(b.library, load_options);
    if (!b_inventory.ok()) return fail(b_inventory.status());
    other = std::move(*b_inventory);
  }
  const wb::Inventory& b_inventory = other ? *other : *a_inventory;
  Expected<const wb::ImageView*> a_image = wb::find_image(*a_inventory, a.variant, options.target);
  if (!a_image.ok()) return fail(a_image.status());
  // The same target on both sides unless --target chose one.
  Expected<const wb::ImageView*> b_image =
      wb::find_image(b_inventory, b.variant, options.target.empty() ? (*a_image)->target : options.target);
  if (!b_image.ok()) return fail(b_image.status());
  return print(wb::diff_images(**a_image, **b_image, diff_options), options.json);
}

}  // namespace

Runner declare_diff(CLI::App& command) {
  auto options = std::make_shared<DiffCommandOptions>();
  command.add_option("operands", options->operands,
                     "Two stage files (.ttir/.ttgir/.llir/.ptx/.amdgcn, plain or .gz, or .cubin), or two .hsaco; or "
                     "LIB:VARIANT twice; or LIB "
                     "VARIANT_A VARIANT_B (LIB: a library folder or manifest.json; VARIANT: an id, or _-separated parts of one such as BS256_w4)")
      ->required()
      ->expected(2, 3)
      ->type_name("");
  command.footer("Forms:\n"
                 "  taot diff LIB VARIANT_A VARIANT_B      two variants of a library (folder or manifest.json)\n"
                 "  taot diff LIB:VARIANT_A LIB:VARIANT_B  the same, or variants of two libraries\n"
                 "  taot diff FILE_A FILE_B                two .ttir/.ttgir/.llir/.ptx/.amdgcn files (plain or .gz),\n"
                 "                                         two .cubin, or two AMD .hsaco");
  command.add_option("-t,--target", options->target, "The target whose images to compare (default: the first variant's first)");
  command.add_option("-s,--stage", options->stage,
                     "Also diff this stage line by line and count its ops: ttir, ttgir, llir, then ptx or sass "
                     "(NVIDIA) or amdgcn (AMD) (default: op counts of ttgir, no line diff)")
      ->check(CLI::IsMember(wb::stage_name_list()));
  // A count no diff needs more of: -1 (which CLI11 would read as 2^64 - 1) and other huge counts are
  // refused rather than sized into allocations.
  command.add_option("-U,--context", options->context, "Lines of context around each change (0 to 1000000)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1000000}));
  command.add_flag("--keep-locations", options->keep_locations,
                   "Diff the texts as they are (by default source locations and SASS addresses are dropped first)");
  command.add_flag("--json", options->json, "Print JSON instead of text");
  return [options] { return run_diff(*options); };
}

}  // namespace taot::tool
