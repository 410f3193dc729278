#!/usr/bin/env bash
# Libraries compiled by other Triton releases, run on a GPU. The GPU machines have one Triton (3.6);
# the libraries of the others are compiled on a machine without a GPU and travel as generated
# sources, which need no Triton.
#
#   scripts/gpu_versions.sh prepare [VERSION...]   here (no GPU): taot build of every library below
#       with each Triton of scripts/triton_envs.sh (default: all but the system Python's) into
#       build/versions/<version>/<library>/, then .carry/versions/<version>.tar.xz holding each
#       library's generated sources and manifest (the artifacts stay behind; the cubins' C arrays
#       compress about 15x); prints each build's time
#   scripts/gpu_versions.sh run [VERSION...]       on the GPU machine, .carry carried (versions/, and
#       bin/taot for the mixed program's own build, as for scripts/gpu_suite.sh): unpacks
#       them, builds each library with CMake and its Python module, runs its GPU tests with it;
#       then one program linking libraries of two Triton releases (tests/gpu/mixed_versions).
#       Every log, in one file: $OUT/versions.log (or build-gpu/versions/versions.log); exits
#       non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
carried=$root/.carry/versions

# library | spec | folder the tests run in | test files (run_python_tests.py's arguments; "-": none of
# its own). A test runs with every library of its release on PYTHONPATH (matmul's tests take both).
LIBRARIES="
vector_add|examples/vector_add/vector_add.toml|.|tests/gpu/python/test_vector_add_module.py
softmax|examples/softmax/softmax.toml|examples/softmax|test_softmax_aot_gpu.py
layer_norm|examples/layer_norm/layer_norm.toml|examples/layer_norm|test_layer_norm_aot_gpu.py
matmul|examples/matmul/matmul.toml|examples/matmul|-
matmul_fp8|examples/matmul/matmul_fp8.toml|examples/matmul|test_matmul_aot_gpu.py
persistent_matmul|examples/persistent_matmul/persistent_matmul.toml|examples/persistent_matmul|test_persistent_matmul_gpu.py
tma_matmul|examples/tma_matmul/tma_matmul.toml|examples/tma_matmul|test_tma_matmul_gpu.py
fused_moe|examples/fused_moe/fused_moe.toml|examples/fused_moe|test_fused_moe_aot_gpu.py
launch_features|tests/gpu/launch_features/launch_features.toml|tests/gpu/launch_features|test_launch_features.py
kernels_as_written|tests/kernels_as_written/kernels.toml|tests/kernels_as_written|test_as_written_gpu.py
"

prepare() {
  local taot_bin=$root/build/tools/taot/taot failures=0 pythons python version name spec start
  [ -x "$taot_bin" ] || { echo "gpu_versions.sh: build taot first (scripts/build.sh)" >&2; exit 1; }
  local listed
  listed=$(scripts/triton_envs.sh "$@") || exit 1
  mapfile -t pythons <<< "$listed"
  mkdir -p "$carried"
  for python in "${pythons[@]}"; do
    version=$("$python" -c "import triton; print(triton.__version__)")
    local staging=$root/build/versions/carry/$version
    rm -rf "$staging"
    while IFS='|' read -r name spec _ _; do
      [ -n "$name" ] || continue
      local out=$root/build/versions/$version/$name
      start=$(date +%s)
      if TAOT_PYTHON=$python "$taot_bin" build "$spec" -o "$out" --python --quiet; then
        mkdir -p "$staging/$name"
        find "$out" -maxdepth 1 -type f -exec cp {} "$staging/$name/" \;
        echo "triton $version: $name built in $(( $(date +%s) - start )) s, $(du -sh "$staging/$name" | cut -f1)"
      else
        echo "GPU VERSIONS FAILURE: triton $version: taot build $spec"; failures=$((failures + 1))
      fi
    done <<< "$LIBRARIES"
    if tar -cJf "$carried/$version.tar.xz" -C "$staging" .; then
      echo "triton $version: $carried/$version.tar.xz, $(du -sh "$carried/$version.tar.xz" | cut -f1)"
    else
      echo "GPU VERSIONS FAILURE: triton $version: could not write $carried/$version.tar.xz"; failures=$((failures + 1))
    fi
  done
  return $((failures > 0))
}

# build_library SOURCE BUILD LOG: CMake of one generated library and its Python module.
build_library() {
  { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTAOT_SOURCE_DIR="$root" \
      -DPython_EXECUTABLE="$(command -v python3)" && cmake --build "$2" -j 4; } > "$3" 2>&1
}

run() {
  if [ -d "$root/.carry/nlohmann" ]; then
    export CMAKE_PREFIX_PATH="$root/.carry/nlohmann${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  fi
  local work=$root/build-gpu/versions failures=0 version name tests test_folder tarball folder
  local sources=$work/sources logs=$work/logs summary=${OUT:-$work}/versions.log
  rm -rf "$work" && mkdir -p "$sources" "$logs"
  export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import triton, torch; print("JIT references: triton", triton.__version__, "torch", torch.__version__)'
  for tarball in "$carried"/*.tar.xz; do
    [ -f "$tarball" ] || { echo "gpu_versions.sh: nothing in $carried (run 'prepare' first and carry .carry)"; exit 1; }
    version=$(basename "$tarball" .tar.xz)
    if [ $# -gt 0 ] && [[ " $* " != *" $version "* ]]; then continue; fi
    mkdir -p "$sources/$version" && tar -xJf "$tarball" -C "$sources/$version" ||
      { echo "GPU VERSIONS FAILURE: cannot unpack $tarball"; failures=$((failures + 1)); }
  done
  if ! ls -d "$sources"/*/*/ > /dev/null 2>&1; then
    echo "gpu_versions.sh: no library to run (releases asked: ${*:-all}; carried: $(ls "$carried"))"; exit 1
  fi
  # Every library's CMake build at once (each -j 4), then the tests one library at a time.
  local started=$SECONDS
  for folder in "$sources"/*/*/; do
    version=$(basename "$(dirname "$folder")"); name=$(basename "$folder")
    build_library "$folder" "$work/$version/$name" "$logs/${version}_${name}.log" &
  done
  wait
  echo "CMake builds of $(ls -d "$sources"/*/*/ | wc -l) libraries: $((SECONDS - started)) s"
  for folder in "$sources"/*/; do
    version=$(basename "$folder")
    local modules
    modules=$(ls -d "$work/$version"/*/ | tr '\n' ':')
    while IFS='|' read -r name _ test_folder tests; do
      [ -n "$name" ] || continue
      if [ ! -d "$sources/$version/$name" ]; then  # prepare failed to build it
        echo "GPU VERSIONS FAILURE: triton $version: $name is not in the carried sources"; failures=$((failures + 1))
        continue
      fi
      local build=$work/$version/$name log=$logs/${version}_${name}.log
      echo "=== triton $version: $name ==="
      if ! ls "$build"/*.so > /dev/null 2>&1; then
        tail -20 "$log"; echo "GPU VERSIONS FAILURE: triton $version: CMake build of $name"; failures=$((failures + 1))
        continue
      fi
      [ "$tests" != "-" ] || continue
      # shellcheck disable=SC2086
      if (cd "$test_folder" && PYTHONPATH=$modules$PYTHONPATH python3 "$root/tests/gpu/run_python_tests.py" $tests) \
           >> "$log" 2>&1; then
        tail -1 "$log"
      else
        grep -E "FAILED|Error|failed" "$log" | head -20
        echo "GPU VERSIONS FAILURE: triton $version: $name tests"; failures=$((failures + 1))
      fi
    done <<< "$LIBRARIES"
  done
  echo "=== one program, two libraries of two Triton releases (tests/gpu/mixed_versions) ==="
  if tests/gpu/mixed_versions/run.sh "$work/mixed" "$sources" > "$logs/mixed_versions.log" 2>&1; then
    tail -3 "$logs/mixed_versions.log"
  else
    tail -20 "$logs/mixed_versions.log"; echo "GPU VERSIONS FAILURE: mixed versions"; failures=$((failures + 1))
  fi
  for log in "$logs"/*.log; do echo "=== $(basename "$log")"; cat "$log"; done > "$summary"
  echo "GPU versions finished with $failures failure(s); every log in $summary"
  return $((failures > 0))
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: scripts/gpu_versions.sh prepare [VERSION...] | run [VERSION...]" >&2; exit 2 ;;
esac
