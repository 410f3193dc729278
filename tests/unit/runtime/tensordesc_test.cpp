// Host-side tensor descriptors through the recording fake driver: TMA maps encoded at launch on
// sm_90 (dims, byte strides, box from the image's metadata, swizzle, data type, padding), the
// parameters that follow them, Triton's decomposition below sm_90, each in the image's launch ABI
// (Triton 3.5's and 3.7's), selection by dtype and block shape, and every descriptor error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "fake_driver.h"
#include "taot/c_api.h"
#include "taot/runtime.h"
#include "tensordesc.h"

namespace taot::testing {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kBase = 0x7f0000010000, kOut = 0x7f0000020000;

// A kernel `copy(in_desc_0, ..., in_desc_{N-1}, out_ptr, n)` whose descriptors are fp16 or bf16,
// rank 2, block [BM, 32] for BM in {64, 128} (default 64); grid cdiv(n, BM). sm_90 images carry
// tensordesc metadata (the BM = 128 box is [64, 32], as when Triton splits a block); sm_80 images
// have none.
class DescriptorTable {
 public:
  explicit DescriptorTable(std::size_t descriptors) {
    for (std::size_t d = 0; d < descriptors; ++d) {
      names_.push_back("in_desc_" + std::to_string(d));
      args_.push_back({names_.back().c_str(), table::ArgKind::tensordesc, kTypes, 2, false, 2, kBlocks, 2, false, false});
    }
    args_.push_back({"out_ptr", table::ArgKind::pointer, kTypes, 2, true, 0, nullptr, 0, false, false});
    args_.push_back({"n", table::ArgKind::int_scalar, kIntTypes, 1, false, 0, nullptr, 0, false, false});
    params_.resize(args_.size());
    for (std::size_t a = 0; a < args_.size(); ++a) params_[a] = static_cast<std::uint16_t>(a);
    const auto n_index = static_cast<std::uint16_t>(args_.size() - 1);
    for (int dtype = 0; dtype < 2; ++dtype)
      for (std::uint16_t block = 0; block < 2; ++block) {
        std::vector<table::ArgSpecialization> spec(descriptors, table::ArgSpecialization{kTypes[dtype], 0, block, false});
        spec.push_back({kTypes[dtype], 0, 0, false});
        spec.push_back({TAOT_DTYPE_I32, 0, 0, false});
        specializations_.push_back(std::move(spec));
        configs_.push_back({block});
        grids_.push_back({{table::GridOp::arg, n_index, 0}, {table::GridOp::literal, 0, kBlockM[block]},
                          {table::GridOp::cdiv, 0, 0}});
        const std::uint8_t device_type = dtype == 0 ? 6 : 10;  // Triton's device numbers: fp16 6, bf16 10
        const table::TensordescMeta meta{2, 2, device_type, false, {64, 32, 0, 0, 0}};
        metas_.push_back(std::vector<table::TensordescMeta>(descriptors, meta));
        ids_.push_back(std::string(dtype == 0 ? "fp16" : "bf16") + "_BM" + std::to_string(kBlockM[block]));
        images_.push_back({
            {"sm_80", 80, false, table::Vendor::nvidia, 32, kCubin80, 8, "copy", 0, 4, 1, {1, 1, 1}, 0, 1, 0, 1, false, false, nullptr, 0, abi::TensordescLayout::triton_3_5, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr},
            {"sm_90", 90, true, table::Vendor::nvidia, 32, kCubin90, 8, "copy", 0, 4, 1, {1, 1, 1}, 0, 1, 0, 1, false, false,
             metas_.back().data(), static_cast<std::uint16_t>(descriptors), abi::TensordescLayout::triton_3_5, 0, 0, 0, 0, nullptr, nullptr, nullptr, nullptr},
        });
        table::Variant variant{};
        variant.id = ids_.back().c_str();
        variant.specialization = specializations_.back().data();
        variant.config = configs_.back().data();
        variant.params = params_.data();
        variant.param_count = static_cast<std::uint16_t>(params_.size());
        variant.grid[0] = {grids_.back().data(), 3};
        variant.grid[1] = {kOne, 1};
        variant.grid[2] = {kOne, 1};
        variant.images = images_.back().data();
        variant.image_count = 2;
        variants_.push_back(variant);
      }
    kernel.library = "testlib";
    kernel.name = "copy";
    kernel.grid_text[0] = "cdiv(n, BM)";
    kernel.grid_text[1] = kernel.grid_text[2] = "1";
    kernel.args = args_.data();
    kernel.arg_count = static_cast<std::uint16_t>(args_.size());
    kernel.fields = &kField;
    kernel.field_count = 1;
    kernel.variants = variants_.data();
    kernel.variant_count = static_cast<std::uint32_t>(variants_.size());
  }

  // Every image's descriptor launch ABI, and every sm_90 descriptor's fp4_padded flag (before a
  // Kernel is made from the table).
  void set_layout(abi::TensordescLayout layout) {
    for (auto& images : images_)
      for (table::Image& image : images) image.tensordesc_layout = layout;
  }
  void set_fp4_padded() {
    for (auto& metas : metas_)
      for (table::TensordescMeta& meta : metas) meta.fp4_padded = true;
  }

  table::KernelTable kernel{};

 private:
  static constexpr taot_dtype kTypes[] = {TAOT_DTYPE_FP16, TAOT_DTYPE_BF16};
  static constexpr taot_dtype kIntTypes[] = {TAOT_DTYPE_I32};
  static constexpr std::uint32_t kBlocks[] = {64, 32, 128, 32};
  static constexpr std::int64_t kBlockM[] = {64, 128};
  static constexpr table::ConfigField kField{"BM", table::FieldKind::int_value, kBlockM, nullptr, 2, 0, nullptr, false};
  static constexpr table::GridInstr kOne[] = {{table::GridOp::literal, 0, 1}};
  static constexpr unsigned char kCubin80[8] = {80}, kCubin90[8] = {90};
  std::deque<std::string> names_, ids_;
  std::vector<table::Arg> args_;
  std::vector<std::uint16_t> params_;
  std::deque<std::vector<table::ArgSpecialization>> specializations_;
  std::deque<std::vector<std::uint16_t>> configs_;
  std::deque<std::vector<table::GridInstr>> grids_;
  std::deque<std::vector<table::TensordescMeta>> metas_;
  std::deque<std::vector<table::Image>> images_;
  std::vector<table::Variant> variants_;
};

// A 100 x 48 fp16 matrix with a row pitch of 64 elements (128 bytes).
TensorDesc matrix(DType dtype = DType::fp16, std::initializer_list<std::int32_t> block = {},
                  taot_padding padding = TAOT_PADDING_ZERO) {
  return tensor_desc(Ptr(CUdeviceptr{kBase}, dtype), {100, 48}, {64, 1}, block, padding);
}

class TensordescTest : public ::testing::Test {
 protected:
  explicit TensordescTest(std::size_t descriptors = 1) : table(descriptors) {}

  Status launch(const std::vector<TensorDesc>& descs, std::int32_t n = 256, DType out = DType::fp16,
                const Selection& selection = Selection::automatic()) {
    std::vector<taot_arg> args;
    for (const TensorDesc& desc : descs) args.push_back(arg(desc));
    args.push_back(arg(Ptr(CUdeviceptr{kOut}, out)));
    args.push_back(arg(n));
    return kernel.launch(nullptr, args.data(), args.size(), selection);
  }

  FakeDriver fake{9};  // parameters recorded per launch: one descriptor's 5, out_ptr, n, 2 scratch
  DescriptorTable table;
  Kernel kernel{table.kernel};
};

TEST_F(TensordescTest, Sm90EncodesATmaMapFromTheDescriptorAndTheImagesMetadata) {
  fake.make_current(fake.add_context(90));
  ASSERT_TRUE(launch({matrix()}).ok());
  const auto maps = fake.tensor_maps();
  ASSERT_EQ(maps.size(), 1u);
  const RecordedTensorMap& map = maps[0];
  EXPECT_EQ(map.data_type, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(map.rank, 2u);
  EXPECT_EQ(map.address, kBase);
  EXPECT_EQ(map.global_dim, (std::vector<std::uint64_t>{48, 100}));  // innermost first
  EXPECT_EQ(map.global_strides, (std::vector<std::uint64_t>{128}));  // bytes, without the innermost
  EXPECT_EQ(map.box, (std::vector<unsigned>{32, 64}));
  EXPECT_EQ(map.element_strides, (std::vector<unsigned>{1, 1}));
  EXPECT_EQ(map.interleave, CU_TENSOR_MAP_INTERLEAVE_NONE);
  EXPECT_EQ(map.swizzle, CU_TENSOR_MAP_SWIZZLE_64B);
  EXPECT_EQ(map.l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  EXPECT_EQ(map.oob_fill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  EXPECT_TRUE(map.map_aligned);

  // Parameters: the map, shape as i32, strides as i64, then out_ptr, n and the two scratch pointers.
  const auto launches = fake.launches();
  ASSERT_EQ(launches.size(), 1u);
  const auto& params = launches[0].params;
  EXPECT_EQ(params[0], RecordedTensorMap::kTensorMapMark);
  EXPECT_EQ(params[1] & 0xffffffffu, 100u);
  EXPECT_EQ(params[2] & 0xffffffffu, 48u);
  EXPECT_EQ(params[3], 64u);
  EXPECT_EQ(params[4], 1u);
  EXPECT_EQ(params[5], kOut);
  EXPECT_EQ(params[6] & 0xffffffffu, 256u);
  EXPECT_EQ(params[7], 0u);
  EXPECT_EQ(params[8], 0u);
  EXPECT_EQ(launches[0].grid[0], 4u);  // cdiv(256, 64): the default BM
}

TEST_F(TensordescTest, Bf16MapsToTheHostDataTypeAndNanPaddingToTheNanFill) {
  fake.make_current(fake.add_context(90));
  ASSERT_TRUE(launch({matrix(DType::bf16, {}, TAOT_PADDING_NAN)}, 256, DType::bf16).ok());
  const auto maps = fake.tensor_maps();
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0].data_type, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(maps[0].oob_fill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
}

TEST(TensordescMapping, DeviceDataTypesMapToTheHostEnum) {
  // Triton 3.6 reports the PTX tensormap numbering; the driver's enum orders fp64, bf16 and f32-ftz otherwise.
  EXPECT_EQ(detail::host_tensor_map_type(6), CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(detail::host_tensor_map_type(7), CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(detail::host_tensor_map_type(8), CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ);
  EXPECT_EQ(detail::host_tensor_map_type(9), CU_TENSOR_MAP_DATA_TYPE_FLOAT64);
  EXPECT_EQ(detail::host_tensor_map_type(10), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(detail::host_tensor_map_type(0), CU_TENSOR_MAP_DATA_TYPE_UINT8);
  EXPECT_EQ(detail::host_tensor_map_type(5), CU_TENSOR_MAP_DATA_TYPE_INT64);
}

TEST_F(TensordescTest, TheDescriptorsBlockShapeSelectsTheVariantAndTheBoxComesFromMetadata) {
  fake.make_current(fake.add_context(90));
  ASSERT_TRUE(launch({matrix(DType::fp16, {128, 32})}).ok());
  const auto launches = fake.launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].grid[0], 2u);  // cdiv(256, 128): the BM = 128 variant
  EXPECT_EQ(fake.tensor_maps()[0].box, (std::vector<unsigned>{32, 64}));  // its metadata's box, not the block

  const std::int64_t bm = 128;
  FieldRequest request = taot::request(std::optional<std::int64_t>(bm));
  ASSERT_TRUE(launch({matrix()}, 256, DType::fp16, Selection::config(&request)).ok());
  EXPECT_EQ(fake.launches()[1].grid[0], 2u);
}

TEST_F(TensordescTest, ABlockShapeNoVariantHasIsRefusedNamingTheCompiledBlocks) {
  fake.make_current(fake.add_context(90));
  Status status = launch({matrix(DType::fp16, {256, 32})});
  ASSERT_EQ(status.code(), TAOT_NO_MATCHING_VARIANT);
  EXPECT_THAT(status.message(), HasSubstr("in_desc_0 = a rank 2 fp16 descriptor with block_shape [256, 32]"));
  EXPECT_THAT(status.message(), HasSubstr("fp16 block [64, 32], fp16 block [128, 32]"));
  EXPECT_TRUE(fake.launches().empty());
}

TEST_F(TensordescTest, WrongDtypeRankAndNullDescriptorsAreNamed) {
  fake.make_current(fake.add_context(90));
  Status status = launch({matrix(DType::fp32)});
  ASSERT_EQ(status.code(), TAOT_NO_MATCHING_VARIANT);
  EXPECT_THAT(status.message(), HasSubstr("in_desc_0 = a rank 2 fp32 descriptor"));

  const TensorDesc cube = tensor_desc(Ptr(CUdeviceptr{kBase}, DType::fp16), {4, 100, 48});
  status = launch({cube});
  ASSERT_EQ(status.code(), TAOT_NO_MATCHING_VARIANT);
  EXPECT_THAT(status.message(), HasSubstr("a rank 3 fp16 descriptor (the argument has rank 2)"));

  const TensorDesc mismatched = tensor_desc(Ptr(CUdeviceptr{kBase}, DType::fp16), {100, 48}, {64, 1, 1});
  EXPECT_EQ(mismatched.rank, 0);
  EXPECT_THAT(launch({mismatched}).message(), HasSubstr("a rank 0 fp16 descriptor"));

  const taot_arg args[] = {arg(static_cast<const TensorDesc*>(nullptr)), arg(Ptr(CUdeviceptr{kOut}, DType::fp16)),
                           arg(std::int32_t{256})};
  status = kernel.launch(nullptr, args, 3);
  ASSERT_EQ(status.code(), TAOT_NO_MATCHING_VARIANT);
  EXPECT_THAT(status.message(), HasSubstr("in_desc_0 = a null descriptor"));
  EXPECT_TRUE(fake.launches().empty());
}

TEST_F(TensordescTest, InvalidDescriptorsFailNamingTheArgumentAndTheValue) {
  fake.make_current(fake.add_context(90));
  struct Case {
    TensorDesc desc;
    const char* expected;
  };
  const Ptr base(CUdeviceptr{kBase}, DType::fp16);
  const Case cases[] = {
      {tensor_desc(Ptr(CUdeviceptr{kBase + 8}, DType::fp16), {100, 48}, {64, 1}), "is not 16-byte aligned"},
      {tensor_desc(base, {100, 48}, {64, 2}), "strides[1] = 2; the innermost dim must be contiguous"},
      {tensor_desc(base, {100, 48}, {60, 1}), "strides[0] = 60 elements of 2 bytes; TMA needs a positive multiple of 16"},
      {tensor_desc(base, {100, 48}, {-64, 1}), "strides[0] = -64 elements"},
      {tensor_desc(base, {0, 48}, {64, 1}), "shape[0] = 0 is outside 1 to 2147483647"},
      {tensor_desc(base, {std::int64_t{1} << 31, 48}, {64, 1}), "shape[0] = 2147483648 is outside"},
      {tensor_desc(base, {100, 48}, {std::int64_t{1} << 40, 1}), "below 2^40"},
  };
  for (const Case& test : cases) {
    Status status = launch({test.desc});
    EXPECT_EQ(status.code(), TAOT_INVALID_ARGUMENT) << test.expected;
    EXPECT_THAT(status.message(), HasSubstr("testlib::copy variant fp16_BM64: argument in_desc_0: "));
    EXPECT_THAT(status.message(), HasSubstr(test.expected));
  }
  TensorDesc bad_padding = matrix();
  bad_padding.padding = 7;
  EXPECT_THAT(launch({bad_padding}).message(), HasSubstr("padding 7 is neither"));
  EXPECT_TRUE(fake.launches().empty());
  EXPECT_TRUE(fake.tensor_maps().empty());
}

TEST_F(TensordescTest, Sm80PassesTritonsDecompositionWithoutTma) {
  fake.params_per_launch = 14;
  fake.make_current(fake.add_context(80));
  ASSERT_TRUE(launch({matrix(DType::fp16, {}, TAOT_PADDING_NAN)}).ok());
  EXPECT_TRUE(fake.tensor_maps().empty());
  const auto launches = fake.launches();
  ASSERT_EQ(launches.size(), 1u);
  const auto& params = launches[0].params;
  // base, shape (i64), strides (i64), padding == nan (i1), shape (i32), strides (i64), out, n.
  EXPECT_EQ(params[0], kBase);
  EXPECT_EQ(params[1], 100u);
  EXPECT_EQ(params[2], 48u);
  EXPECT_EQ(params[3], 64u);
  EXPECT_EQ(params[4], 1u);
  EXPECT_EQ(params[5] & 0xffu, 1u);
  EXPECT_EQ(params[6] & 0xffffffffu, 100u);
  EXPECT_EQ(params[7] & 0xffffffffu, 48u);
  EXPECT_EQ(params[8], 64u);
  EXPECT_EQ(params[9], 1u);
  EXPECT_EQ(params[10], kOut);
  EXPECT_EQ(params[11] & 0xffffffffu, 256u);
  EXPECT_EQ(params[12], 0u);
  EXPECT_EQ(params[13], 0u);
}

class Triton37LayoutTest : public TensordescTest {
 protected:
  Triton37LayoutTest() { table.set_layout(abi::TensordescLayout::triton_3_7); }
};

TEST_F(Triton37LayoutTest, Sm80PassesRoundF32ToTf32AsZeroAfterThePadding) {
  fake.params_per_launch = 15;
  fake.make_current(fake.add_context(80));
  ASSERT_TRUE(launch({matrix(DType::fp16, {}, TAOT_PADDING_NAN)}).ok());
  const auto launches = fake.launches();
  ASSERT_EQ(launches.size(), 1u);
  const auto& params = launches[0].params;
  // base, shape (i64), strides (i64), padding == nan (i1), round_f32_to_tf32 (i1), shape (i32),
  // strides (i64), out, n, scratch.
  const std::vector<std::uint64_t> expected = {kBase, 100, 48, 64, 1, 1, 0, 100, 48, 64, 1, kOut, 256, 0, 0};
  const std::vector<std::uint64_t> mask = {~0ull, ~0ull, ~0ull, ~0ull, ~0ull, 0xff, 0xff, 0xffffffffu, 0xffffffffu,
                                           ~0ull, ~0ull, ~0ull, 0xffffffffu, ~0ull, ~0ull};
  for (std::size_t p = 0; p < expected.size(); ++p) EXPECT_EQ(params[p] & mask[p], expected[p]) << "parameter " << p;
}

TEST_F(Triton37LayoutTest, Sm90TakesTheSameMapShapeAndStrides) {
  fake.make_current(fake.add_context(90));
  ASSERT_TRUE(launch({matrix()}).ok());
  const auto launches = fake.launches();
  const auto& params = launches[0].params;
  EXPECT_EQ(params[0], RecordedTensorMap::kTensorMapMark);
  EXPECT_EQ(params[1] & 0xffffffffu, 100u);
  EXPECT_EQ(params[2] & 0xffffffffu, 48u);
  EXPECT_EQ(params[3], 64u);
  EXPECT_EQ(params[5], kOut);
}

// Two libraries built by different Triton releases, in one program: each kernel is packed in the
// launch ABI of its own images.
TEST_F(TensordescTest, KernelsOfTwoTritonReleasesLaunchSideBySide) {
  DescriptorTable newer(1);
  newer.set_layout(abi::TensordescLayout::triton_3_7);
  Kernel newer_kernel{newer.kernel};
  fake.make_current(fake.add_context(80));
  const TensorDesc desc = matrix();
  const taot_arg args[] = {arg(desc), arg(Ptr(CUdeviceptr{kOut}, DType::fp16)), arg(std::int32_t{256})};
  fake.params_per_launch = 15;
  ASSERT_TRUE(newer_kernel.launch(nullptr, args, 3).ok());
  fake.params_per_launch = 14;
  ASSERT_TRUE(kernel.launch(nullptr, args, 3).ok());
  const auto launches = fake.launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].params[6] & 0xff, 0u) << "Triton 3.7: round_f32_to_tf32";
  EXPECT_EQ(launches[0].params[7] & 0xffffffffu, 100u) << "then the i32 shape";
  EXPECT_EQ(launches[0].params[11], kOut);
  EXPECT_EQ(launches[1].params[6] & 0xffffffffu, 100u) << "Triton 3.5: the i32 shape follows the padding";
  EXPECT_EQ(launches[1].params[10], kOut);
}

// fp4_padded descriptors: the map counts the innermost dim doubled in both layouts; the kernel's
// i32 shape is doubled too in Triton 3.5's, the caller's in Triton 3.7's.
TEST_F(TensordescTest, Fp4PaddedShapesFollowTheLayout) {
  table.set_fp4_padded();
  for (const auto layout : {abi::TensordescLayout::triton_3_5, abi::TensordescLayout::triton_3_7}) {
    table.set_layout(layout);
    Kernel fresh{table.kernel};
    fake.make_current(fake.add_context(90));
    const TensorDesc desc = matrix();
    const taot_arg args[] = {arg(desc), arg(Ptr(CUdeviceptr{kOut}, DType::fp16)), arg(std::int32_t{256})};
    ASSERT_TRUE(fresh.launch(nullptr, args, 3).ok());
    EXPECT_EQ(fake.tensor_maps().back().global_dim, (std::vector<std::uint64_t>{96, 100}));
    const auto launches = fake.launches();
    const auto& params = launches.back().params;
    EXPECT_EQ(params[1] & 0xffffffffu, 100u);
    EXPECT_EQ(params[2] & 0xffffffffu, layout == abi::TensordescLayout::triton_3_5 ? 96u : 48u)
        << abi::tensordesc_layout_name(layout);
  }
}

TEST_F(TensordescTest, ADriverWithoutTensorMapsFailsOnSm90AndStillLaunchesOnSm80) {
  fake.drop_tensor_map_encode();
  fake.make_current(fake.add_context(90));
  Status status = launch({matrix()});
  EXPECT_EQ(status.code(), TAOT_NOT_SUPPORTED);
  EXPECT_THAT(status.message(), HasSubstr("cuTensorMapEncodeTiled, a CUDA 12.0 or newer driver"));
  fake.make_current(fake.add_context(80));
  fake.params_per_launch = 14;
  EXPECT_TRUE(launch({matrix()}).ok());
}

TEST_F(TensordescTest, AnEncodingFailureNamesTheDescriptor) {
  fake.make_current(fake.add_context(90));
  fake.tensor_map_result = CUDA_ERROR_INVALID_VALUE;
  Status status = launch({matrix()});
  EXPECT_EQ(status.code(), TAOT_CUDA_ERROR);
  EXPECT_THAT(status.message(), HasSubstr("argument in_desc_0 (fp16, shape [100, 48], strides [64, 1], box [64, 32], "
                                          "swizzle 2)"));
  EXPECT_THAT(status.message(), HasSubstr("cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE"));
  EXPECT_TRUE(fake.launches().empty());
}

TEST_F(TensordescTest, TheCAbiTakesDescriptorsByPointer) {
  fake.make_current(fake.add_context(90));
  const TensorDesc desc = matrix();
  const taot_arg args[] = {arg(&desc), arg(Ptr(CUdeviceptr{kOut}, DType::fp16)), arg(std::int32_t{256})};
  ASSERT_EQ(taot_launch(kernel.handle(), nullptr, args, 3, nullptr, 0), TAOT_OK) << taot_last_error();
  EXPECT_EQ(fake.tensor_maps().size(), 1u);
}

class ManyDescriptorsTest : public TensordescTest {
 protected:
  ManyDescriptorsTest() : TensordescTest(6) {}
};

TEST_F(ManyDescriptorsTest, EveryDescriptorGetsItsOwnMapInArgumentOrder) {
  fake.params_per_launch = 6 * 5 + 4;
  fake.make_current(fake.add_context(90));
  std::vector<TensorDesc> descs;
  for (int d = 0; d < 6; ++d)
    descs.push_back(tensor_desc(Ptr(CUdeviceptr{kBase + 0x1000u * d}, DType::fp16), {100 + d, 48}, {64, 1}));
  ASSERT_TRUE(launch(descs).ok());
  const auto maps = fake.tensor_maps();
  ASSERT_EQ(maps.size(), 6u);
  const auto launches = fake.launches();
  ASSERT_EQ(launches.size(), 1u);
  const auto& params = launches[0].params;
  for (std::size_t d = 0; d < 6; ++d) {
    EXPECT_EQ(maps[d].address, kBase + 0x1000u * d);
    EXPECT_TRUE(maps[d].map_aligned);
    EXPECT_EQ(params[5 * d], RecordedTensorMap::kTensorMapMark + d);
    EXPECT_EQ(params[5 * d + 1] & 0xffffffffu, 100u + d);
  }
  EXPECT_EQ(params[30], kOut);
}

}  // namespace
}  // namespace taot::testing
