# Writes the cubins of cubin_targets.json: the architecture each says it is for, as the Triton and
# ptxas releases taot meets write it (e_flags by ELF ABI version, and .nv.compat). No GPU needed.
# Usage: python make_arch_cubins.py                  arch_<triton version>_sm{80,90,100}.cubin,
#                                                    compiled by the Triton this Python imports
#        python make_arch_cubins.py --ptxas PTXAS    arch_ptxas<release>_<target>.cubin: a tiny PTX
#                                                    kernel assembled for sm_80, sm_90, sm_90a, sm_100
import argparse
import re
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
PTX = """.version 8.7
.target {target}
.address_size 64
.visible .entry k(.param .u64 p) {{ .reg .b64 %rd<2>; ld.param.u64 %rd1, [p]; st.global.u32 [%rd1], 1; ret; }}
"""


def with_triton():
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1.0, mask=i < n)

    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    for capability in (80, 90, 100):
        source = triton.compiler.ASTSource(add_one, signature, {"BLOCK": 128})
        compiled = triton.compile(source, target=triton.backends.compiler.GPUTarget("cuda", capability, 32))
        out = HERE / f"arch_{triton.__version__}_sm{capability}.cubin"
        out.write_bytes(compiled.asm["cubin"])
        print(out.name, len(compiled.asm["cubin"]), "bytes")


def with_ptxas(ptxas):
    release = re.search(r"release (\d+\.\d+)", subprocess.run([ptxas, "--version"], capture_output=True,
                                                               text=True, check=True).stdout).group(1)
    with tempfile.TemporaryDirectory() as scratch:
        for target in ("sm_80", "sm_90", "sm_90a", "sm_100"):
            ptx = Path(scratch) / f"{target}.ptx"
            ptx.write_text(PTX.format(target=target))
            out = HERE / f"arch_ptxas{release}_{target}.cubin"
            if subprocess.run([ptxas, f"-arch={target}", str(ptx), "-o", str(out)]).returncode == 0:
                print(out.name, out.stat().st_size, "bytes")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ptxas")
    options = parser.parse_args()
    with_ptxas(options.ptxas) if options.ptxas else with_triton()
