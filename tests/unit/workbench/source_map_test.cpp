// Source locations of each stage, the frame shown for inlined code, and interleaving.
#include <gtest/gtest.h>

#include "manifest_builder.h"
#include "taot/workbench/source_map.h"

namespace taot::workbench {
namespace {

using codegen::testing::TempDir;
using codegen::testing::write_file;

constexpr const char* kStandard = "/usr/lib/python3/site-packages/triton/language/standard.py";

SourceFrames frames(std::initializer_list<std::pair<const char*, std::uint32_t>> list) {
  SourceFrames result;
  for (const auto& [file, line] : list) result.push_back({file, line});
  return result;
}

TEST(SourceMap, MlirAliasesNamesCallSitesAndFused) {
  const std::string ttgir =
      "#loc = loc(\"/k/kernel.py\":7:0)\n"
      "module {\n"
      "  tt.func public @k(%x: !tt.ptr<f32> loc(\"x\"(#loc))) {\n"
      "    %c = arith.constant 1 : i32 loc(#loc1)\n"
      "    %p = tt.get_program_id x : i32 loc(#loc5)\n"
      "    %m = arith.maxnumf %a, %b : f32 loc(#loc8)\n"
      "    %s = arith.addi %p, %c : i32 loc(fused[#loc1, \"/k/kernel.py\":12:3])\n"
      "    %q = arith.addi %p, %c : i32 loc(\"/k/kernel.py\":13:1)\n"
      "    tt.return loc(#loc)\n"
      "  } loc(#loc)\n"
      "} loc(#loc)\n"
      "#loc1 = loc(unknown)\n"
      "#loc2 = loc(\"/k/kernel.py\":9:28)\n"
      "#loc5 = loc(\"program\"(#loc2))\n"
      "#loc6 = loc(\"" + std::string(kStandard) + "\":170:27)\n"
      "#loc7 = loc(\"/k/kernel.py\":17:39)\n"
      "#loc8 = loc(callsite(#loc6 at #loc7))\n";
  const std::vector<SourceFrames> located = line_locations(Stage::ttgir, ttgir);
  ASSERT_EQ(located.size(), 17u);
  EXPECT_TRUE(located[0].empty()) << "alias definitions are no ops";
  EXPECT_TRUE(located[2].empty()) << "the function's header ends with '{'";
  EXPECT_TRUE(located[3].empty()) << "unknown";
  EXPECT_EQ(located[4], frames({{"/k/kernel.py", 9}}));
  EXPECT_EQ(located[5], frames({{kStandard, 170}, {"/k/kernel.py", 17}}));
  EXPECT_EQ(located[6], frames({{"/k/kernel.py", 12}})) << "fused: the first known part";
  EXPECT_EQ(located[7], frames({{"/k/kernel.py", 13}}));
  EXPECT_EQ(located[8], frames({{"/k/kernel.py", 7}}));
  ASSERT_NE(shown_frame(located[5]), nullptr);
  EXPECT_EQ(shown_frame(located[5])->line, 17u) << "Triton's language library is skipped for the kernel's line";
  EXPECT_EQ(shown_frame(frames({{kStandard, 170}}))->line, 170u) << "else the innermost";
  EXPECT_EQ(shown_frame({}), nullptr);
}

TEST(SourceMap, LlvmDebugLocationsThroughScopesAndInlining) {
  const std::string llir =
      "define void @k(ptr %0) !dbg !4 {\n"
      "  %2 = fadd float %a, %b, !dbg !7\n"
      "  %3 = fmul float %a, %b, !dbg !9\n"
      "  ret void\n"
      "}\n"
      "!1 = !DIFile(filename: \"kernel.py\", directory: \"/k\")\n"
      "!2 = !DIFile(filename: \"" + std::string(kStandard) + "\", directory: \"\")\n"
      "!4 = distinct !DISubprogram(name: \"k\", scope: !1, file: !1, line: 7, scopeLine: 7, unit: !0)\n"
      "!5 = distinct !DISubprogram(name: \"max\", scope: !2, file: !2, line: 160, scopeLine: 160, unit: !0)\n"
      "!6 = distinct !DILexicalBlockFile(scope: !5, file: !2, discriminator: 0)\n"
      "!7 = !DILocation(line: 12, column: 16, scope: !4)\n"
      "!8 = !DILocation(line: 17, column: 39, scope: !4)\n"
      "!9 = !DILocation(line: 170, column: 27, scope: !6, inlinedAt: !8)\n";
  const std::vector<SourceFrames> located = line_locations(Stage::llir, llir);
  EXPECT_EQ(located[0], frames({{"/k/kernel.py", 7}})) << "the define line: its subprogram (not scopeLine)";
  EXPECT_EQ(located[1], frames({{"/k/kernel.py", 12}}));
  EXPECT_EQ(located[2], frames({{kStandard, 170}, {"/k/kernel.py", 17}}));
  EXPECT_TRUE(located[3].empty());
  EXPECT_TRUE(located[11].empty()) << "metadata lines have no location";
}

TEST(SourceMap, PtxLocWithFilesAndTheInliningComment) {
  const std::string ptx =
      ".visible .entry k(\n"
      ")\n"
      "{\n"
      "\t.loc\t1 9 28                          // kernel.py:9:28\n"
      "\tmov.u32 \t%r25, %ctaid.x;\n"
      "\n"
      "\t.loc\t2 170 27                        // standard.py:170:27 @[ kernel.py:17:39 ]\n"
      "\tmax.f32 \t%r1, %r2, %r3;\n"
      "\tret;\n"
      "}\n"
      "\t.file\t1 \"/k/kernel.py\"\n"
      "\t.file\t2 \"" + std::string(kStandard) + "\"\n";
  const std::vector<SourceFrames> located = line_locations(Stage::ptx, ptx);
  EXPECT_TRUE(located[2].empty());
  EXPECT_EQ(located[3], frames({{"/k/kernel.py", 9}}));
  EXPECT_EQ(located[4], frames({{"/k/kernel.py", 9}}));
  EXPECT_TRUE(located[5].empty()) << "blank lines have none";
  EXPECT_EQ(located[7], frames({{kStandard, 170}, {"/k/kernel.py", 17}}));
  EXPECT_EQ(located[8], frames({{kStandard, 170}, {"/k/kernel.py", 17}}));
  EXPECT_TRUE(located[10].empty());
}

TEST(SourceMap, SassMarkersAndTheirInlining) {
  const std::string sass =
      ".text.k:\n"
      "\t//## File \"/k/kernel.py\", line 7\n"
      "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
      "\t//## File \"/t/standard.py\", line 170 inlined at \"/k/kernel.py\", line 17\n"
      "        /*0010*/                   FMNMX R2, R5, R4, !PT ;\n"
      "\t//## no source line\n"
      "        /*0020*/                   EXIT ;\n";
  const std::vector<SourceFrames> located = line_locations(Stage::sass, sass);
  EXPECT_TRUE(located[1].empty()) << "the markers themselves";
  EXPECT_EQ(located[2], frames({{"/k/kernel.py", 7}}));
  EXPECT_EQ(located[4], frames({{"/t/standard.py", 170}, {"/k/kernel.py", 17}}));
  EXPECT_TRUE(located[6].empty());
  EXPECT_EQ(sass_marker(frames({{"/t/standard.py", 170}, {"/k/kernel.py", 17}})),
            "//## File \"/t/standard.py\", line 170 inlined at \"/k/kernel.py\", line 17");
}

TEST(SourceMap, SassPtxLinesBecomeSourceFrames) {
  const std::string ptx =
      "{\n"
      "\t.loc\t1 9 28 // kernel.py:9:28\n"
      "\tmov.u32 \t%r25, %ctaid.x;\n"
      "}\n"
      "\t.file\t1 \"/k/kernel.py\"\n";
  const std::string sass =
      "\t//## File \".nv_debug_ptx_txt\", line 3\n"
      "        /*0000*/  S2R R5, SR_CTAID.X ;\n"
      "\t//## File \".nv_debug_ptx_txt\", line 1\n"
      "        /*0010*/  EXIT ;\n";
  EXPECT_EQ(sass_with_ptx_locations(sass, ptx),
            "\t//## File \"/k/kernel.py\", line 9\n"
            "        /*0000*/  S2R R5, SR_CTAID.X ;\n"
            "\t//## no source line\n"
            "        /*0010*/  EXIT ;\n");
}

TEST(SourceMap, InterleavesSourceLinesOncePerChange) {
  TempDir dir;
  write_file(dir.path() / "kernel.py", "import triton\n\n\ndef k(x):\n    y = x + 1\n    return y * 2\n");
  const std::string file = (dir.path() / "kernel.py").string();
  const std::string ptx =
      "{\n"
      "\t.loc\t1 5 8\n"
      "\tadd.s32 \t%r1, %r2, 1;\n"
      "\tadd.s32 \t%r3, %r2, 1;\n"
      "\t.loc\t1 6 4\n"
      "\tshl.b32 \t%r4, %r1, 1;\n"
      "}\n"
      "\t.file\t1 \"" + file + "\"\n";
  SourceFiles files;
  EXPECT_EQ(interleave_source(Stage::ptx, ptx, files),
            "{\n"
            "\t// kernel.py:5  y = x + 1\n"
            "\t.loc\t1 5 8\n"
            "\tadd.s32 \t%r1, %r2, 1;\n"
            "\tadd.s32 \t%r3, %r2, 1;\n"
            "\t// kernel.py:6  return y * 2\n"
            "\t.loc\t1 6 4\n"
            "\tshl.b32 \t%r4, %r1, 1;\n"
            "}\n"
            "\t.file\t1 \"" + file + "\"\n");
}

TEST(SourceMap, SassInterleavingDropsMarkersAndNotesTheInnermostFrame) {
  TempDir dir;
  write_file(dir.path() / "kernel.py", "a\nb\nc = tl.max(x)\n");
  const std::string file = (dir.path() / "kernel.py").string();
  const std::string sass = "\t//## File \"" + std::string(kStandard) + "\", line 170 inlined at \"" + file +
                           "\", line 3\n        /*0000*/ FMNMX R2, R5, R4, !PT ;\n";
  SourceFiles files;
  EXPECT_EQ(interleave_source(Stage::sass, sass, files),
            "        // kernel.py:3  c = tl.max(x)  [standard.py:170]\n        /*0000*/ FMNMX R2, R5, R4, !PT ;\n");
}

TEST(SourceMap, FindsAMovedSourceByNameAndDecodesPercentEscapes) {
  TempDir dir;
  write_file(dir.path() / "my kernel%.py", "first\nsecond\n");
  SourceFiles files({dir.path() / "my kernel%.py"});
  // taot build records unusual characters percent-encoded; the file moved since.
  EXPECT_EQ(files.line_text("/elsewhere/my kernel%25.py", 2), "second");
  EXPECT_EQ(files.line_text("/elsewhere/my kernel%25.py", 3), std::nullopt);
  EXPECT_EQ(files.line_text("/nowhere/other.py", 1), std::nullopt);
}

}  // namespace
}  // namespace taot::workbench
