// `taot gen`: reads manifest.json (and the tuned tables --tuning names) and writes the library
// sources, only the files that changed.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "commands.h"
#include "output_lock.h"
#include "taot/codegen/generator.h"
#include "taot/codegen/manifest.h"
#include "taot/codegen/tuning.h"

namespace taot::tool {

namespace {

struct GenOptions {
  std::string manifest;
  std::string output;
  bool quiet = false;
  bool python = false;              // also generate the Python module (loaded through taot._native)
  std::vector<std::string> tuning;  // tuned-table files to bake in: FILE or KERNEL=FILE
  bool plan = false;                // check a plan (a manifest before its compile) and write nothing
  bool no_wait = false;             // fail, naming the holder, when another command holds the output folder
};

int run_gen(const GenOptions& options) {
  // The folder is locked before anything is read from it: a build writing its manifest there is
  // waited for, not read half-written, nor overwritten afterwards from the manifest it replaced. A
  // folder that does not exist yet holds no input: the inputs are checked first, so that a refusal
  // leaves nothing behind, and the folder is made and locked after.
  std::optional<OutputLock> lock;
  auto take_lock = [&]() -> bool {
    auto acquired = OutputLock::acquire(
        options.output, !options.no_wait,
        [&](std::string_view notice) {
          if (!options.quiet) fmt::print(stderr, "{}\n", notice);
        },
        invocation());
    if (!acquired.ok()) {
      report_error(acquired.status().message());
      return false;
    }
    lock.emplace(std::move(acquired).value());
    return true;
  };
  std::error_code no_folder;
  if (!options.plan && std::filesystem::exists(options.output, no_folder) && !take_lock()) return 1;
  codegen::ReadOptions read_options;
  read_options.plan = options.plan;
  codegen::Expected<codegen::Manifest> manifest = codegen::read_manifest(options.manifest, read_options);
  if (!manifest.ok()) {
    return report_error(manifest.status().message());
  }
  std::vector<codegen::TuningFileArgument> tuning;
  for (const std::string& argument : options.tuning) tuning.push_back(codegen::parse_tuning_argument(argument));
  auto tuning_files = codegen::assign_tuning_files(*manifest, tuning);
  if (!tuning_files.ok()) {
    return report_error(tuning_files.status().message());
  }
  if (options.plan) return 0;
  if (!lock && !take_lock()) return 1;
  codegen::GenerateOptions generate_options;
  generate_options.output_dir = options.output;
  generate_options.python = options.python;
  generate_options.tuning_files = std::move(tuning_files).value();
  codegen::Expected<codegen::GenerateResult> result = codegen::generate(*manifest, generate_options);
  if (!result.ok()) {
    return report_error(result.status().message());
  }
  if (!options.quiet) {
    for (const auto& file : result->files)
      fmt::print(stderr, "  {} {}\n", file.changed ? "wrote    " : "unchanged", file.path.string());
    fmt::print(stderr, "generated {} files ({} changed) in {}\n", result->files.size(), result->changed().size(),
               options.output);
  }
  return 0;
}

}  // namespace

Runner declare_gen(CLI::App& command) {
  auto options = std::make_shared<GenOptions>();
  command.add_option("manifest", options->manifest, "manifest.json written by taot compile")
      ->required()
      ->check(CLI::ExistingFile);
  command.add_option("-o,--output", options->output, "Output folder for the sources");
  command.add_flag("--plan", options->plan,
                   "Check a plan: the manifest taot compile will write, before compiling (variants without "
                   "images); write nothing");
  command.add_flag("-q,--quiet", options->quiet, "Print errors only");
  command.add_flag("--no-wait", options->no_wait,
                   "Fail, naming the holder, when another command holds the output folder (default: wait for it)");
  command.add_flag("--python", options->python, "Also generate the Python module of the library (it loads through taot's binding, taot._native)");
  command.add_option("--tuning", options->tuning,
                     "A tuned table to bake in (repeatable): a taot-format FILE names its kernel; "
                     "KERNEL=FILE binds a vLLM-format file to KERNEL");
  return [options] {
    if (!options->plan && options->output.empty()) {
      return report_usage_error("gen", "--output is required");
    }
    return run_gen(*options);
  };
}

}  // namespace taot::tool
