#!/usr/bin/env bash
# Makes build/torch-env: a virtual environment over the system Python (--system-site-packages: Triton
# 3.6.0 and pytest come from there, see scripts/setup.sh) with torch==2.11.0 from PyPI, for the tests
# that need torch but no GPU (tests/interpreter). PyPI's wheel is the CUDA build; it runs on the CPU.
# Safe to run again: does nothing when the environment already has that torch. One line on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

torch_version="2.11.0"
environment="build/torch-env"
log="build/torch-env.log"
python="$environment/bin/python"

has_torch() {
  "$python" -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null
}

fail() {
  echo "torch_env.sh: $1 (log: $log)" >&2
  tail -n 20 "$log" >&2 || true
  exit 1
}

if [ -x "$python" ] && has_torch; then
  echo "torch_env.sh: $environment already has torch $torch_version" >&2
  exit 0
fi

echo "torch_env.sh: installing torch==$torch_version from PyPI into $environment (a few GB; minutes)" >&2
mkdir -p build
: > "$log"
if ! "$python" -c "" 2>/dev/null; then
  python3 -m venv --clear --system-site-packages "$environment" >>"$log" 2>&1 \
    || fail "could not create the virtual environment $environment with python3 -m venv"
fi
"$python" -m pip install --no-input --progress-bar off "torch==$torch_version" >>"$log" 2>&1 \
  || fail "pip could not install torch==$torch_version into $environment"
has_torch || fail "$environment has no importable torch $torch_version after pip install"
