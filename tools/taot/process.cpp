// run_process: posix_spawnp + waitpid, Ctrl-C left to the child.
#include "process.h"

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

extern char** environ;

namespace taot::tool {

int run_process(const std::vector<std::string>& args, const std::string& what, ChildInterrupts interrupts) {
  std::vector<std::string> owned = args;
  std::vector<char*> argv;
  for (auto& arg : owned) argv.push_back(arg.data());
  argv.push_back(nullptr);
  // As system(3) does: while the child runs, Ctrl-C (sent to the whole foreground process group) is
  // the child's to handle, and taot ends with the child's status; the child gets the default actions.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction saved_interrupt {}, saved_quit {};
  sigaction(SIGINT, &ignore, &saved_interrupt);
  sigaction(SIGQUIT, &ignore, &saved_quit);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGQUIT);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  short flags = POSIX_SPAWN_SETSIGDEF;
  sigset_t mask;
  if (interrupts == ChildInterrupts::kDeferred) {
    pthread_sigmask(SIG_SETMASK, nullptr, &mask);
    sigaddset(&mask, SIGINT);
    posix_spawnattr_setsigmask(&attributes, &mask);
    flags |= POSIX_SPAWN_SETSIGMASK;
  }
  posix_spawnattr_setflags(&attributes, flags);
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, argv[0], nullptr, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  int status = 0;
  pid_t waited = -1;
  if (spawned == 0) {
    do {
      waited = waitpid(child, &status, 0);
    } while (waited < 0 && errno == EINTR);
  }
  const int wait_error = errno;
  sigaction(SIGINT, &saved_interrupt, nullptr);
  sigaction(SIGQUIT, &saved_quit, nullptr);
  if (spawned != 0) {
    fmt::print(stderr, "{}: cannot run {} ({})\n", what, argv[0], std::strerror(spawned));
    return 1;
  }
  if (waited < 0) {
    fmt::print(stderr, "{}: lost {} ({})\n", what, argv[0], std::strerror(wait_error));
    return 1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WTERMSIG(status) == SIGINT) return kInterruptedExit;
  fmt::print(stderr, "{}: {} was killed by signal {}\n", what, argv[0], WTERMSIG(status));
  return 1;
}

}  // namespace taot::tool
