// The launch profiler behind `taot profile` (docs/profile.md): with $TAOT_PROFILE=PATH set, an
// observer records every launch (kernel, variant, step, grid, stream, scalar arguments by name,
// pointer dtypes) between two CUDA events on the launch's stream, and a trace (schema
// "taot.profile.trace", version 1) is written to PATH at exit or on taot_profile_flush().
// $TAOT_PROFILE_NVTX=1 adds an NVTX range per launch. Nothing is installed when neither is set.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "driver_objects.h"
#include "taot/c_api.h"
#include "taot/kernel_table.h"
#include "taot/status.h"

namespace taot::detail {

// What the environment asks for. `trace_path` empty: NVTX ranges only, no trace.
struct ProfileSettings {
  std::string trace_path;  // "%p" already replaced by the process id
  bool nvtx = false;
  // Ended launches whose events may wait to be read; past it the older half is read (waiting for
  // them, which by then have long finished), so that a long run does not hold a pair per launch.
  std::size_t unread_limit = 4096;
};

// The settings for $TAOT_PROFILE = `profile` and $TAOT_PROFILE_NVTX = `nvtx` (either may be null);
// nullopt when neither asks for anything (unset, empty, or TAOT_PROFILE_NVTX "0").
std::optional<ProfileSettings> profile_settings(const char* profile, const char* nvtx);

// Where a kernel is first used (Kernel::state()): reads the environment once per copy of the
// runtime and, when it asks for profiling, installs the process's Profiler as the launch observer.
// Later calls cost one check of a function-local static. Thread-safe.
void start_profiler_if_requested();

// "vector_add.add_kernel[fp32_a16]": the NVTX range of a launch.
std::string launch_range_name(const taot_launch_info& launch);

// One profiling session: observer() gives the callbacks to install; flush() writes what they
// recorded. Launch callbacks may come from any thread; every member is thread-safe. Errors never
// reach a launch: a callback that fails records the launch without a time and reports the problem
// (once, on stderr, prefixed "taot profile:") and in the trace. Destroy it only once no launch
// can call its observer any more (after taot_set_launch_observer(NULL) and those launches' end).
class Profiler {
 public:
  // `runtime_id` tells the copies of the runtime in one process apart (each statically linked
  // library has its own): copies writing the same trace path merge their launches there.
  explicit Profiler(ProfileSettings settings, std::string runtime_id = this_runtime_id());
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // begin/end callbacks with this profiler as their `user`.
  taot_launch_observer observer() noexcept;

  // Waits for the events of the launches recorded so far, then writes the trace: every launch
  // since the profiler started (a second flush writes them again with the later ones). Launches
  // that other copies of the runtime in this process wrote to the same path are kept. Fails naming
  // the path when it cannot be written; never throws.
  Status flush();
  // flush() for the end of the process: a failure is reported on stderr (once).
  void flush_at_exit() noexcept;
  // Makes the process's profiler flush at exit: the handler is registered at the first launch it
  // sees, after the driver has been initialized, so that it runs before the driver's own.
  void write_at_exit() noexcept;

  // Prints `message` on stderr as "taot profile: <message>" the first time it arises, and keeps it
  // for the trace's "errors"; at most 8 distinct messages are kept and printed.
  void report(const std::string& message) noexcept;

  const ProfileSettings& settings() const noexcept { return settings_; }
  // This copy of the runtime's id: the address of one of its statics, in hex.
  static std::string this_runtime_id();

 private:
  struct DeviceInfo {
    int ordinal = -1;
    std::string name;
    int arch = 0, multiprocessors = 0, clock_khz = 0, memory_clock_khz = 0, bus_width_bits = 0;
  };
  // What the trace says of a kernel, copied from its table when a launch first shows it: the
  // trace is written at exit, when a table may be gone (a library unloaded, a table built in memory).
  struct KernelNames {
    struct Arg {
      std::string name;
      table::ArgKind kind;
      bool fp64;  // a float scalar passed as a double
      bool none;  // a pointer that may be None
    };
    std::string library, kernel;
    std::vector<Arg> args;
    std::vector<std::string> variants;  // by index, as launches show them
  };
  // One launch as the trace shows it. `start` and `stop` hold its events until they are read.
  struct Launch {
    const KernelNames* names = nullptr;
    std::size_t variant_index = 0;
    taot_step step = TAOT_STEP_DEFAULT;
    std::int64_t grid[3] = {0, 0, 0};
    CUstream stream = nullptr;
    CUcontext context = nullptr;
    int device = -1;
    std::int64_t host_ns = 0;          // steady clock at begin
    std::vector<taot_arg> args;        // descriptors keep their dtype only
    taot_status status = TAOT_OK;
    bool ended = false;
    bool captured = false;             // launched into a CUDA graph being captured: not timed
    std::optional<double> ms;
    Event start, stop;
  };
  // Events of one context, free for reuse.
  struct ContextEvents {
    DeviceInfo device;
    std::vector<Event> free;
  };

  static void on_begin(const taot_launch_info* launch, void* user) noexcept;
  static void on_end(const taot_launch_info* launch, taot_status status, void* user) noexcept;
  void begin(const taot_launch_info& launch);
  void end(const taot_launch_info& launch, taot_status status);
  // The names of `launch`'s kernel (copied at its first launch) with its variant's id; lock held.
  const KernelNames* kernel_names(const taot_launch_info& launch);
  // The free events of the current context (created on demand); lock held.
  ContextEvents* context_events(const driver::Api& api, CUcontext context);
  Status take_event(const driver::Api& api, ContextEvents& events, Event& event);
  // Reads the times of the oldest `count` ended launches still holding events; lock held.
  void read_times(std::size_t count);
  std::string trace_text(const std::string& existing) const;
  bool timing_entry_points(const driver::Api& api);
  std::mutex& report_mutex() const noexcept;

  ProfileSettings settings_;
  std::string runtime_id_;
  mutable std::mutex mutex_;
  std::deque<Launch> launches_;
  std::map<const void*, std::unique_ptr<KernelNames>> kernels_;  // by kernel handle
  std::vector<std::unique_ptr<KernelNames>> replaced_kernels_;    // a handle reused by another kernel: kept for its launches
  std::deque<std::size_t> unread_;  // ended launches whose events are still to be read, in end order
  std::map<CUcontext, ContextEvents> events_;
  std::map<int, DeviceInfo> devices_;
  mutable std::mutex report_mutex_;  // guards errors_; never held while taking mutex_
  std::vector<std::string> errors_;
  int timing_checked_ = 0;  // 0 unknown, 1 the driver has the event entry points, -1 it lacks one
  bool flush_at_exit_ = false;
  std::atomic<bool> exit_handler_registered_{false};
};

// The profiler the environment started in this copy of the runtime, or null.
Profiler* active_profiler() noexcept;

}  // namespace taot::detail
