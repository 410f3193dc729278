// Tests of read_manifest: a valid manifest becomes the expected model, and every kind of broken
// manifest is rejected with a message naming the file and the JSON path (or the cubin file).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "manifest_builder.h"
#include "taot/codegen/manifest.h"

namespace taot::codegen {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::ManifestBuilder;
using testing::TempDir;

class ManifestReaderTest : public ::testing::Test {
 protected:
  // Writes the (edited) manifest and returns the reader's error message; fails the test if the
  // manifest was accepted.
  std::string error_of(const ReadOptions& options = {}) {
    const Expected<Manifest> manifest = read_manifest(builder.write(), options);
    if (manifest.ok()) {
      ADD_FAILURE() << "the manifest was accepted";
      return "";
    }
    return manifest.status().message();
  }

  TempDir dir;
  ManifestBuilder builder{dir.path()};
  nlohmann::json& kernel0 = builder.json["kernels"][0];
};

TEST_F(ManifestReaderTest, ReadsTheModel) {
  const Expected<Manifest> read = read_manifest(builder.write());
  ASSERT_TRUE(read.ok()) << read.status().message();
  const Manifest& manifest = *read;
  EXPECT_EQ(manifest.library, "demo");
  EXPECT_EQ(manifest.schema_version, 2);
  EXPECT_EQ(manifest.targets, (std::vector<std::string>{"sm_80", "sm_90a"}));
  ASSERT_EQ(manifest.kernels.size(), 4u);

  const Kernel& add = manifest.kernels[0];
  EXPECT_EQ(add.call_arguments(), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(add.args[0].types, (std::vector<DType>{DType::fp32, DType::fp16}));
  EXPECT_EQ(add.args[3].kind, ArgKind::int_scalar);
  EXPECT_EQ(add.args[5].types, std::vector<DType>{DType::i1});
  EXPECT_EQ(add.args[6].kind, ArgKind::constexpr_value);
  ASSERT_EQ(add.config.size(), 4u);
  EXPECT_EQ(add.config[1].kind, FieldKind::dtype_value);
  EXPECT_EQ(add.config[2].values, (std::vector<ConfigValue>{1e-6, 0.5}));
  EXPECT_EQ(add.config[2].default_index, 1u);
  EXPECT_EQ(add.config[0].default_index, 1u);

  ASSERT_EQ(add.variants.size(), 4u);
  const Variant& fp16_small = add.variants[2];
  EXPECT_EQ(fp16_small.id, "add_kernel_fp16_B256");
  EXPECT_EQ(fp16_small.config, (std::vector<std::size_t>{0, 1, 0, 0}));  // 256, fp16, 1e-6, 4 warps
  EXPECT_EQ(fp16_small.params, (std::vector<std::size_t>{0, 1, 2, 4, 5}));  // n_elements == 1 is compiled in
  EXPECT_EQ(fp16_small.specialization[3].type, DType::i64);
  EXPECT_EQ(fp16_small.specialization[3].hint, 1);
  ASSERT_EQ(fp16_small.grid[0].size(), 3u);
  EXPECT_EQ(fp16_small.grid[0][0].op, GridOp::arg);
  EXPECT_EQ(fp16_small.grid[0][0].arg, 3u);
  EXPECT_EQ(fp16_small.grid[0][1].value, 256);
  EXPECT_EQ(fp16_small.grid[0][2].op, GridOp::cdiv);
  ASSERT_EQ(fp16_small.images.size(), 2u);
  EXPECT_EQ(fp16_small.images[1].target, "sm_90a");
  EXPECT_TRUE(fp16_small.images[1].arch_specific);
  EXPECT_EQ(fp16_small.images[1].cubin_path, builder.cubin_path(0, 2, 1));

  const Kernel& odd = manifest.kernels[1];
  EXPECT_EQ(odd.variants[0].grid[2][0].value, std::numeric_limits<std::int64_t>::min());
  EXPECT_TRUE(manifest.kernels[2].call_arguments().empty());
}

TEST_F(ManifestReaderTest, ReadsPtxasReportsAndOverridesWhereGiven) {
  nlohmann::json& image = kernel0["variants"][1]["images"][0];
  image["ptxas"] = {{"registers", 38}, {"spill_stores", 12}, {"spill_loads", 4}, {"stack", 16}};
  image["override"] = {{"stage", "ptx"}, {"sha256", std::string(64, 'a')}, {"file", "overrides/v/sm_80/k.ptx"}};
  const Expected<Manifest> manifest = read_manifest(builder.write());
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  const Image& read = manifest->kernels[0].variants[1].images[0];
  ASSERT_TRUE(read.ptxas.has_value());
  EXPECT_EQ(read.ptxas->registers, 38u);
  EXPECT_EQ(read.ptxas->spill_stores, 12u);
  EXPECT_EQ(read.ptxas->spill_loads, 4u);
  EXPECT_EQ(read.ptxas->stack, 16u);
  ASSERT_TRUE(read.override_from.has_value());
  EXPECT_EQ(read.override_from->stage, "ptx");
  EXPECT_EQ(read.override_from->file, "overrides/v/sm_80/k.ptx");
  // Absent (or null) means none.
  EXPECT_FALSE(manifest->kernels[0].variants[0].images[0].ptxas.has_value());
  EXPECT_FALSE(manifest->kernels[0].variants[0].images[0].override_from.has_value());
}

TEST_F(ManifestReaderTest, RejectsBadOverridesAndReportsNamingTheField) {
  nlohmann::json& image = kernel0["variants"][0]["images"][0];
  image["override"] = {{"stage", "sass"}, {"sha256", std::string(64, 'a')}, {"file", "x"}};
  EXPECT_THAT(error_of(), AllOf(HasSubstr("kernels[0].variants[0].images[0].override.stage"), HasSubstr("\"sass\""),
                                HasSubstr("ttir, ttgir, llir, ptx, cubin")));
  image["override"] = {{"stage", "ttgir"}, {"sha256", "ABC"}, {"file", "x"}};
  EXPECT_THAT(error_of(), AllOf(HasSubstr("override.sha256"), HasSubstr("64 lower-case hex digits")));
  image.erase("override");
  image["ptxas"] = {{"registers", 38}, {"spill_stores", 0}, {"spill_loads", 0}};
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].variants[0].images[0].ptxas.stack: missing"));
  image["ptxas"] = {{"registers", -1}, {"spill_stores", 0}, {"spill_loads", 0}, {"stack", 0}};
  EXPECT_THAT(error_of(), HasSubstr("ptxas.registers"));
}

TEST_F(ManifestReaderTest, ReadsEachImagesToolchainAndLaunchAbi) {
  nlohmann::json& image = kernel0["variants"][1]["images"][0];
  image["triton_version"] = "3.7.1";
  image["ptxas_version"] = "12.8.93";
  image["launch_abi"] = {{"tensordesc_layout", "3.7"}, {"scratch_pointers", 2}};
  kernel0["variants"][1]["images"][1]["ptxas_version"] = nullptr;
  const Expected<Manifest> manifest = read_manifest(builder.write());
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  const Image& read = manifest->kernels[0].variants[1].images[0];
  EXPECT_EQ(read.triton_version, "3.7.1");
  EXPECT_EQ(read.ptxas_version, "12.8.93");
  EXPECT_EQ(read.launch_abi.tensordesc_layout, abi::TensordescLayout::triton_3_7);
  EXPECT_EQ(read.launch_abi.scratch_pointers, 2u);
  // Manifests written before these keys: unknown versions and Triton 3.5's launch ABI.
  const Image& older = manifest->kernels[0].variants[0].images[0];
  EXPECT_EQ(older.triton_version, "");
  EXPECT_FALSE(older.ptxas_version.has_value());
  EXPECT_FALSE(manifest->kernels[0].variants[1].images[1].ptxas_version.has_value());  // null: unknown
  EXPECT_EQ(older.launch_abi.tensordesc_layout, abi::TensordescLayout::triton_3_5);
  EXPECT_EQ(older.launch_abi.scratch_pointers, abi::kScratchPointers);
}

TEST_F(ManifestReaderTest, RejectsALaunchAbiThisRuntimeCannotPassNamingTheField) {
  nlohmann::json& image = kernel0["variants"][0]["images"][0];
  image["launch_abi"] = {{"tensordesc_layout", "3.6"}, {"scratch_pointers", 2}};
  EXPECT_THAT(error_of(), AllOf(HasSubstr("kernels[0].variants[0].images[0].launch_abi.tensordesc_layout"),
                                HasSubstr("expected \"3.5\" or \"3.7\", got \"3.6\"")));
  image["launch_abi"] = {{"tensordesc_layout", "3.7"}, {"scratch_pointers", 3}};
  EXPECT_THAT(error_of(), AllOf(HasSubstr("launch_abi.scratch_pointers"), HasSubstr("passes 2 scratch pointers"),
                                HasSubstr("got 3")));
  image["launch_abi"] = {{"tensordesc_layout", "3.7"}};
  EXPECT_THAT(error_of(), HasSubstr("launch_abi.scratch_pointers: missing"));
  image.erase("launch_abi");
  image["ptxas_version"] = "Cuda compilation tools, release 12.8";
  EXPECT_THAT(error_of(), AllOf(HasSubstr("images[0].ptxas_version"), HasSubstr("such as \"12.8.93\"")));
}

TEST_F(ManifestReaderTest, AKernelMayHaveNoGridOfItsOwnAndThenNeitherDoItsVariants) {
  kernel0["grid"] = nullptr;
  for (nlohmann::json& variant : kernel0["variants"]) variant["grid"] = nullptr;
  const Expected<Manifest> manifest = read_manifest(builder.write());
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  EXPECT_FALSE(manifest->kernels[0].has_grid);
  EXPECT_TRUE(manifest->kernels[0].variants[0].grid[0].empty());
  EXPECT_TRUE(manifest->kernels[1].has_grid);
  kernel0["variants"][1]["grid"] = builder.json["kernels"][1]["variants"][0]["grid"];
  EXPECT_THAT(error_of(), AllOf(HasSubstr("kernels[0].variants[1].grid"), HasSubstr("expected null"),
                                HasSubstr("has no grid of its own")));
}

TEST_F(ManifestReaderTest, RejectsWrongSchemaNamingBoth) {
  builder.json["schema"] = "other.manifest";
  EXPECT_THAT(error_of(), AllOf(HasSubstr("manifest.json"), HasSubstr("\"other.manifest\""), HasSubstr("version 2"),
                                HasSubstr("\"taot.manifest\"")));
}

TEST_F(ManifestReaderTest, RejectsUnknownSchemaVersionNamingBoth) {
  builder.json["schema_version"] = 99;
  EXPECT_THAT(error_of(), AllOf(HasSubstr("version 99 is not supported"), HasSubstr("\"taot.manifest\" version 2")));
  builder.json["schema_version"] = 1;  // schema 1 manifests are refused, naming both versions
  EXPECT_THAT(error_of(), AllOf(HasSubstr("schema \"taot.manifest\" version 1 is not supported"),
                                HasSubstr("this taot reads schema \"taot.manifest\" version 2")));
  builder.json["schema_version"] = "2";  // a string is the wrong type, not an unknown version
  EXPECT_THAT(error_of(), HasSubstr("manifest.json: schema_version: expected an integer (this taot reads version 2), "
                                    "got \"2\""));
}

TEST_F(ManifestReaderTest, OutputFlagIsOptionalAndMustBeABool) {
  builder.json["kernels"][0]["args"][0]["output"] = "yes";
  EXPECT_THAT(error_of(), HasSubstr("manifest.json: kernels[0].args[0].output: expected"));
  builder.json["kernels"][0]["args"][0]["output"] = true;
  const Expected<Manifest> manifest = read_manifest(builder.write());
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  EXPECT_TRUE(manifest->kernels[0].args[0].output);
  EXPECT_FALSE(manifest->kernels[0].args[1].output);
}

TEST_F(ManifestReaderTest, RankIsOptionalFromOneToEight) {
  for (const int bad : {0, 9}) {
    builder.json["kernels"][0]["args"][0]["rank"] = bad;
    EXPECT_THAT(error_of(), HasSubstr("manifest.json: kernels[0].args[0].rank: ")) << bad;
  }
  builder.json["kernels"][0]["args"][0]["rank"] = "two";
  EXPECT_THAT(error_of(), HasSubstr("manifest.json: kernels[0].args[0].rank: expected"));
  builder.json["kernels"][0]["args"][0]["rank"] = 2;
  const Expected<Manifest> manifest = read_manifest(builder.write());
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  EXPECT_EQ(manifest->kernels[0].args[0].rank, 2);
  EXPECT_EQ(manifest->kernels[0].args[1].rank, 0);
}

// Turns add_kernel's x_ptr into a rank-2 tensor descriptor with blocks [64, 32] (variants 0, 1)
// and [128, 32] (variants 2, 3), with tensordesc_meta on the sm_90a images.
void make_descriptor(nlohmann::json& kernel) {
  nlohmann::json& arg = kernel["args"][0];
  arg["kind"] = "tensordesc";
  arg["rank"] = 2;
  arg["blocks"] = {{64, 32}, {128, 32}};
  for (std::size_t v = 0; v < kernel["variants"].size(); ++v) {
    nlohmann::json& variant = kernel["variants"][v];
    nlohmann::json& spec = variant["specialization"][0];
    spec.erase("align");
    spec["block"] = v < 2 ? nlohmann::json{64, 32} : nlohmann::json{128, 32};
    for (nlohmann::json& image : variant["images"]) {
      if (image["arch"].get<int>() >= 90)
        image["tensordesc_meta"] = {{{"swizzle", 3}, {"elem_size", 2}, {"elem_type", 6}, {"fp4_padded", false},
                                     {"block_size", {64, 32}}}};
    }
  }
}

TEST_F(ManifestReaderTest, ReadsTensorDescriptors) {
  make_descriptor(kernel0);
  const Expected<Manifest> manifest = read_manifest(builder.write());
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  const Kernel& kernel = manifest->kernels[0];
  EXPECT_EQ(kernel.args[0].kind, ArgKind::tensordesc);
  EXPECT_EQ(kernel.args[0].rank, 2);
  EXPECT_EQ(kernel.args[0].blocks, (std::vector<std::vector<std::uint32_t>>{{64, 32}, {128, 32}}));
  EXPECT_EQ(kernel.variants[0].specialization[0].block, 0);
  EXPECT_EQ(kernel.variants[3].specialization[0].block, 1);
  for (const Image& image : kernel.variants[0].images) {
    if (image.arch < 90) {
      EXPECT_TRUE(image.tensordesc_meta.empty());
      continue;
    }
    ASSERT_EQ(image.tensordesc_meta.size(), 1u);
    EXPECT_EQ(image.tensordesc_meta[0].swizzle, 3);
    EXPECT_EQ(image.tensordesc_meta[0].elem_type, 6);
    EXPECT_EQ(image.tensordesc_meta[0].block_size, (std::vector<std::uint32_t>{64, 32}));
  }
}

TEST_F(ManifestReaderTest, RejectsBadTensorDescriptors) {
  make_descriptor(kernel0);
  kernel0["args"][0]["rank"] = 6;
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].args[0].rank: expected an unsigned integer of at most 5, got 6"));
  kernel0["args"][0]["rank"] = 2;
  kernel0["args"][0]["blocks"] = {{64, 32, 1}};
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].args[0].blocks[0]: expected a list of 2 block dims, got an array"));
  kernel0["args"][0]["blocks"] = {{64, 512}};
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].args[0].blocks[0][1]: "));
  kernel0["args"][0]["blocks"] = {{64, 32}, {64, 32}};
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].args[0].blocks[1]: a block shape listed twice"));
  kernel0["args"][0]["blocks"] = {{64, 32}};
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].variants[2].specialization[0].block: [128,32] is not among the "
                                    "blocks of tensordesc argument x_ptr"));
  make_descriptor(kernel0);
  for (nlohmann::json& image : kernel0["variants"][1]["images"]) image.erase("tensordesc_meta");
  EXPECT_THAT(error_of(), HasSubstr("tensordesc_meta: expected 1 entries (one per tensordesc argument on sm_90 and "
                                    "newer, none below), got 0"));
  make_descriptor(kernel0);
  kernel0["variants"][0]["images"][1]["tensordesc_meta"][0]["elem_size"] = 3;
  EXPECT_THAT(error_of(), HasSubstr("tensordesc_meta[0].elem_size: expected 1, 2, 4 or 8, got 3"));
  make_descriptor(kernel0);
  kernel0["variants"][0]["images"][1]["tensordesc_meta"][0]["block_size"] = {64};
  EXPECT_THAT(error_of(), HasSubstr("tensordesc_meta[0].block_size: expected a list of 2 block dims"));
}

TEST_F(ManifestReaderTest, RejectsMissingField) {
  builder.json["kernels"][0]["variants"][1]["images"][0].erase("shared");
  EXPECT_THAT(error_of(), HasSubstr("manifest.json: kernels[0].variants[1].images[0].shared: missing"));
}

TEST_F(ManifestReaderTest, RejectsWrongType) {
  kernel0["variants"][3]["images"][1]["shared"] = -1;
  EXPECT_THAT(error_of(),
              HasSubstr("kernels[0].variants[3].images[1].shared: expected an unsigned integer, got -1"));
  kernel0["variants"][3]["images"][1]["shared"] = "2048";
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].variants[3].images[1].shared: expected an unsigned integer, got "
                                    "\"2048\""));
  kernel0["variants"][3]["images"][1]["shared"] = 2048;
  builder.json["kernels"][1]["name"] = 7;
  EXPECT_THAT(error_of(), HasSubstr("kernels[1].name: expected a string, got 7"));
}

TEST_F(ManifestReaderTest, LongStringsInMessagesAreCutBetweenCharacters) {
  // 56 ASCII bytes, then a 3-byte character across byte 57, where long values are cut.
  builder.json["kernels"][0]["variants"][0]["images"][0]["shared"] = std::string(56, 'a') + "\u229a" + std::string(20, 'b');
  EXPECT_THAT(error_of(), AllOf(HasSubstr("shared: expected an unsigned integer, got \"" + std::string(56, 'a') + "...\""),
                                Not(HasSubstr("internal error"))));
}

TEST_F(ManifestReaderTest, RejectsInvalidJson) {
  const auto path = builder.write();
  testing::write_file(path, "{\"schema\": \"taot.manifest\",");
  const Expected<Manifest> manifest = read_manifest(path);
  ASSERT_FALSE(manifest.ok());
  EXPECT_THAT(manifest.status().message(), AllOf(HasSubstr("manifest.json"), HasSubstr("not valid JSON")));
}

TEST_F(ManifestReaderTest, RejectsMissingManifest) {
  const Expected<Manifest> manifest = read_manifest(dir.path() / "nowhere.json");
  ASSERT_FALSE(manifest.ok());
  EXPECT_THAT(manifest.status().message(), HasSubstr("nowhere.json: file not found"));
}

TEST_F(ManifestReaderTest, RejectsMissingCubinNamingTheFile) {
  std::filesystem::remove(builder.cubin_path(0, 1, 1));
  EXPECT_THAT(error_of(), AllOf(HasSubstr("kernels[0].variants[1].images[1].cubin"),
                                HasSubstr("artifacts/add_kernel_fp32_B1024/sm_90a/add_kernel.cubin: file not found")));
}

TEST_F(ManifestReaderTest, RejectsTruncatedCubinNamingTheFile) {
  const auto path = builder.cubin_path(0, 0, 0);
  const std::string bytes = testing::read_file(path);
  testing::write_file(path, bytes.substr(0, bytes.size() - 1));
  EXPECT_THAT(error_of(), AllOf(HasSubstr("kernels[0].variants[0].images[0].cubin"),
                                HasSubstr("artifacts/add_kernel_fp32_B256/sm_80/add_kernel.cubin: sha256 is"),
                                HasSubstr(std::to_string(bytes.size() - 1) + " bytes"), HasSubstr("truncated")));
}

TEST_F(ManifestReaderTest, RejectsCorruptedCubin) {
  const auto path = builder.cubin_path(2, 0, 0);
  std::string bytes = testing::read_file(path);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
  testing::write_file(path, bytes);
  EXPECT_THAT(error_of(), AllOf(HasSubstr("kernels[2].variants[0].images[0].cubin"), HasSubstr("noop_kernel.cubin"),
                                HasSubstr("corrupted")));
}

TEST_F(ManifestReaderTest, SkipsCubinChecksWhenAskedTo) {
  std::filesystem::remove(builder.cubin_path(0, 0, 0));
  ReadOptions options;
  options.verify_cubins = false;
  EXPECT_TRUE(read_manifest(builder.write(), options).ok());
}

TEST_F(ManifestReaderTest, RejectsUnknownDtype) {
  kernel0["args"][1]["dtypes"][1] = "fp8e4b15";
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].args[1].dtypes[1]: unknown dtype \"fp8e4b15\""));
}

TEST_F(ManifestReaderTest, RejectsSpecializationOutsideTheArgumentsTypes) {
  kernel0["variants"][0]["specialization"][0]["dtype"] = "bf16";
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].variants[0].specialization[0].dtype: \"bf16\" is not among the types "
                                    "of pointer argument x_ptr (fp32, fp16)"));
}

TEST_F(ManifestReaderTest, RejectsSpecializationInTheWrongOrder) {
  std::swap(kernel0["variants"][0]["specialization"][0], kernel0["variants"][0]["specialization"][1]);
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].variants[0].specialization[0].arg: expected \"x_ptr\""));
}

TEST_F(ManifestReaderTest, RejectsParamsNamingAConstexpr) {
  kernel0["variants"][1]["params"].push_back("BLOCK_SIZE");
  EXPECT_THAT(error_of(),
              HasSubstr("kernels[0].variants[1].params[6]: \"BLOCK_SIZE\" is a constexpr argument, not a call argument"));
  kernel0["variants"][1]["params"][6] = "nope";
  EXPECT_THAT(error_of(), HasSubstr("params[6]: \"nope\" is not an argument of kernel add_kernel"));
}

TEST_F(ManifestReaderTest, RejectsGridArgumentThatIsNotAnIntCallArgument) {
  kernel0["variants"][0]["grid"][1] = {{{"op", "arg"}, {"name", "x_ptr"}}};
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].variants[0].grid[1][0].name: \"x_ptr\" is a pointer argument"));
  kernel0["variants"][0]["grid"][1] = {{{"op", "arg"}, {"name", "BLOCK_SIZE"}}};
  EXPECT_THAT(error_of(), HasSubstr("grid[1][0].name: \"BLOCK_SIZE\" is a constexpr argument"));
}

TEST_F(ManifestReaderTest, RejectsMalformedGridPrograms) {
  kernel0["variants"][0]["grid"][0] = {{{"op", "lit"}, {"value", 1}}, {{"op", "add"}}};
  EXPECT_THAT(error_of(), HasSubstr("grid[0][1]: add needs 2 operand(s), the program has 1"));
  kernel0["variants"][0]["grid"][0] = {{{"op", "lit"}, {"value", 1}}, {{"op", "lit"}, {"value", 2}}};
  EXPECT_THAT(error_of(), HasSubstr("grid[0]: the program leaves 2 values"));
  kernel0["variants"][0]["grid"][0] = {{{"op", "pow"}}};
  EXPECT_THAT(error_of(), HasSubstr("grid[0][0].op: unknown grid op \"pow\""));
}

TEST_F(ManifestReaderTest, RejectsConfigValuesOutsideTheField) {
  kernel0["variants"][0]["config"]["BLOCK_SIZE"] = 512;
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].variants[0].config.BLOCK_SIZE: 512 is not one of the values"));
  kernel0["variants"][0]["config"]["BLOCK_SIZE"] = 256;
  kernel0["variants"][0]["config"]["EXTRA"] = 1;
  EXPECT_THAT(error_of(), HasSubstr("config.EXTRA: not a config field of kernel add_kernel"));
  kernel0["variants"][0]["config"].erase("EXTRA");
  kernel0["config"][0]["default"] = 3;
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].config[0].default: 3 is not one of the values of BLOCK_SIZE (256, 1024)"));
}

TEST_F(ManifestReaderTest, RejectsCountsAboveTheTableLimits) {
  kernel0["variants"][0]["images"][0]["arch"] = 70000;
  EXPECT_THAT(error_of(), HasSubstr("images[0].arch: expected an unsigned integer of at most 65535, got 70000"));
  kernel0["variants"][0]["images"][0]["arch"] = 80;
  nlohmann::json params = nlohmann::json::array();
  for (int i = 0; i < 65536; ++i) params.push_back("x_ptr");
  kernel0["variants"][0]["params"] = params;
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].variants[0].params: 65536 entries are more than the runtime's tables "
                                    "hold (65535)"));
}

TEST_F(ManifestReaderTest, RejectsNamesThatAreNotIdentifiers) {
  builder.json["library"] = "vector-add";
  EXPECT_THAT(error_of(), HasSubstr("library: \"vector-add\" is not a C/C++ identifier"));
  builder.json["library"] = "namespace";
  EXPECT_THAT(error_of(), HasSubstr("library: \"namespace\" is a C or C++ keyword"));
  builder.json["library"] = "taot";
  EXPECT_THAT(error_of(), HasSubstr("library: \"taot\" is reserved"));
  builder.json["library"] = "demo";
  kernel0["name"] = "class";
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].name: \"class\" is a C or C++ keyword"));
  kernel0["name"] = "preload";
  EXPECT_THAT(error_of(), HasSubstr("kernels[0].name: \"preload\" is reserved"));
}

TEST_F(ManifestReaderTest, RejectsKernelsWhoseGeneratedNamesClash) {
  builder.json["kernels"][1]["name"] = "add_kernel";
  EXPECT_THAT(error_of(), HasSubstr("kernels[1].name: \"add_kernel\" is the name of another kernel"));
  builder.json["kernels"][1]["name"] = "add_kernel_handle";
  EXPECT_THAT(error_of(), HasSubstr("kernels[1].name: kernel \"add_kernel_handle\" would define C function "
                                    "demo_add_kernel_handle, which kernel \"add_kernel\" (kernels[0]) also defines"));
}

TEST_F(ManifestReaderTest, RejectsConfigFieldsThatClashAfterKeywordRenaming) {
  builder.json["kernels"][1]["config"].push_back(
      {{"name", "int_"}, {"kind", "int"}, {"values", {1}}, {"default", 1}});
  EXPECT_THAT(error_of(), HasSubstr("kernels[1].config[1].name: config fields \"int\" and \"int_\" would both be the C++ member int_"));
}

TEST(DTypeNames, RoundTripEveryRuntimeDtype) {
  for (const char* name : {"i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "fp8e4nv", "fp8e5", "fp16",
                           "bf16", "fp32", "fp64"}) {
    const auto dtype = dtype_from_name(name);
    ASSERT_TRUE(dtype.has_value()) << name;
    EXPECT_EQ(dtype_name(*dtype), name);
  }
  EXPECT_EQ(dtype_enumerator(DType::fp8e4nv), "TAOT_DTYPE_FP8E4NV");
  EXPECT_FALSE(dtype_from_name("int32").has_value());
}


// ---- schema 2 ----------------------------------------------------------------------------------

TEST_F(ManifestReaderTest, ReadsSchemaTwoFeatures) {
  const Expected<Manifest> read = read_manifest(builder.write());
  ASSERT_TRUE(read.ok()) << read.status().message();
  const Kernel& features = read->kernels[3];
  EXPECT_EQ(features.targets, (std::vector<std::string>{"sm_80", "sm_90a"}));
  EXPECT_EQ(read->kernels[1].targets, std::vector<std::string>{"sm_90a"});
  EXPECT_EQ(features.tuning_key, std::vector<std::string>{"n"});
  ASSERT_TRUE(features.autotune.has_value());
  EXPECT_TRUE(features.autotune->at_first_call);
  EXPECT_EQ(features.autotune->fields, (std::vector<std::size_t>{0, 1}));  // config order: ACTIVATION, num_warps
  EXPECT_EQ(features.autotune->reset_to_zero, std::vector<std::size_t>{0});
  EXPECT_TRUE(features.autotune->restore_value.empty());
  ASSERT_EQ(features.heuristics.size(), 1u);
  EXPECT_EQ(features.heuristics[0].field, "num_warps");
  EXPECT_EQ(features.heuristics[0].rule.expression, "4 if n < 4096 else 8");
  ASSERT_EQ(features.heuristics[0].rule.program.size(), 7u);
  EXPECT_EQ(features.heuristics[0].rule.program[3].op, RuleOp::jz);
  EXPECT_EQ(features.heuristics[0].rule.program[3].operand, 6u);
  EXPECT_EQ(features.heuristics[0].rule.program[1].integer, 4096);
  ASSERT_EQ(features.requirements.size(), 1u);
  EXPECT_EQ(features.requirements[0].program[0].op, RuleOp::isnone);
  EXPECT_EQ(features.requirements[0].program[0].operand, 1u);  // bias_ptr
  EXPECT_TRUE(features.args[1].none);
  EXPECT_FALSE(features.args[0].none);
  EXPECT_TRUE(features.args[4].launch_only);
  EXPECT_EQ(features.config[0].kind, FieldKind::string_value);
  EXPECT_EQ(features.config[0].values, (std::vector<ConfigValue>{std::string("gelu"), std::string("relu")}));
  EXPECT_EQ(features.config[0].default_index, 1u);
  EXPECT_TRUE(features.variants[0].specialization[1].none);
  EXPECT_FALSE(features.variants[1].specialization[1].none);
  EXPECT_EQ(features.variants[0].params, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(features.variants[0].grid[0][1].op, GridOp::num_sms);
  ASSERT_EQ(features.variants[1].images.size(), 1u);
  EXPECT_EQ(features.variants[1].images[0].target, "sm_90a");
  // Optional keys: a kernel without a tuning key or heuristics reads as empty lists.
  EXPECT_TRUE(read->kernels[0].tuning_key.empty());
  EXPECT_TRUE(read->kernels[0].heuristics.empty());
  EXPECT_FALSE(read->kernels[0].autotune.has_value());
}

class SchemaTwoErrorTest : public ManifestReaderTest {
 protected:
  nlohmann::json& features = builder.json["kernels"][3];
};

TEST_F(SchemaTwoErrorTest, KernelTargetsAreASubsetOfTheLibrarysInItsOrder) {
  features.erase("targets");
  EXPECT_THAT(error_of(), HasSubstr("manifest.json: kernels[3].targets: missing"));
  features["targets"] = {"sm_75"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].targets[0]: \"sm_75\" is not one of the manifest's targets"));
  features["targets"] = {"sm_90a", "sm_80"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].targets[1]: \"sm_80\" comes before \"sm_90a\" in the manifest's targets"));
  features["targets"] = {"sm_80", "sm_80"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].targets[1]: \"sm_80\" is listed twice"));
  features["targets"] = nlohmann::json::array();
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].targets: expected at least one entry, got none"));
}

TEST_F(SchemaTwoErrorTest, ImagesFollowTheKernelsTargetsEachAtMostOnce) {
  builder.json["kernels"][1]["variants"][0]["images"][0]["target"] = "sm_80";  // odd_names is sm_90a only
  EXPECT_THAT(error_of(), HasSubstr("kernels[1].variants[0].images[0].target: \"sm_80\" is not one of kernel "
                                    "odd_names's targets (sm_90a)"));
  builder.json["kernels"][1]["variants"][0]["images"][0]["target"] = "sm_90a";
  nlohmann::json& images = features["variants"][0]["images"];
  std::swap(images[0], images[1]);
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].variants[0].images[1].target: \"sm_80\" comes after \"sm_90a\"; "
                                    "images follow the kernel's targets (sm_80, sm_90a)"));
  std::swap(images[0], images[1]);
  images.push_back(images[0]);
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].variants[0].images: 3 entries are more than the runtime's tables hold (2)"));
  images.erase(2);
  images.erase(0);
  images.erase(0);
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].variants[0].images: expected at least one entry, got none"));
}

TEST_F(SchemaTwoErrorTest, AutotuneNamesConfigFieldsAndPointersOfAKeyedKernel) {
  nlohmann::json& autotune = features["autotune"];
  autotune["fields"] = {"BLOCK"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].autotune.fields[0]: \"BLOCK\" is not a config field of the kernel"));
  autotune["fields"] = {"num_warps", "num_warps"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].autotune.fields[1]: \"num_warps\" is listed twice"));
  autotune["fields"] = nlohmann::json::array();
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].autotune.fields: expected at least one entry, got none"));
  autotune["fields"] = {"num_warps"};
  autotune["reset_to_zero"] = {"n"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].autotune.reset_to_zero[0]: \"n\" is an argument of kind int; the "
                                    "runtime restores the memory of pointers"));
  autotune["reset_to_zero"] = nlohmann::json::array();
  autotune["restore_value"] = {"y_ptr"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].autotune.restore_value[0]: \"y_ptr\" is not an argument of kernel features"));
  autotune.erase("restore_value");
  autotune.erase("at_first_call");
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].autotune.at_first_call: missing"));
  autotune["at_first_call"] = false;
  EXPECT_TRUE(read_manifest(builder.write()).ok());
  features.erase("tuning_key");
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].autotune: a kernel tuned at first call needs a \"tuning_key\""));
}

TEST_F(SchemaTwoErrorTest, TuningKeyNamesCallArguments) {
  features["tuning_key"] = {"ACTIVATION"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].tuning_key[0]: \"ACTIVATION\" is a config field of string values; a tuning "
                                    "key is made of ints and bools"));
  features["tuning_key"] = {"num_warps", "n"};  // an int config field (as @triton.autotune keys on a constexpr)
  EXPECT_TRUE(read_manifest(builder.write()).ok());
  features["tuning_key"] = {"m"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].tuning_key[0]: \"m\" is not an argument of kernel features"));
  features["tuning_key"] = {"n", "n"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].tuning_key[1]: \"n\" is listed twice"));
  features["tuning_key"] = {"n_rows"};  // launch-only arguments are call arguments
  EXPECT_TRUE(read_manifest(builder.write()).ok());
  features["tuning_key"] = "n";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].tuning_key: expected an array, got \"n\""));
}

TEST_F(SchemaTwoErrorTest, ParametersListTheArgumentsInOrder) {
  features["parameters"] = {"bias_ptr", "x_ptr", "n", "ACTIVATION"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].parameters: argument \"bias_ptr\" is not among the parameters, in the order of "
                                    "\"args\""));
  features["parameters"] = {"x_ptr", "x_ptr"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].parameters[1]: \"x_ptr\" is listed twice"));
  features["parameters"] = {"x_ptr", "bias_ptr", "n", "ACTIVATION"};  // n_rows is launch-only: not a parameter
  EXPECT_TRUE(read_manifest(builder.write()).ok());
}

TEST_F(SchemaTwoErrorTest, HeuristicsSetConfigFields) {
  features["heuristics"][0]["field"] = "BLOCK";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].heuristics[0].field: \"BLOCK\" is not a config field of kernel features"));
  features["heuristics"][0]["field"] = "ACTIVATION";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].heuristics[0].field: \"ACTIVATION\" holds string values; heuristics "
                                    "compute int, bool or float fields"));
  features["heuristics"][0]["field"] = "num_warps";
  features["heuristics"][0].erase("expression");
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].heuristics[0].expression: missing"));
  features["heuristics"][0]["expression"] = "";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].heuristics[0].expression: expected an expression"));
}

TEST_F(SchemaTwoErrorTest, RuleProgramsLeaveOneValueOnEveryPath) {
  nlohmann::json& program = features["requires"][0]["program"];
  const nlohmann::json good = program;
  program[5]["op"] = "sqrt";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].requires[0].program[5].op: unknown rule op \"sqrt\""));
  program = good;
  program[1]["to"] = 0;
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].requires[0].program[1].to: 0 is not a later instruction"));
  program = good;
  program[1]["to"] = 5;  // the jump skips `mod` and reaches `not` with two values, the fall-through with one
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].requires[0].program[4]: paths reach instruction 5 with"));
  program = nlohmann::json::array();
  for (int i = 0; i < 33; ++i) program.push_back({{"op", "lit"}, {"value", i}});
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].requires[0].program[32]: the program holds 33 values here; the "
                                    "runtime holds at most 32"));
  program = {{{"op", "arg"}, {"name", "n"}}, {{"op", "arg"}, {"name", "n"}}};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].requires[0].program: the program leaves 2 values"));
  program = good;
  program[2]["name"] = "x_ptr";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].requires[0].program[2].name: \"x_ptr\" is an argument of kind pointer; arg "
                                    "reads int, float, bool or scalar arguments"));
  program = good;
  program[0]["name"] = "n";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].requires[0].program[0].name: \"n\" is an argument of kind int; isnone tests "
                                    "pointer and scalar arguments"));
  program = good;
  program[2] = {{"op", "field"}, {"name", "ACTIVATION"}};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].requires[0].program[2].name: \"ACTIVATION\" holds string values"));
  program = good;
  program[3]["op"] = "mod";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].requires[0].program[3]: mod needs 2 operand(s), the program has 1"));
  program = good;
  features["tuning_key"] = {"x_ptr"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].tuning_key[0]: \"x_ptr\" is an argument of kind pointer; a tuning key is made "
                                    "of int arguments and int or bool config fields"));
}

TEST_F(SchemaTwoErrorTest, NoneSpecializationsNeedANoneArgumentAndStayOutOfParams) {
  features["args"][1]["none"] = "yes";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].args[1].none: expected true or false"));
  features["args"][1].erase("none");
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].variants[0].specialization[1].none: argument bias_ptr was not declared "
                                    "none: true"));
  features["args"][1]["none"] = true;
  features["variants"][0]["params"] = {"x_ptr", "bias_ptr", "n"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].variants[0].params[1]: \"bias_ptr\" is compiled None in this variant; "
                                    "it is not a parameter"));
  features["variants"][0]["params"] = {"x_ptr", "n"};
  features["variants"][1]["params"] = {"x_ptr", "n"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].variants[1].params: \"bias_ptr\" is not None in this variant, so it "
                                    "must be among its params"));
}

TEST_F(SchemaTwoErrorTest, LaunchOnlyArgumentsComeLastHaveNoHintAndAreNoParams) {
  features["variants"][0]["params"] = {"x_ptr", "n", "n_rows"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].variants[0].params[2]: \"n_rows\" is a launch-only argument; the "
                                    "kernel does not take it"));
  features["variants"][0]["params"] = {"x_ptr", "n"};
  features["variants"][0]["specialization"][3]["hint"] = 16;
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].variants[0].specialization[3].hint: n_rows is launch-only: the kernel "
                                    "is not specialized for it (hint 0), got 16"));
  features["variants"][0]["specialization"][3]["hint"] = 0;
  std::swap(features["args"][3], features["args"][4]);  // n_rows before the constexpr ACTIVATION
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].args[4]: \"ACTIVATION\" follows the launch-only argument \"n_rows\""));
  std::swap(features["args"][3], features["args"][4]);
  features["args"][4]["launch_only"] = 1;
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].args[4].launch_only: expected true or false, got 1"));
}

TEST_F(SchemaTwoErrorTest, StringConfigValuesAreStrings) {
  features["config"][0]["values"] = {"gelu", 3};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].config[0].values[1]: expected a string, got 3"));
  features["config"][0]["values"] = {"gelu", "gelu"};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].config[0].values[1]: \"gelu\" is listed twice"));
  features["config"][0]["values"] = {"gelu", "relu"};
  features["variants"][1]["config"]["ACTIVATION"] = "tanh";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].variants[1].config.ACTIVATION: \"tanh\" is not one of the values of "
                                    "config field ACTIVATION"));
  features["config"][0]["kind"] = "text";
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].config[0].kind: unknown config kind \"text\" (expected int, float, bool, "
                                    "dtype or string)"));
}

TEST_F(SchemaTwoErrorTest, NumSmsIsAGridOperand) {
  features["variants"][0]["grid"][1] = {{{"op", "num_sms"}}, {{"op", "num_sms"}}};
  EXPECT_THAT(error_of(), HasSubstr("kernels[3].variants[0].grid[1]: the program leaves 2 values"));
  features["variants"][0]["grid"][1] = {{{"op", "num_sms"}}, {{"op", "lit"}, {"value", 2}}, {{"op", "mul"}}};
  const Expected<Manifest> read = read_manifest(builder.write());
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->kernels[3].variants[0].grid[1][0].op, GridOp::num_sms);
  features["variants"][0]["grid"][1] = {{{"op", "sms"}}};
  EXPECT_THAT(error_of(), HasSubstr("unknown grid op \"sms\" (expected lit, arg, num_sms,"));
}

}  // namespace
}  // namespace taot::codegen
