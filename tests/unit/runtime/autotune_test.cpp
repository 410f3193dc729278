// First-call autotuning against the fake driver, whose launches take the GPU time a test gives per
// config: the fastest config is chosen and remembered, requirements are kept, reset/restore
// buffers are put back around every timed launch (the call's result equals an untuned launch's),
// concurrent first calls tune once, a capture takes the later steps and warmup() tunes ahead of
// it, results persist and are refused for another build or library, and switched off nothing is
// timed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "autotune.h"
#include "fake_driver.h"
#include "taot/c_api.h"
#include "taot/runtime.h"
#include "taot/tuning_file.h"
#include "test_table.h"
#include "tuning.h"

namespace taot::testing {
namespace {

using ::testing::HasSubstr;

const CUstream kTuneStream = reinterpret_cast<CUstream>(0x55);
constexpr std::int64_t kN = 5000;

// The vector add with a tuning key (n) and its BLOCK_SIZE x num_warps configs timed at first call:
// @triton.autotune(key=["n"]) as the table says it.
struct AutotunedAdd {
  explicit AutotunedAdd(bool at_first_call = true) {
    autotune = {at_first_call, fields, 2, nullptr, 0, nullptr, 0};
    table.kernel.library = "autolib";
    table.kernel.tuning_key = key;
    table.kernel.tuning_key_count = 1;
    table.kernel.autotune = &autotune;
  }
  std::uint16_t fields[2] = {0, 1};  // BLOCK_SIZE, num_warps
  table::TuningKeyPart key[1] = {{3, false}};
  table::Autotune autotune{};
  AddKernelTable table;
};

// GPU time per launch by config: BLOCK_SIZE from the grid (cdiv(n, BLOCK)), num_warps from the block.
float config_ms(const RecordedLaunch& launch, std::int64_t n, const std::map<std::pair<int, int>, float>& times) {
  const int block = launch.grid[0] == static_cast<unsigned>((n + 255) / 256) ? 256 : 1024;
  const int warps = static_cast<int>(launch.block[0] / 32);
  return times.at({block, warps});
}

// The config of a launch, as "BLOCK/warps".
std::string config_of(const RecordedLaunch& launch, std::int64_t n) {
  const int block = launch.grid[0] == static_cast<unsigned>((n + 255) / 256) ? 256 : 1024;
  return std::to_string(block) + "/" + std::to_string(launch.block[0] / 32);
}

class AutotuneTest : public ::testing::Test {
 protected:
  AutotuneTest() {
    fake.l2_cache_bytes = 4096;  // small flush buffers: the fake keeps their bytes
    fake.make_current(fake.add_context(90));
    fake.launch_ms = [this](const RecordedLaunch& launch) { return config_ms(launch, kN, times); };
    // Allocations the driver knows (the tuning copies what reset/restore arguments point into).
    for (CUdeviceptr* buffer : {&x, &y, &out}) EXPECT_EQ(fake.api().cuMemAlloc(buffer, 4 * kN), CUDA_SUCCESS);
    args = {arg(Ptr(x, DType::fp32)), arg(Ptr(y, DType::fp32)), arg(Ptr(out, DType::fp32)), arg(kN)};
  }
  ~AutotuneTest() override {
    set_autotune(std::nullopt);
    set_autotune_dir("");
  }

  Expected<Choice> choose(Kernel& kernel) { return kernel.choose(args.data(), args.size()); }
  Status launch(Kernel& kernel, CUstream stream = kTuneStream) { return kernel.launch(stream, args.data(), args.size()); }

  std::map<std::pair<int, int>, float> times = {{{256, 4}, 0.30f}, {{256, 8}, 0.12f}, {{1024, 4}, 0.20f},
                                                {{1024, 8}, 0.25f}};
  FakeDriver fake;
  CUdeviceptr x = 0, y = 0, out = 0;
  std::vector<taot_arg> args;
};

TEST_F(AutotuneTest, TheFirstLaunchOfAKeyTimesEveryConfigAndLaunchesTheFastest) {
  AutotunedAdd add;
  Kernel kernel(add.table.kernel);
  Expected<Choice> before = choose(kernel);
  ASSERT_TRUE(before.ok()) << before.status().message();
  EXPECT_EQ(before->step, Step::fallback);  // not tuned yet: what a launch would take without tuning

  ASSERT_TRUE(launch(kernel).ok());
  const std::vector<RecordedLaunch> launches = fake.launches();
  std::vector<std::string> timed;
  for (const RecordedLaunch& launch : launches)
    if (std::find(timed.begin(), timed.end(), config_of(launch, kN)) == timed.end()) timed.push_back(config_of(launch, kN));
  std::sort(timed.begin(), timed.end());
  EXPECT_EQ(timed, (std::vector<std::string>{"1024/4", "1024/8", "256/4", "256/8"}));
  EXPECT_EQ(config_of(launches.back(), kN), "256/8");  // the call's own launch: the fastest

  Expected<Choice> after = choose(kernel);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->step, Step::autotuned);
  EXPECT_STREQ(step_name(after->step), "autotuned at first call");
  EXPECT_EQ(add.table.facts[after->variant].block, 256);
  EXPECT_EQ(add.table.facts[after->variant].num_warps, 8);

  // The thread tuned in relaxed capture mode (another thread's global capture is not broken), and
  // went back to its own mode after.
  EXPECT_EQ(fake.capture_modes_set(),
            (std::vector<CUstreamCaptureMode>{CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_GLOBAL}));

  // Later launches of the key time nothing: one launch each.
  const int queries = fake.elapsed_queries();
  for (int l = 0; l < 3; ++l) ASSERT_TRUE(launch(kernel).ok());
  EXPECT_EQ(fake.elapsed_queries(), queries);
  EXPECT_EQ(fake.launches().size(), launches.size() + 3);
  EXPECT_EQ(config_of(fake.launches().back(), kN), "256/8");
}

TEST_F(AutotuneTest, ConfigsFarBehindTheBestAfterTheQuickTimingAreNotTimedInFull) {
  // The default config (1024/4) is timed first, in full; the others against the best so far.
  times = {{{1024, 4}, 0.10f}, {{256, 4}, 0.50f}, {{256, 8}, 0.09f}, {{1024, 8}, 0.60f}};
  AutotunedAdd add;
  Kernel kernel(add.table.kernel);
  ASSERT_TRUE(launch(kernel).ok());
  std::map<std::string, int> launches_per_config;
  for (const RecordedLaunch& launch : fake.launches()) ++launches_per_config[config_of(launch, kN)];
  // Full timing is 30 ms (5 warm-up, 25 reps); quick 2 ms: a config at 0.5 ms gets a few launches.
  EXPECT_GT(launches_per_config["1024/4"], 100);
  EXPECT_GT(launches_per_config["256/8"], 100);
  EXPECT_LT(launches_per_config["256/4"], 12);
  EXPECT_LT(launches_per_config["1024/8"], 12);
  EXPECT_EQ(config_of(fake.launches().back(), kN), "256/8");
}

TEST_F(AutotuneTest, LeadersAreComparedInInterleavedRoundsSoThatClockDriftDoesNotChoose) {
  // 256/8 is 2% faster than 1024/4, but the GPU slows as it runs (0.01% a launch): timed one after
  // the other, 256/8 (timed later) looks slower; in interleaved rounds both drift alike.
  times = {{{1024, 4}, 0.100f}, {{256, 4}, 0.200f}, {{256, 8}, 0.098f}, {{1024, 8}, 0.200f}};
  int timed_launches = 0;
  fake.launch_ms = [&](const RecordedLaunch& launch) {
    return config_ms(launch, kN, times) * (1.0f + 1e-4f * static_cast<float>(timed_launches++));
  };
  AutotunedAdd add;
  Kernel kernel(add.table.kernel);
  ASSERT_TRUE(launch(kernel).ok());
  EXPECT_EQ(config_of(fake.launches().back(), kN), "256/8");
}

TEST_F(AutotuneTest, OnlyConfigsThatKeepToTheRequirementsAreTimed) {
  AutotunedAdd add;
  // requires BLOCK_SIZE == 1024
  const table::RuleInstr code[] = {{table::RuleOp::field, 0, 0, 0}, {table::RuleOp::lit, 0, 1024, 0},
                                   {table::RuleOp::eq, 0, 0, 0}};
  const table::RuleProgram requirement{"BLOCK_SIZE == 1024", code, 3};
  add.table.kernel.requirements = &requirement;
  add.table.kernel.requirement_count = 1;
  Kernel kernel(add.table.kernel);
  ASSERT_TRUE(launch(kernel).ok());
  for (const RecordedLaunch& launch : fake.launches()) EXPECT_EQ(config_of(launch, kN).substr(0, 5), "1024/");
  EXPECT_EQ(config_of(fake.launches().back(), kN), "1024/4");
  EXPECT_EQ(choose(kernel)->step, Step::autotuned);
}

TEST_F(AutotuneTest, RestoredBuffersMakeTheCallsResultThatOfAnUntunedLaunch) {
  fake.launches_accumulate = true;  // each launch adds 1 to x[0]: an atomic accumulation
  fake.write_memory(x, {40});
  AutotunedAdd add;
  const std::uint16_t restored[] = {0};  // x
  add.autotune.reset_to_zero = restored;
  add.autotune.reset_count = 1;
  Kernel kernel(add.table.kernel);
  ASSERT_TRUE(launch(kernel).ok());
  unsigned char value = 0;
  ASSERT_EQ(fake.api().cuMemcpyDtoH(&value, x, 1), CUDA_SUCCESS);
  EXPECT_EQ(value, 41);  // the call's launch alone, as untuned
  // Every launch found x as the caller gave it: a copy into x before each.
  const std::vector<RecordedOperation> operations = fake.operations();
  int launches = 0;
  bool restored_since_launch = true;
  for (const RecordedOperation& operation : operations) {
    if (operation.kind == RecordedOperation::Kind::copy && operation.handle == x) restored_since_launch = true;
    if (operation.kind != RecordedOperation::Kind::launch) continue;
    EXPECT_TRUE(restored_since_launch) << "launch " << launches;
    restored_since_launch = false;
    ++launches;
  }
  EXPECT_GT(launches, 10);

  // Without the restore, the timed launches would have accumulated too.
  AutotunedAdd unrestored;
  unrestored.table.kernel.name = "unrestored";
  Kernel careless(unrestored.table.kernel);
  fake.write_memory(x, {40});
  ASSERT_TRUE(launch(careless).ok());
  ASSERT_EQ(fake.api().cuMemcpyDtoH(&value, x, 1), CUDA_SUCCESS);
  EXPECT_NE(value, 41);
}

TEST_F(AutotuneTest, ConcurrentFirstLaunchesOfOneKeyTuneItOnce) {
  AutotunedAdd once;
  Kernel single(once.table.kernel);
  ASSERT_TRUE(launch(single).ok());
  const std::size_t one_tuning = fake.launches().size() - 1;

  AutotunedAdd add;
  add.table.kernel.name = "shared";
  Kernel kernel(add.table.kernel);
  const CUcontext context = reinterpret_cast<CUcontext>(1);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      fake.make_current(context);
      if (!launch(kernel).ok()) ++failures;
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fake.launches().size(), 2 * one_tuning + 1 + 8);
  EXPECT_EQ(config_of(fake.launches().back(), kN), "256/8");
}

TEST_F(AutotuneTest, ALaunchDuringCaptureTakesTheLaterStepsAndWarmupTunesAheadOfIt) {
  AutotunedAdd add;
  Kernel kernel(add.table.kernel);
  fake.set_capturing(kTuneStream, true);
  ASSERT_TRUE(launch(kernel).ok());
  EXPECT_EQ(fake.elapsed_queries(), 0);
  EXPECT_EQ(fake.launches().size(), 1u);
  EXPECT_EQ(config_of(fake.launches().back(), kN), "1024/4");  // the default
  Expected<Choice> refused = kernel.warmup(kTuneStream, args.data(), args.size());
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("warm up before the capture"));

  fake.set_capturing(kTuneStream, false);
  std::size_t variant = 0;
  taot_step step = TAOT_STEP_VARIANT;
  ASSERT_EQ(taot_kernel_warmup(kernel.handle(), kTuneStream, args.data(), args.size(), nullptr, &variant, &step), TAOT_OK);
  EXPECT_EQ(step, TAOT_STEP_AUTOTUNED);
  EXPECT_STREQ(taot_step_name(step), "autotuned at first call");
  EXPECT_EQ(add.table.facts[variant].block, 256);
  const std::size_t after_warmup = fake.launches().size();
  fake.set_capturing(kTuneStream, true);
  ASSERT_TRUE(launch(kernel).ok());
  EXPECT_EQ(fake.launches().size(), after_warmup + 1);
  EXPECT_EQ(config_of(fake.launches().back(), kN), "256/8");
}

TEST_F(AutotuneTest, ADriverThatCannotTimeLaunchesUntunedAndWarmupSaysWhy) {
  fake.edit_api().cuEventElapsedTime = nullptr;  // a driver older than CUDA 12.8
  AutotunedAdd add;
  Kernel kernel(add.table.kernel);
  ASSERT_TRUE(launch(kernel).ok());
  EXPECT_EQ(fake.launches().size(), 1u);
  EXPECT_EQ(config_of(fake.launches().back(), kN), "1024/4");  // the default, as without tuning
  AutotunedAdd again;
  again.table.kernel.name = "again";
  Kernel warmed(again.table.kernel);
  Expected<Choice> refused = warmed.warmup(kTuneStream, args.data(), args.size());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), TAOT_NOT_SUPPORTED);
  EXPECT_THAT(refused.status().message(), HasSubstr("cuEventElapsedTime_v2"));
  ASSERT_TRUE(launch(warmed).ok());  // the key takes the later steps now: no second attempt
  EXPECT_EQ(choose(warmed)->step, Step::fallback);
}

TEST_F(AutotuneTest, ACallThatGivesATimedFieldOrLaunchesNothingIsNotTuned) {
  AutotunedAdd add;
  Kernel kernel(add.table.kernel);
  FieldRequest block[2] = {request(std::optional<std::int64_t>(256)), {}};
  ASSERT_TRUE(kernel.launch(kTuneStream, args.data(), args.size(), Selection::config(block)).ok());
  EXPECT_EQ(fake.elapsed_queries(), 0);
  EXPECT_EQ(kernel.choose(args.data(), args.size(), Selection::config(block))->step, Step::config);
  std::vector<taot_arg> empty = args;
  empty[3] = arg(std::int64_t{0});  // n = 0: a grid of no programs
  ASSERT_TRUE(kernel.launch(kTuneStream, empty.data(), empty.size()).ok());
  EXPECT_EQ(fake.elapsed_queries(), 0);
  EXPECT_TRUE(fake.launches().size() == 1u);  // the config's launch only
}

TEST_F(AutotuneTest, ResetTunesAgainAtTheNextLaunch) {
  AutotunedAdd add;
  Kernel kernel(add.table.kernel);
  ASSERT_TRUE(launch(kernel).ok());
  ASSERT_EQ(choose(kernel)->step, Step::autotuned);
  const int queries = fake.elapsed_queries();
  ASSERT_TRUE(kernel.reset_autotune().ok());
  EXPECT_EQ(choose(kernel)->step, Step::fallback);  // the remembered choice is gone
  ASSERT_TRUE(launch(kernel).ok());
  EXPECT_GT(fake.elapsed_queries(), queries);
  EXPECT_EQ(choose(kernel)->step, Step::autotuned);
}

TEST_F(AutotuneTest, SwitchedOffNothingIsTimed) {
  AutotunedAdd add;
  Kernel kernel(add.table.kernel);
  ASSERT_TRUE(kernel.set_autotune(false).ok());
  ASSERT_TRUE(launch(kernel).ok());
  EXPECT_EQ(fake.elapsed_queries(), 0);
  EXPECT_EQ(choose(kernel)->step, Step::fallback);

  ASSERT_TRUE(kernel.set_autotune(std::nullopt).ok());  // back to the process's: off
  set_autotune(false);
  ASSERT_TRUE(launch(kernel).ok());
  EXPECT_EQ(fake.elapsed_queries(), 0);

  // A kernel whose configs did not come from @triton.autotune: off unless switched on.
  AutotunedAdd spec_configs(false);
  spec_configs.table.kernel.name = "spec_configs";
  Kernel quiet(spec_configs.table.kernel);
  set_autotune(std::nullopt);
  ASSERT_TRUE(launch(quiet).ok());
  EXPECT_EQ(fake.elapsed_queries(), 0);
  set_autotune(true);  // on for every kernel that can be
  ASSERT_TRUE(launch(quiet).ok());
  EXPECT_GT(fake.elapsed_queries(), 0);
  EXPECT_EQ(choose(quiet)->step, Step::autotuned);
  // ... and the choice remembered while it was on is not taken once it is off.
  set_autotune(false);
  EXPECT_EQ(choose(quiet)->step, Step::fallback);
}

TEST_F(AutotuneTest, ResultsPersistPerDeviceAndAreRefusedForAnotherBuildOrLibrary) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::temp_directory_path() / ("taot_autotune_test_" + std::to_string(::getpid()));
  fs::remove_all(folder);
  set_autotune_dir(folder.string());
  AutotunedAdd add;
  {
    Kernel kernel(add.table.kernel);
    ASSERT_TRUE(launch(kernel).ok());
  }
  const fs::path file = folder / "autolib" / "add_kernel" / "Fake_GPU_0.json";
  ASSERT_TRUE(fs::exists(file)) << file;
  Expected<TuningFile> written = read_tuning_file(file.string());
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_EQ(written->kernel, "add_kernel");
  EXPECT_EQ(written->library, "autolib");
  EXPECT_EQ(written->device, "Fake GPU 0");
  EXPECT_EQ(written->key, (std::vector<std::string>{"n_elements"}));
  ASSERT_EQ(written->entries.size(), 1u);
  EXPECT_EQ(written->entries[0].key, (std::vector<std::int64_t>{kN}));
  ASSERT_EQ(written->entries[0].config.size(), 2u);
  EXPECT_EQ(written->entries[0].config[0].name, "BLOCK_SIZE");
  EXPECT_EQ(written->entries[0].config[0].value.integer, 256);
  EXPECT_EQ(written->entries[0].config[1].value.integer, 8);
  // A tuned table like any other: it resolves against the kernel (what taot gen --tuning does).
  EXPECT_TRUE(detail::resolve_tuning(*written, add.table.kernel).ok());

  // The next process (a kernel built anew) reads it and times nothing.
  const int queries = fake.elapsed_queries();
  {
    Kernel again(add.table.kernel);
    Expected<Choice> choice = choose(again);
    ASSERT_TRUE(choice.ok());
    EXPECT_EQ(choice->step, Step::autotuned);
    ASSERT_TRUE(launch(again).ok());
    EXPECT_EQ(fake.elapsed_queries(), queries);
    // Another device (another name) has no results: it tunes its own.
    fake.make_current(fake.add_context(90));
    EXPECT_EQ(choose(again)->step, Step::fallback);
  }

  detail::AutotuneStore store(add.table.kernel);
  TuningFile other_build = *written;
  other_build.library_id = "0123456789abcdef";
  Status refused = store.load(other_build);
  EXPECT_THAT(refused.message(), HasSubstr("timed on another build"));
  TuningFile other_library = *written;
  other_library.library = "elsewhere";
  EXPECT_THAT(store.load(other_library).message(), HasSubstr("names library \"elsewhere\""));
  TuningFile no_device = *written;
  no_device.device.clear();
  EXPECT_THAT(store.load(no_device).message(), HasSubstr("names no device"));
  EXPECT_TRUE(store.load(*written).ok());

  // A stale file (another build's) in the folder is passed over: the key is tuned again.
  std::string text = tuning_file_text(other_build);
  std::ofstream(file) << text;
  {
    Kernel stale(add.table.kernel);
    fake.make_current(reinterpret_cast<CUcontext>(1));
    EXPECT_EQ(choose(stale)->step, Step::fallback);
  }
  fs::remove_all(folder);
}

}  // namespace
}  // namespace taot::testing
