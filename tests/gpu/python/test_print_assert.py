"""GPU: tl.device_print and tl.device_assert in AOT kernels. tests/gpu/print_assert/print_assert.toml
is built twice with `taot build --python --build-library`: as written (release) and with --debug.
In child processes: the printing kernel's output reaches stdout (printf FIFO sized through
$TAOT_PRINTF_FIFO_BYTES); in the debug build an argument that breaks the assert makes the next call
fail with taot's error naming the kernel and variant and saying to re-create the context, and a
fresh process then runs the same library; in the release build the same call does not fire. Needs
torch on a CUDA GPU, the taot binary ($TAOT_BIN, else build/tools/taot/taot of this checkout),
CMake and nanobind."""
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from gpu_modules import torch_if_installed  # tests/gpu_modules.py, through the repo's conftest.py

torch = torch_if_installed()
pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[3]
TAOT = os.environ.get("TAOT_BIN") or str(REPO / "build" / "tools" / "taot" / "taot")
SPEC = REPO / "tests" / "gpu" / "print_assert" / "print_assert.toml"

PRINT_PROGRAM = textwrap.dedent('''
    import torch
    import print_assert as pa
    x = torch.tensor([1001, 1002, 1003, 1004, 1005], dtype=torch.int32, device="cuda")
    pa.show(x, 5)
    torch.cuda.synchronize()
    print("launched show", flush=True)
''')

# Breaks the assert (x reaches limit) when argv[1] is "fire", then calls the kernel again: the
# second call (or the synchronization through taot) reports the assert.
ASSERT_PROGRAM = textwrap.dedent('''
    import sys, time
    import torch
    import print_assert as pa
    x = torch.arange(300, dtype=torch.int32, device="cuda")
    out = torch.zeros_like(x)
    limit = 10 if sys.argv[1] == "fire" else 1000
    try:
        pa.checked(x, out, 300, limit)
        time.sleep(1.0)  # the trap has happened by now
        pa.checked(x, out, 300, 1000)
        pa.release_scratch()  # synchronizes the context through taot
    except RuntimeError as error:
        print("TAOT ERROR:", error, flush=True)
        sys.exit(3)
    torch.cuda.synchronize()
    print("OK", bool(torch.equal(out.cpu(), (x + 1).cpu())), flush=True)
''')


def run(command, cwd, env=None):
    result = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, env=env,
                            timeout=900)
    assert result.returncode == 0, f"{command}: {result.stdout}\n{result.stderr}"
    return result


def build(root, name, *flags):
    major, minor = torch.cuda.get_device_capability()
    out = root / name
    result = run([TAOT, "build", SPEC, "-o", out, "--target", f"sm_{major}{minor}", "--python", "--build-library",
                  *flags], root)
    return out / "build", result


def child(program, module_dir, *args, **env):
    variables = dict(os.environ, **env)
    variables["PYTHONPATH"] = os.pathsep.join(filter(None, [str(module_dir), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, env=variables,
                          timeout=300)


def test_print_and_assert():
    with tempfile.TemporaryDirectory(prefix="taot-print-assert-") as scratch:
        root = Path(scratch)
        release, _ = build(root, "release")
        debug, debug_build = build(root, "debug", "--debug")
        assert "checked_i32_i32_i32_i32_B128_dbg1: static_print: checked_kernel BLOCK 128" in debug_build.stderr, \
            debug_build.stderr

        # device_print works in any build; the FIFO size is set before the first launch.
        for module_dir in (release, debug):
            printed = child(PRINT_PROGRAM, module_dir, TAOT_PRINTF_FIFO_BYTES="4M")
            assert printed.returncode == 0, printed.stdout + printed.stderr
            assert "launched show" in printed.stdout
            for value in (1001, 1003, 1005):
                assert "taot-print x=" in printed.stdout and str(value) in printed.stdout, printed.stdout

        # Debug build: the assert fires and the next call names the kernel and variant.
        fired = child(ASSERT_PROGRAM, debug, "fire")
        assert fired.returncode == 3, fired.stdout + fired.stderr
        message = fired.stdout
        assert "CUDA_ERROR_ASSERT" in message, message
        assert "a device assert fired in print_assert::checked variant checked_i32_i32_i32_i32_B128_dbg1" in message, \
            message
        assert "the CUDA context is unusable: destroy and re-create it (or restart the process)" in message, message
        assert "x reached limit" in fired.stdout + fired.stderr  # the device's own assert message

        # A fresh process (a fresh context) runs the same library.
        fresh = child(ASSERT_PROGRAM, debug, "pass")
        assert fresh.returncode == 0 and "OK True" in fresh.stdout, fresh.stdout + fresh.stderr

        # Release build: no assert in the kernel, the same call does not fire.
        quiet = child(ASSERT_PROGRAM, release, "fire")
        assert quiet.returncode == 0 and "OK True" in quiet.stdout, quiet.stdout + quiet.stderr
