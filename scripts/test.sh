#!/usr/bin/env bash
# The test command (also what CI runs): set-up, build, unit tests (ctest), then the Python front
# end's tests, the tests of the real taot binary and of the wheel in a fresh virtual environment
# (pytest), the front end and the Triton-calling commands again on every other supported Triton
# release, then the unit tests under the sanitizers and a minute of fuzzing the manifest reader
# (scripts/sanitize.sh). Needs no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Every CMake build below (this one, the wheel's in tests/install, the generated libraries') goes
# through ccache: the wheel's compiles are this build's again.
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
scripts/build.sh
(cd build && ctest --output-on-failure --no-tests=error -L unit)
export TAOT_BIN="$PWD/build/tools/taot/taot"
# One pytest run per folder: each folder's conftest.py is its own module.
# The examples' folders hold GPU tests (skipped here) and spec checks that need no GPU.
# A folder whose every test skips here (no GPU) fails the run: each must have a test that runs.
# tests/interpreter needs torch (Triton's interpreter runs on CPU tensors): it runs in the
# environment scripts/torch_env.sh makes, over the system Python.
scripts/torch_env.sh
# tests/corpus builds kernels of PyPI projects (pinned in tests/corpus/requirements.txt) installed here.
scripts/corpus_env.sh > /dev/null
summary=$(mktemp)
# Two pytest workers (pytest-xdist), each test file on one of them so that a file's module-scoped
# fixtures (a library built once for its tests) are made once: the tests spend much of their time in
# one-core steps (Python start-up, Triton's import, CMake's configure), which the other worker's
# compiles fill.
run_folder() {  # PYTHON FOLDER_OR_FILE...
  local python=$1 started=$SECONDS status
  shift
  set +e
  "$python" -m pytest -q -n 2 --dist loadfile "$@" | tee "$summary"
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -eq 5 ]; then
    echo "test.sh: pytest collected no tests in $*" >&2
    exit 1
  fi
  [ "$status" -eq 0 ] || exit "$status"
  echo "test.sh: $* took $((SECONDS - started)) s" >&2
  if ! tail -1 "$summary" | grep -q "[1-9][0-9]* passed"; then
    echo "test.sh: no test ran in $* without a GPU (all skipped)" >&2
    exit 1
  fi
}
for folder in tests/python tests/cli tests/install tests/kernels_as_written tests/corpus examples/softmax examples/layer_norm examples/matmul examples/persistent_matmul examples/tma_matmul examples/gluon examples/fused_moe; do
  run_folder python3 "$folder"
done
run_folder build/torch-env/bin/python tests/interpreter
# tests/cluster starts a Ray cluster of several nodes on this machine (Ray is an optional dependency:
# scripts/ray_env.sh installs it into build/ray-env, over the system Python).
scripts/ray_env.sh
run_folder build/ray-env/bin/python tests/cluster
# Every other Triton release taot supports (python/taot/triton_api/versions.py; scripts/triton_envs.sh
# makes one environment per release): the front end's tests on each; through the real binary, the
# commands that call Triton on the oldest (passes, from-ir, import-cache of a cache the JIT wrote)
# and on the newest also every example spec's build. (The tests that compile generated C++ with
# CMake run once, above: what they build does not depend on the Triton.) About 15 minutes.
triton_list=$(scripts/triton_envs.sh)
mapfile -t triton_pythons <<< "$triton_list"
workbench_tests=(tests/cli/test_passes.py tests/cli/test_from_ir.py tests/cli/test_import_cache.py)
for python in "${triton_pythons[@]}"; do
  echo "test.sh: Triton $("$python" -c 'import triton; print(triton.__version__)') ($python)" >&2
  export TAOT_PYTHON=$python
  run_folder "$python" tests/python
  if [ "$python" = "${triton_pythons[-1]}" ]; then
    run_folder "$python" tests/cli/test_example_build.py "${workbench_tests[@]}" \
      -k "not generated_library and not second_build and not every_variant_was_compiled"
  elif [ "$python" = "${triton_pythons[0]}" ]; then
    run_folder "$python" "${workbench_tests[@]}" -k "not generated_library"
  fi
  unset TAOT_PYTHON
done
rm -f "$summary"
scripts/sanitize.sh
