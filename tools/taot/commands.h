// The taot subcommands: one function per command, each returning the process exit code.
// main() only parses the command line and calls one of them.
#pragma once

#include <string>
#include <vector>

namespace taot::tool {

struct CompileOptions {
  std::string spec;
  std::string output;
  int jobs = 0;  // 0: the Python front end's default (all cores)
  std::vector<std::string> targets;
  bool quiet = false;
  bool list_only = false;
  std::string ir;         // how to keep the IR stages: compressed, plain or none ("": the default)
  bool no_wait = false;   // fail instead of waiting when another build holds the output folder
  long max_variants = 0;  // 0: the Python front end's default (10000)
  bool build_library = false;  // taot build: also configure and build the library with CMake
  bool python = false;         // taot build: also generate the Python module
};

struct GenOptions {
  std::string manifest;
  std::string output;
  bool quiet = false;
  bool python = false;  // also generate the Python module (nanobind)
  std::vector<std::string> tuning;  // tuned-table files to bake in: FILE or KERNEL=FILE
};

// `taot compile`: runs the Python front end (python3 -m taot.compile), which calls Triton.
int run_compile(const CompileOptions& options);
// `taot gen`: manifest.json -> C++ library sources.
int run_gen(const GenOptions& options);
// `taot build`: compile, then gen into the same folder, then (build_library) cmake into
// <output>/build.
int run_build(const CompileOptions& options);

}  // namespace taot::tool
