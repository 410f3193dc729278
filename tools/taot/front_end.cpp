// The commands of the Python front end (those that call Triton): run the front end's command line
// (taot.cli) in a Python interpreter, both found relative to this executable (docs/install.md).
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "commands.h"
#include "process.h"

namespace taot::tool {
namespace {

namespace fs = std::filesystem;

// This executable, symbolic links resolved; empty if /proc cannot say.
fs::path this_executable() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : self;
}

// The folders, relative to this executable, where a copy of the front end (a folder holding the
// package taot/) may lie: the build tree links python/ beside the binary; `cmake --install` puts it
// in <prefix>/share/taot/python. An installed wheel needs neither: its Python imports taot itself.
std::optional<fs::path> front_end_beside(const fs::path& folder) {
  if (folder.empty()) return std::nullopt;
  for (const fs::path& candidate : {folder / "python", folder / ".." / "share" / "taot" / "python"}) {
    std::error_code error;
    if (fs::is_regular_file(candidate / "taot" / "cli.py", error)) return fs::weakly_canonical(candidate, error);
  }
  return std::nullopt;
}

// The interpreter: $TAOT_PYTHON; else the python3 beside this executable (a virtual environment or
// prefix that pip installed taot into); else python3 on PATH. Exported as $TAOT_PYTHON so that
// the workbench's own Python calls (stage_text.cpp) use the same one.
std::string choose_python(const fs::path& folder) {
  if (const char* chosen = std::getenv("TAOT_PYTHON"); chosen && *chosen) return chosen;
  std::string python = "python3";
  if (!folder.empty() && ::access((folder / "python3").c_str(), X_OK) == 0) python = (folder / "python3").string();
  setenv("TAOT_PYTHON", python.c_str(), 1);
  return python;
}

void prepend_pythonpath(const fs::path& folder) {
  const char* existing = std::getenv("PYTHONPATH");
  std::string value = folder.string();
  if (existing && *existing) value += std::string(":") + existing;
  setenv("PYTHONPATH", value.c_str(), 1);
}

// Runs taot.cli.main with sys.argv as the user typed the taot command (argv[1] of the program is
// that argv[0]): what a build names as its lock's holder. A Python that cannot import the front end
// says so and how to fix it, rather than printing "No module named taot".
constexpr const char* kBootstrap = R"(import os, sys
sys.argv = sys.argv[1:]
try:
    from taot.cli import main
except ModuleNotFoundError as error:
    if error.name not in ("taot", "taot.cli"):
        raise
    folder = os.path.dirname(os.environ.get("TAOT_BIN", "taot"))
    sys.exit(f"taot: {sys.executable} cannot import taot's Python front end (the package taot), and none "
             f"lies beside the taot binary ({folder}/python or {folder}/../share/taot/python). "
             "Install taot into that Python (pip install <taot checkout>), or set TAOT_PYTHON to a Python that has it.")
sys.exit(main(sys.argv[1:]))
)";

}  // namespace

int run_front_end(const std::string& invoked_as, const std::string& command, const std::vector<std::string>& arguments) {
  const fs::path self = this_executable();
  const fs::path folder = self.parent_path();
  if (const std::optional<fs::path> front_end = front_end_beside(folder)) prepend_pythonpath(*front_end);
  std::vector<std::string> args = {choose_python(folder), "-c", kBootstrap, invoked_as, command};
  args.insert(args.end(), arguments.begin(), arguments.end());
  // The front end runs `taot gen` through $TAOT_BIN: this very executable.
  if (!self.empty()) setenv("TAOT_BIN", self.c_str(), 1);
  return exec_process(args, "taot " + command + " (the Python is $TAOT_PYTHON, else python3 beside taot or on PATH)");
}

}  // namespace taot::tool
