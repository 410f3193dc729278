// Rule programs; see rules.h. Ints wrap on overflow (two's complement) instead of being undefined.
#include "rules.h"

#include <cmath>
#include <vector>

#include "config_fields.h"

namespace taot::detail {
namespace {

using table::RuleOp;

constexpr int kStackDepth = TAOT_RULE_STACK_DEPTH;

std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
std::int64_t wrap_sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
std::int64_t wrap_mul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

// Python's // on ints (b != 0); the one overflowing case, INT64_MIN // -1, wraps.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  if (b == -1) return wrap_sub(0, a);
  std::int64_t quotient = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}
std::int64_t floor_mod(std::int64_t a, std::int64_t b) { return b == -1 ? 0 : wrap_sub(a, wrap_mul(floor_div(a, b), b)); }

double real_floor_mod(double a, double b) {
  double remainder = std::fmod(a, b);
  if (remainder != 0.0 && ((remainder < 0) != (b < 0))) remainder += b;
  return remainder;
}

// triton.next_power_of_2 on 64-bit ints: the smallest power of two >= value; 0 for 0 and below.
std::int64_t next_power_of_2(std::int64_t value) {
  if (value <= 0) return 0;
  std::uint64_t n = static_cast<std::uint64_t>(value) - 1;
  for (int shift = 1; shift < 64; shift *= 2) n |= n >> shift;
  return static_cast<std::int64_t>(n + 1);
}

// -1, 0, 1 as int `i` compares with float `d` exactly (as Python compares them); 2 when d is NaN.
int compare_int_real(std::int64_t i, double d) {
  if (std::isnan(d)) return 2;
  if (d >= 9223372036854775808.0) return -1;  // 2^63: above every int64
  if (d < -9223372036854775808.0) return 1;
  const double whole = std::floor(d);
  const auto w = static_cast<std::int64_t>(whole);
  if (i != w) return i < w ? -1 : 1;
  return whole < d ? -1 : 0;
}

// a < b and a == b with Python's exact mixed int/float comparisons (NaN compares false).
bool less(const RuleValue& a, const RuleValue& b) {
  if (!a.is_real && !b.is_real) return a.integer < b.integer;
  if (a.is_real && b.is_real) return a.real < b.real;
  if (!a.is_real) return compare_int_real(a.integer, b.real) == -1;
  return compare_int_real(b.integer, a.real) == 1;
}
bool equal(const RuleValue& a, const RuleValue& b) {
  if (!a.is_real && !b.is_real) return a.integer == b.integer;
  if (a.is_real && b.is_real) return a.real == b.real;
  return compare_int_real(a.is_real ? b.integer : a.integer, a.is_real ? a.real : b.real) == 0;
}

// Python's float // (its divmod: floor of the exact quotient, not of the rounded a / b).
double real_floor_div(double a, double b) {
  const double remainder = std::fmod(a, b);
  double quotient = (a - remainder) / b;
  if (remainder != 0.0 && ((b < 0) != (remainder < 0))) quotient -= 1.0;
  if (quotient == 0.0) return std::copysign(0.0, a / b);
  const double whole = std::floor(quotient);
  return quotient - whole > 0.5 ? whole + 1.0 : whole;
}

// Whether call argument `index` is None: a null pointer, a None `scalar`; other kinds never are.
bool argument_is_none(const table::KernelTable& table, const taot_arg* args, std::uint16_t index) noexcept {
  switch (table.args[index].kind) {
    case table::ArgKind::pointer: return args[index].address == 0;
    case table::ArgKind::scalar: return args[index].dtype == TAOT_DTYPE_UNKNOWN;
    default: return false;
  }
}

// A `scalar` argument's value in its launch form; None reads as 0 (rules test it with `is None` first).
RuleValue scalar_value(const taot_arg& value) {
  if (value.dtype == TAOT_DTYPE_FP32) return RuleValue::of_real(value.real32);
  if (value.dtype == TAOT_DTYPE_FP64) return RuleValue::of_real(value.real64);
  return RuleValue::of_int(value.dtype == TAOT_DTYPE_I64 ? value.integer : 0);
}

RuleValue argument_value(const table::KernelTable& table, const taot_arg* args, std::uint16_t index) {
  const table::Arg& arg = table.args[index];
  if (arg.kind == table::ArgKind::scalar) return scalar_value(args[index]);
  if (arg.kind == table::ArgKind::float_scalar)
    return arg.type_count > 0 && arg.types[0] == TAOT_DTYPE_FP32 ? RuleValue::of_real(args[index].real32)
                                                                  : RuleValue::of_real(args[index].real64);
  if (arg.kind == table::ArgKind::pointer) return RuleValue::of_int(args[index].address == 0 ? 0 : 1);
  return RuleValue::of_int(args[index].integer);
}

RuleValue read_field(const table::KernelTable& table, const FieldSource& fields, std::uint16_t index) {
  if (fields.set != nullptr && fields.set[index]) return fields.values[index];
  return field_value(table.fields[index], fields.config[index]);
}

// The binary operation `op` of `a` and `b` into `a`; false on a division by zero.
bool apply_binary(RuleOp op, RuleValue& a, const RuleValue& b) {
  const bool ints = !a.is_real && !b.is_real;
  switch (op) {
    case RuleOp::add: a = ints ? RuleValue::of_int(wrap_add(a.integer, b.integer)) : RuleValue::of_real(a.as_real() + b.as_real()); return true;
    case RuleOp::sub: a = ints ? RuleValue::of_int(wrap_sub(a.integer, b.integer)) : RuleValue::of_real(a.as_real() - b.as_real()); return true;
    case RuleOp::mul: a = ints ? RuleValue::of_int(wrap_mul(a.integer, b.integer)) : RuleValue::of_real(a.as_real() * b.as_real()); return true;
    case RuleOp::div:
    case RuleOp::mod:
    case RuleOp::cdiv: {
      if (b.is_zero()) return false;
      if (ints) {
        const std::int64_t numerator = op == RuleOp::cdiv ? wrap_sub(wrap_add(a.integer, b.integer), 1) : a.integer;
        a = RuleValue::of_int(op == RuleOp::mod ? floor_mod(numerator, b.integer) : floor_div(numerator, b.integer));
      } else {
        const double numerator = op == RuleOp::cdiv ? a.as_real() + b.as_real() - 1.0 : a.as_real();
        a = RuleValue::of_real(op == RuleOp::mod ? real_floor_mod(numerator, b.as_real())
                                                 : real_floor_div(numerator, b.as_real()));
      }
      return true;
    }
    case RuleOp::min: if (less(b, a)) a = b; return true;
    case RuleOp::max: if (less(a, b)) a = b; return true;
    case RuleOp::eq: a = RuleValue::of_int(equal(a, b)); return true;
    case RuleOp::ne: a = RuleValue::of_int(!equal(a, b)); return true;
    case RuleOp::lt: a = RuleValue::of_int(less(a, b)); return true;
    case RuleOp::le: a = RuleValue::of_int(!less(b, a)); return true;
    case RuleOp::gt: a = RuleValue::of_int(less(b, a)); return true;
    case RuleOp::ge: a = RuleValue::of_int(!less(a, b)); return true;
    default: return true;
  }
}

// false when the operation does not take the value (next_power_of_2 of a float, as in Triton).
bool apply_unary(RuleOp op, RuleValue& a) {
  switch (op) {
    case RuleOp::neg: a = a.is_real ? RuleValue::of_real(-a.real) : RuleValue::of_int(wrap_sub(0, a.integer)); return true;
    case RuleOp::abs:
      if (a.is_real) a.real = std::fabs(a.real);
      else if (a.integer < 0) a.integer = wrap_sub(0, a.integer);
      return true;
    case RuleOp::logical_not: a = RuleValue::of_int(a.is_zero()); return true;
    case RuleOp::next_power_of_2:
      if (a.is_real) return false;
      a = RuleValue::of_int(next_power_of_2(a.integer));
      return true;
    default: return true;
  }
}

// How many values each operation pops (taot/rule_ops.h).
constexpr int kOperands[] = {
#define TAOT_RULE_OP_OPERANDS(op, name, operands) operands,
    TAOT_RULE_OPS(TAOT_RULE_OP_OPERANDS)
#undef TAOT_RULE_OP_OPERANDS
};
constexpr std::size_t kOpCount = sizeof(kOperands) / sizeof(kOperands[0]);

int operands_of(RuleOp op) { return static_cast<std::size_t>(op) < kOpCount ? kOperands[static_cast<std::size_t>(op)] : -1; }

}  // namespace

std::string rule_value_text(const RuleValue& value) {
  return value.is_real ? real_text(value.real) : std::to_string(value.integer);
}

RuleValue field_value(const table::ConfigField& field, std::size_t index) noexcept {
  if (field.kind == table::FieldKind::float_value) return RuleValue::of_real(field.float_values[index]);
  if (field.kind == table::FieldKind::string_value) return RuleValue::of_int(0);  // not readable by rules
  return RuleValue::of_int(field.int_values[index]);
}

RuleFault evaluate_rule(const table::RuleProgram& program, const table::KernelTable& table, const taot_arg* args,
                        const FieldSource& fields, std::int64_t num_sms, RuleValue* result) noexcept {
  RuleValue stack[kStackDepth];
  int depth = 0;
  std::uint16_t pc = 0;
  while (pc < program.length) {
    const table::RuleInstr& instr = program.code[pc++];
    switch (instr.op) {
      case RuleOp::lit:
      case RuleOp::flit:
      case RuleOp::arg:
      case RuleOp::isnone:
      case RuleOp::field:
      case RuleOp::num_sms:
        if (depth == kStackDepth) return RuleFault::malformed;
        stack[depth++] = instr.op == RuleOp::lit      ? RuleValue::of_int(instr.integer)
                         : instr.op == RuleOp::flit   ? RuleValue::of_real(instr.real)
                         : instr.op == RuleOp::arg    ? argument_value(table, args, instr.operand)
                         : instr.op == RuleOp::isnone ? RuleValue::of_int(argument_is_none(table, args, instr.operand))
                         : instr.op == RuleOp::field  ? read_field(table, fields, instr.operand)
                                                      : RuleValue::of_int(num_sms);
        break;
      case RuleOp::jz:
      case RuleOp::jnz: {
        if (depth < 1) return RuleFault::malformed;
        const bool zero = stack[--depth].is_zero();
        if (zero == (instr.op == RuleOp::jz)) pc = instr.operand;
        break;
      }
      case RuleOp::jmp: pc = instr.operand; break;
      default:
        const int operands = operands_of(instr.op);
        if (operands == 1) {
          if (depth < 1) return RuleFault::malformed;
          if (!apply_unary(instr.op, stack[depth - 1])) return RuleFault::not_an_integer;
        } else if (operands == 2) {
          if (depth < 2) return RuleFault::malformed;
          const RuleValue right = stack[--depth];
          if (!apply_binary(instr.op, stack[depth - 1], right)) return RuleFault::division_by_zero;
        } else {
          return RuleFault::malformed;
        }
    }
  }
  if (depth != 1) return RuleFault::malformed;
  *result = stack[0];
  return RuleFault::none;
}

const char* rule_problem(const table::RuleProgram& program, const table::KernelTable& table) {
  if (program.code == nullptr || program.length == 0) return "is empty";
  // The stack depth on entry to each instruction (and the end), -1 while no path reaches it.
  std::vector<int> depth_at(program.length + 1u, -1);
  depth_at[0] = 0;
  for (std::uint16_t i = 0; i < program.length; ++i) {
    const table::RuleInstr& instr = program.code[i];
    const int operands = operands_of(instr.op);
    if (operands < 0) return "has an operation the runtime does not know";
    const int depth = depth_at[i];
    if (depth < 0) return "has an instruction no path reaches";
    if (depth < operands) return "pops a value it does not have";
    switch (instr.op) {
      case RuleOp::arg:
      case RuleOp::isnone: {
        if (instr.operand >= table.arg_count) return "reads an argument out of range";
        const table::ArgKind kind = table.args[instr.operand].kind;
        if (instr.op == RuleOp::isnone && kind != table::ArgKind::pointer && kind != table::ArgKind::scalar)
          return "tests None on an argument that is never None";
        if (instr.op == RuleOp::arg && kind == table::ArgKind::tensordesc) return "reads a tensor descriptor";
        break;
      }
      case RuleOp::field:
        if (instr.operand >= table.field_count) return "reads a config field out of range";
        if (table.fields[instr.operand].kind == table::FieldKind::string_value ||
            table.fields[instr.operand].kind == table::FieldKind::dtype_value)
          return "reads a string or dtype field";
        break;
      default: break;
    }
    const bool jumps = instr.op == RuleOp::jz || instr.op == RuleOp::jnz || instr.op == RuleOp::jmp;
    const int after = depth - operands + (jumps ? 0 : 1);
    if (after > kStackDepth) return "holds more values than the runtime's stack";
    const auto reach = [&](std::size_t target) {
      if (depth_at[target] >= 0 && depth_at[target] != after) return false;
      depth_at[target] = after;
      return true;
    };
    if (jumps) {
      if (instr.operand <= i || instr.operand > program.length) return "jumps backwards or past its end";
      if (!reach(instr.operand)) return "reaches an instruction with different stack depths";
    }
    if (instr.op != RuleOp::jmp && !reach(i + 1u)) return "reaches an instruction with different stack depths";
  }
  if (depth_at[program.length] != 1) return "does not leave exactly one value";
  return nullptr;
}

bool is_integer_rule(const table::RuleProgram& program, const table::KernelTable& table) noexcept {
  for (std::uint16_t i = 0; i < program.length; ++i) {
    const table::RuleInstr& instr = program.code[i];
    if (instr.op == RuleOp::flit) return false;
    if (instr.op == RuleOp::arg && (table.args[instr.operand].kind == table::ArgKind::float_scalar ||
                                    table.args[instr.operand].kind == table::ArgKind::scalar))
      return false;
    if (instr.op == RuleOp::field && (table.fields[instr.operand].kind == table::FieldKind::float_value ||
                                      table.fields[instr.operand].kind == table::FieldKind::string_value))
      return false;
  }
  return true;
}

RuleFault evaluate_integer_rule(const table::RuleProgram& program, const table::KernelTable& table,
                                const taot_arg* args, const FieldSource& fields, std::int64_t num_sms,
                                std::int64_t* result) noexcept {
  // Flat switches; the stack keeps a guard below its bottom so that a malformed program reads the
  // guard instead of out of bounds, and depth is checked where it changes.
  std::int64_t slots[kStackDepth + 1];
  slots[0] = 0;
  std::int64_t* top = slots;  // slots[0] is the guard; *top is the top value
  const std::int64_t* const limit = slots + kStackDepth;
  for (std::uint16_t pc = 0; pc < program.length;) {
    const table::RuleInstr& instr = program.code[pc++];
    const std::int64_t b = *top;
    std::int64_t pushed = 0;
    bool pushes = true;
    switch (instr.op) {
      case RuleOp::lit: pushed = instr.integer; break;
      case RuleOp::arg:
        pushed = table.args[instr.operand].kind == table::ArgKind::pointer ? args[instr.operand].address != 0
                                                                            : args[instr.operand].integer;
        break;
      case RuleOp::isnone: pushed = argument_is_none(table, args, instr.operand); break;
      case RuleOp::field:
        pushed = fields.set != nullptr && fields.set[instr.operand]
                     ? fields.values[instr.operand].integer
                     : table.fields[instr.operand].int_values[fields.config[instr.operand]];
        break;
      case RuleOp::num_sms: pushed = num_sms; break;
      case RuleOp::jmp: pc = instr.operand; continue;
      default: pushes = false;
    }
    if (pushes) {
      if (top == limit) return RuleFault::malformed;
      *++top = pushed;
      continue;
    }
    if (top == slots) return RuleFault::malformed;  // every other op pops at least one value
    switch (instr.op) {
      case RuleOp::jz: --top; if (b == 0) pc = instr.operand; continue;
      case RuleOp::jnz: --top; if (b != 0) pc = instr.operand; continue;
      case RuleOp::neg: *top = wrap_sub(0, b); continue;
      case RuleOp::abs: *top = b < 0 ? wrap_sub(0, b) : b; continue;
      case RuleOp::logical_not: *top = b == 0; continue;
      case RuleOp::next_power_of_2: *top = next_power_of_2(b); continue;
      default: break;
    }
    if (top - 1 == slots) return RuleFault::malformed;  // binary operations pop two
    std::int64_t& a = *--top;
    switch (instr.op) {
      case RuleOp::add: a = wrap_add(a, b); break;
      case RuleOp::sub: a = wrap_sub(a, b); break;
      case RuleOp::mul: a = wrap_mul(a, b); break;
      case RuleOp::div:
        if (b == 0) return RuleFault::division_by_zero;
        a = floor_div(a, b);
        break;
      case RuleOp::mod:
        if (b == 0) return RuleFault::division_by_zero;
        a = floor_mod(a, b);
        break;
      case RuleOp::cdiv:
        if (b == 0) return RuleFault::division_by_zero;
        a = floor_div(wrap_sub(wrap_add(a, b), 1), b);
        break;
      case RuleOp::min: a = b < a ? b : a; break;
      case RuleOp::max: a = a < b ? b : a; break;
      case RuleOp::eq: a = a == b; break;
      case RuleOp::ne: a = a != b; break;
      case RuleOp::lt: a = a < b; break;
      case RuleOp::le: a = a <= b; break;
      case RuleOp::gt: a = a > b; break;
      case RuleOp::ge: a = a >= b; break;
      default: return RuleFault::malformed;
    }
  }
  if (top != slots + 1) return RuleFault::malformed;
  *result = *top;
  return RuleFault::none;
}

std::string rule_inputs_text(const table::RuleProgram& program, const table::KernelTable& table, const taot_arg* args,
                             const FieldSource& fields, std::int64_t num_sms) {
  std::string text;
  std::string seen = "\n";  // names already listed, newline-separated
  for (std::uint16_t i = 0; i < program.length; ++i) {
    const table::RuleInstr& instr = program.code[i];
    std::string name, value;
    switch (instr.op) {
      case RuleOp::arg:
        name = table.args[instr.operand].name;
        value = rule_value_text(argument_value(table, args, instr.operand));
        break;
      case RuleOp::isnone:
        name = table.args[instr.operand].name;
        value = argument_is_none(table, args, instr.operand) ? "None" : "not None";
        break;
      case RuleOp::field:
        if (fields.config == nullptr) continue;
        name = table.fields[instr.operand].name;
        value = rule_value_text(read_field(table, fields, instr.operand));
        break;
      case RuleOp::num_sms:
        name = "num_sms";
        value = std::to_string(num_sms);
        break;
      default: continue;
    }
    if (seen.find("\n" + name + "\n") != std::string::npos) continue;
    seen += name + "\n";
    text += (text.empty() ? "" : ", ") + name + (instr.op == RuleOp::isnone ? " is " : "=") + value;
  }
  return text;
}

bool rules_use_num_sms(const table::KernelTable& table) noexcept {
  const auto uses = [](const table::RuleProgram& program) {
    for (std::uint16_t i = 0; i < program.length; ++i)
      if (program.code[i].op == RuleOp::num_sms) return true;
    return false;
  };
  for (std::uint16_t h = 0; h < table.heuristic_count; ++h)
    if (uses(table.heuristics[h].rule)) return true;
  for (std::uint16_t r = 0; r < table.requirement_count; ++r)
    if (uses(table.requirements[r])) return true;
  return false;
}

}  // namespace taot::detail
