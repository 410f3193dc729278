// Variant selection: a kernel's variants as bitsets per (argument, observed fact) and per
// (config field, value), so that a call is a few ANDs and a find-first-set.
#pragma once

#include <cstddef>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "arg_kinds.h"
#include "taot/runtime.h"

namespace taot::detail {

// Built once per kernel from its table; immutable afterwards, so any thread may read it.
// Bits are in preference order: bit 0 is the variant preferred over all others (most config
// fields equal to the default, then most specialized, then manifest order), so the first set
// bit of a candidate set is the one to launch.
class DispatchIndex {
 public:
  static constexpr std::size_t kMaxMemo = 1 << 16;  // entries of the automatic-selection memo

  // Fails with TAOT_INTERNAL when the table is malformed (a bug in the generator).
  static Expected<DispatchIndex> build(const table::KernelTable& table);

  // The variant to launch for `args` under `selection`, or an error that names the argument, the
  // predicate it failed and what was compiled.
  Expected<std::size_t> select(const taot_arg* args, std::size_t arg_count, const Selection& selection) const;

  // The variant an automatic selection already chose for arguments with the same facts, or -1
  // (not chosen yet, not an automatic selection, or an argument no variant takes): then select().
  std::int64_t memoized(const taot_arg* args, std::size_t arg_count, const Selection& selection) const noexcept;

  // The library-qualified kernel name used in messages, "vector_add::add_kernel".
  const std::string& qualified_name() const noexcept { return qualified_name_; }

 private:
  explicit DispatchIndex(const table::KernelTable& table);

  const std::uint64_t* fact_mask(std::size_t arg_index, int fact) const noexcept {
    return &fact_masks_[(arg_fact_offset_[arg_index] + static_cast<std::size_t>(fact)) * words_];
  }
  const std::uint64_t* value_mask(std::size_t field_index, std::size_t value_index) const noexcept {
    return &value_masks_[(field_value_offset_[field_index] + value_index) * words_];
  }
  // The index of the requested value in the field's value list, or -1.
  int value_index(std::size_t field_index, const FieldRequest& request) const noexcept;

  // The memo slot of `args` (mixed radix over their facts); false when an argument shows a fact
  // no variant has (a pointer dtype none takes).
  bool memo_key(const taot_arg* args, std::size_t* key) const noexcept;
  // Selection by bitsets, without the memo.
  Expected<std::size_t> select_by_masks(const taot_arg* args, const Selection& selection) const;
  Status check_arity(std::size_t arg_count) const;
  Status explain_miss(const taot_arg* args, const Selection& selection) const;
  Status explain_variant_rejects(std::size_t variant, const taot_arg* args) const;
  std::string compiled_choices(std::size_t arg_index, const std::vector<std::uint64_t>& among) const;

  const table::KernelTable* table_;
  std::string qualified_name_;
  std::size_t words_;
  std::vector<std::uint32_t> order_;     // bit -> variant index
  std::vector<std::uint32_t> position_;  // variant index -> bit
  std::vector<std::size_t> arg_fact_offset_;
  std::vector<std::uint64_t> fact_masks_;
  std::vector<std::size_t> field_value_offset_;
  std::vector<std::uint64_t> value_masks_;
  // Per argument, the slot of each taot_dtype value in the argument's type list (-1: none).
  std::vector<DtypeSlots> dtype_slots_;
  // Automatic selections memoized by the arguments' facts (mixed radix over the arguments' fact
  // counts): -1 until first seen. Absent when the fact space is too large to tabulate.
  std::vector<std::size_t> fact_radix_;
  std::unique_ptr<std::atomic<std::int32_t>[]> memo_;
};

inline std::int64_t DispatchIndex::memoized(const taot_arg* args, std::size_t arg_count,
                                            const Selection& selection) const noexcept {
  if (!memo_ || selection.fields() != nullptr || selection.is_variant() || arg_count != table_->arg_count) return -1;
  std::size_t key = 0;
  if (!memo_key(args, &key)) return -1;
  return memo_[key].load(std::memory_order_relaxed);
}

inline bool DispatchIndex::memo_key(const taot_arg* args, std::size_t* key) const noexcept {
  std::size_t slot = 0;
  for (std::size_t a = 0; a < table_->arg_count; ++a) {
    const int fact = fact_of(table_->args[a], dtype_slots_[a], args[a]);
    if (fact < 0) return false;
    slot = slot * fact_radix_[a] + static_cast<std::size_t>(fact);
  }
  *key = slot;
  return true;
}

}  // namespace taot::detail
