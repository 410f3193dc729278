// Variant selection: the bitset dispatcher against a brute-force reference over every combination
// of dtype, alignment, int hint and config; and misses that explain themselves.
#include <gtest/gtest.h>

#include <optional>
#include <tuple>

#include "dispatch.h"
#include "test_table.h"

namespace taot::testing {
namespace {

constexpr std::uint64_t kAligned = 0x7f0000000000;    // 16-byte aligned
constexpr std::uint64_t kMisaligned = 0x7f0000000004;  // 4 bytes off

// The reference rule, written plainly: among variants that accept the facts and the requested
// config, prefer most config fields at their default, then the most specialized, then the first.
std::optional<std::size_t> reference_select(const AddKernelTable& table, taot_dtype dtype, const bool aligned[3],
                                            std::int64_t n, std::optional<std::int64_t> block,
                                            std::optional<std::int64_t> warps) {
  std::optional<std::size_t> best;
  std::tuple<int, int> best_rank{-1, -1};
  for (std::size_t v = 0; v < table.facts.size(); ++v) {
    const auto& fact = table.facts[v];
    if (fact.dtype != dtype) continue;
    bool ok = true;
    for (int p = 0; p < 3; ++p) ok = ok && (fact.align[p] == 0 || aligned[p]);
    const bool fits32 = n >= INT32_MIN && n <= INT32_MAX;
    ok = ok && (fact.n_type == TAOT_DTYPE_I64 || fits32);
    ok = ok && (fact.n_hint == 0 || (fact.n_hint == 1 && n == 1) || (fact.n_hint == 16 && n != 1 && n % 16 == 0));
    ok = ok && (!block || *block == fact.block) && (!warps || *warps == fact.num_warps);
    if (!ok) continue;
    const int defaults = (fact.block == 1024) + (fact.num_warps == 4);
    int score = (fact.align[0] != 0) + (fact.align[1] != 0) + (fact.align[2] != 0);
    score += fact.n_hint == 1 ? 2 : fact.n_hint == 16 ? 1 : 0;
    score += fact.n_type == TAOT_DTYPE_I32 ? 1 : 0;
    if (std::make_tuple(defaults, score) > best_rank) {
      best_rank = {defaults, score};
      best = v;
    }
  }
  return best;
}

class DispatchTest : public ::testing::Test {
 protected:
  AddKernelTable table;
  detail::FactIndex index = detail::FactIndex::build(table.kernel).value();
};

TEST_F(DispatchTest, MatchesReferenceForEveryCombination) {
  const std::int64_t n_values[] = {1, 16, 17, 0, 4096, 5000000000LL, 5000000016LL, -32};
  const std::optional<std::int64_t> blocks[] = {std::nullopt, 256, 1024};
  const std::optional<std::int64_t> warps[] = {std::nullopt, 4, 8};
  int checked = 0;
  for (taot_dtype dtype : {TAOT_DTYPE_FP32, TAOT_DTYPE_FP16})
    for (int align_bits = 0; align_bits < 8; ++align_bits)
      for (std::int64_t n : n_values)
        for (const auto& block : blocks)
          for (const auto& warp : warps) {
            const bool aligned[3] = {(align_bits & 1) != 0, (align_bits & 2) != 0, (align_bits & 4) != 0};
            taot_arg args[4] = {};
            for (int p = 0; p < 3; ++p) {
              args[p].address = aligned[p] ? kAligned : kMisaligned;
              args[p].dtype = dtype;
            }
            args[3].integer = n;
            FieldRequest fields[2] = {request(block), request(warp)};
            const Selection selection = (block || warp) ? Selection::config(fields) : Selection::automatic();
            Expected<std::size_t> chosen = index.select(args, 4, selection);
            const auto expected = reference_select(table, dtype, aligned, n, block, warp);
            ASSERT_TRUE(expected.has_value());
            ASSERT_TRUE(chosen.ok()) << chosen.status().message();
            EXPECT_EQ(*chosen, *expected) << "dtype " << dtype << " align bits " << align_bits << " n " << n
                                          << " chose " << table.kernel.variants[*chosen].id << " expected "
                                          << table.kernel.variants[*expected].id;
            ++checked;
          }
  EXPECT_EQ(checked, 2 * 8 * 8 * 3 * 3);
}

TEST_F(DispatchTest, AutoPicksDefaultConfigMostSpecialized) {
  taot_arg args[4] = {};
  for (int p = 0; p < 3; ++p) args[p] = arg(Ptr(CUdeviceptr{kAligned}, DType::fp32));
  args[3] = arg(std::int32_t{4096});
  Expected<std::size_t> chosen = index.select(args, 4, Selection::automatic());
  ASSERT_TRUE(chosen.ok());
  EXPECT_STREQ(table.kernel.variants[*chosen].id, "fp32_a7_i32h16_B1024_w4");
}

TEST_F(DispatchTest, MisalignedPointerReachesUnalignedVariant) {
  taot_arg args[4] = {};
  args[0] = arg(Ptr(CUdeviceptr{kAligned}, DType::fp16));
  args[1] = arg(Ptr(CUdeviceptr{kMisaligned}, DType::fp16));
  args[2] = arg(Ptr(CUdeviceptr{kAligned}, DType::fp16));
  args[3] = arg(std::int32_t{17});
  Expected<std::size_t> chosen = index.select(args, 4, Selection::automatic());
  ASSERT_TRUE(chosen.ok());
  const auto& fact = table.facts[*chosen];
  EXPECT_EQ(fact.align[1], 0);
  EXPECT_EQ(fact.align[0], 16);
  EXPECT_EQ(fact.align[2], 16);
  EXPECT_STREQ(table.kernel.variants[*chosen].id, "fp16_a5_i32h0_B1024_w4");
}

TEST_F(DispatchTest, UnknownDtypeMissNamesArgumentAndCompiledTypes) {
  taot_arg args[4] = {};
  for (int p = 0; p < 3; ++p) args[p] = arg(Ptr(CUdeviceptr{kAligned}, DType::fp32));
  args[1] = arg(Ptr(CUdeviceptr{kAligned}, DType::bf16));
  args[3] = arg(std::int32_t{16});
  Expected<std::size_t> chosen = index.select(args, 4, Selection::automatic());
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.status().code(), TAOT_NO_MATCHING_VARIANT);
  const std::string& message = chosen.status().message();
  EXPECT_NE(message.find("testlib::add_kernel"), std::string::npos) << message;
  EXPECT_NE(message.find("y_ptr = bf16 pointer"), std::string::npos) << message;
  EXPECT_NE(message.find("fp32 align 16"), std::string::npos) << message;
  EXPECT_EQ(message.find("fp16"), std::string::npos) << "x_ptr already fixed fp32: " << message;
}

TEST(DispatchMiss, MisalignedPointerWithOnlyAlignedVariantsExplainsAlignment) {
  AddKernelTable table(1024, /*drop_fp16_unaligned=*/true);
  auto index = detail::FactIndex::build(table.kernel).value();
  taot_arg args[4] = {};
  for (int p = 0; p < 3; ++p) args[p] = arg(Ptr(CUdeviceptr{kAligned}, DType::fp16));
  args[2] = arg(Ptr(CUdeviceptr{kMisaligned}, DType::fp16));
  args[3] = arg(std::int32_t{64});
  Expected<std::size_t> chosen = index.select(args, 4, Selection::automatic());
  ASSERT_FALSE(chosen.ok());
  const std::string& message = chosen.status().message();
  EXPECT_NE(message.find("output_ptr = fp16 pointer 0x7f0000000004 (not 16-byte aligned)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("the variants take output_ptr as: fp16 align 16"), std::string::npos) << message;
}

TEST_F(DispatchTest, UncompiledConfigValueListsCompiledValues) {
  taot_arg args[4] = {};
  for (int p = 0; p < 3; ++p) args[p] = arg(Ptr(CUdeviceptr{kAligned}, DType::fp32));
  args[3] = arg(std::int32_t{16});
  FieldRequest fields[2] = {request(std::optional<std::int64_t>(512)), {}};
  Expected<std::size_t> chosen = index.select(args, 4, Selection::config(fields));
  ASSERT_FALSE(chosen.ok());
  EXPECT_NE(chosen.status().message().find("config BLOCK_SIZE=512 was not compiled; compiled values: 256, 1024"),
            std::string::npos)
      << chosen.status().message();
}

TEST_F(DispatchTest, WrongArgumentCountIsInvalidArgument) {
  taot_arg args[3] = {};
  Expected<std::size_t> chosen = index.select(args, 3, Selection::automatic());
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.status().code(), TAOT_INVALID_ARGUMENT);
  EXPECT_NE(chosen.status().message().find("expected 4 arguments, got 3"), std::string::npos);
}

TEST_F(DispatchTest, ExactVariantRejectsArgumentsItCannotTake) {
  std::size_t aligned_variant = 0;
  while (std::string(table.kernel.variants[aligned_variant].id) != "fp32_a7_i32h16_B256_w8") ++aligned_variant;
  taot_arg args[4] = {};
  for (int p = 0; p < 3; ++p) args[p] = arg(Ptr(CUdeviceptr{kAligned}, DType::fp32));
  args[0] = arg(Ptr(CUdeviceptr{kMisaligned}, DType::fp32));
  args[3] = arg(std::int32_t{32});
  Expected<std::size_t> chosen = index.select(args, 4, Selection::variant(aligned_variant));
  ASSERT_FALSE(chosen.ok());
  EXPECT_NE(chosen.status().message().find("variant fp32_a7_i32h16_B256_w8 does not accept x_ptr"), std::string::npos)
      << chosen.status().message();
  args[0] = arg(Ptr(CUdeviceptr{kAligned}, DType::fp32));
  Expected<std::size_t> accepted = index.select(args, 4, Selection::variant(aligned_variant));
  ASSERT_TRUE(accepted.ok());
  EXPECT_EQ(*accepted, aligned_variant);
  Expected<std::size_t> out_of_range = index.select(args, 4, Selection::variant(100000));
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("out of range"), std::string::npos);
}

}  // namespace
}  // namespace taot::testing
