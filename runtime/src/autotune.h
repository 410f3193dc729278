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

// The process's switch ($TAOT_AUTOTUNE, set_autotune) and the epoch, in one word that a launch
// reads once: bits 0-1 the mode (kEachKernel: each kernel's own default; kOff, kOn: for every
// kernel that can be tuned at first call), bit 2 set until $TAOT_AUTOTUNE was read, bits 8 and up
// the epoch, which counts changes of what first-call choices depend on (switches, results dropped
// or loaded), so that choices remembered before a change are not found after it.
inline constexpr std::uint64_t kEachKernel = 0, kOff = 1, kOn = 2, kModeBits = 3, kUnreadBit = 4;
inline constexpr unsigned kEpochShift = 8;
inline std::atomic<std::uint64_t> autotune_state_word{kUnreadBit};
std::uint64_t read_autotune_environment() noexcept;  // sets the mode from $TAOT_AUTOTUNE, once
inline std::uint64_t autotune_state() noexcept {
  const std::uint64_t state = autotune_state_word.load(std::memory_order_acquire);
  return (state & kUnreadBit) == 0 ? state : read_autotune_environment();
}
void bump_autotune_epoch() noexcept;
// The folder results persist in ($TAOT_AUTOTUNE_DIR, set_autotune_dir); "" for none.
std::string autotune_dir();

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

  // Whether launches tune this kernel at first call under `state` (autotune_state()): it can be
  // (table.autotune, a tuning key), and its own switch, else the process's, else the table's
  // default says so. Two loads; no call.
  bool enabled(std::uint64_t state) const noexcept {
    if (table_.autotune == nullptr || table_.tuning_key_count == 0) return false;
    const std::int8_t own = own_switch_.load(std::memory_order_relaxed);
    if (own >= 0) return own == 1;
    const std::uint64_t mode = state & kModeBits;
    return mode != kEachKernel ? mode == kOn : table_.autotune->at_first_call;
  }
  bool enabled() const noexcept { return enabled(autotune_state()); }
  // The kernel's own switch: on, off, or (nullopt) the process's.
  void set_enabled(std::optional<bool> on) noexcept;

  // What keys a choice made while tuning at first call is on (under `state`) on `device`, beside
  // the tuned table's address: a word of the top 16 bits (addresses stay below 2^47) from the
  // device's ordinal and the epoch. An epoch 256 changes old may be taken for the current one:
  // choices remembered across 256 switches of a running process may be stale.
  static std::uint64_t choice_word(std::uint64_t state, const DeviceFacts* device) noexcept {
    const std::uint64_t ordinal = device != nullptr ? device->ordinal & 0x7F : 0;
    return (std::uint64_t{0x8000} | ordinal << 8 | ((state >> kEpochShift) & 0xFF)) << 48;
  }

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
  // Writes results(device) to <autotune_dir()>/<library>/<kernel>/<device>.json through a file
  // renamed into place (a reader never sees half a file; writes of one store are one at a time, so
  // the last has every result). Nothing without a folder; fails naming the path.
  Status persist(const std::string& device) const;
  // Reads a file of results (taot's format) into the store: it must be for this kernel, of this
  // library and build (library_id: identity()), name a device, and hold compiled values only.
  // Choices already remembered are not told (the kernel reads its folder before its first choice).
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
  mutable std::mutex writing_;  // persist(), one at a time
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

// Tunes the call's key (`key`, on `device`) unless another thread has: times `candidates` on the
// call's own arguments on `stream` (quickly, then in full those within reach of the best, then the
// leaders in interleaved rounds), keeps the fastest in the store and writes the device's results
// to autotune_dir(). The memory of the kernel's reset_to_zero and restore_value arguments is copied
// first and put back before every timed launch and once more at the end, so that the call's own
// launch finds it as given. A candidate whose launch fails is passed over. What keeps the key from
// being timed (a driver that cannot time, no memory for the copies, every candidate failing) makes
// it take the later steps in this process, and is said in `*problem` (as is a failure to write the
// results), which a launch passes over and warmup() returns. Fails only when the memory could not
// be put back (the call must not launch on it).
Status tune_key(Kernel& kernel, AutotuneStore& store, CUstream stream, const taot_arg* args, std::size_t arg_count,
                const Grid* grid, const DeviceFacts& device, const std::vector<std::int64_t>& key,
                const std::vector<AutotuneCandidate>& candidates, Status* problem);

}  // namespace taot::detail
