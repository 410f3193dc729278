// The fact index, variant selection without rules: a kernel's variants as bitsets per (argument,
// observed fact), per (config field, value) and, when the variants have images for different
// targets, per device arch, so that a call is a few ANDs and a find-first-set.
#pragma once

#include <cstddef>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "arg_kinds.h"
#include "branch_hints.h"
#include "device.h"
#include "taot/runtime.h"

namespace taot::detail {

inline void set_bit(std::uint64_t* mask, std::size_t bit) noexcept { mask[bit / 64] |= std::uint64_t{1} << (bit % 64); }
inline bool test_bit(const std::uint64_t* mask, std::size_t bit) noexcept { return (mask[bit / 64] >> (bit % 64)) & 1U; }

// Built once per kernel from its table; immutable afterwards, so any thread may read it.
// Bits are in preference order: bit 0 is the variant preferred over all others (most config
// fields equal to the default, then most specialized, then manifest order), so the first set
// bit of a candidate set is the one to launch.
// What a launch reads comes first and together (the kernel's state puts it near the cache line it
// starts), since a driver's launch call in between leaves little of it in the nearest caches.
// Knows nothing of the kernel's rules: a kernel with rules chooses through its RuleChooser
// (choose.h), which reads this index through the public functions below.
class FactIndex {
 public:
  static constexpr std::size_t kMaxMemo = 1 << 16;  // entries of the automatic-selection memo

  // Fails with TAOT_INTERNAL when the table is malformed (a bug in the generator).
  static Expected<FactIndex> build(const table::KernelTable& table);

  // The variant to launch for `args` under `selection`, or an error that names the argument, the
  // predicate it failed and what was compiled. For a device-aware index, automatic and config
  // selection consider only the variants `device` runs (all of them when `device` is null);
  // exact variant selection ignores the device. Ignores the kernel's rules: a kernel with rules
  // chooses through RuleChooser::choose() (which uses this only for exact variants).
  Expected<std::size_t> select(const taot_arg* args, std::size_t arg_count, const Selection& selection,
                               const DeviceFacts* device = nullptr) const;

  // The variant an automatic selection already chose for arguments with the same facts (on a
  // device of the same arch, for a device-aware index), or -1 (not chosen yet, not an automatic
  // selection, or an argument no variant takes): then select(). For kernels without rules.
  std::int64_t memoized(const taot_arg* args, std::size_t arg_count, const Selection& selection,
                        const DeviceFacts* device = nullptr) const noexcept;

  // Whether the variants have images for different targets, so that selection needs the device.
  // Decided once at build; false in the common case, which then pays nothing for it.
  bool device_aware() const noexcept { return device_aware_; }

  // The library-qualified kernel name used in messages, "vector_add::add_kernel".
  const std::string& qualified_name() const noexcept { return qualified_name_; }

  // What a chooser reads (choose.h). Variant sets are bitsets of words() words in preference
  // order; variant_at() maps a bit back to the variant's index in the table.
  const table::KernelTable& table() const noexcept { return *table_; }
  std::size_t arg_count() const noexcept { return arg_count_; }
  std::size_t words() const noexcept { return words_; }
  std::size_t variant_at(std::size_t bit) const noexcept { return order_[bit]; }
  // The variants whose field `field_index` has its value_index-th compiled value.
  const std::uint64_t* value_mask(std::size_t field_index, std::size_t value_index) const noexcept {
    return &value_masks_[(field_value_offset_[field_index] + value_index) * words_];
  }
  // The index of the requested value in the field's value list, or -1.
  int value_index(std::size_t field_index, const FieldRequest& request) const noexcept;
  // The variants that accept `args` (and that `device` runs, for a device-aware index and a known
  // device) into `mask`; false when an argument shows a fact no variant has (explain_miss says
  // which). `args` holds table().arg_count values. Allocates nothing.
  bool accepting(const taot_arg* args, const DeviceFacts* device, std::uint64_t* mask) const noexcept;
  // Whether automatic selections are memoized (the fact space is small enough to tabulate): then
  // every memo_key() is below kMaxMemo.
  bool memoizes() const noexcept { return memo_ != nullptr; }
  // The memo slot of `args` (mixed radix over their facts, then the device's arch class); false
  // when an argument shows a fact no variant has (a pointer dtype none takes), or for a
  // device-aware index without a device.
  bool memo_key(const taot_arg* args, const DeviceFacts* device, std::size_t* key) const noexcept;
  // Why no variant (that `device` runs) accepts `args` under `selection`: the first config field
  // or argument that rules out the last candidates, with what was compiled. TAOT_INTERNAL when
  // some variant does accept them.
  Status explain_miss(const taot_arg* args, const Selection& selection, const DeviceFacts* device) const;

 private:
  explicit FactIndex(const table::KernelTable& table);

  const std::uint64_t* fact_mask(std::size_t arg_index, int fact) const noexcept {
    return &fact_masks_[(arg_fact_offset_[arg_index] + static_cast<std::size_t>(fact)) * words_];
  }
  // The class of `device`: the index of its arch in arch_classes_ (NVIDIA), or arch_classes_.size()
  // plus that of its gfx name in gfx_classes_ (AMD); device_classes() when no variant runs there.
  std::size_t device_class(const DeviceFacts& device) const noexcept;
  std::size_t device_classes() const noexcept { return arch_classes_.size() + gfx_classes_.size(); }
  // The variants `device` runs, for a device-aware index and a known device; else null (all).
  const std::uint64_t* runnable(const DeviceFacts* device) const noexcept {
    if (!device_aware_ || device == nullptr) return nullptr;
    return &runnable_masks_[device_class(*device) * words_];
  }
  // Selection by bitsets, without the memo.
  Expected<std::size_t> select_by_masks(const taot_arg* args, const Selection& selection,
                                        const DeviceFacts* device) const;
  Status check_arity(std::size_t arg_count) const;
  Status explain_variant_rejects(std::size_t variant, const taot_arg* args) const;
  std::string compiled_choices(std::size_t arg_index, const std::vector<std::uint64_t>& among) const;

  // One digit of the memo slot: an argument's fact times its weight (the product of the later
  // digits' counts); for a pointer, its dtypes' slots (unused for an int).
  struct FactTerm {
    DtypeSlots slots;
    std::uint32_t weight;
    std::uint16_t index;
  };
  static constexpr std::size_t kInlineTerms = 8;
  // A digit read by the kind's own fact_of (descriptors, pointers with None variants, and the
  // digits beyond kInlineTerms).
  struct OtherTerm {
    const table::Arg* arg;
    DtypeSlots slots;
    std::uint32_t index;
    std::uint32_t weight;
  };
  // The digits of other_terms_, or false when one shows a fact no variant has.
  bool other_facts(const taot_arg* args, std::size_t* slot) const noexcept;

  // What every launch reads, first (the memo and how to make its key, which the choice cache's
  // key starts with):
  std::uint16_t arg_count_;
  bool device_aware_ = false;         // arch_classes_ is not empty
  std::uint8_t pointer_terms_ = 0;    // terms_[0, pointer_terms_) are pointers,
  std::uint8_t int_terms_ = 0;        // the next int_terms_ ints
  bool has_other_terms_ = false;      // other_terms_ is not empty
  // Automatic selections memoized by the arguments' facts (mixed radix over the arguments' fact
  // counts, then the arch class): -1 until first seen. Absent when the fact space is too large to
  // tabulate.
  std::unique_ptr<std::atomic<std::int32_t>[]> memo_;
  FactTerm terms_[kInlineTerms] = {};  // the memo slot's digits (arguments whose facts vary), inline

  // The rest, for selection without the memo and for messages:
  const table::KernelTable* table_;
  std::vector<OtherTerm> other_terms_;
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
  // Device-aware indexes only (else empty): every arch an NVIDIA device may have that some variant
  // runs (each minor of each major an image was built for), every gfx name of an AMD image, and per
  // class (arch classes, then gfx classes) the variants with an image such a device runs
  // (pick_image), then an all-zero mask for every other device.
  std::vector<int> arch_classes_;
  std::vector<std::string> gfx_classes_;
  std::vector<std::uint64_t> runnable_masks_;
};

// The image of `variant` an NVIDIA device of compute capability `arch` runs: an exact match
// first, else the newest portable (not arch-specific) image of the same major version that is not
// newer than the device; null when there is none. AMD images are passed over.
inline const table::Image* pick_image(const table::Variant& variant, int arch) noexcept {
  const table::Image* best = nullptr;
  for (std::uint16_t i = 0; i < variant.image_count; ++i) {
    const table::Image& image = variant.images[i];
    if (image.vendor != table::Vendor::nvidia) continue;
    if (image.arch == arch) return &image;
    const bool compatible = !image.arch_specific && image.arch / 10 == arch / 10 && image.arch < arch;
    if (compatible && (best == nullptr || image.arch > best->arch)) best = &image;
  }
  return best;
}

// The image of `variant` an AMD device whose gfx name (without feature suffix) is `gfx` runs: the
// one built for that target; null when there is none.
inline const table::Image* pick_amd_image(const table::Variant& variant, std::string_view gfx) noexcept {
  for (std::uint16_t i = 0; i < variant.image_count; ++i) {
    const table::Image& image = variant.images[i];
    if (image.vendor == table::Vendor::amd && gfx == image.target) return &image;
  }
  return nullptr;
}

// The image of `variant` that `device` runs, by its vendor's rule; null when there is none.
inline const table::Image* pick_image(const table::Variant& variant, const DeviceFacts& device) noexcept {
  return device.vendor == table::Vendor::amd ? pick_amd_image(variant, device.gfx) : pick_image(variant, device.arch);
}

inline std::size_t FactIndex::device_class(const DeviceFacts& device) const noexcept {
  std::size_t c = 0;
  if (TAOT_LIKELY(device.vendor == table::Vendor::nvidia)) {
    while (c < arch_classes_.size() && arch_classes_[c] != device.arch) ++c;
    return c == arch_classes_.size() ? device_classes() : c;
  }
  while (c < gfx_classes_.size() && gfx_classes_[c] != device.gfx) ++c;
  return arch_classes_.size() + c;
}

inline std::int64_t FactIndex::memoized(const taot_arg* args, std::size_t arg_count, const Selection& selection,
                                        const DeviceFacts* device) const noexcept {
  if (!memo_ || selection.fields() != nullptr || selection.is_variant() || arg_count != arg_count_) return -1;
  std::size_t key = 0;
  if (!memo_key(args, device, &key)) return -1;
  return memo_[key].load(std::memory_order_relaxed);
}

inline bool FactIndex::memo_key(const taot_arg* args, const DeviceFacts* device, std::size_t* key) const noexcept {
  std::size_t slot = 0;
  int facts = 0;  // negative once a pointer shows a dtype no variant takes
  const FactTerm* term = terms_;
  for (const FactTerm* const end = term + pointer_terms_; term != end; ++term) {
    const taot_arg& value = args[term->index];
    const int fact = ArgKindRules<table::ArgKind::pointer>::fact_of_slot(dtype_slot(term->slots, value.dtype), value);
    facts |= fact;
    slot += static_cast<std::size_t>(fact) * term->weight;
  }
  if (facts < 0) return false;
  for (const FactTerm* const end = term + int_terms_; term != end; ++term)  // every int has a fact
    slot += static_cast<std::size_t>(ArgKindRules<table::ArgKind::int_scalar>::fact_of(args[term->index])) *
            term->weight;
  // (Off the common path: kept out of the straight run of a launch.)
  if (TAOT_UNLIKELY(has_other_terms_) && !other_facts(args, &slot)) return false;
  if (TAOT_UNLIKELY(device_aware_)) {
    if (device == nullptr) return false;  // no device to select for: not memoized
    slot += device_class(*device);
  }
  *key = slot;
  return true;
}

}  // namespace taot::detail
