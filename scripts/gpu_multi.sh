#!/usr/bin/env bash
# The multi-GPU tests, for a machine with 2 or more GPUs: builds the vector_add and kernels-as-written
# modules (taot binary from TAOT_BIN, default .carry/bin/taot) and runs tests/gpu/python/
# test_multi_gpu.py (one thread per GPU launching at once, and arrays of one GPU refused while
# another is current) and tests/kernels_as_written/test_as_written_multi_gpu.py (selection by each
# device's arch, grids from each device's multiprocessor count, from one thread per GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$root/build-gpu
taot_bin=${TAOT_BIN:-$root/.carry/bin/taot}
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
"$taot_bin" build examples/vector_add/vector_add.toml -o "$work/vector_add" -j "$(nproc)" --python --quiet
cmake -S "$work/vector_add" -B "$work/vector_add/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAOT_SOURCE_DIR="$root" \
  -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build "$work/vector_add/build" -j "$(nproc)" >/dev/null
PYTHONPATH=$work/vector_add/build:$PYTHONPATH python3 tests/gpu/run_python_tests.py tests/gpu/python/test_multi_gpu.py
"$taot_bin" build tests/kernels_as_written/kernels.toml -o "$work/as_written" -j "$(nproc)" --python --quiet
cmake -S "$work/as_written" -B "$work/as_written/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAOT_SOURCE_DIR="$root" \
  -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build "$work/as_written/build" -j "$(nproc)" >/dev/null
PYTHONPATH=$work/as_written/build:$PYTHONPATH python3 tests/gpu/run_python_tests.py \
  tests/kernels_as_written/test_as_written_multi_gpu.py
