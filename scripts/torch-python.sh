#!/usr/bin/env bash
# Picks the Python that runs the PyTorch side of the benchmarks (benchmarks/pytorch/*.py and the
# scripts' other PyTorch jobs) and prints its path; every script that runs PyTorch asks here, so
# this is the one place the choice is made. The first of these that imports torch:
#   1. $TORCH_PYTHON (also read under its older name $PYTHON), when set: no fallback past it;
#   2. .venv-torch/bin/python in the repository (a venv with the torch 2.13 CPU wheel:
#      scripts/torch-anchor.sh --venv .venv-torch makes one), then build/torch-venv/bin/python;
#   3. Debian's /usr/bin/python3 with python3-torch 1.13 (scripts/torch-anchor.sh installs it).
# Exits 1 with a hint when none imports torch.
#
# usage: scripts/torch-python.sh [--modules M[,M]] [--min-version X.Y] [--describe]
#   --modules LIST   what the interpreter must import besides torch (e.g. numpy)
#   --min-version V  the oldest torch accepted (e.g. 2.0 for scripts/gpt_train_torch.py)
#   --describe       print "PATH torch VERSION" instead of the path alone
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
modules=torch
min_version=0.0
describe=0
while (($#)); do
  case "$1" in
    --modules) modules="torch,$2"; shift 2 ;;
    --min-version) min_version="$2"; shift 2 ;;
    --describe) describe=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "torch-python.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
imports() {
  [[ -x "$1" ]] && "$1" -c "import ${modules//,/, }
v = tuple(int(x) for x in torch.__version__.split('+')[0].split('.')[:2])
assert v >= tuple(int(x) for x in '$min_version'.split('.')[:2])" >/dev/null 2>&1
}
explicit="${TORCH_PYTHON:-${PYTHON:-}}"
chosen=""
if [[ -n "$explicit" ]]; then
  imports "$explicit" || {
    echo "torch-python.sh: TORCH_PYTHON=$explicit cannot import ${modules//,/, } (torch >= $min_version)" >&2; exit 1; }
  chosen="$explicit"
else
  for candidate in "$root/.venv-torch/bin/python" "$root/build/torch-venv/bin/python" /usr/bin/python3; do
    if imports "$candidate"; then chosen="$candidate"; break; fi
  done
fi
if [[ -z "$chosen" ]]; then
  echo "torch-python.sh: no Python here imports ${modules//,/, } (torch >= $min_version): set TORCH_PYTHON=/path/to/python," \
    "or make a venv with torch 2.13 (scripts/torch-anchor.sh --venv $root/.venv-torch)," \
    "or install Debian's python3-torch 1.13 (scripts/torch-anchor.sh)" >&2
  exit 1
fi
if ((describe)); then
  echo "$chosen torch $("$chosen" -c 'import torch; print(torch.__version__)')"
else
  echo "$chosen"
fi
