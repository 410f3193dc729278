// Variant selection: a kernel's variants as bitsets per (argument, observed fact), per (config
// field, value) and, when the variants have images for different targets, per device arch, so
// that a call is a few ANDs and a find-first-set.
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
// What a launch reads comes first and together (the kernel's state puts it in the cache line it
// starts), since a driver's launch call in between leaves little of it in the nearest caches.
class DispatchIndex {
 public:
  static constexpr std::size_t kMaxMemo = 1 << 16;  // entries of the automatic-selection memo

  // Fails with TAOT_INTERNAL when the table is malformed (a bug in the generator).
  static Expected<DispatchIndex> build(const table::KernelTable& table);

  // The variant to launch for `args` under `selection`, or an error that names the argument, the
  // predicate it failed and what was compiled. For a device-aware index, automatic and config
  // selection consider only the variants `device` runs (all of them when `device` is null);
  // exact variant selection ignores the device. Ignores the kernel's rules: a kernel with rules
  // chooses through choose() (which uses this only for exact variants).
  Expected<std::size_t> select(const taot_arg* args, std::size_t arg_count, const Selection& selection,
                               const DeviceFacts* device = nullptr) const;

  // The variant to launch and the step that chose it (docs/runtime.md, "How a launch picks its
  // config"). For a kernel with rules (has_rules()) this walks the steps: the caller's config, the
  // tuned table `tuned` (this device's, or null), the heuristics, the default, each keeping to the
  // requirements; `num_sms` is what rules read as num_sms. Without rules it is select().
  Expected<Choice> choose(const taot_arg* args, std::size_t arg_count, const Selection& selection,
                          const DeviceFacts* device, const table::TunedTable* tuned, std::int64_t num_sms) const;

  // choose()'s answer when the choice cache holds it (true, `*choice` set); false when choose()
  // must decide: a kernel without rules, a variant asked for by index, or not seen yet. Automatic
  // choices and those for an asked config alike. Allocates nothing; the launch path's way in.
  bool cached(const taot_arg* args, std::size_t arg_count, const Selection& selection, const DeviceFacts* device,
              const table::TunedTable* tuned, std::int64_t num_sms, Choice* choice) const noexcept;

  // Whether the kernel has heuristics, requirements or a tuning key, so that its choice depends
  // on argument values (its automatic choices are cached by those values, not memoized by facts).
  bool has_rules() const noexcept { return has_rules_; }

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

  // The memo slot of `args` (mixed radix over their facts, then the device's arch class); false
  // when an argument shows a fact no variant has (a pointer dtype none takes).
  bool memo_key(const taot_arg* args, const DeviceFacts* device, std::size_t* key) const noexcept;
  // The index of `arch` in arch_classes_, or arch_classes_.size() when no variant runs there.
  std::size_t arch_class(int arch) const noexcept;
  // The variants `device` runs, for a device-aware index and a known device; else null (all).
  const std::uint64_t* runnable(const DeviceFacts* device) const noexcept {
    if (!device_aware_ || device == nullptr) return nullptr;
    return &runnable_masks_[arch_class(device->arch) * words_];
  }
  // Selection by bitsets, without the memo.
  Expected<std::size_t> select_by_masks(const taot_arg* args, const Selection& selection,
                                        const DeviceFacts* device) const;
  Status check_arity(std::size_t arg_count) const;
  Status explain_miss(const taot_arg* args, const Selection& selection, const DeviceFacts* device) const;
  Status explain_variant_rejects(std::size_t variant, const taot_arg* args) const;
  std::string compiled_choices(std::size_t arg_index, const std::vector<std::uint64_t>& among) const;

  // Checks the kernel's rules (programs, heuristic fields, tuning key, tuned tables) so that
  // evaluating them never reads out of bounds; records which run on the int64 evaluator.
  Status check_rules();

  friend class RuleSteps;  // choose() for kernels with rules (choose.cpp)

  // Automatic choices of a kernel with rules, remembered by everything they depend on: the
  // arguments' facts (and the device's arch class), num_sms, the tuned table in force, and the
  // values of the arguments the rules and the tuning key read. A small direct-mapped cache of
  // whole keys (no hash is trusted alone), each slot a seqlock over atomics starting a cache line,
  // so that threads read and fill it without a lock and a torn entry is never used.
  // Key words: the memo slot | num_sms << 16, the tuned table's address, one per keyed argument.
  // Choices for a config the caller asked for (the fields it sets, as bind() and config keywords
  // pass them) are remembered too, their key the same words with the address's low bit set (no
  // automatic key has it) and then the asked value indexes, a byte each.
  static_assert(kMaxMemo <= std::size_t{1} << 16, "memo slots fill the low 16 bits of a choice key");
  static constexpr std::size_t kChoiceSlotBits = 8;
  static constexpr std::size_t kChoiceSlots = std::size_t{1} << kChoiceSlotBits;
  static constexpr std::size_t kMaxKeyedArgs = 6;
  static constexpr std::size_t kMaxConfigWords = 2;  // configs of up to 16 fields, each of up to 255 values
  static constexpr std::size_t kChoiceKeyWords = 2 + kMaxKeyedArgs + kMaxConfigWords;
  struct alignas(64) ChoiceSlot {
    std::atomic<std::uint32_t> sequence{0};  // odd while being written
    std::atomic<std::uint64_t> choice{0};    // variant << 8 | step, + 1; 0: empty
    std::atomic<std::uint64_t> key[kChoiceKeyWords];
  };
  // How the key reads an argument the rules or the tuning key read by value: the bits of its value
  // below the top `dropped_bits` (all 64 for ints, bools and fp64s; for fp32s the low 32 of the
  // union, an fp32's), or for a pointer whether it is null. Four bytes, so that the six fit in the
  // index's first lines beside its header.
  struct KeyedArg {
    std::uint16_t index;
    std::uint8_t dropped_bits;  // 0, or 32 for an fp32
    bool non_null;
  };
  // The key of an automatic choice for `args` (2 + keyed_count_ words) and its slot in the cache,
  // or false when the choice is not cached.
  bool choice_key(const taot_arg* args, const DeviceFacts* device, const table::TunedTable* tuned,
                  std::int64_t num_sms, std::uint64_t* key, std::size_t* slot) const noexcept;
  // Extends an automatic choice's key (2 + keyed_count_ words) to the choice for the config
  // `fields` asks for, moving *slot and adding to *words; false when the config does not fit the
  // key (too many fields or values, or a value that was not compiled: the walk reports it).
  bool add_config_key(const FieldRequest* fields, std::uint64_t* key, std::size_t* words,
                      std::size_t* slot) const noexcept;
  // A key's slot: Fibonacci hashing of its words from a hash of 0, each step multiplying by
  // 2^64 / phi, so that every bit of every word reaches the top bits, which pick the slot.
  static std::uint64_t hash_word(std::uint64_t hash, std::uint64_t word) noexcept {
    return (hash ^ word) * 0x9e3779b97f4a7c15ULL;
  }
  static std::size_t slot_of_hash(std::uint64_t hash) noexcept {
    return static_cast<std::size_t>(hash >> (64 - kChoiceSlotBits));
  }
  // The choice remembered for the first `words` words of `key` in `slot`, or false.
  bool cached_choice(const std::uint64_t* key, std::size_t words, std::size_t slot, Choice* choice) const noexcept;
  void remember_choice(const std::uint64_t* key, std::size_t words, std::size_t slot,
                       const Choice& choice) const noexcept;

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

  // What every launch reads, first (the memo, the choice cache, and how to make their keys):
  std::uint16_t arg_count_;
  bool has_rules_ = false;
  bool device_aware_ = false;         // arch_classes_ is not empty
  std::uint8_t pointer_terms_ = 0;    // terms_[0, pointer_terms_) are pointers,
  std::uint8_t int_terms_ = 0;        // the next int_terms_ ints
  bool has_other_terms_ = false;      // other_terms_ is not empty
  std::uint8_t keyed_count_ = 0;      // keyed_args_ in use
  // Automatic selections memoized by the arguments' facts (mixed radix over the arguments' fact
  // counts, then the arch class): -1 until first seen. Absent when the fact space is too large to
  // tabulate.
  std::unique_ptr<std::atomic<std::int32_t>[]> memo_;
  // The cache of automatic choices (absent without rules, when the facts are not memoized, or
  // when the rules read more than kMaxKeyedArgs arguments by value).
  std::unique_ptr<ChoiceSlot[]> choice_cache_;
  KeyedArg keyed_args_[kMaxKeyedArgs] = {};  // the call arguments that key the choice cache by value
  FactTerm terms_[kInlineTerms] = {};  // the memo slot's digits (arguments whose facts vary), inline

  // The rest, for selection without the memo and for messages:
  const table::KernelTable* table_;
  std::vector<OtherTerm> other_terms_;
  std::string qualified_name_;
  std::size_t words_;
  std::vector<std::uint16_t> default_config_;  // the default value index of each config field
  // Per heuristic and per requirement: it reads no float, so the int64 evaluator runs it.
  std::vector<std::uint8_t> integer_heuristics_, integer_requirements_;
  std::vector<std::uint32_t> order_;     // bit -> variant index
  std::vector<std::uint32_t> position_;  // variant index -> bit
  std::vector<std::size_t> arg_fact_offset_;
  std::vector<std::uint64_t> fact_masks_;
  std::vector<std::size_t> field_value_offset_;
  std::vector<std::uint64_t> value_masks_;
  // Per argument, the slot of each taot_dtype value in the argument's type list (-1: none).
  std::vector<DtypeSlots> dtype_slots_;
  // Device-aware indexes only (else empty): every arch a device may have that some variant runs
  // (each minor of each major an image was built for), and per arch class the variants with an
  // image that arch runs (pick_image), then an all-zero mask for every other arch.
  std::vector<int> arch_classes_;
  std::vector<std::uint64_t> runnable_masks_;
};

// The image of `variant` a device of compute capability `arch` runs: an exact match first, else
// the newest portable (not arch-specific) image of the same major version that is not newer than
// the device; null when there is none.
inline const table::Image* pick_image(const table::Variant& variant, int arch) noexcept {
  const table::Image* best = nullptr;
  for (std::uint16_t i = 0; i < variant.image_count; ++i) {
    const table::Image& image = variant.images[i];
    if (image.arch == arch) return &image;
    const bool compatible = !image.arch_specific && image.arch / 10 == arch / 10 && image.arch < arch;
    if (compatible && (best == nullptr || image.arch > best->arch)) best = &image;
  }
  return best;
}

inline std::size_t DispatchIndex::arch_class(int arch) const noexcept {
  std::size_t c = 0;
  while (c < arch_classes_.size() && arch_classes_[c] != arch) ++c;
  return c;
}

inline std::int64_t DispatchIndex::memoized(const taot_arg* args, std::size_t arg_count, const Selection& selection,
                                            const DeviceFacts* device) const noexcept {
  if (!memo_ || selection.fields() != nullptr || selection.is_variant() || arg_count != arg_count_) return -1;
  std::size_t key = 0;
  if (!memo_key(args, device, &key)) return -1;
  return memo_[key].load(std::memory_order_relaxed);
}

inline bool DispatchIndex::memo_key(const taot_arg* args, const DeviceFacts* device, std::size_t* key) const noexcept {
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
    slot += arch_class(device->arch);
  }
  *key = slot;
  return true;
}

inline bool DispatchIndex::cached(const taot_arg* args, std::size_t arg_count, const Selection& selection,
                                  const DeviceFacts* device, const table::TunedTable* tuned, std::int64_t num_sms,
                                  Choice* choice) const noexcept {
  if (!choice_cache_ || selection.is_variant() || arg_count != arg_count_) return false;
  std::uint64_t key[kChoiceKeyWords];
  std::size_t words = 2 + keyed_count_;
  std::size_t slot = 0;
  if (!choice_key(args, device, tuned, num_sms, key, &slot)) return false;
  if (TAOT_UNLIKELY(selection.fields() != nullptr) && !add_config_key(selection.fields(), key, &words, &slot))
    return false;
  return cached_choice(key, words, slot, choice);
}

inline bool DispatchIndex::choice_key(const taot_arg* args, const DeviceFacts* device, const table::TunedTable* tuned,
                                      std::int64_t num_sms, std::uint64_t* key, std::size_t* slot) const noexcept {
  std::size_t facts = 0;
  if ((static_cast<std::uint64_t>(num_sms) >> 48) != 0 || !memo_key(args, device, &facts)) return false;
  key[0] = facts | static_cast<std::uint64_t>(num_sms) << 16;
  key[1] = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(tuned));
  std::uint64_t hash = hash_word(hash_word(0, key[0]), key[1]);  // made as the words are
  std::uint64_t* word = key + 2;
  for (const KeyedArg* keyed = keyed_args_; keyed != keyed_args_ + keyed_count_; ++keyed) {
    const std::uint64_t bits =
        static_cast<std::uint64_t>(args[keyed->index].integer) << keyed->dropped_bits >> keyed->dropped_bits;
    const std::uint64_t pointer = std::uint64_t{0} - keyed->non_null;  // all ones for a pointer: no branch
    const std::uint64_t read = (bits & ~pointer) | (std::uint64_t{bits != 0} & pointer);
    *word++ = read;
    hash = hash_word(hash, read);
  }
  *slot = slot_of_hash(hash);
  return true;
}

inline bool DispatchIndex::cached_choice(const std::uint64_t* key, std::size_t words, std::size_t slot,
                                         Choice* choice) const noexcept {
  const ChoiceSlot& entry = choice_cache_[slot];
  // Acquire loads of the entry, so that the second read of the sequence comes after them (a seqlock
  // without fences, which ThreadSanitizer cannot follow): an entry being written changes it.
  const std::uint32_t before = entry.sequence.load(std::memory_order_acquire);
  const std::uint64_t packed = entry.choice.load(std::memory_order_acquire);
  if ((before & 1U) != 0 || packed == 0) return false;
  if (entry.key[0].load(std::memory_order_acquire) != key[0] || entry.key[1].load(std::memory_order_acquire) != key[1])
    return false;
  for (std::size_t w = 2; w < words; ++w)
    if (entry.key[w].load(std::memory_order_acquire) != key[w]) return false;
  if (entry.sequence.load(std::memory_order_relaxed) != before) return false;
  choice->variant = static_cast<std::size_t>((packed - 1) >> 8);
  choice->step = static_cast<Step>((packed - 1) & 0xFF);
  return true;
}

}  // namespace taot::detail
