// How a launch picks its config when the kernel has rules (docs/runtime.md): the caller's config,
// else the tuned table for the device, else the heuristics, else the default, each step keeping
// to the kernel's requirements. Nothing here allocates on the way to a choice of at most
// kInlineWords * 64 variants and kInlineFields config fields; only failures build strings.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "choose.h"

#include "autotune.h"
#include "config_fields.h"
#include "rules.h"
#include "tuning.h"

namespace taot::detail {

// What the walk reads of a kernel's rules beyond its index: each config field's default value
// index, and per heuristic and per requirement whether it reads no float, so that the int64
// evaluator runs it.
struct RuleFacts {
  std::vector<std::uint16_t> default_config;
  std::vector<std::uint8_t> integer_heuristics, integer_requirements;
};

namespace {

using table::ArgKind;

// The bits of a taot_arg's union that hold its real32: the low 32 (the platforms taot runs on are
// little-endian), so a key drops the top 32.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "taot_arg's real32 is read as the union's low 32 bits");
constexpr std::uint8_t kFp32DroppedBits = 32;

// An array of `size` elements, inline up to N (uninitialized for trivial T).
template <class T, std::size_t N>
class InlineArray {
 public:
  explicit InlineArray(std::size_t size) {
    if (size > N) {
      heap_.reset(new T[size]);
      data_ = heap_.get();
    }
  }
  InlineArray(const InlineArray&) = delete;
  InlineArray& operator=(const InlineArray&) = delete;
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }

 private:
  T inline_[N];
  std::unique_ptr<T[]> heap_;
  T* data_ = inline_;
};

// One choice: the variants that accept the arguments, and per step the config it asks for (per
// field the value index it requires, kUnsetValue for any with the default preferred, and the
// value rules read).
class RuleSteps {
 public:
  static constexpr std::size_t kInlineWords = 16;
  static constexpr std::size_t kInlineFields = 64;

  RuleSteps(const FactIndex& index, const RuleFacts& rules, const taot_arg* args, std::int64_t num_sms)
      : index_(index),
        rules_(rules),
        table_(index.table()),
        words_(index.words()),
        args_(args),
        num_sms_(num_sms),
        pinned_(table_.field_count),
        request_(table_.field_count),
        set_(table_.field_count),
        values_(table_.field_count),
        facts_(words_),
        candidates_(words_) {}

  // `*untuned` is set when first-call autotuning applies to the call but its key was not tuned
  // yet: the choice returned is the later steps' (for the caller to tune, or take as it is).
  Expected<Choice> run(const Selection& selection, const DeviceFacts* device, const TuningInForce& tuning,
                       bool* untuned) {
    std::size_t pinned_count = 0;
    if (Status status = start(selection, device, &pinned_count); !status.ok()) return status;
    if (pinned_count == table_.field_count && pinned_count > 0) return caller_step(selection, device);
    const table::TunedTable* tuned = tuning.tuned;
    if (tuned != nullptr && table_.tuning_key_count > 0 && tuned->entry_count > 0) {
      Expected<std::int64_t> chosen = table_step(*tuned);
      if (!chosen.ok()) return std::move(chosen).take_status();
      if (*chosen >= 0) return Choice{static_cast<std::size_t>(*chosen), Step::table};
    } else if (tuning.autotuned != nullptr) {
      Expected<std::int64_t> chosen = autotuned_step(*tuning.autotuned, device, untuned);
      if (!chosen.ok()) return std::move(chosen).take_status();
      if (*chosen >= 0) return Choice{static_cast<std::size_t>(*chosen), Step::autotuned};
    }
    if (table_.heuristic_count > 0) {
      clear();
      bool compiled = true;
      added_ = 0;
      if (Status status = run_heuristics(true, &compiled); !status.ok()) return status;
      // Heuristics that computed no field beyond the caller's leave the choice to the caller; those
      // that did decide it, as Triton applies them: a variant with their values, or an error.
      if (added_ > 0) {
        Expected<std::int64_t> chosen = pick();
        if (!chosen.ok()) return std::move(chosen).take_status();
        if (*chosen >= 0) return Choice{static_cast<std::size_t>(*chosen), Step::heuristics};
        const std::string values = " with the heuristics' values (" + requested_text() + ")";
        if (!any(candidates_.data())) return explain_request_miss(device, values);
        return explain_requirements(values);
      }
    }
    if (pinned_count > 0) return caller_step(selection, device);
    clear();
    Expected<std::int64_t> chosen = pick();
    if (!chosen.ok()) return std::move(chosen).take_status();
    if (*chosen >= 0) return Choice{static_cast<std::size_t>(*chosen), Step::fallback};
    return explain_requirements("");
  }

  // What first-call autotuning times for the call: per distinct combination of the timed fields'
  // values among the variants that accept the arguments, in variant order, the variant it chooses as a tuned entry would (with the heuristics and the default for
  // the other fields, keeping to the requirements); each variant once. `*key`: the call's key
  // values (left empty, with no candidates, when the caller leaves a key field to the runtime or
  // gives a timed field).
  Status autotune_candidates(const Selection& selection, const DeviceFacts* device, std::vector<std::int64_t>* key,
                             std::vector<AutotuneCandidate>* candidates) {
    std::size_t pinned_count = 0;
    if (Status status = start(selection, device, &pinned_count); !status.ok()) return status;
    key->assign(table_.tuning_key_count, 0);
    if (table_.autotune == nullptr || caller_gives_timed_field() || !key_values(key->data())) {
      key->clear();
      return Status();
    }
    const table::Autotune& autotune = *table_.autotune;
    std::vector<std::vector<std::uint16_t>> seen;
    std::vector<std::uint16_t> config(table_.field_count);
    for (std::size_t bit = 0; bit < table_.variant_count; ++bit) {
      if (!test_bit(facts_.data(), bit)) continue;
      const table::Variant& variant = table_.variants[index_.variant_at(bit)];
      std::fill(config.begin(), config.end(), table::kUnsetValue);
      for (std::uint16_t i = 0; i < autotune.field_count; ++i) {
        const std::uint16_t f = autotune.fields[i];  // < field_count: check_rules; not pinned (above)
        config[f] = variant.config[f];
      }
      if (std::find(seen.begin(), seen.end(), config) != seen.end()) continue;
      seen.push_back(config);
      Expected<std::int64_t> chosen = entry_step(config.data());
      if (!chosen.ok()) return std::move(chosen).take_status();
      if (*chosen < 0) continue;
      const auto same = [&](const AutotuneCandidate& c) { return c.variant == static_cast<std::size_t>(*chosen); };
      if (std::none_of(candidates->begin(), candidates->end(), same))
        candidates->push_back({static_cast<std::size_t>(*chosen), config});
    }
    return Status();
  }

 private:
  // The variants that accept the arguments (on this device), into facts_; the caller's fields,
  // pinned (every step keeps them and fills only the others), into pinned_ and `*pinned_count`.
  Status start(const Selection& selection, const DeviceFacts* device, std::size_t* pinned_count) {
    if (!index_.accepting(args_, device, facts_.data()) || !any(facts_.data()))
      return index_.explain_miss(args_, selection, device);
    for (std::size_t f = 0; f < table_.field_count; ++f) pinned_[f] = table::kUnsetValue;
    if (const FieldRequest* fields = selection.fields()) {
      for (std::size_t f = 0; f < table_.field_count; ++f) {
        if (!fields[f].set) continue;
        const int value = index_.value_index(f, fields[f]);
        if (value < 0) return index_.explain_miss(args_, selection, device);
        pinned_[f] = static_cast<std::uint16_t>(value);
        ++*pinned_count;
      }
    }
    return Status();
  }

  bool any(const std::uint64_t* mask) const noexcept {
    for (std::size_t w = 0; w < words_; ++w)
      if (mask[w] != 0) return true;
    return false;
  }

  // Back to the caller's fields alone.
  void clear() noexcept {
    for (std::size_t f = 0; f < table_.field_count; ++f) {
      if (pinned_[f] != table::kUnsetValue) {
        require(f, pinned_[f]);
      } else {
        request_[f] = table::kUnsetValue;
        set_[f] = false;
      }
    }
  }

  void require(std::size_t field, std::uint16_t value_index) noexcept {
    request_[field] = value_index;
    set_[field] = true;
    values_[field] = field_value(table_.fields[field], value_index);
  }

  // No variant with the fields the current step asks for accepts the arguments: which argument
  // fails, as a miss with that config requested explains it.
  Status explain_request_miss(const DeviceFacts* device, const std::string& values) const {
    std::vector<FieldRequest> fields(table_.field_count);
    for (std::size_t f = 0; f < table_.field_count; ++f) {
      if (request_[f] == table::kUnsetValue) continue;
      const table::ConfigField& field = table_.fields[f];
      fields[f].set = true;
      if (field.kind == table::FieldKind::float_value) fields[f].real = field.float_values[request_[f]];
      else if (field.kind == table::FieldKind::string_value) fields[f].text = field.string_values[request_[f]];
      else fields[f].integer = field.int_values[request_[f]];
    }
    Status miss = index_.explain_miss(args_, Selection::config(fields.data()), device);
    if (miss.code() != TAOT_INTERNAL) return miss;
    return Status::error(TAOT_NO_MATCHING_VARIANT, index_.qualified_name() + ": no compiled variant" + values +
                                                       " accepts these arguments");
  }

  // "BLOCK_SIZE=512, num_warps=4": the fields the current step asks for.
  std::string requested_text() const {
    std::string text;
    for (std::size_t f = 0; f < table_.field_count; ++f)
      if (request_[f] != table::kUnsetValue)
        text += (text.empty() ? "" : ", ") + std::string(table_.fields[f].name) + "=" +
                value_text(table_.fields[f], request_[f]);
    return text;
  }

  // " with n_cols=300", or "" for a rule that reads nothing.
  std::string inputs_clause(const table::RuleProgram& program, const FieldSource& fields) const {
    const std::string inputs = rule_inputs_text(program, table_, args_, fields, num_sms_);
    return inputs.empty() ? "" : " with " + inputs;
  }

  // A rule's value, through the int64 evaluator when the rule reads no float.
  RuleFault evaluate(const table::RuleProgram& program, bool integer, const FieldSource& fields,
                     RuleValue* value) const noexcept {
    if (!integer) return evaluate_rule(program, table_, args_, fields, num_sms_, value);
    std::int64_t result = 0;
    const RuleFault fault = evaluate_integer_rule(program, table_, args_, fields, num_sms_, &result);
    *value = RuleValue::of_int(result);
    return fault;
  }

  FieldSource request_fields() noexcept { return {set_.data(), values_.data(), rules_.default_config.data()}; }

  // The index of `value` among field `f`'s compiled values, or -1.
  int compiled_index(std::size_t f, const RuleValue& value) const noexcept {
    const table::ConfigField& field = table_.fields[f];
    if (field.kind == table::FieldKind::string_value) return -1;
    for (std::uint16_t i = 0; i < field.value_count; ++i) {
      if (field.kind == table::FieldKind::float_value) {
        if (field.float_values[i] == value.as_real()) return i;
      } else if (value.is_real ? static_cast<double>(field.int_values[i]) == value.real
                               : field.int_values[i] == value.integer) {
        return i;
      }
    }
    return -1;
  }

  std::string compiled_values(std::size_t f) const {
    std::string text;
    for (std::uint16_t i = 0; i < table_.fields[f].value_count; ++i)
      text += (i ? ", " : "") + value_text(table_.fields[f], i);
    return text;
  }

  Status rule_fault(RuleFault fault, const table::RuleProgram& program, const FieldSource& fields) const {
    if (fault == RuleFault::division_by_zero)
      return Status::error(TAOT_INVALID_ARGUMENT, index_.qualified_name() + ": rule " + program.text +
                                                      " divides by zero" + inputs_clause(program, fields));
    if (fault == RuleFault::not_an_integer)
      return Status::error(TAOT_INVALID_ARGUMENT, index_.qualified_name() + ": rule " + program.text +
                                                      " applies next_power_of_2 to a float" +
                                                      inputs_clause(program, fields));
    return Status::error(TAOT_INTERNAL, index_.qualified_name() + ": rule " + program.text + " is malformed");
  }

  // The heuristics, in order, for the fields not set yet; each sees the fields set so far. A value
  // that was not compiled fails when `strict`, else clears `*compiled` and stops.
  Status run_heuristics(bool strict, bool* compiled) {
    for (std::uint16_t h = 0; h < table_.heuristic_count; ++h) {
      const table::Heuristic& heuristic = table_.heuristics[h];
      if (set_[heuristic.field]) continue;
      RuleValue value{};
      const FieldSource fields = request_fields();
      if (RuleFault fault = evaluate(heuristic.rule, rules_.integer_heuristics[h], fields, &value);
          fault != RuleFault::none)
        return rule_fault(fault, heuristic.rule, fields);
      const int found = compiled_index(heuristic.field, value);
      if (found < 0) {
        if (!strict) {
          *compiled = false;
          return Status();
        }
        return Status::error(TAOT_NO_MATCHING_VARIANT,
                             index_.qualified_name() + ": heuristic " + table_.fields[heuristic.field].name + " = " +
                                 heuristic.rule.text + " gives " + rule_value_text(value) +
                                 inputs_clause(heuristic.rule, fields) +
                                 ", which was not compiled; compiled values: " + compiled_values(heuristic.field));
      }
      require(heuristic.field, static_cast<std::uint16_t>(found));
      ++added_;
    }
    return Status();
  }

  // Whether variant `v` satisfies every requirement; a rule that cannot be evaluated fails.
  Expected<bool> satisfies(std::size_t v) const {
    const FieldSource fields{nullptr, nullptr, table_.variants[v].config};
    for (std::uint16_t r = 0; r < table_.requirement_count; ++r) {
      RuleValue value{};
      if (RuleFault fault = evaluate(table_.requirements[r], rules_.integer_requirements[r], fields, &value);
          fault != RuleFault::none)
        return rule_fault(fault, table_.requirements[r], fields);
      if (value.is_zero()) return false;
    }
    return true;
  }

  // The first variant in preference order that accepts the arguments, has the requested values and
  // satisfies the requirements; -1 when none does. candidates_ keeps the variants with the
  // requested values, for explain_requirements.
  Expected<std::int64_t> pick() {
    std::copy(facts_.data(), facts_.data() + words_, candidates_.data());
    for (std::size_t f = 0; f < table_.field_count; ++f) {
      if (request_[f] == table::kUnsetValue) continue;
      const std::uint64_t* with_value = index_.value_mask(f, request_[f]);
      for (std::size_t w = 0; w < words_; ++w) candidates_[w] &= with_value[w];
    }
    for (std::size_t w = 0; w < words_; ++w) {
      std::uint64_t word = candidates_[w];
      while (word != 0) {
        const std::size_t bit = w * 64 + static_cast<std::size_t>(__builtin_ctzll(word));
        word &= word - 1;
        const std::size_t v = index_.variant_at(bit);
        Expected<bool> ok = satisfies(v);
        if (!ok.ok()) return std::move(ok).take_status();
        if (*ok) return static_cast<std::int64_t>(v);
      }
    }
    return std::int64_t{-1};
  }

  // The caller's fields with the default preferred for the others (every field, or what is left
  // when no table or heuristic step found a variant): step `config`, or the error.
  Expected<Choice> caller_step(const Selection& selection, const DeviceFacts* device) {
    clear();
    Expected<std::int64_t> chosen = pick();
    if (!chosen.ok()) return std::move(chosen).take_status();
    if (*chosen >= 0) return Choice{static_cast<std::size_t>(*chosen), Step::config};
    if (!any(candidates_.data())) return index_.explain_miss(args_, selection, device);
    return explain_requirements(" with the config asked for");
  }

  // The call's tuning-key values into `key`; false when the caller left a key field to the
  // runtime (there is no key).
  bool key_values(std::int64_t* key) const noexcept {
    for (std::uint16_t k = 0; k < table_.tuning_key_count; ++k) {
      const table::TuningKeyPart& part = table_.tuning_key[k];
      if (!part.field) key[k] = args_[part.index].integer;
      else if (pinned_[part.index] != table::kUnsetValue)  // int and bool fields: check_rules
        key[k] = table_.fields[part.index].int_values[pinned_[part.index]];
      else return false;
    }
    return true;
  }

  // -1: the table's config (with heuristics for the fields it leaves) has no variant that fits.
  Expected<std::int64_t> table_step(const table::TunedTable& tuned) {
    InlineArray<std::int64_t, 8> key(table_.tuning_key_count);
    if (!key_values(key.data())) return std::int64_t{-1};
    const std::size_t entry = lookup_entry(tuned, table_.tuning_key_count, key.data());
    return entry_step(tuned.configs + entry * table_.field_count);
  }

  // Whether the caller gives a field first-call autotuning times: then the call is not tuned (as
  // Triton's autotuner refuses a meta-parameter its configs set) and the later steps choose.
  bool caller_gives_timed_field() const noexcept {
    const table::Autotune& autotune = *table_.autotune;
    for (std::uint16_t i = 0; i < autotune.field_count; ++i)
      if (pinned_[autotune.fields[i]] != table::kUnsetValue) return true;
    return false;
  }

  // The config first-call autotuning chose for the call's key on `device`: -1 when there is none
  // (`*untuned` set when the key was not tuned yet) or it has no variant that fits these arguments
  // (a dtype the key was not tuned with, say: the later steps choose).
  Expected<std::int64_t> autotuned_step(const AutotuneStore& store, const DeviceFacts* device, bool* untuned) {
    InlineArray<std::int64_t, 8> key(table_.tuning_key_count);
    if (table_.autotune == nullptr || caller_gives_timed_field() || !key_values(key.data())) return std::int64_t{-1};
    InlineArray<std::uint16_t, kInlineFields> config(table_.field_count);
    const AutotuneStore::Found found =
        store.find(device != nullptr ? std::string_view(device->name) : std::string_view(), key.data(), config.data());
    if (found == AutotuneStore::Found::none && untuned != nullptr) *untuned = true;
    if (found != AutotuneStore::Found::config) return std::int64_t{-1};
    return entry_step(config.data());
  }

  // -1: `config` (a value index per field, kUnsetValue for those it leaves; in range: check_rules,
  // resolve_tuning, AutotuneStore::load), with heuristics for the fields it leaves, has no variant
  // that fits.
  Expected<std::int64_t> entry_step(const std::uint16_t* config) {
    clear();
    added_ = 0;
    for (std::size_t f = 0; f < table_.field_count; ++f) {
      if (!set_[f] && config[f] != table::kUnsetValue) {  // in range: check_rules, resolve_tuning
        require(f, config[f]);
        ++added_;
      }
    }
    if (added_ == 0) return std::int64_t{-1};  // the entry gives nothing the caller did not
    bool compiled = true;
    if (Status status = run_heuristics(false, &compiled); !status.ok()) return status;
    if (!compiled) return std::int64_t{-1};
    return pick();
  }

  // Why no variant among candidates_ satisfies the requirements: the first rule none satisfies,
  // with the argument values it reads and the values the candidates have for the fields it reads.
  Status explain_requirements(const std::string& which) const {
    std::vector<std::size_t> candidates;
    for (std::size_t bit = 0; bit < table_.variant_count; ++bit)
      if (test_bit(candidates_.data(), bit)) candidates.push_back(index_.variant_at(bit));
    const FieldSource no_fields{nullptr, nullptr, nullptr};
    std::string all;
    for (std::uint16_t r = 0; r < table_.requirement_count; ++r) {
      const table::RuleProgram& rule = table_.requirements[r];
      all += (r ? ", " : "") + std::string(rule.text);
      bool satisfied = false;
      for (std::size_t v : candidates) {
        RuleValue value{};
        const FieldSource fields{nullptr, nullptr, table_.variants[v].config};
        if (evaluate_rule(rule, table_, args_, fields, num_sms_, &value) == RuleFault::none && !value.is_zero()) {
          satisfied = true;
          break;
        }
      }
      if (satisfied) continue;
      std::string message = index_.qualified_name() + ": no compiled variant" + which + " satisfies " + rule.text;
      const std::string inputs = rule_inputs_text(rule, table_, args_, no_fields, num_sms_);
      if (!inputs.empty()) message += " with " + inputs;
      std::vector<std::uint16_t> read;
      for (std::uint16_t i = 0; i < rule.length; ++i)
        if (rule.code[i].op == table::RuleOp::field &&
            std::find(read.begin(), read.end(), rule.code[i].operand) == read.end())
          read.push_back(rule.code[i].operand);
      for (std::uint16_t f : read) {
        std::vector<std::uint16_t> seen;
        for (std::size_t v : candidates)
          if (std::find(seen.begin(), seen.end(), table_.variants[v].config[f]) == seen.end())
            seen.push_back(table_.variants[v].config[f]);
        std::sort(seen.begin(), seen.end());
        std::string values;
        for (std::uint16_t i : seen) values += (values.empty() ? "" : ", ") + value_text(table_.fields[f], i);
        message += "; compiled " + std::string(table_.fields[f].name) + " values: " + values;
      }
      return Status::error(TAOT_NO_MATCHING_VARIANT, message);
    }
    return Status::error(TAOT_NO_MATCHING_VARIANT, index_.qualified_name() + ": no compiled variant" + which +
                                                       " satisfies all of " + all + " together for these arguments");
  }

  const FactIndex& index_;
  const RuleFacts& rules_;
  const table::KernelTable& table_;
  const std::size_t words_;  // of a variant set
  const taot_arg* args_;
  std::int64_t num_sms_;
  std::size_t added_ = 0;  // fields the current step set beyond the caller's
  InlineArray<std::uint16_t, kInlineFields> pinned_;  // the caller's value index per field, or kUnsetValue
  InlineArray<std::uint16_t, kInlineFields> request_;
  InlineArray<bool, kInlineFields> set_;
  InlineArray<RuleValue, kInlineFields> values_;
  InlineArray<std::uint64_t, kInlineWords> facts_;
  InlineArray<std::uint64_t, kInlineWords> candidates_;
};

// Checks the kernel's rules (programs, heuristic fields, tuning key, tuned tables) so that
// evaluating them never reads out of bounds; records in `rules` which run on the int64 evaluator.
Status check_rules(const FactIndex& index, RuleFacts* rules) {
  const table::KernelTable& table = index.table();
  const std::string& name = index.qualified_name();
  const auto bad = [&](const table::RuleProgram& program, const char* problem) {
    return Status::error(TAOT_INTERNAL, name + ": rule " + (program.text ? program.text : "?") + " " + problem);
  };
  for (std::uint16_t h = 0; h < table.heuristic_count; ++h) {
    const table::Heuristic& heuristic = table.heuristics[h];
    if (heuristic.field >= table.field_count) return bad(heuristic.rule, "sets a config field out of range");
    const table::FieldKind kind = table.fields[heuristic.field].kind;
    if (kind == table::FieldKind::string_value || kind == table::FieldKind::dtype_value)
      return bad(heuristic.rule, "sets a string or dtype field");
    if (const char* problem = rule_problem(heuristic.rule, table)) return bad(heuristic.rule, problem);
    rules->integer_heuristics.push_back(is_integer_rule(heuristic.rule, table));
  }
  for (std::uint16_t r = 0; r < table.requirement_count; ++r) {
    if (const char* problem = rule_problem(table.requirements[r], table)) return bad(table.requirements[r], problem);
    rules->integer_requirements.push_back(is_integer_rule(table.requirements[r], table));
  }
  for (std::uint16_t k = 0; k < table.tuning_key_count; ++k) {
    const table::TuningKeyPart& part = table.tuning_key[k];
    const bool usable = part.field ? part.index < table.field_count &&
                                         (table.fields[part.index].kind == table::FieldKind::int_value ||
                                          table.fields[part.index].kind == table::FieldKind::bool_value)
                                   : part.index < table.arg_count && table.args[part.index].kind == table::ArgKind::int_scalar;
    if (!usable) return Status::error(TAOT_INTERNAL, name + ": the tuning key names no int argument or int or bool field");
  }
  if (const table::Autotune* autotune = table.autotune) {
    if (table.tuning_key_count == 0 || (autotune->field_count > 0 && autotune->fields == nullptr))
      return Status::error(TAOT_INTERNAL, name + ": first-call autotuning without a tuning key or fields");
    for (std::uint16_t i = 0; i < autotune->field_count; ++i)
      if (autotune->fields[i] >= table.field_count)
        return Status::error(TAOT_INTERNAL, name + ": first-call autotuning times a config field out of range");
    for (const auto& [buffers, count] : {std::pair{autotune->reset_to_zero, autotune->reset_count},
                                         std::pair{autotune->restore_value, autotune->restore_count}})
      for (std::uint16_t i = 0; i < count; ++i)
        if (buffers == nullptr || buffers[i] >= table.arg_count || table.args[buffers[i]].kind != ArgKind::pointer)
          return Status::error(TAOT_INTERNAL, name + ": first-call autotuning restores an argument that is no pointer");
  }
  for (std::uint16_t t = 0; t < table.tuned_count; ++t) {
    const table::TunedTable& tuned = table.tuned[t];
    if (tuned.entry_count > 0 && (tuned.keys == nullptr || tuned.configs == nullptr))
      return Status::error(TAOT_INTERNAL, name + ": a tuned table has no data");
    for (std::size_t e = 0; e < tuned.entry_count; ++e)
      for (std::size_t f = 0; f < table.field_count; ++f) {
        const std::uint16_t value = tuned.configs[e * table.field_count + f];
        if (value != table::kUnsetValue && value >= table.fields[f].value_count)
          return Status::error(TAOT_INTERNAL,
                               name + ": tuned table " + tuned.source + " has a config value out of range");
      }
  }
  return Status();
}

}  // namespace

RuleChooser::RuleChooser() = default;
RuleChooser::RuleChooser(RuleChooser&&) noexcept = default;
RuleChooser::~RuleChooser() = default;

Expected<RuleChooser> RuleChooser::build(const FactIndex& index) {
  const table::KernelTable& table = index.table();
  RuleChooser chooser;
  chooser.has_rules_ = table.heuristic_count > 0 || table.requirement_count > 0 || table.tuning_key_count > 0;
  auto rules = std::make_unique<RuleFacts>();
  for (std::size_t f = 0; f < table.field_count; ++f) rules->default_config.push_back(table.fields[f].default_index);
  if (Status status = check_rules(index, rules.get()); !status.ok()) return status;
  chooser.rules_ = std::move(rules);
  if (chooser.has_rules_) {
    std::vector<std::uint16_t> keyed;
    const auto read_by_value = [&](const table::RuleProgram& program) {
      for (std::uint16_t i = 0; i < program.length; ++i)
        if (program.code[i].op == table::RuleOp::arg || program.code[i].op == table::RuleOp::isnone)
          keyed.push_back(program.code[i].operand);  // None-ness is a fact only for `none` pointers
    };
    for (std::uint16_t h = 0; h < table.heuristic_count; ++h) read_by_value(table.heuristics[h].rule);
    for (std::uint16_t r = 0; r < table.requirement_count; ++r) read_by_value(table.requirements[r]);
    for (std::uint16_t k = 0; k < table.tuning_key_count; ++k)  // a key field is in a config's cache key
      if (!table.tuning_key[k].field) keyed.push_back(table.tuning_key[k].index);
    std::sort(keyed.begin(), keyed.end());
    keyed.erase(std::unique(keyed.begin(), keyed.end()), keyed.end());
    for (std::uint16_t a : keyed)
      if (a >= table.arg_count)
        return Status::error(TAOT_INTERNAL, index.qualified_name() + ": a rule reads argument " + std::to_string(a) +
                                                ", which does not exist");
    if (index.memoizes() && keyed.size() <= kMaxKeyedArgs) {
      for (std::uint16_t a : keyed) {
        const table::Arg& arg = table.args[a];
        const bool fp32 = arg.kind == ArgKind::float_scalar && arg.type_count > 0 && arg.types[0] == TAOT_DTYPE_FP32;
        chooser.keyed_args_[chooser.keyed_count_++] = {a, fp32 ? kFp32DroppedBits : std::uint8_t{0},
                                                       arg.kind == ArgKind::pointer};
      }
      chooser.choice_cache_.reset(new ChoiceSlot[kChoiceSlots]());
    }
  }
  return chooser;
}

Expected<Choice> RuleChooser::choose(const FactIndex& index, const taot_arg* args, std::size_t arg_count,
                                     const Selection& selection, const DeviceFacts* device,
                                     const TuningInForce& tuning, std::int64_t num_sms, bool* untuned) const {
  if (!has_rules_ || selection.is_variant() || arg_count != index.table().arg_count) {
    Expected<std::size_t> chosen = index.select(args, arg_count, selection, device);
    if (!chosen.ok()) return std::move(chosen).take_status();
    const Step step = selection.is_variant() ? Step::variant : selection.fields() ? Step::config : Step::fallback;
    return Choice{*chosen, step};
  }
  std::uint64_t key[kChoiceKeyWords];
  std::size_t words = 2 + std::size_t{keyed_count_};
  std::size_t slot = 0;
  bool not_tuned_yet = false;  // such a choice is not remembered: the key's next launch tunes it
  if (choice_cache_ && choice_key(index, args, device, tuning, num_sms, key, &slot) &&
      (selection.fields() == nullptr || add_config_key(index, selection.fields(), key, &words, &slot))) {
    Choice remembered{};
    if (cached_choice(key, words, slot, &remembered)) return remembered;
    Expected<Choice> chosen = RuleSteps(index, *rules_, args, num_sms).run(selection, device, tuning, &not_tuned_yet);
    if (chosen.ok() && !not_tuned_yet) remember_choice(key, words, slot, *chosen);
    if (untuned != nullptr) *untuned = not_tuned_yet;
    return chosen;
  }
  Expected<Choice> chosen = RuleSteps(index, *rules_, args, num_sms).run(selection, device, tuning, &not_tuned_yet);
  if (untuned != nullptr) *untuned = not_tuned_yet;
  return chosen;
}

Status RuleChooser::autotune_candidates(const FactIndex& index, const taot_arg* args, std::size_t arg_count,
                                        const Selection& selection, const DeviceFacts* device, std::int64_t num_sms,
                                        std::vector<std::int64_t>* key,
                                        std::vector<AutotuneCandidate>* candidates) const {
  key->clear();
  candidates->clear();
  if (!has_rules_ || selection.is_variant() || arg_count != index.table().arg_count) return Status();
  return RuleSteps(index, *rules_, args, num_sms).autotune_candidates(selection, device, key, candidates);
}

bool RuleChooser::add_config_key(const FactIndex& index, const FieldRequest* fields, std::uint64_t* key,
                                 std::size_t* words, std::size_t* slot) noexcept {
  const std::size_t field_count = index.table().field_count;
  if (field_count > kMaxConfigWords * 8) return false;
  std::uint64_t* config = key + *words;
  std::fill(config, config + kMaxConfigWords, std::uint64_t{0});
  for (std::size_t f = 0; f < field_count; ++f) {
    if (!fields[f].set) continue;
    const int value = index.value_index(f, fields[f]);
    if (value < 0 || value >= 255) return false;
    config[f / 8] |= static_cast<std::uint64_t>(value + 1) << (f % 8 * 8);  // 0: the field is not asked for
  }
  key[1] |= 1;  // a config's key, never an automatic one (table addresses are even)
  *words += kMaxConfigWords;
  std::uint64_t hash = 0;  // key[1] changed: the slot is hashed again from the first word
  for (std::size_t w = 0; w < *words; ++w) hash = hash_word(hash, key[w]);
  *slot = slot_of_hash(hash);
  return true;
}

void RuleChooser::forget_choices() const noexcept {
  if (!choice_cache_) return;
  for (std::size_t s = 0; s < kChoiceSlots; ++s) {
    ChoiceSlot& entry = choice_cache_[s];
    std::uint32_t sequence = entry.sequence.load(std::memory_order_relaxed);
    while ((sequence & 1U) || !entry.sequence.compare_exchange_weak(sequence, sequence + 1, std::memory_order_acquire))
      sequence = entry.sequence.load(std::memory_order_relaxed) & ~1U;  // a writer finishes: then empty it
    entry.choice.store(0, std::memory_order_release);
    entry.sequence.store(sequence + 2, std::memory_order_release);
  }
}

void RuleChooser::remember_choice(const std::uint64_t* key, std::size_t words, std::size_t slot,
                                  const Choice& choice) const noexcept {
  ChoiceSlot& entry = choice_cache_[slot];
  std::uint32_t sequence = entry.sequence.load(std::memory_order_relaxed);
  if ((sequence & 1U) ||
      !entry.sequence.compare_exchange_strong(sequence, sequence + 1, std::memory_order_acquire))
    return;  // another thread is writing the slot: leave it
  // Release stores: a reader that sees any of them also sees the odd sequence stored before.
  for (std::size_t w = 0; w < words; ++w) entry.key[w].store(key[w], std::memory_order_release);
  entry.choice.store((static_cast<std::uint64_t>(choice.variant) << 8 | static_cast<std::uint64_t>(choice.step)) + 1,
                     std::memory_order_release);
  entry.sequence.store(sequence + 2, std::memory_order_release);
}

}  // namespace taot::detail

namespace taot {

const char* step_name(Step step) noexcept {
  switch (step) {
    case Step::variant: return "variant";
    case Step::config: return "config";
    case Step::table: return "table";
    case Step::heuristics: return "heuristics";
    case Step::fallback: return "default";
    case Step::autotuned: return "autotuned at first call";
  }
  return "unknown";
}

}  // namespace taot
