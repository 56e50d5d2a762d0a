#!/usr/bin/env bash
# DDP communication hooks on a slow link: ResNet-18 DDP steps (org.ddp4j.examples.ResNetSynthetic)
# between two hosts of the namespace cluster (scripts/cluster.sh: two network namespaces on a
# private bridge, nothing reaches the root namespace), one rank per host, with every host's link
# capped at 100 Mbit/s each way (tc tbf, `cluster.sh cap`). Runs, in turn: no hook (DDP's built-in
# all-reduce), --comm-hook bf16 (bf16Compress) and --comm-hook powersgd:4 (PowerSGD rank 4,
# compressing from the first timed step), and prints each one's seconds per step and its ratio to
# the uncompressed run (targets: bf16 <= 0.6x, PowerSGD rank 4 <= 0.25x). The ranks' param_crc must
# agree in every run (a `!` marks one where they did not).
#
# usage: scripts/hooks-bench.sh [--steps N] [--warmup-steps N] [--batch-size B] [--image-size S]
#                               [--rate RATE] [--hooks LIST] [--smoke]
#   defaults: 3 timed steps after 2 warm-up steps, batch 4 per rank at 32x32 (so that the step is
#   dominated by the 45 MiB gradient all-reduce, as on a slow link), rate 100mbit, hooks
#   none,bf16,powersgd:4. Needs root (network namespaces) and a built tree (java/target/classes with
#   its natives and java/target/lib: scripts/setup.sh). Every run is bounded by RUN_TIMEOUT seconds
#   (default 600); the cluster (run id "hooks") is torn down on exit, also when interrupted.
#   Both ranks use 1 intra-op thread; on a small machine they compete with whatever else runs.
#   --smoke: 1 warm-up and 1 timed step, hooks none,bf16 (a check that it runs, not a measurement).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
steps=3
warmup=2
batch=4
image=32
rate=100mbit
hooks=none,bf16,powersgd:4
run_timeout="${RUN_TIMEOUT:-600}"
die() { echo "hooks-bench.sh: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --warmup-steps) warmup="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --image-size) image="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --hooks) hooks="$2"; shift 2 ;;
    --smoke) steps=1; warmup=1; hooks=none,bf16; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ -d "$root/java/target/classes/org/ddp4j" ]] || die "java/target/classes is missing: build first (scripts/setup.sh)"
compgen -G "$root/java/target/lib/*.jar" > /dev/null || die "java/target/lib has no runtime jars: run scripts/setup.sh"
cluster="$root/scripts/cluster.sh"
"$cluster" check || die "this machine cannot build the namespace cluster (see above)"
run=hooks
java_bin="$(command -v java)"
cp="$root/java/target/classes:$root/java/target/lib/*"
logs="$(mktemp -d)"
cleanup() {
  "$cluster" --run "$run" down > /dev/null 2>&1 || true
  rm -rf "$logs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$cluster" --run "$run" --owner $$ up 2
for h in 1 2; do
  "$cluster" --run "$run" cap "$h" "$rate" both
done
master="$("$cluster" --run "$run" addr 1)"
port=29631

# One run: prints "SECONDS_PER_STEP CRC0 CRC1".
run_one() {
  local hook="$1" extra=()
  [[ "$hook" == none ]] || extra=(--comm-hook "$hook")
  port=$((port + 1))
  local pids=()
  for r in 0 1; do
    "$cluster" --run "$run" exec $((r + 1)) env MASTER_ADDR="$master" MASTER_PORT="$port" WORLD_SIZE=2 RANK="$r" \
      DDP4J_TIMEOUT_SECONDS=300 timeout "$run_timeout" "$java_bin" -Xmx1g -cp "$cp" org.ddp4j.examples.ResNetSynthetic \
      --model resnet18 --batch-size "$batch" --image-size "$image" --warmup-steps "$warmup" --steps "$steps" \
      --threads 1 "${extra[@]}" > "$logs/$hook.$r.log" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  if ((rc != 0)); then
    echo "hooks-bench.sh: the run with hook $hook failed (exit $rc); its logs:" >&2
    tail -n 20 "$logs/$hook".*.log >&2
    return 1
  fi
  local secs crc0 crc1
  secs="$(sed -n 's/^summary rank=0 .* seconds=\([0-9.]*\) .*/\1/p' "$logs/$hook.0.log")"
  crc0="$(sed -n 's/^check rank=0 .*param_crc=\([0-9a-f]*\).*/\1/p' "$logs/$hook.0.log")"
  crc1="$(sed -n 's/^check rank=1 .*param_crc=\([0-9a-f]*\).*/\1/p' "$logs/$hook.1.log")"
  awk -v s="$secs" -v n="$steps" -v a="$crc0" -v b="$crc1" 'BEGIN { printf "%.3f %s %s\n", s / n, a, b }'
}

echo "# hooks-bench: resnet18, 2 hosts x 1 rank, link $rate each way, batch $batch, image $image, $warmup warm-up + $steps timed steps"
printf '%-12s %14s %10s\n' hook s_per_step vs_none
base=""
IFS=, read -ra list <<< "$hooks"
for hook in "${list[@]}"; do
  result="$(run_one "$hook")" || exit 1
  read -r sps crc0 crc1 <<< "$result"
  mark=""
  [[ "$crc0" == "$crc1" ]] || mark="!"
  if [[ "$hook" == none ]]; then base="$sps"; fi
  ratio="-"
  [[ -n "$base" ]] && ratio="$(awk -v a="$sps" -v b="$base" 'BEGIN { printf "%.2fx", a / b }')"
  printf '%-12s %14s %10s%s\n' "$hook" "$sps" "$ratio" "$mark"
done
echo "# targets: bf16 <= 0.60x, powersgd:4 <= 0.25x"
