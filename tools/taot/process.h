// Runs another program (python3, cmake) with inherited stdio and returns its exit code.
#pragma once

#include <string>
#include <vector>

namespace taot::tool {

// The exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
inline constexpr int kInterruptedExit = 130;

// When the child receives Ctrl-C: at once, or once it unblocks SIGINT, which it starts with blocked
// (the Python front end does so when it can stop cleanly, so that a Ctrl-C during the interpreter's
// start-up is not a fatal error with a traceback).
enum class ChildInterrupts { kImmediate, kDeferred };

// Runs `args[0]` (looked up on PATH) with `args` and waits for it, ignoring Ctrl-C meanwhile (the
// child gets it). Returns its exit code, kInterruptedExit when Ctrl-C killed it, or 1 after printing
// why when it could not be started or was killed otherwise; `what` names it in messages.
int run_process(const std::vector<std::string>& args, const std::string& what,
                ChildInterrupts interrupts = ChildInterrupts::kImmediate);

}  // namespace taot::tool
