// Loading libraries, manifests, cubins and AMD code objects into images; choosing images; the
// reports and the comparison of two images.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fake_cubin.h"
#include "manifest_builder.h"
#include "taot/codegen/sha256.h"
#include "taot/workbench/compare.h"
#include "taot/workbench/diff.h"
#include "taot/workbench/inventory.h"
#include "taot/workbench/report.h"

namespace taot::workbench {
namespace {

using codegen::testing::ManifestBuilder;
using codegen::testing::TempDir;
using codegen::testing::write_file;
using codegen::testing::fake_cubin;
using codegen::testing::FakeFunction;

std::string message_of(const Status& status) { return status.message(); }

// The demo library of the codegen fixtures, with the first image's cubin a real ELF and ptxas'
// report, Triton and ptxas versions recorded for it (and a ptxas version for the second).
class InventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ManifestBuilder builder(dir_.path());
    nlohmann::json& image = builder.json["kernels"][0]["variants"][0]["images"][0];
    const std::string cubin = fake_cubin({FakeFunction{.name = "add_kernel", .registers = 26, .frame_size = 8,
                                                       .min_stack_size = 8, .static_shared = 1024, .local = 4}});
    write_file(dir_.path() / image["cubin"].get<std::string>(), cubin);
    image["cubin_sha256"] = codegen::sha256_hex(cubin).value();
    image["ptxas"] = {{"registers", 26}, {"spill_stores", 12}, {"spill_loads", 16}, {"stack", 8}};
    image["override"] = {{"stage", "ttgir"}, {"sha256", std::string(64, 'a')}, {"file", "overrides/x.ttgir"}};
    image["triton_version"] = "3.9.0";
    image["ptxas_version"] = "13.4.59";
    image["launch_abi"] = {{"tensordesc_layout", "3.7"}, {"scratch_pointers", 2}};
    builder.json["kernels"][0]["variants"][0]["images"][1]["ptxas_version"] = "12.9.86";
    builder.write();
    Expected<Inventory> loaded = load_inventory(dir_.path());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    inventory_ = std::move(*loaded);
  }

  std::vector<const ImageView*> select(const ImageFilter& filter) {
    Expected<std::vector<const ImageView*>> chosen = select_images(inventory_, filter);
    EXPECT_TRUE(chosen.ok()) << chosen.status().message();
    return chosen.ok() ? *chosen : std::vector<const ImageView*>();
  }

  std::string failure(const ImageFilter& filter) {
    Expected<std::vector<const ImageView*>> chosen = select_images(inventory_, filter);
    EXPECT_FALSE(chosen.ok());
    return chosen.ok() ? "" : message_of(chosen.status());
  }

  TempDir dir_;
  Inventory inventory_;
};

TEST_F(InventoryTest, EveryImageWithItsFacts) {
  EXPECT_EQ(inventory_.origin, Inventory::Origin::library);
  EXPECT_EQ(inventory_.library, "demo");
  std::size_t add_images = 0;
  for (const ImageView& image : inventory_.images) add_images += image.kernel == "add_kernel";
  EXPECT_EQ(add_images, 8u);
  const ImageView& first = inventory_.images.front();
  EXPECT_EQ(first.variant, "add_kernel_fp32_B256");
  EXPECT_EQ(first.target, "sm_80");
  ASSERT_GE(first.config.size(), 4u);
  EXPECT_EQ(first.config[0].name, "BLOCK_SIZE");
  EXPECT_EQ(first.config[0].text, "256");
  EXPECT_EQ(first.config[1].text, "fp32");
  EXPECT_EQ(first.config[2].text, "0.5");
  EXPECT_EQ(first.specialization[0].value, "fp32 align 16");
  EXPECT_EQ(first.specialization[2].value, "fp32");
  EXPECT_EQ(first.specialization[3].value, "i32 %16");
  EXPECT_TRUE(first.cubin_problem.empty()) << first.cubin_problem;
  ASSERT_TRUE(first.resources.has_value());
  EXPECT_EQ(first.resources->static_shared, 1024u);
  EXPECT_EQ(first.stages.count(Stage::ptx), 1u);
  // The other cubins are random bytes: named as a note, not a failure.
  EXPECT_NE(inventory_.images[1].cubin_problem.find("not a valid cubin"), std::string::npos);

  const ResourceUsage usage = resource_usage(first);
  EXPECT_TRUE(usage.from_ptxas);
  EXPECT_EQ(usage.registers, 26u);
  EXPECT_EQ(usage.spill_stores, 12u);
  EXPECT_EQ(usage.spill_loads, 16u);
  EXPECT_EQ(usage.stack, 8u);
  EXPECT_EQ(usage.local, 4u);
  EXPECT_EQ(usage.shared(), 1024u + first.manifest_image->shared);
}

TEST_F(InventoryTest, FiltersChooseAndNameWhatExists) {
  EXPECT_EQ(select({}).size(), inventory_.images.size());
  EXPECT_EQ(select({.kernels = {"add_kernel"}}).size(), 8u);
  const auto blocks = select({.kernels = {"add_kernel"}, .where = {{"BLOCK_SIZE", "256"}}});
  EXPECT_EQ(blocks.size(), 4u);
  for (const ImageView* image : blocks) EXPECT_EQ(image->config[0].text, "256");
  EXPECT_EQ(select({.kernels = {"add_kernel"}, .where = {{"EPS", "1e-06"}, {"num_warps", "4"}}}).size(), 2u)
      << "floats compare by value";
  EXPECT_EQ(select({.kernels = {"add_kernel"}, .targets = {"sm_90"}}).size(), 4u) << "sm_90 matches sm_90a";
  EXPECT_EQ(select({.variants = {"fp16_B1024"}}).size(), 2u);

  EXPECT_NE(failure({.kernels = {"nope"}}).find("no kernel 'nope'"), std::string::npos);
  EXPECT_NE(failure({.kernels = {"nope"}}).find("add_kernel, odd_names, noop, features"), std::string::npos);
  const std::string field = failure({.kernels = {"add_kernel"}, .where = {{"BLOCK", "256"}}});
  EXPECT_NE(field.find("no config field 'BLOCK' (fields: BLOCK_SIZE, ACC_TYPE, EPS, num_warps)"), std::string::npos) << field;
  const std::string value = failure({.kernels = {"add_kernel"}, .where = {{"BLOCK_SIZE", "512"}}});
  EXPECT_NE(value.find("no variant has BLOCK_SIZE=512 (its values: 256, 1024)"), std::string::npos) << value;
  EXPECT_NE(failure({.targets = {"sm_70"}}).find("no target 'sm_70'"), std::string::npos);
  EXPECT_NE(failure({.variants = {"zzz"}}).find("no variant 'zzz'"), std::string::npos);
  EXPECT_NE(failure({.variants = {"B25"}}).find("no variant 'B25'"), std::string::npos) << "whole parts only";
  const std::string ambiguous = failure({.variants = {"B256"}});
  EXPECT_NE(ambiguous.find("'B256' names 2 variants"), std::string::npos) << ambiguous;

  EXPECT_FALSE(parse_where("BLOCK_SIZE").ok());
  EXPECT_FALSE(parse_where("=3").ok());
  EXPECT_EQ(parse_where("A=b=c")->second, "b=c");
}

TEST_F(InventoryTest, FindImageByVariantAndTarget) {
  Expected<const ImageView*> image = find_image(inventory_, "fp32_B1024", "sm_90");
  ASSERT_TRUE(image.ok()) << image.status().message();
  EXPECT_EQ((*image)->target, "sm_90a");
  EXPECT_EQ((*find_image(inventory_, "add_kernel_fp32_B1024"))->target, "sm_80") << "the first target by default";
  Expected<const ImageView*> missing = find_image(inventory_, "noop_0", "sm_90");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("variant noop_0 has no image for target 'sm_90' (its targets: sm_80)"),
            std::string::npos) << missing.status().message();
}

TEST_F(InventoryTest, ReportsShowEveryImage) {
  const std::vector<const ImageView*> images = select({.kernels = {"add_kernel"}});
  const std::string table = inspect_table(inventory_, images);
  EXPECT_NE(table.find("KERNEL      VARIANT"), std::string::npos) << table;
  EXPECT_NE(table.find("12/16"), std::string::npos) << "spill stores/loads of the first image";
  EXPECT_NE(table.find("ttgir aaaaaaaaaaaa"), std::string::npos) << "the override: stage and SHA-256 prefix";
  EXPECT_NE(table.find("8 of"), std::string::npos);
  EXPECT_NE(table.find("note: add_kernel add_kernel_fp32_B256 sm_90a:"), std::string::npos) << table;
  // The toolchain of each image and the oldest driver that loads it, "-" where not recorded.
  EXPECT_NE(table.find("TRITON  PTXAS    DRIVER  OVERRIDE"), std::string::npos) << table;
  EXPECT_NE(table.find("3.9.0   13.4.59     580  ttgir aaaaaaaaaaaa"), std::string::npos) << table;
  EXPECT_NE(table.find("-       12.9.86     525  -"), std::string::npos) << table;
  EXPECT_NE(table.find("DRIVER: the oldest NVIDIA driver that loads the cubin"), std::string::npos);

  const nlohmann::json json = nlohmann::json::parse(inspect_json(inventory_, images));
  ASSERT_EQ(json["images"].size(), 8u);
  EXPECT_EQ(json["count"], 8);
  const nlohmann::json& first = json["images"][0];
  EXPECT_EQ(first["registers"], 26);
  EXPECT_EQ(first["registers_from"], "ptxas");
  EXPECT_EQ(first["config"]["BLOCK_SIZE"], 256);
  EXPECT_EQ(first["config"]["ACC_TYPE"], "fp32");
  EXPECT_EQ(first["config"]["EPS"], 0.5);
  EXPECT_EQ(first["override"]["stage"], "ttgir");
  EXPECT_EQ(first["triton_version"], "3.9.0");
  EXPECT_EQ(first["ptxas_version"], "13.4.59");
  EXPECT_EQ(first["min_driver"], 580);
  EXPECT_EQ(first["launch_abi"], (nlohmann::json{{"tensordesc_layout", "3.7"}, {"scratch_pointers", 2}}));
  EXPECT_TRUE(json["images"][2]["triton_version"].is_null());
  EXPECT_TRUE(json["images"][2]["min_driver"].is_null());
  EXPECT_EQ(json["images"][2]["launch_abi"]["tensordesc_layout"], "3.5");
  EXPECT_EQ(first["cubin_resources"]["static_shared"], 1024);
  EXPECT_TRUE(json["images"][1]["cubin_resources"].is_null());
  EXPECT_TRUE(json["images"][1]["problem"].is_string());
}

TEST_F(InventoryTest, ComparisonNamesTheConfigDifference) {
  const ImageView& a = **find_image(inventory_, "add_kernel_fp32_B256", "sm_80");
  const ImageView& b = **find_image(inventory_, "add_kernel_fp32_B1024", "sm_80");
  const ImageComparison comparison = compare_images(a, b);
  ASSERT_FALSE(comparison.config.empty());
  EXPECT_EQ(comparison.config[0].name, "BLOCK_SIZE");
  EXPECT_EQ(comparison.config[0].a, "256");
  EXPECT_EQ(comparison.config[0].b, "1024");
  Expected<ComparisonReport> report = diff_images(a, b, {});
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_FALSE(report->stage.has_value()) << "no ttgir kept: no op counts";
  const std::string text = comparison_text(*report);
  EXPECT_NE(text.find("config (a -> b):\n  BLOCK_SIZE  256 -> 1024\n  num_warps     4 -> 8\n"), std::string::npos) << text;
  EXPECT_NE(text.find("registers"), std::string::npos) << text;
  Expected<ComparisonReport> missing = diff_images(a, b, {.stage = Stage::ttgir});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("has no ttgir kept (it has ttir, ptx and sass)"), std::string::npos)
      << missing.status().message();
}

TEST(Inventory, BareCubinsAndWhatIsNoTarget) {
  TempDir dir;
  write_file(dir.path() / "two.cubin", fake_cubin({FakeFunction{.name = "k1", .registers = 10},
                                                   FakeFunction{.name = "helper", .entry = false},
                                                   FakeFunction{.name = "k2", .registers = 20}}));
  Expected<Inventory> cubin = load_inventory(dir.path() / "two.cubin");
  ASSERT_TRUE(cubin.ok()) << cubin.status().message();
  EXPECT_EQ(cubin->origin, Inventory::Origin::cubin);
  ASSERT_EQ(cubin->images.size(), 2u) << "entry functions only";
  EXPECT_EQ(cubin->images[1].kernel, "k2");
  EXPECT_EQ(resource_usage(cubin->images[1]).registers, 20u);
  EXPECT_FALSE(resource_usage(cubin->images[1]).from_ptxas);
  Expected<std::vector<const ImageView*>> variant = select_images(*cubin, {.variants = {"x"}});
  ASSERT_FALSE(variant.ok());
  EXPECT_NE(variant.status().message().find("is a bare cubin: it has no variants"), std::string::npos);

  Expected<Inventory> empty = load_inventory(dir.path());
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("has no manifest.json"), std::string::npos);
  Expected<Inventory> absent = load_inventory(dir.path() / "absent");
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.status().message().find("does not exist"), std::string::npos);
  write_file(dir.path() / "manifest.json", "{\"schema\": \"other\"}");
  Expected<Inventory> wrong = load_inventory(dir.path() / "manifest.json");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("manifest.json"), std::string::npos) << wrong.status().message();
}

// A real code object of Triton 3.6 (tests/unit/codegen/data/README.md): dot_kernel for gfx942 with
// 64 VGPRs, 18 SGPRs, 0 AGPRs, 374 VGPRs and 0 SGPRs spilled, no fixed LDS, 816 bytes of scratch.
std::string spilling_code_object() {
  return codegen::testing::read_file(std::filesystem::path(TAOT_TEST_CODEGEN_DATA) / "amdgpu_3.6.0_gfx942_spills.hsaco");
}

TEST(Inventory, BareCodeObjectsByNameOrMachine) {
  TempDir dir;
  const std::string hsaco = spilling_code_object();
  write_file(dir.path() / "k.hsaco", hsaco);
  write_file(dir.path() / "k.bin", hsaco);  // no .hsaco: known by its e_machine
  for (const char* file : {"k.hsaco", "k.bin"}) {
    Expected<Inventory> loaded = load_inventory(dir.path() / file);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->origin, Inventory::Origin::code_object) << file;
    EXPECT_TRUE(loaded->bare());
    EXPECT_EQ(loaded->targets, std::vector<std::string>{"gfx942"});
    ASSERT_EQ(loaded->images.size(), 1u);
    const ImageView& image = loaded->images[0];
    EXPECT_EQ(image.kernel, "dot_kernel");
    EXPECT_EQ(image.target, "gfx942");
    EXPECT_TRUE(image.amd());
    EXPECT_FALSE(image.resources.has_value());
    ASSERT_TRUE(image.amdgpu.has_value());
    EXPECT_EQ(image.amdgpu->vgprs, 64u);
    EXPECT_EQ(image.amdgpu->vgpr_spills, 374u);
    EXPECT_EQ(image.amdgpu->scratch, 816u);
  }
  Expected<Inventory> loaded = load_inventory(dir.path() / "k.hsaco");
  ASSERT_TRUE(loaded.ok());
  Expected<std::vector<const ImageView*>> chosen = select_images(*loaded, {.targets = {"gfx942"}});
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_EQ(chosen->size(), 1u);
  Expected<std::vector<const ImageView*>> variant = select_images(*loaded, {.variants = {"x"}});
  ASSERT_FALSE(variant.ok());
  EXPECT_NE(variant.status().message().find("k.hsaco is a bare code object: it has no variants"), std::string::npos)
      << variant.status().message();

  const std::string table = inspect_table(*loaded, *chosen);
  EXPECT_NE(table.find("KERNEL      TARGET  VGPRS  SGPRS  AGPRS  SPILL V/S  LDS  SCRATCH  WAVE  WARPS  STAGES  CTAS\n"
                       "dot_kernel  gfx942     64     18      0      374/0    0      816    64      -       -     -\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("1 kernel in "), std::string::npos) << table;
  EXPECT_EQ(table.find("REGS"), std::string::npos) << "no NVIDIA table, no ptxas words: " << table;
  EXPECT_NE(table.find("from the code object's metadata note"), std::string::npos) << table;

  const nlohmann::json json = nlohmann::json::parse(inspect_json(*loaded, *chosen));
  EXPECT_EQ(json["origin"], "code_object");
  const nlohmann::json& entry = json["images"][0];
  EXPECT_TRUE(entry["registers"].is_null());
  EXPECT_TRUE(entry["registers_from"].is_null()) << "AMD registers are not ptxas' nor a cubin's";
  EXPECT_TRUE(entry["cubin_resources"].is_null());
  EXPECT_EQ(entry["amdgpu"]["vgprs"], 64);
  EXPECT_EQ(entry["amdgpu"]["sgprs"], 18);
  EXPECT_EQ(entry["amdgpu"]["agprs"], 0);
  EXPECT_EQ(entry["amdgpu"]["vgpr_spills"], 374);
  EXPECT_EQ(entry["amdgpu"]["sgpr_spills"], 0);
  EXPECT_EQ(entry["amdgpu"]["lds"], 0);
  EXPECT_TRUE(entry["amdgpu"]["lds_dynamic"].is_null()) << "a bare code object has no launch";
  EXPECT_EQ(entry["amdgpu"]["scratch"], 816);
  EXPECT_EQ(entry["amdgpu"]["wavefront_size"], 64);
  EXPECT_EQ(entry["amdgpu"]["symbol"], "dot_kernel.kd");
}

TEST(Inventory, ABrokenBareCodeObjectIsAnErrorNamingIt) {
  TempDir dir;
  const std::string hsaco = spilling_code_object();
  write_file(dir.path() / "cut.hsaco", hsaco.substr(0, hsaco.size() / 2));
  Expected<Inventory> cut = load_inventory(dir.path() / "cut.hsaco");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("cut.hsaco: not a valid AMDGPU code object"), std::string::npos)
      << cut.status().message();
  write_file(dir.path() / "text.hsaco", "not an ELF");
  Expected<Inventory> text = load_inventory(dir.path() / "text.hsaco");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("text.hsaco: not a valid AMDGPU code object: no ELF header"),
            std::string::npos)
      << text.status().message();
}

// The demo library with its noop kernel built for gfx942 instead: a real code object as its image
// (a library of NVIDIA and AMD images), and one whose code object is truncated.
TEST(Inventory, ManifestImagesThatAreCodeObjectsGetTheirMetadata) {
  TempDir dir;
  ManifestBuilder builder(dir.path());
  const std::string hsaco = spilling_code_object();
  builder.json["targets"].push_back("gfx942");
  nlohmann::json* noop = nullptr;
  for (nlohmann::json& kernel : builder.json["kernels"])
    if (kernel["name"] == "noop") noop = &kernel;
  ASSERT_NE(noop, nullptr);
  (*noop)["targets"] = {"gfx942"};
  nlohmann::json& image = (*noop)["variants"][0]["images"][0];
  image["target"] = "gfx942";
  image["arch"] = 0;
  image["arch_specific"] = false;
  image["launch_pdl"] = false;
  image["function_name"] = "dot_kernel";
  image["cubin"] = "artifacts/noop_0/gfx942/dot_kernel.hsaco";
  image["cubin_sha256"] = codegen::sha256_hex(hsaco).value();
  image["shared"] = 4096;
  write_file(dir.path() / image["cubin"].get<std::string>(), hsaco);
  builder.write();

  Expected<Inventory> loaded = load_inventory(dir.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Expected<std::vector<const ImageView*>> amd = select_images(*loaded, {.kernels = {"noop"}});
  ASSERT_TRUE(amd.ok()) << amd.status().message();
  ASSERT_EQ(amd->size(), 1u);
  const ImageView& view = *amd->front();
  EXPECT_TRUE(view.cubin_problem.empty()) << view.cubin_problem;
  EXPECT_TRUE(view.amd());
  EXPECT_FALSE(view.resources.has_value());
  ASSERT_TRUE(view.amdgpu.has_value());
  EXPECT_EQ(view.amdgpu->sgprs, 18u);
  EXPECT_FALSE(resource_usage(view).registers.has_value()) << "no NVIDIA resource usage for an AMD image";

  // A table of NVIDIA images, then one of AMD images; LDS adds the launch's dynamic LDS to the fixed.
  Expected<std::vector<const ImageView*>> both = select_images(*loaded, {.kernels = {"add_kernel", "noop"}});
  ASSERT_TRUE(both.ok());
  const std::string table = inspect_table(*loaded, *both);
  const std::size_t nvidia = table.find("REGS");
  const std::size_t amd_header = table.find("VGPRS");
  ASSERT_NE(nvidia, std::string::npos) << table;
  ASSERT_NE(amd_header, std::string::npos) << table;
  EXPECT_LT(nvidia, amd_header) << table;
  EXPECT_NE(table.find("noop    noop_0   gfx942     64     18      0      374/0  4096      816    64      1       3     1  -       -\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("+ the launch's dynamic LDS"), std::string::npos) << table;
  const nlohmann::json json = nlohmann::json::parse(inspect_json(*loaded, *both));
  const nlohmann::json& last = json["images"].back();
  EXPECT_EQ(last["target"], "gfx942");
  EXPECT_EQ(last["amdgpu"]["lds"], 4096);
  EXPECT_EQ(last["amdgpu"]["lds_fixed"], 0);
  EXPECT_EQ(last["amdgpu"]["lds_dynamic"], 4096);
  EXPECT_TRUE(json["images"][0]["amdgpu"].is_null()) << "an NVIDIA image";
  EXPECT_EQ(json["images"][0]["registers_from"], "cubin") << "NVIDIA images as before";

  // A truncated code object is a note on its image, naming the file, not a failure.
  const std::string cut = hsaco.substr(0, 1000);
  write_file(dir.path() / image["cubin"].get<std::string>(), cut);
  image["cubin_sha256"] = codegen::sha256_hex(cut).value();
  builder.write();
  Expected<Inventory> damaged = load_inventory(dir.path());
  ASSERT_TRUE(damaged.ok()) << damaged.status().message();
  Expected<std::vector<const ImageView*>> noop_only = select_images(*damaged, {.kernels = {"noop"}});
  ASSERT_TRUE(noop_only.ok());
  ASSERT_EQ(noop_only->size(), 1u);
  const ImageView& broken = *noop_only->front();
  EXPECT_FALSE(broken.amdgpu.has_value());
  EXPECT_NE(broken.cubin_problem.find("dot_kernel.hsaco: not a valid AMDGPU code object"), std::string::npos)
      << broken.cubin_problem;
  const std::string damaged_table = inspect_table(*damaged, *noop_only);
  EXPECT_NE(damaged_table.find("note: noop noop_0 gfx942: "), std::string::npos) << damaged_table;
}

}  // namespace
}  // namespace taot::workbench
