# What wraps a kernel as its module defines it: Triton's @triton.jit function objects and the
# @triton.autotune / @triton.heuristics objects around them, read as plain data.
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.runtime.jit import JITFunction

from .options import CONFIG_OPTIONS  # triton.Config's options (Config.all_kwargs() passes maxnreg only when set)


def is_jit_function(value):
    return isinstance(value, JITFunction)


def is_autotuner(value):
    """An @triton.autotune object, or one of a class derived from Triton's Autotuner."""
    return isinstance(value, Autotuner)


def is_heuristics(value):
    return isinstance(value, Heuristics)


def wrapped(value):
    """The function an Autotuner or Heuristics object wraps."""
    return value.fn


def heuristic_values(heuristics):
    """{field: function of the arguments dict} of a @triton.heuristics object, in Triton's order."""
    return dict(heuristics.values)


def autotune_configs(tuner):
    """Per config of an Autotuner: (kwargs, {option: value} of the options it sets, pre_hook or None,
    ir_override or None)."""
    configs = []
    for config in tuner.configs:
        options = {name: getattr(config, name) for name in CONFIG_OPTIONS if getattr(config, name, None) is not None}
        configs.append((dict(config.kwargs), options, config.pre_hook, getattr(config, "ir_override", None)))
    return configs


def autotune_key(tuner):
    return tuple(tuner.keys or ())


def autotune_pruning(tuner):
    """The names of the pruning functions an Autotuner has: early_config_prune, perf_model."""
    names = ("early_config_prune", "perf_model")
    return tuple(name for name in names if getattr(tuner, name, None) is not None)


def autotune_buffers(tuner):
    """(reset_to_zero, restore_value): the argument names the autotuner zeroes or restores around timing."""
    return tuple(tuner.reset_to_zero or ()), tuple(tuner.restore_value or ())


def python_function(jit_function):
    """The plain Python function a @triton.jit function was made from (its source, lines, globals)."""
    return jit_function.fn
