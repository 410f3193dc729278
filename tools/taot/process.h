// Runs another program (python3, cmake) with inherited stdio and returns its exit code.
#pragma once

#include <string>
#include <vector>

namespace taot::tool {

// Runs `args[0]` (looked up on PATH) with `args` and waits for it. Returns its exit code, or 1
// after printing why when it could not be started or was killed; `what` names it in messages.
int run_process(const std::vector<std::string>& args, const std::string& what);

}  // namespace taot::tool
