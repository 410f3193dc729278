// `taot build`: compile the spec, then generate the library sources into the same folder.
#include <filesystem>

#include <fmt/core.h>

#include "commands.h"

namespace taot::tool {

int run_build(const CompileOptions& options) {
  if (!options.quiet) fmt::print(stderr, "[1/2] taot compile {} -> {}\n", options.spec, options.output);
  if (const int code = run_compile(options); code != 0) return code;
  GenOptions gen;
  gen.manifest = (std::filesystem::path(options.output) / "manifest.json").string();
  gen.output = options.output;
  gen.quiet = options.quiet;
  if (!options.quiet) fmt::print(stderr, "[2/2] taot gen {} -> {}\n", gen.manifest, gen.output);
  return run_gen(gen);
}

}  // namespace taot::tool
