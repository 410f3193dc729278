"""The real binary counts variants before compiling: a per-kernel summary line, and a spec above
--max-variants refused before anything is built, naming the count and the largest dimensions."""
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TILE_SPACE = REPO / "bench" / "specs" / "tile_space.toml"   # 10^6 combinations, 1824 variants
AS_WRITTEN = REPO / "tests" / "kernels_as_written" / "kernels.toml"
sys.path.insert(0, str(REPO / "python"))


def test_a_million_candidates_over_the_limit_are_refused_naming_the_dimensions(run_taot, tmp_path):
    spec = tmp_path / "tile_space.toml"
    text = TILE_SPACE.read_text().replace('source = "../../examples', f'source = "{REPO}/examples')
    spec.write_text(text.replace('  "not FAST_ACCUM",\n', ""))   # FAST_ACCUM doubles it ...
    result = run_taot("build", spec, "-o", tmp_path / "out", "--max-variants", "3000", timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith(f"error: {spec}: kernel[0]: expected at most 3,000 variants (--max-variants), got ")
    assert "3,648 of 1,000,000 combinations (largest dimensions: BLOCK_M 5, BLOCK_N 5, BLOCK_K 5, GROUP_SIZE_M 5, " \
           "num_warps 5, num_stages 5)" in message, message
    assert not (tmp_path / "out" / "artifacts").exists()


def test_the_default_limit_is_ten_thousand(run_taot, tmp_path):
    spec = tmp_path / "tile_space.toml"
    text = TILE_SPACE.read_text().replace('source = "../../examples', f'source = "{REPO}/examples')
    spec.write_text(re.sub(r"\nwhere = \[.*?\n\]\n", "\n", text, flags=re.S))   # no filters at all
    result = run_taot("compile", spec, "--list", "-o", tmp_path / "out", timeout=120)
    assert result.returncode == 1, result.stdout
    assert "expected at most 10,000 variants (--max-variants), got 1,000,000 of 1,000,000 combinations" in result.stderr


def test_counts_are_printed_before_compiling(run_taot, tmp_path):
    result = run_taot("compile", AS_WRITTEN, "--list", "-o", tmp_path / "out", timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert "matmul: 20 variants for sm_80, sm_90 (of 20 combinations; largest dimensions: configs 5, T 2, " \
           "ACTIVATION 2;" in lines[0]
    assert lines[1] == ("matmul: note: @triton.autotune prune_configs_by (early_config_prune) prunes at run time; "
                        "taot compiles every config, and first-call autotuning times every one that takes the "
                        "call's arguments")
    assert result.stdout.splitlines()[-1] == ("132 variants (matmul 20, rms_norm 48, bias_act 36, persistent_scale 2, "
                                              "layer_norm_fwd 20, affine 2, softcap_clamp 4) for 2 targets (sm_80, "
                                              "sm_90) = 148 compile jobs")


def test_the_limit_covers_the_whole_library(run_taot, tmp_path):
    result = run_taot("compile", AS_WRITTEN, "--list", "--max-variants", "80", "-o", tmp_path / "out", timeout=120)
    assert result.returncode == 1
    assert "kernel[2]: expected at most 12 more variants (--max-variants 80; the kernels before it make 68), got 18 " \
           "on sm_80 alone of 36 combinations" in result.stderr


LARGE_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def grid_kernel(x_ptr, n, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    tl.store(x_ptr + tl.program_id(0), A + B + C)
'''


def test_a_large_list_is_written_as_it_is_made_and_equals_the_enumeration(run_taot, tmp_path):
    """`--list` of 120,000 variants on two targets whose stage counts differ (a variant made for one
    target or both): progress on stderr, and the ids and compile jobs those of the kept enumeration,
    in its order. (bench/list_memory.py measures the memory this streaming saves.)"""
    from taot.spec.validate import load_spec
    (tmp_path / "k.py").write_text(LARGE_KERNEL)
    spec = tmp_path / "large.toml"
    spec.write_text('''
[library]
name = "large"
targets = ["sm_80", "sm_90"]

[[kernel]]
name = "grid_kernel"
source = "k.py"
grid = ["n", 1, 1]

[kernel.args]
x_ptr = { type = "*fp32", align = [16] }
n = { type = "i32", hint = [16, 1] }
A = { constexpr = %s }
B = { constexpr = %s }
C = { constexpr = [1, 2, 3] }

[kernel.options]
num_stages = { sm_80 = [2, 3], sm_90 = [3, 4] }
''' % (list(range(100)), list(range(100))))
    listed = run_taot("compile", spec, "--list", "--json", "--max-variants", "200000", timeout=300)
    assert listed.returncode == 0, listed.stderr
    assert "grid_kernel: 100,000 variants so far" in listed.stderr
    document = json.loads(listed.stdout)
    kept = load_spec(spec, max_variants=200_000).variants["grid_kernel"]
    assert document["kernels"]["grid_kernel"] == [variant.id for variant in kept]
    assert len(kept) == 180_000 and document["compile_jobs"] == 240_000 == sum(len(v.targets) for v in kept)
    text = run_taot("compile", spec, "--list", "--max-variants", "200000", "-q", timeout=300)
    assert text.stdout.splitlines()[:-1] == document["kernels"]["grid_kernel"]
    assert text.stdout.splitlines()[-1] == ("180000 variants (grid_kernel 180000) for 2 targets (sm_80, sm_90) = "
                                            "240000 compile jobs")


def test_values_whose_id_tokens_meet_are_listed_under_the_names_a_build_gives(run_taot, tmp_path):
    """"a-b" and "ab" both make the token "ab": the stream falls back to renaming them as a build does."""
    from taot.spec.validate import load_spec
    (tmp_path / "k.py").write_text(LARGE_KERNEL)
    spec = tmp_path / "meet.toml"
    spec.write_text('''
[library]
name = "meet"
targets = ["sm_90"]

[[kernel]]
name = "grid_kernel"
source = "k.py"
grid = ["n", 1, 1]

[kernel.args]
x_ptr = { type = "*fp32", align = [16] }
n = { type = "i32", hint = [16] }
A = { constexpr = ["a-b", "ab"] }
B = { constexpr = [1] }
C = { constexpr = [1] }
''')
    listed = run_taot("compile", spec, "--list", "-q")
    assert listed.returncode == 0, listed.stderr
    ids = listed.stdout.splitlines()[:-1]
    assert len(set(ids)) == 2 and ids == [variant.id for variant in load_spec(spec).variants["grid_kernel"]]
