#!/usr/bin/env bash
# GPT-2 training speed, ddp4j against PyTorch side by side in one run on this machine: ddp4j's
# org.ddp4j.examples.GPTDemo and its PyTorch twin scripts/gpt_train_torch.py (the same model,
# AdamW, gradient clipping, schedule and loop; DDP over Gloo when ranks > 1) train on the same token
# files (Debian's fortunes through GPT-2's BPE, org.ddp4j.text.PrepareText). Runs are interleaved
# (ddp4j, PyTorch, next cell) so that a change in the machine's load hits both. The GEMM rate per
# core (JMH KernelBenchmark.gemm512, one thread) is measured before and after; the higher counts.
#
# Prints ONE table: per cell (ranks x threads per rank, fp32 or bf16 autocast), tokens/s per rank of
# each side (B*T / the median step time of the steps after --warmup-steps, rank 0's "iter" lines),
# the ratio ddp4j / PyTorch, the share of the GEMM limit of each (tokens/s x FLOP per token /
# (GEMM GFLOP/s per core x threads); FLOP per token = 6 N + 12 L d T as nanoGPT counts it) and peak
# RSS per rank (the largest rank's, from the summary lines). Paste it into benchmarks/RESULTS.md.
#
# usage: scripts/gpt-bench.sh [options]
#   --cells C[,C]       RxT[:fp32|bf16]; default 1x1:fp32,1x2:fp32,2x1:fp32,1x1:bf16,1x2:bf16,2x1:bf16
#   --model M           gpt2 (124M: 12 layers, 12 heads, width 768; default) or small (6/6/384)
#   --block-size T      default 256            --batch-size B   per rank, default 4
#   --steps N           steps in all, default 8  --warmup-steps W  untimed first steps, default 3
#   --only LIST         ddp4j,torch (default both)
#   --no-gemm           skip the JMH GEMM measurement (no share column)
#   --smoke             a smoke run (a minute): --model small --block-size 64 --steps 4 --warmup-steps 1
#                       --cells 1x1,2x1 --no-gemm; its figures are not measurements
# environment:
#   TORCH_PYTHON=PATH   the PyTorch side's python (needs torch >= 2 and numpy; default: what
#                       scripts/torch-python.sh picks, a torch 2.13 venv before Debian's 1.13)
#   SKIP_SETUP=1        do not run scripts/setup.sh (ddp4j and its benchmarks jar are already built)
#   RUN_TIMEOUT=S       bound on one run, seconds (default 1800)
# OPENBLAS_CORETYPE is unset: each side runs the kernels its CPU supports.
set -euo pipefail
unset OPENBLAS_CORETYPE
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cells=1x1:fp32,1x2:fp32,2x1:fp32,1x1:bf16,1x2:bf16,2x1:bf16
model=gpt2
block=256
batch=4
steps=8
warmup=3
only=ddp4j,torch
gemm=1
run_timeout="${RUN_TIMEOUT:-1800}"
die() { echo "gpt-bench.sh: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --cells) cells="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --block-size) block="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --warmup-steps) warmup="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --no-gemm) gemm=0; shift ;;
    --smoke) model=small; block=64; steps=4; warmup=1; cells=1x1,2x1; gemm=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"
gpt_shape "$model"
((warmup < steps)) || die "--warmup-steps ($warmup) must be below --steps ($steps)"
gpt_prepare
bench_jar="$root/benchmarks/target/benchmarks.jar"
((gemm == 0)) || [[ -f "$bench_jar" ]] || die "no $bench_jar: run scripts/setup.sh (or pass --no-gemm)"
export DDP4J_TIMEOUT_SECONDS="${DDP4J_TIMEOUT_SECONDS:-600}"
out="$(mktemp -d)"
python=python3
[[ ",$only," == *,torch,* ]] && python="$(torch_python numpy 2.0)"  # gpt_train_torch.py needs torch 2 (fused AdamW)
echo "gpt-bench.sh: raw outputs in $out; PyTorch from $python" >&2
measure_gemm 1

# run SIDE RANKS THREADS DTYPE: writes $out/SIDE-RxT-DTYPE.txt
run() {
  local side=$1 ranks=$2 threads=$3 dtype=$4
  local f="$out/$side-${ranks}x$threads-$dtype.txt"
  local autocast=none; [[ "$dtype" == bf16 ]] && autocast=bf16
  local args=(--data "$data" "${shape[@]}" --block-size "$block" --batch-size "$batch" --max-iters "$steps"
    --warmup-iters 1 --eval-interval $((steps + 1)) --eval-iters 1 --log-interval 1 --sample-tokens 0 --autocast "$autocast")
  local port; port="$(free_port)"
  echo "gpt-bench.sh: $side ${ranks}x$threads $dtype" >&2
  if [[ "$side" == ddp4j ]]; then
    OMP_NUM_THREADS="$threads" timeout "$run_timeout" "$root/scripts/ddp4j-run" --nproc-per-node "$ranks" \
      --master-port "$port" org.ddp4j.examples.GPTDemo "${args[@]}" > "$f" 2>&1 || echo "failed: exit $?" >> "$f"
  elif ((ranks == 1)); then
    OMP_NUM_THREADS="$threads" timeout "$run_timeout" "$python" "$root/scripts/gpt_train_torch.py" "${args[@]}" \
      --threads "$threads" > "$f" 2>&1 || echo "failed: exit $?" >> "$f"
  else
    OMP_NUM_THREADS="$threads" TORCH_PYTHON="$python" MASTER_PORT="$port" timeout "$run_timeout" \
      "$root/benchmarks/pytorch/run.sh" "$ranks" "$root/scripts/gpt_train_torch.py" "${args[@]}" --threads "$threads" > "$f" 2>&1 \
      || echo "failed: exit $?" >> "$f"
  fi
}
IFS=, read -ra cell_list <<< "$cells"
for cell in "${cell_list[@]}"; do
  rt="${cell%%:*}"; dtype=fp32; [[ "$cell" == *:* ]] && dtype="${cell#*:}"
  [[ "$rt" =~ ^([0-9]+)x([0-9]+)$ ]] || die "a cell is RxT[:fp32|bf16], got $cell"
  [[ "$dtype" == fp32 || "$dtype" == bf16 ]] || die "a cell's dtype is fp32 or bf16, got $dtype"
  for side in ddp4j torch; do
    [[ ",$only," == *,$side,* ]] && run "$side" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$dtype"
  done
done
measure_gemm 2
gemm_rate=""
((${#gemm_rates[@]})) && gemm_rate="$(printf '%s\n' "${gemm_rates[@]}" | sort -g | tail -1)"

/usr/bin/python3 - "$out" "$cells" "$gemm_rate" "$model" "$block" "$batch" "$steps" "$warmup" "$python" "${gemm_rates[*]:-}" <<'PY'
import glob, os, re, statistics, subprocess, sys
out, cells, gemm, model, block, batch, steps, warmup, python, rates = sys.argv[1:11]
block, batch, steps, warmup = int(block), int(batch), int(steps), int(warmup)
gemm = float(gemm) if gemm else None
layers, width = {'gpt2': (12, 768), 'small': (6, 384)}[model]
vocab = 50257
# FLOP per token: 6 N + 12 L d T, N the parameters without the position table (GPTDemo's count)
n = vocab * width + layers * (12 * width * width + 13 * width) + 2 * width
flop = 6 * n + 12 * layers * width * block
cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
try:
    torch_version = subprocess.run([python, '-c', 'import torch; print(torch.__version__)'],
                                   capture_output=True, text=True).stdout.strip() or '?'
except OSError:
    torch_version = '?'

def parse(path):
    if not os.path.exists(path):
        return None
    text = open(path).read()
    ms = [float(x) for it, x in re.findall(r'iter (\d+): [^\n]*?, ([0-9.]+) ms/step', text) if int(it) > warmup]
    rss = [float(x) for x in re.findall(r'peak_rss_mb=([0-9.]+)', text)]
    if not ms or 'failed: exit' in text:
        return {'failed': True}
    return {'tps': batch * block * 1000.0 / statistics.median(ms), 'rss': max(rss) if rss else None}

print(f"GPT-2 {model} ({n / 1e6:.1f}M parameters), block {block}, batch {batch} per rank, {steps} steps of which "
      f"{warmup} untimed (median step time); CPU {cpu}; PyTorch {torch_version}; GEMM limit "
      f"{gemm if gemm else 'not measured'} GFLOP/s per core (JMH KernelBenchmark.gemm512, 1 thread; before / after: {rates})")
print()
print("| ranks × threads | dtype | ddp4j tokens/s | PyTorch tokens/s | ddp4j / PyTorch | GEMM share ddp4j / PyTorch | peak RSS MB ddp4j / PyTorch |")
print("|---|---|---|---|---|---|---|")
for cell in cells.split(','):
    rt, _, dtype = cell.partition(':')
    dtype = dtype or 'fp32'
    ranks, threads = map(int, rt.split('x'))
    j = parse(f"{out}/ddp4j-{rt}-{dtype}.txt")
    t = parse(f"{out}/torch-{rt}-{dtype}.txt")
    fmt = lambda r: 'n/a' if r is None else 'failed' if r.get('failed') else f"{r['tps']:.1f}"
    ok = lambda r: r is not None and not r.get('failed')
    ratio = f"{j['tps'] / t['tps']:.2f}×" if ok(j) and ok(t) else 'n/a'
    share = lambda r: f"{100 * r['tps'] * flop / (gemm * 1e9 * threads):.0f}%" if ok(r) and gemm else 'n/a'
    rss = lambda r: f"{r['rss']:.0f}" if ok(r) and r['rss'] else 'n/a'
    print(f"| {ranks} × {threads} | {dtype} | {fmt(j)} | {fmt(t)} | {ratio} | {share(j)} / {share(t)} | {rss(j)} / {rss(t)} |")
PY
