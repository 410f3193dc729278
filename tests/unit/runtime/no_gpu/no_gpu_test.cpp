// The runtime on a machine whose driver finds no GPU (fake_libcuda.cpp, found first through
// LD_LIBRARY_PATH): loading the driver fails once with a message naming cuInit and the CUDA error,
// every launch returns that failure, and nothing crashes or prints.
#include <gtest/gtest.h>

#include "taot/c_api.h"
#include "taot/driver_api.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {

TEST(NoGpu, DriverLoadFailsNamingCuInit) {
  Expected<const driver::Api*> api = driver::get();
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), TAOT_CUDA_ERROR);
  EXPECT_NE(api.status().message().find("cuInit"), std::string::npos) << api.status().message();
  EXPECT_NE(api.status().message().find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << api.status().message();
}

TEST(NoGpu, LaunchesAndScratchCallsReturnTheSameFailure) {
  AddKernelTable table;
  Kernel kernel(table.kernel);
  std::vector<taot_arg> args = {arg(Ptr(CUdeviceptr{0x1000}, DType::fp32)), arg(Ptr(CUdeviceptr{0x2000}, DType::fp32)),
                                arg(Ptr(CUdeviceptr{0x3000}, DType::fp32)), arg(std::int64_t{100})};
  Status status = kernel.launch(nullptr, args.data(), args.size());
  EXPECT_EQ(status.code(), TAOT_CUDA_ERROR);
  EXPECT_NE(status.message().find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << status.message();
  EXPECT_EQ(taot_launch(kernel.handle(), nullptr, args.data(), args.size(), nullptr, 0), TAOT_CUDA_ERROR);
  EXPECT_NE(std::string(taot_last_error()).find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << taot_last_error();
  EXPECT_EQ(reserve_scratch(nullptr, 1024).code(), TAOT_CUDA_ERROR);
  EXPECT_EQ(kernel.preload().code(), TAOT_CUDA_ERROR);
  // The selection itself needs no driver.
  Expected<std::size_t> selected = kernel.select(args.data(), args.size());
  EXPECT_TRUE(selected.ok()) << selected.status().message();
}

}  // namespace
}  // namespace taot::testing
