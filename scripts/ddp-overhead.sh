#!/usr/bin/env bash
# ddp-overhead.sh: what DDP itself costs at 2 ranks on one machine, set apart from what two ranks
# cost by sharing its cores, memory bandwidth and caches. Each round runs GPTDemo twice with the
# same options and 1 thread per rank: as one 2-rank DDP job (2 x 1), and as two independent
# 1-rank jobs at the same time (the "pair": the same load on the machine, no all-reduce, no
# waiting for a peer). DDP's overhead is the DDP job's step time over the pair's, less 1. Rounds
# alternate which runs first; the table gives each round's median step times (rank 0's steps
# after --warmup-steps) and the median overhead over the rounds.
#
#   scripts/ddp-overhead.sh [--rounds R] [--model gpt2|small] [--block-size T] [--batch-size B]
#                           [--steps N] [--warmup-steps W] [--bucket-cap-mb MB]
#   defaults: 3 rounds, gpt2 (124M), block 256, batch 4, 8 steps of which 3 untimed
#   --smoke: a smoke run (2 minutes): --rounds 1 --model small --block-size 64 --steps 4 --warmup-steps 1
# environment: SKIP_SETUP=1 (ddp4j is built), RUN_TIMEOUT=S (bound on one job, default 1800)
# OPENBLAS_CORETYPE is unset: the CPU's own kernels.
set -euo pipefail
unset OPENBLAS_CORETYPE
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds=3
model=gpt2
block=256
batch=4
steps=8
warmup=3
bucket=()
run_timeout="${RUN_TIMEOUT:-1800}"
die() { echo "ddp-overhead.sh: $*" >&2; exit 2; }
while (($#)); do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --block-size) block="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --warmup-steps) warmup="$2"; shift 2 ;;
    --bucket-cap-mb) bucket=(--bucket-cap-mb "$2"); shift 2 ;;
    --smoke) rounds=1; model=small; block=64; steps=4; warmup=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"
gpt_shape "$model"
((warmup < steps)) || die "--warmup-steps ($warmup) must be below --steps ($steps)"
((rounds >= 1)) || die "--rounds must be at least 1, got $rounds"
gpt_prepare
export DDP4J_TIMEOUT_SECONDS="${DDP4J_TIMEOUT_SECONDS:-600}"
out="$(mktemp -d)"
echo "ddp-overhead.sh: raw outputs in $out" >&2
args=(--data "$data" "${shape[@]}" --block-size "$block" --batch-size "$batch" --max-iters "$steps" --warmup-iters 1
  --eval-interval $((steps + 1)) --eval-iters 1 --log-interval 1 --sample-tokens 0 --autocast none "${bucket[@]}")

# job NPROC FILE: one GPTDemo job at 1 thread per rank
job() {
  OMP_NUM_THREADS=1 timeout "$run_timeout" "$root/scripts/ddp4j-run" --nproc-per-node "$1" --master-port "$(free_port)" \
    org.ddp4j.examples.GPTDemo "${args[@]}" > "$2" 2>&1 || echo "failed: exit $?" >> "$2"
}
ddp() { echo "ddp-overhead.sh: round $1, DDP 2 x 1" >&2; job 2 "$out/ddp-$1.txt"; }
pair() {
  echo "ddp-overhead.sh: round $1, two 1-rank jobs" >&2
  job 1 "$out/pair-a-$1.txt" & local a=$!
  job 1 "$out/pair-b-$1.txt" & local b=$!
  wait "$a" "$b"
}
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then ddp "$r"; pair "$r"; else pair "$r"; ddp "$r"; fi
done

/usr/bin/python3 - "$out" "$rounds" "$warmup" "$model" "$block" "$batch" "$steps" "${bucket[*]:-}" <<'PY'
import os, re, statistics, sys
out, rounds, warmup, model, block, batch, steps, bucket = sys.argv[1:9]
rounds, warmup = int(rounds), int(warmup)
cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')

def median_step(path):
    text = open(path).read()
    if 'failed: exit' in text:
        sys.exit(f"ddp-overhead.sh: {path} failed:\n{text[-3000:]}")
    # rank 0's lines (the launcher prefixes a 2-rank job's with [rank0]:)
    ms = [float(x) for it, x in re.findall(r'^(?:\[rank0\]: )?iter (\d+): [^\n]*?, ([0-9.]+) ms/step', text, re.M)
          if int(it) > warmup]
    if not ms:
        sys.exit(f"ddp-overhead.sh: no timed steps in {path}")
    return statistics.median(ms) / 1000

print(f"GPTDemo {model}, block {block}, batch {batch} per rank, {steps} steps of which {warmup} untimed, "
      f"1 thread per rank, float32{', ' + bucket if bucket else ''}; CPU {cpu}")
print()
print("| round | DDP 2 × 1 s/step | two 1-rank jobs s/step | DDP overhead |")
print("|---|---|---|---|")
overheads = []
for r in range(1, rounds + 1):
    d = median_step(f"{out}/ddp-{r}.txt")
    p = statistics.mean([median_step(f"{out}/pair-{s}-{r}.txt") for s in 'ab'])
    overheads.append(d / p - 1)
    print(f"| {r} | {d:.2f} | {p:.2f} | {100 * overheads[-1]:+.1f}% |")
print()
print(f"median DDP overhead over {rounds} round(s): {100 * statistics.median(overheads):+.1f}%")
PY
