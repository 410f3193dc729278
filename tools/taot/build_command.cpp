// `taot build`: compile the spec, then generate the library sources into the same folder, holding
// the folder's lock throughout.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "commands.h"
#include "output_lock.h"
#include "process.h"

namespace taot::tool {

namespace {

// Configures and builds the generated folder with CMake into <folder>/build. From a source
// checkout the runtime is built from it (TAOT_SOURCE_DIR); otherwise CMake finds an installed taot.
int build_library(const std::filesystem::path& folder, bool quiet) {
  const std::filesystem::path build = folder / "build";
  std::vector<std::string> configure = {"cmake", "-S", folder.string(), "-B", build.string(),
                                        "-DCMAKE_BUILD_TYPE=Release"};
  if (std::filesystem::exists(std::filesystem::path(TAOT_SOURCE_DIR) / "runtime" / "CMakeLists.txt"))
    configure.push_back(std::string("-DTAOT_SOURCE_DIR=") + TAOT_SOURCE_DIR);
  if (quiet) configure.push_back("--log-level=ERROR");
  if (const int code = run_process(configure, "taot build"); code != 0) return code;
  return run_process({"cmake", "--build", build.string()}, "taot build");
}

}  // namespace

int run_build(const CompileOptions& options) {
  // One lock over compile, gen and the CMake build; the compile is told it holds it already.
  Expected<OutputLock> lock = OutputLock::acquire(options.output, !options.no_wait, options.quiet);
  if (!lock.ok()) {
    fmt::print(stderr, "taot build: {}\n", lock.status().message());
    return 1;
  }
  setenv(kHeldLockVariable, lock->path().c_str(), 1);
  const int steps = options.build_library ? 3 : 2;
  if (!options.quiet) fmt::print(stderr, "[1/{}] taot compile {} -> {}\n", steps, options.spec, options.output);
  if (const int code = run_compile(options); code != 0) return code;
  GenOptions gen;
  gen.manifest = (std::filesystem::path(options.output) / "manifest.json").string();
  gen.output = options.output;
  gen.quiet = options.quiet;
  gen.python = options.python;
  if (!options.quiet) fmt::print(stderr, "[2/{}] taot gen {} -> {}\n", steps, gen.manifest, gen.output);
  if (const int code = run_gen(gen); code != 0 || !options.build_library) return code;
  if (!options.quiet) fmt::print(stderr, "[3/3] cmake build {}/build\n", options.output);
  return build_library(options.output, options.quiet);
}

}  // namespace taot::tool
