"""The corpus's kernels launched by their own projects, and the same launches replayed through a taot
module.

`record(function, call)` runs `call()` (a project's launcher, e.g. liger's swiglu_forward) with the
kernel `function` ("module:name", as the spec names it) replaced for the duration by a recorder: each
launch the project makes goes to Triton's JIT as before, and is kept as a `Launch` holding the grid,
the arguments bound to the kernel's parameters, the launch options, a copy of every tensor argument
as it was just before the launch, and (for @triton.autotune) the config the JIT ran with.
`replay(launch, taot_function, launch_args)` makes the same launch through taot on the copies, and
`differences(launch, replayed)` names the tensors whose bytes differ."""
import importlib
import inspect

import torch
import triton

OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_pdl")


def innermost(kernel):
    """The @triton.jit function under the decorators (Autotuner, Heuristics and subclasses)."""
    while not isinstance(kernel, triton.runtime.jit.JITFunction):
        kernel = kernel.fn
    return kernel


def tuner(kernel):
    """The kernel's @triton.autotune (or a subclass of it), or None; of a kernel being recorded too."""
    kernel = kernel.kernel if isinstance(kernel, Recorder) else kernel
    while not isinstance(kernel, triton.runtime.jit.JITFunction):
        if isinstance(kernel, triton.runtime.autotuner.Autotuner):
            return kernel
        kernel = kernel.fn
    return None


class Launch:
    """One launch of a kernel by its project."""

    def __init__(self, kernel, grid, args, kwargs):
        jit = innermost(kernel)
        signature = inspect.signature(jit.fn)
        self.parameters = list(signature.parameters)
        self.constexprs = {param.name for param in jit.params if param.is_constexpr}
        named = {key: value for key, value in kwargs.items() if key in signature.parameters}
        self.options = {key: value for key, value in kwargs.items() if key not in signature.parameters}
        self.arguments = dict(signature.bind_partial(*args, **named).arguments)
        self.grid = grid
        self.before = {name: value.clone() for name, value in self.arguments.items() if torch.is_tensor(value)}
        self.config = None  # the autotuner's choice, after the launch

    def grid_values(self):
        """The grid the JIT launched, as a 3-tuple of ints."""
        grid = self.grid
        if callable(grid):
            meta = dict(self.arguments)
            if self.config is not None:
                meta.update(self.config.all_kwargs())
            grid = grid(meta)
        grid = tuple(grid) + (1,) * (3 - len(grid))
        return grid


class Recorder:
    """Stands for a kernel in its module while a project's launcher runs."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.launches = []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            record = Launch(self.kernel, grid, args, kwargs)
            self.launches.append(record)
            result = self.kernel[grid](*args, **kwargs)
            autotuner = tuner(self.kernel)
            if autotuner is not None:
                record.config = autotuner.best_config
            return result
        return launch

    def __getattr__(self, name):  # .fn, .configs, ... as the kernel's
        return getattr(self.kernel, name)


def record(function, call):
    """(call()'s result, [Launch]) with `function` ("module:name") recorded while call() runs."""
    module_name, _, name = function.partition(":")
    module = importlib.import_module(module_name)
    kernel = getattr(module, name)
    recorder = Recorder(kernel)
    setattr(module, name, recorder)
    try:
        result = call()
    finally:
        setattr(module, name, kernel)
    torch.cuda.synchronize()
    return result, recorder.launches


def taot_value(value):
    """A launch argument as the taot module takes it: Triton dtypes by name ("bf16")."""
    return value.name if isinstance(value, triton.language.dtype) else value


def replay(launch, taot_function, launch_args=()):
    """Launches `taot_function` (a kernel of a generated module) as the JIT launch was made, on copies
    of the tensors as they were before it; returns those copies, by parameter name. Values go by
    position in the function's parameter order, as the JIT takes them (constexprs and the autotuner's
    config fields too), then the launch-only arguments (`launch_args`, in the spec's order); options
    the project passed (num_warps=...) go by keyword."""
    tensors = {name: value.clone() for name, value in launch.before.items()}
    values = {name: tensors.get(name, value) for name, value in launch.arguments.items()}
    config = dict(launch.config.kwargs) if launch.config is not None else {}
    positional, keywords = [], {}
    for name in launch.parameters:
        if name in values:
            value = values[name]
        elif name in config:
            value = config.pop(name)
        else:  # a constexpr left at its default: the rest go by keyword
            break
        positional.append(taot_value(value))
    given = len(positional)
    for name in launch.parameters[given:]:
        if name in values:
            keywords[name] = taot_value(values[name])
    if launch_args:
        assert given == len(launch.parameters), \
            f"launch-only arguments follow every parameter; {launch.parameters[given]} was not given"
        positional.extend(launch_args)
    keywords.update(config)
    # Options the spec does not vary are compiled in, not config fields (torchao passes num_ctas=1).
    fields = set(taot_function.variants()[0]["config"])
    keywords.update({key: value for key, value in launch.options.items() if key in OPTIONS and key in fields})
    if launch.config is not None:
        keywords.update({key: getattr(launch.config, key) for key in OPTIONS
                         if key in fields and getattr(launch.config, key, None) is not None})
    taot_function(*positional, **keywords)
    torch.cuda.synchronize()
    return tensors


def bytes_of(tensor):
    return tensor.detach().contiguous().view(-1).view(torch.uint8)


def differences(launch, replayed):
    """The tensor arguments whose contents after the taot launch differ, bit for bit, from theirs after
    the JIT launch, with the largest difference of each."""
    different = []
    for name, jit_value in launch.arguments.items():
        if not torch.is_tensor(jit_value):
            continue
        if not torch.equal(bytes_of(jit_value), bytes_of(replayed[name])):
            gap = (jit_value.double() - replayed[name].double()).abs().nan_to_num(float("inf")).max().item()
            different.append(f"{name} (max difference {gap:.3g})")
    return different
