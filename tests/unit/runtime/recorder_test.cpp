// The launch recorder ($TAOT_RECORD) against the fake driver: the chosen launch's launch.json names
// its kernel, variant, grid and arguments, each pointer as its allocation and offset there, and the
// buffer files hold the allocations' bytes before and after; only that one launch is recorded, the
// observer installed before it still sees every launch, and the settings read the environment.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "add_call.h"
#include "fake_driver.h"
#include "observer.h"
#include "recorder.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {

using detail::Recorder;
using detail::RecordSettings;
using Json = nlohmann::json;

std::vector<unsigned char> read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

std::vector<unsigned char> counting(std::size_t bytes, unsigned char first) {
  std::vector<unsigned char> values(bytes);
  for (std::size_t b = 0; b < bytes; ++b) values[b] = static_cast<unsigned char>(first + b);
  return values;
}

class RecorderTest : public ::testing::Test {
 protected:
  RecorderTest() {
    fake.make_current(fake.add_context(90));
    std::filesystem::remove_all(directory);
    // x and y share one allocation (at offsets 0 and 256), out has its own.
    EXPECT_EQ(fake.api().cuMemAlloc(&inputs, 512), CUDA_SUCCESS);
    EXPECT_EQ(fake.api().cuMemAlloc(&output, 1024), CUDA_SUCCESS);
    fake.write_memory(inputs, counting(512, 1));
  }
  ~RecorderTest() override {
    taot_set_launch_observer(nullptr);
    std::filesystem::remove_all(directory);
  }

  Status launch(std::int64_t n) {
    const std::vector<taot_arg> args = {arg(Ptr(inputs, DType::fp32)), arg(Ptr(inputs + 256, DType::fp32)),
                                        arg(Ptr(output + 64, DType::fp32)), arg(n)};
    return kernel.launch(kStream, args.data(), args.size());
  }

  FakeDriver fake;
  AddKernelTable table;
  Kernel kernel{table.kernel};
  CUdeviceptr inputs = 0, output = 0;
  std::filesystem::path directory = std::filesystem::temp_directory_path() /
                                    ("taot_record_test_" + std::to_string(::getpid()) + "_" +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
};

// Writes "outputs" into out's allocation when the fake launches: what the recorder must see after.
struct WriteOnLaunch {
  FakeDriver* fake;
  CUdeviceptr output;
  int begins = 0, ends = 0;
  static void begin(const taot_launch_info*, void* user) { ++static_cast<WriteOnLaunch*>(user)->begins; }
  static void end(const taot_launch_info*, taot_status, void* user) {
    auto* self = static_cast<WriteOnLaunch*>(user);
    ++self->ends;
    self->fake->write_memory(self->output, counting(1024, 100));
  }
};

TEST_F(RecorderTest, TheChosenLaunchIsWrittenWithItsBuffersBeforeAndAfter) {
  WriteOnLaunch next{&fake, output};
  Recorder recorder(RecordSettings{directory.string(), "add_kernel", 1},
                    taot_launch_observer{&WriteOnLaunch::begin, &WriteOnLaunch::end, &next});
  const taot_launch_observer observer = recorder.observer();
  taot_set_launch_observer(&observer);
  ASSERT_TRUE(launch(100).ok());  // launch 0: not recorded
  EXPECT_FALSE(std::filesystem::exists(directory));
  fake.write_memory(output, std::vector<unsigned char>(1024, 7));
  ASSERT_TRUE(launch(5000).ok());  // launch 1: recorded
  ASSERT_TRUE(recorder.done());
  const int copies = fake.copies_to_host();
  ASSERT_TRUE(launch(6000).ok());  // launch 2: not recorded
  EXPECT_EQ(fake.copies_to_host(), copies);
  EXPECT_EQ(next.begins, 3);  // the observer behind the recorder sees every launch
  EXPECT_EQ(next.ends, 3);

  std::ifstream file(directory / "launch.json");
  const Json description = Json::parse(file);
  EXPECT_EQ(description["schema"], "taot.repro");
  EXPECT_EQ(description["version"], 1);
  EXPECT_EQ(description["library"], "testlib");
  EXPECT_EQ(description["kernel"], "add_kernel");
  const std::size_t variant = description["variant_index"];
  ASSERT_LT(variant, table.kernel.variant_count);
  EXPECT_EQ(description["variant"], table.kernel.variants[variant].id);
  EXPECT_EQ(description["launch_index"], 1);
  EXPECT_EQ(description["grid"], Json::parse("[5, 1, 1]"));
  EXPECT_EQ(description["device"], 0);
  EXPECT_EQ(description["status"], "TAOT_OK");
  EXPECT_EQ(description["errors"], Json::array());
  EXPECT_EQ(description["buffers"], Json::parse(R"([
    {"file": "buffer0.bin", "bytes": 512, "output": false, "after": "buffer0.after.bin"},
    {"file": "buffer1.bin", "bytes": 1024, "output": true, "after": "buffer1.after.bin"}])"));
  EXPECT_EQ(description["args"], Json::parse(R"([
    {"name": "x_ptr", "kind": "pointer", "dtype": "fp32", "output": false, "buffer": 0, "offset": 0},
    {"name": "y_ptr", "kind": "pointer", "dtype": "fp32", "output": false, "buffer": 0, "offset": 256},
    {"name": "output_ptr", "kind": "pointer", "dtype": "fp32", "output": true, "buffer": 1, "offset": 64},
    {"name": "n_elements", "kind": "int", "value": 5000, "bits": "0x0000000000001388"}])"));
  EXPECT_EQ(read_bytes(directory / "buffer0.bin"), counting(512, 1));
  EXPECT_EQ(read_bytes(directory / "buffer0.after.bin"), counting(512, 1));
  EXPECT_EQ(read_bytes(directory / "buffer1.bin"), std::vector<unsigned char>(1024, 7));
  EXPECT_EQ(read_bytes(directory / "buffer1.after.bin"), counting(1024, 100));
}

TEST_F(RecorderTest, OtherKernelsAndCapturedLaunchesAreNotCounted) {
  Recorder recorder(RecordSettings{directory.string(), "another_kernel", 0}, taot_launch_observer{});
  const taot_launch_observer observer = recorder.observer();
  taot_set_launch_observer(&observer);
  ASSERT_TRUE(launch(100).ok());
  EXPECT_FALSE(recorder.done());
  EXPECT_EQ(fake.copies_to_host(), 0);

  Recorder any(RecordSettings{directory.string(), "", 0}, taot_launch_observer{});
  const taot_launch_observer any_observer = any.observer();
  taot_set_launch_observer(&any_observer);
  fake.set_capturing(kStream, true);
  ASSERT_TRUE(launch(100).ok());
  EXPECT_FALSE(any.done());
  fake.set_capturing(kStream, false);
  ASSERT_TRUE(launch(100).ok());
  EXPECT_TRUE(any.done());
}

TEST_F(RecorderTest, AnArgumentOutsideEveryAllocationIsReportedInTheFile) {
  Recorder recorder(RecordSettings{directory.string(), "", 0}, taot_launch_observer{});
  const taot_launch_observer observer = recorder.observer();
  taot_set_launch_observer(&observer);
  const std::vector<taot_arg> args = add_args(100);  // fixed addresses the fake never allocated
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size()).ok());
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(printed.find("taot record: argument x_ptr: cuMemGetAddressRange failed: CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << printed;
  std::ifstream file(directory / "launch.json");
  const Json description = Json::parse(file);
  EXPECT_EQ(description["args"][0]["buffer"], nullptr);
  EXPECT_EQ(description["args"][0]["address"], "0x00007f0000001000");
  ASSERT_EQ(description["errors"].size(), 3u);
}

TEST(RecordSettings, ComeFromTheEnvironment) {
  Expected<std::optional<RecordSettings>> none = detail::record_settings(nullptr, "k", "3");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  Expected<std::optional<RecordSettings>> some = detail::record_settings("/tmp/r", "fused_moe_kernel", "3");
  ASSERT_TRUE(some.ok());
  EXPECT_EQ((*some)->directory, "/tmp/r");
  EXPECT_EQ((*some)->kernel, "fused_moe_kernel");
  EXPECT_EQ((*some)->index, 3u);
  Expected<std::optional<RecordSettings>> first = detail::record_settings("/tmp/r", nullptr, nullptr);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)->index, 0u);
  Expected<std::optional<RecordSettings>> bad = detail::record_settings("/tmp/r", nullptr, "-1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::move(bad).take_status().message(),
            "TAOT_RECORD_INDEX must be a launch index (0, 1, ...), not '-1'");
}

}  // namespace
}  // namespace taot::testing
