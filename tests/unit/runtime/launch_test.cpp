// Launch through a recording fake driver: parameter packing with the scratch pointers, grid and
// block, once-only module loads under contention and across contexts, and errors that name things
// (a cubin too new for the driver names its ptxas and the driver it needs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <barrier>
#include <thread>

#include "add_call.h"
#include "fake_driver.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class LaunchTest : public ::testing::Test {
 protected:
  FakeDriver fake;
  AddKernelTable table;
  Kernel kernel{table.kernel};
};

TEST_F(LaunchTest, PacksArgumentsInOrderThenTwoNullScratchPointers) {
  fake.make_current(fake.add_context(90));
  auto args = add_args(5000);
  Status status = kernel.launch(reinterpret_cast<CUstream>(0x55), args.data(), args.size());
  ASSERT_TRUE(status.ok()) << status.message();
  auto launches = fake.launches();
  ASSERT_EQ(launches.size(), 1u);
  const RecordedLaunch& launch = launches[0];
  EXPECT_EQ(launch.params[0], kX);
  EXPECT_EQ(launch.params[1], kY);
  EXPECT_EQ(launch.params[2], kOut);
  EXPECT_EQ(launch.params[3] & 0xffffffffu, 5000u);  // i32: the low 4 bytes
  EXPECT_EQ(launch.params[4], 0u);                   // global scratch
  EXPECT_EQ(launch.params[5], 0u);                   // profile scratch
  EXPECT_EQ(launch.grid[0], 5u);                     // cdiv(5000, 1024)
  EXPECT_EQ(launch.grid[1], 1u);
  EXPECT_EQ(launch.block[0], 128u);                  // num_warps 4
  EXPECT_EQ(launch.shared_bytes, 1024u);
  EXPECT_EQ(launch.stream, reinterpret_cast<CUstream>(0x55));
}

TEST_F(LaunchTest, EqualsOneSpecializationDropsTheArgument) {
  fake.make_current(fake.add_context(90));
  fake.params_per_launch = 5;  // x, y, out and the two scratch pointers
  auto args = add_args(1);
  FieldRequest fields[2] = {request(std::optional<std::int64_t>(256)), request(std::optional<std::int64_t>(8))};
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size(), Selection::config(fields)).ok());
  const RecordedLaunch launch = fake.launches().at(0);
  EXPECT_EQ(launch.params[2], kOut);
  EXPECT_EQ(launch.params[3], 0u);  // straight to the scratch pointers
  EXPECT_EQ(launch.params[4], 0u);
  EXPECT_EQ(launch.params.size(), 5u);
  EXPECT_EQ(launch.grid[0], 1u);
  EXPECT_EQ(launch.block[0], 256u);  // num_warps 8
}

TEST_F(LaunchTest, EmptyGridLaunchesNothingAndSucceeds) {
  // No context is current: an empty grid must not even need one.
  auto args = add_args(0);
  Status status = kernel.launch(nullptr, args.data(), args.size());
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_TRUE(fake.launches().empty());
  EXPECT_EQ(fake.total_loads(), 0);
}

TEST_F(LaunchTest, AKernelWithNoGridOfItsOwnLaunchesOnTheGridGivenAndRefusesNone) {
  table.edit_variants([](table::Variant& variant) {
    for (table::GridProgram& program : variant.grid) program = {nullptr, 0};
  });
  for (const char*& text : table.kernel.grid_text) text = nullptr;
  Kernel gridless{table.kernel};
  fake.make_current(fake.add_context(90));
  auto args = add_args(5000);
  Status refused = gridless.launch(nullptr, args.data(), args.size());
  EXPECT_EQ(refused.code(), TAOT_INVALID_ARGUMENT);
  EXPECT_EQ(refused.message(), "testlib::add_kernel has no grid of its own (it was built without one): give the grid "
                               "at launch (a taot::Grid, taot_launch_ex's grid, grid= from Python)");
  EXPECT_TRUE(fake.launches().empty());
  ASSERT_TRUE(gridless.launch(nullptr, args.data(), args.size(), Selection::automatic(), Grid{7, 2}).ok());
  ASSERT_EQ(fake.launches().size(), 1u);
  EXPECT_EQ(fake.launches()[0].grid[0], 7u);
  EXPECT_EQ(fake.launches()[0].grid[1], 2u);
}

// What an observer saw: one line per callback.
std::vector<std::string> observed_calls;

void observe_begin(const taot_launch_info* launch, void* user) {
  observed_calls.push_back(std::string(static_cast<const char*>(user)) + " begin " + launch->library + "::" +
                           launch->kernel + " " + launch->variant_id + " #" + std::to_string(launch->variant_index) +
                           " " + taot_step_name(launch->step) + " grid " + std::to_string(launch->grid[0]) + "," +
                           std::to_string(launch->grid[1]) + "," + std::to_string(launch->grid[2]) + " args " +
                           std::to_string(launch->arg_count));
}

void observe_end(const taot_launch_info* launch, taot_status status, void*) {
  observed_calls.push_back(std::string("end ") + launch->kernel + " " + taot_status_name(status));
}

TEST_F(LaunchTest, AnObserverSeesEveryLaunchThatReachesTheDriverAndNothingOnceRemoved) {
  fake.make_current(fake.add_context(90));
  observed_calls.clear();
  static char tag[] = "observer";
  const taot_launch_observer observer{observe_begin, observe_end, tag};
  taot_set_launch_observer(&observer);
  auto args = add_args(5000);
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());
  FieldRequest fields[2] = {request(std::optional<std::int64_t>(256)), request(std::optional<std::int64_t>(8))};
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size(), Selection::config(fields)).ok());
  auto empty = add_args(0);
  ASSERT_TRUE(kernel.launch(nullptr, empty.data(), empty.size()).ok());  // an empty grid launches nothing
  fake.launch_result = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  EXPECT_FALSE(kernel.launch(nullptr, args.data(), args.size()).ok());
  fake.launch_result = CUDA_SUCCESS;
  taot_set_launch_observer(nullptr);
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());

  ASSERT_EQ(observed_calls.size(), 6u);
  EXPECT_EQ(observed_calls[1], "end add_kernel TAOT_OK");
  EXPECT_NE(observed_calls[0].find("observer begin testlib::add_kernel "), std::string::npos) << observed_calls[0];
  EXPECT_NE(observed_calls[0].find(" default grid 5,1,1 args 4"), std::string::npos) << observed_calls[0];
  bool names_a_variant = false;  // the id and index of a variant of the table, as launched
  for (std::size_t v = 0; v < table.kernel.variant_count; ++v)
    names_a_variant |= observed_calls[0].find(std::string(" ") + table.kernel.variants[v].id + " #" +
                                              std::to_string(v) + " ") != std::string::npos;
  EXPECT_TRUE(names_a_variant) << observed_calls[0];
  EXPECT_NE(observed_calls[2].find(" config grid 20,1,1 args 4"), std::string::npos) << observed_calls[2];
  EXPECT_EQ(observed_calls[5], "end add_kernel TAOT_CUDA_ERROR");
  EXPECT_EQ(fake.launches().size(), 4u);
}

TEST_F(LaunchTest, PicksCubinByComputeCapability) {
  CUcontext ampere = fake.add_context(86);  // runs the portable sm_80 cubin
  CUcontext hopper = fake.add_context(90);
  auto args = add_args(64);
  fake.make_current(ampere);
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());
  fake.make_current(hopper);
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());
  const std::size_t variant = *kernel.select(args.data(), args.size());
  EXPECT_EQ(fake.loads_of(table.kernel.variants[variant].images[0].cubin), 1);
  EXPECT_EQ(fake.loads_of(table.kernel.variants[variant].images[1].cubin), 1);
}

TEST_F(LaunchTest, UnsupportedArchitectureListsCompiledTargets) {
  fake.make_current(fake.add_context(75));
  auto args = add_args(64);
  Status status = kernel.launch(nullptr, args.data(), args.size());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), TAOT_UNSUPPORTED_DEVICE);
  EXPECT_NE(status.message().find("no cubin for this GPU (Fake GPU 0, sm_75); the library was compiled for sm_80, sm_90"),
            std::string::npos)
      << status.message();
  // An sm_90a cubin must not run on a 9.x device that is not 9.0 (arch-specific), nor sm_80 on 10.0.
  fake.make_current(fake.add_context(100));
  Status blackwell = kernel.launch(nullptr, args.data(), args.size());
  EXPECT_EQ(blackwell.code(), TAOT_UNSUPPORTED_DEVICE) << blackwell.message();
}

TEST_F(LaunchTest, NoCurrentContextIsNamed) {
  auto args = add_args(64);
  Status status = kernel.launch(nullptr, args.data(), args.size());
  EXPECT_EQ(status.code(), TAOT_NO_CONTEXT);
  EXPECT_NE(status.message().find("testlib::add_kernel: no CUDA context is current"), std::string::npos)
      << status.message();
}

TEST_F(LaunchTest, DriverFailureNamesKernelVariantAndCudaError) {
  fake.make_current(fake.add_context(90));
  fake.launch_result = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  auto args = add_args(64);
  Status status = kernel.launch(nullptr, args.data(), args.size());
  ASSERT_EQ(status.code(), TAOT_CUDA_ERROR);
  EXPECT_EQ(status.cuda_result(), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_NE(status.message().find("testlib::add_kernel variant fp32_a7_i32h16_B1024_w4: cuLaunchKernel failed: "
                                  "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
            std::string::npos)
      << status.message();
}

TEST_F(LaunchTest, BadCubinNamesVariant) {
  fake.make_current(fake.add_context(90));
  fake.load_result = CUDA_ERROR_INVALID_IMAGE;
  auto args = add_args(64);
  Status status = kernel.launch(nullptr, args.data(), args.size());
  ASSERT_EQ(status.code(), TAOT_CUDA_ERROR);
  EXPECT_NE(status.message().find("variant fp32_a7_i32h16_B1024_w4: cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE"),
            std::string::npos)
      << status.message();
}

TEST_F(LaunchTest, ACubinTheDriverIsTooOldForNamesItsPtxasTheDriverItNeedsAndHowToRebuild) {
  table.edit_images([](table::Image& image) { image.ptxas_version = image.arch == 90 ? "13.1.80" : "12.8.93"; });
  auto args = add_args(64);
  for (CUresult refusal : {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_NO_BINARY_FOR_GPU}) {
    fake.make_current(fake.add_context(90));
    fake.load_result = refusal;
    Status status = kernel.launch(nullptr, args.data(), args.size());
    ASSERT_EQ(status.code(), TAOT_CUDA_ERROR);
    EXPECT_EQ(status.cuda_result(), refusal);
    EXPECT_THAT(status.message(), HasSubstr("variant fp32_a7_i32h16_B1024_w4: cuModuleLoadData failed: "));
    EXPECT_THAT(status.message(),
                HasSubstr("; image sm_90 was assembled by ptxas 13.1.80, which needs an NVIDIA driver of release 580 "
                          "or newer (CUDA 13.x minor-version compatibility): update the driver, or rebuild the library "
                          "with an older ptxas (set TRITON_PTXAS_PATH and TRITON_PTXAS_BLACKWELL_PATH to one, e.g. "
                          "/usr/local/cuda/bin/ptxas, and build again)"));
  }
  fake.make_current(fake.add_context(80));
  EXPECT_THAT(kernel.launch(nullptr, args.data(), args.size()).message(),
              HasSubstr("image sm_80 was assembled by ptxas 12.8.93, which needs an NVIDIA driver of release 525 or "
                        "newer (CUDA 12.x"));
  // Other load failures are not the driver's age; an image whose ptxas is not recorded says so.
  fake.load_result = CUDA_ERROR_OUT_OF_MEMORY;
  EXPECT_THAT(kernel.launch(nullptr, args.data(), args.size()).message(), Not(HasSubstr("ptxas")));
  table.edit_images([](table::Image& image) { image.ptxas_version = nullptr; });
  Kernel unrecorded{table.kernel};
  fake.load_result = CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  EXPECT_THAT(unrecorded.launch(nullptr, args.data(), args.size()).message(),
              HasSubstr("image sm_80 was assembled by a ptxas the manifest does not name: update the driver"));
}

TEST_F(LaunchTest, ContextRecreatedAtTheSameAddressGetsItsOwnModule) {
  CUcontext context = fake.add_context(90);
  fake.make_current(context);
  auto args = add_args(64);
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());
  fake.recreate_context(context);  // same handle, new id: the cached function is stale
  Status status = kernel.launch(nullptr, args.data(), args.size());
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(fake.total_loads(), 2);
  EXPECT_EQ(fake.launches().size(), 2u);
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());
  EXPECT_EQ(fake.total_loads(), 2);
}

TEST_F(LaunchTest, ThirtyTwoThreadsLaunchingFirstLoadEachModuleOnce) {
  constexpr int kThreads = 32;
  fake.load_delay_us = 2000;
  CUcontext contexts[2] = {fake.add_context(90), fake.add_context(90)};
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      fake.make_current(contexts[t % 2]);
      auto args = add_args(4096 + 16 * (t % 3));
      start.arrive_and_wait();
      if (!kernel.launch(nullptr, args.data(), args.size()).ok()) ++failures;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fake.launches().size(), static_cast<std::size_t>(kThreads));
  const auto args = add_args(4096);
  const std::size_t variant = *kernel.select(args.data(), args.size());
  EXPECT_EQ(fake.loads_of(table.kernel.variants[variant].images[1].cubin), 2);  // once per context
  EXPECT_EQ(fake.total_loads(), 2);
}

TEST_F(LaunchTest, PreloadLoadsEveryVariantOnceAndUnloadReleasesThem) {
  fake.make_current(fake.add_context(90));
  ASSERT_TRUE(kernel.preload().ok());
  EXPECT_EQ(fake.total_loads(), static_cast<int>(table.kernel.variant_count));
  ASSERT_TRUE(kernel.preload().ok());
  EXPECT_EQ(fake.total_loads(), static_cast<int>(table.kernel.variant_count));
  ASSERT_TRUE(kernel.unload().ok());
  EXPECT_EQ(fake.unloads(), static_cast<int>(table.kernel.variant_count));
  auto args = add_args(64);
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());
  EXPECT_EQ(fake.total_loads(), static_cast<int>(table.kernel.variant_count) + 1);
}

TEST(LaunchSharedMemory, AboveDefaultIsOptedInAndAboveDeviceLimitIsNamed) {
  FakeDriver fake;
  AddKernelTable table(100 * 1024);
  Kernel kernel(table.kernel);
  fake.make_current(fake.add_context(90, 232448));
  auto args = add_args(64);
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());
  ASSERT_EQ(fake.shared_attributes().size(), 1u);
  EXPECT_EQ(fake.shared_attributes()[0].second, 100 * 1024);

  fake.make_current(fake.add_context(90, 64 * 1024));
  Status status = kernel.launch(nullptr, args.data(), args.size());
  ASSERT_EQ(status.code(), TAOT_OUT_OF_RESOURCES);
  EXPECT_NE(status.message().find("needs 102400 bytes of shared memory per block (102400 dynamic + 0 static); "
                                   "Fake GPU 1 allows 65536"),
            std::string::npos)
      << status.message();
}

TEST(LaunchSharedMemory, StaticSharedMemoryCountsTowardsTheLimit) {
  FakeDriver fake;
  fake.static_shared_bytes = 1024;  // as in some sm_90 cubins, beside Triton's dynamic bytes
  AddKernelTable table(48 * 1024);
  Kernel kernel(table.kernel);
  fake.make_current(fake.add_context(90, 232448));
  auto args = add_args(64);
  ASSERT_TRUE(kernel.launch(nullptr, args.data(), args.size()).ok());
  ASSERT_EQ(fake.shared_attributes().size(), 1u);  // 48 KiB + 1 KiB: above the default, opted in
  EXPECT_EQ(fake.shared_attributes()[0].second, 48 * 1024);

  fake.make_current(fake.add_context(90, 48 * 1024 + 512));
  Status status = kernel.launch(nullptr, args.data(), args.size());
  ASSERT_EQ(status.code(), TAOT_OUT_OF_RESOURCES);
  EXPECT_NE(status.message().find("needs 50176 bytes of shared memory per block (49152 dynamic + 1024 static); "
                                   "Fake GPU 1 allows 49664"),
            std::string::npos)
      << status.message();
  EXPECT_EQ(fake.unloads(), 1);  // the module loaded to ask was let go
}

TEST(LaunchGrid, NegativeGridIsNamedWithItsExpression) {
  FakeDriver fake;
  AddKernelTable table;
  Kernel kernel(table.kernel);
  fake.make_current(fake.add_context(90));
  auto args = add_args(-5000);
  Status status = kernel.launch(nullptr, args.data(), args.size());
  ASSERT_EQ(status.code(), TAOT_INVALID_ARGUMENT);
  EXPECT_NE(status.message().find("grid[0] = cdiv(n_elements, BLOCK_SIZE) is negative (-4)"), std::string::npos)
      << status.message();
}

TEST(VariantInfoTest, DescribesSpecializationConfigAndTargets) {
  AddKernelTable table;
  Kernel kernel(table.kernel);
  EXPECT_EQ(kernel.variants().size(), table.kernel.variant_count);
  std::size_t count = 0;
  for (VariantInfo info : kernel.variants()) {
    EXPECT_EQ(info.index(), count++);
    EXPECT_EQ(*info.config_integer("BLOCK_SIZE"), table.facts[info.index()].block);
  }
  EXPECT_FALSE(kernel.variants()[0].config_integer("missing").has_value());
  EXPECT_EQ(kernel.variants()[0].describe(),
            "x_ptr: fp32, y_ptr: fp32, output_ptr: fp32, n_elements: i32 %16; BLOCK_SIZE=256 num_warps=4; sm_80 sm_90");
}

}  // namespace
}  // namespace taot::testing
