// Evaluation of a variant's grid programs (postfix, constexprs folded in by taot compile): the
// common shapes decoded once per variant (GridPlan), any program by a small stack machine.
#pragma once

#include <array>
#include <cstdint>

#include "taot/runtime.h"

namespace taot::detail {

// The CUDA limits on grid dimensions (blocks).
inline constexpr std::int64_t kMaxGridX = 2147483647;
inline constexpr std::int64_t kMaxGridYZ = 65535;

// A variant's grid programs decoded once (KernelState keeps one per variant), so that a launch
// evaluates the common shape in a few instructions: x a constant or cdiv(n, BLOCK) of an int
// argument n and a positive constant BLOCK, y and z constants. Immutable; any thread may use it.
class GridPlan {
 public:
  GridPlan() = default;
  explicit GridPlan(const table::Variant& variant) noexcept;

  // Writes the grid for `args` and returns true when the grid has the common shape and every
  // dimension is within the CUDA limits, y and z positive (x is 0 when n is); false (nothing
  // decided) when evaluate_grid must run, which gives the same grid for every program, and the
  // launch's checks.
  bool evaluate(const taot_arg* args, std::array<std::int64_t, 3>& grid) const noexcept {
    if (!common_) return false;
    std::int64_t x = x_;
    if (x_arg_ != kNoArg) {
      const std::int64_t n = args[x_arg_].integer;
      if (n < 0) return false;
      // n + BLOCK - 1 fits in 64 unsigned bits; BLOCK a power of two (the usual case) is a shift.
      const std::uint64_t rounded = static_cast<std::uint64_t>(n) + static_cast<std::uint64_t>(x_ - 1);
      x = static_cast<std::int64_t>(shift_ != kNoShift ? rounded >> shift_ : rounded / static_cast<std::uint64_t>(x_));
      if (x > kMaxGridX) return false;
    }
    grid = {x, y_, z_};
    return true;
  }

 private:
  static constexpr std::uint16_t kNoArg = 0xFFFF;
  static constexpr std::uint8_t kNoShift = 0xFF;
  std::int64_t x_ = 0;             // the constant x, or BLOCK
  std::uint32_t y_ = 0, z_ = 0;
  std::uint16_t x_arg_ = kNoArg;   // n, or kNoArg for a constant x
  std::uint8_t shift_ = kNoShift;  // log2 of a power-of-two BLOCK, else kNoShift
  bool common_ = false;
};

// Writes the three grid dimensions of `variant` for `args` to `grid`; `num_sms` is what the
// num_sms op pushes (the launching device's multiprocessor count; only read by grids that use it).
// Fails with TAOT_INVALID_ARGUMENT on a negative dimension or a division by zero, naming the
// kernel and the grid expression.
Status evaluate_grid(const table::KernelTable& table, const table::Variant& variant, const taot_arg* args,
                     std::int64_t num_sms, std::array<std::int64_t, 3>& grid);

// Whether any grid program of the kernel reads the device's multiprocessor count.
bool grid_uses_num_sms(const table::KernelTable& table) noexcept;

}  // namespace taot::detail
