#!/usr/bin/env bash
# Side-by-side comparison with PyTorch (benchmarks/pytorch/: convnet_mnist.py and linear_demo.py,
# started by benchmarks/pytorch/run.sh), same model, batch, data, ranks and threads (1 thread per
# rank), in one run on this machine. Prints one table of figures and ratios (ddp4j / PyTorch),
# headed by the torch version that ran; paste it into benchmarks/RESULTS.md.
# usage: scripts/bench.sh [--smoke] [EPOCHS [ACC_EPOCHS]]
#   EPOCHS: ConvNet epochs of the throughput, peak-RSS and accuracy runs (default 1)
#   ACC_EPOCHS: epochs of the extra 2-rank accuracy run on both sides (default 2; 0 skips it)
#   the linear demo runs 2000 epochs. Peak RSS is /usr/bin/time's maximum resident set size of
#   the 1-rank run: the python process for PyTorch; for ddp4j the largest process of the
#   launcher and its worker (the worker).
#   --smoke (or SMOKE=1): a check that both sides run, well under a minute on 2 cores: ConvNet
#   20 steps per rank (PyTorch --max-steps, ddp4j --limit), 1000 test images, no extra accuracy
#   run, the linear demo 50 epochs; its figures are not measurements.
# environment:
#   TORCH_PYTHON=PATH  the PyTorch side's python (default: what scripts/torch-python.sh picks)
#   SKIP_SETUP=1       do not run scripts/setup.sh (ddp4j is already built)
# Both sides run as on a user's machine: OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, which this
# workplace sets on some processors, are unset for the runs (BENCH_KEEP_OPENBLAS_ENV=1 keeps
# them); the table names the OpenBLAS kernel in use.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "bench.sh: $*" >&2; exit 1; }
smoke="${SMOKE:-0}"
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --smoke) smoke=1; shift ;;
esac
epochs="${1:-1}"
acc_epochs="${2:-2}"
linear_epochs=2000
pt_limit=(); j_limit=()
if [[ "$smoke" == 1 ]]; then
  acc_epochs=0; linear_epochs=50
  pt_limit=(--max-steps 20); j_limit=(--limit 4000 --test-limit 1000)
fi
# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"
torch_py="$(torch_python)"
torch_ver="$(torch_version "$torch_py")"
[[ -x /usr/bin/time ]] || die "needs GNU time for peak RSS (apt-get install -y time)"
if [[ "${SKIP_SETUP:-0}" != 1 ]]; then
  "$root/scripts/setup.sh" >/dev/null 2>&1 || die "scripts/setup.sh failed; run it to see why"
fi
cores=$(nproc --all)
if [[ "${BENCH_KEEP_OPENBLAS_ENV:-0}" != 1 ]]; then
  unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
corename="$(printf '#include <stdio.h>\nchar* openblas_get_corename(void);\nint main(void){puts(openblas_get_corename());return 0;}\n' \
  | gcc -x c - -o "${TMPDIR:-/tmp}/ddp4j-corename" -lopenblas 2>/dev/null && "${TMPDIR:-/tmp}/ddp4j-corename" || echo unknown)"
out="$(mktemp -d)"
port=29620  # each run gets its own port (the functions run in subshells)

peak_mb() { awk '/Maximum resident set size/ {printf "%.0f", $NF / 1024}' "$1"; }
pt_convnet() {  # ranks epochs -> "images_per_s accuracy peak_rss_mb"
  local f="$out/pt_conv_$1_$2"
  MASTER_PORT=$((port + 10 * $1 + $2)) /usr/bin/time -v -o "$f.time" \
    env TORCH_PYTHON="$torch_py" "$pytorch_dir/run.sh" "$1" "$pytorch_dir/convnet_mnist.py" --epochs "$2" --lr 0.05 "${pt_limit[@]}" \
    > "$f.txt" 2>&1
  local ips acc
  ips=$(grep -o 'images/s [0-9.]*' "$f.txt" | awk '{s+=$2; n++} END {printf "%.1f", s/n}')
  acc=$(grep -o 'test accuracy [0-9.]*' "$f.txt" | awk '{print $3}')
  echo "$ips $acc $(peak_mb "$f.time")"
}
j_convnet() {  # ranks epochs -> "images_per_s accuracy peak_rss_mb allocations_per_step"
  local f="$out/j_conv_$1_$2"
  /usr/bin/time -v -o "$f.time" "$root/scripts/ddp4j-run" --nproc-per-node "$1" --master-port $((port + 50 + 10 * $1 + $2)) \
    org.ddp4j.examples.ConvNetDemo --epochs "$2" --lr 0.05 --momentum 0.9 --report-allocations "${j_limit[@]}" > "$f.txt" 2>&1
  local ips acc alloc
  ips=$(grep -o 'images_per_s=[0-9.]*' "$f.txt" | cut -d= -f2 | awk '{s+=$1; n++} END {printf "%.1f", s/n}')
  acc=$(grep -o 'test_accuracy=[0-9.]*' "$f.txt" | cut -d= -f2)
  alloc=$(grep -o 'allocations_per_step=[0-9.]*' "$f.txt" | head -1 | cut -d= -f2)
  echo "$ips $acc $(peak_mb "$f.time") $alloc"
}
pt_linear() {
  STEPS=$linear_epochs MASTER_PORT=$((port++)) pytorch_run 2 "$pytorch_dir/linear_demo.py" > "$out/pt_lin.txt" 2>&1
  grep -o '[0-9.]* us/step' "$out/pt_lin.txt" | awk '{s+=$1; n++} END {printf "%.1f", s/n}'
}
j_linear() {
  "$root/scripts/ddp4j-run" --nproc-per-node 2 --master-port $((port + 90)) \
    org.ddp4j.examples.LinearDemo --epochs "$linear_epochs" > "$out/j_lin.txt" 2>&1
  grep -o 'us_per_step=[0-9.]*' "$out/j_lin.txt" | cut -d= -f2 | awk '{s+=$1; n++} END {printf "%.1f", s/n}'
}

read -r pt1 pta1 ptm1 < <(pt_convnet 1 "$epochs")
read -r j1 ja1 jm1 jalloc1 < <(j_convnet 1 "$epochs")
read -r pt2 pta2 _ < <(pt_convnet 2 "$epochs")
read -r j2 ja2 _ _ < <(j_convnet 2 "$epochs")
if [[ "$acc_epochs" -gt 0 ]]; then
  read -r _ ptaE _ < <(pt_convnet 2 "$acc_epochs")
  read -r _ jaE _ _ < <(j_convnet 2 "$acc_epochs")
fi
ptl=$(pt_linear)
jl=$(j_linear)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
delta() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "") printf "diff %+.4f", a - b; else print "n/a" }'; }
echo
echo "date: $(date -u +%Y-%m-%d) machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB"
echo "PyTorch: torch $torch_ver ($torch_py)$([[ "$smoke" == 1 ]] && echo "; SMOKE RUN: not a measurement")"
echo "OpenBLAS kernel: $corename (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}); threads per rank: 1; ConvNet epochs: $epochs, batch 100, lr 0.05, momentum 0.9"
echo
echo "| job | PyTorch $torch_ver | ddp4j | ddp4j / PyTorch |"
echo "|---|---|---|---|"
echo "| ConvNet 1 rank, images/s | $pt1 | $j1 | $(ratio "$j1" "$pt1") |"
echo "| ConvNet 2 ranks, images/s per rank | $pt2 | $j2 | $(ratio "$j2" "$pt2") |"
echo "| ConvNet 1 rank, peak RSS MB ($epochs epoch(s) + test) | $ptm1 | $jm1 | $(ratio "$jm1" "$ptm1") |"
echo "| ConvNet 1 rank, test accuracy | $pta1 | $ja1 | $(delta "$ja1" "$pta1") |"
echo "| ConvNet 2 ranks, test accuracy | $pta2 | $ja2 | $(delta "$ja2" "$pta2") |"
if [[ "$acc_epochs" -gt 0 ]]; then
  echo "| ConvNet 2 ranks, test accuracy after $acc_epochs epochs | $ptaE | $jaE | $(delta "$jaE" "$ptaE") |"
fi
echo "| ConvNet native system allocations per step (steps 3..N) | – | ${jalloc1:-n/a} | |"
echo "| linear demo 2 ranks, $linear_epochs epochs, us/step | $ptl | $jl | $(ratio "$jl" "$ptl") |"
echo
echo "(accuracy rows are single runs, ±0.01 from seed to seed: scripts/accuracy-seeds.sh compares means over seeds)"
echo "(raw outputs in $out)"
