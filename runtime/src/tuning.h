// A kernel's tuned tables at run time: the baked ones (KernelTable::tuned), replaced per device by
// tables loaded from files (Kernel::load_tuning, taot_kernel_load_tuning, $TAOT_TUNING_DIR), and
// the lookup of a key in a table.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "device.h"
#include "taot/kernel_table.h"
#include "taot/status.h"
#include "taot/tuning_file.h"

namespace taot::detail {

// A table made at run time (a file checked against the kernel); view() is valid while it lives
// and is not changed.
using OwnedTable = ResolvedTuning;

// The names of `kernel`'s tuning key, in order: call arguments' and config fields'.
std::vector<std::string> tuning_key_names(const table::KernelTable& kernel);

// Value `index` of config field `field` as a tuned-table file holds it (dtypes as taot_dtype
// integers, as resolve_tuning compares them).
TuningValue compiled_value(const table::ConfigField& field, std::size_t index);

// Checks `file` against `kernel` and converts it: the file's kernel (taot format) must be this
// one; its key names must be the kernel's tuning key (vLLM files: the kernel's tuning key must be
// one argument); every config field must be one of the kernel's and every value a compiled one;
// no key twice. Errors name the source, the entry's key, the field and the compiled values.
Expected<OwnedTable> resolve_tuning(const TuningFile& file, const table::KernelTable& kernel);

// The entry of `tuned` for `key` (`key_count` values, the kernel's tuning_key_count): per
// dimension in key order, among the entries whose earlier dimensions were chosen, the value
// nearest to the key's (the smaller on a tie) or, for TuningMatch::floor, the largest not above it
// (the smallest when every one is above). `tuned` has at least one entry. Allocates nothing; a
// binary search per dimension. Thread-safe.
std::size_t lookup_entry(const table::TunedTable& tuned, std::size_t key_count, const std::int64_t* key) noexcept;

// An immutable set of tables, one per device name ("" = any device). Replaced, never changed, so
// any number of threads may read one at once (what for_device answered per device is remembered
// inside, atomically).
class alignas(64) TuningSet {
 public:
  TuningSet() noexcept {
    for (std::atomic<std::uint16_t>& answer : by_device_) answer.store(0, std::memory_order_relaxed);
  }
  TuningSet(const TuningSet&) = delete;
  TuningSet& operator=(const TuningSet&) = delete;

  // The baked tables of `kernel`.
  static std::unique_ptr<TuningSet> baked(const table::KernelTable& kernel);
  // A copy of `base` in which `table` replaces the table for the same device (names compared as
  // same_device_name does), or to which it is added.
  static std::unique_ptr<TuningSet> with(const TuningSet& base, OwnedTable table);

  // The table for the device named `device_name` ('_' and ' ' alike), else the any-device table,
  // else null. Allocates nothing.
  const table::TunedTable* for_device(std::string_view device_name) const noexcept;
  // The same for `device`'s name ("" when null); a repeat for the same device costs a load.
  const table::TunedTable* for_device(const DeviceFacts* device) const noexcept {
    const std::uint32_t ordinal = device != nullptr ? device->ordinal : 0;
    if (ordinal < kRememberedDevices) {
      const std::uint16_t answer = by_device_[ordinal].load(std::memory_order_relaxed);
      if (answer != 0) return answer == 1 ? nullptr : &views_[answer - 2];
    }
    return remember_for_device(device);
  }
  bool empty() const noexcept { return views_.empty(); }
  std::size_t size() const noexcept { return views_.size(); }
  // Whether some table names a device (else the device does not matter: every one gets the
  // any-device table, or none).
  bool names_devices() const noexcept { return names_devices_; }

 private:
  const table::TunedTable* remember_for_device(const DeviceFacts* device) const noexcept;

  // What a launch reads, first: whether a table names a device, the views, and per device ordinal
  // below kRememberedDevices (0: no device) what for_device answered: 0 before the first ask, 1
  // for none, else the table's index + 2. Each answer is written once (every thread writes the
  // same), so that launches on many devices share the line without writing it.
  static constexpr std::size_t kRememberedDevices = 16;
  bool names_devices_ = false;
  std::vector<table::TunedTable> views_;
  mutable std::atomic<std::uint16_t> by_device_[kRememberedDevices];
  // Per table: its device name, and for a loaded table the table itself (null: baked).
  std::vector<std::string_view> devices_;
  std::vector<std::shared_ptr<const OwnedTable>> owned_;
};

// A kernel's current TuningSet. Launches read it without a lock; loads replace it under a mutex.
// Every set made is kept until the holder dies, since a launch may still read a replaced one (a
// load or reset adds one set: loads are rare, made by hand or at start-up).
class TuningHolder {
 public:
  explicit TuningHolder(const table::KernelTable& kernel);
  TuningHolder(const TuningHolder&) = delete;
  TuningHolder& operator=(const TuningHolder&) = delete;

  const TuningSet& current() const noexcept { return *current_.load(std::memory_order_acquire); }
  // Replaces the table for `table.device` (a run-time table replacing a baked one).
  void load(OwnedTable table);
  // Back to the baked tables.
  void reset();

 private:
  // current_ alone inline (launches read it); what loads change apart.
  struct Sets {
    std::mutex mutex;
    std::vector<std::unique_ptr<const TuningSet>> all;  // the baked set first
  };
  std::atomic<const TuningSet*> current_;
  std::unique_ptr<Sets> sets_;
};

// Loads into `holder` every *.json file of $TAOT_TUNING_DIR/<library>/<kernel>/ (in name order, so
// of two files for one device the later wins) when the variable is set and that folder exists.
// Fails naming the file on the first bad one; the files before it stay loaded.
Status load_tuning_directory(TuningHolder& holder, const table::KernelTable& kernel);

}  // namespace taot::detail
