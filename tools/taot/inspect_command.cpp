// `taot inspect`: the images of a library (or manifest, or bare cubin or AMD code object) with their
// resource usage and launch facts, as a table or JSON; or one image's stage text with the kernel's
// source lines.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "taot/workbench/inventory.h"
#include "taot/workbench/op_counts.h"
#include "taot/workbench/report.h"
#include "taot/workbench/source_map.h"
#include "taot/workbench/stage_text.h"

namespace taot::tool {

namespace {

namespace wb = taot::workbench;

struct InspectOptions {
  std::string target;
  std::vector<std::string> kernels;
  std::vector<std::string> where;
  std::vector<std::string> targets;
  std::vector<std::string> variants;
  std::string stage;
  bool json = false;
  bool no_source = false;
  bool ops = false;
};

int fail(const Status& status) { return report_error(status.message()); }

// The one image --stage shows.
Expected<const wb::ImageView*> only_image(const std::vector<const wb::ImageView*>& images, std::size_t total) {
  if (images.size() == 1) return images.front();
  if (images.empty()) return wb::usage_error(fmt::format("no image matches the filters (of {} images)", total));
  const wb::ImageView& first = *images.front();
  // The filter that tells the matches apart: --target when they are one variant's images (the
  // variant is then given already), else --variant (or --kernel for bare cubins).
  const bool one_variant = std::all_of(images.begin(), images.end(), [&](const wb::ImageView* image) {
    return image->kernel == first.kernel && image->variant == first.variant;
  });
  const std::string hint = one_variant ? "--target " + first.target
                                       : (first.variant.empty() ? "--kernel " + first.kernel : "--variant " + first.variant);
  return wb::usage_error(fmt::format("--stage shows one image, and {} of {} match: choose one with --variant "
                                     "(an id or parts of one), --kernel, --where or --target (e.g. {})",
                                     images.size(), total, hint));
}

int show_stage(const wb::ImageView& image, wb::Stage stage, const InspectOptions& options) {
  wb::StageTextOptions text_options;
  text_options.line_info = !options.no_source && !options.ops;
  Expected<std::string> text = wb::stage_text(image, stage, text_options);
  if (!text.ok()) return fail(text.status());
  if (options.ops && !options.json) {
    fmt::print("{}", wb::op_counts_text(wb::count_ops(stage, *text)));
    return 0;
  }
  wb::SourceFiles files({image.source});
  const std::string shown = options.no_source || options.ops ? *text : wb::interleave_source(stage, *text, files);
  fmt::print("{}", options.json ? wb::stage_json(image, stage, shown, wb::count_ops(stage, *text)) : shown);
  return 0;
}

// A command line whose options do not fit together (exit 2, as CLI11's own usage errors).
int usage(const std::string& message) { return report_usage_error("inspect", message); }

int run_inspect(const InspectOptions& options) {
  if (options.stage.empty() && (options.ops || options.no_source))
    return usage(fmt::format("{} works on one stage's text: add --stage ({})", options.ops ? "--ops" : "--no-source",
                             wb::stage_names()));
  std::optional<wb::Stage> stage;
  if (!options.stage.empty()) {
    stage = wb::stage_from_name(options.stage);
    if (!stage) return fail(wb::usage_error(fmt::format("no stage '{}' (stages: {})", options.stage, wb::stage_names())));
  }
  wb::LoadOptions load_options;
  load_options.read_cubins = !stage;
  Expected<wb::Inventory> inventory = wb::load_inventory(options.target, load_options);
  if (!inventory.ok()) return fail(inventory.status());
  wb::ImageFilter filter;
  filter.kernels = options.kernels;
  filter.targets = options.targets;
  filter.variants = options.variants;
  for (const std::string& condition : options.where) {
    auto parsed = wb::parse_where(condition);
    if (!parsed.ok()) return usage(parsed.status().message());
    filter.where.push_back(*parsed);
  }
  Expected<std::vector<const wb::ImageView*>> images = wb::select_images(*inventory, filter);
  if (!images.ok()) return fail(images.status());
  if (stage) {
    Expected<const wb::ImageView*> image = only_image(*images, inventory->images.size());
    if (!image.ok()) return fail(image.status());
    return show_stage(**image, *stage, options);
  }
  fmt::print("{}", options.json ? wb::inspect_json(*inventory, *images) : wb::inspect_table(*inventory, *images));
  return 0;
}

}  // namespace

Runner declare_inspect(CLI::App& command) {
  auto options = std::make_shared<InspectOptions>();
  command.add_option("path", options->target,
                     "A library folder (written by taot build), a manifest.json, a .cubin or an AMD .hsaco")
      ->required();
  command.add_option("-k,--kernel", options->kernels, "Only this kernel (repeatable)");
  command.add_option("-w,--where", options->where, "Only variants whose config field has this value: FIELD=VALUE (repeatable; all must hold)");
  command.add_option("-t,--target", options->targets, "Only images for this target, e.g. sm_90 or gfx942 (repeatable)");
  command.add_option("-v,--variant", options->variants, "Only this variant: its id, or _-separated parts of exactly one id such as BS256_w4 (repeatable)");
  command.add_option("-s,--stage", options->stage,
                     "Print one image's stage with the kernel's source lines: ttir, ttgir, llir, then ptx or sass "
                     "(NVIDIA) or amdgcn (AMD)")
      ->check(CLI::IsMember(wb::stage_name_list()));
  command.add_flag("--no-source", options->no_source, "With --stage: the stage text alone, without source lines");
  command.add_flag("--ops", options->ops, "With --stage: count the stage's operations instead of printing it");
  command.add_flag("--json", options->json, "Print JSON instead of a table");
  return [options] { return run_inspect(*options); };
}

}  // namespace taot::tool
