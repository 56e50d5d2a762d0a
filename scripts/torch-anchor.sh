#!/usr/bin/env bash
# Makes a PyTorch available to the benchmarks' PyTorch side (benchmarks/pytorch/, picked by
# scripts/torch-python.sh) and to the golden files' oracle. Two ways:
#   (default)     Debian's PyTorch 1.13 for /usr/bin/python3: installs python3-torch, and
#                 python3-torchvision with --vision, when they are missing (as root; otherwise says
#                 which command to run). The benchmark scripts call this when no interpreter has torch.
#   --venv DIR    a venv at DIR with the torch 2.13 CPU wheel and numpy (pip install
#                 torch==2.13.0+cpu numpy; offline from a wheelhouse where pip is configured with one,
#                 else from the index pip is given, e.g. PIP_INDEX_URL=https://download.pytorch.org/whl/cpu
#                 with PIP_EXTRA_INDEX_URL=https://pypi.org/simple). DIR=.venv-torch in the repository
#                 is what scripts/torch-python.sh prefers; TORCH_PYTHON=DIR/bin/python picks any other.
# Note: a `python3` found first on PATH may be another Python without torch.
#
# usage: scripts/torch-anchor.sh [--vision | --venv DIR]
set -euo pipefail
usage="usage: scripts/torch-anchor.sh [--vision | --venv DIR]"
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --venv)
    venv="${2:?$usage}"
    if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c 'import torch, numpy' 2>/dev/null; then
      echo "torch-anchor.sh: $venv already has torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)')" >&2
      exit 0
    fi
    echo "torch-anchor.sh: making a venv with torch 2.13 (CPU) in $venv (a few minutes)" >&2
    python3 -m venv "$venv" || { echo "torch-anchor.sh: python3 -m venv failed (Debian: apt-get install -y python3-venv)" >&2; exit 1; }
    "$venv/bin/pip" install -q torch==2.13.0+cpu numpy >&2 \
      || { echo "torch-anchor.sh: pip could not install torch==2.13.0+cpu (see its message; an index with the +cpu wheels: PIP_INDEX_URL=https://download.pytorch.org/whl/cpu)" >&2; exit 1; }
    "$venv/bin/python" -c 'import torch; print("torch-anchor.sh: torch", torch.__version__, "in '"$venv"'")' >&2
    exit 0 ;;
esac
packages=(python3-torch)
modules="torch"
if [[ "${1:-}" == --vision ]]; then
  packages+=(python3-torchvision)
  modules="torch, torchvision"
elif (($#)); then
  echo "torch-anchor.sh: unknown option '$1' ($usage)" >&2; exit 2
fi
[[ -x /usr/bin/python3 ]] || packages+=(python3)
/usr/bin/python3 -c "import $modules" 2>/dev/null && exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "torch-anchor.sh: /usr/bin/python3 cannot import $modules; run as root, or: sudo apt-get install -y ${packages[*]}" >&2
  exit 1
fi
echo "torch-anchor.sh: installing ${packages[*]} (a few minutes)" >&2
{ DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}" >&2 \
    || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}" >&2; }; } \
  || { echo "torch-anchor.sh: apt-get install ${packages[*]} failed" >&2; exit 1; }
/usr/bin/python3 -c "import $modules" \
  || { echo "torch-anchor.sh: installed ${packages[*]}, but /usr/bin/python3 still cannot import $modules" >&2; exit 1; }
