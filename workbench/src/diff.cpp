// Comparing images and stage files.
#include "taot/workbench/diff.h"

#include <fmt/format.h>

#include "taot/workbench/compare.h"
#include "taot/workbench/op_counts.h"
#include "taot/workbench/text_diff.h"

namespace taot::workbench {

namespace {

namespace fs = std::filesystem;

// The text a diff compares: sass without line info (addresses are dropped with the locations).
Expected<std::string> comparable_text(const ImageView& image, Stage stage, const DiffOptions& options) {
  StageTextOptions text_options = options.text;
  text_options.line_info = false;
  return stage_text(image, stage, text_options);
}

std::string diff_name(const ImageView& image, Stage stage) {
  const std::string file = image.function + "." + std::string(stage_name(stage));
  if (image.variant.empty()) return image.cubin.string() + ":" + file;
  return image.variant + "/" + image.target + "/" + file;
}

void add_stage(ComparisonReport& report, Stage stage, const std::string& a_text, const std::string& b_text,
               const std::string& a_name, const std::string& b_name, bool line_diff, const DiffOptions& options) {
  report.stage = stage;
  report.ops = side_by_side(count_ops(stage, a_text), count_ops(stage, b_text));
  if (!line_diff) return;
  report.diff_asked = true;
  if (options.keep_locations) {
    report.unified_diff = unified_diff(a_text, b_text, a_name, b_name, options.context);
  } else {
    report.unified_diff =
        unified_diff(without_locations(stage, a_text), without_locations(stage, b_text), a_name, b_name, options.context);
  }
}

// Two bare AMD code objects: their first kernels' facts. They hold no stage text to diff.
Expected<ComparisonReport> diff_code_objects(const fs::path& a, const fs::path& b, const DiffOptions& options) {
  if (options.stage)
    return usage_error(fmt::format("--stage {}: a code object holds no stage text (diff the .amdgcn files its "
                                   "library kept, or two variants of the library)",
                                   stage_name(*options.stage)));
  Expected<Inventory> a_object = load_inventory(a);
  if (!a_object.ok()) return std::move(a_object).take_status();
  Expected<Inventory> b_object = load_inventory(b);
  if (!b_object.ok()) return std::move(b_object).take_status();
  ComparisonReport report;
  report.a_label = a.string();
  report.b_label = b.string();
  report.images = compare_images(a_object->images.front(), b_object->images.front());
  return report;
}

}  // namespace

Expected<ComparisonReport> diff_images(const ImageView& a, const ImageView& b, const DiffOptions& options) {
  ComparisonReport report;
  report.a_label = a.label();
  report.b_label = b.label();
  report.images = compare_images(a, b);
  const bool asked = options.stage.has_value();
  const Stage stage = options.stage.value_or(Stage::ttgir);
  if (!asked && (!a.stages.count(stage) || !b.stages.count(stage))) return report;
  Expected<std::string> a_text = comparable_text(a, stage, options);
  if (!a_text.ok()) return std::move(a_text).take_status();
  Expected<std::string> b_text = comparable_text(b, stage, options);
  if (!b_text.ok()) return std::move(b_text).take_status();
  add_stage(report, stage, *a_text, *b_text, diff_name(a, stage), diff_name(b, stage), asked, options);
  return report;
}

Expected<ComparisonReport> diff_files(const fs::path& a, const fs::path& b, const DiffOptions& options) {
  if (a.extension() == ".hsaco" && b.extension() == ".hsaco") return diff_code_objects(a, b, options);
  const std::optional<Stage> a_stage = stage_of_file(a);
  const std::optional<Stage> b_stage = stage_of_file(b);
  for (const auto& [path, stage] : {std::pair{a, a_stage}, std::pair{b, b_stage}})
    if (!stage)
      return usage_error(fmt::format(
          "{}: no stage file (a .ttir, .ttgir, .llir, .ptx or .amdgcn, plain or .gz, or a .cubin; or two .hsaco)",
          path.string()));
  if (*a_stage != *b_stage)
    return usage_error(fmt::format("{} is {} and {} is {}: diff compares two files of one stage", a.string(),
                                   stage_name(*a_stage), b.string(), stage_name(*b_stage)));
  if (options.stage && *options.stage != *a_stage)
    return usage_error(fmt::format("--stage {} does not apply to two {} files", stage_name(*options.stage),
                                   stage_name(*a_stage)));
  ComparisonReport report;
  report.a_label = a.string();
  report.b_label = b.string();
  std::string a_text, b_text;
  if (*a_stage == Stage::sass && a.extension() == ".cubin") {
    Expected<Inventory> a_cubin = load_inventory(a);
    if (!a_cubin.ok()) return std::move(a_cubin).take_status();
    Expected<Inventory> b_cubin = load_inventory(b);
    if (!b_cubin.ok()) return std::move(b_cubin).take_status();
    const ImageView& a_image = a_cubin->images.front();
    const ImageView& b_image = b_cubin->images.front();
    report.images = compare_images(a_image, b_image);
    Expected<std::string> a_sass = comparable_text(a_image, Stage::sass, options);
    if (!a_sass.ok()) return std::move(a_sass).take_status();
    Expected<std::string> b_sass = comparable_text(b_image, Stage::sass, options);
    if (!b_sass.ok()) return std::move(b_sass).take_status();
    a_text = std::move(*a_sass);
    b_text = std::move(*b_sass);
  } else {
    Expected<std::string> a_read = read_text_file(a);
    if (!a_read.ok()) return std::move(a_read).take_status();
    Expected<std::string> b_read = read_text_file(b);
    if (!b_read.ok()) return std::move(b_read).take_status();
    a_text = std::move(*a_read);
    b_text = std::move(*b_read);
  }
  add_stage(report, *a_stage, a_text, b_text, a.string(), b.string(), true, options);
  return report;
}

}  // namespace taot::workbench
