#!/usr/bin/env bash
# Builds and runs tests/gpu/mixed_versions on a GPU machine: vector_add compiled here by this
# machine's Triton (taot binary: TAOT_BIN, default build/tools/taot/taot), launch_features of the
# newest release in SOURCES/VERSION/ (`scripts/gpu.sh versions run` unpacks them there).
# Usage: run.sh WORK_DIR SOURCES
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$1
mkdir -p "$work"
other=$(ls -d "$2"/*/launch_features | sort -V | tail -1)
"${TAOT_BIN:-$root/build/tools/taot/taot}" build "$root/examples/vector_add/vector_add.toml" -o "$work/vector_add" --quiet
python3 - "$work/vector_add/manifest.json" "$other/manifest.json" <<'EOF'
import json, sys
releases = []
for path in sys.argv[1:]:
    manifest = json.load(open(path))
    image = manifest["kernels"][0]["variants"][0]["images"][0]
    print(manifest["library"], "compiled by Triton", manifest["triton_version"], "- ptxas", image.get("ptxas_version"),
          "- launch ABI", image.get("launch_abi"))
    releases.append(manifest["triton_version"].split(".")[:2])
sys.exit("run.sh: both libraries come from one Triton release" if releases[0] == releases[1] else 0)
EOF
cmake -S "$here" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVECTOR_ADD_DIR="$work/vector_add" \
  -DLAUNCH_FEATURES_DIR="$other" > "$work/cmake.log" 2>&1 || { tail -20 "$work/cmake.log"; exit 1; }
cmake --build "$work/build" -j "$(nproc)" > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
"$work/build/mixed_versions"
