// `taot compile`: hands the spec to the Python front end, the one step that needs Triton.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.h"
#include "process.h"

namespace taot::tool {
namespace {

// The interpreter: $TAOT_PYTHON, else python3 on PATH.
std::string python_interpreter() {
  const char* chosen = std::getenv("TAOT_PYTHON");
  return chosen && *chosen ? chosen : "python3";
}

// Makes the front end importable when taot runs from a source checkout: the checkout's python/
// folder goes first on PYTHONPATH unless TAOT_NO_SOURCE_PYTHONPATH is set.
void add_source_pythonpath() {
  if (std::getenv("TAOT_NO_SOURCE_PYTHONPATH")) return;
  const std::filesystem::path source_python = std::filesystem::path(TAOT_SOURCE_DIR) / "python";
  if (!std::filesystem::exists(source_python / "taot" / "compile.py")) return;
  const char* existing = std::getenv("PYTHONPATH");
  std::string value = source_python.string();
  if (existing && *existing) value += std::string(":") + existing;
  setenv("PYTHONPATH", value.c_str(), 1);
}

}  // namespace

int run_compile(const CompileOptions& options) {
  std::vector<std::string> args = {python_interpreter(), "-m", "taot.compile", options.spec};
  if (!options.output.empty()) args.insert(args.end(), {"-o", options.output});
  if (options.jobs > 0) args.insert(args.end(), {"-j", std::to_string(options.jobs)});
  for (const auto& target : options.targets) args.insert(args.end(), {"--target", target});
  if (options.quiet) args.push_back("--quiet");
  if (options.list_only) args.push_back("--list");
  if (options.max_variants > 0) args.insert(args.end(), {"--max-variants", std::to_string(options.max_variants)});
  if (!options.ir.empty()) args.insert(args.end(), {"--ir", options.ir});
  if (options.no_wait) args.push_back("--no-wait");
  add_source_pythonpath();
  return run_process(args, "taot compile (the Python is $TAOT_PYTHON, else python3)", ChildInterrupts::kDeferred);
}

}  // namespace taot::tool
