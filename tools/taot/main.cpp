// taot: the Triton ahead-of-time toolkit's command line. Walks the command table (commands.cpp):
// parses the C++ commands' options, forwards the front end's commands, runs one command.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <string>
#include <string_view>
#include <vector>

#include "commands.h"

namespace {

// `taot NAME ...` where NAME is no command: named, with the commands there are.
bool is_unknown_command(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::string names;
  for (const taot::tool::Command& command : taot::tool::commands()) {
    if (std::string_view(argv[1]) == command.name) return false;
    names += names.empty() ? command.name : std::string(", ") + command.name;
  }
  fmt::print(stderr, "taot: unknown command '{}' (the commands: {}; `taot --help` says what each does)\n", argv[1],
             names);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  taot::tool::record_invocation(argc, argv);
  CLI::App app{"taot: Triton kernels to self-contained C++ libraries, and the workbench of their authors"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "taot " TAOT_VERSION);
  app.footer("Run `taot COMMAND --help` for a command's options.");

  taot::tool::Runner chosen;
  for (const taot::tool::Command& command : taot::tool::commands()) {
    CLI::App* subcommand = app.add_subcommand(command.name, command.summary);
    if (command.declare != nullptr) {
      subcommand->callback([runner = command.declare(*subcommand), &chosen] { chosen = runner; });
      continue;
    }
    // Listed for `taot --help`; handed over to the front end before parsing (above).
    subcommand->prefix_command();
  }
  if (is_unknown_command(argc, argv)) return 2;
  // A front-end command gets everything after its name untouched (`--`, `--help` and all).
  for (const taot::tool::Command& command : taot::tool::commands())
    if (command.declare == nullptr && argc >= 2 && std::string_view(argv[1]) == command.name)
      return taot::tool::run_front_end(argv[0], command.name, std::vector<std::string>(argv + 2, argv + argc));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version exit 0. A usage error exits 2 and, within a command, reads as the front
    // end's do: "taot COMMAND: error: ..." (docs/workbench.md, "Every command").
    const std::vector<CLI::App*> parsed = app.get_subcommands();
    if (error.get_exit_code() == 0 || parsed.empty()) return app.exit(error) == 0 ? 0 : 2;
    return taot::tool::report_usage_error(parsed.front()->get_name(), error.what());
  }
  return chosen ? chosen() : 2;
}
