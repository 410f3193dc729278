// Launch through the recording fake HIP table: the image chosen by the device's gfx name, a block of
// num_warps x 64 threads, parameters packed as on NVIDIA (scratch pointers included), one module
// per (device, code object), HIP errors named; and the CUDA path unchanged beside it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <barrier>
#include <deque>
#include <thread>

#include "add_call.h"
#include "fake_driver.h"
#include "fake_hip.h"
#include "scratch.h"
#include "taot/c_api.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {

using ::testing::HasSubstr;

const char* const kTargets[] = {"sm_90", "gfx942", "gfx950"};

// The add kernel of test_table.h built for sm_90, gfx942 and gfx950, as a manifest with AMD
// targets makes it: each variant's sm_90 image, then an AMD image per gfx name (a code object of
// its own, arch 0, warp size 64). With `gfx950_needs_8_warps`, only the variants of num_warps 8
// have a gfx950 image (the variants' targets differ: selection depends on the device).
struct MultiVendorTable {
  explicit MultiVendorTable(bool gfx950_needs_8_warps = false) {
    std::size_t v = 0;
    base.edit_variants([&](table::Variant& variant) {
      const table::Image& sm90 = variant.images[1];
      std::vector<table::Image> images = {sm90};
      for (const char* gfx : {"gfx942", "gfx950"}) {
        if (gfx950_needs_8_warps && std::string_view(gfx) == "gfx950" && base.facts[v].num_warps != 8) continue;
        code_objects.emplace_back(64, static_cast<unsigned char>(0x80 + code_objects.size() % 64));
        table::Image amd = sm90;
        amd.target = gfx;
        amd.arch = 0;
        amd.arch_specific = false;
        amd.vendor = table::Vendor::amd;
        amd.warp_size = 64;
        amd.cubin = code_objects.back().data();
        amd.ptxas_version = nullptr;
        images.push_back(amd);
      }
      image_sets.push_back(std::move(images));
      variant.images = image_sets.back().data();
      variant.image_count = static_cast<std::uint16_t>(image_sets.back().size());
      ++v;
    });
    base.kernel.targets = kTargets;
    base.kernel.target_count = 3;
  }

  // Applies `edit` to every AMD image.
  template <class Edit>
  void edit_amd_images(Edit edit) {
    for (auto& images : image_sets)
      for (table::Image& image : images)
        if (image.vendor == table::Vendor::amd) edit(image);
  }

  const table::Variant& variant(std::size_t index) const { return base.kernel.variants[index]; }

  AddKernelTable base;
  std::deque<std::vector<unsigned char>> code_objects;
  std::deque<std::vector<table::Image>> image_sets;
};

class HipLaunchTest : public ::testing::Test {
 protected:
  FakeHip hip;
  MultiVendorTable table;
  Kernel kernel{table.base.kernel};
  const CUstream stream = reinterpret_cast<CUstream>(0x4157);  // a hipStream_t, passed as taot takes a CUstream
};

TEST_F(HipLaunchTest, TheDevicesGfxNameChoosesTheImageItsFunctionComesFrom) {
  const int mi355 = hip.add_device("gfx950:sramecc+:xnack-");
  const int mi300 = hip.add_device("gfx942:sramecc+:xnack-");
  auto args = add_args(5000);
  const std::size_t variant = *kernel.select(args.data(), args.size());
  hip.make_current(mi355);
  ASSERT_TRUE(kernel.launch(stream, args.data(), args.size()).ok());
  hip.make_current(mi300);
  ASSERT_TRUE(kernel.launch(stream, args.data(), args.size()).ok());
  const auto launches = hip.launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].image, table.variant(variant).images[2].cubin);  // gfx950
  EXPECT_EQ(launches[0].device, mi355);
  EXPECT_EQ(launches[1].image, table.variant(variant).images[1].cubin);  // gfx942
  EXPECT_EQ(launches[1].device, mi300);
  EXPECT_EQ(hip.loads_of(table.variant(variant).images[0].cubin), 0);   // the cubin is not HIP's
}

TEST_F(HipLaunchTest, ADeviceNoImageWasBuiltForIsNamedWithItsGfxNameAndTheLibrarysTargets) {
  hip.add_device("gfx1100");
  auto args = add_args(64);
  Status status = kernel.launch(stream, args.data(), args.size());
  ASSERT_EQ(status.code(), TAOT_UNSUPPORTED_DEVICE) << status.message();
  EXPECT_EQ(status.message(), "testlib::add_kernel: no image for this GPU (Fake AMD GPU 0, gfx1100); the library was "
                              "compiled for sm_90, gfx942, gfx950");
  EXPECT_TRUE(hip.launches().empty());
  EXPECT_EQ(hip.total_loads(), 0);
}

TEST_F(HipLaunchTest, ABlockIsNumWarpsWarpsOf64Threads) {
  hip.add_device("gfx942:sramecc+:xnack-");
  auto args = add_args(5000);
  ASSERT_TRUE(kernel.launch(stream, args.data(), args.size()).ok());
  FieldRequest fields[2] = {request(std::optional<std::int64_t>(256)), request(std::optional<std::int64_t>(8))};
  ASSERT_TRUE(kernel.launch(stream, args.data(), args.size(), Selection::config(fields)).ok());
  const auto launches = hip.launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].block[0], 256u);  // num_warps 4
  EXPECT_EQ(launches[0].block[1], 1u);
  EXPECT_EQ(launches[0].grid[0], 5u);     // cdiv(5000, 1024)
  EXPECT_EQ(launches[1].block[0], 512u);  // num_warps 8
  EXPECT_EQ(launches[1].grid[0], 20u);    // cdiv(5000, 256)
  EXPECT_EQ(launches[0].shared_bytes, 1024u);
  EXPECT_EQ(launches[0].stream, reinterpret_cast<hip::hipStream_t>(stream));
}

TEST_F(HipLaunchTest, AGridOfMoreWorkItemsAlongXThanHipLaunchesIsRefusedNamingIt) {
  hip.add_device("gfx942");
  auto args = add_args(5000);
  // 2^31 - 1 programs: within CUDA's limit; times 256 threads, past HIP's 2^32 - 1 work-items along x
  Status status = kernel.launch(stream, args.data(), args.size(), Selection::automatic(), Grid{2147483647});
  ASSERT_EQ(status.code(), TAOT_INVALID_ARGUMENT) << status.message();
  EXPECT_NE(status.message().find("a grid of 2147483647 programs of 256 threads along x is more than HIP launches"),
            std::string::npos)
      << status.message();
  EXPECT_TRUE(hip.launches().empty());
}

TEST_F(HipLaunchTest, PacksArgumentsAsTheVariantSaysThenTwoNullScratchPointers) {
  hip.add_device("gfx942");
  auto args = add_args(5000);
  ASSERT_TRUE(kernel.launch(stream, args.data(), args.size()).ok());
  const RecordedHipLaunch launch = hip.launches().at(0);
  EXPECT_EQ(launch.params[0], kX);
  EXPECT_EQ(launch.params[1], kY);
  EXPECT_EQ(launch.params[2], kOut);
  EXPECT_EQ(launch.params[3] & 0xffffffffu, 5000u);  // i32: the low 4 bytes
  EXPECT_EQ(launch.params[4], 0u);                   // global scratch
  EXPECT_EQ(launch.params[5], 0u);                   // profile scratch
  EXPECT_TRUE(hip.allocations().empty());

  hip.params_per_launch = 5;  // n == 1 is compiled in: x, y, out, then the scratch pointers
  auto one = add_args(1);
  ASSERT_TRUE(kernel.launch(stream, one.data(), one.size()).ok());
  const RecordedHipLaunch dropped = hip.launches().at(1);
  EXPECT_EQ(dropped.params[2], kOut);
  EXPECT_EQ(dropped.params[3], 0u);
  EXPECT_EQ(dropped.params[4], 0u);
}

TEST(HipScratch, AKernelThatTakesScratchGetsABufferForItsGridFreedInStreamOrderAfterTheLaunch) {
  FakeHip hip;
  MultiVendorTable table;
  table.edit_amd_images([](table::Image& image) {
    image.global_scratch_size = 1024;
    image.global_scratch_align = 128;
    image.profile_scratch_size = 96;
    image.profile_scratch_align = 8;
  });
  Kernel kernel(table.base.kernel);
  hip.add_device("gfx950");
  const auto stream = reinterpret_cast<CUstream>(0x4157);
  auto args = add_args(5000);
  ASSERT_TRUE(kernel.launch(stream, args.data(), args.size()).ok());
  const auto allocations = hip.allocations();
  ASSERT_EQ(allocations.size(), 1u);
  const detail::ScratchLayout layout = *detail::scratch_layout(5, 1024, 128, 96, 8);  // 5 programs
  EXPECT_EQ(allocations[0].bytes, layout.total);
  EXPECT_EQ(allocations[0].stream, reinterpret_cast<hip::hipStream_t>(stream));
  EXPECT_TRUE(allocations[0].freed);
  EXPECT_EQ(allocations[0].freed_on, reinterpret_cast<hip::hipStream_t>(stream));
  EXPECT_EQ(allocations[0].launches_before_free, 1u);
  const RecordedHipLaunch launch = hip.launches().at(0);
  EXPECT_EQ(launch.params[3] & 0xffffffffu, 5000u);
  EXPECT_EQ(launch.params[4], allocations[0].address + layout.global_offset);
  EXPECT_EQ(launch.params[5], allocations[0].address + layout.profile_offset);
  EXPECT_NE(layout.profile_offset, layout.global_offset);
}

TEST_F(HipLaunchTest, SixteenThreadsLaunchingFirstLoadEachCodeObjectOncePerDevice) {
  constexpr int kThreads = 16;
  hip.load_delay_us = 2000;
  const int devices[2] = {hip.add_device("gfx942:sramecc+:xnack-"), hip.add_device("gfx942:sramecc+:xnack-")};
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      hip.make_current(devices[t % 2]);
      auto args = add_args(4096 + 16 * (t % 3));
      start.arrive_and_wait();
      if (!kernel.launch(stream, args.data(), args.size()).ok()) ++failures;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(hip.launches().size(), static_cast<std::size_t>(kThreads));
  auto args = add_args(4096);
  const std::size_t variant = *kernel.select(args.data(), args.size());
  EXPECT_EQ(hip.loads_of(table.variant(variant).images[1].cubin), 2);  // once per device
  EXPECT_EQ(hip.total_loads(), 2);
  hip.make_current(devices[0]);
  ASSERT_TRUE(kernel.launch(stream, args.data(), args.size()).ok());
  EXPECT_EQ(hip.total_loads(), 2);
}

TEST_F(HipLaunchTest, PreloadLoadsEveryVariantOnceOnTheDeviceAndUnloadReleasesThem) {
  hip.add_device("gfx950");
  ASSERT_TRUE(kernel.preload().ok());
  ASSERT_TRUE(kernel.preload().ok());
  EXPECT_EQ(hip.total_loads(), static_cast<int>(table.base.kernel.variant_count));
  ASSERT_TRUE(kernel.unload().ok());
  EXPECT_EQ(hip.unloads(), static_cast<int>(table.base.kernel.variant_count));
  auto args = add_args(64);
  ASSERT_TRUE(kernel.launch(stream, args.data(), args.size()).ok());
  EXPECT_EQ(hip.total_loads(), static_cast<int>(table.base.kernel.variant_count) + 1);
}

TEST_F(HipLaunchTest, AFailedHipCallIsNamedWithItsHipErrorAndTheVariant) {
  hip.add_device("gfx942");
  auto args = add_args(64);
  hip.launch_result = hip::hipErrorLaunchOutOfResources;
  Status launch = kernel.launch(stream, args.data(), args.size());
  ASSERT_EQ(launch.code(), TAOT_CUDA_ERROR);
  EXPECT_EQ(launch.cuda_result(), hip::hipErrorLaunchOutOfResources);
  EXPECT_EQ(launch.message(), "testlib::add_kernel variant fp32_a7_i32h16_B1024_w4: hipModuleLaunchKernel failed: "
                              "hipErrorLaunchOutOfResources (fake HIP error)");

  FakeHip fresh;  // a new table: nothing loaded yet
  fresh.add_device("gfx942");
  fresh.load_result = hip::hipErrorInvalidImage;
  Kernel other(table.base.kernel);
  Status load = other.launch(stream, args.data(), args.size());
  ASSERT_EQ(load.code(), TAOT_CUDA_ERROR);
  EXPECT_THAT(load.message(), HasSubstr("variant fp32_a7_i32h16_B1024_w4: hipModuleLoadData failed: "
                                        "hipErrorInvalidImage"));
}

TEST_F(HipLaunchTest, ADeviceWhosePropertiesHoldNoGfxNameIsRefusedNamingTheLayout) {
  hip.add_device("gfx942");
  hip.gcn_arch_name_missing = true;
  auto args = add_args(64);
  Status status = kernel.launch(stream, args.data(), args.size());
  EXPECT_EQ(status.code(), TAOT_INTERNAL);
  EXPECT_THAT(status.message(), HasSubstr("hipGetDevicePropertiesR0600 gave device 0 no gfx name at gcnArchName's "
                                          "offset (1160)"));
}

TEST(HipRefusals, AnImageThatNeedsWhatHipsLaunchDoesNotPassOrMoreLdsThanTheDeviceHasIsNamed) {
  FakeHip hip;
  MultiVendorTable table;
  table.edit_amd_images([](table::Image& image) { image.cooperative = true; });
  Kernel cooperative(table.base.kernel);
  hip.add_device("gfx942", 304, 64 * 1024);
  const auto stream = reinterpret_cast<CUstream>(0x4157);
  auto args = add_args(64);
  Status refused = cooperative.launch(stream, args.data(), args.size());
  EXPECT_EQ(refused.code(), TAOT_NOT_SUPPORTED);
  EXPECT_EQ(refused.message(), "testlib::add_kernel variant fp32_a7_i32h16_B1024_w4 (image gfx942) needs a cooperative "
                               "grid, which taot's HIP launch does not pass");
  table.edit_amd_images([](table::Image& image) {
    image.cooperative = false;
    image.shared_bytes = 80 * 1024;
  });
  Kernel large(table.base.kernel);
  Status too_large = large.launch(stream, args.data(), args.size());
  EXPECT_EQ(too_large.code(), TAOT_OUT_OF_RESOURCES);
  EXPECT_EQ(too_large.message(), "testlib::add_kernel variant fp32_a7_i32h16_B1024_w4 needs 81920 bytes of shared "
                                 "memory (LDS) per block; Fake AMD GPU 0 allows 65536");
  EXPECT_EQ(hip.total_loads(), 0);
  EXPECT_TRUE(hip.launches().empty());
}

TEST(HipSelection, WhereTheVariantsTargetsDifferTheDeviceRunsOnlyThoseWithItsImage) {
  FakeHip hip;
  MultiVendorTable table(/*gfx950_needs_8_warps=*/true);
  Kernel kernel(table.base.kernel);
  const int mi300 = hip.add_device("gfx942");
  const int mi355 = hip.add_device("gfx950");
  const auto stream = reinterpret_cast<CUstream>(0x4157);
  auto args = add_args(5000);
  hip.make_current(mi300);
  ASSERT_TRUE(kernel.launch(stream, args.data(), args.size()).ok());
  hip.make_current(mi355);
  Status status = kernel.launch(stream, args.data(), args.size());
  ASSERT_TRUE(status.ok()) << status.message();
  const auto launches = hip.launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].block[0], 256u);  // the default, num_warps 4
  EXPECT_EQ(launches[1].block[0], 512u);  // gfx950 runs only the num_warps 8 variants
}

TEST(HipImageInfo, TheCApiNamesAnAmdImagesVendorAndWarpSize) {
  MultiVendorTable table;
  Kernel kernel(table.base.kernel);
  taot_image_info info{};
  ASSERT_EQ(taot_kernel_image(kernel.handle(), 0, 2, &info), TAOT_OK) << taot_last_error();
  EXPECT_STREQ(info.target, "gfx950");
  EXPECT_STREQ(info.vendor, "amd");
  EXPECT_EQ(info.warp_size, 64u);
  ASSERT_EQ(taot_kernel_image(kernel.handle(), 0, 0, &info), TAOT_OK) << taot_last_error();
  EXPECT_STREQ(info.vendor, "nvidia");
  EXPECT_EQ(info.warp_size, 32u);
}

TEST(HipBesideCuda, WhereTheCudaDriverIsThereItLaunchesAsBeforeAndHipSeesNothing) {
  FakeDriver cuda;
  FakeHip hip;
  hip.add_device("gfx942");
  MultiVendorTable table;
  Kernel kernel(table.base.kernel);
  cuda.make_current(cuda.add_context(90));
  auto args = add_args(5000);
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size()).ok());
  const auto launches = cuda.launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].block[0], 128u);  // num_warps 4 x 32
  EXPECT_EQ(launches[0].params[4], 0u);
  EXPECT_EQ(launches[0].params[5], 0u);
  const std::size_t variant = *kernel.select(args.data(), args.size());
  EXPECT_EQ(cuda.loads_of(table.variant(variant).images[0].cubin), 1);  // the sm_90 cubin
  EXPECT_EQ(cuda.total_loads(), 1);
  EXPECT_TRUE(hip.launches().empty());
  EXPECT_EQ(hip.total_loads(), 0);
  // A device whose compute capability no image has still names the CUDA targets' rule.
  cuda.make_current(cuda.add_context(80));
  Status status = kernel.launch(kStream, args.data(), args.size());
  EXPECT_EQ(status.code(), TAOT_UNSUPPORTED_DEVICE);
  EXPECT_THAT(status.message(), HasSubstr("no cubin for this GPU (Fake GPU 1, sm_80); the library was compiled for "
                                          "sm_90, gfx942, gfx950"));
}

}  // namespace
}  // namespace taot::testing
