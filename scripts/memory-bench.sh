#!/usr/bin/env bash
# Peak memory of one training rank, ddp4j against PyTorch: the same ResNet training job as
# scripts/resnet-bench.sh (synthetic batch, CrossEntropyLoss, SGD with momentum 0.9), one process,
# no process group, run once each under GNU time, whose "Maximum resident set size" is the peak
# RSS (ddp4j: the worker JVM started by scripts/ddp4j-run, with the JVM options workers get;
# PyTorch: benchmarks/pytorch/resnet_synthetic.py on the Python scripts/torch-python.sh picks; the
# output names its torch version). Prints one line per side and the ratio ddp4j / PyTorch (the target
# for ResNet-50 at batch 32, 224x224, one thread: <= 0.6). Runs are short: peak memory is reached
# in the first step, so --warmup-steps 1 --steps 1 (the default) suffices; ResNet-50 at batch 32
# takes a few minutes per side on one core.
#
# usage: scripts/memory-bench.sh [options]
#   --model M          resnet18 or resnet50 (default resnet50)
#   --batch-size B     default 32             --image-size S   default 224
#   --threads T        intra-op threads of each side (default 1; OMP_NUM_THREADS and
#                      OPENBLAS_NUM_THREADS are set to it too)
#   --warmup-steps N   default 1              --steps N        default 1
#   --only LIST        ddp4j,torch (default both; torch113 is an older name of torch)
#   --smoke            a check that both sides run (well under a minute): resnet18, batch 4, 32x32
# environment:
#   TORCH_PYTHON=PATH  the PyTorch side's python (default: what scripts/torch-python.sh picks)
#   RUN_TIMEOUT=S      bound on one run, seconds (default 1800)
#   DDP4J_JAVA_OPTS    extra options of ddp4j's worker JVM (e.g. -Xmx512m; the JVM heap is part
#                      of the RSS, tensors are not: they live in native memory)
#   scripts/setup.sh must have built ddp4j (java/target/classes and java/target/lib).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model=resnet50
batch=32
image=224
threads=1
warmup=1
steps=1
only=ddp4j,torch
run_timeout="${RUN_TIMEOUT:-1800}"
die() { echo "memory-bench.sh: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --model) model="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --image-size) image="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --warmup-steps) warmup="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --smoke) model=resnet18; batch=4; image=32; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$model" == resnet18 || "$model" == resnet50 ]] || die "--model: resnet18 or resnet50, got '$model'"
for v in batch image threads warmup steps; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "--${v} must be a number, got '${!v}'"
done
((batch > 0 && image > 0 && threads > 0)) || die "--batch-size, --image-size and --threads must be positive"
only="${only//torch113/torch}"
has_side() { [[ ",$only," == *",$1,"* ]]; }
for s in ${only//,/ }; do [[ "$s" =~ ^(ddp4j|torch)$ ]] || die "--only: ddp4j or torch, got '$s'"; done
[[ -x /usr/bin/time ]] || die "needs GNU time for peak RSS (apt-get install -y time)"
# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"
torch_ver=none
if has_side torch; then
  torch_py="$(torch_python)"
  torch_ver="$(torch_version "$torch_py")"
fi
if has_side ddp4j; then
  [[ -d "$root/java/target/classes/org/ddp4j/examples" ]] || die "ddp4j is not built: run scripts/setup.sh first"
fi

out="$(mktemp -d "${TMPDIR:-/tmp}/memory-bench.XXXXXX")"
trap 'rm -rf "$out"' EXIT
args=(--model "$model" --batch-size "$batch" --image-size "$image" --warmup-steps "$warmup" --steps "$steps"
  --threads "$threads")

# Runs one side under GNU time; leaves its output in $out/SIDE.txt and GNU time's in $out/SIDE.time.
run() {
  local side="$1" rc=0
  echo "memory-bench.sh: $side $model batch $batch image $image threads $threads ..." >&2
  case "$side" in
    ddp4j)
      OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads timeout "$run_timeout" /usr/bin/time -v -o "$out/$side.time" \
        "$root/scripts/ddp4j-run" --nproc-per-node 1 org.ddp4j.examples.ResNetSynthetic "${args[@]}" \
        > "$out/$side.txt" 2>&1 || rc=$? ;;
    torch)
      OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads WORLD_SIZE=1 timeout "$run_timeout" /usr/bin/time -v -o "$out/$side.time" \
        "$torch_py" "$root/benchmarks/pytorch/resnet_synthetic.py" "${args[@]}" > "$out/$side.txt" 2>&1 || rc=$? ;;
  esac
  if ((rc != 0)); then
    echo "memory-bench.sh: the $side run failed (exit $rc); its output:" >&2
    tail -20 "$out/$side.txt" >&2
    return 1
  fi
}

# Peak RSS of a finished run in MiB (GNU time reports KiB: the largest process of the run).
peak_mib() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$out/$1.time"; }
images_per_s() { sed -n 's/.*images_per_s=\([0-9.]*\).*/\1/p' "$out/$1.txt" | tail -1; }

declare -A peak
for side in ddp4j torch; do
  has_side "$side" || continue
  run "$side"
  peak[$side]="$(peak_mib "$side")"
done

echo "PyTorch: torch $torch_ver${torch_py:+ from $torch_py}"
printf '%-10s %14s %10s\n' side peak_rss_MiB images/s
for side in ddp4j torch; do
  has_side "$side" || continue
  printf '%-10s %14s %10s\n' "$side" "${peak[$side]}" "$(images_per_s "$side")"
done
if has_side ddp4j && has_side torch; then
  awk -v d="${peak[ddp4j]}" -v t="${peak[torch]}" -v m="$model" -v b="$batch" -v s="$image" -v th="$threads" \
    'BEGIN { printf "ratio ddp4j/torch peak RSS: %.2f (%s, batch %s, %sx%s, %s thread(s))\n", d / t, m, b, s, s, th }'
fi
