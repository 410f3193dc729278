"""`taot bench` and `taot check` through the real binary on a machine like a new user's: everything
that can be checked without torch or a GPU (the bench file's LIBRARY and KERNEL, --kernel,
--variants, --where, the kernel's source, a make_args that fails on its own) is reported first,
each in its own words; then a Python without torch, or a torch without a GPU, is said in one line
naming the interpreter and how to pick another. The library is measure_fakes' stand-in module."""
import os
import subprocess
import sys

import pytest

from measure_fakes import NO_TORCH, TORCH_WITHOUT_GPU, bench_file, fake_library, torch_stand_in


@pytest.fixture
def world(tmp_path):
    library = tmp_path / "lib"
    library.mkdir()
    fake_library(library)
    bench_file(tmp_path / "bench_add.py")
    return tmp_path


def taot(taot_bin, world, *arguments, torch=NO_TORCH):
    """taot with the Python running the tests as $TAOT_PYTHON, `torch` standing in for torch."""
    stand_in = torch_stand_in(world / "torch_stand_in", torch)
    path = os.pathsep.join([str(stand_in), str(world / "lib"), os.environ.get("PYTHONPATH", "")])
    environment = dict(os.environ, TAOT_PYTHON=sys.executable, PYTHONPATH=path)
    return subprocess.run([str(taot_bin), *map(str, arguments)], cwd=world, env=environment, capture_output=True,
                          text=True, timeout=120)


def one_error_line(result):
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("command", [
    ("bench", "fakeadd", "--bench", "bench_add.py"),
    ("check", "fakeadd", "--bench", "bench_add.py"),
    ("check", "fakeadd", "--bench", "bench_add.py", "--against", "interpreter", "--where", "n=4096",
     "--variants", "auto"),
    ("check", "fakeadd", "--bench", "bench_add.py", "--json"),
])
def test_without_torch_one_line_names_the_python_and_the_way_out(taot_bin, world, command):
    line = one_error_line(taot(taot_bin, world, *command))
    assert f"taot {command[0]} needs torch" in line
    assert f"{sys.executable}, the Python taot runs, has none" in line
    assert "pip install torch" in line and "TAOT_PYTHON" in line


@pytest.mark.parametrize("command", ["bench", "check"])
def test_torch_without_a_gpu_is_said_in_one_line(taot_bin, world, command):
    line = one_error_line(taot(taot_bin, world, command, "fakeadd", "--bench", "bench_add.py",
                               torch=TORCH_WITHOUT_GPU))
    assert line == f"error: taot {command} needs a CUDA GPU, and torch 2.0.fake in {sys.executable} sees none" \
        or line.startswith(f"error: taot {command} needs a CUDA GPU, and torch 2.0.fake in {sys.executable} sees "
                           f"none (CUDA_VISIBLE_DEVICES=")


@pytest.mark.parametrize("command", ["bench", "check"])
def test_what_needs_no_torch_is_checked_first(taot_bin, world, command):
    bench_file(world / "bench_other_library.py", library="other_add")
    bench_file(world / "bench_other_kernel.py", kernel="mul_kernel")
    cases = [
        (("--bench", "bench_other_library.py"),
         'bench_other_library.py: LIBRARY: expected the library benchmarked, "fakeadd", got "other_add"'),
        (("--bench", "bench_other_kernel.py"),
         'bench_other_kernel.py: KERNEL: expected a kernel of library fakeadd: add_kernel, got "mul_kernel"'),
        (("--bench", "bench_add.py", "--variants", "99999,nope"),
         "--variants 99999: kernel add_kernel has 2 variants (indices 0 to 1)"),
        (("--bench", "bench_add.py", "--variants", "nope"), "--variants nope: not a variant of kernel add_kernel"),
        (("--bench", "bench_add.py", "--kernel", "mul_kernel"), "--kernel mul_kernel: not in bench_add.py"),
        (("--bench", "bench_add.py", "--where", "n=5"), "no shape of bench_add.py matches --where"),
    ]
    for arguments, message in cases:
        line = one_error_line(taot(taot_bin, world, command, "fakeadd", *arguments))
        assert message in line, (arguments, line)
        assert "torch" not in line, (arguments, line)


@pytest.mark.parametrize("torch", [NO_TORCH, TORCH_WITHOUT_GPU], ids=["no torch", "no GPU"])
@pytest.mark.parametrize("command", [("bench",), ("check",), ("check", "--against", "interpreter")])
def test_a_make_args_that_fails_on_its_own_says_so_first(taot_bin, world, command, torch):
    bench_file(world / "bench_raising.py", make_args="raise ValueError('no such size')")
    line = one_error_line(taot(taot_bin, world, command[0], "fakeadd", "--bench", "bench_raising.py", *command[1:],
                               torch=torch))
    assert line == ("error: bench_raising.py: make_args(n=1024): expected a call that returns the arguments, got "
                    "ValueError at line 9: no such size")


def test_check_against_jit_names_a_kernel_source_that_is_gone(taot_bin, world):
    (world / "lib" / "kernels.py").unlink()
    line = one_error_line(taot(taot_bin, world, "check", "fakeadd", "--bench", "bench_add.py"))
    assert "kernel add_kernel: checking against Triton's JIT runs the source its manifest names" in line
    assert "kernels.py" in line and "--against reference" in line


@pytest.mark.parametrize("command, output", [("bench", "-o PREFIX"), ("sanitize", "-o PATH"), ("check", "-o PATH")])
def test_json_is_a_flag_in_every_command_and_o_writes_files(taot_bin, world, command, output):
    helped = taot(taot_bin, world, command, "--help")
    assert helped.returncode == 0 and "[--json]" in helped.stdout and output in helped.stdout
    if command != "sanitize":  # (its program comes last: a PATH after --json would be read as the program)
        old_form = taot(taot_bin, world, command, "fakeadd", "--bench", "bench_add.py", "--json", "out.json")
        assert old_form.returncode == 2 and "unrecognized arguments: out.json" in old_form.stderr


def test_check_json_is_a_flag_and_o_writes_the_file(taot_bin, world):
    helped = taot(taot_bin, world, "check", "--help")
    assert helped.returncode == 0 and "[--json]" in helped.stdout and "-o PATH" in helped.stdout
    old_form = taot(taot_bin, world, "check", "fakeadd", "--bench", "bench_add.py", "--json", "out.json")
    assert old_form.returncode == 2 and "unrecognized arguments: out.json" in old_form.stderr
    written = taot(taot_bin, world, "check", "fakeadd", "--bench", "bench_add.py", "-o", "out.json")
    assert "taot check needs torch" in one_error_line(written)
