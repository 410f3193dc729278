# Writes the AMD GPU code objects (.hsaco) of amdgpu_code_object_test.cpp with the Triton this Python
# imports (its AMD backend and bundled LLVM; no GPU, no ROCm needed), then prints what their
# metadata notes say as pyelftools and msgpack read them: the values the test expects.
# Usage: python make_amdgpu_code_objects.py            write amdgpu_<triton version>_*.hsaco, print facts
#        python make_amdgpu_code_objects.py --facts    print the facts of the .hsaco files here only
#
#   amdgpu_<v>_gfx942_spills.hsaco  a 64x64 fp32 tl.dot in one wavefront squeezed to 8 waves per EU:
#                                   VGPRs spilled to scratch
#   amdgpu_<v>_gfx950_dot.hsaco     a 64x64 fp16 tl.dot as triton.compile writes it: AGPRs; its LDS is
#                                   all dynamic (Triton's AMD backend declares it 0 bytes and asks for it
#                                   at launch), so the code object's fixed LDS is 0
#   amdgpu_<v>_gfx950_lds.hsaco     the same kernel with Triton's LLVM IR given a fixed-size LDS buffer
#                                   (global_smem of the kernel's shared bytes), then assembled and linked
#                                   by the same backend: a non-zero .group_segment_fixed_size
import argparse
import re
from pathlib import Path

HERE = Path(__file__).parent
KEYS = (".name", ".symbol", ".vgpr_count", ".sgpr_count", ".agpr_count", ".vgpr_spill_count", ".sgpr_spill_count",
        ".group_segment_fixed_size", ".private_segment_fixed_size", ".uses_dynamic_stack", ".wavefront_size",
        ".kernarg_segment_size", ".max_flat_workgroup_size")


def compile_code_objects():
    import triton
    import triton.language as tl
    from triton.backends.amd.compiler import HIPBackend
    from triton.backends.compiler import GPUTarget

    @triton.jit
    def dot_kernel(a, b, c, M: tl.constexpr):
        r = tl.arange(0, M)
        x = tl.load(a + r[:, None] * M + r[None, :])
        y = tl.load(b + r[:, None] * M + r[None, :])
        tl.store(c + r[:, None] * M + r[None, :], tl.dot(x, y))

    def compile_for(arch, dtype, options):
        signature = {"a": f"*{dtype}", "b": f"*{dtype}", "c": "*fp32", "M": "constexpr"}
        source = triton.compiler.ASTSource(fn=dot_kernel, signature=signature, constexprs={"M": 64})
        return triton.compile(source, target=GPUTarget("hip", arch, 64), options=options)

    prefix = f"amdgpu_{triton.__version__}"
    spills = compile_for("gfx942", "fp32", {"num_warps": 1, "waves_per_eu": 8})
    (HERE / f"{prefix}_gfx942_spills.hsaco").write_bytes(spills.asm["hsaco"])
    dot = compile_for("gfx950", "fp16", {})
    (HERE / f"{prefix}_gfx950_dot.hsaco").write_bytes(dot.asm["hsaco"])

    fixed = re.sub(r"@global_smem = external (local_unnamed_addr )?addrspace\(3\) global \[0 x i8\]",
                   f"@global_smem = internal addrspace(3) global [{dot.metadata.shared} x i8] undef", dot.asm["llir"])
    assert fixed != dot.asm["llir"], "Triton's LLVM IR no longer declares global_smem as it did"
    backend = HIPBackend(GPUTarget("hip", "gfx950", 64))
    options = backend.parse_options({})
    amdgcn = backend.make_amdgcn(fixed, {}, options)
    (HERE / f"{prefix}_gfx950_lds.hsaco").write_bytes(backend.make_hsaco(amdgcn, {}, options))


def print_facts():
    import msgpack
    from elftools.elf.elffile import ELFFile

    for path in sorted(HERE.glob("*.hsaco")):
        with path.open("rb") as file:
            elf = ELFFile(file)
            for section in elf.iter_sections():
                if section["sh_type"] != "SHT_NOTE":
                    continue
                for note in section.iter_notes():
                    if note["n_name"] != "AMDGPU" or note["n_type"] != 32:  # NT_AMDGPU_METADATA
                        continue
                    descriptor = note["n_descdata"]
                    metadata = msgpack.unpackb(descriptor if isinstance(descriptor, bytes) else descriptor.encode("latin-1"))
                    print(path.name, metadata["amdhsa.target"], path.stat().st_size, "bytes")
                    for kernel in metadata["amdhsa.kernels"]:
                        print("  " + ", ".join(f"{key}={kernel[key]}" for key in KEYS if key in kernel))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", action="store_true", help="only print the facts of the .hsaco files here")
    if not parser.parse_args().facts:
        compile_code_objects()
    print_facts()
