#!/usr/bin/env bash
# Makes sure Debian's PyTorch 1.13 (the side-by-side anchor and the golden files' oracle) can be
# imported by /usr/bin/python3: installs python3-torch, and python3-torchvision with --vision, when
# they are missing (as root; otherwise says which command to run). The benchmark scripts call it
# before their PyTorch runs. Note: a `python3` found first on PATH may be another Python without torch.
#
# usage: scripts/torch-anchor.sh [--vision]
set -euo pipefail
packages=(python3-torch)
modules="torch"
if [[ "${1:-}" == --vision ]]; then
  packages+=(python3-torchvision)
  modules="torch, torchvision"
elif (($#)); then
  echo "torch-anchor.sh: unknown option '$1' (usage: scripts/torch-anchor.sh [--vision])" >&2; exit 2
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
