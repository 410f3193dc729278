#!/usr/bin/env bash
# The whole GPU suite from a clean checkout on a GPU machine: taot build of the vector_add example
# (Triton there, no network), the upstream triton.tools AOT C for comparison, the GPU tests, the
# example program and the benchmarks, then scripts/gpu_examples.sh (softmax, layer norm, matmul;
# TAOT_SKIP_EXAMPLES=1 leaves them out; TAOT_SKIP_COLD_BUILD=1 the two-minute cold-build benchmark,
# to fit one device call of ten minutes). The taot binary comes prebuilt (TAOT_BIN, default
# .carry/bin/taot) because the GPU machines have no -dev packages. Logs go to $OUT (or build-gpu/).
set -uo pipefail
# nlohmann-json (header-only, needed to build the runtime) is not installed on the GPU machines:
# the caller may carry a copy (include/ and share/cmake/) in .carry/nlohmann.
if [ -d "$(dirname "$0")/../.carry/nlohmann" ]; then
  export CMAKE_PREFIX_PATH="$(cd "$(dirname "$0")/../.carry/nlohmann" && pwd)${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
fi
cd "$(dirname "$0")/.."
root=$PWD
work=$root/build-gpu
logs=${OUT:-$work/logs}
mkdir -p "$work" "$logs"
taot_bin=${TAOT_BIN:-$root/.carry/bin/taot}
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
failures=0
step() { echo; echo "=== $* ==="; }
fail() { echo "GPU SUITE FAILURE: $*"; failures=$((failures + 1)); }
jobs=$(nproc)

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || fail "nvidia-smi"
python3 -c 'import triton, torch; print("triton", triton.__version__, "torch", torch.__version__)'

step "taot build examples/vector_add/vector_add.toml (-j $jobs, cold)"
rm -rf "$work/vector_add"
start=$(date +%s%N)
"$taot_bin" build examples/vector_add/vector_add.toml -o "$work/vector_add" -j "$jobs" --python --quiet || fail "taot build"
echo "cold build: $(( ($(date +%s%N) - start) / 1000000 )) ms"
start=$(date +%s%N)
"$taot_bin" build examples/vector_add/vector_add.toml -o "$work/vector_add" -j "$jobs" --python 2>&1 | tail -2
echo "no-change rebuild: $(( ($(date +%s%N) - start) / 1000000 )) ms"

step "upstream triton.tools.compile + link for the same kernel and config"
upstream=$work/upstream
rm -rf "$upstream" && mkdir -p "$upstream"
if python3 -m triton.tools.compile examples/vector_add/vector_add.py -n add_kernel -w 4 -ns 3 \
     -s "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024" -g "(n_elements + 1023) / 1024, 1, 1" \
     -on add_up -o "$upstream/add_up" && python3 -m triton.tools.link "$upstream"/add_up*.h -o "$upstream/add_up_linked"; then
  grep -n "CUresult\|void" "$upstream/add_up_linked.h"
else
  fail "upstream AOT generation"; upstream=""
fi

step "configure and build the GPU tests and benchmarks"
configure() {
  cmake -S . -B "$work/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAOT_BUILD_TOOLS=OFF -DTAOT_BUILD_TESTS=OFF \
    -DTAOT_BUILD_GPU_TESTS=ON -DTAOT_VECTOR_ADD_DIR="$work/vector_add" -DTAOT_UPSTREAM_AOT_DIR="$1" \
    -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
}
configure "$upstream" && cmake --build "$work/cmake" -j "$jobs" > "$logs/gpu_build.log" 2>&1
if [ $? -ne 0 ]; then
  tail -30 "$logs/gpu_build.log"
  fail "build with upstream C; retrying without it"
  configure "" && cmake --build "$work/cmake" -j "$jobs" || fail "build"
fi

step "GPU tests (ctest -L gpu)"
(cd "$work/cmake" && ctest -L gpu --output-on-failure -V | grep -E "variants|passed|failed|FAIL") || fail "GPU tests"

step "Python module tests (vector_add through the generated module, with torch)"
module_dir=$work/cmake/generated/vector_add
PYTHONPATH=$module_dir:$PYTHONPATH python3 tests/gpu/run_python_tests.py tests/gpu/python/test_vector_add_module.py \
  tests/gpu/python/test_timing_module.py || fail "Python module tests"

step "fused MoE: taot build with the Python module"
"$taot_bin" build examples/fused_moe/fused_moe.toml -o "$work/fused_moe" -j "$jobs" --python --quiet || fail "taot build fused_moe"
cmake -S "$work/fused_moe" -B "$work/fused_moe/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAOT_SOURCE_DIR="$root" \
  -DPython_EXECUTABLE="$(command -v python3)" >/dev/null && cmake --build "$work/fused_moe/build" -j "$jobs" \
  > "$logs/fused_moe_build.log" 2>&1 || { tail -20 "$logs/fused_moe_build.log"; fail "build fused_moe"; }

step "fused MoE through Triton JIT and through the taot module, against the torch reference"
(cd examples/fused_moe && PYTHONPATH=$work/fused_moe/build:$PYTHONPATH python3 "$root/tests/gpu/run_python_tests.py" \
  test_fused_moe_gpu.py test_fused_moe_aot_gpu.py -s 2>&1 | grep -E "aot vs jit|passed|failed|FAIL|Error" | head -60) \
  || fail "fused MoE tests"

step "launch features: scratch buffers, clusters, PDL, cooperative grids (taot build + module tests)"
"$taot_bin" build tests/gpu/launch_features/launch_features.toml -o "$work/launch_features" -j "$jobs" --python --quiet \
  || fail "taot build launch_features"
cmake -S "$work/launch_features" -B "$work/launch_features/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTAOT_SOURCE_DIR="$root" -DPython_EXECUTABLE="$(command -v python3)" >/dev/null \
  && cmake --build "$work/launch_features/build" -j "$jobs" > "$logs/launch_features_build.log" 2>&1 \
  || { tail -20 "$logs/launch_features_build.log"; fail "build launch_features"; }
PYTHONPATH=$work/launch_features/build:$PYTHONPATH python3 tests/gpu/run_python_tests.py \
  tests/gpu/launch_features/test_launch_features.py || fail "launch features tests"

step "kernels as written (autotune, heuristics, None, string constexprs, num_sms, launch-only): taot vs JIT"
"$taot_bin" build tests/kernels_as_written/kernels.toml -o "$work/as_written" -j "$jobs" --python --quiet \
  || fail "taot build kernels_as_written"
cmake -S "$work/as_written" -B "$work/as_written/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAOT_SOURCE_DIR="$root" \
  -DPython_EXECUTABLE="$(command -v python3)" >/dev/null && cmake --build "$work/as_written/build" -j "$jobs" \
  > "$logs/as_written_build.log" 2>&1 || { tail -20 "$logs/as_written_build.log"; fail "build kernels_as_written"; }
(cd tests/kernels_as_written && PYTHONPATH=$work/as_written/build:$PYTHONPATH python3 "$root/tests/gpu/run_python_tests.py" \
  test_as_written_gpu.py 2>&1 | tail -15) || fail "kernels as written tests"

step "the workbench on a GPU: the from-ir loop (JIT with a private cache, edited IR rebuilt into the cache and the library)"
TAOT_BIN=$taot_bin python3 tests/gpu/run_python_tests.py tests/gpu/python/test_from_ir_tpt.py || fail "from-ir TPT loop"

step "benchmark: MoE layer, taot vs Triton JIT vs torch reference"
PYTHONPATH=$work/fused_moe/build:$PYTHONPATH python3 bench/moe_layer.py || fail "MoE layer benchmark"

step "example program"
cmake -S examples/vector_add -B "$work/example" -G Ninja -DTAOT_GENERATED_DIR="$work/vector_add" \
  -Dvector_add_python=OFF >/dev/null \
  && cmake --build "$work/example" -j "$jobs" > "$logs/example_build.log" 2>&1 \
  && "$work/example/vector_add_example" || fail "example"

step "compute-sanitizer memcheck: the example program, the launch-feature tests, vector_add through the module"
sanitize() { compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 --print-limit 20 "$@"; }
sanitize "$work/example/vector_add_example" 2>&1 | tail -3 || fail "memcheck: example program"
PYTHONPATH=$work/launch_features/build:$PYTHONPATH sanitize python3 -m pytest -q -p no:cacheprovider \
  tests/gpu/launch_features/test_launch_features.py 2>&1 | tail -3 || fail "memcheck: launch features"
PYTHONPATH=$module_dir:$PYTHONPATH sanitize python3 -m pytest -q -p no:cacheprovider \
  tests/gpu/python/test_vector_add_module.py -k "not torch_compile and not custom_op" 2>&1 | tail -3 \
  || fail "memcheck: vector_add module"
(cd examples/fused_moe && PYTHONPATH=$work/fused_moe/build:$PYTHONPATH sanitize python3 -m pytest -q -p no:cacheprovider \
  test_fused_moe_aot_gpu.py -k "seed_case or (layer_sweep and 7-8-2)" 2>&1 | tail -3) || fail "memcheck: fused MoE"

if [ "${TAOT_SKIP_COLD_BUILD:-0}" != 1 ]; then
  step "benchmark: cold build of a 1016-variant matmul library (-j $jobs)"
  TAOT_BIN=$taot_bin python3 bench/cold_build.py -j "$jobs" || fail "cold build benchmark"
fi

step "benchmark: CPU cost per launch"
"$work/cmake/bench/bench_launch_overhead" || fail "launch overhead benchmark"
"$work/cmake/bench/bench_launch_path_cpu" || fail "launch path (null driver) benchmark"
step "benchmark: CPU cost per call from Python"
PYTHONPATH=$module_dir:$work/fused_moe/build:$PYTHONPATH python3 bench/python_launch_overhead.py || fail "Python launch benchmark"
step "benchmark: bandwidth"
"$work/cmake/bench/bench_bandwidth" || fail "bandwidth benchmark"

if [ "${TAOT_SKIP_EXAMPLES:-0}" != 1 ]; then
  step "examples: softmax, layer norm, matmul (scripts/gpu_examples.sh)"
  scripts/gpu_examples.sh "$work" "$logs" || fail "examples (scripts/gpu_examples.sh)"
fi

echo
echo "GPU suite finished with $failures failure(s)"
exit $((failures > 0))
