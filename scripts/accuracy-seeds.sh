#!/usr/bin/env bash
# Test accuracy of the ConvNet after EPOCHS epochs at RANKS ranks, ddp4j against PyTorch
# (benchmarks/pytorch/convnet_mnist.py), over several seeds. One seed's accuracy varies by about
# ±0.01 on either side, so parity is judged on the mean. A seed chooses both the initial weights
# and the shuffle on each side: convnet_mnist.py --seed seeds torch.manual_seed and its
# DistributedSampler, ddp4j's --seed does the same for ddp4j.
# usage: scripts/accuracy-seeds.sh [--smoke] [SEEDS (default "1 2 3 4")] [RANKS (2)] [EPOCHS (2)]
#   --smoke (or SMOKE=1): one seed, 20 steps per rank on each side (PyTorch --max-steps, ddp4j
#   --limit), to check that both sides run (well under a minute); its accuracies mean nothing.
# environment: TORCH_PYTHON=PATH (the PyTorch side's python; default: what scripts/torch-python.sh
#   picks), SKIP_SETUP=1 (ddp4j is already built: do not run scripts/setup.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "accuracy-seeds.sh: $*" >&2; exit 1; }
smoke="${SMOKE:-0}"
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --smoke) smoke=1; shift ;;
esac
seeds="${1:-1 2 3 4}"
ranks="${2:-2}"
epochs="${3:-2}"
pt_limit=(); j_limit=()
if [[ "$smoke" == 1 ]]; then
  seeds="${1:-1}"; epochs=1
  pt_limit=(--max-steps 20); j_limit=(--limit $((20 * 100 * ranks)) --test-limit 1000)
fi
# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"
torch_py="$(torch_python)"
torch_ver="$(torch_version "$torch_py")"
if [[ "${SKIP_SETUP:-0}" != 1 ]]; then
  "$root/scripts/setup.sh" >/dev/null 2>&1 || die "scripts/setup.sh failed; run it to see why"
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
port=29850
echo "| seed | PyTorch $torch_ver | ddp4j | ddp4j - PyTorch |"
echo "|---|---|---|---|"
pt_all=(); j_all=()
for s in $seeds; do
  pt=$(MASTER_PORT=$((port++)) pytorch_run "$ranks" "$pytorch_dir/convnet_mnist.py" --epochs "$epochs" --seed "$s" \
    "${pt_limit[@]}" 2>&1 | grep -o 'test accuracy [0-9.]*' | awk '{print $3}') || true
  j=$("$root/scripts/ddp4j-run" --nproc-per-node "$ranks" --master-port $((port++)) \
    org.ddp4j.examples.ConvNetDemo --epochs "$epochs" --seed "$s" "${j_limit[@]}" 2>&1 \
    | grep -o 'test_accuracy=[0-9.]*' | cut -d= -f2) || true
  [[ -n "$pt" ]] || die "seed $s: the PyTorch run printed no test accuracy (rerun it by hand: benchmarks/pytorch/run.sh $ranks benchmarks/pytorch/convnet_mnist.py --seed $s)"
  [[ -n "$j" ]] || die "seed $s: the ddp4j run printed no test accuracy"
  pt_all+=("$pt"); j_all+=("$j")
  echo "| $s | $pt | $j | $(awk -v a="$j" -v b="$pt" 'BEGIN{printf "%+.4f", a-b}') |"
done
mean() { printf '%s\n' "$@" | awk '{s+=$1; n++} END {printf "%.4f", s/n}'; }
pm=$(mean "${pt_all[@]}"); jm=$(mean "${j_all[@]}")
echo "| mean | $pm | $jm | $(awk -v a="$jm" -v b="$pm" 'BEGIN{printf "%+.4f", a-b}') |"
echo "($ranks ranks, $epochs epochs, batch 100 per rank, lr 0.05, momentum 0.9, 1 thread per rank; torch $torch_ver from $torch_py$([[ "$smoke" == 1 ]] && echo "; SMOKE RUN: not a measurement"))"
