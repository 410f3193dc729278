// Printing and asserting kernels on the fake driver: the printf FIFO size set once per context
// before taot's first launch there, and CUDA_ERROR_ASSERT (after a launch, at the next launch or at
// a synchronization) turned into an error naming the kernel variant launched last in the context.
#include <gtest/gtest.h>

#include <string>

#include "add_call.h"
#include "fake_driver.h"
#include "taot/c_api.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {

class PrintAssertTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(set_printf_fifo_size(0).ok()); }

  std::string variant_id(std::size_t index) const { return table.kernel.variants[index].id; }
  std::size_t launched_variant() {
    auto args = add_args(5000);
    Expected<std::size_t> chosen = kernel.select(args.data(), args.size());
    EXPECT_TRUE(chosen.ok());
    return chosen.ok() ? *chosen : 0;
  }

  FakeDriver fake;
  AddKernelTable table;
  Kernel kernel{table.kernel};
};

void expect_names_assert(const Status& status, const std::string& variant_id) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), TAOT_CUDA_ERROR);
  EXPECT_EQ(status.cuda_result(), static_cast<int>(CUDA_ERROR_ASSERT));
  const std::string& message = status.message();
  EXPECT_NE(message.find("CUDA_ERROR_ASSERT"), std::string::npos) << message;
  EXPECT_NE(message.find("a device assert fired in testlib::add_kernel variant " + variant_id +
                         ", the last kernel taot launched in this context"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the CUDA context is unusable: destroy and re-create it (or restart the process)"),
            std::string::npos)
      << message;
}

TEST_F(PrintAssertTest, AnAssertReportedAtTheNextLaunchNamesTheVariantLaunchedBefore) {
  fake.make_current(fake.add_context(90));
  auto args = add_args(5000);
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size()).ok());
  fake.launch_result = CUDA_ERROR_ASSERT;
  FieldRequest fields[2] = {request(std::optional<std::int64_t>(256)), request(std::optional<std::int64_t>(8))};
  Status status = kernel.launch(kStream, args.data(), args.size(), Selection::config(fields));
  expect_names_assert(status, variant_id(launched_variant()));
  // The failing launch is named too, as where the error surfaced.
  EXPECT_EQ(status.message().rfind("testlib::add_kernel variant ", 0), 0u) << status.message();
  // It did not become the last launch: asking again names the same one.
  expect_names_assert(kernel.launch(kStream, args.data(), args.size(), Selection::config(fields)),
                      variant_id(launched_variant()));
}

TEST_F(PrintAssertTest, AnAssertReportedAtASynchronizationNamesTheLastLaunch) {
  fake.make_current(fake.add_context(90));
  auto args = add_args(5000);
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size()).ok());
  fake.synchronize_result = CUDA_ERROR_ASSERT;
  Status status = release_scratch();
  expect_names_assert(status, variant_id(launched_variant()));
  EXPECT_EQ(status.message().rfind("release_scratch: cuCtxSynchronize failed: CUDA_ERROR_ASSERT", 0), 0u)
      << status.message();
}

TEST_F(PrintAssertTest, TheLastLaunchIsKeptPerContext) {
  CUcontext first = fake.add_context(90);
  CUcontext second = fake.add_context(80);
  auto args = add_args(5000);
  fake.make_current(first);
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size()).ok());
  const std::size_t in_first = launched_variant();
  fake.make_current(second);
  FieldRequest fields[2] = {request(std::optional<std::int64_t>(256)), request(std::optional<std::int64_t>(8))};
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size(), Selection::config(fields)).ok());
  fake.make_current(first);
  fake.synchronize_result = CUDA_ERROR_ASSERT;
  expect_names_assert(release_scratch(), variant_id(in_first));
}

TEST_F(PrintAssertTest, AnAssertInAContextWithoutTaotLaunchesSaysSo) {
  fake.make_current(fake.add_context(90));
  fake.synchronize_result = CUDA_ERROR_ASSERT;
  Status status = release_scratch();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("a device assert fired in a kernel of this context (taot launched none here); "
                                  "the CUDA context is unusable"),
            std::string::npos)
      << status.message();
}

TEST_F(PrintAssertTest, OtherErrorsSayNothingOfAsserts) {
  fake.make_current(fake.add_context(90));
  auto args = add_args(5000);
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size()).ok());
  fake.launch_result = CUDA_ERROR_LAUNCH_FAILED;
  Status status = kernel.launch(kStream, args.data(), args.size());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message().find("device assert"), std::string::npos) << status.message();
}

TEST_F(PrintAssertTest, TheCApiSeesTheSameMessage) {
  fake.make_current(fake.add_context(90));
  auto args = add_args(5000);
  taot_kernel* handle = kernel.handle();
  ASSERT_EQ(taot_launch(handle, kStream, args.data(), args.size(), nullptr, 0), TAOT_OK);
  fake.launch_result = CUDA_ERROR_ASSERT;
  ASSERT_EQ(taot_launch(handle, kStream, args.data(), args.size(), nullptr, 0), TAOT_CUDA_ERROR);
  EXPECT_NE(std::string(taot_last_error()).find("a device assert fired in testlib::add_kernel variant "),
            std::string::npos)
      << taot_last_error();
}

TEST_F(PrintAssertTest, ThePrintfFifoIsSizedOncePerContextBeforeItsFirstLaunch) {
  ASSERT_EQ(taot_set_printf_fifo_size(8u << 20), TAOT_OK);
  CUcontext first = fake.add_context(90);
  CUcontext second = fake.add_context(90);
  auto args = add_args(5000);
  fake.make_current(first);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size()).ok());
  FieldRequest fields[2] = {request(std::optional<std::int64_t>(256)), request(std::optional<std::int64_t>(8))};
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size(), Selection::config(fields)).ok());  // another module
  fake.make_current(second);
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size()).ok());
  const auto limits = fake.limits_set();
  ASSERT_EQ(limits.size(), 2u);
  EXPECT_EQ(limits[0].context, first);
  EXPECT_EQ(limits[0].limit, CU_LIMIT_PRINTF_FIFO_SIZE);
  EXPECT_EQ(limits[0].value, std::size_t{8} << 20);
  EXPECT_EQ(limits[0].launches_before, 0u);
  EXPECT_EQ(limits[1].context, second);
  EXPECT_EQ(limits[1].launches_before, 4u);
}

TEST_F(PrintAssertTest, NoSizeRequestedLeavesTheDriverDefault) {
  fake.make_current(fake.add_context(90));
  auto args = add_args(5000);
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size()).ok());
  EXPECT_TRUE(fake.limits_set().empty());
}

TEST_F(PrintAssertTest, ARefusedSizeFailsTheLaunchNamingTheCall) {
  ASSERT_TRUE(set_printf_fifo_size(1u << 30).ok());
  fake.set_limit_result = CUDA_ERROR_INVALID_VALUE;
  fake.make_current(fake.add_context(90));
  auto args = add_args(5000);
  Status status = kernel.launch(kStream, args.data(), args.size());
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1073741824) failed: CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << status.message();
  EXPECT_TRUE(fake.launches().empty());
  fake.set_limit_result = CUDA_SUCCESS;  // the context was not prepared: the next launch tries again
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size()).ok());
  EXPECT_EQ(fake.limits_set().size(), 1u);
}

TEST_F(PrintAssertTest, ARequestedSizeNeedsCuCtxSetLimit) {
  ASSERT_TRUE(set_printf_fifo_size(4096).ok());
  fake.edit_api().cuCtxSetLimit = nullptr;
  fake.make_current(fake.add_context(90));
  auto args = add_args(5000);
  Status status = kernel.launch(kStream, args.data(), args.size());
  EXPECT_EQ(status.code(), TAOT_NOT_SUPPORTED);
  EXPECT_NE(status.message().find("no cuCtxSetLimit"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace taot::testing
