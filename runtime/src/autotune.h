// First-call autotuning (docs/runtime.md, "Autotuning at first call"): what a kernel remembers of
// the configs timed per (device, tuning-key value), the switches that turn it on and off, the files
// the results persist in, and the timing of a key's candidates.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "device.h"
#include "taot/kernel_table.h"
#include "taot/runtime.h"
#include "taot/tuning_file.h"

namespace taot::detail {

struct KernelState;

// The process's switch ($TAOT_AUTOTUNE, set_autotune): each kernel's own default, or on or off
// for every kernel that can be tuned at first call.
enum class AutotuneMode : std::int8_t { kernel_default = -1, off = 0, on = 1 };
AutotuneMode autotune_mode() noexcept;
// The folder results persist in ($TAOT_AUTOTUNE_DIR, set_autotune_dir); "" for none.
std::string autotune_dir();
// Counts changes of what first-call choices depend on (switches, results dropped or loaded), so
// that choices remembered before a change are not found after it.
std::uint64_t autotune_epoch() noexcept;
void bump_autotune_epoch() noexcept;

// A config a key's first call may take: a variant that accepts the arguments and keeps to the
// requirements, and the config that chose it (a value index per config field: the timed fields'
// values, kUnsetValue for the fields the heuristics or the default fill).
struct AutotuneCandidate {
  std::size_t variant;
  std::vector<std::uint16_t> config;
};

// What a kernel remembers of first-call autotuning. Thread-safe: lookups share a lock, a key is
// tuned by one thread while the others calling it wait.
class AutotuneStore {
 public:
  explicit AutotuneStore(const table::KernelTable& table);
  AutotuneStore(const AutotuneStore&) = delete;
  AutotuneStore& operator=(const AutotuneStore&) = delete;

  // Whether launches tune this kernel at first call now: it can be (table.autotune), and its own
  // switch, else the process's, else the table's default says so.
  bool enabled() const noexcept;
  // The kernel's own switch: on, off, or (nullopt) the process's.
  void set_enabled(std::optional<bool> on) noexcept;

  // What keys a choice made with this store on `device`, beside the tuned table's address: 0 when
  // tuning at first call is off; else a word of the top 16 bits (addresses stay below 2^47),
  // from the device's ordinal and autotune_epoch(). An epoch 256 changes old may be taken for
  // the current one: choices remembered across 256 switches of a running process may be stale.
  std::uint64_t choice_word(const DeviceFacts* device) const noexcept;

  enum class Found : std::uint8_t { none, config, next_step };
  // The config remembered for `key` (the kernel's tuning_key_count values) on the device named
  // `device`, copied into `config` (field_count values): `config`; `next_step` when the key could
  // not be timed (the call takes the heuristics or the default); `none` when it was not tuned.
  Found find(std::string_view device, const std::int64_t* key, std::uint16_t* config) const;

  // Claims `key` on `device` for tuning: true when the caller must tune it (and then call finish),
  // false when it has a result already, after waiting while another thread tuned it.
  bool claim(const std::string& device, const std::vector<std::int64_t>& key);
  // Ends a claim: `config` (field_count values) is the result, or null when the key takes the next
  // step (no candidate could be timed, or the tuning failed: `retry` leaves it untuned, so that a
  // later call tries again). Wakes the threads waiting for it.
  void finish(const std::string& device, const std::vector<std::int64_t>& key, const std::uint16_t* config,
              bool retry = false);

  // The results for `device` as a tuned-table file of taot's format (empty entries when none),
  // naming the library and its identity: what persists.
  TuningFile results(const std::string& device) const;
  // Reads a file of results (taot's format) into the store: it must be for this kernel, of this
  // library and build (library_id: identity()), name a device, and hold compiled values only.
  Status load(const TuningFile& file);
  // Drops every result (and bumps the epoch).
  void clear();

  // A digest of what the library compiled for this kernel (its name, config fields and values, the
  // variants' ids, targets and image sizes): files of results name it, and one that names another
  // is not taken.
  const std::string& identity() const noexcept { return identity_; }
  const table::KernelTable& table() const noexcept { return table_; }

 private:
  struct Slot {
    bool tuning = false;                 // claimed, not finished
    bool next_step = false;              // finished without a config
    std::vector<std::uint16_t> config;   // field_count values
  };
  using Key = std::pair<std::string, std::vector<std::int64_t>>;  // device name, key values

  const table::KernelTable& table_;
  std::string identity_;
  std::atomic<std::int8_t> own_switch_{-1};  // -1: the process's; 0 off; 1 on
  mutable std::shared_mutex mutex_;
  std::condition_variable_any finished_;
  std::map<Key, Slot> slots_;
};

// Reads every *.json file of <autotune_dir()>/<library>/<kernel>/ into `store` (when a folder is
// set and exists). A file that is not for this library build, kernel and device set is passed
// over: it is rewritten when a key is tuned again. Never fails a launch: unreadable files are
// passed over too.
void load_autotune_directory(AutotuneStore& store);

// Whether this thread is timing candidates for first-call autotuning: its launches are not told to
// the launch observer (the profiler, the recorder), which see the call's own launch only.
inline thread_local bool tuning_on_this_thread = false;

// Tunes the call's key (`key`, on `device`) unless another thread has: times `candidates` (at
// least one) on the call's own arguments on `stream` (quickly, then in full those within reach of
// the best), keeps the fastest in the store and writes the device's results to autotune_dir()
// (`*persisted`: the write's status). The memory of the kernel's reset_to_zero and restore_value
// arguments is copied first and put back before every timed launch and once more at the end, so
// that the call's own launch finds it as given. A candidate whose launch fails is passed over;
// when every one fails, the first failure is returned and the key stays untuned.
Status tune_key(Kernel& kernel, AutotuneStore& store, CUstream stream, const taot_arg* args, std::size_t arg_count,
                const Grid* grid, const DeviceFacts& device, const std::vector<std::int64_t>& key,
                const std::vector<AutotuneCandidate>& candidates, Status* persisted);

}  // namespace taot::detail
