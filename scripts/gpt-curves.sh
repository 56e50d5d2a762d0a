#!/usr/bin/env bash
# GPT-2 learning curves on real text, ddp4j against PyTorch with the same configuration and several
# seeds each: org.ddp4j.examples.GPTDemo and its twin scripts/gpt_train_torch.py train a 4-layer
# GPT-2 (4 heads, width 128, block 64, GPT-2's 50,257-token BPE) on Debian's fortunes, 2 ranks x 1
# thread, batch 8 per rank, AdamW, warm-up then cosine, clipping, float32, and print the validation
# loss (averaged over the ranks) every --eval-interval steps. One run per side and seed, interleaved.
#
# Writes DIR/val-loss.tsv (step, then one column per side and seed), DIR/val-loss.png (XChart) and
# prints a table per step: each side's mean and range over its seeds, and the difference of the
# means next to the larger of the two ranges (the run-to-run spread). DIR defaults to
# benchmarks/results.
#
# usage: scripts/gpt-curves.sh [--seeds 1337,1338,1339] [--steps 300] [--out DIR] [--smoke]
#   --smoke: one seed, 25 steps, DIR a temporary folder (benchmarks/results untouched); not a measurement
# environment: TORCH_PYTHON (the PyTorch side's python: torch >= 2, numpy; default: what
# scripts/torch-python.sh picks), SKIP_SETUP=1 (ddp4j and its benchmarks jar are already built).
set -euo pipefail
unset OPENBLAS_CORETYPE
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seeds=1337,1338,1339
steps=300
dir="$root/benchmarks/results"
die() { echo "gpt-curves.sh: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --out) dir="$2"; shift 2 ;;
    --smoke) seeds=1337; steps=25; dir="$(mktemp -d)"; shift ;;
    -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"
python="$(torch_python numpy 2.0)"  # gpt_train_torch.py needs torch 2 (fused AdamW)
gpt_prepare
mkdir -p "$dir"
out="$(mktemp -d)"
echo "gpt-curves.sh: raw outputs in $out; PyTorch from $python" >&2
args=(--data "$data" --n-layer 4 --n-head 4 --n-embd 128 --block-size 64 --batch-size 8 --max-iters "$steps"
  --warmup-iters $((steps / 10)) --lr 1e-3 --min-lr 1e-4 --eval-interval 25 --eval-iters 10 --log-interval 25
  --sample-tokens 0)
IFS=, read -ra seed_list <<< "$seeds"
for seed in "${seed_list[@]}"; do
  echo "gpt-curves.sh: ddp4j seed $seed" >&2
  OMP_NUM_THREADS=1 "$root/scripts/ddp4j-run" --nproc-per-node 2 org.ddp4j.examples.GPTDemo "${args[@]}" \
    --seed "$seed" > "$out/ddp4j-$seed.txt" 2>&1 || die "ddp4j seed $seed failed: $out/ddp4j-$seed.txt"
  echo "gpt-curves.sh: PyTorch seed $seed" >&2
  OMP_NUM_THREADS=1 TORCH_PYTHON="$python" MASTER_PORT="$(free_port)" "$root/benchmarks/pytorch/run.sh" 2 "$root/scripts/gpt_train_torch.py" \
    "${args[@]}" --seed "$seed" --threads 1 > "$out/torch-$seed.txt" 2>&1 || die "PyTorch seed $seed failed: $out/torch-$seed.txt"
done

/usr/bin/python3 - "$out" "$seeds" "$dir/val-loss.tsv" <<'PY'
import re, sys
out, seeds, tsv = sys.argv[1], sys.argv[2].split(','), sys.argv[3]
curves = {}
for side in ('ddp4j', 'torch'):
    for seed in seeds:
        text = open(f"{out}/{side}-{seed}.txt").read()
        curves[f"{side}_{seed}"] = {int(s): float(v) for s, v in re.findall(r'step (\d+): val loss ([0-9.]+)', text)}
steps = sorted(set().union(*[c.keys() for c in curves.values()]))
with open(tsv + '.tmp', 'w') as f:
    f.write('step ' + ' '.join(curves) + '\n')
    for s in steps:
        f.write(f"{s} " + ' '.join(f"{c[s]:.4f}" if s in c else 'NaN' for c in curves.values()) + '\n')
import os
os.replace(tsv + '.tmp', tsv)
print(f"| step | ddp4j mean (range) | PyTorch mean (range) | difference of the means | larger range |")
print("|---|---|---|---|---|")
for s in steps:
    j = [curves[f"ddp4j_{x}"][s] for x in seeds if s in curves[f"ddp4j_{x}"]]
    t = [curves[f"torch_{x}"][s] for x in seeds if s in curves[f"torch_{x}"]]
    if not j or not t:
        continue
    mj, mt = sum(j) / len(j), sum(t) / len(t)
    rj, rt = max(j) - min(j), max(t) - min(t)
    print(f"| {s} | {mj:.4f} ({rj:.3f}) | {mt:.4f} ({rt:.3f}) | {mj - mt:+.4f} | {max(rj, rt):.3f} |")
PY
java -cp "$root/benchmarks/target/benchmarks.jar" org.ddp4j.benchmarks.CurvesPlot "$dir/val-loss.tsv" "$dir/val-loss.png" \
  "GPT-2 (4 layers, width 128) on fortunes, 2 ranks: validation loss, ddp4j and PyTorch, seeds $seeds" \
  "step" "validation loss (nats per token)" >&2
