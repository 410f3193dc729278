// Evaluation of launch-time rule programs (heuristics and requirements; docs/manifest.md, "Rule
// programs"): a stack machine over ints and floats with Python's semantics for the operations the
// front end compiles (floor division and modulo, min/max keeping the chosen operand's type,
// Triton's next_power_of_2 and cdiv).
#pragma once

#include <cstdint>
#include <string>

#include "taot/kernel_table.h"
#include "taot/runtime.h"

namespace taot::detail {

// A rule's value: an int, or a float when `is_real`. Trivial, so arrays of it cost nothing to make.
struct RuleValue {
  std::int64_t integer;
  double real;
  bool is_real;

  static RuleValue of_int(std::int64_t value) noexcept { return {value, 0.0, false}; }
  static RuleValue of_real(double value) noexcept { return {0, value, true}; }
  double as_real() const noexcept { return is_real ? real : static_cast<double>(integer); }
  bool is_zero() const noexcept { return is_real ? real == 0.0 : integer == 0; }
};

// "1024", "0.5"
std::string rule_value_text(const RuleValue& value);

// Why an evaluation failed; `none` when it did not.
enum class RuleFault : std::uint8_t { none, division_by_zero, not_an_integer, malformed };

// Where a program's `field` instructions read: `values[f]` when `set[f]` is true (heuristic
// results, caller fields), else value index `config[f]` of field f (a variant's config, or the
// default config's indices).
struct FieldSource {
  const bool* set;            // may be null: none set
  const RuleValue* values;    // may be null when `set` is
  const std::uint16_t* config;
};

// The value of config field `field` at value index `index` as a rule sees it.
RuleValue field_value(const table::ConfigField& field, std::size_t index) noexcept;

// Evaluates `program` of `table`'s kernel for call arguments `args`; `num_sms` is what the
// num_sms op pushes. Allocates nothing; fails only on a division by zero or a malformed program.
RuleFault evaluate_rule(const table::RuleProgram& program, const table::KernelTable& table, const taot_arg* args,
                        const FieldSource& fields, std::int64_t num_sms, RuleValue* result) noexcept;

// What is wrong with `program` as a rule of `table`'s kernel (an operation it does not know, an
// operand out of range or of the wrong kind, a jump that does not go forward, a path that leaves
// other than one value or holds more than TAOT_RULE_STACK_DEPTH), or null when nothing is. The
// evaluators rely on it: RuleChooser::build checks every rule of a kernel.
const char* rule_problem(const table::RuleProgram& program, const table::KernelTable& table);

// Whether `program` reads no float (no float literal, argument or field), so that
// evaluate_integer_rule gives what evaluate_rule gives.
bool is_integer_rule(const table::RuleProgram& program, const table::KernelTable& table) noexcept;

// evaluate_rule for a program is_integer_rule accepts, on an int64 stack: the fast path.
RuleFault evaluate_integer_rule(const table::RuleProgram& program, const table::KernelTable& table,
                                const taot_arg* args, const FieldSource& fields, std::int64_t num_sms,
                                std::int64_t* result) noexcept;

// The names and values a rule reads, for messages: "n_cols=40000, BLOCK_SIZE=1024" (config
// fields left out when `fields.config` is null).
std::string rule_inputs_text(const table::RuleProgram& program, const table::KernelTable& table, const taot_arg* args,
                             const FieldSource& fields, std::int64_t num_sms);

// Whether any rule of the kernel (heuristics or requirements) reads the device's multiprocessor count.
bool rules_use_num_sms(const table::KernelTable& table) noexcept;

}  // namespace taot::detail
