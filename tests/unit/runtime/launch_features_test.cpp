// Launches of kernels that need more than cuLaunchKernel gives, through the recording fake driver:
// global and profile scratch buffers from the per-stream pool (sizes, reuse, growth, CUDA graph
// capture), clusters, cooperative grids and PDL through cuLaunchKernelEx, and their errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "add_call.h"
#include "fake_driver.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {


bool has_attribute(const RecordedLaunch& launch, CUlaunchAttributeID id) {
  return std::any_of(launch.attributes.begin(), launch.attributes.end(),
                     [&](const CUlaunchAttribute& attribute) { return attribute.id == id; });
}

const CUlaunchAttribute& attribute(const RecordedLaunch& launch, CUlaunchAttributeID id) {
  return *std::find_if(launch.attributes.begin(), launch.attributes.end(),
                       [&](const CUlaunchAttribute& attribute) { return attribute.id == id; });
}

class ScratchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Like a kernel that builds one tensor descriptor on the device: 128 bytes per program.
    table.edit_images([](table::Image& image) {
      image.global_scratch_size = 128;
      image.global_scratch_align = 128;
    });
    fake.make_current(fake.add_context(90));
  }
  void TearDown() override { (void)release_scratch(); }

  Status launch(std::int64_t n, CUstream stream = kStream) {
    auto args = add_args(n);
    return kernel.launch(stream, args.data(), args.size());
  }

  FakeDriver fake;
  AddKernelTable table;
  Kernel kernel{table.kernel};
};

TEST_F(ScratchTest, GlobalScratchIsSizedForTheGridAndReusedOnItsStream) {
  ASSERT_TRUE(launch(5000).ok());  // 5 programs x 128 bytes
  auto allocations = fake.allocations();
  ASSERT_EQ(allocations.size(), 1u);
  EXPECT_GE(allocations[0].bytes, 5u * 128u);
  EXPECT_EQ(allocations[0].stream, kStream);
  const std::uint64_t scratch = fake.launches().at(0).params[4];
  EXPECT_GE(scratch, allocations[0].address);
  EXPECT_EQ(scratch % 256, 0u);                                     // aligned beyond the fake's 64 bytes
  EXPECT_LE(scratch + 5 * 128, allocations[0].address + allocations[0].bytes);
  EXPECT_EQ(fake.launches().at(0).params[5], 0u);                   // no profile scratch

  ASSERT_TRUE(launch(3000).ok());
  EXPECT_EQ(fake.allocations().size(), 1u);
  EXPECT_EQ(fake.launches().at(1).params[4], scratch);
}

TEST_F(ScratchTest, ALargerGridReplacesTheBufferInStreamOrder) {
  ASSERT_TRUE(launch(5000).ok());
  ASSERT_TRUE(launch(10'000'000).ok());  // 9766 programs x 128 bytes
  auto allocations = fake.allocations();
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_GE(allocations[1].bytes, 9766u * 128u);
  EXPECT_TRUE(allocations[0].freed);
  EXPECT_EQ(allocations[0].freed_on, kStream);  // after the launches queued with it
  EXPECT_EQ(fake.synchronizations(), 0);
  EXPECT_GE(fake.launches().at(1).params[4], allocations[1].address);
}

TEST_F(ScratchTest, StreamsDoNotShareABuffer) {
  ASSERT_TRUE(launch(5000, kStream).ok());
  ASSERT_TRUE(launch(5000, kOtherStream).ok());
  auto allocations = fake.allocations();
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_EQ(allocations[1].stream, kOtherStream);
  EXPECT_NE(fake.launches().at(0).params[4], fake.launches().at(1).params[4]);
}

TEST_F(ScratchTest, ProfileScratchFollowsGlobalScratchAligned) {
  table.edit_images([](table::Image& image) {
    image.global_scratch_size = 100;
    image.global_scratch_align = 4;
    image.profile_scratch_size = 8320;
    image.profile_scratch_align = 128;
  });
  Kernel profiled(table.kernel);
  auto args = add_args(5000);
  ASSERT_TRUE(profiled.launch(kStream, args.data(), args.size()).ok());
  const RecordedLaunch recorded = fake.launches().at(0);  // a copy: launches() returns a temporary
  EXPECT_EQ(recorded.params[5] - recorded.params[4], 512u);  // 5 x 100 = 500, rounded up to 128
  EXPECT_GE(fake.allocations().at(0).bytes, 512u + 5u * 8320u);
}

TEST_F(ScratchTest, CaptureWithoutAReservationFailsNamingTheBytes) {
  fake.set_capturing(kStream, true);
  Status status = launch(5000);
  ASSERT_EQ(status.code(), TAOT_NOT_SUPPORTED);
  EXPECT_NE(status.message().find("needs 640 bytes of scratch memory on stream 0x55, which is capturing a CUDA graph"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("taot::reserve_scratch(stream, 640)"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("testlib::add_kernel variant fp32_a7"), std::string::npos) << status.message();
  EXPECT_TRUE(fake.allocations().empty());
  EXPECT_TRUE(fake.launches().empty());

  Status reserve = reserve_scratch(kStream, 640);
  EXPECT_EQ(reserve.code(), TAOT_INVALID_ARGUMENT);
  EXPECT_NE(reserve.message().find("is capturing a CUDA graph; reserve before capture begins"), std::string::npos)
      << reserve.message();
}

TEST_F(ScratchTest, AReservationServesCaptureAndOutlivesLaterGrowth) {
  ASSERT_TRUE(reserve_scratch(kStream, 640).ok());
  ASSERT_EQ(fake.allocations().size(), 1u);
  fake.set_capturing(kStream, true);
  ASSERT_TRUE(launch(5000).ok());
  EXPECT_EQ(fake.allocations().size(), 1u);  // nothing allocated during capture
  fake.set_capturing(kStream, false);

  ASSERT_TRUE(launch(10'000'000).ok());  // grows; the graph still refers to the first buffer
  auto allocations = fake.allocations();
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_FALSE(allocations[0].freed);

  ASSERT_TRUE(release_scratch().ok());
  EXPECT_EQ(fake.synchronizations(), 1);
  for (const RecordedAllocation& allocation : fake.allocations()) EXPECT_TRUE(allocation.freed);
}

TEST_F(ScratchTest, LaunchingOnceBeforeCaptureIsAReservationToo) {
  ASSERT_TRUE(launch(5000).ok());
  fake.set_capturing(kStream, true);
  EXPECT_TRUE(launch(4000).ok());
  EXPECT_EQ(fake.allocations().size(), 1u);
}

TEST_F(ScratchTest, ScratchBeyondThirtyTwoBitOffsetsIsRefused) {
  table.edit_images([](table::Image& image) { image.global_scratch_size = 1 << 20; });
  Kernel big(table.kernel);
  auto args = add_args(std::int64_t{1} << 22);  // 4096 programs x 1 MiB = 2^32 bytes
  Status status = big.launch(kStream, args.data(), args.size());
  ASSERT_EQ(status.code(), TAOT_OUT_OF_RESOURCES);
  EXPECT_NE(status.message().find("4096 programs x 1048576 bytes of global scratch, over the 2^31 bytes"),
            std::string::npos)
      << status.message();
}

class LaunchAttributesTest : public ::testing::Test {
 protected:
  void SetUp() override { fake.make_current(fake.add_context(90)); }

  Status launch_with(void (*edit)(table::Image&), std::int64_t n = 5000) {
    table.edit_images(edit);
    kernels.emplace_back(std::make_unique<Kernel>(table.kernel));
    auto args = add_args(n);
    return kernels.back()->launch(kStream, args.data(), args.size());
  }

  FakeDriver fake;
  AddKernelTable table;
  std::vector<std::unique_ptr<Kernel>> kernels;
};

TEST_F(LaunchAttributesTest, PlainKernelsUseCuLaunchKernel) {
  ASSERT_TRUE(launch_with([](table::Image&) {}).ok());
  EXPECT_FALSE(fake.launches().at(0).extended);
}

TEST_F(LaunchAttributesTest, ClustersMultiplyGridXAndSetTheClusterShape) {
  ASSERT_TRUE(launch_with([](table::Image& image) { image.num_ctas = 2; }).ok());
  const RecordedLaunch recorded = fake.launches().at(0);
  EXPECT_TRUE(recorded.extended);
  EXPECT_EQ(recorded.grid[0], 10u);  // 5 programs, each a cluster of 2 blocks
  EXPECT_EQ(recorded.block[0], 128u);
  ASSERT_TRUE(has_attribute(recorded, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION));
  const auto& cluster = attribute(recorded, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).value.clusterDim;
  EXPECT_EQ(cluster.x, 2u);
  EXPECT_EQ(cluster.y, 1u);
  EXPECT_EQ(cluster.z, 1u);
  EXPECT_EQ(attribute(recorded, CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
                .value.clusterSchedulingPolicyPreference,
            CU_CLUSTER_SCHEDULING_POLICY_SPREAD);
  EXPECT_FALSE(has_attribute(recorded, CU_LAUNCH_ATTRIBUTE_COOPERATIVE));
  EXPECT_TRUE(fake.non_portable_cluster_functions().empty());
}

TEST_F(LaunchAttributesTest, ClustersAboveEightAreAllowedPerFunction) {
  ASSERT_TRUE(launch_with([](table::Image& image) { image.num_ctas = 16; }).ok());
  ASSERT_EQ(fake.non_portable_cluster_functions().size(), 1u);
  EXPECT_EQ(fake.non_portable_cluster_functions()[0].second, 1);
  EXPECT_EQ(fake.launches().at(0).grid[0], 80u);
}

TEST_F(LaunchAttributesTest, CooperativeAndPdlSetTheirAttributes) {
  ASSERT_TRUE(launch_with([](table::Image& image) { image.cooperative = true; }).ok());
  ASSERT_TRUE(launch_with([](table::Image& image) {
                image.cooperative = false;
                image.pdl = true;
              }).ok());
  const auto launches = fake.launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_TRUE(launches[0].extended);
  EXPECT_EQ(attribute(launches[0], CU_LAUNCH_ATTRIBUTE_COOPERATIVE).value.cooperative, 1);
  EXPECT_FALSE(has_attribute(launches[0], CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION));
  EXPECT_EQ(launches[1].grid[0], 5u);
  EXPECT_EQ(attribute(launches[1], CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
                .value.programmaticStreamSerializationAllowed,
            1);
  EXPECT_FALSE(has_attribute(launches[1], CU_LAUNCH_ATTRIBUTE_COOPERATIVE));
}

TEST_F(LaunchAttributesTest, ADriverWithoutCuLaunchKernelExIsNamed) {
  fake.drop_launch_kernel_ex();
  Status status = launch_with([](table::Image& image) { image.pdl = true; });
  ASSERT_EQ(status.code(), TAOT_NOT_SUPPORTED);
  EXPECT_NE(status.message().find("needs cuLaunchKernelEx (clusters, cooperative grids, PDL): a CUDA 12.0 or newer "
                                  "driver"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(fake.total_loads(), 0);
}

TEST_F(LaunchAttributesTest, ClusterGridBeyondTheLimitIsNamed) {
  Status status = launch_with([](table::Image& image) { image.num_ctas = 2; }, std::int64_t{1} << 40);
  ASSERT_EQ(status.code(), TAOT_OUT_OF_RESOURCES);
  EXPECT_NE(status.message().find("grid (1073741824, 1, 1) of clusters of 2 blocks exceeds the CUDA limits"),
            std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace taot::testing
