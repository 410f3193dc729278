// The table of taot's subcommands, and how every command reports an error.
#include "commands.h"

#include <fmt/core.h>

namespace taot::tool {

int report_error(std::string_view message) {
  fmt::print(stderr, "error: {}\n", message);
  return 1;
}

int report_usage_error(std::string_view command, std::string_view message) {
  fmt::print(stderr, "taot {}: error: {}\n(`taot {} --help` lists its options)\n", command, message, command);
  return 2;
}

namespace {
std::string recorded_invocation;

// `argument` as a POSIX shell reads it back: bare when it holds only safe characters, else quoted.
std::string shell_quoted(std::string_view argument) {
  constexpr std::string_view kSafe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-";
  if (!argument.empty() && argument.find_first_not_of(kSafe) == std::string_view::npos) return std::string(argument);
  std::string quoted = "'";
  for (char c : argument) quoted += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return quoted + "'";
}
}  // namespace

void record_invocation(int argc, char** argv) {
  recorded_invocation.clear();
  for (int i = 0; i < argc; ++i) {
    if (i > 0) recorded_invocation += ' ';
    recorded_invocation += shell_quoted(argv[i]);
  }
}

const std::string& invocation() { return recorded_invocation; }

namespace {

constexpr Command kCommands[] = {
    {"build", "compile + gen: a spec to library sources in one folder (--build-library: and a CMake build)", nullptr},
    {"compile", "Compile a spec's variants with Triton into artifacts and manifest.json (no GPU needed)", nullptr},
    {"gen", "Generate the C++ library sources (and Python module) from a manifest.json", declare_gen},
    {"inspect", "Per variant and target: registers, spills, shared/local memory, launch facts; any stage's text with source lines",
     declare_inspect},
    {"diff", "Two variants or two IR files: config, metadata and resource differences, op counts, a unified diff",
     declare_diff},
    {"passes", "Run Triton's pass pipeline of an IR file's stage (or named passes) pass by pass, keeping each output",
     nullptr},
    {"from-ir", "Rebuild a variant from an edited .ttir/.ttgir/.llir/.ptx/.cubin, into its library or a Triton cache",
     nullptr},
    {"import-cache", "Make a library (and a spec that reproduces it) from the kernels in a Triton cache", nullptr},
    {"bench", "Time variants, the automatic choice and baselines over a bench file's sweep: table, CSV, JSON, plot",
     nullptr},
    {"tune", "Time every compiled config per tuning-key value on every GPU; write taot's tuned table and vLLM's JSON",
     nullptr},
    {"check", "Run variants over a bench file's shapes against Triton's JIT (bitwise), a reference, or the interpreter",
     nullptr},
    {"sanitize", "Run check (or any command) under compute-sanitizer; findings per variant, kernel and source line",
     nullptr},
    {"profile", "Run a program that uses taot libraries and report its launches per kernel and variant (hatchet JSON)",
     nullptr},
    {"repro", "Turn a launch recorded with TAOT_RECORD into a standalone C++ program that replays it and compares bitwise",
     nullptr},
};

}  // namespace

std::span<const Command> commands() { return kCommands; }

}  // namespace taot::tool
