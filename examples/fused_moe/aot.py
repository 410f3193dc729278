# The MoE layer through the taot library built from fused_moe.toml (`taot build fused_moe.toml
# -o OUT --python --build-library`, then OUT/build on PYTHONPATH): the same launches as jit.py,
# with the generated module in place of Triton's JIT. No Triton or JIT compile at run time.
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
    as config keywords (dtype constexprs by name, e.g. compute_type="bf16")."""

    def __init__(self, module):
        self.module = module
        self.functions = {jit_name: getattr(module, spec_name) for jit_name, spec_name in SPEC_NAMES.items()}

    def __call__(self, kernel, grid):
        function = self.functions[kernel.__name__]

        def launch(*args, **config):
            for key, value in config.items():
                if isinstance(value, tl.dtype):
                    config[key] = value.name
            function(*args, **config)
        return launch


def fused_moe(x, w1, w2, topk_weights, topk_ids, use_fp8, module=None, **options):
    """fused_moe_jit's layer, launched through the taot module (`import fused_moe` by default)."""
    if module is None:
        import fused_moe as module
    return fused_moe_jit(x, w1, w2, topk_weights, topk_ids, use_fp8, launch=AotLaunch(module), **options)
