// What manifest schema 2 added, at run time through the recording fake driver: pointers compiled
// None, launch-only ints, string config fields, num_sms in grids, variants with images for only
// some targets, and grids given at the call (C++ and the C ABI).
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "dispatch.h"
#include "fake_driver.h"
#include "taot/c_api.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {

constexpr std::uint64_t kX = 0x7f0000001000, kBias = 0x7f0000002000;

// A kernel like `features(x_ptr, bias_ptr, n, ACTIVATION: constexpr, n_rows (launch-only))` with
// grid min(n_rows, num_sms). Variants (bias, ACTIVATION, images):
//   0: None, relu, sm_80 + sm_90     1: fp16, relu, sm_90 only
//   2: fp16, gelu, sm_80 + sm_90     3: None, gelu, sm_90 only
class FeatureTable {
 public:
  FeatureTable() {
    args_ = {{"x_ptr", table::ArgKind::pointer, kX32, 1, true, 0, nullptr, 0, false, false},
             {"bias_ptr", table::ArgKind::pointer, kF16, 1, false, 0, nullptr, 0, true, false},
             {"n", table::ArgKind::int_scalar, kI32, 1, false, 0, nullptr, 0, false, false},
             {"n_rows", table::ArgKind::int_scalar, kI32, 1, false, 0, nullptr, 0, false, true}};
    field_ = {"ACTIVATION", table::FieldKind::string_value, nullptr, nullptr, 2, 1, kActivations, false};
    const struct {
      bool none;
      std::uint16_t activation;
      bool sm80;
    } choices[] = {{true, 1, true}, {false, 1, false}, {false, 0, true}, {true, 0, false}};
    for (std::size_t v = 0; v < 4; ++v) {
      ids_.push_back("features_" + std::to_string(v));
      specializations_.push_back({{TAOT_DTYPE_FP32, 16, 0, false},
                                  {TAOT_DTYPE_FP16, 0, 0, choices[v].none},
                                  {TAOT_DTYPE_I32, 0, 0, false},
                                  {TAOT_DTYPE_I32, 0, 0, false}});
      configs_.push_back({choices[v].activation});
      params_.push_back(choices[v].none ? std::vector<std::uint16_t>{0, 2} : std::vector<std::uint16_t>{0, 1, 2});
      images_.emplace_back();
      if (choices[v].sm80) images_.back().push_back(image("sm_80", 80, false, v));
      images_.back().push_back(image("sm_90", 90, false, v));
      table::Variant variant{};
      variant.id = ids_.back().c_str();
      variant.specialization = specializations_.back().data();
      variant.config = configs_.back().data();
      variant.params = params_.back().data();
      variant.param_count = static_cast<std::uint16_t>(params_.back().size());
      variant.grid[0] = {kGridX, 3};
      variant.grid[1] = {kOne, 1};
      variant.grid[2] = {kOne, 1};
      variant.images = images_.back().data();
      variant.image_count = static_cast<std::uint16_t>(images_.back().size());
      variants_.push_back(variant);
    }
    kernel.library = "testlib";
    kernel.name = "features";
    kernel.grid_text[0] = "min(n_rows, num_sms)";
    kernel.grid_text[1] = kernel.grid_text[2] = "1";
    kernel.args = args_.data();
    kernel.arg_count = 4;
    kernel.fields = &field_;
    kernel.field_count = 1;
    kernel.variants = variants_.data();
    kernel.variant_count = 4;
    kernel.targets = kTargets;
    kernel.target_count = 2;
  }
  FeatureTable(const FeatureTable&) = delete;

  table::KernelTable kernel{};

 private:
  table::Image image(const char* target, std::uint16_t arch, bool specific, std::size_t variant) {
    cubins_.emplace_back(32, static_cast<unsigned char>(variant * 2 + (arch == 90)));
    return {target, arch, specific, table::Vendor::nvidia, 32, cubins_.back().data(), 32, "features", 0, 4, 1, {1, 1, 1},
            0, 1, 0, 1, false, false, nullptr, 0, abi::TensordescLayout::triton_3_5, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr};
  }
  static constexpr taot_dtype kX32[] = {TAOT_DTYPE_FP32};
  static constexpr taot_dtype kF16[] = {TAOT_DTYPE_FP16};
  static constexpr taot_dtype kI32[] = {TAOT_DTYPE_I32};
  static constexpr const char* kActivations[] = {"gelu", "relu"};
  static constexpr const char* kTargets[] = {"sm_80", "sm_90"};
  static constexpr table::GridInstr kGridX[] = {
      {table::GridOp::arg, 3, 0}, {table::GridOp::num_sms, 0, 0}, {table::GridOp::min, 0, 0}};
  static constexpr table::GridInstr kOne[] = {{table::GridOp::literal, 0, 1}};
  std::vector<table::Arg> args_;
  table::ConfigField field_{};
  std::deque<std::string> ids_;
  std::deque<std::vector<table::ArgSpecialization>> specializations_;
  std::deque<std::vector<std::uint16_t>> configs_, params_;
  std::deque<std::vector<table::Image>> images_;
  std::deque<std::vector<unsigned char>> cubins_;
  std::vector<table::Variant> variants_;
};

std::vector<taot_arg> feature_args(std::uint64_t bias, std::int32_t n_rows = 1000, DType bias_dtype = DType::fp16) {
  return {arg(Ptr(CUdeviceptr{kX}, DType::fp32)), arg(Ptr(CUdeviceptr{bias}, bias_dtype)), arg(std::int32_t{4096}),
          arg(n_rows)};
}

class SchemaTwoTest : public ::testing::Test {
 protected:
  // Launches and returns the id of the variant the launch selected (select() on the same device).
  std::string launch(const std::vector<taot_arg>& args, const Selection& selection = Selection::automatic()) {
    Expected<std::size_t> chosen = kernel.select(args.data(), args.size(), selection);
    Status status = kernel.launch(nullptr, args.data(), args.size(), selection);
    if (!status.ok()) return status.message();
    return chosen.ok() ? table.kernel.variants[*chosen].id : chosen.status().message();
  }

  FakeDriver fake{4};  // the None variants take 4 parameters (x, n, two scratch pointers)
  FeatureTable table;
  Kernel kernel{table.kernel};
};

TEST_F(SchemaTwoTest, NullPointerSelectsTheNoneVariantsAndOnlyThem) {
  fake.make_current(fake.add_context(90));
  EXPECT_EQ(launch(feature_args(0)), "features_0");      // None, the default relu
  EXPECT_EQ(launch(feature_args(kBias)), "features_1");  // fp16 bias, relu
  FieldRequest gelu[1] = {request(std::optional<std::string_view>("gelu"))};
  EXPECT_EQ(launch(feature_args(0), Selection::config(gelu)), "features_3");
  EXPECT_EQ(launch(feature_args(kBias), Selection::config(gelu)), "features_2");
  // A null pointer of any dtype is None; a non-null pointer of another dtype is refused.
  EXPECT_EQ(launch(feature_args(0, 1000, DType::fp32)), "features_0");
  const std::string miss = launch(feature_args(kBias, 1000, DType::fp32));
  EXPECT_NE(miss.find("testlib::features: no compiled variant for this GPU (Fake GPU 0, sm_90) accepts bias_ptr = "
                      "fp32 pointer 0x7f0000002000 (16-byte aligned); given the arguments before it, the variants "
                      "take bias_ptr as: None, fp16 any alignment; the kernel was compiled for sm_80, sm_90"),
            std::string::npos)
      << miss;
}

TEST_F(SchemaTwoTest, NoneAndLaunchOnlyArgumentsAreNotPassedToTheKernel) {
  fake.make_current(fake.add_context(90));
  ASSERT_EQ(launch(feature_args(0, 7)), "features_0");
  RecordedLaunch none = fake.launches().back();
  EXPECT_EQ(none.params[0], kX);
  EXPECT_EQ(none.params[1] & 0xffffffffu, 4096u);  // n, then the two scratch pointers: no bias, no n_rows
  EXPECT_EQ(none.params[2], 0u);
  EXPECT_EQ(none.params[3], 0u);
  EXPECT_EQ(none.grid[0], 7u);  // min(n_rows, num_sms): n_rows, read by the grid
  fake.params_per_launch = 5;  // x, bias, n, two scratch pointers
  ASSERT_EQ(launch(feature_args(kBias, 7)), "features_1");
  RecordedLaunch with_bias = fake.launches().back();
  EXPECT_EQ(with_bias.params[1], kBias);
  EXPECT_EQ(with_bias.params[2] & 0xffffffffu, 4096u);
  EXPECT_EQ(with_bias.params[3], 0u);
  EXPECT_EQ(with_bias.params[4], 0u);
}

TEST_F(SchemaTwoTest, ExplicitVariantMissesNameTheNullPointer) {
  fake.make_current(fake.add_context(90));
  auto args = feature_args(0);
  Status status = kernel.launch(nullptr, args.data(), args.size(), Selection::variant(1));
  ASSERT_EQ(status.code(), TAOT_NO_MATCHING_VARIANT);
  EXPECT_EQ(status.message(), "testlib::features: variant features_1 does not accept bias_ptr = None (a null "
                              "pointer); it takes bias_ptr as: fp16 any alignment");
  args = feature_args(kBias);
  status = kernel.launch(nullptr, args.data(), args.size(), Selection::variant(0));
  EXPECT_EQ(status.message(), "testlib::features: variant features_0 does not accept bias_ptr = fp16 pointer "
                              "0x7f0000002000 (16-byte aligned); it takes bias_ptr as: None");
}

TEST_F(SchemaTwoTest, StringFieldsSelectExactlyAndMissesQuoteThem) {
  fake.make_current(fake.add_context(90));
  FieldRequest tanh[1] = {request(std::optional<std::string_view>("tanh"))};
  auto args = feature_args(0);
  Status status = kernel.launch(nullptr, args.data(), args.size(), Selection::config(tanh));
  ASSERT_EQ(status.code(), TAOT_NO_MATCHING_VARIANT);
  EXPECT_EQ(status.message(), "testlib::features: config ACTIVATION=\"tanh\" was not compiled; compiled values: "
                              "\"gelu\", \"relu\"");
  // Compared as whole strings: a prefix is another value.
  FieldRequest prefix[1] = {request(std::optional<std::string_view>("gel"))};
  EXPECT_EQ(kernel.launch(nullptr, args.data(), args.size(), Selection::config(prefix)).code(), TAOT_NO_MATCHING_VARIANT);
  EXPECT_EQ(kernel.variants()[3].config_text("ACTIVATION"), std::optional<std::string_view>("gelu"));
  EXPECT_FALSE(kernel.variants()[3].config_integer("ACTIVATION").has_value());
  EXPECT_EQ(kernel.variants()[3].describe(),
            "x_ptr: fp32 align 16, bias_ptr: None, n: i32, n_rows: i32; ACTIVATION=\"gelu\"; sm_90");
}

TEST_F(SchemaTwoTest, NumSmsIsTheDevicesMultiprocessorCountAskedOncePerDevice) {
  fake.make_current(fake.add_context(90, 232448, 132));
  ASSERT_EQ(launch(feature_args(0, 1000)), "features_0");
  EXPECT_EQ(fake.launches().back().grid[0], 132u);
  ASSERT_EQ(launch(feature_args(0, 1000)), "features_0");
  ASSERT_EQ(launch(feature_args(0, 100)), "features_0");
  EXPECT_EQ(fake.launches().back().grid[0], 100u);
  EXPECT_EQ(fake.multiprocessor_queries(), 1);
  CUcontext small = fake.add_context(90, 232448, 16);
  fake.make_current(small);
  ASSERT_EQ(launch(feature_args(0, 1000)), "features_0");
  EXPECT_EQ(fake.launches().back().grid[0], 16u);
  EXPECT_EQ(fake.multiprocessor_queries(), 2);
}

TEST_F(SchemaTwoTest, SelectionConsidersOnlyVariantsTheDeviceRuns) {
  CUcontext ampere = fake.add_context(80);
  CUcontext hopper = fake.add_context(90);
  // The same arguments select per device: the memo keeps them apart.
  fake.make_current(hopper);
  EXPECT_EQ(launch(feature_args(kBias)), "features_1");
  fake.make_current(ampere);
  EXPECT_EQ(launch(feature_args(kBias)), "features_2");  // 1 has no sm_80 image
  EXPECT_EQ(launch(feature_args(0)), "features_0");
  fake.make_current(hopper);
  EXPECT_EQ(launch(feature_args(kBias)), "features_1");
  // On sm_80 no variant compiled gelu with None.
  fake.make_current(ampere);
  FieldRequest gelu[1] = {request(std::optional<std::string_view>("gelu"))};
  const std::string miss = launch(feature_args(0), Selection::config(gelu));
  EXPECT_NE(miss.find("no compiled variant for this GPU (Fake GPU 0, sm_80) accepts bias_ptr = None (a null pointer); "
                      "given the arguments before it and the requested config, the variants take bias_ptr as: fp16 any "
                      "alignment; the kernel was "
                      "compiled for sm_80, sm_90"),
            std::string::npos)
      << miss;
  // An explicit variant without an image for the device keeps the loader's error.
  auto args = feature_args(kBias);
  Status status = kernel.launch(nullptr, args.data(), args.size(), Selection::variant(1));
  EXPECT_EQ(status.code(), TAOT_UNSUPPORTED_DEVICE);
  EXPECT_NE(status.message().find("no cubin for this GPU (Fake GPU 0, sm_80); the library was compiled for sm_90"),
            std::string::npos)
      << status.message();
}

TEST_F(SchemaTwoTest, ADeviceNoVariantRunsIsNamedWithTheKernelsTargets) {
  fake.make_current(fake.add_context(75));
  auto args = feature_args(0);
  Status status = kernel.launch(nullptr, args.data(), args.size());
  EXPECT_EQ(status.code(), TAOT_UNSUPPORTED_DEVICE);
  EXPECT_EQ(status.message(), "testlib::features: no variant has an image for this GPU (Fake GPU 0, sm_75); the "
                              "kernel was compiled for sm_80, sm_90");
}

TEST_F(SchemaTwoTest, PreloadLoadsOnlyTheVariantsTheDeviceRuns) {
  fake.make_current(fake.add_context(80));
  ASSERT_TRUE(kernel.preload().ok());
  EXPECT_EQ(fake.total_loads(), 2);  // variants 0 and 2
  fake.make_current(fake.add_context(75));
  EXPECT_EQ(kernel.preload().code(), TAOT_UNSUPPORTED_DEVICE);
}

TEST(SchemaTwoUniform, KernelsWhoseVariantsShareTargetsNeverAskForTheDevice) {
  FakeDriver fake;
  AddKernelTable table;
  Kernel kernel(table.kernel);
  EXPECT_FALSE(detail::FactIndex::build(table.kernel).value().device_aware());
  fake.make_current(fake.add_context(90));
  std::vector<taot_arg> args = {arg(Ptr(CUdeviceptr{kX}, DType::fp32)), arg(Ptr(CUdeviceptr{kX}, DType::fp32)),
                                arg(Ptr(CUdeviceptr{kX}, DType::fp32)), arg(std::int64_t{4096})};
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());
  const int after_load = fake.device_queries();  // the loader asks once, to pick the cubin
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());
  EXPECT_EQ(fake.device_queries(), after_load);
  EXPECT_EQ(fake.multiprocessor_queries(), 0);
  // A null pointer for an argument without None variants is a pointer of its dtype, as before.
  args[0] = arg(Ptr(CUdeviceptr{0}, DType::fp32));
  Expected<std::size_t> chosen = kernel.select(args.data(), args.size());
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_STREQ(table.kernel.variants[*chosen].id, "fp32_a7_i32h16_B1024_w4");
}

class GivenGridTest : public ::testing::Test {
 protected:
  std::vector<taot_arg> args(std::int64_t n) {
    return {arg(Ptr(CUdeviceptr{kX}, DType::fp32)), arg(Ptr(CUdeviceptr{kX}, DType::fp32)),
            arg(Ptr(CUdeviceptr{kX}, DType::fp32)), arg(n)};
  }
  FakeDriver fake;
  AddKernelTable table;
  Kernel kernel{table.kernel};
};

TEST_F(GivenGridTest, ReplacesTheKernelsGridInCxx) {
  fake.make_current(fake.add_context(90));
  auto values = args(5000);
  ASSERT_TRUE(kernel.launch(nullptr, values.data(), values.size(), Selection::automatic(), Grid{3, 2, 4}).ok());
  const RecordedLaunch launch = fake.launches().at(0);
  EXPECT_EQ(launch.grid[0], 3u);
  EXPECT_EQ(launch.grid[1], 2u);
  EXPECT_EQ(launch.grid[2], 4u);
  // Grid{n} is (n, 1, 1); a zero dimension launches nothing, even where the kernel's grid would.
  values = args(4096);  // variant 0 compiled n %16 == 0
  ASSERT_TRUE(kernel.launch(nullptr, values.data(), values.size(), Selection::variant(0), Grid{7}).ok());
  EXPECT_EQ(fake.launches().at(1).grid[0], 7u);
  EXPECT_EQ(fake.launches().at(1).grid[1], 1u);
  ASSERT_TRUE(kernel.launch(nullptr, values.data(), values.size(), Selection::automatic(), Grid{0, 1, 1}).ok());
  EXPECT_EQ(fake.launches().size(), 2u);
  Status too_large = kernel.launch(nullptr, values.data(), values.size(), Selection::automatic(), Grid{1, 70000, 1});
  EXPECT_EQ(too_large.code(), TAOT_OUT_OF_RESOURCES);
  EXPECT_NE(too_large.message().find("grid (1, 70000, 1) exceeds the CUDA limits"), std::string::npos)
      << too_large.message();
  Status negative = kernel.launch(nullptr, values.data(), values.size(), Selection::automatic(), Grid{-1, 1, 1});
  EXPECT_EQ(negative.code(), TAOT_INVALID_ARGUMENT);
  EXPECT_EQ(negative.message(), "testlib::add_kernel: the grid given, (-1, 1, 1), has a negative dimension");
}

TEST_F(GivenGridTest, ReplacesTheKernelsGridThroughTheCAbi) {
  fake.make_current(fake.add_context(90));
  auto values = args(1000);
  const std::int64_t grid[3] = {9, 1, 1};
  taot_launch_options options = TAOT_LAUNCH_OPTIONS_INIT;
  options.grid = grid;
  ASSERT_EQ(taot_launch_ex(kernel.handle(), nullptr, values.data(), values.size(), &options), TAOT_OK) << taot_last_error();
  EXPECT_EQ(fake.launches().at(0).grid[0], 9u);
  // With a config by name (a string field would set `text`) and with a variant.
  taot_config_value config[] = {{"BLOCK_SIZE", 256, 0.0, nullptr}};
  options.config = config;
  options.config_count = 1;
  ASSERT_EQ(taot_launch_ex(kernel.handle(), nullptr, values.data(), values.size(), &options), TAOT_OK) << taot_last_error();
  EXPECT_EQ(fake.launches().at(1).block[0], 128u);
  options.variant = 3;
  EXPECT_EQ(taot_launch_ex(kernel.handle(), nullptr, values.data(), values.size(), &options), TAOT_INVALID_ARGUMENT);
  EXPECT_STREQ(taot_last_error(), "testlib::add_kernel: give either a variant or a config, not both");
  options.config_count = 0;
  values = args(4096);  // variant 3 compiled n %16 == 0
  ASSERT_EQ(taot_launch_ex(kernel.handle(), nullptr, values.data(), values.size(), &options), TAOT_OK) << taot_last_error();
  // Zero and too-large grids; null options launch as taot_launch does.
  const std::int64_t empty[3] = {4, 0, 1};
  options.grid = empty;
  ASSERT_EQ(taot_launch_ex(kernel.handle(), nullptr, values.data(), values.size(), &options), TAOT_OK);
  EXPECT_EQ(fake.launches().size(), 3u);
  const std::int64_t huge[3] = {1, 1, 65536};
  options.grid = huge;
  EXPECT_EQ(taot_launch_ex(kernel.handle(), nullptr, values.data(), values.size(), &options), TAOT_OUT_OF_RESOURCES);
  ASSERT_EQ(taot_launch_ex(kernel.handle(), nullptr, values.data(), values.size(), nullptr), TAOT_OK);
  EXPECT_EQ(fake.launches().back().grid[0], 4u);  // cdiv(4096, 1024)
  options.struct_size = 3;
  EXPECT_EQ(taot_launch_ex(kernel.handle(), nullptr, values.data(), values.size(), &options), TAOT_INVALID_ARGUMENT);
}

TEST(SchemaTwoCApi, StringConfigFieldsByText) {
  FakeDriver fake(4);
  FeatureTable table;
  Kernel kernel(table.kernel);
  fake.make_current(fake.add_context(90));
  auto values = feature_args(0);
  taot_config_value gelu[] = {{"ACTIVATION", 0, 0.0, "gelu"}};
  ASSERT_EQ(taot_launch(kernel.handle(), nullptr, values.data(), values.size(), gelu, 1), TAOT_OK) << taot_last_error();
  EXPECT_EQ(fake.loads_of(table.kernel.variants[3].images[0].cubin), 1);  // features_3: None, gelu
  taot_config_value missing[] = {{"ACTIVATION", 0, 0.0, nullptr}};
  EXPECT_EQ(taot_launch(kernel.handle(), nullptr, values.data(), values.size(), missing, 1), TAOT_INVALID_ARGUMENT);
  EXPECT_STREQ(taot_last_error(), "testlib::features: config field ACTIVATION takes a string: set taot_config_value.text");
}

}  // namespace
}  // namespace taot::testing
