// The line diff: unified output as diff -u prints it, shortest edit scripts (checked against the
// LCS by dynamic programming on random inputs), and dropping locations before a diff.
#include <gtest/gtest.h>

#include <random>

#include "taot/workbench/source_map.h"
#include "taot/workbench/text_diff.h"

namespace taot::workbench {
namespace {

TEST(TextDiff, UnifiedDiffAsDiffUPrintsIt) {
  const std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n";
  const std::string b = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\n13\n15\n16\n";
  EXPECT_EQ(unified_diff(a, b, "a.ttgir", "b.ttgir"),
            "--- a.ttgir\n+++ b.ttgir\n"
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
            "@@ -11,5 +11,5 @@\n 11\n 12\n 13\n-14\n 15\n+16\n");
}

TEST(TextDiff, NearbyChangesShareAHunkAndEmptySidesWork) {
  EXPECT_EQ(unified_diff("a\nb\nc\nd\n", "a\nB\nc\nD\n", "x", "y", 1), "--- x\n+++ y\n@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n-d\n+D\n");
  EXPECT_EQ(unified_diff("", "new\n", "x", "y"), "--- x\n+++ y\n@@ -0,0 +1 @@\n+new\n");
  EXPECT_EQ(unified_diff("old\n", "", "x", "y"), "--- x\n+++ y\n@@ -1 +0,0 @@\n-old\n");
  EXPECT_EQ(unified_diff("same\n", "same\n", "x", "y"), "");
}

// The length of the longest common subsequence, by dynamic programming.
std::size_t lcs_length(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b) {
  std::vector<std::vector<std::size_t>> table(a.size() + 1, std::vector<std::size_t>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;)
    for (std::size_t j = b.size(); j-- > 0;)
      table[i][j] = a[i] == b[j] ? table[i + 1][j + 1] + 1 : std::max(table[i + 1][j], table[i][j + 1]);
  return table[0][0];
}

TEST(TextDiff, EditScriptsAreValidAndShortestOnRandomInputs) {
  std::mt19937 random(20261123);
  const std::vector<std::string> alphabet = {"a", "b", "c", "d", "e"};
  for (int round = 0; round < 400; ++round) {
    std::uniform_int_distribution<int> length(0, round < 200 ? 12 : 60);
    std::uniform_int_distribution<std::size_t> letter(0, round % 2 ? 1 : alphabet.size() - 1);
    std::vector<std::string_view> a, b;
    for (int i = length(random); i > 0; --i) a.push_back(alphabet[letter(random)]);
    for (int i = length(random); i > 0; --i) b.push_back(alphabet[letter(random)]);
    const std::vector<Edit> edits = diff_lines(a, b);
    std::vector<std::string_view> rebuilt;
    std::size_t kept = 0, x = 0, y = 0;
    for (const Edit& edit : edits) {
      switch (edit.kind) {
        case EditKind::keep:
          ASSERT_EQ(edit.a_index, x);
          ASSERT_EQ(edit.b_index, y);
          ASSERT_EQ(a[x], b[y]);
          rebuilt.push_back(a[x]);
          ++kept, ++x, ++y;
          break;
        case EditKind::remove:
          ASSERT_EQ(edit.a_index, x);
          ++x;
          break;
        case EditKind::insert:
          ASSERT_EQ(edit.b_index, y);
          rebuilt.push_back(b[y]);
          ++y;
          break;
      }
    }
    ASSERT_EQ(x, a.size());
    ASSERT_EQ(rebuilt, b) << "round " << round;
    ASSERT_EQ(kept, lcs_length(a, b)) << "round " << round << ": not a shortest edit script";
  }
}

TEST(TextDiff, LargeInputsStayFast) {
  std::vector<std::string> storage;
  for (int i = 0; i < 20000; ++i) storage.push_back("line " + std::to_string(i % 997) + " " + std::to_string(i / 3));
  std::vector<std::string_view> a(storage.begin(), storage.end());
  std::vector<std::string_view> b = a;
  for (std::size_t i = 0; i < b.size(); i += 37) b[i] = "changed";
  std::reverse(b.begin() + 5000, b.begin() + 5200);
  const std::vector<Edit> edits = diff_lines(a, b);
  std::size_t changes = 0;
  for (const Edit& edit : edits) changes += edit.kind != EditKind::keep;
  EXPECT_GT(changes, 1000u);
  EXPECT_LT(changes, 3000u);
}

TEST(TextDiff, WithoutLocationsDropsWhatDiffersBetweenBuildsOnly) {
  EXPECT_EQ(without_locations(Stage::ttgir,
                              "#loc = loc(\"k.py\":7:0)\n"
                              "  tt.func public @k(%x: !tt.ptr<f32> loc(\"x\"(#loc))) {\n"
                              "    %c = arith.constant 1 : i32 loc(#loc1)\n"
                              "    %s = tt.splat %c : i32 -> tensor<4xi32> loc(callsite(#loc2 at #loc3))\n"
                              "#loc1 = loc(unknown)\n"),
            "  tt.func public @k(%x: !tt.ptr<f32>) {\n"
            "    %c = arith.constant 1 : i32\n"
            "    %s = tt.splat %c : i32 -> tensor<4xi32>\n");
  EXPECT_EQ(without_locations(Stage::llir,
                              "define void @k() !dbg !4 {\n  %8 = shl i32 %7, 10, !dbg !8\n}\n"
                              "!8 = !DILocation(line: 10, column: 24, scope: !4)\n!3 = !{i32 4, !\"nvvm-reflect-ftz\", i32 1}\n"),
            "define void @k() {\n  %8 = shl i32 %7, 10\n}\n!3 = !{i32 4, !\"nvvm-reflect-ftz\", i32 1}\n");
  EXPECT_EQ(without_locations(Stage::ptx,
                              "{\n\t.loc\t1 9 28   // k.py:9:28\n\tmov.u32 \t%r25, %ctaid.x;\n}\n"
                              "\t.file\t1 \"/k.py\"\n\t.section\t.debug_abbrev\n\t{\n.b8 1\n\t}\n"),
            "{\n\tmov.u32 \t%r25, %ctaid.x;\n}\n");
  EXPECT_EQ(without_locations(Stage::sass,
                              "\t//## File \"/k.py\", line 7\n        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"),
            "        LDC R1, c[0x0][0x28] ;\n");
}

}  // namespace
}  // namespace taot::workbench
