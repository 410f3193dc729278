#!/usr/bin/env bash
# Issue G on a GPU machine: `taot bench`, `taot tune` and `taot profile` through their commands, and
# the figures (bench vs do_bench vs Nsight Compute; tune vs a JIT tuner). Builds the libraries it
# needs with `taot build --python --build-library` into WORK (default build-gpu/), in parallel;
# fused_moe_tune may come compiled in .carry/fused_moe_tune (its CMake build happens here).
# PART selects what runs: build, tests, tune-figure (TUNE_GPUS: its --gpus, default all), tune-scaling
# (the tune figure on one GPU, then on every GPU), jit-figure (JIT_BATCH_SIZES, JIT_BUDGET_S, JIT_PART
# name a slice of it), ncu-figure, or all (default; tune-scaling is not in it). Logs go to $OUT (or
# WORK/logs).
set -uo pipefail
if [ -d "$(dirname "$0")/../.carry/nlohmann" ]; then
  export CMAKE_PREFIX_PATH="$(cd "$(dirname "$0")/../.carry/nlohmann" && pwd)${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
fi
cd "$(dirname "$0")/.."
root=$PWD
work=${WORK:-$root/build-gpu}
logs=${OUT:-$work/logs}
part=${PART:-all}
mkdir -p "$work" "$logs"
export TAOT_BIN=${TAOT_BIN:-$root/.carry/bin/taot}
export TAOT_GPU_WORK=$work
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
jobs=$(nproc)
failures=0
step() { echo; echo "=== $* ($(date +%T)) ==="; }
fail() { echo "GPU MEASURE FAILURE: $*"; failures=$((failures + 1)); }

# build SPEC LIBRARY: taot build with the Python module and its CMake build; log in WORK/LIBRARY.log.
build() {
  "$TAOT_BIN" build "$1" -o "$work/$2" -j "$jobs" --python --build-library --quiet > "$work/$2.log" 2>&1 \
    || { tail -20 "$work/$2.log"; return 1; }
}

if [ "$part" = all ] || [ "$part" = build ]; then
  step "build vector_add, softmax, matmul, fused_moe, fused_moe_tune"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  if [ -d .carry/fused_moe_tune ] && [ ! -d "$work/fused_moe_tune" ]; then cp -r .carry/fused_moe_tune "$work/"; fi
  pids=()
  for library in vector_add softmax matmul fused_moe; do
    build "examples/$library/$library.toml" "$library" & pids+=($!)
  done
  build bench/specs/fused_moe_tune.toml fused_moe_tune & pids+=($!)
  for pid in "${pids[@]}"; do wait "$pid" || fail "a library build (see $work/*.log)"; done
  ls -d "$work"/*/build | head
fi

if [ "$part" = all ] || [ "$part" = tests ]; then
  step "taot bench and taot tune through the command line"
  python3 tests/gpu/run_python_tests.py -s tests/gpu/python/test_measure_commands.py 2>&1 | tee "$logs/measure_tests.log" \
    | grep -E "auto/torch|TFLOP/s|keys in|shapes|passed|failed|FAIL|Error" | head -60
  grep -q " 0 failed\|[0-9] passed in" "$logs/measure_tests.log" && ! grep -q "[1-9][0-9]* failed" "$logs/measure_tests.log" \
    || fail "measure tests"
  step "taot check: against the JIT, the reference and the interpreter"
  python3 tests/gpu/run_python_tests.py tests/gpu/python/test_check_command.py 2>&1 | tail -15 || fail "check tests"
  step "taot sanitize: a deliberate out-of-bounds store found and located"
  python3 tests/gpu/run_python_tests.py tests/gpu/python/test_sanitize.py 2>&1 | tail -15 || fail "sanitize tests"
  if [ -f tests/gpu/python/test_print_assert.py ]; then
    step "print and assert in AOT kernels"
    python3 tests/gpu/run_python_tests.py -s tests/gpu/python/test_print_assert.py 2>&1 | tail -30 || fail "print/assert"
  fi
  step "taot repro: a fused MoE launch recorded, its replay program built and run"
  PYTHONPATH=$work/fused_moe/build:$PYTHONPATH python3 tests/gpu/run_python_tests.py tests/gpu/python/test_repro.py \
    2>&1 | tail -15 || fail "repro test"
  if [ -f tests/gpu/python/test_profile_moe.py ]; then
    step "taot profile of the MoE layer"
    PYTHONPATH=$work/fused_moe/build:$PYTHONPATH python3 tests/gpu/run_python_tests.py tests/gpu/python/test_profile_moe.py \
      2>&1 | tail -40 || fail "profile test"
  fi
fi

# The tune figure times the way benchmark_moe.py does (a CUDA graph of 10 launches, no L2 flush), so
# that the JIT tuner's measurements of both tools' choices compare like with like.
# tune_figure GPUS NAME [LIBRARY]: taot tune of LIBRARY (default fused_moe_tune) over GPUS (--gpus: all,
# a count, indices) into $logs/NAME; the wall time in ms goes to $logs/NAME.wall_ms.
tune_figure() {
  local start
  start=$(date +%s%N)
  python3 -m taot tune "$work/${3:-fused_moe_tune}" --bench examples/fused_moe/bench_fused_moe.py -o "$logs/$2" --restart \
    --graph --launches-per-rep 10 --no-flush --gpus "$1" 2>&1 | tail -28 || fail "taot tune --gpus $1"
  echo "$(( ($(date +%s%N) - start) / 1000000 ))" > "$logs/$2.wall_ms"
  echo "taot tune --gpus $1 wall: $(cat "$logs/$2.wall_ms") ms"
}
if [ "$part" = all ] || [ "$part" = tune-figure ]; then
  step "figure: taot tune of fused_moe_tune (graph of 10 launches, no flush), wall time"
  tune_figure "${TUNE_GPUS:-all}" tune
fi
# The same search on one GPU and then on every GPU of the host: the wall times, and whether the two
# tables choose the same configs (they may differ where two candidates are within noise). TUNE_LIBRARY:
# fused_moe_tune (default, built by PART=build) or fused_moe_tune_wide (384 configs, built here).
if [ "$part" = tune-scaling ]; then
  library=${TUNE_LIBRARY:-fused_moe_tune}
  step "figure: taot tune of $library on one GPU, then on every GPU"
  nvidia-smi --query-gpu=index,name --format=csv,noheader
  if [ ! -d "$work/$library/build" ]; then
    start=$(date +%s%N)
    build "$(ls bench/specs/"$library".* | head -1)" "$library" || fail "building $library"
    echo "built $library in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  fi
  tune_figure 1 tune_one_gpu "$library"
  tune_figure all tune_every_gpu "$library"
  python3 - "$logs" <<'PY' || fail "tune scaling comparison"
# The wall times, and each run's choices timed by the other run: a choice that differs should be
# within noise of the other run's best.
import json, sys
from pathlib import Path
logs = Path(sys.argv[1])
def run(name):
    table = json.loads((logs / name / "fused_moe_kernel.json").read_text())
    chosen = {entry["key"][0]: entry["measured"]["variant"] for entry in table["entries"]}
    timed, keys = {}, {}  # the workers' lines interleave: a result names its task
    for line in (logs / name / "fused_moe_kernel.journal.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry.get("begin"):
            keys[entry["task"]] = entry["key"][0]
        elif entry.get("status") == "ok":
            timed.setdefault(keys[entry["task"]], {})[entry["result"]] = entry["median_ms"]
    return chosen, timed, int((logs / f"{name}.wall_ms").read_text())
(one, one_timed, one_ms), (every, every_timed, every_ms) = run("tune_one_gpu"), run("tune_every_gpu")
same = sum(one[key] == every.get(key) for key in one)
print(f"one GPU {one_ms / 1000:.1f} s, every GPU {every_ms / 1000:.1f} s: {one_ms / every_ms:.2f}x; "
      f"the same config chosen for {same} of {len(one)} keys")
for mine, other_timed, label in ((one, every_timed, "one-GPU choices in the every-GPU run"),
                                 (every, one_timed, "every-GPU choices in the one-GPU run")):
    ratios = [other_timed[key][mine[key]] / min(other_timed[key].values()) for key in mine
              if mine[key] in other_timed.get(key, {})]
    print(f"{label}: {len(ratios)} of {len(mine)} timed in full there, worst {max(ratios, default=1):.3f}x its best")
sys.exit(0 if set(one) == set(every) else 1)
PY
fi
if [ "$part" = all ] || [ "$part" = jit-figure ]; then
  step "figure: the JIT tuner (benchmark_moe.py's method), batch sizes ${JIT_BATCH_SIZES:-all}"
  python3 bench/moe_tune_jit.py --json "$logs/jit_tune${JIT_PART:-}.json" \
    ${JIT_BATCH_SIZES:+--batch-sizes $JIT_BATCH_SIZES} --budget-s "${JIT_BUDGET_S:-500}" 2>&1 | tail -30 || fail "JIT tuner"
fi
if [ "$part" = all ] || [ "$part" = ncu-figure ]; then
  step "figure: taot bench vs do_bench vs Nsight Compute"
  PYTHONPATH=$work/vector_add/build:$work/softmax/build:$work/matmul/build:$PYTHONPATH \
    python3 bench/bench_vs_do_bench_ncu.py --json "$logs/three_ways.json" 2>&1 | tail -30 || fail "three ways"
fi
echo
echo "gpu_measure.sh: $failures failure(s)"
exit $((failures > 0))
