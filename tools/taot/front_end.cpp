// The commands of the Python front end (those that call Triton): run `python3 -m taot COMMAND ...`.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
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
  if (!std::filesystem::exists(source_python / "taot" / "cli.py")) return;
  const char* existing = std::getenv("PYTHONPATH");
  std::string value = source_python.string();
  if (existing && *existing) value += std::string(":") + existing;
  setenv("PYTHONPATH", value.c_str(), 1);
}

// The front end runs `taot gen` through $TAOT_BIN: this very executable.
void export_this_binary() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) setenv("TAOT_BIN", self.c_str(), 1);
}

}  // namespace

int run_front_end(const std::string& command, const std::vector<std::string>& arguments) {
  std::vector<std::string> args = {python_interpreter(), "-m", "taot", command};
  args.insert(args.end(), arguments.begin(), arguments.end());
  add_source_pythonpath();
  export_this_binary();
  return exec_process(args, "taot " + command + " (the Python is $TAOT_PYTHON, else python3)");
}

}  // namespace taot::tool
