// The lock that keeps two builds from writing one output folder at once (OUTPUT/.taot.lock, an
// flock naming its holder); the Python front end takes the same lock (python/taot/output_lock.py).
#pragma once

#include <filesystem>
#include <string>

#include "taot/status.h"

namespace taot::tool {

// The environment variable through which `taot build` tells the compile it runs that it already
// holds the lock named there, for compile and gen together.
inline constexpr const char* kHeldLockVariable = "TAOT_HELD_LOCK";

// Holds the lock of an output folder from acquire() until destroyed (or until the process ends,
// however it ends: a killed build never blocks the next one). Move-only; not thread-safe.
class OutputLock {
 public:
  // Creates `folder` if needed and takes its lock, writing this process' pid, host, start time and
  // command into the lock file. When another process holds it: with `wait`, prints "waiting for
  // <holder>" (unless `quiet`) and waits; without, fails with a message naming the holder. Also
  // fails when the folder or the lock file cannot be made.
  static Expected<OutputLock> acquire(const std::filesystem::path& folder, bool wait, bool quiet);

  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

  // The lock file, absolute.
  const std::filesystem::path& path() const { return path_; }

 private:
  OutputLock(int descriptor, std::filesystem::path path) : descriptor_(descriptor), path_(std::move(path)) {}
  void release();

  int descriptor_ = -1;
  std::filesystem::path path_;
};

}  // namespace taot::tool
