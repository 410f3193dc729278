#!/usr/bin/env bash
# Makes build/ray-env: a virtual environment over the system Python (--system-site-packages: Triton and
# pytest come from there, see scripts/setup.sh) with Ray from PyPI, for the tests of --cluster on a
# local Ray cluster (tests/cluster). Ray is taot's optional dependency (pip install 'taot[ray]').
# Safe to run again: does nothing when the environment already has Ray. One line on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

ray_requirement="ray>=2.9,<3"
environment="build/ray-env"
log="build/ray-env.log"
python="$environment/bin/python"

if [ -x "$python" ] && "$python" -c "import ray" 2>/dev/null; then
  echo "ray_env.sh: $environment already has Ray $("$python" -c 'import ray; print(ray.__version__)')" >&2
  exit 0
fi
echo "ray_env.sh: installing '$ray_requirement' from PyPI into $environment" >&2
mkdir -p build
{ python3 -m venv --system-site-packages "$environment" && "$python" -m pip install -q "$ray_requirement"; } > "$log" 2>&1 \
  || { echo "ray_env.sh: installing Ray failed (log: $log)" >&2; tail -n 20 "$log" >&2; exit 1; }
