// The launch observer (taot_set_launch_observer): one process-wide pointer that launches read with
// a relaxed atomic load; installed observers are kept until exit, since a launch may still be
// calling one that was replaced.
#pragma once

#include <atomic>

#include "taot/c_api.h"

namespace taot::detail {

inline std::atomic<const taot_launch_observer*> launch_observer{nullptr};

inline const taot_launch_observer* current_launch_observer() noexcept {
  return launch_observer.load(std::memory_order_acquire);
}

}  // namespace taot::detail
