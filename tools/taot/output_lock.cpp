// The output folder's lock: flock, the holder line, the parent's word (output_lock.h).
#include "output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

#include <fmt/core.h>

namespace taot::tool {

namespace {

namespace fs = std::filesystem;

// Whether $TAOT_HELD_LOCK names this lock file (the same file, however spelled).
bool parent_says_it_holds(const fs::path& lock_file) {
  const char* held = std::getenv(kHeldLockVariable);
  if (held == nullptr || *held == '\0') return false;
  std::error_code error;
  return fs::equivalent(held, lock_file, error) && !error;
}

std::string holder_of(const fs::path& lock_file) {
  std::ifstream file(lock_file);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "another build (it has not named itself yet)" : text;
}

// "pid 42 on host since 2026-01-02 10:11:12: COMMAND", as the Python side writes it.
std::string describe_this_process(std::string_view command) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char started[32] = {};
  std::strftime(started, sizeof(started), "%Y-%m-%d %H:%M:%S", &local);
  return fmt::format("pid {} on {} since {}: {}\n", getpid(), host, started, command);
}

// Closes a descriptor not yet holding the lock (closing it leaves the holder's line alone).
struct OpenFile {
  int descriptor;
  ~OpenFile() {
    if (descriptor >= 0) close(descriptor);
  }
  int release() { return std::exchange(descriptor, -1); }
};

}  // namespace

codegen::Expected<OutputLock> OutputLock::acquire(const fs::path& folder, bool wait,
                                                  const std::function<void(std::string_view)>& notice,
                                                  std::string_view command) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) return codegen::input_error(fmt::format("{}: cannot create the folder: {}", folder.string(), error.message()));
  const fs::path lock_file = folder / kLockFileName;
  int descriptor = open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (descriptor < 0) {
    return codegen::input_error(fmt::format("{}: cannot open the lock file: {}", lock_file.string(), std::strerror(errno)));
  }
  OpenFile file{descriptor};
  if (flock(descriptor, LOCK_EX | LOCK_NB) != 0) {
    if (errno == ENOLCK || errno == EOPNOTSUPP) {
      notice(fmt::format("cannot lock {} ({}); writing without the lock", lock_file.string(), std::strerror(errno)));
      return OutputLock(-1);
    }
    if (errno != EWOULDBLOCK && errno != EAGAIN && errno != EACCES) {
      return codegen::input_error(fmt::format("{}: cannot lock: {}", lock_file.string(), std::strerror(errno)));
    }
    const std::string holder = holder_of(lock_file);
    // Held, and by the parent that says so (its line names its pid): the folder is already ours. A
    // word inherited from further up, or left in the environment, does not count.
    if (parent_says_it_holds(lock_file) && holder.starts_with(fmt::format("pid {} ", getppid()))) {
      return OutputLock(-1);
    }
    if (!wait) {
      return codegen::input_error(
          fmt::format("{} is being built by {}; wait for it or drop --no-wait", folder.string(), holder));
    }
    notice(fmt::format("waiting for {}", holder));
    while (flock(descriptor, LOCK_EX) != 0) {
      if (errno != EINTR) {
        return codegen::input_error(fmt::format("{}: cannot lock: {}", lock_file.string(), std::strerror(errno)));
      }
    }
  }
  const std::string holder = describe_this_process(command);
  if (ftruncate(descriptor, 0) != 0 || pwrite(descriptor, holder.data(), holder.size(), 0) < 0) {
    return codegen::input_error(fmt::format("{}: cannot write: {}", lock_file.string(), std::strerror(errno)));
  }
  return OutputLock(file.release());
}

OutputLock::OutputLock(OutputLock&& other) noexcept : descriptor_(std::exchange(other.descriptor_, -1)) {}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    unlock();
    descriptor_ = std::exchange(other.descriptor_, -1);
  }
  return *this;
}

OutputLock::~OutputLock() { unlock(); }

void OutputLock::unlock() noexcept {
  if (descriptor_ < 0) return;
  // Released: the file names no holder (should the truncation fail, the lock still ends with the close).
  (void)!ftruncate(descriptor_, 0);
  close(descriptor_);
  descriptor_ = -1;
}

}  // namespace taot::tool
