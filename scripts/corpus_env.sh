#!/usr/bin/env bash
# Installs the projects of tests/corpus/requirements.txt (their Triton kernels are the corpus of
# tests/corpus) into build/corpus-site, a folder for PYTHONPATH: each pinned package without its
# dependencies and from wheels only (nothing is built), so that it installs the same way on any
# machine and leaves the environment's torch and triton alone. The corpus needs only the packages'
# Python sources: their compiled extensions (bitsandbytes' per-CUDA libraries, xformers' and
# torchao's, 160 of the 190 MB, each module importing without them) and torchao's stray top-level
# `test` package (which would shadow Python's own) are removed, so that the folder is small enough to
# carry to a GPU machine (under 20 MB). Safe to run again: a package already there at its pinned
# version is skipped. One line per step on stderr; prints the folder on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

requirements="tests/corpus/requirements.txt"
site="build/corpus-site"
log="build/corpus-site.log"
python=${CORPUS_PYTHON:-python3}

mkdir -p "$site"
: > "$log"
installed() {  # NAME VERSION: whether SITE holds NAME at VERSION (its .dist-info says so)
  local normalized=${1//-/_}
  compgen -G "$site/${normalized}-$2.dist-info" > /dev/null \
    || compgen -G "$site/${normalized,,}-$2.dist-info" > /dev/null
}
while read -r line; do
  requirement=${line%%#*}
  requirement=${requirement//[[:space:]]/}
  [ -n "$requirement" ] || continue
  name=${requirement%%==*}
  version=${requirement#*==}
  if installed "$name" "$version"; then
    echo "corpus_env.sh: $name $version already in $site" >&2
    continue
  fi
  echo "corpus_env.sh: installing $name==$version into $site" >&2
  if ! "$python" -m pip install --no-input --progress-bar off --no-deps --only-binary=:all: --no-compile --upgrade \
      --target "$site" "$name==$version" >> "$log" 2>&1; then
    echo "corpus_env.sh: pip could not install $name==$version (log: $log)" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
done < "$requirements"
pruned=$(find "$site" \( -name "*.so" -o -name "*.so.*" \) -type f -print | wc -l)
if [ "$pruned" -gt 0 ] || [ -d "$site/test" ] || [ -n "$(find "$site" -name __pycache__ -print -quit)" ]; then
  echo "corpus_env.sh: removing $pruned compiled extensions, bytecode and the stray test/ package from $site" >&2
  find "$site" \( -name "*.so" -o -name "*.so.*" \) -type f -delete
  find "$site" -name __pycache__ -type d -prune -exec rm -rf {} +
  rm -rf "$site/test"
fi
echo "$PWD/$site"
