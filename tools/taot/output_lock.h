// The output folder's lock, as the Python front end takes it (python/taot/compile/output_lock.py):
// an flock on OUTDIR/.taot.lock, which names its holder while held, so that two commands never write
// one folder at once. The lock dies with its process. A command run by one that already holds the
// folder's lock (build, from-ir and import-cache run `taot gen`) is told so by $TAOT_HELD_LOCK, the
// lock file's path; it believes it only while the lock file names its parent process as the holder.
#pragma once

#include <filesystem>
#include <functional>
#include <string_view>

#include "taot/codegen/errors.h"

namespace taot::tool {

class OutputLock {
 public:
  // Creates `folder` and locks it. A held lock is waited for after `notice("waiting for <holder>")`,
  // or with `wait` false is an error naming the holder. A file system without locks is said through
  // `notice` and the command goes on without one. `command` is what the holder line says is running.
  static codegen::Expected<OutputLock> acquire(const std::filesystem::path& folder, bool wait,
                                               const std::function<void(std::string_view)>& notice,
                                               std::string_view command);

  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();  // releases: the file then names no holder

 private:
  explicit OutputLock(int descriptor) : descriptor_(descriptor) {}
  void unlock() noexcept;
  int descriptor_ = -1;  // -1: held by the parent, or no locks on this file system
};

inline constexpr const char* kLockFileName = ".taot.lock";
inline constexpr const char* kHeldLockVariable = "TAOT_HELD_LOCK";

}  // namespace taot::tool
