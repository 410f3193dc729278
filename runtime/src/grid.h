// Evaluation of a variant's grid programs (postfix, constexprs folded in by taot compile).
#pragma once

#include <array>
#include <cstdint>

#include "taot/runtime.h"

namespace taot::detail {

// Writes the three grid dimensions of `variant` for `args` to `grid`; `num_sms` is what the
// num_sms op pushes (the launching device's multiprocessor count; only read by grids that use it).
// Fails with TAOT_INVALID_ARGUMENT on a negative dimension or a division by zero, naming the
// kernel and the grid expression.
Status evaluate_grid(const table::KernelTable& table, const table::Variant& variant, const taot_arg* args,
                     std::int64_t num_sms, std::array<std::int64_t, 3>& grid);

// Whether any grid program of the kernel reads the device's multiprocessor count.
bool grid_uses_num_sms(const table::KernelTable& table) noexcept;

}  // namespace taot::detail
