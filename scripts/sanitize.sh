#!/usr/bin/env bash
# Sanitizer and fuzz runs of the host tests (no GPU), each in its own build folder:
#   asan  every unit test under AddressSanitizer + UndefinedBehaviorSanitizer (TAOT_SANITIZE), build-asan/
#   tsan  the runtime's unit tests under ThreadSanitizer (TAOT_TSAN), build-tsan/
#   fuzz  libFuzzer on the manifest reader (TAOT_FUZZ, clang, with ASan + UBSan) for
#         TAOT_FUZZ_SECONDS (default 60), build-fuzz/; a failure prints the input that caused it
# Usage: scripts/sanitize.sh [asan|tsan|fuzz]... (none: all three, as scripts/test.sh runs them).
# Each step ends with its runner's summary line; a step that ran no test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

# Reports go to stderr with a stack; undefined behaviour and races fail the test that hit them.
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

configure() {  # build folder, cmake arguments...
  local folder=$1
  shift
  cmake -S . -B "$folder" -G Ninja "$@" >/dev/null
}

asan() {
  configure build-asan -DCMAKE_BUILD_TYPE=Debug -DTAOT_SANITIZE=ON
  cmake --build build-asan --target taot_unit_tests  # (not the taot command: a third of the build)
  (cd build-asan && ctest --output-on-failure --no-tests=error -L unit -j "$(nproc)")
}

tsan() {
  # Only the runtime has threads; the code generator is left out to save build time.
  configure build-tsan -DCMAKE_BUILD_TYPE=Debug -DTAOT_TSAN=ON -DTAOT_BUILD_TOOLS=OFF
  cmake --build build-tsan --target taot_unit_tests
  # ThreadSanitizer (clang 14, gcc 12) cannot map its shadow memory under the 32-bit mmap
  # randomization of recent kernels; run without address randomization where that is allowed.
  local no_aslr=()
  if setarch "$(uname -m)" -R true 2>/dev/null; then no_aslr=(setarch "$(uname -m)" -R); fi
  # Every test once; then the tests that start threads (their names say Thread or Concurrent) ten
  # times more: a race shows only in a run where the threads happen not to be ordered by other
  # locks (with the module cache's lock removed, one run in two of the 32-thread test reports it).
  # Repeating every test 30 times took 26 minutes of CI, mostly in single-threaded walks.
  (cd build-tsan && "${no_aslr[@]}" ctest --output-on-failure --no-tests=error -L unit -j "$(nproc)")
  (cd build-tsan && GTEST_REPEAT=10 "${no_aslr[@]}" ctest --output-on-failure --no-tests=error -L unit \
     -R 'Thread|Concurrent' -j "$(nproc)")
}

fuzz() {
  local seconds=${TAOT_FUZZ_SECONDS:-60}
  configure build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DTAOT_SANITIZE=ON -DTAOT_FUZZ=ON
  cmake --build build-fuzz --target taot_manifest_fuzzer
  # New inputs go to build-fuzz/corpus; the checked-in seeds in tests/fuzz/corpus are only read.
  rm -rf build-fuzz/artifacts
  mkdir -p build-fuzz/corpus build-fuzz/artifacts
  local log=build-fuzz/fuzz.log status=0
  build-fuzz/tests/fuzz/taot_manifest_fuzzer -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -dict=tests/fuzz/manifest.dict -artifact_prefix=build-fuzz/artifacts/ \
    build-fuzz/corpus tests/fuzz/corpus >"$log" 2>&1 || status=$?
  if [ "$status" -ne 0 ] || ! grep -q '^Done [0-9]* runs' "$log"; then
    tail -n 150 "$log" >&2
    local input
    for input in build-fuzz/artifacts/*; do
      [ -f "$input" ] || continue
      echo "sanitize.sh: the input that failed, $input ($(wc -c <"$input") bytes), as base64:" >&2
      base64 -w 0 "$input" >&2
      echo >&2
      echo "sanitize.sh: reproduce with build-fuzz/tests/fuzz/taot_manifest_fuzzer $input; once fixed, add it" \
        "to tests/fuzz/corpus/ so that the unit tests replay it" >&2
    done
    echo "sanitize.sh: the manifest fuzzer failed (exit status $status); full log in $log" >&2
    return 1
  fi
  grep -E '^INFO: seed corpus|^#[0-9]+[[:space:]]+(INITED|DONE)|^Done [0-9]+ runs' "$log"
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(asan tsan fuzz)
for step in "${steps[@]}"; do
  case "$step" in
    asan | tsan | fuzz) ;;
    *) echo "sanitize.sh: unknown step \"$step\" (asan, tsan or fuzz)" >&2; exit 2 ;;
  esac
done
for step in "${steps[@]}"; do
  echo "sanitize.sh: $step" >&2
  "$step"
done
