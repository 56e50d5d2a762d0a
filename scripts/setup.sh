#!/usr/bin/env bash
# Installs what ddp4j needs on a Debian machine (apt packages, as root) and builds it with Maven:
# the native library (CMake) lands in java/target/classes/natives/linux-x86_64, runtime jars in
# java/target/lib. Safe to run again: it installs only what is missing and Maven rebuilds only
# what changed.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# fontconfig and a font: XChart draws the benchmark plots (headless Java still needs them);
# python3-numpy: the tests read checkpoints with an independent safetensors reader (python3-torch,
# for regenerating golden files only, is not installed here)
packages=(cmake make g++ libgloo-dev libopenblas-dev dataset-fashion-mnist fontconfig fonts-dejavu-core python3-numpy)
# the namespace cluster of the multi-host tests (scripts/cluster.sh): ip netns and tc (iproute2),
# packet loss and drops (nftables), kill(1) for SIGSTOP/SIGCONT (procps)
packages+=(iproute2 nftables procps)
# the text corpus of the GPT demo (org.ddp4j.text.PrepareText's default input): fortunes-min and fortunes put
# 15,000 English fortunes, 2.5 MB of plain UTF-8 text separated by '%' lines, in /usr/share/games/fortunes
packages+=(fortunes-min fortunes)
command -v mvn >/dev/null 2>&1 || packages+=(maven)
command -v javac >/dev/null 2>&1 || packages+=(openjdk-17-jdk-headless)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh: missing Debian packages: ${missing[*]}; run as root, or: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

# SLURM for RealSlurmTest (scripts/slurm-local.sh runs a one-node cluster); without recommends it
# is a few MB, with them it pulls ROCm, HDF5 and database plugins
slurm=(slurmctld slurmd slurm-client munge)
missing=()
for pkg in "${slurm[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "setup.sh: installing ${missing[*]} (for the SLURM test)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
      || echo "setup.sh: could not install ${missing[*]}; RealSlurmTest will be skipped" >&2
  else
    echo "setup.sh: not root: ${missing[*]} not installed; RealSlurmTest will be skipped" >&2
  fi
fi

cd "$root"
echo "setup.sh: building ddp4j (mvn package, tests skipped)"
# This also fetches every test and provided dependency (compiling needs them): Spark's jars among them, from
# which the Spark tests start their local standalone cluster offline (checked with an empty local repository).
mvn -q -B -DskipTests package
