#!/usr/bin/env bash
# Side-by-side comparison with the PyTorch anchors (../shared/anchors, Debian python3-torch),
# same model, batch, data, ranks and threads (1 thread per rank), in one run on this machine.
# Prints one table of figures and ratios (ddp4j / PyTorch); paste it into benchmarks/RESULTS.md.
# usage: scripts/bench.sh [EPOCHS]   (ConvNet epochs, default 1; the linear demo runs 2000 epochs)
# Both sides run as on a user's machine: OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which this
# workplace sets on some processors, are unset for the runs (BENCH_KEEP_OPENBLAS_ENV=1 keeps
# them); the table names the OpenBLAS kernel in use.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
anchors="${ANCHORS:-$root/../shared/anchors/pytorch}"
epochs="${1:-1}"
[[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c "import torch" 2>/dev/null || {
  echo "bench.sh: needs Debian's python3-torch (apt-get install -y python3-torch)" >&2; exit 1; }
"$root/scripts/setup.sh" >/dev/null 2>&1
cores=$(nproc --all)
if [[ "${BENCH_KEEP_OPENBLAS_ENV:-0}" != 1 ]]; then
  unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
corename="$(printf '#include <stdio.h>\nchar* openblas_get_corename(void);\nint main(void){puts(openblas_get_corename());return 0;}\n' \
  | gcc -x c - -o "${TMPDIR:-/tmp}/ddp4j-corename" -lopenblas 2>/dev/null && "${TMPDIR:-/tmp}/ddp4j-corename" || echo unknown)"
out="$(mktemp -d)"
port=29620

pt_convnet() {  # ranks -> "images_per_s accuracy"
  (cd "$anchors" && MASTER_PORT=$((port++)) bash run2.sh "$1" mnist_ddp.py --epochs "$epochs" --lr 0.05) > "$out/pt_conv_$1.txt" 2>&1
  local ips acc
  ips=$(grep -o 'images/s [0-9.]*' "$out/pt_conv_$1.txt" | awk '{s+=$2; n++} END {printf "%.1f", s/n}')
  acc=$(grep -o 'test accuracy [0-9.]*' "$out/pt_conv_$1.txt" | awk '{print $3}')
  echo "$ips $acc"
}
j_convnet() {
  "$root/scripts/ddp4j-run" --nproc-per-node "$1" --master-port $((port + 50 + $1)) \
    org.ddp4j.examples.ConvNetDemo --epochs "$epochs" --lr 0.05 --momentum 0.9 > "$out/j_conv_$1.txt" 2>&1
  local ips acc
  ips=$(grep -o 'images_per_s=[0-9.]*' "$out/j_conv_$1.txt" | cut -d= -f2 | awk '{s+=$1; n++} END {printf "%.1f", s/n}')
  acc=$(grep -o 'test_accuracy=[0-9.]*' "$out/j_conv_$1.txt" | cut -d= -f2)
  echo "$ips $acc"
}
pt_linear() {
  (cd "$anchors" && STEPS=2000 MASTER_PORT=$((port++)) bash run2.sh 2 linear_demo.py) > "$out/pt_lin.txt" 2>&1
  grep -o '[0-9.]* us/step' "$out/pt_lin.txt" | awk '{s+=$1; n++} END {printf "%.1f", s/n}'
}
j_linear() {
  "$root/scripts/ddp4j-run" --nproc-per-node 2 --master-port $((port + 90)) \
    org.ddp4j.examples.LinearDemo --epochs 2000 > "$out/j_lin.txt" 2>&1
  grep -o 'us_per_step=[0-9.]*' "$out/j_lin.txt" | cut -d= -f2 | awk '{s+=$1; n++} END {printf "%.1f", s/n}'
}

read -r pt1 pta1 < <(pt_convnet 1)
read -r j1 ja1 < <(j_convnet 1)
read -r pt2 pta2 < <(pt_convnet 2)
read -r j2 ja2 < <(j_convnet 2)
ptl=$(pt_linear)
jl=$(j_linear)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
echo
echo "date: $(date -u +%Y-%m-%d) machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB"
echo "OpenBLAS kernel: $corename (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}); threads per rank: 1; ConvNet epochs: $epochs, batch 100, lr 0.05, momentum 0.9"
echo
echo "| job | PyTorch 1.13 | ddp4j | ddp4j / PyTorch |"
echo "|---|---|---|---|"
echo "| ConvNet 1 rank, images/s | $pt1 | $j1 | $(ratio "$j1" "$pt1") |"
echo "| ConvNet 2 ranks, images/s per rank | $pt2 | $j2 | $(ratio "$j2" "$pt2") |"
echo "| ConvNet 1 rank, test accuracy | $pta1 | $ja1 | diff $(awk -v a="$ja1" -v b="$pta1" 'BEGIN{printf "%+.4f", a-b}') |"
echo "| ConvNet 2 ranks, test accuracy | $pta2 | $ja2 | diff $(awk -v a="$ja2" -v b="$pta2" 'BEGIN{printf "%+.4f", a-b}') |"
echo "| linear demo 2 ranks, 2000 epochs, us/step | $ptl | $jl | $(ratio "$jl" "$ptl") |"
echo
echo "(raw outputs in $out)"
