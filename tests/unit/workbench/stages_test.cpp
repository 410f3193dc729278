// Stage names and reading stage files, plain and gzip-compressed.
#include <gtest/gtest.h>
#include <zlib.h>

#include "manifest_builder.h"
#include "taot/workbench/stages.h"

namespace taot::workbench {
namespace {

using codegen::testing::TempDir;
using codegen::testing::write_file;

std::string gzip(const std::string& text) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, text.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

TEST(Stages, NamesAndFileNames) {
  EXPECT_EQ(stage_from_name("ttgir"), Stage::ttgir);
  EXPECT_EQ(stage_from_name("llvm"), std::nullopt);
  EXPECT_EQ(stage_names(), "ttir, ttgir, llir, ptx, sass, amdgcn");
  EXPECT_EQ(stage_from_name("amdgcn"), Stage::amdgcn);
  EXPECT_EQ(stage_name(Stage::amdgcn), "amdgcn");
  EXPECT_EQ(stage_of_file("lib/artifacts/v/gfx942/k.amdgcn.gz"), Stage::amdgcn);
  EXPECT_EQ(stage_of_file("k.amdgcn"), Stage::amdgcn);
  EXPECT_EQ(stage_of_file("k.hsaco"), std::nullopt) << "a code object is no stage's text";
  EXPECT_EQ(stage_of_file("a/k.ttgir.gz"), Stage::ttgir);
  EXPECT_EQ(stage_of_file("k.ptx"), Stage::ptx);
  EXPECT_EQ(stage_of_file("k.ll"), Stage::llir);
  EXPECT_EQ(stage_of_file("k.cubin"), Stage::sass);
  EXPECT_EQ(stage_of_file("k.json"), std::nullopt);
  EXPECT_EQ(stage_of_file("README"), std::nullopt);
}

TEST(Stages, EachVendorHasTheIrStagesAndItsOwnAssembly) {
  EXPECT_EQ(stage_names(table::Vendor::nvidia), "ttir, ttgir, llir, ptx, sass");
  EXPECT_EQ(stage_names(table::Vendor::amd), "ttir, ttgir, llir, amdgcn");
  for (Stage stage : {Stage::ttir, Stage::ttgir, Stage::llir}) {
    EXPECT_TRUE(stage_of_vendor(stage, table::Vendor::nvidia)) << stage_name(stage);
    EXPECT_TRUE(stage_of_vendor(stage, table::Vendor::amd)) << stage_name(stage);
  }
  EXPECT_FALSE(stage_of_vendor(Stage::ptx, table::Vendor::amd));
  EXPECT_FALSE(stage_of_vendor(Stage::sass, table::Vendor::amd));
  EXPECT_FALSE(stage_of_vendor(Stage::amdgcn, table::Vendor::nvidia));
  EXPECT_EQ(stage_name_list().size(), all_stages().size());
  EXPECT_EQ(vendor_title(table::Vendor::amd), "AMD");
}

TEST(Stages, ReadsPlainAndGzipFilesAndNamesFailures) {
  TempDir dir;
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "    %x" + std::to_string(i) + " = arith.addi %a, %b : i32\n";
  write_file(dir.path() / "k.ttgir", "plain\n");
  write_file(dir.path() / "k.ptx.gz", gzip(big));
  write_file(dir.path() / "two.ttir.gz", gzip("first\n") + gzip("second\n"));
  write_file(dir.path() / "bad.ttir.gz", "not gzip");
  write_file(dir.path() / "old.ttir.xz", "xz");
  EXPECT_EQ(*read_text_file(dir.path() / "k.ttgir"), "plain\n");
  EXPECT_EQ(*read_text_file(dir.path() / "k.ptx.gz"), big);
  EXPECT_EQ(*read_text_file(dir.path() / "two.ttir.gz"), "first\nsecond\n");
  Expected<std::string> bad = read_text_file(dir.path() / "bad.ttir.gz");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.ttir.gz: not gzip data"), std::string::npos) << bad.status().message();
  Expected<std::string> missing = read_text_file(dir.path() / "none.ttir");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none.ttir"), std::string::npos);
  Expected<std::string> xz = read_text_file(dir.path() / "old.ttir.xz");
  ASSERT_FALSE(xz.ok());
  EXPECT_NE(xz.status().message().find("xz-compressed"), std::string::npos);
}

}  // namespace
}  // namespace taot::workbench
