#!/usr/bin/env bash
# Peak memory of one training rank, ddp4j against PyTorch 1.13: the same ResNet training job as
# scripts/resnet-bench.sh (synthetic batch, CrossEntropyLoss, SGD with momentum 0.9), one process,
# no process group, run once each under GNU time, whose "Maximum resident set size" is the peak
# RSS (ddp4j: the worker JVM started by scripts/ddp4j-run, with the JVM options workers get;
# PyTorch: ANCHORS_DIR/pytorch/resnet_synthetic.py on Debian's /usr/bin/python3 with
# python3-torchvision). Prints one line per side and the ratio ddp4j / PyTorch (issue 18's target
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
#   --only LIST        ddp4j,torch113 (default both)
# environment:
#   ANCHORS_DIR=DIR    the anchors (default ../shared/anchors next to the repository)
#   RUN_TIMEOUT=S      bound on one run, seconds (default 1800)
#   DDP4J_JAVA_OPTS    extra options of ddp4j's worker JVM (e.g. -Xmx512m; the JVM heap is part
#                      of the RSS, tensors are not: they live in native memory)
#   scripts/setup.sh must have built ddp4j (java/target/classes and java/target/lib).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
anchors="${ANCHORS_DIR:-$root/../shared/anchors}"
model=resnet50
batch=32
image=224
threads=1
warmup=1
steps=1
only=ddp4j,torch113
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
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$model" == resnet18 || "$model" == resnet50 ]] || die "--model: resnet18 or resnet50, got '$model'"
for v in batch image threads warmup steps; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "--${v} must be a number, got '${!v}'"
done
((batch > 0 && image > 0 && threads > 0)) || die "--batch-size, --image-size and --threads must be positive"
has_side() { [[ ",$only," == *",$1,"* ]]; }
for s in ${only//,/ }; do [[ "$s" =~ ^(ddp4j|torch113)$ ]] || die "--only: ddp4j or torch113, got '$s'"; done
[[ -x /usr/bin/time ]] || die "needs GNU time for peak RSS (apt-get install -y time)"
if has_side torch113; then
  [[ -f "$anchors/pytorch/resnet_synthetic.py" ]] || die "no pytorch/resnet_synthetic.py in $anchors (set ANCHORS_DIR=DIR)"
  "$root/scripts/torch-anchor.sh" --vision || die "needs Debian's python3-torch and python3-torchvision (see above)"
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
    torch113)
      OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads timeout "$run_timeout" /usr/bin/time -v -o "$out/$side.time" \
        /usr/bin/python3 "$anchors/pytorch/resnet_synthetic.py" "${args[@]}" > "$out/$side.txt" 2>&1 || rc=$? ;;
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
for side in ddp4j torch113; do
  has_side "$side" || continue
  run "$side"
  peak[$side]="$(peak_mib "$side")"
done

printf '%-10s %14s %10s\n' side peak_rss_MiB images/s
for side in ddp4j torch113; do
  has_side "$side" || continue
  printf '%-10s %14s %10s\n' "$side" "${peak[$side]}" "$(images_per_s "$side")"
done
if has_side ddp4j && has_side torch113; then
  awk -v d="${peak[ddp4j]}" -v t="${peak[torch113]}" -v m="$model" -v b="$batch" -v s="$image" -v th="$threads" \
    'BEGIN { printf "ratio ddp4j/torch113 peak RSS: %.2f (%s, batch %s, %sx%s, %s thread(s))\n", d / t, m, b, s, s, th }'
fi
