// time_launches with work run before every launch it makes (taot/timing.h): first-call autotuning
// restores the buffers a kernel changes, so that every timed run starts from the call's data.
#pragma once

#include <functional>
#include <string>

#include "taot/driver_api.h"
#include "taot/timing.h"

namespace taot::detail {

// Whether the driver has what timing needs (events, the L2 flush, a synchronize): else
// TAOT_NOT_SUPPORTED naming the missing entry point, `who` first.
Status timing_supported(const driver::Api& api, const std::string& who);

// Stream-ordered work on the stream given, enqueued before each launch (or graph replay) of a
// timed run, outside its events, and before the L2 flush; it may not synchronize.
using BeforeLaunch = std::function<Status(CUstream)>;

// time_launches, calling `before_launch` (when non-empty) before the untimed first launch and
// before every warm-up and timed rep. Graph mode captures launches only: the work runs before each
// replay.
Expected<Timings> time_launches(Kernel& kernel, CUstream stream, const taot_arg* args, std::size_t arg_count,
                                const Selection& selection, const Grid* grid, const TimingOptions& options,
                                const BeforeLaunch& before_launch);

}  // namespace taot::detail
