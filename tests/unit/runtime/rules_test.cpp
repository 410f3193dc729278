// Launch-time rules: the evaluator against Python's results for the front end's programs
// (tests/rules/rule_cases.json), and how a launch picks its config — caller, tuned table,
// heuristics, default, each keeping to the requirements — against a brute-force reference.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cmath>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "choose.h"
#include "dispatch.h"
#include "fake_driver.h"
#include "rules.h"
#include "taot/c_api.h"
#include "taot/runtime.h"

namespace taot::testing {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

table::RuleOp op_named(const std::string& name) {
#define TAOT_RULE_OP_MATCH(op, text, operands) \
  if (name == text) return table::RuleOp::op;
  TAOT_RULE_OPS(TAOT_RULE_OP_MATCH)
#undef TAOT_RULE_OP_MATCH
  ADD_FAILURE() << "unknown op " << name;
  return table::RuleOp::lit;
}

// Rule programs built from the manifest's JSON form, with names resolved against `args` and `fields`.
class Programs {
 public:
  table::RuleProgram add(const std::string& text, const json& program, const std::vector<std::string>& args,
                         const std::vector<std::string>& fields) {
    std::vector<table::RuleInstr> code;
    for (const json& instr : program) {
      table::RuleInstr out{op_named(instr.at("op").get<std::string>()), 0, 0, 0.0};
      if (out.op == table::RuleOp::lit) out.integer = instr.at("value").get<std::int64_t>();
      if (out.op == table::RuleOp::flit) out.real = instr.at("value").get<double>();
      if (instr.contains("to")) out.operand = instr.at("to").get<std::uint16_t>();
      if (instr.contains("name")) {
        const std::string name = instr.at("name").get<std::string>();
        const auto& names = out.op == table::RuleOp::field ? fields : args;
        const auto found = std::find(names.begin(), names.end(), name);
        EXPECT_NE(found, names.end()) << name;
        out.operand = static_cast<std::uint16_t>(found - names.begin());
      }
      code.push_back(out);
    }
    texts_.push_back(text);
    code_.push_back(std::move(code));
    return {texts_.back().c_str(), code_.back().data(), static_cast<std::uint16_t>(code_.back().size())};
  }

 private:
  std::deque<std::string> texts_;
  std::deque<std::vector<table::RuleInstr>> code_;
};

// ---- the evaluator against Python ----

TEST(RuleEvaluator, AgreesWithPythonOnEveryCase) {
  std::ifstream file(TAOT_RULE_CASES);
  ASSERT_TRUE(file) << TAOT_RULE_CASES;
  const json cases = json::parse(file);
  // The case file's names: scalars n, m, scale (fp32), flag, num_sms (an argument there); pointer
  // bias; fields BLOCK, WARPS, EVEN.
  static constexpr taot_dtype kI64[] = {TAOT_DTYPE_I64};
  static constexpr taot_dtype kF32[] = {TAOT_DTYPE_FP32};
  static constexpr taot_dtype kI1[] = {TAOT_DTYPE_I1};
  const table::Arg args[] = {{"n", table::ArgKind::int_scalar, kI64, 1, false, 0, nullptr, 0, false, false},
                             {"m", table::ArgKind::int_scalar, kI64, 1, false, 0, nullptr, 0, false, false},
                             {"scale", table::ArgKind::float_scalar, kF32, 1, false, 0, nullptr, 0, false, false},
                             {"flag", table::ArgKind::bool_scalar, kI1, 1, false, 0, nullptr, 0, false, false},
                             {"bias", table::ArgKind::pointer, kF32, 1, false, 0, nullptr, 0, true, false},
                             {"num_sms", table::ArgKind::int_scalar, kI64, 1, false, 0, nullptr, 0, false, false}};
  static constexpr std::int64_t kBlocks[] = {256, 4096};
  static constexpr std::int64_t kWarps[] = {4};
  static constexpr std::int64_t kEven[] = {0, 1};
  const table::ConfigField fields[] = {{"BLOCK", table::FieldKind::int_value, kBlocks, nullptr, 2, 0, nullptr, false},
                                       {"WARPS", table::FieldKind::int_value, kWarps, nullptr, 1, 0, nullptr, false},
                                       {"EVEN", table::FieldKind::bool_value, kEven, nullptr, 2, 0, nullptr, false}};
  table::KernelTable kernel{};
  kernel.library = "cases";
  kernel.name = "rules";
  kernel.args = args;
  kernel.arg_count = 6;
  kernel.fields = fields;
  kernel.field_count = 3;
  const std::vector<std::string> arg_names = {"n", "m", "scale", "flag", "bias", "num_sms"};
  const std::vector<std::string> field_names = {"BLOCK", "WARPS", "EVEN"};
  const double scale = cases.at("constants").at("scale").get<double>();
  const std::int64_t num_sms = cases.at("constants").at("num_sms").get<std::int64_t>();

  Programs programs;
  std::size_t runs = 0, integer_runs = 0;
  for (const json& rule_case : cases.at("cases")) {
    const std::string text = rule_case.at("rule").get<std::string>();
    const table::RuleProgram program = programs.add(text, rule_case.at("program"), arg_names, field_names);
    for (const json& run : rule_case.at("runs")) {
      taot_arg values[6] = {};
      values[0].integer = run[0].get<std::int64_t>();
      values[1].integer = run[1].get<std::int64_t>();
      values[2].real32 = static_cast<float>(scale);
      values[3].integer = run[2].get<std::int64_t>();
      values[4].address = run[3].get<int>() ? 0 : 0x1000;
      values[5].integer = num_sms;
      const std::uint16_t config[] = {static_cast<std::uint16_t>(run[4].get<std::int64_t>() == 4096 ? 1 : 0), 0,
                                      static_cast<std::uint16_t>(run[5].get<int>())};
      detail::RuleValue result{};
      ASSERT_EQ(detail::evaluate_rule(program, kernel, values, {nullptr, nullptr, config}, 0, &result),
                detail::RuleFault::none)
          << text;
      if (detail::is_integer_rule(program, kernel)) {  // the int64 fast path agrees
        std::int64_t integer = 0;
        ASSERT_EQ(detail::evaluate_integer_rule(program, kernel, values, {nullptr, nullptr, config}, 0, &integer),
                  detail::RuleFault::none)
            << text;
        EXPECT_EQ(integer, result.integer) << text << " " << run.dump();
        ++integer_runs;
      }
      const json& expected = run[6];
      if (expected.is_number_float()) {
        EXPECT_TRUE(result.is_real) << text << " " << run.dump();
        EXPECT_DOUBLE_EQ(result.as_real(), expected.get<double>()) << text << " " << run.dump();
      } else {
        EXPECT_FALSE(result.is_real) << text << " " << run.dump();
        EXPECT_EQ(result.integer, expected.get<std::int64_t>()) << text << " " << run.dump();
      }
      ++runs;
    }
  }
  EXPECT_GT(runs, 1000u);
  EXPECT_GT(integer_runs, 1000u);
}

// ---- how a launch picks its config ----

// softmax(x_ptr, n_cols; BLOCK_SIZE in 128..4096, num_warps in {4, 8}), every combination one
// variant, default BLOCK_SIZE=4096 num_warps=4. Rules (each optional per test):
//   heuristics: BLOCK_SIZE = max(128, next_power_of_2(n_cols)); num_warps = 8 if BLOCK_SIZE >= 2048 else 4
//   requires:   n_cols <= BLOCK_SIZE
//   tuning key: n_cols
class SoftmaxTable {
 public:
  static constexpr std::int64_t kBlocks[] = {128, 256, 512, 1024, 2048, 4096};
  static constexpr std::int64_t kWarps[] = {4, 8};

  SoftmaxTable(bool heuristics, bool with_requirements, bool tuning_key, bool key_on_block = false) {
    args_ = {{"x_ptr", table::ArgKind::pointer, kF32, 1, false, 0, nullptr, 0, false, false},
             {"n_cols", table::ArgKind::int_scalar, kI32, 1, false, 0, nullptr, 0, false, false}};
    fields_ = {{"BLOCK_SIZE", table::FieldKind::int_value, kBlocks, nullptr, 6, 5, nullptr, false},
               {"num_warps", table::FieldKind::int_value, kWarps, nullptr, 2, 0, nullptr, false}};
    for (std::uint16_t b = 0; b < 6; ++b)
      for (std::uint16_t w = 0; w < 2; ++w) {
        ids_.push_back("softmax_b" + std::to_string(kBlocks[b]) + "_w" + std::to_string(kWarps[w]));
        configs_.push_back({b, w});
        table::Variant variant{};
        variant.id = ids_.back().c_str();
        variant.specialization = kSpecialization;
        variant.config = configs_.back().data();
        variant.params = kParams;
        variant.param_count = 2;
        variant.grid[0] = variant.grid[1] = variant.grid[2] = {kOne, 1};
        variant.images = &image_;
        variant.image_count = 1;
        variants_.push_back(variant);
      }
    const std::vector<std::string> arg_names = {"x_ptr", "n_cols"}, field_names = {"BLOCK_SIZE", "num_warps"};
    if (heuristics) {
      heuristics_.push_back({0, programs_.add("max(128, next_power_of_2(n_cols))",
                                              json::parse(R"([{"op":"lit","value":128},{"op":"arg","name":"n_cols"},
                                                  {"op":"next_power_of_2"},{"op":"max"}])"),
                                              arg_names, field_names)});
      heuristics_.push_back({1, programs_.add("8 if BLOCK_SIZE >= 2048 else 4",
                                              json::parse(R"([{"op":"field","name":"BLOCK_SIZE"},{"op":"lit","value":2048},
                                                  {"op":"ge"},{"op":"jz","to":6},{"op":"lit","value":8},{"op":"jmp","to":7},
                                                  {"op":"lit","value":4}])"),
                                              arg_names, field_names)});
    }
    if (with_requirements)
      requirements_.push_back(programs_.add("n_cols <= BLOCK_SIZE",
                                            json::parse(R"([{"op":"arg","name":"n_cols"},{"op":"field","name":"BLOCK_SIZE"},
                                                {"op":"le"}])"),
                                            arg_names, field_names));
    kernel.library = "testlib";
    kernel.name = "softmax";
    kernel.grid_text[0] = kernel.grid_text[1] = kernel.grid_text[2] = "1";
    kernel.args = args_.data();
    kernel.arg_count = 2;
    kernel.fields = fields_.data();
    kernel.field_count = 2;
    kernel.variants = variants_.data();
    kernel.variant_count = static_cast<std::uint32_t>(variants_.size());
    kernel.heuristics = heuristics_.data();
    kernel.heuristic_count = static_cast<std::uint16_t>(heuristics_.size());
    kernel.requirements = requirements_.data();
    kernel.requirement_count = static_cast<std::uint16_t>(requirements_.size());
    if (tuning_key) {
      kernel.tuning_key = key_on_block ? kBlockKey : kTuningKey;
      kernel.tuning_key_count = 1;
    }
  }
  SoftmaxTable(const SoftmaxTable&) = delete;

  // Field `f` must be given at every launch (a constexpr the function has no default for).
  void require_field(std::size_t f) { fields_[f].required = true; }

  // Bakes a table (keys ascending) for `device`: each entry (n_cols, BLOCK_SIZE index or unset,
  // num_warps index or unset).
  void bake(const char* device, table::TuningMatch match, std::vector<std::array<std::int64_t, 3>> entries) {
    keys_.emplace_back();
    tuned_configs_.emplace_back();
    for (const auto& entry : entries) {
      keys_.back().push_back(entry[0]);
      tuned_configs_.back().push_back(entry[1] < 0 ? table::kUnsetValue : static_cast<std::uint16_t>(entry[1]));
      tuned_configs_.back().push_back(entry[2] < 0 ? table::kUnsetValue : static_cast<std::uint16_t>(entry[2]));
    }
    tuned_.push_back({device, "test.json", match, static_cast<std::uint32_t>(entries.size()), keys_.back().data(),
                      tuned_configs_.back().data()});
    kernel.tuned = tuned_.data();
    kernel.tuned_count = static_cast<std::uint16_t>(tuned_.size());
  }

  table::KernelTable kernel{};

 private:
  static constexpr taot_dtype kF32[] = {TAOT_DTYPE_FP32};
  static constexpr taot_dtype kI32[] = {TAOT_DTYPE_I32};
  static constexpr table::ArgSpecialization kSpecialization[] = {{TAOT_DTYPE_FP32, 0, 0, false},
                                                                 {TAOT_DTYPE_I32, 0, 0, false}};
  static constexpr std::uint16_t kParams[] = {0, 1};
  static constexpr table::TuningKeyPart kTuningKey[] = {{1, false}};
  static constexpr table::TuningKeyPart kBlockKey[] = {{0, true}};  // the config field BLOCK_SIZE
  static constexpr table::GridInstr kOne[] = {{table::GridOp::literal, 0, 1}};
  static constexpr unsigned char kCubin[32] = {};
  table::Image image_{"sm_90", 90, false, table::Vendor::nvidia, 32, kCubin, 32, "softmax", 0, 4, 1, {1, 1, 1}, 0, 1, 0, 1, false, false, nullptr, 0, abi::TensordescLayout::triton_3_5, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr};
  Programs programs_;
  std::vector<table::Arg> args_;
  std::vector<table::ConfigField> fields_;
  std::deque<std::string> ids_;
  std::deque<std::vector<std::uint16_t>> configs_;
  std::vector<table::Variant> variants_;
  std::vector<table::Heuristic> heuristics_;
  std::vector<table::RuleProgram> requirements_;
  std::deque<std::vector<std::int64_t>> keys_;
  std::deque<std::vector<std::uint16_t>> tuned_configs_;
  std::vector<table::TunedTable> tuned_;
};

std::vector<taot_arg> softmax_args(std::int64_t n_cols) {
  return {arg(Ptr(CUdeviceptr{0x7f0000001000}, DType::fp32)), arg(static_cast<std::int32_t>(n_cols))};
}

struct Picked {
  std::int64_t block = 0;
  std::int64_t warps = 0;
  Step step = Step::variant;
};

// A kernel's fact index and the rule chooser built on it, as a kernel's state holds them.
struct Chooser {
  detail::FactIndex index;
  detail::RuleChooser rules;
  Expected<Choice> choose(const taot_arg* args, std::size_t arg_count, const Selection& selection,
                          const detail::DeviceFacts* device, const table::TunedTable* tuned,
                          std::int64_t num_sms) const {
    return rules.choose(index, args, arg_count, selection, device, detail::TuningInForce{tuned}, num_sms);
  }
};

Expected<Chooser> build_chooser(const table::KernelTable& kernel) {
  Expected<detail::FactIndex> index = detail::FactIndex::build(kernel);
  if (!index.ok()) return std::move(index).take_status();
  Expected<detail::RuleChooser> rules = detail::RuleChooser::build(*index);
  if (!rules.ok()) return std::move(rules).take_status();
  return Chooser{std::move(index).value(), std::move(rules).value()};
}

Expected<Picked> pick(const Chooser& chooser, const table::KernelTable& kernel, std::int64_t n_cols,
                      const Selection& selection = Selection::automatic(), const table::TunedTable* tuned = nullptr) {
  const std::vector<taot_arg> args = softmax_args(n_cols);
  Expected<Choice> choice = chooser.choose(args.data(), args.size(), selection, nullptr, tuned, 132);
  if (!choice.ok()) return std::move(choice).take_status();
  const std::uint16_t* config = kernel.variants[choice->variant].config;
  return Picked{SoftmaxTable::kBlocks[config[0]], SoftmaxTable::kWarps[config[1]], choice->step};
}

// "BLOCK/WARPS/step" of a choice, or its error message: what the cache tests compare.
std::string describe(const Expected<Picked>& picked) {
  return picked.ok() ? std::to_string(picked->block) + "/" + std::to_string(picked->warps) + "/" +
                           step_name(picked->step)
                     : picked.status().message();
}

std::int64_t reference_block(std::int64_t n_cols) {
  std::int64_t block = 128;
  while (block < n_cols) block *= 2;
  return block;
}

TEST(LaunchChoice, HeuristicsGiveTheirValuesForEveryRowLength) {
  SoftmaxTable table(true, true, false);
  Expected<Chooser> chooser = build_chooser(table.kernel);
  ASSERT_TRUE(chooser.ok());
  for (std::int64_t n_cols = 0; n_cols <= 4096; ++n_cols) {
    Expected<Picked> picked = pick(*chooser, table.kernel, n_cols);
    ASSERT_TRUE(picked.ok()) << n_cols << ": " << picked.status().message();
    EXPECT_EQ(picked->block, reference_block(n_cols)) << n_cols;
    EXPECT_EQ(picked->warps, reference_block(n_cols) >= 2048 ? 8 : 4) << n_cols;
    EXPECT_EQ(picked->step, Step::heuristics);
  }
  Expected<Picked> above = pick(*chooser, table.kernel, 4097);
  ASSERT_FALSE(above.ok());
  EXPECT_EQ(above.status().code(), TAOT_NO_MATCHING_VARIANT);
  EXPECT_THAT(above.status().message(),
              HasSubstr("testlib::softmax: heuristic BLOCK_SIZE = max(128, next_power_of_2(n_cols)) gives 8192 with "
                        "n_cols=4097, which was not compiled; compiled values: 128, 256, 512, 1024, 2048, 4096"));
}

TEST(LaunchChoice, RequirementsAloneTakeTheMostDefaultVariantThatSatisfiesThem) {
  // Default BLOCK_SIZE=4096 satisfies every n_cols up to 4096: the default step keeps it.
  SoftmaxTable table(false, true, false);
  Expected<Chooser> chooser = build_chooser(table.kernel);
  ASSERT_TRUE(chooser.ok());
  for (std::int64_t n_cols : {1, 100, 4096}) {
    Expected<Picked> picked = pick(*chooser, table.kernel, n_cols);
    ASSERT_TRUE(picked.ok()) << picked.status().message();
    EXPECT_EQ(picked->block, 4096);
    EXPECT_EQ(picked->warps, 4);
    EXPECT_EQ(picked->step, Step::fallback);
  }
  // A caller's smaller block is kept when the rule holds, refused naming the rule when it does not.
  FieldRequest small[2] = {request(std::optional<std::int64_t>(256)), {}};
  Expected<Picked> fits = pick(*chooser, table.kernel, 200, Selection::config(small));
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ(fits->block, 256);
  EXPECT_EQ(fits->step, Step::config);
  Expected<Picked> too_long = pick(*chooser, table.kernel, 300, Selection::config(small));
  ASSERT_FALSE(too_long.ok());
  EXPECT_THAT(too_long.status().message(),
              HasSubstr("testlib::softmax: no compiled variant with the config asked for satisfies n_cols <= BLOCK_SIZE "
                        "with n_cols=300; compiled BLOCK_SIZE values: 256"));
  Expected<Picked> none = pick(*chooser, table.kernel, 5000);
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(),
              HasSubstr("testlib::softmax: no compiled variant satisfies n_cols <= BLOCK_SIZE with n_cols=5000; "
                        "compiled BLOCK_SIZE values: 128, 256, 512, 1024, 2048, 4096"));
}

TEST(LaunchChoice, ACallersFieldsWinAndHeuristicsFillTheOthers) {
  SoftmaxTable table(true, true, false);
  Expected<Chooser> chooser = build_chooser(table.kernel);
  ASSERT_TRUE(chooser.ok());
  // num_warps asked: BLOCK_SIZE from its heuristic.
  FieldRequest warps[2] = {{}, request(std::optional<std::int64_t>(8))};
  Expected<Picked> picked = pick(*chooser, table.kernel, 300, Selection::config(warps));
  ASSERT_TRUE(picked.ok()) << picked.status().message();
  EXPECT_EQ(picked->block, 512);
  EXPECT_EQ(picked->warps, 8);
  EXPECT_EQ(picked->step, Step::heuristics);
  // BLOCK_SIZE asked: the num_warps heuristic reads the caller's BLOCK_SIZE.
  FieldRequest block[2] = {request(std::optional<std::int64_t>(2048)), {}};
  picked = pick(*chooser, table.kernel, 300, Selection::config(block));
  ASSERT_TRUE(picked.ok()) << picked.status().message();
  EXPECT_EQ(picked->block, 2048);
  EXPECT_EQ(picked->warps, 8);
}

TEST(LaunchChoice, TunedTablesComeBeforeHeuristicsAndKeepToTheRequirements) {
  SoftmaxTable table(true, true, true);
  // n_cols -> (BLOCK_SIZE index, num_warps index); 1000 leaves num_warps to the heuristic; the
  // entry at 3000 breaks the requirement for n_cols above 2048 (then the heuristics choose).
  table.bake("", table::TuningMatch::nearest, {{{1, 0, 1}}, {{1000, 3, -1}}, {{3000, 4, 0}}});
  Expected<Chooser> chooser = build_chooser(table.kernel);
  ASSERT_TRUE(chooser.ok());
  const table::TunedTable* tuned = &table.kernel.tuned[0];
  const struct {
    std::int64_t n_cols, block, warps;
    Step step;
  } cases[] = {
      {1, 128, 8, Step::table},         {100, 128, 8, Step::table},
      {500, 512, 4, Step::heuristics},  // nearest entry 1: BLOCK_SIZE 128 < 500
      {501, 1024, 4, Step::table},      // entry 1000; num_warps from the heuristic
      {1000, 1024, 4, Step::table},
      {2000, 2048, 8, Step::heuristics},  // a tie: the smaller key (1000), whose block is too short
      {2001, 2048, 4, Step::table},     {2048, 2048, 4, Step::table},
      {2049, 4096, 8, Step::heuristics},  {3000, 4096, 8, Step::heuristics},
  };
  for (const auto& c : cases) {
    Expected<Picked> picked = pick(*chooser, table.kernel, c.n_cols, Selection::automatic(), tuned);
    ASSERT_TRUE(picked.ok()) << c.n_cols << ": " << picked.status().message();
    EXPECT_EQ(picked->block, c.block) << c.n_cols;
    EXPECT_EQ(picked->warps, c.warps) << c.n_cols;
    EXPECT_EQ(picked->step, c.step) << c.n_cols;
  }
  // A caller's field is kept by every step: the table fills BLOCK_SIZE, the caller's num_warps stays.
  FieldRequest warps[2] = {{}, request(std::optional<std::int64_t>(4))};
  Expected<Picked> pinned = pick(*chooser, table.kernel, 100, Selection::config(warps), tuned);
  ASSERT_TRUE(pinned.ok()) << pinned.status().message();
  EXPECT_EQ(pinned->block, 128);
  EXPECT_EQ(pinned->warps, 4);
  EXPECT_EQ(pinned->step, Step::table);
  // Every field given: the caller's config, whatever the table says.
  FieldRequest both[2] = {request(std::optional<std::int64_t>(512)), request(std::optional<std::int64_t>(8))};
  Expected<Picked> given = pick(*chooser, table.kernel, 100, Selection::config(both), tuned);
  ASSERT_TRUE(given.ok()) << given.status().message();
  EXPECT_EQ(given->block, 512);
  EXPECT_EQ(given->step, Step::config);
  // Without a table for the device, the heuristics choose.
  Expected<Picked> untabled = pick(*chooser, table.kernel, 100, Selection::automatic(), nullptr);
  ASSERT_TRUE(untabled.ok());
  EXPECT_EQ(untabled->step, Step::heuristics);
}

// @triton.autotune(key=["BLOCK_SIZE"]) on a constexpr: the key is the value the caller gives.
TEST(LaunchChoice, AKeyOnAConfigFieldReadsTheCallersValue) {
  SoftmaxTable table(false, false, true, true);
  // BLOCK_SIZE -> num_warps index: 256 takes 8 warps, 1024 and above 4.
  table.bake("", table::TuningMatch::nearest, {{{256, -1, 1}}, {{1024, -1, 0}}});
  Expected<Chooser> chooser = build_chooser(table.kernel);
  ASSERT_TRUE(chooser.ok()) << chooser.status().message();
  const table::TunedTable* tuned = &table.kernel.tuned[0];
  for (const auto& [block, warps] : {std::pair<std::int64_t, std::int64_t>{256, 8}, {128, 8}, {1024, 4}, {4096, 4}}) {
    FieldRequest given[2] = {request(std::optional<std::int64_t>(block)), {}};
    for (int repeat = 0; repeat < 2; ++repeat) {  // the second call comes from the choice cache
      Expected<Picked> picked = pick(*chooser, table.kernel, 100, Selection::config(given), tuned);
      ASSERT_TRUE(picked.ok()) << block << ": " << picked.status().message();
      EXPECT_EQ(picked->block, block);
      EXPECT_EQ(picked->warps, warps) << block;
      EXPECT_EQ(picked->step, Step::table) << block;
    }
  }
  // No BLOCK_SIZE given: there is no key, the table is passed over for the default.
  Expected<Picked> automatic = pick(*chooser, table.kernel, 100, Selection::automatic(), tuned);
  ASSERT_TRUE(automatic.ok()) << automatic.status().message();
  EXPECT_EQ(automatic->block, 4096);
  EXPECT_EQ(automatic->step, Step::fallback);
}

}  // namespace
}  // namespace taot::testing

namespace taot::testing {
namespace {

TEST(LaunchChoice, AMissOnTheFirstArgumentWithAConfigReadsAsOneSentence) {
  SoftmaxTable table(true, true, false);
  Expected<Chooser> chooser = build_chooser(table.kernel);
  ASSERT_TRUE(chooser.ok());
  const std::vector<taot_arg> args = {arg(Ptr(CUdeviceptr{0x7f0000001000}, DType::fp16)), arg(std::int32_t{100})};
  FieldRequest block[2] = {request(std::optional<std::int64_t>(256)), {}};
  Expected<Choice> choice = chooser->choose(args.data(), args.size(), Selection::config(block), nullptr, nullptr, 132);
  ASSERT_FALSE(choice.ok());
  EXPECT_THAT(choice.status().message(),
              HasSubstr("no compiled variant accepts x_ptr = fp16 pointer 0x7f0000001000 (16-byte aligned); given the "
                        "requested config, the variants take x_ptr as: fp32"));
}

}  // namespace
}  // namespace taot::testing

namespace taot::testing {
namespace {

// The cache of automatic choices gives what a fresh walk gives, from any number of threads at
// once, over more distinct keys than it has slots (entries are overwritten all the time).
TEST(LaunchChoiceCache, RepeatedAndConcurrentChoicesEqualAFreshWalk) {
  SoftmaxTable table(true, true, true);
  table.bake("", table::TuningMatch::nearest, {{{1, 0, 1}}, {{1000, 3, -1}}, {{3000, 4, 0}}});
  Expected<Chooser> cached = build_chooser(table.kernel);
  ASSERT_TRUE(cached.ok());
  const table::TunedTable* tuned = &table.kernel.tuned[0];
  // The reference: each choice made by a chooser that has never seen another argument value.
  std::vector<std::string> expected;
  for (std::int64_t n_cols = 0; n_cols <= 4096; ++n_cols) {
    Expected<Chooser> fresh = build_chooser(table.kernel);
    Expected<Picked> picked = pick(*fresh, table.kernel, n_cols, Selection::automatic(), tuned);
    ASSERT_TRUE(picked.ok());
    expected.push_back(describe(picked));
  }
  std::atomic<int> mismatches{0};
  const auto work = [&](std::int64_t stride) {
    for (int round = 0; round < 3; ++round)
      for (std::int64_t i = 0; i <= 4096; ++i) {
        const std::int64_t n_cols = (i * stride) % 4097;
        Expected<Picked> picked = pick(*cached, table.kernel, n_cols, Selection::automatic(), tuned);
        if (describe(picked) != expected[static_cast<std::size_t>(n_cols)]) ++mismatches;
      }
  };
  std::vector<std::thread> threads;
  for (std::int64_t stride : {1, 7, 13, 4096}) threads.emplace_back(work, stride);
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
  // A different table (another device's, or one loaded at run time) is another key.
  table.bake("NVIDIA H100 80GB HBM3", table::TuningMatch::floor, {{{1, 5, 1}}});
  Expected<Picked> other = pick(*cached, table.kernel, 100, Selection::automatic(), &table.kernel.tuned[1]);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->block, 4096);
  EXPECT_EQ(other->step, Step::table);
  Expected<Picked> first = pick(*cached, table.kernel, 100, Selection::automatic(), &table.kernel.tuned[0]);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->block, 128);
}

// Choices for a config the caller asks for (as bind() and config keywords pass it) are remembered
// beside the automatic ones: interleaved with automatic choices and other configs, from several
// threads, each equals what a chooser that has seen nothing else answers, errors included.
TEST(LaunchChoiceCache, ConfigChoicesEqualAFreshWalkAndNeverAnAutomaticOne) {
  SoftmaxTable table(true, true, true);
  table.bake("", table::TuningMatch::nearest, {{{1, 0, 1}}, {{1000, 3, -1}}, {{3000, 4, 0}}});
  const table::TunedTable* tuned = &table.kernel.tuned[0];
  Expected<Chooser> cached = build_chooser(table.kernel);
  ASSERT_TRUE(cached.ok());
  // The selections: automatic; num_warps alone (the other field from the steps); both fields;
  // BLOCK_SIZE alone, small enough that long rows fail its requirement; a value never compiled.
  std::vector<std::array<FieldRequest, 2>> configs = {
      {FieldRequest{}, FieldRequest{true, 8}},
      {FieldRequest{true, 1024}, FieldRequest{true, 4}},
      {FieldRequest{true, 256}, FieldRequest{}},
      {FieldRequest{true, 300}, FieldRequest{}},
  };
  const auto selection_of = [&](std::size_t s) {
    return s == 0 ? Selection::automatic() : Selection::config(configs[s - 1].data());
  };
  constexpr std::int64_t kLongest = 4200;
  std::vector<std::vector<std::string>> expected(configs.size() + 1);
  for (std::size_t s = 0; s < expected.size(); ++s)
    for (std::int64_t n_cols = 0; n_cols <= kLongest; ++n_cols) {
      Expected<Chooser> fresh = build_chooser(table.kernel);
      expected[s].push_back(describe(pick(*fresh, table.kernel, n_cols, selection_of(s), tuned)));
    }
  // Sanity of the reference: the config steps answer as asked, and the requirement still holds.
  EXPECT_EQ(expected[2][100], "1024/4/config");
  EXPECT_THAT(expected[2][2000], HasSubstr("n_cols <= BLOCK_SIZE"));
  EXPECT_EQ(expected[0][1000], "1024/4/table");
  EXPECT_EQ(expected[1][1000], "1024/8/table");  // the table's BLOCK_SIZE, the num_warps asked for
  EXPECT_EQ(expected[3][200], "256/8/table");
  EXPECT_THAT(expected[3][300], HasSubstr("n_cols <= BLOCK_SIZE"));
  EXPECT_THAT(expected[4][10], HasSubstr("300"));
  std::atomic<int> mismatches{0};
  const auto work = [&](std::int64_t stride) {
    for (int round = 0; round < 2; ++round)
      for (std::int64_t i = 0; i <= kLongest; ++i) {
        const std::int64_t n_cols = (i * stride) % (kLongest + 1);
        for (std::size_t s = 0; s < expected.size(); ++s) {
          const std::size_t which = (s + static_cast<std::size_t>(i)) % expected.size();
          if (describe(pick(*cached, table.kernel, n_cols, selection_of(which), tuned)) !=
              expected[which][static_cast<std::size_t>(n_cols)])
            ++mismatches;
        }
      }
  };
  std::vector<std::thread> threads;
  for (std::int64_t stride : {1, 7, 4200}) threads.emplace_back(work, stride);
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace taot::testing

namespace taot::testing {
namespace {

TEST(LaunchChoiceCApi, ARequiredFieldMustBeGivenUnlessAVariantIs) {
  SoftmaxTable table(true, false, false);
  table.require_field(0);  // BLOCK_SIZE, as `n_cols: tl.constexpr` with no default would be
  FakeDriver fake{4};
  Kernel kernel{table.kernel};
  const std::vector<taot_arg> args = softmax_args(300);
  size_t variant = 99;
  EXPECT_EQ(taot_kernel_choose(kernel.handle(), args.data(), args.size(), nullptr, 0, &variant, nullptr),
            TAOT_INVALID_ARGUMENT);
  EXPECT_STREQ(taot_last_error(), "testlib::softmax: BLOCK_SIZE must be given: the function has no default for this "
                                  "constexpr, so Triton's JIT requires it too (compiled values: 128, 256, 512, 1024, "
                                  "2048, 4096)");
  const taot_config_value warps[] = {{"num_warps", 8, 0.0, nullptr}};  // another field does not do
  EXPECT_EQ(taot_kernel_choose(kernel.handle(), args.data(), args.size(), warps, 1, &variant, nullptr),
            TAOT_INVALID_ARGUMENT);
  const taot_config_value block[] = {{"BLOCK_SIZE", 512, 0.0, nullptr}};
  ASSERT_EQ(taot_kernel_choose(kernel.handle(), args.data(), args.size(), block, 1, &variant, nullptr), TAOT_OK)
      << taot_last_error();
  EXPECT_STREQ(table.kernel.variants[variant].id, "softmax_b512_w4");
  Expected<Choice> chosen = kernel.choose(args.data(), args.size(), Selection::variant(3));
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_EQ(chosen->variant, 3u);
}

TEST(LaunchChoiceCApi, ChooseReportsTheVariantAndTheStep) {
  SoftmaxTable table(true, true, false);
  FakeDriver fake{4};
  Kernel kernel{table.kernel};
  const std::vector<taot_arg> args = softmax_args(300);
  size_t variant = 99;
  taot_step step = TAOT_STEP_VARIANT;
  ASSERT_EQ(taot_kernel_choose(kernel.handle(), args.data(), args.size(), nullptr, 0, &variant, &step), TAOT_OK)
      << taot_last_error();
  EXPECT_STREQ(table.kernel.variants[variant].id, "softmax_b512_w4");
  EXPECT_EQ(step, TAOT_STEP_HEURISTICS);
  EXPECT_STREQ(taot_step_name(step), "heuristics");
  const taot_config_value warps[] = {{"num_warps", 8, 0.0, nullptr}};
  ASSERT_EQ(taot_kernel_choose(kernel.handle(), args.data(), args.size(), warps, 1, &variant, nullptr), TAOT_OK);
  EXPECT_STREQ(table.kernel.variants[variant].id, "softmax_b512_w8");
  const taot_config_value both[] = {{"BLOCK_SIZE", 1024, 0.0, nullptr}, {"num_warps", 4, 0.0, nullptr}};
  ASSERT_EQ(taot_kernel_choose(kernel.handle(), args.data(), args.size(), both, 2, nullptr, &step), TAOT_OK);
  EXPECT_EQ(step, TAOT_STEP_CONFIG);
  const std::vector<taot_arg> too_long = softmax_args(5000);
  EXPECT_EQ(taot_kernel_choose(kernel.handle(), too_long.data(), too_long.size(), nullptr, 0, &variant, &step),
            TAOT_NO_MATCHING_VARIANT);
  EXPECT_THAT(taot_last_error(), HasSubstr("heuristic BLOCK_SIZE = max(128, next_power_of_2(n_cols)) gives 8192"));
  EXPECT_STREQ(taot_step_name(static_cast<taot_step>(42)), "unknown");
  // Without a context, a kernel whose choice reads the device says so; with one it launches.
  Status launched = kernel.launch(nullptr, args.data(), args.size());
  EXPECT_EQ(launched.code(), TAOT_NO_CONTEXT);
  EXPECT_THAT(launched.message(), HasSubstr("testlib::softmax: no CUDA context is current on this thread"));
  fake.make_current(fake.add_context(90));
  launched = kernel.launch(nullptr, args.data(), args.size());
  EXPECT_TRUE(launched.ok()) << launched.message();
}

}  // namespace
}  // namespace taot::testing

namespace taot::testing {
namespace {

// add_bias(x_ptr, bias_ptr, n; HAS_BIAS in {0, 1}, BLOCK in {128, 256}), every combination a
// variant; bias_ptr is an ordinary pointer (not compiled None), so a null one is no fact of its own.
//   heuristic: HAS_BIAS = bias_ptr is not None;  requirement: n <= BLOCK
class BiasTable {
 public:
  BiasTable() {
    args_ = {{"x_ptr", table::ArgKind::pointer, kF32, 1, false, 0, nullptr, 0, false, false},
             {"bias_ptr", table::ArgKind::pointer, kF32, 1, false, 0, nullptr, 0, false, false},
             {"n", table::ArgKind::int_scalar, kI32, 1, false, 0, nullptr, 0, false, false}};
    fields_ = {{"HAS_BIAS", table::FieldKind::bool_value, kBools, nullptr, 2, 0, nullptr, false},
               {"BLOCK", table::FieldKind::int_value, kBlocks, nullptr, 2, 0, nullptr, false}};
    for (std::uint16_t bias = 0; bias < 2; ++bias)
      for (std::uint16_t block = 0; block < 2; ++block) {
        ids_.push_back("add_bias_" + std::to_string(bias) + "_" + std::to_string(kBlocks[block]));
        configs_.push_back({bias, block});
        table::Variant variant{};
        variant.id = ids_.back().c_str();
        variant.specialization = kSpecialization;
        variant.config = configs_.back().data();
        variant.params = kParams;
        variant.param_count = 3;
        variant.grid[0] = variant.grid[1] = variant.grid[2] = {kOne, 1};
        variant.images = &image_;
        variant.image_count = 1;
        variants_.push_back(variant);
      }
    const std::vector<std::string> arg_names = {"x_ptr", "bias_ptr", "n"}, field_names = {"HAS_BIAS", "BLOCK"};
    heuristic_ = {0, programs_.add("bias_ptr is not None",
                                   json::parse(R"([{"op":"isnone","name":"bias_ptr"},{"op":"not"}])"), arg_names,
                                   field_names)};
    requirement_ = programs_.add("n <= BLOCK", json::parse(R"([{"op":"arg","name":"n"},{"op":"field","name":"BLOCK"},
                                     {"op":"le"}])"),
                                 arg_names, field_names);
    kernel.library = "testlib";
    kernel.name = "add_bias";
    kernel.grid_text[0] = kernel.grid_text[1] = kernel.grid_text[2] = "1";
    kernel.args = args_.data();
    kernel.arg_count = 3;
    kernel.fields = fields_.data();
    kernel.field_count = 2;
    kernel.variants = variants_.data();
    kernel.variant_count = 4;
    kernel.heuristics = &heuristic_;
    kernel.heuristic_count = 1;
    kernel.requirements = &requirement_;
    kernel.requirement_count = 1;
  }
  BiasTable(const BiasTable&) = delete;

  table::KernelTable kernel{};
  Programs programs_;

 private:
  static constexpr taot_dtype kF32[] = {TAOT_DTYPE_FP32};
  static constexpr taot_dtype kI32[] = {TAOT_DTYPE_I32};
  static constexpr std::int64_t kBools[] = {0, 1};
  static constexpr std::int64_t kBlocks[] = {128, 256};
  static constexpr table::ArgSpecialization kSpecialization[] = {
      {TAOT_DTYPE_FP32, 0, 0, false}, {TAOT_DTYPE_FP32, 0, 0, false}, {TAOT_DTYPE_I32, 0, 0, false}};
  static constexpr std::uint16_t kParams[] = {0, 1, 2};
  static constexpr table::GridInstr kOne[] = {{table::GridOp::literal, 0, 1}};
  static constexpr unsigned char kCubin[32] = {};
  table::Image image_{"sm_90", 90, false, table::Vendor::nvidia, 32, kCubin, 32, "add_bias", 0, 4, 1, {1, 1, 1}, 0, 1, 0, 1, false, false, nullptr, 0, abi::TensordescLayout::triton_3_5, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr};
  std::vector<table::Arg> args_;
  std::vector<table::ConfigField> fields_;
  std::deque<std::string> ids_;
  std::deque<std::vector<std::uint16_t>> configs_;
  std::vector<table::Variant> variants_;
  table::Heuristic heuristic_{};
  table::RuleProgram requirement_{};
};

std::string chosen_id(const Chooser& chooser, const table::KernelTable& kernel, std::uint64_t bias,
                      std::int32_t n) {
  const taot_arg args[] = {arg(Ptr(CUdeviceptr{0x7f0000001000}, DType::fp32)), arg(Ptr(CUdeviceptr{bias}, DType::fp32)),
                           arg(n)};
  Expected<Choice> choice = chooser.choose(args, 3, Selection::automatic(), nullptr, nullptr, 132);
  return choice.ok() ? kernel.variants[choice->variant].id : choice.status().message();
}

TEST(LaunchChoiceCache, ANullPointerThatIsNoFactIsStillPartOfTheKey) {
  BiasTable table;
  Expected<Chooser> chooser = build_chooser(table.kernel);
  ASSERT_TRUE(chooser.ok()) << chooser.status().message();
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(chosen_id(*chooser, table.kernel, 0, 100), "add_bias_0_128");
    EXPECT_EQ(chosen_id(*chooser, table.kernel, 0x7f0000002000, 100), "add_bias_1_128");
  }
}

TEST(LaunchChoice, HeuristicsDecideOrFailTheDefaultNeverReplacesThem) {
  BiasTable table;
  Expected<Chooser> chooser = build_chooser(table.kernel);
  ASSERT_TRUE(chooser.ok());
  EXPECT_EQ(chosen_id(*chooser, table.kernel, 0x7f0000002000, 200), "add_bias_1_256");
  EXPECT_EQ(chosen_id(*chooser, table.kernel, 0x7f0000002000, 1000),
            "testlib::add_bias: no compiled variant with the heuristics' values (HAS_BIAS=true) satisfies n <= BLOCK "
            "with n=1000; compiled BLOCK values: 128, 256");
}

TEST(LaunchChoice, MalformedRulesAreRefusedBeforeAnyUse) {
  const struct {
    const char* program;
    const char* problem;
  } cases[] = {
      {R"([{"op":"arg","name":"n"},{"op":"jz","to":0},{"op":"lit","value":1}])", "jumps backwards or past its end"},
      {R"([{"op":"lit","value":1},{"op":"lit","value":2}])", "does not leave exactly one value"},
      {R"([{"op":"add"}])", "pops a value it does not have"},
      {R"([{"op":"isnone","name":"n"}])", "tests None on an argument that is never None"},
  };
  for (const auto& c : cases) {
    BiasTable table;
    table::RuleProgram bad = table.programs_.add("bad", json::parse(c.program), {"x_ptr", "bias_ptr", "n"},
                                                 {"HAS_BIAS", "BLOCK"});
    table.kernel.requirements = &bad;
    Expected<Chooser> chooser = build_chooser(table.kernel);
    ASSERT_FALSE(chooser.ok()) << c.program;
    EXPECT_EQ(chooser.status().code(), TAOT_INTERNAL);
    EXPECT_THAT(chooser.status().message(), HasSubstr(std::string("testlib::add_bias: rule bad ") + c.problem));
  }
  BiasTable deep;
  std::string program = "[";
  for (int i = 0; i < 33; ++i) program += std::string(i ? "," : "") + R"({"op":"lit","value":1})";
  for (int i = 0; i < 32; ++i) program += R"(,{"op":"add"})";
  table::RuleProgram too_deep = deep.programs_.add("deep", json::parse(program + "]"), {"n"}, {});
  deep.kernel.requirements = &too_deep;
  Expected<Chooser> chooser = build_chooser(deep.kernel);
  ASSERT_FALSE(chooser.ok());
  EXPECT_THAT(chooser.status().message(), HasSubstr("holds more values than the runtime's stack"));
}

TEST(RuleEvaluator, FloatsFollowPython) {
  static constexpr taot_dtype kF64[] = {TAOT_DTYPE_FP64};
  static constexpr taot_dtype kI64[] = {TAOT_DTYPE_I64};
  const table::Arg args[] = {{"x", table::ArgKind::float_scalar, kF64, 1, false, 0, nullptr, 0, false, false},
                             {"i", table::ArgKind::int_scalar, kI64, 1, false, 0, nullptr, 0, false, false}};
  table::KernelTable kernel{};
  kernel.library = "cases";
  kernel.name = "floats";
  kernel.args = args;
  kernel.arg_count = 2;
  Programs programs;
  const auto run = [&](const char* program, double x, std::int64_t i, detail::RuleValue* value) {
    const table::RuleProgram rule = programs.add(program, json::parse(program), {"x", "i"}, {});
    taot_arg values[2] = {};
    values[0].real64 = x;
    values[1].integer = i;
    return detail::evaluate_rule(rule, kernel, values, {nullptr, nullptr, nullptr}, 0, value);
  };
  detail::RuleValue value{};
  // 1.0 // 0.1 == 9.0 in Python (the exact quotient is just below 10)
  ASSERT_EQ(run(R"([{"op":"arg","name":"x"},{"op":"flit","value":0.1},{"op":"div"}])", 1.0, 0, &value),
            detail::RuleFault::none);
  EXPECT_EQ(value.real, 9.0);
  // 2**53 + 1 > 2.0**53 is True: ints and floats compare exactly
  ASSERT_EQ(run(R"([{"op":"arg","name":"i"},{"op":"arg","name":"x"},{"op":"gt"}])", 9007199254740992.0,
                9007199254740993, &value),
            detail::RuleFault::none);
  EXPECT_EQ(value.integer, 1);
  ASSERT_EQ(run(R"([{"op":"arg","name":"i"},{"op":"arg","name":"x"},{"op":"eq"}])", 9007199254740992.0,
                9007199254740993, &value),
            detail::RuleFault::none);
  EXPECT_EQ(value.integer, 0);
  // next_power_of_2 takes ints only, as Triton's
  EXPECT_EQ(run(R"([{"op":"arg","name":"x"},{"op":"next_power_of_2"}])", 1.5, 0, &value),
            detail::RuleFault::not_an_integer);
  EXPECT_EQ(detail::rule_value_text(detail::RuleValue::of_real(1e-7)), "1e-07");
}

TEST(LaunchChoice, ChoosingWithoutAContextRefusesRulesThatReadNumSms) {
  BiasTable table;
  table::RuleProgram sms = table.programs_.add("n <= num_sms * BLOCK", json::parse(R"([{"op":"arg","name":"n"},
      {"op":"num_sms"},{"op":"field","name":"BLOCK"},{"op":"mul"},{"op":"le"}])"), {"x_ptr", "bias_ptr", "n"},
      {"HAS_BIAS", "BLOCK"});
  table.kernel.requirements = &sms;
  FakeDriver fake{5};
  Kernel kernel{table.kernel};
  const taot_arg args[] = {arg(Ptr(CUdeviceptr{0x7f0000001000}, DType::fp32)), arg(Ptr(CUdeviceptr{0}, DType::fp32)),
                           arg(std::int32_t{100})};
  Expected<Choice> choice = kernel.choose(args, 3);
  ASSERT_FALSE(choice.ok());
  EXPECT_EQ(choice.status().code(), TAOT_NO_CONTEXT);
  fake.make_current(fake.add_context(90));
  choice = kernel.choose(args, 3);
  ASSERT_TRUE(choice.ok()) << choice.status().message();
  EXPECT_STREQ(table.kernel.variants[choice->variant].id, "add_bias_0_128");
}

}  // namespace
}  // namespace taot::testing
