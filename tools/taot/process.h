// Hands the process over to another program (the Python front end).
#pragma once

#include <string>
#include <vector>

namespace taot::tool {

// Replaces this process with `args[0]` (looked up on PATH) run with `args`, Ctrl-C blocked: the
// program unblocks it once it can stop cleanly (the front end does so first thing), so that a
// Ctrl-C during the interpreter's start-up is not a fatal error with a traceback. Returns only when
// the program cannot be started: 1, after printing why; `what` names it in that message.
int exec_process(const std::vector<std::string>& args, const std::string& what);

}  // namespace taot::tool
