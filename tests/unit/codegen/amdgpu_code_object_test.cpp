// The AMDGPU code object reader: the metadata note of real code objects Triton wrote, and damaged
// input (truncated, no note, a note that is no MessagePack or lacks a key, a cubin).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "taot/codegen/amdgpu_code_object.h"
#include "taot/codegen/cubin.h"

namespace taot::codegen {
namespace {

const std::filesystem::path kData = TAOT_TEST_DATA;

std::string read_data(const std::string& file) {
  std::ifstream in(kData / file, std::ios::binary);
  EXPECT_TRUE(in) << "no " << (kData / file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The values of the code objects' NT_AMDGPU_METADATA notes as pyelftools 0.33 and msgpack 1.2 read
// them (`python3 data/make_amdgpu_code_objects.py --facts`), not through the reader under test.
struct ExpectedFacts {
  const char* file;
  const char* target_id;
  AmdgpuKernel kernel;
};
const ExpectedFacts kExpected[] = {
    {"amdgpu_3.6.0_gfx942_spills.hsaco", "amdgcn-amd-amdhsa--gfx942",
     {.name = "dot_kernel", .symbol = "dot_kernel.kd", .vgprs = 64, .sgprs = 18, .agprs = 0, .vgpr_spills = 374,
      .sgpr_spills = 0, .lds = 0, .scratch = 816, .dynamic_stack = false, .wavefront_size = 64, .kernarg_size = 40,
      .max_flat_workgroup_size = 64}},
    {"amdgpu_3.6.0_gfx950_dot.hsaco", "amdgcn-amd-amdhsa--gfx950",
     {.name = "dot_kernel", .symbol = "dot_kernel.kd", .vgprs = 72, .sgprs = 18, .agprs = 16, .vgpr_spills = 0,
      .sgpr_spills = 0, .lds = 0, .scratch = 0, .dynamic_stack = false, .wavefront_size = 64, .kernarg_size = 40,
      .max_flat_workgroup_size = 256}},
    {"amdgpu_3.6.0_gfx950_lds.hsaco", "amdgcn-amd-amdhsa--gfx950",
     {.name = "dot_kernel", .symbol = "dot_kernel.kd", .vgprs = 72, .sgprs = 18, .agprs = 16, .vgpr_spills = 0,
      .sgpr_spills = 0, .lds = 8192, .scratch = 0, .dynamic_stack = false, .wavefront_size = 64, .kernarg_size = 40,
      .max_flat_workgroup_size = 256}},
};

// Where the metadata note's header starts in `bytes`: its name size (7), descriptor size, type (32)
// and "AMDGPU\0".
std::size_t note_header(const std::string& bytes) {
  const std::string owner("AMDGPU\0", 7);
  for (std::size_t at = bytes.find(owner); at != std::string::npos; at = bytes.find(owner, at + 1)) {
    std::uint32_t name_size = 0, type = 0;
    if (at < 12) continue;
    std::memcpy(&name_size, bytes.data() + at - 12, 4);
    std::memcpy(&type, bytes.data() + at - 4, 4);
    if (name_size == 7 && type == 32) return at - 12;
  }
  ADD_FAILURE() << "no NT_AMDGPU_METADATA note header";
  return 0;
}

TEST(AmdgpuCodeObject, ReadsTheMetadataNoteOfRealCodeObjects) {
  for (const ExpectedFacts& expected : kExpected) {
    Expected<AmdgpuCodeObject> object = read_amdgpu_code_object_file(kData / expected.file);
    ASSERT_TRUE(object.ok()) << object.status().message();
    EXPECT_EQ(object->target_id, expected.target_id) << expected.file;
    EXPECT_EQ(object->processor(), std::string(expected.target_id).substr(19)) << expected.file;
    ASSERT_EQ(object->kernels.size(), 1u) << expected.file;
    EXPECT_EQ(object->kernels[0], expected.kernel) << expected.file;
    const AmdgpuKernel* found = object->find("dot_kernel");
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->vgprs, expected.kernel.vgprs);
    EXPECT_EQ(object->find("dot_kernel.kd"), nullptr) << "found by .name, not by the descriptor's symbol";
  }
}

TEST(AmdgpuCodeObject, TellsCodeObjectsFromCubinsByTheirMachine) {
  const std::string hsaco = read_data("amdgpu_3.6.0_gfx950_dot.hsaco");
  const std::string cubin = read_data("arch_3.6.0_sm90.cubin");
  EXPECT_TRUE(is_amdgpu_code_object(hsaco));
  EXPECT_FALSE(is_amdgpu_code_object(cubin));
  EXPECT_FALSE(is_amdgpu_code_object("\x7f" "ELF"));

  Expected<AmdgpuCodeObject> from_cubin = read_amdgpu_code_object(cubin, "k.cubin");
  ASSERT_FALSE(from_cubin.ok());
  EXPECT_NE(from_cubin.status().message().find("k.cubin: not a valid AMDGPU code object: not an AMDGPU ELF"),
            std::string::npos)
      << from_cubin.status().message();
  Expected<CubinInfo> from_hsaco = read_cubin(hsaco, "k.hsaco");
  ASSERT_FALSE(from_hsaco.ok());
  EXPECT_NE(from_hsaco.status().message().find("k.hsaco: not a valid cubin: not a CUDA ELF"), std::string::npos)
      << from_hsaco.status().message();
}

TEST(AmdgpuCodeObject, EveryTruncationIsAnErrorNamingTheFile) {
  const std::string hsaco = read_data("amdgpu_3.6.0_gfx950_lds.hsaco");
  ASSERT_GT(hsaco.size(), 1000u);
  for (std::size_t size = 0; size < hsaco.size(); ++size) {
    Expected<AmdgpuCodeObject> cut = read_amdgpu_code_object(std::string_view(hsaco).substr(0, size), "cut.hsaco");
    ASSERT_FALSE(cut.ok()) << "read " << size << " of " << hsaco.size() << " bytes";
    ASSERT_EQ(cut.status().message().rfind("cut.hsaco: not a valid AMDGPU code object: ", 0), 0u)
        << cut.status().message();
  }
  Expected<AmdgpuCodeObject> empty = read_amdgpu_code_object("", "empty.hsaco");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "empty.hsaco: not a valid AMDGPU code object: no ELF header");
  Expected<AmdgpuCodeObject> absent = read_amdgpu_code_object_file(kData / "absent.hsaco");
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.status().message().find("cannot read"), std::string::npos);
  EXPECT_NE(absent.status().message().find("absent.hsaco"), std::string::npos);
}

TEST(AmdgpuCodeObject, NoMetadataNoteIsAnErrorNamingTheFile) {
  std::string hsaco = read_data("amdgpu_3.6.0_gfx942_spills.hsaco");
  const std::size_t note = note_header(hsaco);
  const std::uint32_t other_type = 31;
  std::memcpy(hsaco.data() + note + 8, &other_type, 4);
  Expected<AmdgpuCodeObject> object = read_amdgpu_code_object(hsaco, "nonote.hsaco");
  ASSERT_FALSE(object.ok());
  EXPECT_NE(object.status().message().find("nonote.hsaco: not a valid AMDGPU code object: no AMDGPU metadata note"),
            std::string::npos)
      << object.status().message();
}

TEST(AmdgpuCodeObject, ADamagedNoteIsAnErrorThatSaysHow) {
  const std::string hsaco = read_data("amdgpu_3.6.0_gfx942_spills.hsaco");
  const std::size_t note = note_header(hsaco);

  std::string too_long = hsaco;
  const std::uint32_t huge = 0xfffffff0u;
  std::memcpy(too_long.data() + note + 4, &huge, 4);
  Expected<AmdgpuCodeObject> past = read_amdgpu_code_object(too_long, "long.hsaco");
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("long.hsaco: not a valid AMDGPU code object: a note runs past the end of .note"),
            std::string::npos)
      << past.status().message();

  std::string not_msgpack = hsaco;
  not_msgpack[note + 20] = '\xc1';  // the descriptor's first byte: a type MessagePack never uses
  Expected<AmdgpuCodeObject> garbled = read_amdgpu_code_object(not_msgpack, "garbled.hsaco");
  ASSERT_FALSE(garbled.ok());
  EXPECT_NE(garbled.status().message().find("garbled.hsaco: not a valid AMDGPU code object: its metadata note is not "
                                            "MessagePack"),
            std::string::npos)
      << garbled.status().message();

  std::string cut_short = hsaco;  // the descriptor ends inside the MessagePack map
  std::uint32_t descriptor_size = 0;
  std::memcpy(&descriptor_size, cut_short.data() + note + 4, 4);
  descriptor_size /= 2;
  std::memcpy(cut_short.data() + note + 4, &descriptor_size, 4);
  Expected<AmdgpuCodeObject> half = read_amdgpu_code_object(cut_short, "half.hsaco");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("half.hsaco: not a valid AMDGPU code object: its metadata note is not "
                                         "MessagePack"),
            std::string::npos)
      << half.status().message();

  std::string no_vgprs = hsaco;
  const std::size_t key = no_vgprs.find(".vgpr_count", note);
  ASSERT_NE(key, std::string::npos);
  no_vgprs[key + 1] = 'w';  // ".wgpr_count": the kernel has no .vgpr_count
  Expected<AmdgpuCodeObject> lacking = read_amdgpu_code_object(no_vgprs, "lacking.hsaco");
  ASSERT_FALSE(lacking.ok());
  EXPECT_NE(lacking.status().message().find("lacking.hsaco: not a valid AMDGPU code object: kernel dot_kernel has no "
                                            ".vgpr_count"),
            std::string::npos)
      << lacking.status().message();
}

TEST(AmdgpuCodeObject, TheProcessorIsTheGfxComponentOfEitherTargetSpelling) {
  AmdgpuCodeObject object;
  object.target_id = "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-";  // Triton 3.6's LLVM
  EXPECT_EQ(object.processor(), "gfx942");
  object.target_id = "amdgpu9.42-amd-amdhsa-unknown-gfx942";  // Triton 3.9's
  EXPECT_EQ(object.processor(), "gfx942");
  object.target_id = "amdgcn-amd-amdhsa";
  EXPECT_EQ(object.processor(), "");
}

}  // namespace
}  // namespace taot::codegen
