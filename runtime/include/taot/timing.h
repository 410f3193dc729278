// Timing launches on the GPU: the loop that `taot bench`, `taot tune` and a kernel's Python
// time() stand on. It runs in C++ on the production launch path (Kernel::launch), measures with
// CUDA events through the driver seam, warms up by GPU time, flushes the L2 before every timed rep
// (plain launches and CUDA-graph replays alike), and summarizes with quantiles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "taot/runtime.h"

namespace taot {

// The timing options, listed once: X(type, name, default). TimingOptions has one member per entry;
// the Python module takes each as a keyword of time() with the same name and default.
//  warmup_ms:        GPU time to spend warming up (reps as timed below, results dropped); at least
//                    one rep runs whatever its value.
//  reps:             timed reps; 0: as many as fit in rep_ms (at least 1, at most max_reps).
//  rep_ms:           with reps = 0, the GPU time the timed reps may take, flushes included (as
//                    triton.testing.do_bench counts it).
//  max_reps:         the most reps the warm-up and the rep estimate make (a given `reps` is kept).
//  launches_per_rep: launches between one rep's two events; a rep's time is divided by it.
//  flush_l2:         before every rep, outside its events, overwrite a buffer larger than the L2.
//  flush_bytes:      the flush buffer's size; 0: twice the device's L2 (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).
//  graph:            capture launches_per_rep launches into one CUDA graph and time its replays.
#define TAOT_TIMING_OPTIONS(X)              \
  X(double, warmup_ms, 25.0)                \
  X(std::int64_t, reps, 0)                  \
  X(double, rep_ms, 100.0)                  \
  X(std::int64_t, max_reps, 100000)         \
  X(std::int64_t, launches_per_rep, 1)      \
  X(bool, flush_l2, true)                   \
  X(std::int64_t, flush_bytes, 0)           \
  X(bool, graph, false)

struct TimingOptions {
#define TAOT_TIMING_OPTION_MEMBER(type, name, default_value) type name = default_value;
  TAOT_TIMING_OPTIONS(TAOT_TIMING_OPTION_MEMBER)
#undef TAOT_TIMING_OPTION_MEMBER
};

// A summary of samples, all in the samples' unit (ms for timings).
struct Statistics {
  double min = 0, p20 = 0, median = 0, p80 = 0, max = 0, mean = 0;
};

// The q-quantile (0 <= q <= 1) of `sorted` (ascending, non-empty): with h = (n - 1) * q, the
// linear interpolation between the order statistics around h,
// sorted[floor(h)] + (h - floor(h)) * (sorted[floor(h) + 1] - sorted[floor(h)]).
// numpy's default (method="linear", Hyndman and Fan's type 7), torch.quantile's, do_bench's, and
// python/taot/measure/stats.py's quantile(). q is clamped to [0, 1]; an empty list gives NaN.
double quantile(const std::vector<double>& sorted, double q) noexcept;

// min, quantile() at 0.2, 0.5 and 0.8, max and the mean of `samples` (in any order); all NaN
// when there are none.
Statistics statistics(std::vector<double> samples);

// What time_launches measured.
struct Timings {
  std::vector<double> ms;   // per launch: each timed rep's time / launches_per_rep, in rep order
  Statistics stats;         // of `ms`
  std::size_t warmup_reps = 0;
  double warmup_ms = 0;     // GPU time the warm-up took, by events
  std::uint64_t flush_bytes = 0;  // 0 when flush_l2 was off
  Choice choice{};          // the variant launched and the step that chose it
};

// Times launches of `kernel` with `args` (as Kernel::launch takes them; `grid` null: the kernel's
// grid) on `stream` of the current context. In order:
//  1. one untimed launch on the stream the launches will be made on (loads the module and grows
//     the scratch buffer outside any capture), then waits for it;
//  2. graph mode: capture launches_per_rep launches on a private stream into one graph and
//     instantiate it (the caller's stream is never put in capture mode);
//  3. warm-up: batches of reps, each batch between two events and waited for, of 1, then up to
//     twice the last batch, sized by the last batch's time per rep, until warmup_ms of GPU time
//     (or max_reps reps) has run;
//  4. the timed reps, each: [flush memset], start event, launches_per_rep launches (plain) or one
//     graph replay (graph mode), stop event. The flush is stream-ordered before the start event,
//     so it is never in the measurement; after it, the rep's first launch finds its data out of L2
//     (later launches of the same rep may find it in L2, in both modes).
// With reps = 0 the count is rep_ms / (GPU time per rep of the last warm-up batch, flush included).
// Events are waited for in chunks; no host code but the driver calls runs between launches. A
// plain rep of a kernel shorter than its launch's host cost, without a flush, also measures the
// host's launch latency (the GPU waits for the launch); graph mode or launches_per_rep > 1 do not.
//
// `stream` must not be capturing a CUDA graph (TAOT_INVALID_ARGUMENT): replays and timing events
// cannot be captured. Needs a current context (TAOT_NO_CONTEXT) and the timing entry points of the
// driver (TAOT_NOT_SUPPORTED naming the one missing: a driver older than CUDA 12.8). Bad options
// are TAOT_INVALID_ARGUMENT naming the option; launch and driver errors name the kernel (and the
// variant, for launches). Every driver object made (events, flush buffer, stream, graph) is
// destroyed before it returns, also on failure. In graph mode a kernel needing global scratch keeps
// the buffer of the private stream until release_scratch(). Thread-safe as launches are; timing
// two kernels on one GPU at once measures both.
Expected<Timings> time_launches(Kernel& kernel, CUstream stream, const taot_arg* args, std::size_t arg_count,
                                const Selection& selection, const Grid* grid, const TimingOptions& options);

}  // namespace taot
