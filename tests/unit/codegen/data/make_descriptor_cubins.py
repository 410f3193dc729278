# Writes desc_copy_<triton version>_sm80.cubin: a kernel taking two rank-2 host tensor descriptors,
# an i32, an fp32 and an i1, compiled for sm_80 (descriptors not lowered to TMA) by the Triton this
# Python imports. The launch-ABI tests (launch_check_test.cpp) check these cubins' parameters.
# Usage: python make_descriptor_cubins.py   (no GPU needed)
from pathlib import Path

import triton
import triton.language as tl


@triton.jit
def desc_copy(in_desc, out_desc, M, scale, flag, BM: tl.constexpr):
    pid = tl.program_id(0)
    block = in_desc.load([pid * BM, 0])
    if flag:
        block = (block * scale).to(tl.float16)
    out_desc.store([pid * BM, 0], block)


def main():
    signature = {"in_desc": "tensordesc<fp16[16, 16]>", "out_desc": "tensordesc<fp16[16, 16]>", "M": "i32",
                 "scale": "fp32", "flag": "i1", "BM": "constexpr"}
    source = triton.compiler.ASTSource(desc_copy, signature, {"BM": 16}, {})
    compiled = triton.compile(source, target=triton.backends.compiler.GPUTarget("cuda", 80, 32))
    out = Path(__file__).with_name(f"desc_copy_{triton.__version__}_sm80.cubin")
    out.write_bytes(compiled.asm["cubin"])
    print(out, len(compiled.asm["cubin"]), "bytes")


if __name__ == "__main__":
    main()
