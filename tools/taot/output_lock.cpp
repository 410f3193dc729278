// OutputLock: flock(2) on OUTPUT/.taot.lock; the file holds one line naming the holder while held.
#include "output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

#include <fmt/core.h>

namespace taot::tool {
namespace {

constexpr const char* kLockName = ".taot.lock";

// An argument as a POSIX shell would need it: 'quoted' when it holds anything but safe characters.
std::string shell_quoted(const std::string& argument) {
  const bool plain = !argument.empty() && argument.find_first_not_of(
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == std::string::npos;
  if (plain) return argument;
  std::string quoted = "'";
  for (const char c : argument) quoted += c == '\'' ? std::string("'\"'\"'") : std::string(1, c);
  return quoted + "'";
}

// This process' command line, read from /proc/self/cmdline.
std::string this_command() {
  std::ifstream stream("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  std::string command;
  std::size_t start = 0;
  while (start < raw.size()) {
    std::size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    if (!command.empty()) command += ' ';
    command += shell_quoted(raw.substr(start, end - start));
    start = end + 1;
  }
  return command.empty() ? "taot" : command;
}

// "pid 42 on host since 2026-01-02 10:11:12: taot build spec.toml -o out", the format
// python/taot/output_lock.py writes too.
std::string describe_this_process() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char started[32] = {};
  std::strftime(started, sizeof started, "%Y-%m-%d %H:%M:%S", &local);
  return fmt::format("pid {} on {} since {}: {}", getpid(), host, started, this_command());
}

std::string holder_of(const std::filesystem::path& path) {
  std::ifstream stream(path);
  std::string line;
  std::getline(stream, line);
  return line.empty() ? "another build (it has not named itself yet)" : line;
}

Status system_error(const std::string& what, const std::filesystem::path& path, int error) {
  return Status::error(TAOT_INVALID_ARGUMENT, fmt::format("{} {}: {}", what, path.string(), std::strerror(error)));
}

// Takes the flock of the open lock file `descriptor`, waiting for it or not. Where the file system
// has no locks, says so (unless `quiet`) and goes on without.
Status lock_descriptor(int descriptor, const std::filesystem::path& folder, const std::filesystem::path& path,
                       bool wait, bool quiet) {
  if (flock(descriptor, LOCK_EX | LOCK_NB) == 0) return Status();
  const int error = errno;
  if (error == ENOLCK || error == EOPNOTSUPP) {
    if (!quiet)
      fmt::print(stderr, "cannot lock {} ({}); building without the lock\n", path.string(), std::strerror(error));
    return Status();
  }
  if (error != EWOULDBLOCK) return system_error("cannot lock", path, error);
  const std::string holder = holder_of(path);
  if (!wait)
    return Status::error(TAOT_INVALID_ARGUMENT, fmt::format("{} is being built by {}; wait for it or drop --no-wait",
                                                            folder.string(), holder));
  if (!quiet) fmt::print(stderr, "waiting for {}\n", holder);
  while (flock(descriptor, LOCK_EX) != 0) {
    if (errno != EINTR) return system_error("cannot lock", path, errno);
  }
  return Status();
}

}  // namespace

Expected<OutputLock> OutputLock::acquire(const std::filesystem::path& folder, bool wait, bool quiet) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error)
    return Status::error(TAOT_INVALID_ARGUMENT, fmt::format("cannot create {}: {}", folder.string(), error.message()));
  const std::filesystem::path path = std::filesystem::absolute(folder / kLockName);
  const int descriptor = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (descriptor < 0) return system_error("cannot open", path, errno);
  Status locked = lock_descriptor(descriptor, folder, path, wait, quiet);
  if (!locked.ok()) {
    close(descriptor);
    return locked;
  }
  OutputLock lock(descriptor, path);
  const std::string holder = describe_this_process() + "\n";
  if (ftruncate(descriptor, 0) != 0 || pwrite(descriptor, holder.data(), holder.size(), 0) < 0)
    return system_error("cannot write", path, errno);
  return lock;
}

OutputLock::OutputLock(OutputLock&& other) noexcept
    : descriptor_(std::exchange(other.descriptor_, -1)), path_(std::move(other.path_)) {}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    release();
    descriptor_ = std::exchange(other.descriptor_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

OutputLock::~OutputLock() { release(); }

void OutputLock::release() {
  if (descriptor_ < 0) return;
  // Released: the file names no holder. A failure changes nothing, as the next holder rewrites it.
  [[maybe_unused]] const int truncated = ftruncate(descriptor_, 0);
  close(descriptor_);
  descriptor_ = -1;
}

}  // namespace taot::tool
