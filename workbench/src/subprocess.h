// Running a program and collecting its output (the workbench runs nvdisasm and python3).
#pragma once

#include <string>
#include <vector>

#include "taot/workbench/errors.h"

namespace taot::workbench::detail {

struct ProcessOutput {
  int exit_code = 0;  // 128 + N when killed by signal N
  std::string out;
  std::string err;
};

// Runs `args[0]` (looked up on PATH when it has no '/') with `args`, stdin from /dev/null, and
// collects stdout and stderr. Fails only when it cannot be started, naming it. Thread-safe.
Expected<ProcessOutput> run_and_collect(const std::vector<std::string>& args);

}  // namespace taot::workbench::detail
