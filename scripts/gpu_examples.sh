#!/usr/bin/env bash
# The softmax, layer norm and matmul examples on a GPU machine, from a clean checkout: taot build of
# each spec with its Python module (CMake), the example's tests (Triton JIT and the taot module
# against torch references; pytest), then its benchmark (taot vs torch vs Triton JIT). Called by
# scripts/gpu_suite.sh, or on its own:
#
#   scripts/gpu_examples.sh [WORK_DIR [LOGS_DIR]]
#
# WORK_DIR (default build-gpu/) receives the generated libraries (WORK_DIR/<library>, built into
# WORK_DIR/<library>/build); LOGS_DIR (default $OUT, else WORK_DIR/logs) the full logs, two files:
# examples_build.log (CMake) and examples_tests.log (pytest). The taot binary comes prebuilt:
# TAOT_BIN (default .carry/bin/taot). Prints "=== step ===" headers, counts failures and exits
# non-zero if any step failed.
set -uo pipefail
# nlohmann-json (header-only, needed to build the runtime) is not installed on the GPU machines:
# the caller may carry a copy (include/ and share/cmake/) in .carry/nlohmann.
if [ -d "$(dirname "$0")/../.carry/nlohmann" ]; then
  export CMAKE_PREFIX_PATH="$(cd "$(dirname "$0")/../.carry/nlohmann" && pwd)${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
fi
cd "$(dirname "$0")/.."
root=$PWD
work=${1:-$root/build-gpu}
logs=${2:-${OUT:-$work/logs}}
mkdir -p "$work" "$logs"
work=$(cd "$work" && pwd)
logs=$(cd "$logs" && pwd)
rm -f "$logs/examples_build.log" "$logs/examples_tests.log"
taot_bin=${TAOT_BIN:-$root/.carry/bin/taot}
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
failures=0
step() { echo; echo "=== $* ==="; }
fail() { echo "GPU EXAMPLES FAILURE: $*"; failures=$((failures + 1)); }
jobs=$(nproc)

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || fail "nvidia-smi"
python3 -c 'import triton, torch; print("triton", triton.__version__, "torch", torch.__version__)' || fail "triton / torch"

# variant_counts MANIFEST: "matmul 16, matmul_generic 2 variants x 2 targets"
variant_counts() {
  python3 - "$1" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
kernels = ", ".join(f"{kernel['name']} {len(kernel['variants'])}" for kernel in manifest["kernels"])
print(f"{kernels} variants x {len(manifest['targets'])} targets")
PY
}

# build SPEC LIBRARY: taot build (cold, timed) and CMake of the library and its Python module into
# $work/LIBRARY/build (the folder that goes on PYTHONPATH). Returns non-zero on failure.
build() {
  local spec=$1 library=$2 out=$work/$2 start
  rm -rf "$out"
  start=$(date +%s%N)
  "$taot_bin" build "$spec" -o "$out" -j "$jobs" --python --quiet || { fail "taot build $spec"; return 1; }
  echo "$library: cold taot build $(( ($(date +%s%N) - start) / 1000000 )) ms; $(variant_counts "$out/manifest.json")"
  local log=$work/${library}_build.log rc
  { cmake -S "$out" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAOT_SOURCE_DIR="$root" \
      -DPython_EXECUTABLE="$(command -v python3)" && cmake --build "$out/build" -j "$jobs"; } > "$log" 2>&1
  rc=$?
  { echo "=== $library ==="; cat "$log"; } >> "$logs/examples_build.log"
  if [ $rc -ne 0 ]; then
    tail -20 "$log"
    fail "CMake build of $library (log: $logs/examples_build.log)"
    return 1
  fi
}

# run_tests NAME MODULE_PATH TEST_FILES...: the example's tests from its folder, with the built
# modules on PYTHONPATH; a summary here, the full output appended to $logs/examples_tests.log.
run_tests() {
  local name=$1 module_path=$2 log=$work/$1_tests.log rc
  shift 2
  (cd "examples/$name" && PYTHONPATH=$module_path:$PYTHONPATH python3 "$root/tests/gpu/run_python_tests.py" "$@" -s) \
    > "$log" 2>&1
  rc=$?
  { echo "=== $name ==="; cat "$log"; } >> "$logs/examples_tests.log"
  grep -E "^\[aot vs jit\]|^\[shared memory\]|passed|failed|FAIL|Error" "$log" | tail -60
  [ $rc -eq 0 ] || fail "$name tests (log: $logs/examples_tests.log)"
}

# ---------------------------------------------------------------------------------------------------
step "softmax: taot build with the Python module"
build examples/softmax/softmax.toml softmax && softmax_built=1 || softmax_built=0

step "softmax through Triton JIT and through the taot module, against torch"
if [ $softmax_built = 1 ]; then
  run_tests softmax "$work/softmax/build" test_softmax_spec.py test_softmax_gpu.py test_softmax_aot_gpu.py
  step "benchmark: softmax, taot vs torch.softmax vs Triton JIT"
  PYTHONPATH=$work/softmax/build:$PYTHONPATH python3 bench/softmax_vs_torch.py || fail "softmax benchmark"
else
  fail "softmax tests and benchmark not run (no module)"
fi

# ---------------------------------------------------------------------------------------------------
step "layer norm: taot build with the Python module"
build examples/layer_norm/layer_norm.toml layer_norm && layer_norm_built=1 || layer_norm_built=0

step "layer norm through Triton JIT and through the taot module, against torch"
if [ $layer_norm_built = 1 ]; then
  run_tests layer_norm "$work/layer_norm/build" test_layer_norm_spec.py test_layer_norm_gpu.py \
    test_layer_norm_aot_gpu.py
  step "benchmark: layer norm, taot vs torch.nn.functional.layer_norm vs Triton JIT"
  PYTHONPATH=$work/layer_norm/build:$PYTHONPATH python3 bench/layer_norm_vs_torch.py || fail "layer norm benchmark"
else
  fail "layer norm tests and benchmark not run (no module)"
fi

# ---------------------------------------------------------------------------------------------------
step "matmul: taot build of matmul.toml (fp16, bf16) and matmul_fp8.toml with the Python modules"
matmul_built=1
build examples/matmul/matmul.toml matmul || matmul_built=0
build examples/matmul/matmul_fp8.toml matmul_fp8 || matmul_built=0

step "matmul through Triton JIT and through the taot modules, against torch"
if [ $matmul_built = 1 ]; then
  matmul_path=$work/matmul/build:$work/matmul_fp8/build
  run_tests matmul "$matmul_path" test_matmul_spec.py test_matmul_gpu.py test_matmul_aot_gpu.py
  step "benchmark: matmul, taot vs cuBLAS vs Triton JIT"
  PYTHONPATH=$matmul_path:$PYTHONPATH python3 bench/matmul_vs_cublas.py || fail "matmul benchmark"
else
  fail "matmul tests and benchmark not run (no modules)"
fi

# ---------------------------------------------------------------------------------------------------
step "persistent matmul: taot build with the Python module"
build examples/persistent_matmul/persistent_matmul.toml persistent_matmul && persistent_matmul_built=1 \
  || persistent_matmul_built=0

step "persistent matmul through the taot module, against torch and Triton JIT; benchmark vs torch.matmul"
if [ $persistent_matmul_built = 1 ]; then
  run_tests persistent_matmul "$work/persistent_matmul/build" test_persistent_matmul_gpu.py
  grep -E "^\[persistent matmul\]" "$work/persistent_matmul_tests.log"
else
  fail "persistent matmul tests and benchmark not run (no module)"
fi

# ---------------------------------------------------------------------------------------------------
step "TMA matmul: taot build with the Python module"
build examples/tma_matmul/tma_matmul.toml tma_matmul && tma_matmul_built=1 || tma_matmul_built=0

step "TMA matmul through the taot module, against cuBLAS and Triton JIT; benchmark vs cuBLAS"
if [ $tma_matmul_built = 1 ]; then
  run_tests tma_matmul "$work/tma_matmul/build" test_tma_matmul_spec.py test_tma_matmul_gpu.py
  grep -E "^\[tma matmul\]" "$work/tma_matmul_tests.log"
else
  fail "TMA matmul tests and benchmark not run (no module)"
fi

echo
echo "GPU examples finished with $failures failure(s)"
exit $((failures > 0))
