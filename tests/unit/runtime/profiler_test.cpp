// The launch profiler ($TAOT_PROFILE) against the fake driver: the trace names every launch, its
// variant, step, grid, stream and arguments, with the time its events measured; events are
// recorded on the launch's stream around the launch and reused; failed and captured launches have
// no time; copies of the runtime writing one path merge; a bad path is reported, never thrown;
// without the environment variables nothing is installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "add_call.h"
#include "fake_driver.h"
#include "observer.h"
#include "profiler.h"
#include "taot/runtime.h"
#include "test_table.h"

namespace taot::testing {
namespace {

using detail::Profiler;
using detail::ProfileSettings;
using Json = nlohmann::json;


// The work put on `stream` outside captures, one letter each: L launch, E event record.
std::string work_on(const FakeDriver& fake, CUstream stream) {
  std::string letters;
  for (const RecordedOperation& operation : fake.operations())
    if (operation.stream == stream)
      letters += operation.kind == RecordedOperation::Kind::launch         ? 'L'
                 : operation.kind == RecordedOperation::Kind::event_record ? 'E'
                                                                           : '?';
  return letters;
}

Json read_trace(const std::string& path) {
  std::ifstream file(path);
  return Json::parse(file);
}

class ProfilerTest : public ::testing::Test {
 protected:
  ProfilerTest() {
    fake.make_current(fake.add_context(90));
    std::filesystem::remove(path);
  }
  ~ProfilerTest() override {
    taot_set_launch_observer(nullptr);
    std::filesystem::remove(path);
  }

  void install(Profiler& profiler) {
    observer = profiler.observer();
    taot_set_launch_observer(&observer);
  }

  Status launch(CUstream stream = kStream, std::int64_t n = 5000) {
    const std::vector<taot_arg> args = add_args(n);
    return kernel.launch(stream, args.data(), args.size());
  }

  FakeDriver fake;
  AddKernelTable table;
  Kernel kernel{table.kernel};
  std::string path = (std::filesystem::temp_directory_path() /
                      ("taot_profile_test_" + std::to_string(::getpid()) + "_" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json"))
                         .string();
  taot_launch_observer observer{};
};

TEST_F(ProfilerTest, TheTraceNamesEveryLaunchItsArgumentsAndTheTimeItsEventsMeasured) {
  Profiler profiler(ProfileSettings{path, false}, "copy-a");
  install(profiler);
  fake.script_elapsed({0.25f, 0.5f});
  ASSERT_TRUE(launch().ok());
  const std::vector<taot_arg> args = add_args(5000);
  FieldRequest fields[2] = {request(std::optional<std::int64_t>(256)), request(std::optional<std::int64_t>(8))};
  ASSERT_TRUE(kernel.launch(kStream, args.data(), args.size(), Selection::config(fields)).ok());
  Status flushed = profiler.flush();
  ASSERT_TRUE(flushed.ok()) << flushed.message();

  const Json trace = read_trace(path);
  EXPECT_EQ(trace["schema"], "taot.profile.trace");
  EXPECT_EQ(trace["version"], 1);
  EXPECT_EQ(trace["pid"], ::getpid());
  EXPECT_EQ(trace["device"], "Fake GPU 0");
  EXPECT_EQ(trace["devices"]["0"]["arch"], "90");
  EXPECT_EQ(trace["devices"]["0"]["num_sms"], 132);
  EXPECT_EQ(trace["errors"], Json::array());
  ASSERT_EQ(trace["launches"].size(), 2u);
  const Json& first = trace["launches"][0];
  EXPECT_EQ(first["library"], "testlib");
  EXPECT_EQ(first["kernel"], "add_kernel");
  const std::size_t index = first["variant_index"];
  ASSERT_LT(index, table.kernel.variant_count);
  EXPECT_EQ(first["variant"], table.kernel.variants[index].id);
  EXPECT_EQ(index, *kernel.select(args.data(), args.size()));
  EXPECT_EQ(first["step"], "default");
  EXPECT_EQ(first["grid"], Json::parse("[5, 1, 1]"));
  EXPECT_EQ(first["stream"], "0x55");
  EXPECT_EQ(first["device"], 0);
  EXPECT_EQ(first["args"], Json::parse(R"({"n_elements": 5000})"));
  EXPECT_EQ(first["dtypes"], Json::parse(R"({"x_ptr": "fp32", "y_ptr": "fp32", "output_ptr": "fp32"})"));
  EXPECT_DOUBLE_EQ(first["ms"].get<double>(), 0.25);
  EXPECT_EQ(first["status"], "TAOT_OK");
  EXPECT_EQ(first["runtime"], "copy-a");
  const Json& second = trace["launches"][1];
  EXPECT_EQ(second["step"], "config");
  EXPECT_EQ(second["grid"], Json::parse("[20, 1, 1]"));
  EXPECT_DOUBLE_EQ(second["ms"].get<double>(), 0.5);
  EXPECT_LE(first["host_ns"].get<std::int64_t>(), second["host_ns"].get<std::int64_t>());
}

TEST_F(ProfilerTest, EventsAreRecordedOnTheLaunchStreamAroundEachLaunchAndReused) {
  {
    Profiler profiler(ProfileSettings{path, false}, "copy-a");
    install(profiler);
    ASSERT_TRUE(launch(kStream).ok());
    ASSERT_TRUE(launch(kOtherStream).ok());
    EXPECT_EQ(work_on(fake, kStream), "ELE");
    EXPECT_EQ(work_on(fake, kOtherStream), "ELE");
    ASSERT_TRUE(profiler.flush().ok());
    ASSERT_TRUE(launch(kStream).ok());  // takes the pair the first launch gave back
    EXPECT_EQ(work_on(fake, kStream), "ELEELE");
    EXPECT_EQ(fake.events_created(), 4);
    taot_set_launch_observer(nullptr);
  }
  EXPECT_EQ(fake.live_events(), 0);  // the profiler's events go with it
}

TEST_F(ProfilerTest, ALongRunHoldsABoundedNumberOfEventsAndTimesEveryLaunch) {
  Profiler profiler(ProfileSettings{path, false, /*unread_limit=*/16}, "copy-a");
  install(profiler);
  constexpr int kLaunches = 200;
  for (int l = 0; l < kLaunches; ++l) ASSERT_TRUE(launch().ok());
  EXPECT_LE(fake.events_created(), 2 * 17);  // older launches' events are read and reused
  ASSERT_TRUE(profiler.flush().ok());
  const Json trace = read_trace(path);
  ASSERT_EQ(trace["launches"].size(), static_cast<std::size_t>(kLaunches));
  for (const Json& entry : trace["launches"]) ASSERT_TRUE(entry["ms"].is_number());
  EXPECT_EQ(fake.elapsed_queries(), kLaunches);
}

TEST_F(ProfilerTest, ThreadsLaunchingAtOnceAreEachRecordedAroundTheirOwnLaunches) {
  Profiler profiler(ProfileSettings{path, false, /*unread_limit=*/8}, "copy-a");
  install(profiler);
  const CUcontext context = fake.add_context(90);
  constexpr int kThreads = 4, kLaunchesEach = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      fake.make_current(context);
      const CUstream stream = reinterpret_cast<CUstream>(0x1000 + 0x10 * t);
      for (int l = 0; l < kLaunchesEach; ++l) EXPECT_TRUE(launch(stream, 64 * (t + 1)).ok());
    });
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(profiler.flush().ok());
  const Json trace = read_trace(path);
  ASSERT_EQ(trace["launches"].size(), static_cast<std::size_t>(kThreads * kLaunchesEach));
  for (int t = 0; t < kThreads; ++t) {
    const CUstream stream = reinterpret_cast<CUstream>(0x1000 + 0x10 * t);
    std::string expected;
    for (int l = 0; l < kLaunchesEach; ++l) expected += "ELE";
    EXPECT_EQ(work_on(fake, stream), expected);
  }
  for (const Json& entry : trace["launches"]) {
    const int thread = (std::stoi(entry["stream"].get<std::string>(), nullptr, 16) - 0x1000) / 0x10;
    EXPECT_EQ(entry["args"]["n_elements"], 64 * (thread + 1));
    EXPECT_TRUE(entry["ms"].is_number());
  }
}

TEST_F(ProfilerTest, FlushingTwiceWritesEveryLaunchOnce) {
  Profiler profiler(ProfileSettings{path, false}, "copy-a");
  install(profiler);
  ASSERT_TRUE(launch().ok());
  ASSERT_TRUE(profiler.flush().ok());
  EXPECT_EQ(read_trace(path)["launches"].size(), 1u);
  ASSERT_TRUE(launch(kStream, 100).ok());
  ASSERT_TRUE(profiler.flush().ok());
  ASSERT_TRUE(profiler.flush().ok());
  const Json trace = read_trace(path);
  ASSERT_EQ(trace["launches"].size(), 2u);
  EXPECT_EQ(trace["launches"][1]["args"]["n_elements"], 100);
  EXPECT_EQ(fake.elapsed_queries(), 2);  // each launch's events are read once
}

TEST_F(ProfilerTest, AKernelTableGoneBeforeTheFlushIsStillNamed) {
  Profiler profiler(ProfileSettings{path, false}, "copy-a");
  install(profiler);
  std::string variant;
  {
    AddKernelTable short_lived;
    short_lived.kernel.library = "templib";
    short_lived.kernel.name = "temp_kernel";
    Kernel temporary{short_lived.kernel};
    const std::vector<taot_arg> args = add_args(64);
    ASSERT_TRUE(temporary.launch(kStream, args.data(), args.size()).ok());
    variant = short_lived.kernel.variants[*temporary.select(args.data(), args.size())].id;
  }  // its table and variant ids are freed here
  ASSERT_TRUE(launch().ok());
  ASSERT_TRUE(profiler.flush().ok());
  const Json trace = read_trace(path);
  ASSERT_EQ(trace["launches"].size(), 2u);
  EXPECT_EQ(trace["launches"][0]["library"], "templib");
  EXPECT_EQ(trace["launches"][0]["kernel"], "temp_kernel");
  EXPECT_EQ(trace["launches"][0]["variant"], variant);
  EXPECT_EQ(trace["launches"][0]["args"]["n_elements"], 64);
  EXPECT_EQ(trace["launches"][1]["kernel"], "add_kernel");
}

TEST_F(ProfilerTest, ABadPathIsReportedOnceAndLaunchesGoOn) {
  const std::string bad = "/nonexistent-taot-folder/trace.json";
  Profiler profiler(ProfileSettings{bad, false}, "copy-a");
  install(profiler);
  ASSERT_TRUE(launch().ok());
  Status status = profiler.flush();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "cannot write the trace to " + bad + ": open failed: No such file or directory");
  ::testing::internal::CaptureStderr();
  profiler.flush_at_exit();
  profiler.flush_at_exit();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "taot profile: " + status.message() + "\n");
  EXPECT_TRUE(launch().ok());
}

TEST_F(ProfilerTest, AFailedLaunchHasItsStatusAndNoTimeAndACapturedOneNoEvents) {
  Profiler profiler(ProfileSettings{path, false}, "copy-a");
  install(profiler);
  fake.launch_result = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  EXPECT_FALSE(launch().ok());
  fake.launch_result = CUDA_SUCCESS;
  fake.set_capturing(kOtherStream, true);
  ASSERT_TRUE(launch(kOtherStream).ok());
  fake.set_capturing(kOtherStream, false);
  EXPECT_EQ(work_on(fake, kStream), "EL");    // the start event, then the launch that failed
  EXPECT_EQ(work_on(fake, kOtherStream), "L");  // no event recorded into a capture
  ASSERT_TRUE(profiler.flush().ok());
  const Json trace = read_trace(path);
  ASSERT_EQ(trace["launches"].size(), 2u);
  EXPECT_EQ(trace["launches"][0]["status"], "TAOT_CUDA_ERROR");
  EXPECT_TRUE(trace["launches"][0]["ms"].is_null());
  EXPECT_EQ(trace["launches"][1]["captured"], true);
  EXPECT_TRUE(trace["launches"][1]["ms"].is_null());
  EXPECT_EQ(fake.elapsed_queries(), 0);
}

TEST_F(ProfilerTest, CopiesOfTheRuntimeWritingOnePathMergeTheirLaunches) {
  Profiler first(ProfileSettings{path, false}, "copy-a");
  Profiler second(ProfileSettings{path, false}, "copy-b");
  install(first);
  ASSERT_TRUE(launch(kStream, 100).ok());
  install(second);
  ASSERT_TRUE(launch(kStream, 200).ok());
  ASSERT_TRUE(second.flush().ok());
  ASSERT_TRUE(first.flush().ok());
  ASSERT_TRUE(first.flush().ok());  // its own launches replaced, the other copy's kept
  const Json trace = read_trace(path);
  ASSERT_EQ(trace["launches"].size(), 2u);
  EXPECT_EQ(trace["launches"][0]["runtime"], "copy-a");
  EXPECT_EQ(trace["launches"][0]["args"]["n_elements"], 100);
  EXPECT_EQ(trace["launches"][1]["runtime"], "copy-b");
  EXPECT_EQ(trace["launches"][1]["args"]["n_elements"], 200);
}

TEST_F(ProfilerTest, ADriverWithoutEventTimingGetsLaunchesWithoutTimesAndOneNotice) {
  fake.edit_api().cuEventElapsedTime = nullptr;
  Profiler profiler(ProfileSettings{path, false}, "copy-a");
  install(profiler);
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(launch().ok());
  ASSERT_TRUE(launch().ok());
  const std::string notice = "this CUDA driver lacks cuEventElapsedTime_v2 (times need a CUDA 12.8 or newer driver): "
                             "launches are recorded without times";
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "taot profile: " + notice + "\n");
  ASSERT_TRUE(profiler.flush().ok());
  const Json trace = read_trace(path);
  ASSERT_EQ(trace["launches"].size(), 2u);
  EXPECT_TRUE(trace["launches"][1]["ms"].is_null());
  EXPECT_EQ(trace["errors"], Json::array({notice}));
  EXPECT_EQ(fake.events_created(), 0);
}

TEST_F(ProfilerTest, WithoutTheEnvironmentVariablesNothingIsInstalled) {
  ::unsetenv("TAOT_PROFILE");
  ::unsetenv("TAOT_PROFILE_NVTX");
  ASSERT_TRUE(launch().ok());  // a kernel's first use reads the environment
  EXPECT_EQ(detail::current_launch_observer(), nullptr);
  EXPECT_EQ(detail::active_profiler(), nullptr);
  EXPECT_EQ(fake.events_created(), 0);
  EXPECT_EQ(taot_profile_flush(), TAOT_OK);  // nothing to write
  EXPECT_FALSE(std::filesystem::exists(path));
}

// A process of its own (gtest re-runs this test in a child): $TAOT_PROFILE read at the kernel's
// first use installs the profiler, NVTX ranges included, and exit() writes the trace.
TEST(ProfilerProcessTest, TheEnvironmentVariableInstallsTheProfilerAndExitWritesTheTrace) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const pid_t test_pid = ::testing::internal::InDeathTestChild() ? ::getppid() : ::getpid();  // one name in both
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("taot_profile_process_test_" + std::to_string(test_pid) + ".json"))
                               .string();
  std::filesystem::remove(path);
  ::setenv("TAOT_PROFILE", path.c_str(), 1);
  ::setenv("TAOT_PROFILE_NVTX", "1", 1);
  EXPECT_EXIT(
      {
        FakeDriver fake;  // left alive by exit(): the handler at exit reads the events through it
        fake.make_current(fake.add_context(90));
        fake.script_elapsed({0.125f});
        AddKernelTable table;
        Kernel kernel{table.kernel};
        const std::vector<taot_arg> args = add_args(4096);
        const bool launched = kernel.launch(kStream, args.data(), args.size()).ok();
        std::exit(launched && detail::current_launch_observer() != nullptr ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
  ::unsetenv("TAOT_PROFILE");
  ::unsetenv("TAOT_PROFILE_NVTX");
  ASSERT_TRUE(std::filesystem::exists(path));
  const Json trace = read_trace(path);
  std::filesystem::remove(path);
  ASSERT_EQ(trace["launches"].size(), 1u);
  EXPECT_EQ(trace["launches"][0]["args"]["n_elements"], 4096);
  EXPECT_DOUBLE_EQ(trace["launches"][0]["ms"].get<double>(), 0.125);
  EXPECT_NE(trace["pid"], ::getpid());  // the child's
}

TEST_F(ProfilerTest, SettingsComeFromTheTwoVariables) {
  EXPECT_FALSE(detail::profile_settings(nullptr, nullptr));
  EXPECT_FALSE(detail::profile_settings("", "0"));
  const std::optional<ProfileSettings> traced = detail::profile_settings("/tmp/trace-%p.json", nullptr);
  ASSERT_TRUE(traced);
  EXPECT_EQ(traced->trace_path, "/tmp/trace-" + std::to_string(::getpid()) + ".json");
  EXPECT_FALSE(traced->nvtx);
  const std::optional<ProfileSettings> ranges_only = detail::profile_settings(nullptr, "1");
  ASSERT_TRUE(ranges_only);
  EXPECT_TRUE(ranges_only->trace_path.empty());
  EXPECT_TRUE(ranges_only->nvtx);
}

TEST_F(ProfilerTest, AnNvtxRangeIsNamedLibraryKernelAndVariant) {
  taot_launch_info info{};
  info.library = "testlib";
  info.kernel = "add_kernel";
  info.variant_id = "fp32_a16";
  EXPECT_EQ(detail::launch_range_name(info), "testlib.add_kernel[fp32_a16]");
}

}  // namespace
}  // namespace taot::testing
