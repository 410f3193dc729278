// The cubin reader: .nv.info attributes (a kernel's parameters among them), section sizes, the
// architecture, and damaged input.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fake_cubin.h"
#include "taot/codegen/cubin.h"

namespace taot::codegen {
namespace {

using testing::fake_cubin;
using testing::FakeFunction;

TEST(Cubin, ReadsEachFunctionsAttributesAndSections) {
  FakeFunction kernel{.name = "softmax_kernel", .registers = 32, .frame_size = 752, .min_stack_size = 752,
                      .max_registers = 32, .static_shared = 1024, .constant0 = 568, .param_sizes = {8, 4, 1, 8, 8}};
  FakeFunction helper{.name = "helper", .entry = false, .registers = 8, .frame_size = 16, .min_stack_size = 16,
                      .max_stack_size = 48, .local = 64};
  Expected<CubinInfo> info = read_cubin(fake_cubin({kernel, helper}, 7, 0x5a0d5a, 16), "k.cubin");
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->arch, 90u);
  EXPECT_TRUE(info->arch_specific);
  EXPECT_EQ(info->target(), "sm_90a");
  EXPECT_EQ(info->reserved_shared, 16u);
  ASSERT_EQ(info->functions.size(), 2u);
  const FunctionResources* read = info->find("softmax_kernel");
  ASSERT_NE(read, nullptr);
  EXPECT_TRUE(read->entry);
  EXPECT_EQ(read->registers, 32u);
  EXPECT_EQ(read->frame_size, 752u);
  EXPECT_EQ(read->stack(), 752u);
  EXPECT_EQ(read->max_registers, 32u);
  EXPECT_EQ(read->static_shared, 1024u);
  EXPECT_EQ(read->constant0, 568u);
  EXPECT_EQ(read->local, 0u);
  EXPECT_EQ(read->params, (std::vector<KernelParam>{{0, 0, 8}, {1, 8, 4}, {2, 12, 1}, {3, 16, 8}, {4, 24, 8}}))
      << "by ordinal, though listed last first";
  const FunctionResources* device = info->find("helper");
  ASSERT_NE(device, nullptr);
  EXPECT_FALSE(device->entry);
  EXPECT_EQ(device->registers, 8u);
  EXPECT_EQ(device->stack(), 48u) << "the maximum stack size wins when recorded";
  EXPECT_EQ(device->local, 64u);
  EXPECT_FALSE(device->max_registers.has_value());
  EXPECT_TRUE(device->params.empty());
  EXPECT_EQ(info->find("absent"), nullptr);
}

TEST(Cubin, ReadsTheArchitectureOfBothHeaderLayouts) {
  const FakeFunction kernel{.name = "k", .registers = 16};
  Expected<CubinInfo> sm80 = read_cubin(fake_cubin({kernel}, 7, 0x500550), "a");
  ASSERT_TRUE(sm80.ok());
  EXPECT_EQ(sm80->target(), "sm_80");
  // ABI version 8: sm in bits 8-15; ptxas 12.8-12.9 keep the "a" in bit 3.
  Expected<CubinInfo> sm100 = read_cubin(fake_cubin({kernel}, 8, 0x900640a), "b");
  ASSERT_TRUE(sm100.ok());
  EXPECT_EQ(sm100->target(), "sm_100a");
  Expected<CubinInfo> sm120 = read_cubin(fake_cubin({kernel}, 8, 0x9007802), "c");
  ASSERT_TRUE(sm120.ok());
  EXPECT_EQ(sm120->target(), "sm_120");
  // ptxas 13's flags for sm_90 and sm_90a alike (bit 2 is set for sm_80 too): without .nv.compat's
  // CUDA_ACCELERATOR_TARGET, plain sm_90.
  Expected<CubinInfo> sm90 = read_cubin(fake_cubin({kernel}, 8, 0x9005a04), "d");
  ASSERT_TRUE(sm90.ok());
  EXPECT_EQ(sm90->target(), "sm_90");
}

// Real cubins of Triton 3.6 and 3.9 and of ptxas 12.9 and 13.0, with the target cuobjdump prints for
// each: the table python/taot/workbench/cubin.py is tested with too (tests/python/test_rebuild.py).
// Among them: Triton 3.9's sm_90a cubin (ELF ABI 8, e_flags 0x9005a04), whose "a" only .nv.compat
// holds, and ptxas 13.0's sm_90 and sm_90a cubins, whose e_flags are the same.
TEST(Cubin, ReadsTheTargetOfRealCubinsOfEachTritonAndPtxas) {
  const std::filesystem::path data = TAOT_TEST_DATA;
  std::ifstream table_file(data / "cubin_targets.json");
  ASSERT_TRUE(table_file) << "no " << (data / "cubin_targets.json");
  const nlohmann::json table = nlohmann::json::parse(table_file);
  ASSERT_GE(table.at("cubins").size(), 10u);
  for (const nlohmann::json& row : table.at("cubins")) {
    const std::string file = row.at("file");
    Expected<CubinInfo> info = read_cubin_file(data / file);
    ASSERT_TRUE(info.ok()) << info.status().message();
    EXPECT_EQ(info->target(), row.at("target").get<std::string>()) << file << ": " << row.at("made_by");
    EXPECT_FALSE(info->functions.empty()) << file;
  }
}

TEST(Cubin, RefusesWhatIsNoCubinNamingIt) {
  Expected<CubinInfo> text = read_cubin("not an elf at all, but long enough to have a header of sixty-four bytes", "x.cubin");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("x.cubin: not a valid cubin: no ELF header"), std::string::npos);

  std::string cubin = fake_cubin({FakeFunction{.name = "k"}});
  std::string truncated = cubin.substr(0, cubin.size() - 100);
  Expected<CubinInfo> cut = read_cubin(truncated, "cut.cubin");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("runs past the end"), std::string::npos) << cut.status().message();

  std::string other_machine = cubin;
  other_machine[18] = 62;  // EM_X86_64
  Expected<CubinInfo> x86 = read_cubin(other_machine, "x86.o");
  ASSERT_FALSE(x86.ok());
  EXPECT_NE(x86.status().message().find("not a CUDA ELF"), std::string::npos);
}

TEST(Cubin, AnAttributeRunningPastItsSectionIsAnError) {
  std::string cubin = fake_cubin({FakeFunction{.name = "k", .registers = 3}});
  // The first SVAL in .nv.info (after the 4-byte HVAL) claims 0xffff bytes.
  const std::size_t info = cubin.find(std::string("\x04\x37\x04\x00", 4));
  ASSERT_NE(info, std::string::npos);
  cubin[info + 2] = '\xff';
  cubin[info + 3] = '\xff';
  Expected<CubinInfo> read = read_cubin(cubin, "bad.cubin");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("runs past the end of .nv.info"), std::string::npos) << read.status().message();
}

TEST(Cubin, ASectionThatClaimsNoFileBytesIsNeverRead) {
  // Every section header made NOBITS with an offset far past the end (the name table and the
  // symbol table included): the reader must not touch their bytes, whatever it concludes.
  std::string cubin = fake_cubin({FakeFunction{.name = "k", .registers = 3}});
  std::uint64_t table = 0;
  std::uint16_t entry_size = 0, count = 0;
  std::memcpy(&table, cubin.data() + 40, 8);
  std::memcpy(&entry_size, cubin.data() + 58, 2);
  std::memcpy(&count, cubin.data() + 60, 2);
  for (std::uint16_t index = 0; index < count; ++index) {
    const std::size_t at = table + std::size_t{entry_size} * index;
    const std::uint32_t nobits = 8;
    const std::uint64_t far = std::uint64_t{1} << 40;
    std::memcpy(cubin.data() + at + 4, &nobits, 4);
    std::memcpy(cubin.data() + at + 24, &far, 8);
  }
  Expected<CubinInfo> read = read_cubin(cubin, "nobits.cubin");
  if (read.ok()) {
    EXPECT_TRUE(read->functions.empty());  // no symbol table left to name them
  }
}

}  // namespace
}  // namespace taot::codegen
