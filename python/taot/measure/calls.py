# What `taot bench` and `taot tune` share: a bench file's call as the generated module takes it, its
# outputs, comparing them with the reference, and timing settings. Kernels are timed by their
# module's time() (the C++ loop of taot/timing.h); Python callables (baselines) by time_callable(),
# the same method with torch's CUDA events.
import dataclasses
import math

from ..errors import TaotError


@dataclasses.dataclass(frozen=True)
class TimingSettings:
    """How calls are timed: the keywords of a kernel's time() (TAOT_TIMING_OPTIONS, same names and
    meanings) that the commands expose."""
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    reps: int = 0
    flush_l2: bool = True
    graph: bool = False
    launches_per_rep: int = 1

    def keywords(self):
        return dataclasses.asdict(self)

    def describe(self):
        """For a report's `settings`."""
        return {**self.keywords(), "timer": "CUDA events (taot/timing.h for kernels, torch events for baselines)"}


def positional(call, parameters, where):
    """The call's arguments in `parameters` order (the kernel's runtime arguments): the generated
    module takes arguments by position only. Keyword arguments are placed by name."""
    if not call.kwargs:
        return list(call.args)
    args = list(call.args)
    for name in parameters[len(args):]:
        if name not in call.kwargs:
            raise TaotError(f"{where}: make_args gives no value for argument {name}")
        args.append(call.kwargs[name])
    unknown = sorted(set(call.kwargs) - set(parameters[len(call.args):]))
    if unknown:
        raise TaotError(f"{where}: make_args gives {', '.join(unknown)}, which the kernel does not take "
                        f"(or also gives by position); its arguments: {', '.join(parameters)}")
    return args


def output_positions(kernel_bench, info):
    """The positions of the outputs among the runtime arguments: the bench file's OUTPUTS, else the
    spec's `output = true` arguments (empty when neither names any)."""
    positions = kernel_bench.output_positions(info.parameters)
    if positions is not None:
        return positions
    return tuple(info.parameters.index(name) for name in info.outputs)


class OutputGuard:
    """Keeps copies of a call's outputs as make_args left them, so that every implementation checked
    starts from the same contents (a kernel that accumulates into its output, or writes only some
    rows, sees what the first would have seen)."""

    def __init__(self, args, positions):
        self.args = args
        self.positions = positions
        self.saved = [args[p].clone() if hasattr(args[p], "clone") else None for p in positions]

    def restore(self):
        for position, saved in zip(self.positions, self.saved):
            if saved is not None:
                self.args[position].copy_(saved)

    def outputs(self):
        return [self.args[p] for p in self.positions]


@dataclasses.dataclass(frozen=True)
class Difference:
    """How far an output is from its expected value: the elements outside tolerance, the largest
    absolute and relative errors (NaN in both places counts as equal), and the first element outside
    tolerance (its index, and the two values there; None when all are within)."""
    count: int
    total: int
    max_abs: float
    max_rel: float
    first: tuple = None
    first_values: tuple = None


def output_difference(got, want, tolerance):
    """The Difference of tensor `got` from `want` (a tensor, or anything torch.as_tensor takes), element
    by element in fp64: outside tolerance when |got - want| > atol + rtol * |want|, or NaN in one
    only. `want` of another shape with as many elements is compared in `got`'s shape; ValueError
    when the counts differ."""
    import torch

    want = want if isinstance(want, torch.Tensor) else torch.as_tensor(want)
    got64, want64 = got.detach().to(torch.float64), want.detach().to(device=got.device, dtype=torch.float64)
    if got64.shape != want64.shape:
        if got64.numel() != want64.numel():
            raise ValueError(f"shape {tuple(got.shape)}, the reference's {tuple(want.shape)}")
        want64 = want64.reshape(got64.shape)
    both_nan = torch.isnan(got64) & torch.isnan(want64)
    difference = torch.where(both_nan, torch.zeros_like(got64), (got64 - want64).abs())
    bad = (difference > tolerance.atol + tolerance.rtol * want64.abs()) | (torch.isnan(got64) != torch.isnan(want64))
    if not difference.numel():
        return Difference(0, 0, 0.0, 0.0)
    relative = torch.where(want64 == 0, torch.zeros_like(difference), difference / want64.abs().clamp_min(1e-30))
    count = int(bad.sum().item())
    first = first_values = None
    if count:
        flat = int(torch.nonzero(bad.reshape(-1))[0].item())
        first = _unravel(flat, tuple(got.shape))
        first_values = (got64.reshape(-1)[flat].item(), want64.reshape(-1)[flat].item())
    return Difference(count, got64.numel(), float(difference.nan_to_num(math.inf).max().item()),
                      float(relative.nan_to_num(math.inf).max().item()), first, first_values)


def _unravel(flat, shape):
    """The index in `shape` of element `flat` of the row-major order."""
    index = []
    for extent in reversed(shape or (1,)):
        index.append(flat % extent)
        flat //= extent
    return tuple(reversed(index))


def compare_outputs(kernel_bench, names, actual, expected):
    """Problems of `actual` (the outputs after a call) against `expected` (the reference's, same
    order), each a line naming the output, the first element outside the file's tolerance and the
    tolerance; empty when all pass (output_difference says how elements compare)."""
    problems = []
    for name, got, want in zip(names, actual, expected):
        tolerance = kernel_bench.tolerance_for(got.dtype)
        try:
            found = output_difference(got, want, tolerance)
        except ValueError as error:
            problems.append(f"{name}: {error}")
            continue
        if found.count:
            problems.append(f"{name}: {found.count} of {found.total} elements differ beyond atol={tolerance.atol:g} "
                            f"rtol={tolerance.rtol:g}; first at {list(found.first)}: {found.first_values[0]:.6g} vs "
                            f"{found.first_values[1]:.6g}")
    return problems


# The L2 flush of time_callable: a buffer zeroed before every rep, twice the L2 as the C++ loop sizes it.
def _flush_buffer(torch, device):
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 << 20) or (50 << 20)
    return torch.empty(2 * l2 // 4, dtype=torch.int32, device=device)


def time_callable(function, settings, device="cuda"):
    """Times `function()` (work launched on torch's current stream, not synchronised) as the C++ loop
    of taot/timing.h times a kernel: one untimed call; in graph mode, launches_per_rep calls captured
    into a torch CUDA graph; warm-up batches until warmup_ms of GPU time; then reps, each
    [flush] start event, launches_per_rep calls (or one replay), stop event. Returns the per-call
    times in ms. A function that cannot be captured in graph mode raises TaotError saying so."""
    import torch

    stream = torch.cuda.current_stream(device)
    function()
    torch.cuda.synchronize(device)
    per_rep = max(1, settings.launches_per_rep)
    replay = function
    graph = None
    if settings.graph:
        graph = torch.cuda.CUDAGraph()
        try:
            capture_stream = torch.cuda.Stream(device)
            capture_stream.wait_stream(stream)
            with torch.cuda.stream(capture_stream), torch.cuda.graph(graph, stream=capture_stream):
                for _ in range(per_rep):
                    function()
            stream.wait_stream(capture_stream)
        except Exception as error:  # a function that synchronises or allocates cannot be captured
            raise TaotError(f"cannot capture it in a CUDA graph ({type(error).__name__}: {error}); "
                            f"time it without --graph") from None
        replay = graph.replay
    flush = _flush_buffer(torch, device) if settings.flush_l2 else None

    def rep_events(count):
        pairs = []
        for _ in range(count):
            if flush is not None:
                flush.zero_()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            if graph is not None:
                replay()
            else:
                for _ in range(per_rep):
                    function()
            stop.record(stream)
            pairs.append((start, stop))
        stop.synchronize()
        return [start.elapsed_time(stop) for start, stop in pairs]

    # Warm-up: batches of 1, 2, 4, ... reps until warmup_ms of GPU time has run.
    spent, batch, last_per_rep = 0.0, 1, None
    while True:
        times = rep_events(batch)
        spent += sum(times)
        last_per_rep = sum(times) / len(times)
        if spent >= settings.warmup_ms or batch >= 4096:
            break
        batch *= 2
    reps = settings.reps or max(1, min(100000, int(settings.rep_ms / max(last_per_rep, 1e-6))))
    return [t / per_rep for t in rep_events(reps)]
