// posix_spawn with two pipes, drained with poll().
#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace taot::workbench::detail {

namespace {

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  ~Pipe() {
    if (read_end >= 0) close(read_end);
    if (write_end >= 0) close(write_end);
  }
  bool open() {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) return false;
    read_end = ends[0];
    write_end = ends[1];
    return true;
  }
};

}  // namespace

Expected<ProcessOutput> run_and_collect(const std::vector<std::string>& args) {
  if (args.empty()) return tool_error("no program to run");
  Pipe out, err;
  if (!out.open() || !err.open()) return tool_error("cannot run " + args[0] + ": " + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write_end, 1);
  posix_spawn_file_actions_adddup2(&actions, err.write_end, 2);
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = args[0].find('/') == std::string::npos
                          ? posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ)
                          : posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return tool_error("cannot run " + args[0] + ": " + std::strerror(spawned));
  close(out.write_end);
  close(err.write_end);
  out.write_end = err.write_end = -1;

  ProcessOutput result;
  std::array<pollfd, 2> fds = {pollfd{out.read_end, POLLIN, 0}, pollfd{err.read_end, POLLIN, 0}};
  std::array<std::string*, 2> sinks = {&result.out, &result.err};
  std::array<char, 1 << 16> buffer;
  int open_count = 2;
  while (open_count > 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t index = 0; index < fds.size(); ++index) {
      if (fds[index].fd < 0 || fds[index].revents == 0) continue;
      const ssize_t count = read(fds[index].fd, buffer.data(), buffer.size());
      if (count > 0) {
        sinks[index]->append(buffer.data(), static_cast<std::size_t>(count));
      } else if (count == 0 || errno != EINTR) {
        fds[index].fd = -1;
        --open_count;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return result;
}

}  // namespace taot::workbench::detail
