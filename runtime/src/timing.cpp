// The timing loop of taot/timing.h: warm-up by GPU time, the rep estimate, L2 flushes outside the
// timed events, CUDA-graph replays, and the quantiles every summary uses.
#include "taot/timing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "driver_objects.h"
#include "taot/driver_api.h"
#include "timing_hooks.h"

namespace taot {

double quantile(const std::vector<double>& sorted, double q) noexcept {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  const double position = static_cast<double>(sorted.size() - 1) * q;
  const std::size_t below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

Statistics statistics(std::vector<double> samples) {
  Statistics summary;
  if (samples.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return Statistics{nan, nan, nan, nan, nan, nan};
  }
  std::sort(samples.begin(), samples.end());
  summary.min = samples.front();
  summary.p20 = quantile(samples, 0.2);
  summary.median = quantile(samples, 0.5);
  summary.p80 = quantile(samples, 0.8);
  summary.max = samples.back();
  // Neumaier's compensated sum: the mean of many close samples without drift.
  double sum = 0, compensation = 0;
  for (double value : samples) {
    const double next = sum + value;
    compensation += std::fabs(sum) >= std::fabs(value) ? (sum - next) + value : (value - next) + sum;
    sum = next;
  }
  summary.mean = (sum + compensation) / static_cast<double>(samples.size());
  return summary;
}

namespace {

constexpr std::size_t kEventChunk = 256;                           // event pairs waited for at once
constexpr std::uint64_t kFallbackFlushBytes = 256ull * 1024 * 1024;  // Triton's, for a device reporting no L2

// The entry points beyond the required ones that timing calls; graph mode needs the last ones too.
Status missing_entry_point(const driver::Api& api, bool graph, const std::string& who) {
  struct Entry {
    const char* name;
    bool present;
    bool graph_only;
  };
  const Entry entries[] = {
      {"cuEventCreate", api.cuEventCreate != nullptr, false},
      {"cuEventRecord", api.cuEventRecord != nullptr, false},
      {"cuEventSynchronize", api.cuEventSynchronize != nullptr, false},
      {"cuEventElapsedTime_v2", api.cuEventElapsedTime != nullptr, false},
      {"cuEventDestroy_v2", api.cuEventDestroy != nullptr, false},
      {"cuMemAlloc_v2", api.cuMemAlloc != nullptr, false},
      {"cuMemFree_v2", api.cuMemFree != nullptr, false},
      {"cuMemsetD8Async", api.cuMemsetD8Async != nullptr, false},
      {"cuStreamSynchronize", api.cuStreamSynchronize != nullptr, false},
      {"cuStreamCreate", api.cuStreamCreate != nullptr, true},
      {"cuStreamDestroy_v2", api.cuStreamDestroy != nullptr, true},
      {"cuStreamBeginCapture_v2", api.cuStreamBeginCapture != nullptr, true},
      {"cuStreamEndCapture", api.cuStreamEndCapture != nullptr, true},
      {"cuGraphInstantiateWithFlags", api.cuGraphInstantiate != nullptr, true},
      {"cuGraphLaunch", api.cuGraphLaunch != nullptr, true},
      {"cuGraphExecDestroy", api.cuGraphExecDestroy != nullptr, true},
      {"cuGraphDestroy", api.cuGraphDestroy != nullptr, true},
  };
  for (const Entry& entry : entries)
    if (!entry.present && (graph || !entry.graph_only))
      return Status::error(TAOT_NOT_SUPPORTED, who + ": timing" + (graph ? " in graph mode" : "") +
                                                   " needs the driver entry point " + entry.name +
                                                   ", which this CUDA driver lacks (timing needs a CUDA 12.8 or newer driver)");
  return Status();
}

Status check_options(const TimingOptions& options, const std::string& who) {
  const auto bad = [&](const char* name, const std::string& value, const char* rule) {
    return Status::error(TAOT_INVALID_ARGUMENT, who + ": timing option " + name + " = " + value + ": " + rule);
  };
  if (!std::isfinite(options.warmup_ms) || options.warmup_ms < 0)
    return bad("warmup_ms", std::to_string(options.warmup_ms), "must be a finite number of ms, 0 or more");
  if (!std::isfinite(options.rep_ms) || options.rep_ms < 0)
    return bad("rep_ms", std::to_string(options.rep_ms), "must be a finite number of ms, 0 or more");
  if (options.reps < 0) return bad("reps", std::to_string(options.reps), "must be 0 (fit rep_ms) or more");
  if (options.max_reps < 1) return bad("max_reps", std::to_string(options.max_reps), "must be at least 1");
  if (options.launches_per_rep < 1)
    return bad("launches_per_rep", std::to_string(options.launches_per_rep), "must be at least 1");
  if (options.flush_bytes < 0)
    return bad("flush_bytes", std::to_string(options.flush_bytes), "must be 0 (twice the L2) or more");
  return Status();
}

// Ends a capture left open by a failure, dropping what it captured.
class CaptureGuard {
 public:
  CaptureGuard(const driver::Api& api, CUstream stream) noexcept : api_(api), stream_(stream) {}
  ~CaptureGuard() {
    if (!open_) return;
    CUgraph graph = nullptr;
    (void)api_.cuStreamEndCapture(stream_, &graph);
    if (graph != nullptr) (void)api_.cuGraphDestroy(graph);
  }
  CaptureGuard(const CaptureGuard&) = delete;
  CaptureGuard& operator=(const CaptureGuard&) = delete;
  void closed() noexcept { open_ = false; }

 private:
  const driver::Api& api_;
  CUstream stream_;
  bool open_ = true;
};

// One time_launches call: the driver objects it owns and the steps of taot/timing.h.
class Timer {
 public:
  Timer(const driver::Api& api, Kernel& kernel, CUstream stream, const taot_arg* args, std::size_t arg_count,
        const Selection& selection, const Grid* grid, const TimingOptions& options, std::string who,
        const detail::BeforeLaunch& before_launch)
      : api_(api), kernel_(kernel), stream_(stream), args_(args), arg_count_(arg_count), selection_(selection),
        grid_(grid), options_(options), who_(std::move(who)), before_launch_(before_launch) {}

  // Step 1 and 2: the untimed launch, the flush buffer, the graph.
  Status prepare(Timings& timings) {
    if (Status status = driver_call(api_.cuStreamSynchronize(stream_), "cuStreamSynchronize"); !status.ok()) return status;
    CUstream first_stream = stream_;
    if (options_.graph) {
      CUstream capture = nullptr;
      if (Status status = driver_call(api_.cuStreamCreate(&capture, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
          !status.ok())
        return status;
      capture_stream_ = detail::Stream(api_, capture);
      first_stream = capture;
    }
    if (Status status = prepare_launch(first_stream); !status.ok()) return status;
    if (Status status = launch(first_stream); !status.ok()) return status;
    if (Status status = driver_call(api_.cuStreamSynchronize(first_stream), "cuStreamSynchronize"); !status.ok())
      return status;
    if (options_.flush_l2) {
      Expected<std::uint64_t> bytes = flush_size();
      if (!bytes.ok()) return std::move(bytes).take_status();
      CUdeviceptr buffer = 0;
      if (Status status = driver_call(api_.cuMemAlloc(&buffer, *bytes), "cuMemAlloc (the L2 flush buffer)");
          !status.ok())
        return std::move(status).with_context(std::to_string(*bytes) + " bytes");
      flush_buffer_ = detail::DeviceMemory(api_, buffer);
      flush_bytes_ = *bytes;
      timings.flush_bytes = *bytes;
    }
    return options_.graph ? capture_graph() : Status();
  }

  // Step 3; sets `per_rep_ms` to the last batch's GPU time per rep.
  Status warm_up(Timings& timings, double& per_rep_ms) {
    detail::Event start, stop;
    if (Status status = make_event(start); !status.ok()) return status;
    if (Status status = make_event(stop); !status.ok()) return status;
    const std::uint64_t limit = static_cast<std::uint64_t>(options_.max_reps);
    std::uint64_t batch = 1, done = 0;
    double total = 0;
    for (;;) {
      if (Status status = record(start); !status.ok()) return status;
      for (std::uint64_t r = 0; r < batch; ++r)
        if (Status status = rep(); !status.ok()) return status;
      if (Status status = record(stop); !status.ok()) return status;
      Expected<double> elapsed = elapsed_ms(start, stop);
      if (!elapsed.ok()) return std::move(elapsed).take_status();
      total += *elapsed;
      done += batch;
      per_rep_ms = *elapsed / static_cast<double>(batch);
      if (total >= options_.warmup_ms || done >= limit) break;
      // Enough reps for the time left at the last batch's pace, at most twice the last batch.
      const double wanted = per_rep_ms > 0 ? std::ceil((options_.warmup_ms - total) / per_rep_ms)
                                           : static_cast<double>(2 * batch);
      batch = static_cast<std::uint64_t>(std::clamp(wanted, 1.0, static_cast<double>(2 * batch)));
      batch = std::min(batch, limit - done);
    }
    timings.warmup_reps = static_cast<std::size_t>(done);
    timings.warmup_ms = total;
    return Status();
  }

  // Step 4: `reps` reps, each between its own pair of events, waited for a chunk at a time.
  Status time_reps(std::uint64_t reps, Timings& timings) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(reps, kEventChunk));
    std::vector<detail::Event> starts(chunk), stops(chunk);
    for (std::size_t e = 0; e < chunk; ++e) {
      if (Status status = make_event(starts[e]); !status.ok()) return status;
      if (Status status = make_event(stops[e]); !status.ok()) return status;
    }
    timings.ms.reserve(static_cast<std::size_t>(reps));
    const double launches = static_cast<double>(options_.launches_per_rep);
    for (std::uint64_t first = 0; first < reps; first += chunk) {
      const std::size_t count = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, reps - first));
      for (std::size_t e = 0; e < count; ++e) {
        if (Status status = prepare_launch(stream_); !status.ok()) return status;
        if (Status status = flush(); !status.ok()) return status;
        if (Status status = record(starts[e]); !status.ok()) return status;
        if (Status status = body(); !status.ok()) return status;
        if (Status status = record(stops[e]); !status.ok()) return status;
      }
      for (std::size_t e = 0; e < count; ++e) {
        Expected<double> elapsed = elapsed_ms(starts[e], stops[e]);
        if (!elapsed.ok()) return std::move(elapsed).take_status();
        timings.ms.push_back(*elapsed / launches);
      }
    }
    return Status();
  }

 private:
  Status driver_call(CUresult result, const char* call) const {
    if (result == CUDA_SUCCESS) return Status();
    return driver::call_error(api_, call, result).with_context(who_ + ": timing");
  }

  Status launch(CUstream on) {
    return grid_ != nullptr ? kernel_.launch(on, args_, arg_count_, selection_, *grid_)
                            : kernel_.launch(on, args_, arg_count_, selection_);
  }

  Expected<std::uint64_t> flush_size() const {
    if (options_.flush_bytes > 0) return static_cast<std::uint64_t>(options_.flush_bytes);
    CUdevice device = 0;
    if (Status status = driver_call(api_.cuCtxGetDevice(&device), "cuCtxGetDevice"); !status.ok()) return status;
    int l2_bytes = 0;
    if (Status status = driver_call(api_.cuDeviceGetAttribute(&l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device),
                                    "cuDeviceGetAttribute (L2 cache size)");
        !status.ok())
      return status;
    return l2_bytes > 0 ? 2 * static_cast<std::uint64_t>(l2_bytes) : kFallbackFlushBytes;
  }

  Status capture_graph() {
    const CUstream capture = capture_stream_.get();
    if (Status status = driver_call(api_.cuStreamBeginCapture(capture, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                                    "cuStreamBeginCapture");
        !status.ok())
      return status;
    CaptureGuard guard(api_, capture);
    for (std::int64_t l = 0; l < options_.launches_per_rep; ++l)
      if (Status status = launch(capture); !status.ok()) return std::move(status).with_context("while capturing a CUDA graph");
    CUgraph captured = nullptr;
    guard.closed();
    const CUresult ended = api_.cuStreamEndCapture(capture, &captured);
    detail::Graph graph(api_, captured);
    if (Status status = driver_call(ended, "cuStreamEndCapture"); !status.ok()) return status;
    CUgraphExec exec = nullptr;
    if (Status status = driver_call(api_.cuGraphInstantiate(&exec, graph.get(), 0), "cuGraphInstantiateWithFlags");
        !status.ok())
      return status;
    graph_exec_ = detail::GraphExec(api_, exec);
    graph_ = std::move(graph);
    return Status();
  }

  Status make_event(detail::Event& event) const {
    CUevent handle = nullptr;
    if (Status status = driver_call(api_.cuEventCreate(&handle, CU_EVENT_DEFAULT), "cuEventCreate"); !status.ok())
      return status;
    event = detail::Event(api_, handle);
    return Status();
  }

  Status record(const detail::Event& event) const {
    return driver_call(api_.cuEventRecord(event.get(), stream_), "cuEventRecord");
  }

  Expected<double> elapsed_ms(const detail::Event& start, const detail::Event& stop) const {
    if (Status status = driver_call(api_.cuEventSynchronize(stop.get()), "cuEventSynchronize"); !status.ok())
      return status;
    float ms = 0;
    if (Status status = driver_call(api_.cuEventElapsedTime(&ms, start.get(), stop.get()), "cuEventElapsedTime");
        !status.ok())
      return status;
    return static_cast<double>(ms);
  }

  Status flush() const {
    if (!options_.flush_l2) return Status();
    return driver_call(api_.cuMemsetD8Async(flush_buffer_.get(), 0, flush_bytes_, stream_), "cuMemsetD8Async (L2 flush)");
  }

  // What a rep times: the launches, or one replay of the graph of them.
  Status body() {
    if (options_.graph) return driver_call(api_.cuGraphLaunch(graph_exec_.get(), stream_), "cuGraphLaunch");
    for (std::int64_t l = 0; l < options_.launches_per_rep; ++l)
      if (Status status = launch(stream_); !status.ok()) return status;
    return Status();
  }

  Status prepare_launch(CUstream on) const {
    return before_launch_ ? before_launch_(on) : Status();
  }

  Status rep() {
    if (Status status = prepare_launch(stream_); !status.ok()) return status;
    if (Status status = flush(); !status.ok()) return status;
    return body();
  }

  const driver::Api& api_;
  Kernel& kernel_;
  CUstream stream_;
  const taot_arg* args_;
  std::size_t arg_count_;
  const Selection& selection_;
  const Grid* grid_;
  const TimingOptions& options_;
  std::string who_;
  const detail::BeforeLaunch& before_launch_;
  // Destroyed in reverse order: the executable graph before its graph, both before the stream.
  detail::Stream capture_stream_;
  detail::DeviceMemory flush_buffer_;
  std::uint64_t flush_bytes_ = 0;
  detail::Graph graph_;
  detail::GraphExec graph_exec_;
};

}  // namespace

Status detail::timing_supported(const driver::Api& api, const std::string& who) {
  return missing_entry_point(api, /*graph=*/false, who);
}

Expected<Timings> time_launches(Kernel& kernel, CUstream stream, const taot_arg* args, std::size_t arg_count,
                                const Selection& selection, const Grid* grid, const TimingOptions& options) {
  return detail::time_launches(kernel, stream, args, arg_count, selection, grid, options, detail::BeforeLaunch());
}

Expected<Timings> detail::time_launches(Kernel& kernel, CUstream stream, const taot_arg* args, std::size_t arg_count,
                                        const Selection& selection, const Grid* grid, const TimingOptions& options,
                                        const BeforeLaunch& before_launch) {
  const std::string who = std::string(kernel.table().library) + "::" + kernel.table().name;
  if (Status status = check_options(options, who); !status.ok()) return status;
  Expected<const driver::Api*> loaded = driver::get();
  if (!loaded.ok()) return std::move(loaded).take_status().with_context(who);
  const driver::Api& api = **loaded;
  if (Status status = missing_entry_point(api, options.graph, who); !status.ok()) return status;
  CUcontext context = nullptr;
  if (api.cuCtxGetCurrent(&context) != CUDA_SUCCESS || context == nullptr)
    return Status::error(TAOT_NO_CONTEXT, who + ": timing needs a current CUDA context (make one current first)");
  CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
  if (const CUresult result = api.cuStreamIsCapturing(stream, &capturing); result != CUDA_SUCCESS)
    return driver::call_error(api, "cuStreamIsCapturing", result).with_context(who + ": timing");
  if (capturing != CU_STREAM_CAPTURE_STATUS_NONE)
    return Status::error(TAOT_INVALID_ARGUMENT, who + ": cannot time on a stream that is capturing a CUDA graph "
                                                      "(timing events and replays are not capturable); time outside "
                                                      "the capture");
  Expected<Choice> choice = kernel.choose(args, arg_count, selection);
  if (!choice.ok()) return std::move(choice).take_status();

  Timings timings;
  timings.choice = *choice;
  Timer timer(api, kernel, stream, args, arg_count, selection, grid, options, who, before_launch);
  if (Status status = timer.prepare(timings); !status.ok()) return status;
  double per_rep_ms = 0;
  if (Status status = timer.warm_up(timings, per_rep_ms); !status.ok()) return status;
  std::uint64_t reps = static_cast<std::uint64_t>(options.reps);
  if (reps == 0) {
    const double fit = per_rep_ms > 0 ? std::floor(options.rep_ms / per_rep_ms) : static_cast<double>(options.max_reps);
    reps = static_cast<std::uint64_t>(std::clamp(fit, 1.0, static_cast<double>(options.max_reps)));
  }
  if (Status status = timer.time_reps(reps, timings); !status.ok()) return status;
  timings.stats = statistics(timings.ms);
  return timings;
}

}  // namespace taot
