// The rule chooser: how a launch picks its variant when the kernel has rules (heuristics,
// requirements, a tuning key), and the cache of the choices made, on top of a FactIndex that it
// reads through the index's public functions only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "branch_hints.h"
#include "device.h"
#include "dispatch.h"
#include "taot/runtime.h"

namespace taot::detail {

struct RuleFacts;  // what the walk reads of the rules beyond the index (choose.cpp)
class AutotuneStore;
struct AutotuneCandidate;

// The tables a choice reads beside the rules: the tuned table in force on the device (or null),
// and first-call autotuning's results (null when it is off for the kernel), with the word that
// keys choices made with them (AutotuneStore::choice_word; 0 when off).
struct TuningInForce {
  const table::TunedTable* tuned = nullptr;
  const AutotuneStore* autotuned = nullptr;
  std::uint64_t autotune_word = 0;
};

// Built once per kernel from its FactIndex, and used with that index only (each call takes it).
// Immutable afterwards but for the choice cache, which threads read and fill without a lock, so
// any thread may call it.
// What a launch reads comes first and together: the kernel's state puts it in the cache line it
// starts, just before the index.
class RuleChooser {
 public:
  // Checks the kernel's rules (programs, heuristic fields, tuning key, tuned tables) so that
  // evaluating them never reads out of bounds, and records which run on the int64 evaluator.
  // Fails with TAOT_INTERNAL when they are malformed (a bug in the generator).
  static Expected<RuleChooser> build(const FactIndex& index);

  RuleChooser(RuleChooser&&) noexcept;
  ~RuleChooser();

  // The variant to launch and the step that chose it (docs/runtime.md, "How a launch picks its
  // config"). For a kernel with rules (has_rules()) this walks the steps: the caller's config, the
  // tuned table (`tuning.tuned`: this device's, or null), else first-call autotuning's result for
  // the call's key, the heuristics, the default, each keeping to the requirements; `num_sms` is
  // what rules read as num_sms. Without rules it is index.select(). `*untuned` (when given) says
  // whether first-call autotuning applies but the key was not tuned yet: the choice is then the
  // later steps', and it is not remembered.
  Expected<Choice> choose(const FactIndex& index, const taot_arg* args, std::size_t arg_count,
                          const Selection& selection, const DeviceFacts* device, const TuningInForce& tuning,
                          std::int64_t num_sms, bool* untuned = nullptr) const;

  // What first-call autotuning times for these arguments: the call's key values (`*key`, left
  // empty when the call has no key: the caller leaves a key field to the runtime) and the
  // candidates, one per distinct combination of the kernel's timed fields that has a variant for
  // the arguments (see RuleSteps::autotune_candidates in choose.cpp).
  Status autotune_candidates(const FactIndex& index, const taot_arg* args, std::size_t arg_count,
                             const Selection& selection, const DeviceFacts* device, std::int64_t num_sms,
                             std::vector<std::int64_t>* key, std::vector<AutotuneCandidate>* candidates) const;

  // choose()'s answer when the choice cache holds it (true, `*choice` set); false when choose()
  // must decide: a kernel without rules, a variant asked for by index, or not seen yet. Automatic
  // choices and those for an asked config alike. Allocates nothing; the launch path's way in.
  bool cached(const FactIndex& index, const taot_arg* args, std::size_t arg_count, const Selection& selection,
              const DeviceFacts* device, const TuningInForce& tuning, std::int64_t num_sms,
              Choice* choice) const noexcept;

  // Drops every remembered choice (first-call autotuning's results or switch changed). Thread-safe:
  // a choice being remembered meanwhile with the old state is keyed by the old epoch.
  void forget_choices() const noexcept;

  // Whether the kernel has heuristics, requirements or a tuning key, so that its choice depends
  // on argument values (its automatic choices are cached by those values, not memoized by facts).
  bool has_rules() const noexcept { return has_rules_; }

 private:
  RuleChooser();

  // Automatic choices of a kernel with rules, remembered by everything they depend on: the
  // arguments' facts (and the device's arch class), num_sms, the tuned table in force and
  // first-call autotuning's word, and the values of the arguments the rules and the tuning key read. A small direct-mapped cache of
  // whole keys (no hash is trusted alone), each slot a seqlock over atomics starting a cache line,
  // so that threads read and fill it without a lock and a torn entry is never used.
  // Key words: the memo slot | num_sms << 16, the tuned table's address | the autotune word, one
  // per keyed argument.
  // Choices for a config the caller asked for (the fields it sets, as bind() and config keywords
  // pass them) are remembered too, their key the same words with the address's low bit set (no
  // automatic key has it) and then the asked value indexes, a byte each.
  static_assert(FactIndex::kMaxMemo <= std::size_t{1} << 16, "memo slots fill the low 16 bits of a choice key");
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
  // chooser's first line.
  struct KeyedArg {
    std::uint16_t index;
    std::uint8_t dropped_bits;  // 0, or 32 for an fp32
    bool non_null;
  };
  // The key of an automatic choice for `args` (2 + keyed_count_ words) and its slot in the cache,
  // or false when the choice is not cached.
  bool choice_key(const FactIndex& index, const taot_arg* args, const DeviceFacts* device,
                  const TuningInForce& tuning, std::int64_t num_sms, std::uint64_t* key,
                  std::size_t* slot) const noexcept;
  // Extends an automatic choice's key (2 + keyed_count_ words) to the choice for the config
  // `fields` asks for, moving *slot and adding to *words; false when the config does not fit the
  // key (too many fields or values, or a value that was not compiled: the walk reports it).
  static bool add_config_key(const FactIndex& index, const FieldRequest* fields, std::uint64_t* key,
                             std::size_t* words, std::size_t* slot) noexcept;
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

  // What every launch of a kernel with rules reads, first (the choice cache and how to key it):
  // The cache of automatic choices (absent without rules, when the index does not memoize facts,
  // or when the rules read more than kMaxKeyedArgs arguments by value).
  std::unique_ptr<ChoiceSlot[]> choice_cache_;
  bool has_rules_ = false;
  std::uint8_t keyed_count_ = 0;             // keyed_args_ in use
  KeyedArg keyed_args_[kMaxKeyedArgs] = {};  // the call arguments that key the choice cache by value
  // The rest, for the walk: out of line, so that the index after the chooser starts close to the
  // kernel state's first line.
  std::unique_ptr<const RuleFacts> rules_;
};

inline bool RuleChooser::cached(const FactIndex& index, const taot_arg* args, std::size_t arg_count,
                                const Selection& selection, const DeviceFacts* device,
                                const TuningInForce& tuning, std::int64_t num_sms, Choice* choice) const noexcept {
  if (!choice_cache_ || selection.is_variant() || arg_count != index.arg_count()) return false;
  std::uint64_t key[kChoiceKeyWords];
  std::size_t words = 2 + keyed_count_;
  std::size_t slot = 0;
  if (!choice_key(index, args, device, tuning, num_sms, key, &slot)) return false;
  if (TAOT_UNLIKELY(selection.fields() != nullptr) &&
      !add_config_key(index, selection.fields(), key, &words, &slot))
    return false;
  return cached_choice(key, words, slot, choice);
}

inline bool RuleChooser::choice_key(const FactIndex& index, const taot_arg* args, const DeviceFacts* device,
                                    const TuningInForce& tuning, std::int64_t num_sms, std::uint64_t* key,
                                    std::size_t* slot) const noexcept {
  std::size_t facts = 0;
  if ((static_cast<std::uint64_t>(num_sms) >> 48) != 0 || !index.memo_key(args, device, &facts)) return false;
  key[0] = facts | static_cast<std::uint64_t>(num_sms) << 16;
  key[1] = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(tuning.tuned)) | tuning.autotune_word;
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

inline bool RuleChooser::cached_choice(const std::uint64_t* key, std::size_t words, std::size_t slot,
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
