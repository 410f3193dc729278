# The MoE layer through the taot library built from fused_moe.toml (`taot build fused_moe.toml
# -o OUT --python --build-library`, then OUT/build on PYTHONPATH): the same launches as jit.py,
# with the generated module in place of Triton's JIT. No Triton or JIT compile at run time; the
# GEMM's tile config comes from the tuned tables baked into the library, looked up by the runtime.
import triton.language as tl

from jit import fused_moe_jit

# The spec's kernel names for the @triton.jit functions of moe_kernels.py.
SPEC_NAMES = {
    "moe_align_count_kernel": "moe_align_count",
    "moe_align_scan_kernel": "moe_align_scan",
    "moe_align_scatter_kernel": "moe_align_scatter",
    "fused_moe_kernel": "fused_moe_kernel",
    "silu_and_mul_kernel": "silu_and_mul",
    "per_token_group_quant_fp8_kernel": "per_token_group_quant_fp8",
    "moe_sum_kernel": "moe_sum",
}


class AotLaunch:
    """jit.py's `launch` for a taot module: the spec computes the grid, constexprs and options go
    as config keywords (dtype constexprs by name, e.g. compute_type="bf16"), launch-only arguments
    (fused_moe_kernel's M) after the kernel's own. The fields the arguments imply (`implied`:
    fused_moe_kernel's precision, top_k and MUL_ROUTED_WEIGHT) are not passed: the library derives
    them from the arguments (fused_moe.toml), and a call that gives no config field gets its tile
    from the tuned table for this device (else the spec's default); one that gives fields gets
    those, the runtime's heuristics computing the rest."""

    def __init__(self, module):
        self.module = module
        self.functions = {jit_name: getattr(module, spec_name) for jit_name, spec_name in SPEC_NAMES.items()}

    def __call__(self, kernel, grid, launch_args=(), implied=None):
        function = self.functions[kernel.__name__]

        def launch(*args, **config):
            function(*args, *launch_args, **by_name(config))
        return launch

    def choose(self, kernel, *args, launch_args=(), implied=None, **config):
        """The whole config the module's launch with these arguments and fields would run (choose()
        gives the variant's index and the step that chose it)."""
        function = self.functions[kernel.__name__]
        index, _ = function.choose(*args, *launch_args, **by_name(config))
        return dict(variant_configs(function)[index])


_VARIANT_CONFIGS = {}


def variant_configs(function):
    """The config of each variant of a module's kernel, by index (read once per kernel)."""
    if id(function) not in _VARIANT_CONFIGS:
        _VARIANT_CONFIGS[id(function)] = (function, [variant["config"] for variant in function.variants()])
    return _VARIANT_CONFIGS[id(function)][1]


def by_name(config):
    """Config keywords for the module: dtype constexprs by name."""
    return {key: value.name if isinstance(value, tl.dtype) else value for key, value in config.items()}


def fused_moe(x, w1, w2, topk_weights, topk_ids, use_fp8, module=None, **options):
    """fused_moe_jit's layer, launched through the taot module (`import fused_moe` by default)."""
    if module is None:
        import fused_moe as module
    return fused_moe_jit(x, w1, w2, topk_weights, topk_ids, use_fp8, launch=AotLaunch(module), **options)
