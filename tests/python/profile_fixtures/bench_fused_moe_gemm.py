# A bench file for profiles of the MoE GEMM (tests/python/test_profiler.py): call_shape reads a
# launch's token count, N, K and A's dtype; the formulas give its FLOPs (precision: A's dtype) and
# the bytes of A's rows and C (the experts' weights left out).
LIBRARY = "fused_moe"
KERNEL = "fused_moe_kernel"
DIMS = ("tokens", "N", "K", "dtype")
X_AXIS = "tokens"
SHAPES = [(8192, 1536, 2048, "bf16"), (8192, 2048, 768, "bf16")]
ELEMENT_BYTES = {"bf16": 2, "fp8e4nv": 1}


def make_args(shape, device):
    raise NotImplementedError("this file only describes launches for taot profile")


def flops(shape):
    return 2 * shape["tokens"] * shape["N"] * shape["K"]


def bytes(shape):
    return shape["tokens"] * (shape["K"] * ELEMENT_BYTES[shape["dtype"]] + shape["N"] * 2)


def flops_dtype(shape):
    return shape["dtype"]


def call_shape(args):
    return {"tokens": args["num_valid_tokens"], "N": args["N"], "K": args["K"], "dtype": args["a_ptr"]}
