// The taot subcommands, one table (commands.cpp). A command implemented in C++ declares its options
// on its CLI11 subcommand and returns what runs it; a command of the Python front end (one that
// needs Triton) is forwarded with its arguments verbatim, its options declared only there
// (python/taot/cli.py is that side's table).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace taot::tool {

// Runs a parsed command; returns the process exit code.
using Runner = std::function<int()>;

// The convention every command keeps (docs/workbench.md, "Every command"; the Python front end's is
// written in python/taot/cli.py): an error is one "error: ..." line on stderr, exit 1; a usage error
// "taot COMMAND: error: ...", exit 2 (as the parsers' own); `--json` is a flag that prints one
// document whose schema comes first (workbench::json_document in taot/workbench/report.h); `-q`
// silences the progress on stderr. Each returns the exit code.
int report_error(std::string_view message);
// Also says where the command's options are listed.
int report_usage_error(std::string_view command, std::string_view message);

// This process's command line as typed (shell-quoted where needed), for what a lock's holder line
// says is running; main() records it before parsing.
void record_invocation(int argc, char** argv);
const std::string& invocation();

struct Command {
  const char* name;
  const char* summary;  // one line, for `taot --help`
  // Declares the command's options on `command` and returns its runner; null for a command of the
  // Python front end.
  Runner (*declare)(CLI::App& command);
};

// Every command, in the order `taot --help` lists them.
std::span<const Command> commands();

// Becomes the front end's `taot <command> <arguments...>` in Python (exec; the interpreter and the
// front end found relative to this executable, docs/install.md); `invoked_as` is this process's
// argv[0], for the front end's sys.argv. Returns 1 only when Python cannot be started. The front
// end finds the C++ `taot` (for `gen`) through $TAOT_BIN, set here to this executable.
int run_front_end(const std::string& invoked_as, const std::string& command, const std::vector<std::string>& arguments);

// The C++ commands' declarations (one file each).
Runner declare_gen(CLI::App& command);
Runner declare_inspect(CLI::App& command);
Runner declare_diff(CLI::App& command);

}  // namespace taot::tool
