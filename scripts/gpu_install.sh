#!/usr/bin/env bash
# Issue I on a GPU machine: the wheel built elsewhere (WHEEL=path; that machine has no package index)
# installed into a virtual environment over the system Python (Triton, torch, nanobind from there);
# then tests/install/consumer, a project outside the tree, builds axpy with find_package(taot) +
# taot_add_library, and its Python module launches on the GPU against torch. Logs on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
: "${WHEEL:?set WHEEL to the taot wheel (pip wheel . -w DIR)}"
work=${WORK:-$root/build-gpu}/install
rm -rf "$work"
mkdir -p "$work"
system_python=$(command -v python3)
echo "gpu_install: libcrypto.so.3 $(ldconfig -p | grep -q libcrypto.so.3 && echo present || echo MISSING)"
python3 -m venv --system-site-packages "$work/env"
# That machine's python3 may itself be a virtual environment, whose packages a venv made from it does
# not see: a .pth file adds them (what a package index would have installed).
parent_site=$("$system_python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
env_site=$("$work/env/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "$parent_site" > "$env_site/system_python.pth"
"$work/env/bin/pip" install -q --no-deps --no-index "$WHEEL"
echo "gpu_install: $("$work/env/bin/taot" --version) installed in $work/env"
cp -r tests/install/consumer "$work/consumer"
export PATH="$work/env/bin:$PATH"
unset PYTHONPATH TAOT_BIN TAOT_PYTHON
nanobind_root=$("$work/env/bin/python" -m nanobind --cmake_dir)
cmake -S "$work/consumer" -B "$work/consumer/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPython_EXECUTABLE="$work/env/bin/python" -Dnanobind_ROOT="$nanobind_root" >/dev/null
cmake --build "$work/consumer/build" | grep -E "taot build|Building|Linking|error" | head -20
echo "gpu_install: count_variants says $("$work/consumer/build/count_variants")"
PYTHONPATH="$work/consumer/build" "$work/env/bin/python" tests/gpu/install/launch_axpy.py
