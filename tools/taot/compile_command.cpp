// `taot compile`: hands the spec to the Python front end, the one step that needs Triton.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "commands.h"

extern char** environ;

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
  add_source_pythonpath();

  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), environ);
  if (spawned != 0) {
    fmt::print(stderr, "taot compile: cannot run {} ({}); set TAOT_PYTHON to a Python with triton==3.6.0\n", argv[0],
               std::strerror(spawned));
    return 1;
  }
  int status = 0;
  if (waitpid(child, &status, 0) < 0) {
    fmt::print(stderr, "taot compile: lost the Python front end ({})\n", std::strerror(errno));
    return 1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  fmt::print(stderr, "taot compile: the Python front end was killed by signal {}\n", WTERMSIG(status));
  return 1;
}

}  // namespace taot::tool
