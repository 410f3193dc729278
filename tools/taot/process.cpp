// run_process: posix_spawnp + waitpid.
#include "process.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

extern char** environ;

namespace taot::tool {

int run_process(const std::vector<std::string>& args, const std::string& what) {
  std::vector<std::string> owned = args;
  std::vector<char*> argv;
  for (auto& arg : owned) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), environ);
  if (spawned != 0) {
    fmt::print(stderr, "{}: cannot run {} ({})\n", what, argv[0], std::strerror(spawned));
    return 1;
  }
  int status = 0;
  if (waitpid(child, &status, 0) < 0) {
    fmt::print(stderr, "{}: lost {} ({})\n", what, argv[0], std::strerror(errno));
    return 1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  fmt::print(stderr, "{}: {} was killed by signal {}\n", what, argv[0], WTERMSIG(status));
  return 1;
}

}  // namespace taot::tool
