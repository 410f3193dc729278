"""What the example folders' tests share: the pytest hooks their conftest.py files install, the
check that decides whether their GPU tests can run here, and the config a launch gets (from Triton's
heuristics, from the generated module's `choose`, from the rule programs taot compiles). Put on
sys.path by each conftest.py."""
import functools
import sys
from pathlib import Path

import pytest


def example_hooks(folder):
    """pytest_pycollect_makemodule for the example in `folder`: before pytest imports one of the
    folder's test files, put the folder first on sys.path and forget same-named modules (jit, aot,
    reference, configs) that another example's tests imported, so that one pytest session can
    collect several examples. (The `gpu` marker and the build_module fixture come from
    tests/gpu_modules.py, through the repo's conftest.py.)"""
    folder = Path(folder).resolve()

    def pytest_pycollect_makemodule():
        for path in folder.glob("*.py"):
            module = sys.modules.get(path.stem)
            origin = getattr(module, "__file__", None)
            if origin is not None and Path(origin).resolve().parent != folder:
                del sys.modules[path.stem]
        if sys.path[0] != str(folder):
            sys.path.insert(0, str(folder))

    sys.path.insert(0, str(folder))
    return pytest_pycollect_makemodule


def torch_and_skip_reason(capability_ok=None, why=""):
    """(torch or None, why the GPU tests cannot run here or None). `capability_ok`, when given, is a
    predicate on torch.cuda.get_device_capability(); `why` is the reason when it fails."""
    try:
        import torch
    except ImportError:
        return None, "needs PyTorch with CUDA: torch is not installed"
    if not torch.cuda.is_available():
        return torch, "needs a CUDA GPU: torch.cuda.is_available() is False"
    if capability_ok is not None and not capability_ok(torch.cuda.get_device_capability()):
        return torch, why
    return torch, None


def gpu_marks(skip_reason):
    """The `pytestmark` of a GPU test file: marked `gpu`, skipped for `skip_reason` when there is one
    (the `gpu` marker alone skips without a CUDA GPU; `skip_reason` may also name a capability)."""
    return [pytest.mark.gpu, pytest.mark.skipif(skip_reason is not None, reason=skip_reason or "")]


# ---- the config a launch gets ----

def triton_heuristics_config(kernel, **args):
    """The config fields that the @triton.heuristics around `kernel` (a Triton Heuristics object)
    compute for a call with these named arguments: each rule in order, seeing the values of the
    ones before it, as Triton's Heuristics.run does at every JIT launch."""
    values, config = dict(args), {}
    for field, rule in kernel.values.items():
        config[field] = values[field] = rule(values)
    return config


def chosen(kernel, *args, **config):
    """(config dict, step name) that a launch of the generated module's kernel with these arguments
    and config keywords would use, without launching: `kernel.choose` gives the variant's index and
    the step ("config", "table", "heuristics" or "default"; docs/runtime.md, "How a launch picks its
    config"), `kernel.variants()` the variant's config."""
    index, step = kernel.choose(*args, **config)
    return dict(variant_configs(kernel)[index]), step


_variant_configs = {}


def variant_configs(kernel):
    """The config of each of the kernel's variants, by index (read once per kernel)."""
    if id(kernel) not in _variant_configs:
        _variant_configs[id(kernel)] = (kernel, [variant["config"] for variant in kernel.variants()])
    return _variant_configs[id(kernel)][1]


# ---- launch-time rules as the manifest holds them (no GPU) ----

def load_kernel_spec(spec_path, kernel_name):
    """(KernelSpec, variants) of kernel `kernel_name` in the spec at `spec_path`, through the taot
    front end of this checkout (python/, found beside examples/); skips the test without Triton."""
    pytest.importorskip("triton", reason="the taot front end imports the kernel with Triton")
    library = _load_spec(str(spec_path))
    kernel = next(kernel for kernel in library.kernels if kernel.name == kernel_name)
    return kernel, library.variants[kernel_name]


@functools.lru_cache(maxsize=None)
def _load_spec(spec_path):
    # Once per spec and process: the front end reads @triton.heuristics from the kernel's source, and
    # a second read of the same decorated kernel in one process fails today (reported).
    front_end = str(Path(__file__).resolve().parents[1] / "python")
    if front_end not in sys.path:
        sys.path.insert(0, front_end)
    from taot.spec.validate import load_spec
    return load_spec(spec_path)


class LaunchRules:
    """A kernel's heuristics and requires as the programs manifest.json holds and the runtime runs
    (compiled by the front end's rule_program, evaluated by its reference run_program)."""

    def __init__(self, kernel):
        from taot.spec.expressions import rule_program, run_program
        from taot.spec.model import BOOL, FLOAT, INT
        self._run = run_program
        scalars = [arg.name for arg in kernel.args if arg.kind in (INT, FLOAT, BOOL)]  # as manifest.py
        self.heuristics = [(field, rule.names, rule_program(rule, scalars)) for field, rule in kernel.heuristics]
        self.requires = [(rule.names, rule_program(rule, scalars)) for rule in kernel.requires]
        self._memo = {}

    def _value(self, position, names, program, values):
        key = (position, tuple(values[name] for name in names))   # a rule sees only what it reads
        if key not in self._memo:
            self._memo[key] = self._run(program, values)
        return self._memo[key]

    def config(self, **args):
        """The config fields the heuristics compute for a call with these scalar arguments."""
        values, config = dict(args), {}
        for position, (field, names, program) in enumerate(self.heuristics):
            config[field] = values[field] = self._value(position, names, program, values)
        return config

    def requirements_hold(self, config, **args):
        """Whether every requires rule holds for a call with these arguments and this config."""
        values = {**args, **config}
        return all(self._value(("requires", position), names, program, values)
                   for position, (names, program) in enumerate(self.requires))


# ---- row kernels (softmax, layer norm): whole rows in registers, short rows packed ----

# Row counts that put every block below 2048 on both sides of its packing threshold (512 programs
# of 16, 8, 4 or 2 rows), and one row.
ROW_COUNTS = (1, 1023, 1024, 2047, 2048, 4095, 4096, 8191, 8192, 1 << 20)


def row_kernel_policy(n_rows, n_cols, min_block):
    """The config the row examples' READMEs promise a call: the smallest power-of-two block (from
    `min_block`) that holds a row; rows of blocks below 2048 packed into 2048-element tiles when
    that leaves at least 512 programs; 2 warps up to 1024-element tiles, 4 at 2048, 8 up to 8192,
    16 above."""
    block = max(min_block, 1 << (n_cols - 1).bit_length())
    rows = 2048 // block if block < 2048 and n_rows >= 512 * (2048 // block) else 1
    tile = rows * block
    return {"BLOCK_SIZE": block, "BLOCK_ROWS": rows,
            "num_warps": 2 if tile <= 1024 else 4 if tile <= 2048 else 8 if tile <= 8192 else 16}


def row_kernel_rules(min_block):
    """(heuristics as (field, text), requires as texts) that a row example's spec compiles from its
    kernel's @triton.heuristics and its `requires`."""
    tile = "BLOCK_ROWS * BLOCK_SIZE"
    return ([("BLOCK_SIZE", f"max({min_block}, next_power_of_2(n_cols))"),
             ("BLOCK_ROWS", "2048 // BLOCK_SIZE if BLOCK_SIZE < 2048 and n_rows >= 512 * (2048 // BLOCK_SIZE) else 1"),
             ("num_warps", f"2 if {tile} <= 1024 else 4 if {tile} <= 2048 else 8 if {tile} <= 8192 else 16")],
            ["n_cols <= BLOCK_SIZE"])


def row_kernel_spec(spec_path, kernel_name):
    """(KernelSpec, the set of configs compiled, as sorted tuples) of a row example: checks that x
    of each dtype (fp32, fp16, bf16), 16-byte aligned or not, has the same configs compiled."""
    kernel, variants = load_kernel_spec(spec_path, kernel_name)
    by_input = {}
    for variant in variants:
        x = variant.bindings[0]
        by_input.setdefault((x.type, x.align), set()).add(tuple(sorted(variant.config.items())))
    assert sorted(by_input) == sorted((t, a) for t in ("fp32", "fp16", "bf16") for a in (16, 0))
    configs = by_input[("fp32", 16)]
    assert all(compiled == configs for compiled in by_input.values()), by_input
    return kernel, configs


def heuristic_configs(triton_kernel, max_cols):
    """Each config a row kernel's @triton.heuristics choose for some call, in order of first use:
    a row of 2^k columns up to `max_cols`, in one row or in many."""
    configs = []
    for k in range(max_cols.bit_length()):
        for n_rows in (1, 1 << 20):
            config = triton_heuristics_config(triton_kernel, n_rows=n_rows, n_cols=1 << k)
            if config not in configs:
                configs.append(config)
    return configs


class RowSweep:
    """What a sweep of launches over (n_rows, n_cols) saw, kept on the GPU and checked once at the
    end (one synchronization): the config each call chose against the one expected, how far each
    result is out of tolerance (the largest |got - want| - (atol + rtol |want|); NaN: unwritten),
    and whether anything past the row was written."""

    def __init__(self):
        self.cases, self.wrong_choices, self.excesses, self.touched = [], [], [], []

    def add(self, case, choice, expected_choice, excess, touched):
        self.cases.append(case)
        if choice != expected_choice:
            self.wrong_choices.append((case, choice, expected_choice))
        self.excesses.append(excess)
        self.touched.append(touched)

    def check(self):
        import torch
        excess = torch.stack(self.excesses).cpu().tolist()
        touched = torch.stack(self.touched).cpu().tolist()
        bad = [(case, value) for case, value in zip(self.cases, excess) if not value <= 0]
        written_past = [case for case, flag in zip(self.cases, touched) if flag]
        assert not self.wrong_choices, f"{len(self.wrong_choices)} of {len(self.cases)} calls chose another config " \
                                       f"((n_rows, n_cols), (config, step), expected): {self.wrong_choices[:10]}"
        assert not bad, f"{len(bad)} (n_rows, n_cols) out of tolerance (excess; nan: unwritten): {bad[:10]}"
        assert not written_past, f"{len(written_past)} (n_rows, n_cols) wrote past the row: {written_past[:10]}"


def check_row_example_spec(spec_path, kernel_name, triton_kernel, min_block, max_cols, config_count):
    """A row example's spec (no GPU): it compiles its kernel's @triton.heuristics and `requires =
    ["n_cols <= BLOCK_SIZE"]`, blocks from `min_block` to `max_cols` in `config_count` configs;
    check_every_row_length holds; a row longer than `max_cols` gets a block that was not compiled,
    and the rule refuses a block one column short of a row."""
    kernel, configs = row_kernel_spec(spec_path, kernel_name)
    heuristics, requires = row_kernel_rules(min_block)
    compiled_heuristics = [(field, rule.text) for field, rule in kernel.heuristics]
    assert compiled_heuristics == heuristics, f"the spec compiles the heuristics {compiled_heuristics}"
    compiled_requires = [rule.text for rule in kernel.requires]
    assert compiled_requires == requires, f"the spec requires {compiled_requires}"
    assert len(configs) == config_count, sorted(configs)
    blocks = sorted({dict(config)["BLOCK_SIZE"] for config in configs})
    assert (blocks[0], blocks[-1]) == (min_block, max_cols)
    check_every_row_length(kernel, configs, triton_kernel, max_cols, min_block)
    rules = LaunchRules(kernel)
    assert rules.config(n_rows=4, n_cols=max_cols + 1)["BLOCK_SIZE"] == 2 * max_cols
    for block in (min_block, max_cols):
        config = {"BLOCK_SIZE": block, "BLOCK_ROWS": 1, "num_warps": 2}
        assert rules.requirements_hold(config, n_rows=4, n_cols=block)
        assert not rules.requirements_hold(config, n_rows=4, n_cols=block + 1)


def check_every_row_length(kernel, configs, triton_kernel, max_cols, min_block):
    """For every n_cols from 1 to `max_cols` and each of ROW_COUNTS: the kernel's heuristic programs
    give row_kernel_policy's config, which is among `configs` (compiled) and meets the requires
    rules; Triton's own heuristics (`triton_kernel`) agree on a sample of lengths; every compiled
    config is chosen by some call."""
    rules = LaunchRules(kernel)
    used = set()
    for n_rows in ROW_COUNTS:
        for n_cols in range(1, max_cols + 1):
            config = rules.config(n_rows=n_rows, n_cols=n_cols)
            call = f"n_rows={n_rows}, n_cols={n_cols}"
            assert config == row_kernel_policy(n_rows, n_cols, min_block), f"{call}: the programs give {config}"
            assert tuple(sorted(config.items())) in configs, f"{call}: {config} was not compiled"
            assert rules.requirements_hold(config, n_rows=n_rows, n_cols=n_cols), f"{call}: {config}"
            used.add(tuple(sorted(config.items())))
        for n_cols in list(range(1, 300)) + [1000, 1024, 1025, 2049, 5000, max_cols - 1, max_cols]:
            assert triton_heuristics_config(triton_kernel, n_rows=n_rows, n_cols=n_cols) == \
                   rules.config(n_rows=n_rows, n_cols=n_cols), f"n_rows={n_rows}, n_cols={n_cols}: Triton differs"
    assert used == configs, f"compiled but never chosen: {sorted(configs - used)}"
