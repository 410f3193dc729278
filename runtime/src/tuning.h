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

#include "taot/kernel_table.h"
#include "taot/status.h"
#include "taot/tuning_file.h"

namespace taot::detail {

// A table made at run time (a file checked against the kernel); view() is valid while it lives
// and is not changed.
using OwnedTable = ResolvedTuning;

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
// any number of threads may read one at once.
class TuningSet {
 public:
  // The baked tables of `kernel`.
  static std::unique_ptr<TuningSet> baked(const table::KernelTable& kernel);
  // A copy of `base` in which `table` replaces the table for the same device (names compared as
  // same_device_name does), or to which it is added.
  static std::unique_ptr<TuningSet> with(const TuningSet& base, OwnedTable table);

  // The table for the device named `device_name` ('_' and ' ' alike), else the any-device table,
  // else null. Allocates nothing.
  const table::TunedTable* for_device(std::string_view device_name) const noexcept;
  bool empty() const noexcept { return views_.empty(); }
  std::size_t size() const noexcept { return views_.size(); }

 private:
  // Per table: its view, its device name, and for a loaded table the table itself (null: baked).
  std::vector<table::TunedTable> views_;
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
  std::atomic<const TuningSet*> current_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<const TuningSet>> sets_;
};

// Loads into `holder` every *.json file of $TAOT_TUNING_DIR/<library>/<kernel>/ (in name order, so
// of two files for one device the later wins) when the variable is set and that folder exists.
// Fails naming the file on the first bad one; the files before it stay loaded.
Status load_tuning_directory(TuningHolder& holder, const table::KernelTable& kernel);

}  // namespace taot::detail
