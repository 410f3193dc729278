// The timing loop against the fake driver: warm-up stopped by scripted GPU time, the rep count
// estimated from the warm-up, a flush before every rep and never between a rep's events, graph
// capture on a private stream and replays between the events, refusals and errors that name the
// kernel and the missing entry point, every driver object released; quantiles against a
// brute-force reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "add_call.h"
#include "fake_driver.h"
#include "taot/runtime.h"
#include "taot/timing.h"
#include "test_table.h"

namespace taot::testing {
namespace {


// The work put on `stream` outside captures, one letter each: L launch, M memset, E event record,
// G graph replay.
std::string work_on(const FakeDriver& fake, CUstream stream) {
  std::string letters;
  for (const RecordedOperation& operation : fake.operations()) {
    if (operation.stream != stream) continue;
    switch (operation.kind) {
      case RecordedOperation::Kind::launch: letters += 'L'; break;
      case RecordedOperation::Kind::memset: letters += 'M'; break;
      case RecordedOperation::Kind::event_record: letters += 'E'; break;
      case RecordedOperation::Kind::graph_launch: letters += 'G'; break;
      case RecordedOperation::Kind::copy: letters += 'C'; break;
    }
  }
  return letters;
}

std::string repeat(const std::string& text, int times) {
  std::string result;
  for (int t = 0; t < times; ++t) result.append(text);
  return result;
}

std::string cat(std::initializer_list<std::string> pieces) {
  std::string result;
  for (const std::string& piece : pieces) result.append(piece);
  return result;
}

class TimingTest : public ::testing::Test {
 protected:
  TimingTest() { fake.make_current(fake.add_context(90)); }

  Expected<Timings> time(const TimingOptions& options, CUstream stream = kStream) {
    return time_launches(kernel, stream, args.data(), args.size(), Selection::automatic(), nullptr, options);
  }

  // Nothing the timing made is left: events, streams, graphs, the flush buffer.
  void expect_all_released() {
    EXPECT_EQ(fake.live_events(), 0);
    EXPECT_EQ(fake.live_streams(), 0);
    for (const RecordedGraph& graph : fake.graphs()) EXPECT_TRUE(graph.destroyed);
    for (const RecordedGraphExec& exec : fake.graph_execs()) EXPECT_TRUE(exec.destroyed);
    for (const RecordedAllocation& allocation : fake.allocations()) EXPECT_TRUE(allocation.freed);
  }

  FakeDriver fake;
  AddKernelTable table;
  Kernel kernel{table.kernel};
  std::vector<taot_arg> args = add_args(5000);
};

TEST_F(TimingTest, WarmUpStopsOnceTheScriptedGpuTimeReachesWarmupMs) {
  TimingOptions options;
  options.warmup_ms = 5;
  options.reps = 3;
  options.flush_l2 = false;
  // Warm-up batches of 1, 2 and 2 reps at 1 ms a rep reach 5 ms; then three timed reps.
  fake.script_elapsed({1.0f, 2.0f, 2.0f, 0.5f, 0.5f, 0.5f});
  Expected<Timings> timings = time(options);
  ASSERT_TRUE(timings.ok()) << timings.status().message();
  EXPECT_EQ(timings->warmup_reps, 5u);
  EXPECT_DOUBLE_EQ(timings->warmup_ms, 5.0);
  EXPECT_EQ(timings->ms, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(fake.elapsed_queries(), 6);
  // The untimed first launch, the three warm-up batches, the three reps.
  EXPECT_EQ(work_on(fake, kStream), cat({"L", "ELE", "ELLE", "ELLE", repeat("ELE", 3)}));
  expect_all_released();
}

TEST_F(TimingTest, WarmUpBatchesAtMostDoubleAndAreSizedByTheTimeLeft) {
  TimingOptions options;
  options.warmup_ms = 100;
  options.reps = 1;
  options.flush_l2 = false;
  // 1 ms a rep: batches 1, 2, 4, 8, 16, 32 (63 ms), then the 37 reps that make 100 ms.
  fake.script_elapsed({1, 2, 4, 8, 16, 32, 37});
  Expected<Timings> timings = time(options);
  ASSERT_TRUE(timings.ok()) << timings.status().message();
  EXPECT_EQ(timings->warmup_reps, 100u);
  EXPECT_DOUBLE_EQ(timings->warmup_ms, 100.0);
  std::string warm_up;
  for (int batch : {1, 2, 4, 8, 16, 32, 37}) warm_up.append("E").append(static_cast<std::size_t>(batch), 'L').append("E");
  EXPECT_EQ(work_on(fake, kStream), cat({"L", warm_up, "ELE"}));
}

TEST_F(TimingTest, WarmUpRunsAtLeastOnceAndStopsAtMaxRepsWhenTimeDoesNotPass) {
  TimingOptions options;
  options.warmup_ms = 0;
  options.reps = 2;
  options.flush_l2 = false;
  Expected<Timings> once = time(options);
  ASSERT_TRUE(once.ok()) << once.status().message();
  EXPECT_EQ(once->warmup_reps, 1u);

  // Events that measure nothing (an empty kernel, a coarse clock) must not keep it warming up
  // forever, nor make the rep count unbounded.
  fake.default_elapsed_ms = 0;
  options.warmup_ms = 25;
  options.reps = 0;
  options.max_reps = 10;
  Expected<Timings> capped = time(options);
  ASSERT_TRUE(capped.ok()) << capped.status().message();
  EXPECT_EQ(capped->warmup_reps, 10u);
  EXPECT_EQ(capped->ms.size(), 10u);
}

TEST_F(TimingTest, RepCountIsRepMsOverTheLastWarmUpBatchsTimePerRep) {
  TimingOptions options;
  options.warmup_ms = 0.5;
  options.rep_ms = 10;
  options.flush_l2 = false;
  // Two warm-up batches of one rep at 0.25 ms: 10 ms holds 40 reps.
  fake.script_elapsed({0.25f, 0.25f});
  Expected<Timings> fitted = time(options);
  ASSERT_TRUE(fitted.ok()) << fitted.status().message();
  EXPECT_EQ(fitted->warmup_reps, 2u);
  EXPECT_EQ(fitted->ms.size(), 40u);

  options.max_reps = 16;  // capped
  fake.script_elapsed({0.25f, 0.25f});
  Expected<Timings> capped = time(options);
  ASSERT_TRUE(capped.ok()) << capped.status().message();
  EXPECT_EQ(capped->ms.size(), 16u);

  options.max_reps = 100000;
  options.rep_ms = 0.1;  // less than one rep: one
  fake.script_elapsed({0.25f, 0.25f});
  Expected<Timings> one = time(options);
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->ms.size(), 1u);

  options.reps = 7;  // given: kept, rep_ms is not consulted
  fake.script_elapsed({0.25f, 0.25f});
  Expected<Timings> given = time(options);
  ASSERT_TRUE(given.ok()) << given.status().message();
  EXPECT_EQ(given->ms.size(), 7u);
}

TEST_F(TimingTest, TimesArePerLaunchInRepOrderAndSummarized) {
  TimingOptions options;
  options.warmup_ms = 0;
  options.reps = 5;
  options.launches_per_rep = 4;
  options.flush_l2 = false;
  fake.script_elapsed({1.0f, 4.0f, 8.0f, 12.0f, 16.0f, 40.0f});  // one warm-up batch, then the reps
  Expected<Timings> timings = time(options);
  ASSERT_TRUE(timings.ok()) << timings.status().message();
  EXPECT_EQ(timings->ms, (std::vector<double>{1, 2, 3, 4, 10}));
  EXPECT_DOUBLE_EQ(timings->stats.min, 1);
  EXPECT_DOUBLE_EQ(timings->stats.p20, 1.8);  // h = 0.8
  EXPECT_DOUBLE_EQ(timings->stats.median, 3);
  EXPECT_DOUBLE_EQ(timings->stats.p80, 5.2);  // h = 3.2
  EXPECT_DOUBLE_EQ(timings->stats.max, 10);
  EXPECT_DOUBLE_EQ(timings->stats.mean, 4);
  EXPECT_EQ(work_on(fake, kStream), cat({"L", "ELLLLE", repeat("ELLLLE", 5)}));
}

TEST_F(TimingTest, TheL2IsFlushedBeforeEveryRepAndNeverBetweenItsEvents) {
  TimingOptions options;
  options.warmup_ms = 0;
  options.reps = 6;
  Expected<Timings> timings = time(options);
  ASSERT_TRUE(timings.ok()) << timings.status().message();
  // Warm-up rep: flush inside the batch's events (its time counts toward warm-up and the estimate);
  // timed reps: the flush, then the events around the launch alone.
  EXPECT_EQ(work_on(fake, kStream), cat({"L", "EMLE", repeat("MELE", 6)}));
  const std::vector<RecordedAllocation> allocations = fake.allocations();
  ASSERT_EQ(allocations.size(), 1u);
  EXPECT_TRUE(allocations[0].synchronous);
  EXPECT_EQ(allocations[0].bytes, 2u * 50 * 1024 * 1024);  // twice the L2
  EXPECT_EQ(timings->flush_bytes, allocations[0].bytes);
  for (const RecordedOperation& operation : fake.operations()) {
    if (operation.kind != RecordedOperation::Kind::memset) continue;
    EXPECT_EQ(operation.handle, allocations[0].address);
    EXPECT_EQ(operation.bytes, allocations[0].bytes);  // the whole buffer
  }
  expect_all_released();
}

TEST_F(TimingTest, FlushBytesCanBeGivenAndTheFlushTurnedOff) {
  TimingOptions options;
  options.warmup_ms = 0;
  options.reps = 2;
  options.flush_bytes = 4096;
  ASSERT_TRUE(time(options).ok());
  ASSERT_EQ(fake.allocations().size(), 1u);
  EXPECT_EQ(fake.allocations()[0].bytes, 4096u);

  options.flush_l2 = false;
  Expected<Timings> plain = time(options);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->flush_bytes, 0u);
  EXPECT_EQ(fake.allocations().size(), 1u);  // no buffer this time
}

TEST_F(TimingTest, GraphModeCapturesOnAPrivateStreamAndTimesReplaysWithTheFlushOutside) {
  TimingOptions options;
  options.warmup_ms = 0;
  options.reps = 4;
  options.launches_per_rep = 3;
  options.graph = true;
  fake.script_elapsed({3.0f, 3.0f, 6.0f, 9.0f, 12.0f});
  Expected<Timings> timings = time(options);
  ASSERT_TRUE(timings.ok()) << timings.status().message();
  EXPECT_EQ(timings->ms, (std::vector<double>{1, 2, 3, 4}));

  const std::vector<CUstream> streams = fake.created_streams();
  ASSERT_EQ(streams.size(), 1u);
  const CUstream capture = streams[0];
  EXPECT_NE(capture, kStream);
  // The untimed launch on the private stream (its module and scratch before capture), then the
  // three launches in the graph; the caller's stream sees only replays, never a launch or capture.
  EXPECT_EQ(work_on(fake, capture), "L");
  const std::vector<RecordedGraph> graphs = fake.graphs();
  ASSERT_EQ(graphs.size(), 1u);
  EXPECT_EQ(graphs[0].captured_on, capture);
  ASSERT_EQ(graphs[0].operations.size(), 3u);
  for (const RecordedOperation& operation : graphs[0].operations) {
    EXPECT_EQ(operation.kind, RecordedOperation::Kind::launch);  // no flush, no event in the graph
  }
  EXPECT_EQ(work_on(fake, kStream), cat({"EMGE", repeat("MEGE", 4)}));
  ASSERT_EQ(fake.graph_execs().size(), 1u);
  for (const RecordedOperation& operation : fake.operations()) {
    if (operation.kind == RecordedOperation::Kind::graph_launch) {
      EXPECT_EQ(operation.handle, 1u);  // the one executable graph
    }
  }
  expect_all_released();
}

TEST_F(TimingTest, GraphModeWorksOnTheNullStream) {
  TimingOptions options;
  options.warmup_ms = 0;
  options.reps = 2;
  options.graph = true;
  options.flush_l2 = false;
  Expected<Timings> timings = time(options, nullptr);
  ASSERT_TRUE(timings.ok()) << timings.status().message();
  EXPECT_EQ(work_on(fake, nullptr), repeat("EGE", 3));
}

TEST_F(TimingTest, AStreamThatIsCapturingIsRefused) {
  fake.set_capturing(kStream, true);
  for (bool graph : {false, true}) {
    TimingOptions options;
    options.graph = graph;
    Expected<Timings> timings = time(options);
    ASSERT_FALSE(timings.ok());
    EXPECT_EQ(timings.status().code(), TAOT_INVALID_ARGUMENT);
    EXPECT_NE(timings.status().message().find("testlib::add_kernel"), std::string::npos) << timings.status().message();
    EXPECT_NE(timings.status().message().find("capturing a CUDA graph"), std::string::npos);
  }
  EXPECT_TRUE(fake.launches().empty());
  EXPECT_EQ(fake.events_created(), 0);
}

TEST_F(TimingTest, AMissingDriverEntryPointIsNamed) {
  const auto expect_named = [&](auto driver::Api::*member, const char* symbol, bool graph_only) {
    driver::Api& api = fake.edit_api();
    const auto saved = api.*member;
    api.*member = nullptr;
    TimingOptions options;
    options.warmup_ms = 0;
    options.reps = 1;
    for (bool graph : {false, true}) {
      options.graph = graph;
      Expected<Timings> timings = time(options);
      if (graph_only && !graph) {
        EXPECT_TRUE(timings.ok()) << symbol << ": " << timings.status().message();
        continue;
      }
      ASSERT_FALSE(timings.ok()) << symbol;
      EXPECT_EQ(timings.status().code(), TAOT_NOT_SUPPORTED);
      EXPECT_NE(timings.status().message().find(std::string("entry point ") + symbol), std::string::npos)
          << timings.status().message();
      EXPECT_NE(timings.status().message().find("testlib::add_kernel"), std::string::npos);
    }
    api.*member = saved;
  };
  expect_named(&driver::Api::cuEventCreate, "cuEventCreate", false);
  expect_named(&driver::Api::cuEventRecord, "cuEventRecord", false);
  expect_named(&driver::Api::cuEventSynchronize, "cuEventSynchronize", false);
  expect_named(&driver::Api::cuEventElapsedTime, "cuEventElapsedTime_v2", false);
  expect_named(&driver::Api::cuEventDestroy, "cuEventDestroy_v2", false);
  expect_named(&driver::Api::cuMemAlloc, "cuMemAlloc_v2", false);
  expect_named(&driver::Api::cuMemFree, "cuMemFree_v2", false);
  expect_named(&driver::Api::cuMemsetD8Async, "cuMemsetD8Async", false);
  expect_named(&driver::Api::cuStreamSynchronize, "cuStreamSynchronize", false);
  expect_named(&driver::Api::cuStreamCreate, "cuStreamCreate", true);
  expect_named(&driver::Api::cuStreamDestroy, "cuStreamDestroy_v2", true);
  expect_named(&driver::Api::cuStreamBeginCapture, "cuStreamBeginCapture_v2", true);
  expect_named(&driver::Api::cuStreamEndCapture, "cuStreamEndCapture", true);
  expect_named(&driver::Api::cuGraphInstantiate, "cuGraphInstantiateWithFlags", true);
  expect_named(&driver::Api::cuGraphLaunch, "cuGraphLaunch", true);
  expect_named(&driver::Api::cuGraphExecDestroy, "cuGraphExecDestroy", true);
  expect_named(&driver::Api::cuGraphDestroy, "cuGraphDestroy", true);
  expect_all_released();
}

TEST_F(TimingTest, LaunchErrorsNameTheKernelAndReleaseEverything) {
  fake.launch_result = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  Expected<Timings> refused = time(TimingOptions{});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), TAOT_CUDA_ERROR);
  const std::string& message = refused.status().message();
  EXPECT_NE(message.find("testlib::add_kernel variant"), std::string::npos) << message;
  EXPECT_NE(message.find("cuLaunchKernel failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"), std::string::npos) << message;
  fake.launch_result = CUDA_SUCCESS;

  // A launch that fails in the middle of the warm-up: events and the flush buffer are released.
  fake.fail_from_launch = fake.launches().size() + 2;  // the untimed launch and one warm-up rep succeed
  TimingOptions options;
  options.warmup_ms = 10;
  Expected<Timings> failed = time(options);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("CUDA_ERROR_LAUNCH_FAILED"), std::string::npos) << failed.status().message();
  EXPECT_NE(failed.status().message().find("testlib::add_kernel"), std::string::npos);
  EXPECT_GT(fake.events_created(), 0);
  expect_all_released();
}

TEST_F(TimingTest, AFailureDuringCaptureEndsTheCaptureAndDropsTheGraph) {
  TimingOptions options;
  options.graph = true;
  options.launches_per_rep = 3;
  fake.fail_from_launch = 2;  // the untimed launch and the first captured one succeed
  Expected<Timings> failed = time(options);
  ASSERT_FALSE(failed.ok());
  const std::string& message = failed.status().message();
  EXPECT_NE(message.find("while capturing a CUDA graph"), std::string::npos) << message;
  EXPECT_NE(message.find("testlib::add_kernel"), std::string::npos) << message;
  ASSERT_EQ(fake.graphs().size(), 1u);
  EXPECT_TRUE(fake.graphs()[0].destroyed);
  // The private stream is no longer capturing: it was destroyed after its capture ended.
  expect_all_released();

  fake.fail_from_launch = ~std::size_t{0};
  fake.graph_instantiate_result = CUDA_ERROR_OUT_OF_MEMORY;
  Expected<Timings> uninstantiated = time(options);
  ASSERT_FALSE(uninstantiated.ok());
  EXPECT_NE(uninstantiated.status().message().find("testlib::add_kernel: timing: cuGraphInstantiateWithFlags failed: "
                                                   "CUDA_ERROR_OUT_OF_MEMORY"),
            std::string::npos)
      << uninstantiated.status().message();
  expect_all_released();
}

TEST_F(TimingTest, BadOptionsAreRefusedByName) {
  const auto expect_refused = [&](TimingOptions options, const char* name) {
    Expected<Timings> timings = time(options);
    ASSERT_FALSE(timings.ok()) << name;
    EXPECT_EQ(timings.status().code(), TAOT_INVALID_ARGUMENT);
    EXPECT_NE(timings.status().message().find(std::string("timing option ") + name), std::string::npos)
        << timings.status().message();
  };
  TimingOptions options;
  options.launches_per_rep = 0;
  expect_refused(options, "launches_per_rep");
  options = TimingOptions{};
  options.warmup_ms = std::numeric_limits<double>::quiet_NaN();
  expect_refused(options, "warmup_ms");
  options = TimingOptions{};
  options.rep_ms = -1;
  expect_refused(options, "rep_ms");
  options = TimingOptions{};
  options.reps = -1;
  expect_refused(options, "reps");
  options = TimingOptions{};
  options.max_reps = 0;
  expect_refused(options, "max_reps");
  options = TimingOptions{};
  options.flush_bytes = -5;
  expect_refused(options, "flush_bytes");
  EXPECT_TRUE(fake.launches().empty());
}

TEST_F(TimingTest, NeedsACurrentContext) {
  fake.make_current(nullptr);
  Expected<Timings> timings = time(TimingOptions{});
  ASSERT_FALSE(timings.ok());
  EXPECT_EQ(timings.status().code(), TAOT_NO_CONTEXT);
  EXPECT_NE(timings.status().message().find("testlib::add_kernel"), std::string::npos);
}

TEST_F(TimingTest, ReportsTheVariantLaunchedAndLaunchesOnTheGridGiven) {
  TimingOptions options;
  options.warmup_ms = 0;
  options.reps = 1;
  FieldRequest fields[2] = {request(std::optional<std::int64_t>(256)), request(std::optional<std::int64_t>(8))};
  const Grid grid{7, 2, 1};
  Expected<Timings> timings =
      time_launches(kernel, kStream, args.data(), args.size(), Selection::config(fields), &grid, options);
  ASSERT_TRUE(timings.ok()) << timings.status().message();
  Expected<Choice> choice = kernel.choose(args.data(), args.size(), Selection::config(fields));
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(timings->choice.variant, choice->variant);
  EXPECT_EQ(timings->choice.step, Step::config);
  for (const RecordedLaunch& launch : fake.launches()) {
    EXPECT_EQ(launch.grid[0], 7u);
    EXPECT_EQ(launch.grid[1], 2u);
    EXPECT_EQ(launch.block[0], 256u);  // num_warps 8
  }
}

// numpy's "linear" quantile as its definition reads: the piecewise-linear function through the
// points (k / (n - 1), x_k), evaluated at q by finding its segment.
double brute_force_quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 1) return values[0];
  for (std::size_t k = 0; k + 1 < n; ++k) {
    const double left = static_cast<double>(k) / static_cast<double>(n - 1);
    const double right = static_cast<double>(k + 1) / static_cast<double>(n - 1);
    if (q >= left && q <= right) return values[k] + (q - left) / (right - left) * (values[k + 1] - values[k]);
  }
  return values[n - 1];
}

TEST(Quantile, MatchesABruteForceReferenceAndNumpysValues) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> value(0.001, 5.0);
  for (std::size_t n = 1; n <= 40; ++n) {
    std::vector<double> samples(n);
    for (double& sample : samples) sample = value(rng);
    if (n % 5 == 0) samples[n / 2] = samples[0];  // ties
    std::vector<double> sorted = samples;
    std::sort(sorted.begin(), sorted.end());
    for (int step = 0; step <= 100; ++step) {
      const double q = step / 100.0;
      EXPECT_NEAR(quantile(sorted, q), brute_force_quantile(samples, q), 1e-12) << "n " << n << " q " << q;
    }
    const Statistics stats = statistics(samples);  // any order in
    EXPECT_DOUBLE_EQ(stats.min, sorted.front());
    EXPECT_DOUBLE_EQ(stats.max, sorted.back());
    EXPECT_NEAR(stats.p20, brute_force_quantile(samples, 0.2), 1e-12);
    EXPECT_NEAR(stats.median, brute_force_quantile(samples, 0.5), 1e-12);
    EXPECT_NEAR(stats.p80, brute_force_quantile(samples, 0.8), 1e-12);
    double sum = 0;
    for (double sample : samples) sum += sample;
    EXPECT_NEAR(stats.mean, sum / static_cast<double>(n), 1e-12);
  }
  // np.quantile([1, 2, 3, 4], 0.2) == 1.6; np.median([3, 1, 4, 1, 5]) == 3; np.quantile(range(1, 11), 0.8) == 8.2.
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4}, 0.2), 1.6);
  EXPECT_DOUBLE_EQ(statistics({3, 1, 4, 1, 5}).median, 3);
  EXPECT_DOUBLE_EQ(statistics({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}).p80, 8.2);
  EXPECT_DOUBLE_EQ(statistics({2, 1}).median, 1.5);
  EXPECT_TRUE(std::isnan(quantile({}, 0.5)));
  EXPECT_TRUE(std::isnan(statistics({}).median));
}

}  // namespace
}  // namespace taot::testing
