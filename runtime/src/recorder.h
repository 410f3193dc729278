// The launch recorder behind `taot repro` (docs/debug.md): with $TAOT_RECORD=DIR set, an observer
// records one launch ($TAOT_RECORD_KERNEL names its kernel, $TAOT_RECORD_INDEX=N picks that kernel's
// Nth launch, counted from 0): its kernel, variant, grid, arguments, and the bytes of every
// allocation a pointer argument points into (cuMemGetAddressRange) before and after the launch.
// DIR/launch.json (schema "taot.repro", version 1) and DIR/buffer<K>.bin, DIR/buffer<K>.after.bin
// hold them. Nothing is installed when $TAOT_RECORD is unset: launches then pay nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "taot/c_api.h"
#include "taot/status.h"

namespace taot::detail {

// What the environment asks for.
struct RecordSettings {
  std::string directory;
  std::string kernel;       // empty: any kernel
  std::size_t index = 0;    // the index-th launch of a matching kernel (captured launches not counted)
};

// The settings for $TAOT_RECORD = `directory`, $TAOT_RECORD_KERNEL = `kernel` and
// $TAOT_RECORD_INDEX = `index` (any may be null); nullopt when `directory` is unset or empty. An
// index that is not a whole number fails, naming it.
Expected<std::optional<RecordSettings>> record_settings(const char* directory, const char* kernel, const char* index);

// Where a kernel is first used (Kernel::state()), after the profiler's start: reads the environment
// once per copy of the runtime and, when it asks for a recording, installs a Recorder as the launch
// observer, in front of the observer already installed (the profiler's), which it calls on.
// Thread-safe.
void start_recorder_if_requested();

// Records one launch. observer() gives the callbacks to install; `next` (may have null callbacks)
// is called after begin and before end, so that its work is not in the copies' way. The files are
// written as the launch happens: launch.json and the before-copies at begin (so that a launch that
// kills the process still leaves them), the after-copies and the status at end. Errors never
// reach a launch: they are reported once on stderr, prefixed "taot record:", and in launch.json's
// "errors". Every member is thread-safe; launches on other threads while the chosen one runs are
// not recorded.
class Recorder {
 public:
  Recorder(RecordSettings settings, taot_launch_observer next);
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  taot_launch_observer observer() noexcept;
  // Whether the chosen launch has been recorded (its end seen).
  bool done() const noexcept { return state_.load(std::memory_order_acquire) == kDone; }
  void report(const std::string& message) noexcept;

 private:
  // One allocation that pointer arguments point into, copied whole.
  struct Buffer {
    CUdeviceptr base = 0;
    std::size_t bytes = 0;
    bool output = false;  // an argument the spec marks as an output points into it
  };
  static constexpr int kWaiting = 0, kRecording = 1, kDone = 2;

  static void on_begin(const taot_launch_info* launch, void* user) noexcept;
  static void on_end(const taot_launch_info* launch, taot_status status, void* user) noexcept;
  // Whether `launch` is the one to record (counts the matching ones).
  bool chosen(const taot_launch_info& launch);
  void begin(const taot_launch_info& launch);
  void end(const taot_launch_info& launch, taot_status status);
  // Copies every buffer to DIR/buffer<K><suffix>.bin, after waiting for the device.
  Status copy_buffers(const char* suffix);
  Status write_description(const std::optional<taot_status>& status);

  RecordSettings settings_;
  taot_launch_observer next_;
  std::atomic<int> state_{kWaiting};
  std::mutex mutex_;  // guards what follows
  std::size_t seen_ = 0;
  const taot_launch_info* recording_ = nullptr;  // the launch between its begin and end
  std::string description_;                      // launch.json without its status and errors
  std::vector<Buffer> buffers_;
  std::vector<std::string> errors_;
};

}  // namespace taot::detail
