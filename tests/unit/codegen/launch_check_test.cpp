// The check of cubins against the launch ABI (check_launch_abi): the parameter sizes the runtime
// passes in each layout, real cubins of Triton 3.6 and 3.7 (data/README.md) accepted in their own
// layout and refused in the other naming the kernel, variant, target and both lists, TMA images,
// and cubins that lack the kernel or its parameter table.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_cubin.h"
#include "manifest_builder.h"
#include "taot/codegen/launch_check.h"

namespace taot::codegen {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

const std::filesystem::path kData = TAOT_TEST_DATA;

Arg make_arg(const std::string& name, ArgKind kind, std::vector<DType> types = {}) {
  Arg arg;
  arg.name = name;
  arg.kind = kind;
  arg.types = std::move(types);
  if (kind == ArgKind::tensordesc) {
    arg.rank = 2;
    arg.blocks = {{16, 16}};
  }
  return arg;
}

// desc_copy(in_desc, out_desc: tensordesc<fp16[16, 16]>, M: i32, scale: fp32, flag: i1, BM:
// constexpr), as data/make_descriptor_cubins.py compiles it; one variant with an sm_80 image.
class LaunchCheckTest : public ::testing::Test {
 protected:
  LaunchCheckTest() {
    kernel.name = kernel.function = "desc_copy";
    kernel.args = {make_arg("in_desc", ArgKind::tensordesc, {DType::fp16}),
                   make_arg("out_desc", ArgKind::tensordesc, {DType::fp16}),
                   make_arg("M", ArgKind::int_scalar, {DType::i32}), make_arg("scale", ArgKind::float_scalar, {DType::fp32}),
                   make_arg("flag", ArgKind::bool_scalar, {DType::i1}), make_arg("BM", ArgKind::constexpr_value)};
    variant.id = "desc_copy_fp16_BM16";
    variant.specialization = {{DType::fp16, 0, 0, false}, {DType::fp16, 0, 0, false}, {DType::i32, 0, 0, false},
                              {DType::fp32, 0, 0, false}, {DType::i1, 0, 0, false}};
    variant.params = {0, 1, 2, 3, 4};
    image.target = "sm_80";
    image.arch = 80;
    image.function_name = "desc_copy";
  }

  Status check(const std::string& cubin_name, abi::TensordescLayout layout) {
    image.cubin_path = kData / cubin_name;
    image.launch_abi.tensordesc_layout = layout;
    return check_launch_abi(kernel, variant, image, testing::read_file(image.cubin_path));
  }

  Kernel kernel;
  Variant variant;
  Image image;
};

// One descriptor without TMA: base, shape i64 x2, strides i64 x2, padding i1, [round i1], shape
// i32 x2, strides i64 x2.
const std::vector<std::uint32_t> kDecomposed35 = {8, 8, 8, 8, 8, 1, 4, 4, 8, 8};
const std::vector<std::uint32_t> kDecomposed37 = {8, 8, 8, 8, 8, 1, 1, 4, 4, 8, 8};

std::vector<std::uint32_t> launch_of(const std::vector<std::uint32_t>& descriptor) {
  std::vector<std::uint32_t> sizes = descriptor;
  sizes.insert(sizes.end(), descriptor.begin(), descriptor.end());
  sizes.insert(sizes.end(), {4, 4, 1, 8, 8});  // M, scale, flag, global and profile scratch
  return sizes;
}

TEST_F(LaunchCheckTest, PassesDescriptorsInTheImagesLayout) {
  EXPECT_EQ(launch_param_sizes(kernel, variant, image), launch_of(kDecomposed35));
  image.launch_abi.tensordesc_layout = abi::TensordescLayout::triton_3_7;
  EXPECT_EQ(launch_param_sizes(kernel, variant, image), launch_of(kDecomposed37));
  // With TMA maps: the 128-byte map, shape i32 x2, strides i64 x2, in both layouts.
  image.arch = 90;
  image.tensordesc_meta.resize(2);
  EXPECT_EQ(launch_param_sizes(kernel, variant, image), launch_of({128, 4, 4, 8, 8}));
  image.launch_abi.tensordesc_layout = abi::TensordescLayout::triton_3_5;
  EXPECT_EQ(launch_param_sizes(kernel, variant, image), launch_of({128, 4, 4, 8, 8}));
}

TEST_F(LaunchCheckTest, RealCubinsPassInTheirOwnTritonsLayout) {
  Status triton36 = check("desc_copy_3.6.0_sm80.cubin", abi::TensordescLayout::triton_3_5);
  EXPECT_TRUE(triton36.ok()) << triton36.message();
  Status triton37 = check("desc_copy_3.7.1_sm80.cubin", abi::TensordescLayout::triton_3_7);
  EXPECT_TRUE(triton37.ok()) << triton37.message();
}

TEST_F(LaunchCheckTest, ACubinOfTriton37CheckedAgainstTheLayoutOf35IsRefused) {
  image.triton_version = "3.6.0";
  Status status = check("desc_copy_3.7.1_sm80.cubin", abi::TensordescLayout::triton_3_5);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), TAOT_INVALID_ARGUMENT);
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr("kernel desc_copy variant desc_copy_fp16_BM16 target sm_80"),
                    HasSubstr("desc_copy_3.7.1_sm80.cubin"),
                    HasSubstr("(Triton 3.6.0: tensor descriptor layout 3.5, 2 scratch pointers)"),
                    HasSubstr("expected 25 parameters [8, 8, 8, 8, 8, 1, 4, 4, 8, 8, 8, 8, 8, 8, 8, 1, 4, 4, 8, 8, 4, "
                              "4, 1, 8, 8], the cubin has 27 [8, 8, 8, 8, 8, 1, 1, 4, 4, 8, 8, 8, 8, 8, 8, 8, 1, 1, 4, "
                              "4, 8, 8, 4, 4, 1, 8, 8]")));
}

TEST_F(LaunchCheckTest, ACubinOfTriton36CheckedAgainstTheLayoutOf37IsRefused) {
  Status status = check("desc_copy_3.6.0_sm80.cubin", abi::TensordescLayout::triton_3_7);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), AllOf(HasSubstr("an unrecorded Triton: tensor descriptor layout 3.7"),
                                      HasSubstr("expected 27 parameters"), HasSubstr("the cubin has 25 [")));
}

TEST_F(LaunchCheckTest, AScalarOfAnotherSizeIsRefused) {
  variant.specialization[2].type = DType::i64;  // M compiled as i64 takes 8 bytes; the cubin's takes 4
  Status status = check("desc_copy_3.6.0_sm80.cubin", abi::TensordescLayout::triton_3_5);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("8, 8, 8, 8, 1, 4, 4, 8, 8, 8, 4, 1, 8, 8], the cubin has 25"));
}

TEST_F(LaunchCheckTest, ACudaElfWithoutTheKernelOrItsParametersIsRefused) {
  using testing::FakeFunction;
  image.arch = 90;
  image.tensordesc_meta.resize(2);
  const std::vector<std::uint32_t> sizes = launch_of({128, 4, 4, 8, 8});
  image.cubin_path = "fake.cubin";
  Status matching = check_launch_abi(kernel, variant, image,
                                     testing::fake_cubin({FakeFunction{.name = "desc_copy", .param_sizes = sizes}}));
  EXPECT_TRUE(matching.ok()) << matching.message();

  Status other = check_launch_abi(kernel, variant, image, testing::fake_cubin({FakeFunction{.name = "other"}}));
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.message(), HasSubstr("target sm_80 (fake.cubin): the cubin has no kernel desc_copy"));

  Status bare = check_launch_abi(kernel, variant, image, testing::fake_cubin({FakeFunction{.name = "desc_copy"}}));
  ASSERT_FALSE(bare.ok());
  EXPECT_THAT(bare.message(), HasSubstr("records no parameters for kernel desc_copy"));

  // Bytes that are no CUDA ELF are left to the driver.
  EXPECT_TRUE(check_launch_abi(kernel, variant, image, "\x7f" "ELF but nothing more").ok());
}

}  // namespace
}  // namespace taot::codegen
