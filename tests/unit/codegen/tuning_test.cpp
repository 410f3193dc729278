// Tuned tables baked by the code generator: files checked against manifest kernels with the
// runtime's rules and messages, one table per device, and the files `taot gen --tuning` names.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "manifest_builder.h"
#include "taot/codegen/manifest.h"
#include "taot/codegen/tuning.h"

namespace taot::codegen {
namespace {

using testing::TempDir;
using testing::write_file;
constexpr std::uint16_t kUnset = table::kUnsetValue;

class BakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::ManifestBuilder builder(dir.path());
    builder.json["kernels"][0]["tuning_key"] = {"n_elements"};  // add_kernel
    builder.json["kernels"][1]["tuning_key"] = {"stream"};      // odd_names: a bool field named int
    Expected<Manifest> read = read_manifest(builder.write());
    ASSERT_TRUE(read.ok()) << read.status().message();
    manifest = std::move(read).value();
  }
  std::filesystem::path table(const std::string& name, const std::string& text) const {
    write_file(dir.path() / name, text);
    return dir.path() / name;
  }
  const Kernel& kernel(const std::string& name) const {
    for (const Kernel& candidate : manifest.kernels)
      if (candidate.name == name) return candidate;
    throw std::runtime_error("no kernel " + name);
  }
  std::string error_of(const Expected<std::vector<BakedTable>>& baked) const {
    return baked.ok() ? "(no error)" : baked.status().message();
  }

  TempDir dir;
  Manifest manifest;
};

std::string taot_table(const std::string& kernel, const std::string& key, const std::string& entries,
                       const std::string& extra = "") {
  return R"({"schema": "taot.tuning", "schema_version": 1, "kernel": ")" + kernel + R"(", "key": [")" + key +
         R"("], )" + extra + R"("entries": [)" + entries + "]}";
}

TEST_F(BakeTest, BakesBothFormatsSortedWithValueIndices) {
  const auto taot_file = table("add.json", taot_table("add_kernel", "n_elements",
      R"({"key": [4096], "config": {"BLOCK_SIZE": 1024, "ACC_TYPE": "fp16", "EPS": 0.5, "num_warps": 8}},
         {"key": [1], "config": {"BLOCK_SIZE": 256}})", R"("match": "floor", )"));
  const auto vllm_file = table("E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json",
                               R"({"64": {"num_warps": 4, "EPS": 1e-6}, "16": {"ACC_TYPE": "fp32"}})");
  Expected<std::vector<BakedTable>> baked = bake_tuning(kernel("add_kernel"), {taot_file, vllm_file});
  ASSERT_TRUE(baked.ok()) << error_of(baked);
  ASSERT_EQ(baked->size(), 2u);
  const BakedTable& any = (*baked)[0];
  EXPECT_EQ(any.device, "");
  EXPECT_EQ(any.source, taot_file.generic_string());
  EXPECT_EQ(any.match, table::TuningMatch::floor);
  EXPECT_EQ(any.keys, (std::vector<std::vector<std::int64_t>>{{1}, {4096}}));
  // Fields in manifest order: BLOCK_SIZE {256, 1024}, ACC_TYPE {fp32, fp16}, EPS {1e-6, 0.5}, num_warps {4, 8}.
  EXPECT_EQ(any.configs, (std::vector<std::vector<std::uint16_t>>{{0, kUnset, kUnset, kUnset}, {1, 1, 1, 1}}));
  const BakedTable& h100 = (*baked)[1];
  EXPECT_EQ(h100.device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.match, table::TuningMatch::nearest);
  EXPECT_EQ(h100.keys, (std::vector<std::vector<std::int64_t>>{{16}, {64}}));
  EXPECT_EQ(h100.configs, (std::vector<std::vector<std::uint16_t>>{{kUnset, 0, kUnset, kUnset}, {kUnset, kUnset, 0, 0}}));
}

TEST_F(BakeTest, StringAndBoolFields) {
  const auto features = table("features.json", taot_table("features", "n",
      R"({"key": [1], "config": {"ACTIVATION": "relu"}}, {"key": [2], "config": {"ACTIVATION": "gelu"}})"));
  Expected<std::vector<BakedTable>> baked = bake_tuning(kernel("features"), {features});
  ASSERT_TRUE(baked.ok()) << error_of(baked);
  EXPECT_EQ((*baked)[0].configs[0][0], 1);  // values {"gelu", "relu"}
  EXPECT_EQ((*baked)[0].configs[1][0], 0);
  const auto odd = table("odd.json", taot_table("odd_names", "stream", R"({"key": [7], "config": {"int": false}})"));
  Expected<std::vector<BakedTable>> flags = bake_tuning(kernel("odd_names"), {odd});
  ASSERT_TRUE(flags.ok()) << error_of(flags);
  EXPECT_EQ((*flags)[0].configs[0][0], 0);
}

TEST_F(BakeTest, ErrorsAreTheRuntimes) {
  const auto uncompiled = table("tables/x.json", taot_table("add_kernel", "n_elements",
      R"({"key": [64], "config": {"BLOCK_SIZE": 512}})"));
  EXPECT_EQ(error_of(bake_tuning(kernel("add_kernel"), {uncompiled})),
            uncompiled.generic_string() + ": entry n_elements=64: BLOCK_SIZE=512 was not compiled; compiled values: "
                                          "256, 1024");
  const auto dtype = table("dtype.json", R"({"64": {"ACC_TYPE": "bf16"}})");
  EXPECT_EQ(error_of(bake_tuning(kernel("add_kernel"), {dtype})),
            dtype.generic_string() + ": entry n_elements=64: ACC_TYPE=bf16 was not compiled; compiled values: fp32, fp16");
  const auto string = table("act.json", R"({"64": {"ACTIVATION": "silu"}})");
  EXPECT_EQ(error_of(bake_tuning(kernel("features"), {string})),
            string.generic_string() + ": entry n=64: ACTIVATION=\"silu\" was not compiled; compiled values: \"gelu\", "
                                      "\"relu\"");
  const auto other = table("other.json", taot_table("features", "n", R"({"key": [1], "config": {}})"));
  EXPECT_EQ(error_of(bake_tuning(kernel("add_kernel"), {other})),
            other.generic_string() + ": the table is for kernel \"features\", not \"add_kernel\"");
  EXPECT_EQ(error_of(bake_tuning(kernel("noop"), {dtype})),
            dtype.generic_string() + ": a vLLM table is keyed by one argument; kernel \"noop\" has no tuning key (the "
                                     "spec's tuning_key, or @triton.autotune's key)");
  const auto missing = dir.path() / "missing.json";
  EXPECT_EQ(error_of(bake_tuning(kernel("add_kernel"), {missing})),
            missing.generic_string() + ": cannot read the tuning file (missing or unreadable)");
  const auto broken = table("broken.json", R"({"1": {"num_warps": 4},})");
  EXPECT_EQ(error_of(bake_tuning(kernel("add_kernel"), {broken})),
            broken.generic_string() + ": not valid JSON: parse error at line 1, column 24: syntax error while parsing "
                                      "object key - unexpected '}'; expected string literal");
}

TEST_F(BakeTest, OneTablePerDevice) {
  const auto first = table("E=8,device_name=NVIDIA_H200.json", R"({"1": {"num_warps": 4}})");
  const auto second = table("h200.json", taot_table("add_kernel", "n_elements", R"({"key": [1], "config": {}})",
                                                    R"("device": "NVIDIA H200", )"));
  EXPECT_EQ(error_of(bake_tuning(kernel("add_kernel"), {first, second})),
            second.generic_string() + ": kernel \"add_kernel\" already has a table for device \"NVIDIA H200\", from " +
                first.generic_string() + "; give one table per device");
  const auto any_one = table("any1.json", R"({"1": {"num_warps": 4}})");
  const auto any_two = table("any2.json", R"({"2": {"num_warps": 8}})");
  EXPECT_EQ(error_of(bake_tuning(kernel("add_kernel"), {any_one, any_two})),
            any_two.generic_string() + ": kernel \"add_kernel\" already has a table for any device, from " +
                any_one.generic_string() + "; give one table per device");
  EXPECT_TRUE(bake_tuning(kernel("add_kernel"), {first, any_one}).ok());
}

TEST(TuningArgument, KernelEqualsFileUnlessTheWholeTextIsAFile) {
  TempDir dir;
  const auto vllm = dir.path() / "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json";
  write_file(vllm, "{}");
  TuningFileArgument bound = parse_tuning_argument("fused_moe=" + vllm.string());
  EXPECT_EQ(bound.kernel, "fused_moe");
  EXPECT_EQ(bound.path, vllm);
  const std::string relative_file = "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json";
  TuningFileArgument missing = parse_tuning_argument(relative_file);  // no such file here: "E" binds
  EXPECT_EQ(missing.kernel, "E");
  TuningFileArgument existing = parse_tuning_argument(vllm.string());
  EXPECT_EQ(existing.kernel, "");
  EXPECT_EQ(existing.path, vllm);
  EXPECT_EQ(parse_tuning_argument("tables/matmul.json").kernel, "");
  EXPECT_EQ(parse_tuning_argument("1k=tables/x.json").kernel, "");  // not an identifier
  EXPECT_EQ(parse_tuning_argument("a/b=c.json").kernel, "");
}

TEST_F(BakeTest, AssignsFilesToKernels) {
  const auto add = table("add.json", taot_table("add_kernel", "n_elements", R"({"key": [1], "config": {}})"));
  const auto vllm = table("E=8,device_name=NVIDIA_H200.json", R"({"1": {"ACTIVATION": "gelu"}})");
  auto assigned = assign_tuning_files(manifest, {{"", add}, {"features", vllm}});
  ASSERT_TRUE(assigned.ok()) << assigned.status().message();
  EXPECT_EQ(assigned->size(), 2u);
  EXPECT_EQ(assigned->at("add_kernel"), std::vector<std::filesystem::path>{add});
  EXPECT_EQ(assigned->at("features"), std::vector<std::filesystem::path>{vllm});

  auto unbound = assign_tuning_files(manifest, {{"", vllm}});
  ASSERT_FALSE(unbound.ok());
  EXPECT_EQ(unbound.status().message(), "--tuning " + vllm.generic_string() +
                                            ": a vLLM table does not name its kernel; write --tuning KERNEL=" +
                                            vllm.generic_string());
  auto unknown = assign_tuning_files(manifest, {{"softmax", vllm}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "--tuning softmax=" + vllm.generic_string() + ": " +
                                            manifest.path.generic_string() +
                                            " has no kernel \"softmax\"; its kernels: add_kernel, odd_names, noop, "
                                            "features");
  const auto stray = table("stray.json", taot_table("softmax", "n", R"({"key": [1], "config": {}})"));
  auto named = assign_tuning_files(manifest, {{"", stray}});
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.status().message(), "--tuning " + stray.generic_string() + ": " + manifest.path.generic_string() +
                                          " has no kernel \"softmax\"; its kernels: add_kernel, odd_names, noop, "
                                          "features");
  // Checked in full before anything is generated: the vLLM file's field is not add_kernel's.
  auto wrong = assign_tuning_files(manifest, {{"add_kernel", vllm}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), vllm.generic_string() +
                                          ": entry n_elements=1: ACTIVATION is not a config field of kernel "
                                          "\"add_kernel\"; the fields are: BLOCK_SIZE, ACC_TYPE, EPS, num_warps");
}

}  // namespace
}  // namespace taot::codegen
