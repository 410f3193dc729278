// exec_process: execvp with Ctrl-C blocked.
#include "process.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

namespace taot::tool {

int exec_process(const std::vector<std::string>& args, const std::string& what) {
  std::vector<std::string> owned = args;
  std::vector<char*> argv;
  for (auto& arg : owned) argv.push_back(arg.data());
  argv.push_back(nullptr);
  sigset_t interrupt, saved;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  sigprocmask(SIG_BLOCK, &interrupt, &saved);
  execvp(argv[0], argv.data());
  const int error = errno;
  sigprocmask(SIG_SETMASK, &saved, nullptr);
  fmt::print(stderr, "error: {}: cannot run {} ({})\n", what, argv[0], std::strerror(error));
  return 1;
}

}  // namespace taot::tool
