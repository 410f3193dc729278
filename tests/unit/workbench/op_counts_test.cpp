// Op counts per stage.
#include <gtest/gtest.h>

#include "taot/workbench/op_counts.h"

namespace taot::workbench {
namespace {

TEST(OpCounts, MlirOpsByDialectName) {
  const std::string ttgir =
      "#blocked = #ttg.blocked<{sizePerThread = [4]}>\n"
      "#loc = loc(\"k.py\":7:0)\n"
      "module attributes {\"ttg.num-warps\" = 4 : i32} {\n"
      "  tt.func public @k(%x: !tt.ptr<f32>) attributes {noinline = false} {\n"
      "    %c1024_i32 = arith.constant 1024 : i32 loc(#loc1)\n"
      "    %x_5 = tt.load %x_4, %in_bounds_3 : tensor<1024x!tt.ptr<f32>, #blocked> loc(#loc25)\n"
      "    %y = tt.load %x_4 : tensor<1024x!tt.ptr<f32>, #blocked> loc(#loc25)\n"
      "    %r:2 = scf.for %i = %c0 to %c1 step %c2 iter_args(%a = %b) -> (f32, f32) : i32 {\n"
      "      scf.yield %a, %a : f32, f32 loc(#loc3)\n"
      "    } loc(#loc4)\n"
      "    %numerator = \"tt.reduce\"(%x_2) <{axis = 0 : i32}> ({\n"
      "    ^bb0(%n8: f32, %n9: f32):\n"
      "      %m = arith.maxnumf %n8, %n9 : f32 loc(#loc36)\n"
      "      tt.reduce.return %m : f32 loc(#loc30)\n"
      "    }) : (tensor<8192xf32, #blocked>) -> f32 loc(#loc30)\n"
      "    tt.return loc(#loc14)\n"
      "  } loc(#loc)\n"
      "} loc(#loc)\n";
  const OpCounts counts = count_ops(Stage::ttgir, ttgir);
  const OpCounts expected = {{"arith.constant", 1}, {"arith.maxnumf", 1}, {"module", 1},     {"scf.for", 1},
                             {"scf.yield", 1},      {"tt.func", 1},       {"tt.load", 2},    {"tt.reduce", 1},
                             {"tt.reduce.return", 1}, {"tt.return", 1}};
  EXPECT_EQ(counts, expected);
}

TEST(OpCounts, LlvmInstructionsAndCallees) {
  const std::string llir =
      "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
      "define ptx_kernel void @k(ptr addrspace(1) %0) !dbg !4 {\n"
      "  %7 = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x(), !dbg !7\n"
      "  %8 = shl i32 %7, 10, !dbg !8\n"
      "  %20 = tail call { i32, i32 } asm sideeffect \"mov.u32 $0, 0x0;\", \"=r,=r\"(ptr %17) #2, !dbg !13\n"
      "  br label %9\n"
      "9:                                                ; preds = %6\n"
      "  store float %a, ptr %p, align 4\n"
      "  ret void, !dbg !19\n"
      "}\n"
      "!7 = !DILocation(line: 9, column: 28, scope: !4)\n";
  const OpCounts expected = {{"br", 1},        {"call @llvm.nvvm.read.ptx.sreg.ctaid.x", 1}, {"call asm", 1},
                             {"ret", 1},       {"shl", 1},
                             {"store", 1}};
  EXPECT_EQ(count_ops(Stage::llir, llir), expected);
}

TEST(OpCounts, PtxOpcodesWithoutPredicatesOrDirectives) {
  const std::string ptx =
      ".version 8.7\n"
      ".visible .entry k(\n"
      "\t.param .u64 .ptr .global .align 1 k_param_0\n"
      ")\n"
      "{\n"
      "\t.reg .pred \t%p<3>;\n"
      "\t.loc\t1 7 0                           // k.py:7:0\n"
      "$L__func_begin0:\n"
      "\tld.param.b64 \t%rd7, [k_param_0];\n"
      "\t// begin inline asm\n"
      "\t@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];\n"
      "\t@!%p2 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];\n"
      "\tmov.u32 %r5, 0x0;\n"
      "\tret;\n"
      "}\n"
      "\t.section\t.debug_abbrev\n"
      "\t{\n"
      ".b8 1\n"
      "\t}\n";
  const OpCounts expected = {{"ld.global.v4.b32", 2}, {"ld.param.b64", 1}, {"mov.u32", 1}, {"ret", 1}};
  EXPECT_EQ(count_ops(Stage::ptx, ptx), expected);
}

TEST(OpCounts, SassOpcodesWithModifiers) {
  const std::string sass =
      "\t.section\t.text.k,\"ax\",@progbits\n"
      "k:\n"
      "\t//## File \"/k.py\", line 7\n"
      "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
      "        /*0180*/              @!P0 LDG.E.128 R16, desc[UR4][R2.64] ;\n"
      "        /*0190*/              @P1 LDG.E.128 R12, desc[UR4][R20.64] ;\n"
      "        /*0260*/                   EXIT ;\n"
      ".L_x_0:\n"
      "        /*0270*/                   BRA `(.L_x_0);\n";
  const OpCounts expected = {{"BRA", 1}, {"EXIT", 1}, {"LDC", 1}, {"LDG.E.128", 2}};
  EXPECT_EQ(count_ops(Stage::sass, sass), expected);
}

TEST(OpCounts, SideBySideIsTheUnionByName) {
  const std::vector<OpCountRow> rows = side_by_side({{"a", 1}, {"c", 3}}, {{"b", 2}, {"c", 4}});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ((std::tuple(rows[0].op, rows[0].a, rows[0].b)), std::tuple(std::string("a"), 1u, 0u));
  EXPECT_EQ((std::tuple(rows[1].op, rows[1].a, rows[1].b)), std::tuple(std::string("b"), 0u, 2u));
  EXPECT_EQ((std::tuple(rows[2].op, rows[2].a, rows[2].b)), std::tuple(std::string("c"), 3u, 4u));
}

}  // namespace
}  // namespace taot::workbench
