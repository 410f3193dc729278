// AMD images' stages: source lines of AMDGCN assembly (an excerpt of what Triton writes for gfx942,
// data/softmax_gfx942.amdgcn), its op counts and location noise, each vendor's stages and the
// errors for another vendor's, and `taot diff`'s rows of an AMD image's code object metadata.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "manifest_builder.h"
#include "taot/workbench/compare.h"
#include "taot/workbench/diff.h"
#include "taot/workbench/op_counts.h"
#include "taot/workbench/report.h"
#include "taot/workbench/source_map.h"
#include "taot/workbench/stage_text.h"
#include "taot/workbench/text_diff.h"

namespace taot::workbench {
namespace {

using codegen::testing::TempDir;
using codegen::testing::write_file;

constexpr const char* kRecordedFolder = "/work/main/examples/softmax";
constexpr const char* kStandard =
    "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/triton/language/standard.py";

std::string read_data(const char* name) {
  std::ifstream file(std::filesystem::path(TAOT_TEST_WORKBENCH_DATA) / name);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The excerpt with the kernel's folder (as its `.file 1` directive records it) replaced by `folder`.
std::string excerpt_in(const std::filesystem::path& folder) {
  std::string text = read_data("softmax_gfx942.amdgcn");
  EXPECT_FALSE(text.empty()) << "data/softmax_gfx942.amdgcn is missing";
  const std::string recorded = kRecordedFolder;
  for (std::size_t at = text.find(recorded); at != std::string::npos; at = text.find(recorded, at))
    text.replace(at, recorded.size(), folder.string()), at += folder.string().size();
  return text;
}

// The index of the first line of `lines` that contains `part`.
std::size_t line_with(const std::vector<std::string_view>& lines, std::string_view part) {
  for (std::size_t index = 0; index < lines.size(); ++index)
    if (lines[index].find(part) != std::string_view::npos) return index;
  ADD_FAILURE() << "no line has " << part;
  return 0;
}

SourceFrames frames(std::initializer_list<std::pair<std::string, std::uint32_t>> list) {
  SourceFrames result;
  for (const auto& [file, line] : list) result.push_back({file, line});
  return result;
}

TEST(AmdgcnSourceMap, FileAndLocDirectivesWithTheirInliningComments) {
  const std::string text = excerpt_in("/k");
  const std::vector<std::string_view> lines = split_lines(text);
  const std::vector<SourceFrames> located = line_locations(Stage::amdgcn, text);
  ASSERT_EQ(located.size(), lines.size());
  const std::string kernel = "/k/softmax_kernels.py";

  EXPECT_EQ(located[line_with(lines, "s_load_dwordx8")], frames({{kernel, 30}})) << "directory and name joined";
  EXPECT_TRUE(located[line_with(lines, "; %bb.13:")].empty()) << "comments have no location";
  EXPECT_TRUE(located[line_with(lines, ".file\t1")].empty());
  EXPECT_TRUE(located[line_with(lines, ".Ltmp0:")].empty()) << "`.loc 1 0 0`: no line";
  EXPECT_EQ(located[line_with(lines, "s_min_i32")], frames({{kernel, 42}}));
  EXPECT_EQ(located[line_with(lines, "v_lshrrev_b32_e32")], frames({{kStandard, 191}, {kernel, 45}}))
      << "inlined at the kernel's line 45, by the comment after `.loc`";
  const SourceFrames& max = located[line_with(lines, "v_max_f32_e32 v5, v3, v3")];
  EXPECT_EQ(max, frames({{kStandard, 170}, {kStandard, 191}, {kernel, 45}}));
  ASSERT_NE(shown_frame(max), nullptr);
  EXPECT_EQ(*shown_frame(max), (SourceLocation{kernel, 45})) << "Triton's language library is skipped";
  EXPECT_EQ(located[line_with(lines, "s_endpgm")], frames({{kernel, 49}}));
  EXPECT_TRUE(located[line_with(lines, ".amdhsa_kernarg_size")].empty()) << "the kernel descriptor is data";
  EXPECT_TRUE(located[line_with(lines, ".end_amdhsa_kernel")].empty());
  EXPECT_TRUE(located[line_with(lines, ".vgpr_count:")].empty()) << "the metadata block";
}

TEST(AmdgcnSourceMap, FileDirectivesWithMd5OneStringOrNoNumber) {
  const std::string text =
      "\t.file\t\"LLVMDialectModule\"\n"
      "\t.file\t0 \"/k\" \"a.py\" md5 0x0123456789abcdef0123456789abcdef\n"
      "\t.file\t3 \"/abs/b.py\"\n"
      "\t.file\t4 \"/elsewhere\" \"/abs/c.py\"\n"
      "\t.loc\t0 7 1\n"
      "\tv_add_f32_e32 v1, v2, v3\n"
      "\t.loc\t3 9 2\n"
      "\ts_nop 0\n"
      "\t.loc\t4 11 2\n"
      "\ts_nop 1\n"
      "\t.loc\t9 5 5\n"
      "\ts_endpgm\n";
  const std::vector<SourceFrames> located = line_locations(Stage::amdgcn, text);
  ASSERT_EQ(located.size(), 12u);
  EXPECT_EQ(located[5], frames({{"/k/a.py", 7}})) << "file 0 (DWARF 5) with an md5";
  EXPECT_EQ(located[7], frames({{"/abs/b.py", 9}}));
  EXPECT_EQ(located[9], frames({{"/abs/c.py", 11}})) << "an absolute name ignores the directory";
  EXPECT_TRUE(located[11].empty()) << "an unknown file number";
}

TEST(AmdgcnSourceMap, InterleavesTheKernelsLinesAsAssemblyComments) {
  TempDir dir;
  std::string source;
  for (int line = 1; line <= 50; ++line) source += "    source line " + std::to_string(line) + "\n";
  write_file(dir.path() / "softmax_kernels.py", source);
  SourceFiles files;
  const std::string shown = interleave_source(Stage::amdgcn, excerpt_in(dir.path()), files);
  EXPECT_NE(shown.find("; %bb.13:\n"
                       "\t.file\t1 \"" + dir.path().string() + "\" \"softmax_kernels.py\"\n"
                       "\t; softmax_kernels.py:30  source line 30\n"
                       "\t.loc\t1 30 0 prologue_end"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("\t; softmax_kernels.py:45  source line 45  [standard.py:191]\n"
                       "\t.loc\t2 191 40"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("\t; softmax_kernels.py:45  source line 45  [standard.py:170]\n"
                       "\t.loc\t2 170 27"),
            std::string::npos)
      << "a new innermost frame is shown again: " << shown;
  EXPECT_EQ(shown.find("// "), std::string::npos) << "AMDGCN comments start with ';': " << shown;
}

TEST(AmdgcnOpCounts, InstructionsByMnemonicNotDirectivesLabelsOrMetadata) {
  const OpCounts counts = count_ops(Stage::amdgcn, read_data("softmax_gfx942.amdgcn"));
  EXPECT_EQ(counts.at("v_max_f32_e32"), 3u);
  EXPECT_EQ(counts.at("s_load_dwordx2"), 2u);
  EXPECT_EQ(counts.at("v_mov_b32_dpp"), 1u);
  EXPECT_EQ(counts.at("buffer_store_dword"), 1u);
  EXPECT_EQ(counts.at("s_endpgm"), 1u);
  EXPECT_EQ(counts.at("s_waitcnt"), 3u);
  for (const auto& [op, count] : counts) {
    EXPECT_TRUE(op.starts_with("s_") || op.starts_with("v_") || op.starts_with("buffer_")) << op;
    EXPECT_EQ(op.find_first_of(".:; "), std::string::npos) << op;
  }
}

TEST(AmdgcnTextDiff, WithoutLocationsDropsLocDirectivesTmpLabelsAndDebugSections) {
  const std::string text = read_data("softmax_gfx942.amdgcn");
  const std::string kept = without_locations(Stage::amdgcn, text);
  for (const char* gone : {".loc\t", ".file\t", ".Ltmp", "DW_TAG_compile_unit", ".Linfo_string", "softmax_kernels.py"})
    EXPECT_EQ(kept.find(gone), std::string::npos) << gone << " is left in:\n" << kept;
  for (const char* stays : {"v_max_f32_e32 v5, v3, v3\n", "s_endpgm\n", ".end_amdhsa_kernel\n", ".vgpr_count:     8\n",
                            ".section\t.rodata", "; %bb.13:\n"})
    EXPECT_NE(kept.find(stays), std::string::npos) << stays << " is gone from:\n" << kept;

  // The same code from another folder and with other lines is the same text.
  std::string moved = text;
  for (std::size_t at = moved.find(kRecordedFolder); at != std::string::npos; at = moved.find(kRecordedFolder, at))
    moved.replace(at, std::string_view(kRecordedFolder).size(), "/elsewhere/kernels");
  for (std::size_t at = moved.find(".loc\t1 4"); at != std::string::npos; at = moved.find(".loc\t1 4", at + 1))
    moved.replace(at, 8, ".loc\t1 5");
  EXPECT_EQ(without_locations(Stage::amdgcn, moved), kept);
  EXPECT_TRUE(unified_diff(kept, without_locations(Stage::amdgcn, moved), "a", "b").empty());
}

// An image of a library as the inventory makes it: `target` and its kept stage files.
ImageView library_image(std::string target, std::map<Stage, std::filesystem::path> stages) {
  ImageView image;
  image.kernel = "softmax";
  image.function = "softmax_kernel";
  image.variant = "softmax_BS128";
  image.target = std::move(target);
  image.manifest_image = codegen::Image{};
  image.stages = std::move(stages);
  return image;
}

TEST(AmdStages, AnotherVendorsStageIsAnErrorNamingTheVendorAndTheImagesStages) {
  TempDir dir;
  write_file(dir.path() / "k.ttir", "module {\n}\n");
  write_file(dir.path() / "k.amdgcn", "\ts_endpgm\n");
  write_file(dir.path() / "k.ptx", "\tret;\n");
  const ImageView amd =
      library_image("gfx942", {{Stage::ttir, dir.path() / "k.ttir"}, {Stage::amdgcn, dir.path() / "k.amdgcn"}});
  const ImageView nvidia =
      library_image("sm_90", {{Stage::ttir, dir.path() / "k.ttir"}, {Stage::ptx, dir.path() / "k.ptx"}});
  ASSERT_TRUE(amd.amd());
  ASSERT_FALSE(nvidia.amd());

  Expected<std::string> amdgcn = stage_text(amd, Stage::amdgcn);
  ASSERT_TRUE(amdgcn.ok()) << amdgcn.status().message();
  EXPECT_EQ(*amdgcn, "\ts_endpgm\n");

  auto message = [](const ImageView& image, Stage stage) {
    Expected<std::string> text = stage_text(image, stage);
    EXPECT_FALSE(text.ok()) << stage_name(stage);
    return text.ok() ? std::string() : text.status().message();
  };
  EXPECT_EQ(message(amd, Stage::ptx),
            "softmax softmax_BS128 gfx942 is an AMD image: ptx is NVIDIA assembly (it has ttir and amdgcn)");
  EXPECT_EQ(message(amd, Stage::sass),
            "softmax softmax_BS128 gfx942 is an AMD image: sass is NVIDIA machine code (it has ttir and amdgcn)");
  EXPECT_EQ(message(nvidia, Stage::amdgcn),
            "softmax softmax_BS128 sm_90 is an NVIDIA image: amdgcn is AMD assembly (it has ttir, ptx and sass)");
  EXPECT_EQ(message(amd, Stage::llir), "softmax softmax_BS128 gfx942 has no llir kept (it has ttir and amdgcn)");

  const ImageView none = library_image("gfx942", {});
  EXPECT_EQ(message(none, Stage::ptx),
            "softmax softmax_BS128 gfx942 is an AMD image: ptx is NVIDIA assembly (it has no stage kept; an AMD image "
            "can have ttir, ttgir, llir, amdgcn)");
  EXPECT_NE(message(none, Stage::amdgcn).find("no IR was kept: built with --ir none)"), std::string::npos);
  ImageView bare = none;
  bare.variant.clear();
  bare.manifest_image.reset();
  bare.cubin = "k.hsaco";
  EXPECT_NE(message(bare, Stage::amdgcn).find("a bare code object keeps no IR"), std::string::npos)
      << message(bare, Stage::amdgcn);
}

codegen::AmdgpuKernel amdgpu_kernel(std::uint32_t vgprs, std::uint32_t vgpr_spills, std::uint32_t scratch) {
  codegen::AmdgpuKernel kernel;
  kernel.name = "softmax_kernel";
  kernel.symbol = "softmax_kernel.kd";
  kernel.vgprs = vgprs;
  kernel.sgprs = 26;
  kernel.agprs = 0;
  kernel.vgpr_spills = vgpr_spills;
  kernel.sgpr_spills = 0;
  kernel.scratch = scratch;
  kernel.wavefront_size = 64;
  return kernel;
}

TEST(AmdStages, DiffComparesTheCodeObjectsMetadataAndTheAmdgcn) {
  TempDir dir;
  const std::string text = read_data("softmax_gfx942.amdgcn");
  std::string changed = text;
  changed.replace(changed.find("v_max_f32_e32 v5, v3, v3"), 24, "v_min_f32_e32 v5, v3, v3");
  write_file(dir.path() / "a.amdgcn", text);
  write_file(dir.path() / "b.amdgcn", changed);
  ImageView a = library_image("gfx942", {{Stage::amdgcn, dir.path() / "a.amdgcn"}});
  ImageView b = library_image("gfx942", {{Stage::amdgcn, dir.path() / "b.amdgcn"}});
  b.variant = "softmax_BS256";
  a.amdgpu = amdgpu_kernel(8, 0, 0);
  b.amdgpu = amdgpu_kernel(64, 12, 48);

  std::vector<std::string> rows;
  for (const NamedValue& fact : resource_facts(a)) rows.push_back(fact.name);
  EXPECT_EQ(rows, (std::vector<std::string>{"vgprs", "sgprs", "agprs", "vgpr_spills", "sgpr_spills", "lds_fixed",
                                            "scratch", "dynamic_stack", "wavefront_size"}));
  a.amdgpu.reset();
  for (const NamedValue& fact : resource_facts(a))
    EXPECT_EQ(fact.value, "-") << fact.name << ": the code object was not read";
  a.amdgpu = amdgpu_kernel(8, 0, 0);

  Expected<ComparisonReport> report = diff_images(a, b, {.stage = Stage::amdgcn});
  ASSERT_TRUE(report.ok()) << report.status().message();
  const std::string shown = comparison_text(*report);
  EXPECT_NE(shown.find("resources (a -> b):\n"
                       "  vgprs        8 -> 64\n"
                       "  vgpr_spills  0 -> 12\n"
                       "  scratch      0 -> 48\n"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("op counts (amdgcn, * where they differ: 2 of "), std::string::npos) << shown;
  EXPECT_NE(shown.find("-\tv_max_f32_e32 v5, v3, v3\n+\tv_min_f32_e32 v5, v3, v3\n"), std::string::npos) << shown;
  EXPECT_EQ(shown.find(".loc"), std::string::npos) << "locations are dropped before the diff: " << shown;

  Expected<ComparisonReport> ptx = diff_images(a, b, {.stage = Stage::ptx});
  ASSERT_FALSE(ptx.ok());
  EXPECT_NE(ptx.status().message().find("is an AMD image: ptx is NVIDIA assembly"), std::string::npos)
      << ptx.status().message();

  Expected<ComparisonReport> files = diff_files(dir.path() / "a.amdgcn", dir.path() / "b.amdgcn", {});
  ASSERT_TRUE(files.ok()) << files.status().message();
  EXPECT_EQ(files->stage, Stage::amdgcn);
  EXPECT_NE(files->unified_diff.find("+\tv_min_f32_e32 v5, v3, v3\n"), std::string::npos) << files->unified_diff;
}

}  // namespace
}  // namespace taot::workbench
