// Scalars whose form is chosen at launch (table::ArgKind::scalar), through the recording fake
// driver: None selects the variants compiled None and passes nothing, an int and a float each
// select their own variants and are packed in place as the variant's type, a rule tests the form
// with isnone, and a form no variant takes is refused naming the argument.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "dispatch.h"
#include "fake_driver.h"
#include "taot/c_api.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {

constexpr std::uint64_t kX = 0x7f0000001000;

// A kernel like `clamp(x_ptr, softcap, lower, HAS_SOFTCAP: constexpr)` with `softcap = { type =
// "fp32", none = true }` and `lower = { type = ["i32", "fp32"] }`, HAS_SOFTCAP computed by
// `softcap is not None`. Variants (softcap, lower, HAS_SOFTCAP):
//   0: None, i32, false    1: None, fp32, false    2: fp32, i32, true    3: fp32, fp32, true
class ClampTable {
 public:
  ClampTable() {
    args_ = {{"x_ptr", table::ArgKind::pointer, kF32, 1, true, 0, nullptr, 0, false, false},
             {"softcap", table::ArgKind::scalar, kF32, 1, false, 0, nullptr, 0, true, false},
             {"lower", table::ArgKind::scalar, kI32F32, 2, false, 0, nullptr, 0, false, false}};
    field_ = {"HAS_SOFTCAP", table::FieldKind::bool_value, kBools, nullptr, 2, 0, nullptr, false};
    for (std::size_t v = 0; v < 4; ++v) {
      const bool none = v < 2;
      const taot_dtype lower = v % 2 == 0 ? TAOT_DTYPE_I32 : TAOT_DTYPE_FP32;
      ids_.push_back(std::string("clamp_") + (none ? "none" : "fp32") + "_" + (lower == TAOT_DTYPE_I32 ? "i32" : "fp32"));
      specializations_.push_back({{TAOT_DTYPE_FP32, 16, 0, false}, {TAOT_DTYPE_FP32, 0, 0, none}, {lower, 0, 0, false}});
      configs_.push_back({static_cast<std::uint16_t>(none ? 0 : 1)});
      params_.push_back(none ? std::vector<std::uint16_t>{0, 2} : std::vector<std::uint16_t>{0, 1, 2});
      cubins_.emplace_back(32, static_cast<unsigned char>(v));
      images_.push_back({"sm_90", 90, false, table::Vendor::nvidia, 32, cubins_.back().data(), 32, "clamp", 0, 4, 1, {1, 1, 1}, 0, 1, 0, 1,
                         false, false, nullptr, 0, abi::TensordescLayout::triton_3_5, 0, 0, 0, 0, nullptr, nullptr,
                         nullptr, nullptr});
    }
    for (std::size_t v = 0; v < 4; ++v) {
      table::Variant variant{};
      variant.id = ids_[v].c_str();
      variant.specialization = specializations_[v].data();
      variant.config = configs_[v].data();
      variant.params = params_[v].data();
      variant.param_count = static_cast<std::uint16_t>(params_[v].size());
      variant.grid[0] = variant.grid[1] = variant.grid[2] = {kOne, 1};
      variant.images = &images_[v];
      variant.image_count = 1;
      variants_.push_back(variant);
    }
    heuristic_ = {0, {"softcap is not None", kHasSoftcap, 2}};
    kernel.library = "testlib";
    kernel.name = "clamp";
    kernel.args = args_.data();
    kernel.arg_count = 3;
    kernel.fields = &field_;
    kernel.field_count = 1;
    kernel.variants = variants_.data();
    kernel.variant_count = 4;
    kernel.targets = kTargets;
    kernel.target_count = 1;
    kernel.heuristics = &heuristic_;
    kernel.heuristic_count = 1;
  }
  ClampTable(const ClampTable&) = delete;

  table::KernelTable kernel{};

 private:
  static constexpr taot_dtype kF32[] = {TAOT_DTYPE_FP32};
  static constexpr taot_dtype kI32F32[] = {TAOT_DTYPE_I32, TAOT_DTYPE_FP32};
  static constexpr std::int64_t kBools[] = {0, 1};
  static constexpr const char* kTargets[] = {"sm_90"};
  static constexpr table::GridInstr kOne[] = {{table::GridOp::literal, 0, 1}};
  static constexpr table::RuleInstr kHasSoftcap[] = {{table::RuleOp::isnone, 1, 0, 0.0},
                                                     {table::RuleOp::logical_not, 0, 0, 0.0}};
  std::vector<table::Arg> args_;
  table::ConfigField field_{};
  table::Heuristic heuristic_{};
  std::deque<std::string> ids_;
  std::deque<std::vector<table::ArgSpecialization>> specializations_;
  std::deque<std::vector<std::uint16_t>> configs_, params_;
  std::deque<std::vector<unsigned char>> cubins_;
  std::deque<table::Image> images_;
  std::vector<table::Variant> variants_;
};

// The call's arguments as the generated C++ wrapper makes them (softcap and lower are fp32-floated).
std::vector<taot_arg> clamp_args(const Scalar& softcap, const Scalar& lower) {
  return {arg(Ptr(CUdeviceptr{kX}, DType::fp32)), arg(softcap, TAOT_DTYPE_FP32), arg(lower, TAOT_DTYPE_FP32)};
}

class ScalarFormsTest : public ::testing::Test {
 protected:
  std::string launch(const std::vector<taot_arg>& args) {
    Expected<std::size_t> chosen = kernel.select(args.data(), args.size(), Selection::automatic());
    Status status = kernel.launch(nullptr, args.data(), args.size(), Selection::automatic());
    if (!status.ok()) return status.message();
    return chosen.ok() ? table.kernel.variants[*chosen].id : chosen.status().message();
  }

  FakeDriver fake{4};  // the None variants take 4 parameters (x, lower, two scratch pointers)
  ClampTable table;
  Kernel kernel{table.kernel};
};

std::uint32_t float_bits(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

TEST_F(ScalarFormsTest, EachFormSelectsItsVariantsAndTheRuleReadsNone) {
  fake.make_current(fake.add_context(90));
  EXPECT_EQ(launch(clamp_args(std::nullopt, -128)), "clamp_none_i32");
  EXPECT_EQ(launch(clamp_args(nullptr, -448.0)), "clamp_none_fp32");
  EXPECT_EQ(launch(clamp_args(30.0f, std::int64_t{0})), "clamp_fp32_i32");
  EXPECT_EQ(launch(clamp_args(std::optional<double>(0.75), 0.25)), "clamp_fp32_fp32");
  EXPECT_EQ(launch(clamp_args(std::optional<double>(), 7)), "clamp_none_i32");
}

TEST_F(ScalarFormsTest, ValuesArePackedInPlaceAsTheVariantsTypesAndNoneIsNotPassed) {
  fake.make_current(fake.add_context(90));
  fake.params_per_launch = 4;  // x, lower, two scratch pointers
  ASSERT_EQ(launch(clamp_args(std::nullopt, -128)), "clamp_none_i32");
  EXPECT_EQ(fake.launches().back().params[0], kX);
  EXPECT_EQ(fake.launches().back().params[1] & 0xffffffffu, static_cast<std::uint32_t>(-128));
  EXPECT_EQ(fake.launches().back().params[2], 0u);
  fake.params_per_launch = 5;  // x, softcap, lower, two scratch pointers
  ASSERT_EQ(launch(clamp_args(2.5, -448.0)), "clamp_fp32_fp32");
  EXPECT_EQ(fake.launches().back().params[1] & 0xffffffffu, float_bits(2.5f));
  EXPECT_EQ(fake.launches().back().params[2] & 0xffffffffu, float_bits(-448.0f));
}

TEST_F(ScalarFormsTest, TheCTypedFormConvertsAsTheCppOne) {
  const taot_scalar none{TAOT_DTYPE_UNKNOWN, 0, 0.0}, integer{TAOT_DTYPE_I64, -5, 0.0}, real{TAOT_DTYPE_FP64, 0, 1.5};
  EXPECT_EQ(arg(none, TAOT_DTYPE_FP32).dtype, TAOT_DTYPE_UNKNOWN);
  EXPECT_EQ(arg(integer, TAOT_DTYPE_FP32).integer, -5);
  EXPECT_EQ(arg(integer, TAOT_DTYPE_FP32).dtype, TAOT_DTYPE_I64);
  EXPECT_EQ(arg(real, TAOT_DTYPE_FP32).real32, 1.5f);
  EXPECT_EQ(arg(real, TAOT_DTYPE_FP32).dtype, TAOT_DTYPE_FP32);
  EXPECT_EQ(arg(real, TAOT_DTYPE_FP64).real64, 1.5);
  EXPECT_EQ(arg(Scalar(std::nullopt), TAOT_DTYPE_FP64).dtype, TAOT_DTYPE_UNKNOWN);
  // A float for an argument that takes none keeps its form (no variant takes it): never None.
  EXPECT_EQ(arg(real, TAOT_DTYPE_UNKNOWN).dtype, TAOT_DTYPE_FP64);
  // An int for an argument that takes only floats is that float, as the Python binding takes it.
  EXPECT_EQ(arg(integer, TAOT_DTYPE_FP32, false).dtype, TAOT_DTYPE_FP32);
  EXPECT_EQ(arg(integer, TAOT_DTYPE_FP32, false).real32, -5.0f);
}

TEST_F(ScalarFormsTest, AFormNoVariantTakesIsRefusedNamingTheArgument) {
  fake.make_current(fake.add_context(90));
  const std::string miss = launch(clamp_args(1.0, std::nullopt));  // lower was not compiled None
  EXPECT_NE(miss.find("accepts lower = None"), std::string::npos) << miss;
  EXPECT_NE(miss.find("the variants take lower as: i32 any value, fp32"), std::string::npos) << miss;
  std::vector<taot_arg> wrong = clamp_args(1.0, 2);
  wrong[1].dtype = TAOT_DTYPE_FP64;  // an fp64 form for an fp32 argument (the C ABI, set by hand)
  const std::string form = launch(wrong);
  EXPECT_NE(form.find("softcap = "), std::string::npos) << form;
}

}  // namespace
}  // namespace taot::testing
