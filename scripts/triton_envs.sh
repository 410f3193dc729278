#!/usr/bin/env bash
# Makes build/triton-envs/<version>: one virtual environment per Triton release taot supports other
# than the system Python's (scripts/setup.sh installs 3.6.0 there), each over the system Python
# (--system-site-packages: pytest, numpy come from there) with that triton==<version> from PyPI. The
# versions are the `tested` column of python/taot/triton_api/versions.py, so a new release there is a
# new environment here. Prints the environments' interpreters on stdout, one per line, oldest first;
# progress on stderr. Safe to run again: an environment that already has its Triton is kept.
#   scripts/triton_envs.sh            all of them
#   scripts/triton_envs.sh 3.9.0      only the ones named
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -gt 0 ]; then
  versions=("$@")
else
  # (An assignment, not mapfile < <(...): set -e stops on the Python failing.)
  listed=$(python3 - <<'EOF'
import runpy
table = runpy.run_path("python/taot/triton_api/versions.py")
import triton
for release in table["RELEASES"].values():
    if release.tested != triton.__version__:
        print(release.tested)
EOF
)
  [ -n "$listed" ] || { echo "triton_envs.sh: python/taot/triton_api/versions.py lists no other release" >&2; exit 1; }
  mapfile -t versions <<< "$listed"
fi

mkdir -p build/triton-envs
for version in "${versions[@]}"; do
  environment="build/triton-envs/$version"
  python="$environment/bin/python"
  log="$environment.log"
  if [ -x "$python" ] && "$python" -c "import sys, triton; sys.exit(triton.__version__ != sys.argv[1])" "$version" 2>/dev/null; then
    echo "triton_envs.sh: $environment already has triton $version" >&2
  else
    echo "triton_envs.sh: installing triton==$version from PyPI into $environment" >&2
    : > "$log"
    if ! python3 -m venv --clear --system-site-packages "$environment" >>"$log" 2>&1 ||
       ! "$python" -m pip install --no-input --progress-bar off "triton==$version" >>"$log" 2>&1; then
      echo "triton_envs.sh: could not make $environment with triton==$version (log: $log)" >&2
      tail -n 20 "$log" >&2 || true
      exit 1
    fi
  fi
  echo "$PWD/$python"
done
