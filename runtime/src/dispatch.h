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

#include "taot/runtime.h"

namespace taot::detail {

// Built once per kernel from its table; immutable afterwards, so any thread may read it.
// Bits are in preference order: bit 0 is the variant preferred over all others (most config
// fields equal to the default, then most specialized, then manifest order), so the first set
// bit of a candidate set is the one to launch.
class DispatchIndex {
 public:
  static constexpr std::size_t kDtypeSlots = 16;    // taot_dtype values are below this
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

  // The fact an argument value shows, an index into that argument's masks; -1 for a pointer whose
  // dtype no variant takes.
  int fact_of(std::size_t arg_index, const taot_arg& value) const noexcept;
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
  std::string describe_value(std::size_t arg_index, const taot_arg& value) const;
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
  // Per pointer argument, the slot of each taot_dtype value in the argument's type list (-1: none).
  std::vector<std::array<std::int8_t, kDtypeSlots>> dtype_slots_;
  // Automatic selections memoized by the arguments' facts (mixed radix over the arguments' fact
  // counts): -1 until first seen. Absent when the fact space is too large to tabulate.
  std::vector<std::size_t> fact_radix_;
  std::unique_ptr<std::atomic<std::int32_t>[]> memo_;
};

// Int facts: whether the value fits in 32 bits, times its divisibility class.
inline constexpr int kIntPlain = 0, kIntDiv16 = 1, kIntOne = 2, kIntClasses = 3;
// Descriptor facts: the dtype slot times (block index, or block_count for "no block given").
inline int block_fact(const table::Arg& arg, const taot_tensordesc& desc) noexcept;

inline int DispatchIndex::fact_of(std::size_t arg_index, const taot_arg& value) const noexcept {
  const table::Arg& arg = table_->args[arg_index];
  switch (arg.kind) {
    case table::ArgKind::pointer: {
      const auto dtype = static_cast<std::uint32_t>(value.dtype);
      const int slot = dtype < kDtypeSlots ? dtype_slots_[arg_index][dtype] : -1;
      return slot < 0 ? -1 : 2 * slot + ((value.address % 16) == 0 ? 1 : 0);
    }
    case table::ArgKind::int_scalar: {
      const std::int64_t integer = value.integer;
      const bool wide = integer < std::numeric_limits<std::int32_t>::min() ||
                        integer > std::numeric_limits<std::int32_t>::max();
      const int divisibility = integer == 1 ? kIntOne : (integer % 16 == 0 ? kIntDiv16 : kIntPlain);
      return (wide ? kIntClasses : 0) + divisibility;
    }
    case table::ArgKind::tensordesc: {
      const taot_tensordesc* desc = value.tensordesc;
      if (desc == nullptr || desc->rank != arg.rank) return -1;
      const auto dtype = static_cast<std::uint32_t>(desc->dtype);
      const int slot = dtype < kDtypeSlots ? dtype_slots_[arg_index][dtype] : -1;
      const int block = block_fact(arg, *desc);
      return slot < 0 || block < 0 ? -1 : slot * (arg.block_count + 1) + block;
    }
    default: return 0;
  }
}

// A descriptor's block fact: the index of its block_shape among the argument's compiled blocks,
// `block_count` when it gives none (all zero: any variant's block), -1 when no variant has it.
inline int block_fact(const table::Arg& arg, const taot_tensordesc& desc) noexcept {
  bool given = false;
  for (std::uint8_t d = 0; d < arg.rank; ++d) given = given || desc.block_shape[d] != 0;
  if (!given) return arg.block_count;
  for (std::uint16_t b = 0; b < arg.block_count; ++b) {
    const std::uint32_t* block = arg.blocks + std::size_t{b} * arg.rank;
    bool equal = true;
    for (std::uint8_t d = 0; d < arg.rank; ++d) equal = equal && block[d] == static_cast<std::uint32_t>(desc.block_shape[d]);
    if (equal) return b;
  }
  return -1;
}

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
    const int fact = fact_of(a, args[a]);
    if (fact < 0) return false;
    slot = slot * fact_radix_[a] + static_cast<std::size_t>(fact);
  }
  *key = slot;
  return true;
}

}  // namespace taot::detail
