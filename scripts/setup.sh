#!/usr/bin/env bash
# Installs what taot needs on a fresh Debian 12 machine with the CUDA toolkit: build tools and
# libraries from Debian, Triton 3.6.0 (the tests' baseline; scripts/triton_envs.sh makes one
# environment per other supported release), pytest and pytest-xdist, nanobind (taot's Python binding),
# matplotlib (bench plots), and pyelftools and msgpack (the tests read AMD code objects' metadata notes
# with them) from PyPI. Safe to run again.
set -euo pipefail

# clang and libclang-rt-dev (its sanitizer and libFuzzer runtimes) are for scripts/sanitize.sh fuzz.
debian_packages=(cmake ninja-build g++ pkg-config nlohmann-json3-dev libcli11-dev libfmt-dev libmstch-dev libgtest-dev
                 zlib1g-dev ccache libssl-dev
                 clang libclang-rt-dev)
missing=()
for package in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! python3 -c 'import triton, sys; sys.exit(triton.__version__ != "3.6.0")' 2>/dev/null \
   || ! python3 -c 'import pytest, xdist, nanobind, matplotlib, elftools, msgpack' 2>/dev/null; then
  echo "setup: installing triton==3.6.0, pytest, pytest-xdist, nanobind, matplotlib, pyelftools and msgpack" >&2
  python3 -m pip install -q "triton==3.6.0" pytest pytest-xdist nanobind matplotlib llnl-hatchet pyelftools msgpack
fi

cuda_header=""
for candidate in /usr/local/cuda/include/cuda.h /usr/include/cuda.h; do
  [ -f "$candidate" ] && cuda_header=$candidate && break
done
if [ -z "$cuda_header" ]; then
  echo "setup: no CUDA toolkit found (cuda.h); install the CUDA 13 toolkit first" >&2
  exit 1
fi
