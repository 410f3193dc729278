// What a Kernel keeps once built (its dispatch index, loaded functions, tuned tables), shared by
// the runtime's sources that implement Kernel.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arg_kinds.h"
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
// `attributes` are the image's launch attributes (clusters, cooperative grid, PDL), computed once
// at load; with none (`attribute_count` 0) launches go through cuLaunchKernel.
// `context_state` and `launch_name` let a launch record itself as the context's last (one store),
// which a later CUDA_ERROR_ASSERT names.
struct LoadedFunction {
  CUcontext context;
  std::uint64_t context_id;
  CUfunction function;
  const table::Image* image;
  LoadedFunction* next;
  CUlaunchAttribute attributes[4];
  unsigned attribute_count;
  ContextState* context_state = nullptr;   // where a launch records itself as the context's last
  const std::string* launch_name = nullptr;  // "library::kernel variant id", interned
};

struct KernelState {
  KernelState(DispatchIndex dispatch_index, const table::KernelTable& table)
      : index(std::move(dispatch_index)),
        functions(new std::atomic<LoadedFunction*>[table.variant_count]),
        expanded_ordinal(table.arg_count, 0),
        tuning(table) {
    for (std::size_t v = 0; v < table.variant_count; ++v) functions[v].store(nullptr, std::memory_order_relaxed);
    for (std::size_t a = 0; a < table.arg_count; ++a)
      if (!packs_in_place(table.args[a])) expanded_ordinal[a] = expanded_count++;
    uses_num_sms = grid_uses_num_sms(table);
    rules_read_num_sms = rules_use_num_sms(table);
  }

  // The choice for `args` on `device` (null: no current context): a kernel with rules takes the
  // tuned table for the device's name and its multiprocessor count.
  Expected<Choice> choose(const taot_arg* args, std::size_t arg_count, const Selection& selection,
                          const DeviceFacts* device) const {
    const table::TunedTable* tuned =
        index.has_rules() ? tuning.current().for_device(device != nullptr ? std::string_view(device->name)
                                                                            : std::string_view())
                          : nullptr;
    return index.choose(args, arg_count, selection, device, tuned, device != nullptr ? device->multiprocessors : 0);
  }

  // Whether choosing a variant needs the launching device beyond device-aware selection: for the
  // rules' num_sms or a tuned table (chosen by device name).
  bool choice_needs_device(const table::KernelTable& table) const noexcept {
    return index.has_rules() &&
           (rules_read_num_sms || (table.tuning_key_count > 0 && !tuning.current().empty()));
  }

  DispatchIndex index;
  std::unique_ptr<std::atomic<LoadedFunction*>[]> functions;  // per variant
  // Per call argument that does not pack in place (descriptors), its number among them: the index
  // of its entry in an image's tensordesc_meta; 0 for the others.
  std::vector<std::uint16_t> expanded_ordinal;
  std::uint16_t expanded_count = 0;  // 0: every argument packs in place (the common, fast case)
  bool uses_num_sms = false;         // some grid program reads the device's multiprocessor count
  bool rules_read_num_sms = false;   // some heuristic or requirement does
  TuningHolder tuning;               // baked tables, replaced per device by loaded ones
};

}  // namespace taot::detail
