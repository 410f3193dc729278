#!/usr/bin/env bash
# The main job: build taot, turn examples/vector_add into a C++ library with `taot build`, compile
# the library and the example program, and run it where a GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
out=build/examples/vector_add
build/tools/taot/taot build examples/vector_add/vector_add.toml -o "$out/generated"
cmake -S examples/vector_add -B "$out/build" -G Ninja -DTAOT_GENERATED_DIR="$PWD/$out/generated" >/dev/null
cmake --build "$out/build"
if ls /dev/nvidia0 >/dev/null 2>&1 || command -v nvidia-smi >/dev/null 2>&1; then
  "$out/build/vector_add_example"
else
  echo "run_example: no GPU on this machine; built $out/build/vector_add_example (run it on a GPU machine)"
fi
