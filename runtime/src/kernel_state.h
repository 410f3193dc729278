// What a Kernel keeps once built (its fact index and rule chooser, loaded functions, tuned
// tables), shared by the runtime's sources that implement Kernel.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arg_kinds.h"
#include "autotune.h"
#include "branch_hints.h"
#include "choose.h"
#include "context_state.h"
#include "dispatch.h"
#include "grid.h"
#include "rules.h"
#include "tuning.h"

namespace taot::detail {

// A variant's function in one context. Nodes form a per-variant list that launches read without a
// lock, newest first; they are added under the module cache's lock and removed only by unload().
// Launches find a node by context handle; a context re-created at the same address gets a new node
// (found first) once a launch with the old one fails.
// The members a launch reads come first, copied from the image at load: the block size, dynamic
// shared bytes, CTAs per cluster, whether it takes scratch, and its launch attributes (clusters,
// cooperative grid, PDL), with none (`attribute_count` 0) for a launch through cuLaunchKernel.
// `context_state` and `launch_name` let a launch record itself as the context's last (one store),
// which a later CUDA_ERROR_ASSERT names.
// On HIP (hip_launch.h) `context` stands for the device, `function` is a hipFunction_t and
// `context_state` is null.
struct LoadedFunction {
  CUcontext context;
  CUfunction function;
  LoadedFunction* next = nullptr;
  unsigned block_threads = 0;   // num_warps * warp_size (block_threads_of)
  std::uint32_t shared_bytes = 0;
  std::uint16_t num_ctas = 1;
  bool scratch = false;         // the image takes global or profile scratch
  unsigned attribute_count = 0;
  ContextState* context_state = nullptr;     // where a launch records itself as the context's last
  const std::string* launch_name = nullptr;  // "library::kernel variant id", interned
  std::uint64_t context_id = 0;
  const table::Image* image = nullptr;
  CUlaunchAttribute attributes[4] = {};
};

// The threads of a block of `image`: num_warps warps of its warp size (32 on NVIDIA, 64 on AMD's
// gfx942/gfx950).
inline unsigned block_threads_of(const table::Image& image) noexcept {
  return unsigned{image.num_warps} * image.warp_size;
}

// What a launch reads of a variant, in one cache line: its functions (a list per context; see
// LoadedFunction), its grid decoded, and its parameters (the call arguments passed, in order,
// copied inline when they fit). Made once per variant with the kernel's state, never moved.
struct alignas(64) VariantPlan {
  static constexpr std::size_t kInlineParams = 10;

  VariantPlan() = default;
  VariantPlan(const VariantPlan&) = delete;
  VariantPlan& operator=(const VariantPlan&) = delete;
  void plan(const table::Variant& variant) noexcept {
    grid = GridPlan(variant);
    param_count = variant.param_count;
    params = variant.params;
    if (param_count <= kInlineParams) {
      std::copy(variant.params, variant.params + param_count, inline_params);
      params = inline_params;
    }
    in_order = true;
    for (std::uint16_t p = 0; p < param_count; ++p) in_order = in_order && variant.params[p] == p;
  }

  std::atomic<LoadedFunction*> functions{nullptr};
  GridPlan grid;
  const std::uint16_t* params = nullptr;
  std::uint16_t param_count = 0;
  bool in_order = false;  // params are 0, 1, ..., param_count - 1 (every argument passed, in order)
  std::uint16_t inline_params[kInlineParams] = {};
};

// What rules read as num_sms: the device's multiprocessor count, 0 without a device.
inline std::int64_t num_sms_of(const DeviceFacts* device) noexcept {
  return device != nullptr ? device->multiprocessors : 0;
}

// Aligned to a cache line: the first holds what a launch reads first, these members' and the
// rule chooser's (its choice cache and the arguments that key it); the fact index starts the next
// (its memo and the first digits of its key).
struct alignas(64) KernelState {
  KernelState(FactIndex fact_index, RuleChooser rule_chooser, const table::KernelTable& table)
      : plans(new VariantPlan[table.variant_count]),
        tuning(table),
        chooser(std::move(rule_chooser)),
        index(std::move(fact_index)),
        autotuned(table),
        expanded_ordinal(table.arg_count, 0) {
    for (std::size_t v = 0; v < table.variant_count; ++v) plans[v].plan(table.variants[v]);
    for (std::size_t a = 0; a < table.arg_count; ++a)
      if (!packs_in_place(table.args[a])) expanded_ordinal[a] = expanded_count++;
    uses_num_sms = grid_uses_num_sms(table);
    launches_fast = expanded_count == 0 && !uses_num_sms;
    rules_read_num_sms = chooser.has_rules() && rules_use_num_sms(table);
    keyed_by_tuning = chooser.has_rules() && table.tuning_key_count > 0;
    tunes_at_first_call = keyed_by_tuning && table.autotune != nullptr;
    for (std::size_t f = 0; f < table.field_count; ++f) has_required_fields = has_required_fields || table.fields[f].required;
  }

  // First-call autotuning's state word (autotune_state()) with kAutotuning set when it is on for
  // this kernel; 0 when it is off. A launch reads it once.
  // What enabled() answered is kept with the state word it answered for (every switch moves the
  // epoch on), so that a launch reads two words and decides nothing.
  static constexpr std::uint64_t kAutotuning = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kAnswered = std::uint64_t{1} << 62;
  std::uint64_t autotuning() const noexcept {
    if (TAOT_LIKELY(!tunes_at_first_call)) return 0;
    const std::uint64_t state = autotune_state();
    std::uint64_t answer = autotuning_answer.load(std::memory_order_relaxed);
    if (TAOT_UNLIKELY((answer & ~(kAutotuning | kAnswered)) != state || (answer & kAnswered) == 0)) {
      answer = state | kAnswered | (autotuned.enabled(state) ? kAutotuning : 0);
      autotuning_answer.store(answer, std::memory_order_relaxed);
    }
    return (answer & kAutotuning) != 0 ? state | kAutotuning : 0;
  }

  // The tables in force for a kernel with rules on `device` (null: no current context) from the
  // tuning set `in_force`: its table for the device, and first-call autotuning's results when it is
  // on (`autotuning`, from autotuning()).
  TuningInForce tuning_for(const TuningSet& in_force, const DeviceFacts* device, std::uint64_t autotuning) const noexcept {
    TuningInForce tables;
    if (!chooser.has_rules()) return tables;
    tables.tuned = in_force.for_device(device);
    if (TAOT_UNLIKELY(autotuning != 0)) {
      tables.autotune_word = AutotuneStore::choice_word(autotuning, device);
      tables.autotuned = &autotuned;
    }
    return tables;
  }
  TuningInForce tuning_for(const DeviceFacts* device) const noexcept {
    return tuning_for(tuning.current(), device, autotuning());
  }

  // Whether choosing a variant needs the launching device: for device-aware selection, for the
  // rules' num_sms, for a tuned table chosen by device name, or for first-call autotuning's
  // results (kept per device) while it is on.
  bool choice_needs_device() const noexcept { return choice_needs_device(tuning.current(), autotuning()); }
  // The same with the tuning set in force and autotuning() already read (launch() reads them once).
  bool choice_needs_device(const TuningSet& in_force, std::uint64_t autotuning) const noexcept {
    return index.device_aware() || rules_read_num_sms || (keyed_by_tuning && in_force.names_devices()) ||
           autotuning != 0;
  }

  // What a launch reads first, together: the variants' plans, the flags, the tuned tables.
  std::unique_ptr<VariantPlan[]> plans;  // per variant
  std::uint16_t expanded_count = 0;      // 0: every argument packs in place (the common, fast case)
  bool uses_num_sms = false;             // some grid program reads the device's multiprocessor count
  bool launches_fast = false;            // launch() may take the common case (no descriptors, num_sms grids)
  bool rules_read_num_sms = false;       // some heuristic or requirement does
  bool keyed_by_tuning = false;          // the kernel has rules and a tuning key
  bool tunes_at_first_call = false;      // ... and says how to autotune at first call (switched on or off)
  mutable std::atomic<std::uint64_t> autotuning_answer{0};  // autotuning()'s last answer, with its state
  bool has_required_fields = false;      // some config field must be given at every launch (not by variant)
  TuningHolder tuning;                   // baked tables, replaced per device by loaded ones
  RuleChooser chooser;                   // used with `index` only
  FactIndex index;
  AutotuneStore autotuned;               // first-call autotuning's results and switch (off the launch path)
  // Per call argument that does not pack in place (descriptors), its number among them: the index
  // of its entry in an image's tensordesc_meta; 0 for the others.
  std::vector<std::uint16_t> expanded_ordinal;
};

}  // namespace taot::detail
