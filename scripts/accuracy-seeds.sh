#!/usr/bin/env bash
# Test accuracy of the ConvNet after EPOCHS epochs at RANKS ranks, ddp4j against the PyTorch
# anchor, over several seeds. One seed's accuracy varies by about ±0.01 on either side, so parity
# is judged on the mean. The anchor (../shared/anchors/pytorch/mnist_ddp.py) is read-only and
# always seeds with 0, so this copies it to a temporary folder and makes SEED choose both its
# initial weights (torch.manual_seed) and its shuffle (DistributedSampler seed); ddp4j's --seed
# does the same for ddp4j.
# usage: scripts/accuracy-seeds.sh [SEEDS (default "1 2 3 4")] [RANKS (2)] [EPOCHS (2)]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
anchors="${ANCHORS:-$root/../shared/anchors/pytorch}"
seeds="${1:-1 2 3 4}"
ranks="${2:-2}"
epochs="${3:-2}"
work="$(mktemp -d)"
cp "$anchors"/mnist_ddp.py "$anchors"/idx.py "$anchors"/run2.sh "$work"/
sed -i "s/    torch.manual_seed(0)/    torch.manual_seed(int(os.environ.get('SEED', '0')))/" "$work/mnist_ddp.py"
sed -i "s/DistributedSampler(ds, num_replicas=world, rank=rank)/DistributedSampler(ds, num_replicas=world, rank=rank, seed=int(os.environ.get('SEED', '0')))/" "$work/mnist_ddp.py"
grep -q "os.environ.get('SEED'" "$work/mnist_ddp.py" || { echo "accuracy-seeds.sh: could not patch the anchor's seeds" >&2; exit 1; }
"$root/scripts/setup.sh" >/dev/null 2>&1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
port=29850
echo "| seed | PyTorch 1.13 | ddp4j | ddp4j - PyTorch |"
echo "|---|---|---|---|"
pt_all=(); j_all=()
for s in $seeds; do
  pt=$(cd "$work" && SEED=$s MASTER_PORT=$((port++)) bash run2.sh "$ranks" mnist_ddp.py --epochs "$epochs" 2>&1 \
    | grep -o 'test accuracy [0-9.]*' | awk '{print $3}')
  j=$("$root/scripts/ddp4j-run" --nproc-per-node "$ranks" --master-port $((port++)) \
    org.ddp4j.examples.ConvNetDemo --epochs "$epochs" --seed "$s" 2>&1 | grep -o 'test_accuracy=[0-9.]*' | cut -d= -f2)
  pt_all+=("$pt"); j_all+=("$j")
  echo "| $s | $pt | $j | $(awk -v a="$j" -v b="$pt" 'BEGIN{printf "%+.4f", a-b}') |"
done
mean() { printf '%s\n' "$@" | awk '{s+=$1; n++} END {printf "%.4f", s/n}'; }
pm=$(mean "${pt_all[@]}"); jm=$(mean "${j_all[@]}")
echo "| mean | $pm | $jm | $(awk -v a="$jm" -v b="$pm" 'BEGIN{printf "%+.4f", a-b}') |"
echo "($ranks ranks, $epochs epochs, batch 100 per rank, lr 0.05, momentum 0.9, 1 thread per rank)"
