/* The operations of launch-time rule programs (docs/manifest.md, "Rule programs"), listed once:
 * X(enumerator, manifest name, operands popped). The runtime's table::RuleOp and the code
 * generator's manifest reader both expand this list. Plain preprocessor: no includes. */
#ifndef TAOT_RULE_OPS_H_
#define TAOT_RULE_OPS_H_

#define TAOT_RULE_OPS(X)                                                                                \
  X(lit, "lit", 0) X(flit, "flit", 0) X(arg, "arg", 0) X(isnone, "isnone", 0) X(field, "field", 0)     \
  X(num_sms, "num_sms", 0)                                                                              \
  X(add, "add", 2) X(sub, "sub", 2) X(mul, "mul", 2) X(div, "div", 2) X(mod, "mod", 2)                  \
  X(cdiv, "cdiv", 2) X(min, "min", 2) X(max, "max", 2)                                                  \
  X(neg, "neg", 1) X(abs, "abs", 1) X(logical_not, "not", 1) X(next_power_of_2, "next_power_of_2", 1)   \
  X(eq, "eq", 2) X(ne, "ne", 2) X(lt, "lt", 2) X(le, "le", 2) X(gt, "gt", 2) X(ge, "ge", 2)             \
  X(jz, "jz", 1) X(jnz, "jnz", 1) X(jmp, "jmp", 0)

/* The most values a rule program may hold on its stack at once (readers refuse deeper programs). */
#define TAOT_RULE_STACK_DEPTH 32

#endif /* TAOT_RULE_OPS_H_ */
