// Grid programs: the common shapes decoded once (GridPlan), and a small stack machine over int64
// for any program, with Python's floor semantics for div and mod.
#include "grid.h"

#include <string>
#include <type_traits>

namespace taot::detail {
namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t quotient = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}

std::int64_t floor_mod(std::int64_t a, std::int64_t b) { return a - floor_div(a, b) * b; }

Status grid_error(const table::KernelTable& table, int dimension, const std::string& problem) {
  return Status::error(TAOT_INVALID_ARGUMENT, std::string(table.library) + "::" + table.name + ": grid[" +
                                                  std::to_string(dimension) + "] = " + table.grid_text[dimension] +
                                                  " " + problem);
}

}  // namespace

GridPlan::GridPlan(const table::Variant& variant) noexcept {
  const auto constant = [](const table::GridProgram& program, std::int64_t limit, auto* value) {
    if (program.length != 1 || program.code[0].op != table::GridOp::literal || program.code[0].value < 1 ||
        program.code[0].value > limit)
      return false;
    *value = static_cast<std::remove_pointer_t<decltype(value)>>(program.code[0].value);
    return true;
  };
  const table::GridProgram& x = variant.grid[0];
  if (x.length == 3 && x.code[0].op == table::GridOp::arg && x.code[1].op == table::GridOp::literal &&
      x.code[2].op == table::GridOp::cdiv && x.code[1].value > 0) {
    x_arg_ = x.code[0].arg;
    x_ = x.code[1].value;
    const auto block = static_cast<std::uint64_t>(x_);
    if ((block & (block - 1)) == 0) shift_ = static_cast<std::uint8_t>(__builtin_ctzll(block));
  } else if (!constant(x, kMaxGridX, &x_)) {
    return;
  }
  common_ = constant(variant.grid[1], kMaxGridYZ, &y_) && constant(variant.grid[2], kMaxGridYZ, &z_);
}

bool grid_uses_num_sms(const table::KernelTable& table) noexcept {
  for (std::uint32_t v = 0; v < table.variant_count; ++v)
    for (const table::GridProgram& program : table.variants[v].grid)
      for (std::uint16_t i = 0; i < program.length; ++i)
        if (program.code[i].op == table::GridOp::num_sms) return true;
  return false;
}

Status evaluate_grid(const table::KernelTable& table, const table::Variant& variant, const taot_arg* args,
                     std::int64_t num_sms, std::array<std::int64_t, 3>& grid) {
  if (variant.grid[0].length == 0)
    return Status::error(TAOT_INVALID_ARGUMENT, std::string(table.library) + "::" + table.name +
                                                    " has no grid of its own (it was built without one): give the "
                                                    "grid at launch (a taot::Grid, taot_launch_ex's grid, grid= "
                                                    "from Python)");
  constexpr int kStackDepth = 32;
  for (int d = 0; d < 3; ++d) {
    const table::GridProgram& program = variant.grid[d];
    std::int64_t stack[kStackDepth];
    int depth = 0;
    for (std::uint16_t i = 0; i < program.length; ++i) {
      const table::GridInstr& instr = program.code[i];
      if (instr.op == table::GridOp::literal || instr.op == table::GridOp::arg || instr.op == table::GridOp::num_sms) {
        if (depth == kStackDepth) return grid_error(table, d, "is too deep to evaluate");
        stack[depth++] = instr.op == table::GridOp::literal ? instr.value
                         : instr.op == table::GridOp::arg   ? args[instr.arg].integer
                                                            : num_sms;
        continue;
      }
      if (instr.op == table::GridOp::neg) {
        if (depth < 1) return grid_error(table, d, "is malformed");
        stack[depth - 1] = -stack[depth - 1];
        continue;
      }
      if (depth < 2) return grid_error(table, d, "is malformed");
      const std::int64_t right = stack[--depth];
      std::int64_t& left = stack[depth - 1];
      const bool divides = instr.op == table::GridOp::div || instr.op == table::GridOp::mod ||
                           instr.op == table::GridOp::cdiv;
      if (divides && right == 0) return grid_error(table, d, "divides by zero for these arguments");
      switch (instr.op) {
        case table::GridOp::add: left += right; break;
        case table::GridOp::sub: left -= right; break;
        case table::GridOp::mul: left *= right; break;
        case table::GridOp::div: left = floor_div(left, right); break;
        case table::GridOp::mod: left = floor_mod(left, right); break;
        case table::GridOp::cdiv: left = floor_div(left + right - 1, right); break;
        case table::GridOp::min: left = left < right ? left : right; break;
        case table::GridOp::max: left = left > right ? left : right; break;
        default: return grid_error(table, d, "has an unknown operation");
      }
    }
    if (depth != 1) return grid_error(table, d, "is malformed");
    if (stack[0] < 0) return grid_error(table, d, "is negative (" + std::to_string(stack[0]) + ") for these arguments");
    grid[static_cast<std::size_t>(d)] = stack[0];
  }
  return Status();
}

}  // namespace taot::detail
