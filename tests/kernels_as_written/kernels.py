"""Triton kernels written the way their users write them, with decorators and all: taot must take
this file unchanged. Each has a JIT launcher in jit.py that calls it exactly as a Triton user would."""
import triton
import triton.language as tl


# ---- 1. @triton.autotune with a key and prune_configs_by (the tutorial matmul, fused activation) ----

def prune_by_shape(configs, named_args, **kwargs):
    """Drop tiles much taller than the problem (runs at call time in Triton only)."""
    m = named_args["M"]
    kept = [config for config in configs if config.kwargs["BLOCK_SIZE_M"] <= max(32, triton.next_power_of_2(m))]
    return kept or configs[:1]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
                      num_stages=3, num_warps=8),
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
                      num_stages=4, num_warps=4),
        triton.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
                      num_stages=5, num_warps=2),
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1},
                      num_stages=3, num_warps=4),
    ],
    key=["M", "N", "K"],
    prune_configs_by={"early_config_prune": prune_by_shape},
)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


# ---- 2. @triton.heuristics: block from the row length, warps from the block, flags from the call ----

@triton.heuristics(values={
    "BLOCK_SIZE": lambda args: triton.next_power_of_2(args["n_cols"]),
    "num_warps": lambda args: 8 if args["BLOCK_SIZE"] >= 2048 else 4,
    "HAS_WEIGHT": lambda args: args["weight_ptr"] is not None,
})
@triton.jit
def rms_norm_kernel(x_ptr, weight_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
                    BLOCK_SIZE: tl.constexpr, HAS_WEIGHT: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean_square = tl.sum(x * x, axis=0) / n_cols
    y = x * tl.rsqrt(mean_square + eps)
    if HAS_WEIGHT:
        y = y * tl.load(weight_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


# ---- 3. a string constexpr and an optional pointer that callers pass as None ----

@triton.jit
def bias_act_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_cols, ACTIVATION: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offsets % n_cols, mask=mask).to(tl.float32)
    if ACTIVATION == "gelu":
        x = 0.5 * x * (1 + tl.erf(x * 0.7071067811865476))
    elif ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    tl.store(out_ptr + offsets, x.to(out_ptr.dtype.element_ty), mask=mask)


# ---- 4. a persistent kernel: as many programs as SMs (the grid reads num_sms), tiles strided ----

@triton.jit
def persistent_scale_kernel(x_ptr, out_ptr, n_elements, scale, BLOCK: tl.constexpr):
    num_tiles = tl.cdiv(n_elements, BLOCK)
    for tile in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0)):
        offsets = tile * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x * scale, mask=mask)


# ---- 5. one program per row: the grid reads the row count, which the kernel never takes ----

@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    y = diff * rstd * w + b
    tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


# ---- 6. a constexpr named like the module's own call keyword (variant=), written as its author likes ----

@triton.jit
def affine_kernel(x_ptr, out_ptr, n_elements, variant: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    if variant == 0:
        y = x * 2.0
    else:
        y = x + 1.0
    tl.store(out_ptr + offsets, y, mask=mask)


# ---- 7. scalars the JIT takes in more than one form: a softcap that callers pass as None (the JIT
# compiles None as a constant, and a heuristic reads it), and a lower bound that is an int on some
# calls and a float on others (torch.iinfo(int8).min or torch.finfo(fp8).min; the JIT specializes
# on the Python type) ----

@triton.heuristics(values={"HAS_SOFTCAP": lambda args: args["softcap"] is not None})
@triton.jit
def softcap_clamp_kernel(x_ptr, out_ptr, n_elements, softcap, lower, HAS_SOFTCAP: tl.constexpr,
                         BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    if HAS_SOFTCAP:
        x = softcap * (2.0 * tl.sigmoid(2.0 * x / softcap) - 1.0)  # softcap * tanh(x / softcap)
    tl.store(out_ptr + offsets, tl.maximum(x, lower), mask=mask)
