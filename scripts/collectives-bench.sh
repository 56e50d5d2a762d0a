#!/usr/bin/env bash
# reduce, reduce-scatter and send/recv, ddp4j (JMH, org.ddp4j.benchmarks.collective.CollectiveBench
# --op reduce|reducescatter|sendrecv under scripts/ddp4j-run) against PyTorch (scripts/collectives_bench.py,
# Gloo, launched by benchmarks/pytorch/run.sh), side by side in one run on this
# machine: float32, SUM, sizes 8 B, 1 KiB, 64 KiB, 1 MiB, 32 MiB, RANKS local ranks.
# Sizes and busbw as nccl-tests: reduce and sendrecv count the tensor, busbw = algbw; reducescatter
# counts each rank's input (RANKS x the output), busbw = algbw x (n-1)/n. sendrecv is a ring: each
# rank isends to rank+1 and irecvs from rank-1, then waits for both. When the torch's Gloo has no
# reduce-scatter (1.13's has none), its column is an all_reduce of a copy plus a copy of the rank's chunk (what
# ddp4j does on Gloo too), marked in the table.
# Prints one table with ratios and ends with one line per op and size:
#   summary op=reduce ranks=N bytes=B ddp4j_us=T torch_us=T2 ddp4j_busbw=X torch_busbw=Y torch_impl=dist.reduce
# T, T2: median µs per call (ddp4j: median over 10 JMH iterations of each one's time per call;
# PyTorch: median over TORCH_RUNS runs, each the mean per call over max(5, min(200, 64 MiB / size))
# calls, as benchmarks/pytorch/allreduce_bench.py); X, Y: busbw in GB/s (10^9 B/s) from those medians.
# usage: scripts/collectives-bench.sh [--smoke] [RANKS]  (default 2; sendrecv needs 2 or more; about 1-2 minutes at 2 ranks)
#   --smoke (or SMOKE=1): sizes 8 and 64K, one PyTorch run, 2 JMH iterations per size (not a measurement)
#   TORCH_PYTHON=PATH  the PyTorch side's python (default: what scripts/torch-python.sh picks)
#   TORCH_RUNS=R    runs of the PyTorch side (default 3; one before ddp4j's, the rest after)
#   ITERATIONS=N    JMH iterations per size (default: CollectiveBench's, 10)
#   OPS=LIST        ops, comma-separated (default reduce,reducescatter,sendrecv)
#   SIZES=LIST      message sizes (default 8,1K,64K,1M,32M; K, M binary)
#   BACKEND=NAME    ddp4j's process-group backend (default gloo); the environment passes through
#                   to the ranks, e.g. DDP4J_SHM=0/1 to pick the transport
#   JSON_DIR=DIR    JMH's JSON results, one file per op (default benchmarks/results; smoke: the raw-output folder)
#   SKIP_SETUP=1    use benchmarks/target/benchmarks.jar as built instead of running scripts/setup.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "collectives-bench.sh: $*" >&2; exit 1; }
smoke="${SMOKE:-0}"
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --smoke) smoke=1; shift ;;
esac
ranks="${1:-2}"
torch_runs="${TORCH_RUNS:-3}"
ops="${OPS:-reduce,reducescatter,sendrecv}"
sizes="${SIZES:-8,1K,64K,1M,32M}"
iterations="${ITERATIONS:-}"
if [[ "$smoke" == 1 ]]; then
  torch_runs="${TORCH_RUNS:-1}"; sizes="${SIZES:-8,64K}"; iterations="${ITERATIONS:-2}"
fi
backend="${BACKEND:-gloo}"
json_dir="${JSON_DIR:-$root/benchmarks/results}"
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || { echo "collectives-bench.sh: RANKS must be a positive number, got '$ranks'" >&2; exit 2; }
if ((ranks < 2)) && [[ ",$ops," == *,sendrecv,* ]]; then
  echo "collectives-bench.sh: sendrecv needs RANKS of 2 or more (each rank sends to another), got $ranks; or leave it out of OPS" >&2; exit 2
fi
[[ "$torch_runs" =~ ^[1-9][0-9]*$ ]] || { echo "collectives-bench.sh: TORCH_RUNS must be a positive number, got '$torch_runs'" >&2; exit 2; }
# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"
torch_py="$(torch_python)"
torch_ver="$(torch_version "$torch_py")"
if [[ "${SKIP_SETUP:-0}" == 1 ]]; then
  [[ -f "$root/benchmarks/target/benchmarks.jar" ]] || {
    echo "collectives-bench.sh: SKIP_SETUP=1 but no benchmarks/target/benchmarks.jar; build it (mvn -DskipTests package) or unset SKIP_SETUP" >&2; exit 1; }
else
  "$root/scripts/setup.sh" >/dev/null 2>&1 || { echo "collectives-bench.sh: scripts/setup.sh failed; run it to see why" >&2; exit 1; }
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# A rank that hangs fails the group within 2 minutes instead of the default 30 (set it to override).
export DDP4J_TIMEOUT_SECONDS="${DDP4J_TIMEOUT_SECONDS:-120}"
out="$(mktemp -d)"
# A smoke run does not replace the recorded results: its JSON stays in the raw-output folder.
[[ "$smoke" == 1 && -z "${JSON_DIR:-}" ]] && json_dir="$out"
mkdir -p "$json_dir"
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

torch_run() {  # i: one run of the PyTorch side (every op and size), bounded
  MASTER_PORT="$(free_port)" timeout 240 env TORCH_PYTHON="$torch_py" "$pytorch_dir/run.sh" "$ranks" \
    "$root/scripts/collectives_bench.py" --ops "$ops" --sizes "$sizes" > "$out/torch_$1.txt" 2>&1 || {
    echo "collectives-bench.sh: PyTorch run $1 failed:" >&2; tail -20 "$out/torch_$1.txt" >&2; exit 1; }
}
ddp4j_run() {  # op: the JMH benchmark of one op under the launcher, bounded
  timeout 300 "$root/scripts/ddp4j-run" --nproc-per-node "$ranks" --master-port "$(free_port)" \
    java -cp "$root/benchmarks/target/benchmarks.jar" org.ddp4j.benchmarks.collective.CollectiveBench \
    --op "$1" --backend "$backend" --sizes "$sizes" ${iterations:+--iterations "$iterations"} --json "$json_dir/$1-${ranks}ranks.json" > "$out/ddp4j_$1.txt" 2>&1 || {
    echo "collectives-bench.sh: the ddp4j $1 benchmark failed:" >&2; tail -30 "$out/ddp4j_$1.txt" >&2; exit 1; }
}

# Alternate the two sides, so that a change in the machine's load hits both.
torch_run 1
for op in ${ops//,/ }; do ddp4j_run "$op"; done
for ((i = 2; i <= torch_runs; i++)); do torch_run "$i"; done

# Medians, busbw and the table; summary.txt is printed last.
/usr/bin/python3 - "$ranks" "$out" "$torch_runs" "$ops" <<'PY'
import glob, statistics, sys
ranks, out, runs, ops = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
factor = {"reduce": 1.0, "reducescatter": (ranks - 1) / ranks, "sendrecv": 1.0}
fields = lambda line: dict(p.split("=", 1) for p in line.split()[1:])
torch, impl = {}, {}
for f in sorted(glob.glob(out + "/torch_*.txt")):
    for line in open(f):
        if line.startswith("result op="):
            kv = fields(line)
            torch.setdefault((kv["op"], int(kv["bytes"])), []).append(float(kv["time_us"]))
            impl[kv["op"]] = kv["impl"]
ddp4j = {}
for op in ops:
    for line in open(f"{out}/ddp4j_{op}.txt"):
        if line.startswith("[rank0]: result op="):
            kv = fields(line.split(": ", 1)[1])
            ddp4j[(kv["op"], int(kv["bytes"]))] = float(kv["median_us"])
busbw = lambda op, b, us: b / us / 1e3 * factor[op] if us else 0.0
fmt = lambda v, spec: format(v, spec) if v is not None else "n/a"
ratio = lambda a, b: format(a / b, ".2f") if a and b else "n/a"
print("| op | bytes | ddp4j µs | PyTorch µs | ddp4j / PyTorch time | ddp4j busbw GB/s | PyTorch busbw GB/s | ddp4j / PyTorch busbw |")
print("|---|---|---|---|---|---|---|---|")
keys = sorted(set(torch) | set(ddp4j), key=lambda k: (ops.index(k[0]), k[1]))
with open(out + "/summary.txt", "w") as summary:
    for op, b in keys:
        j = ddp4j.get((op, b))
        t = statistics.median(torch[(op, b)]) if (op, b) in torch else None
        jb, tb = busbw(op, b, j), busbw(op, b, t)
        name = op if impl.get(op, "").startswith("dist.") else op + " *"
        print(f"| {name} | {b} | {fmt(j, '.1f')} | {fmt(t, '.1f')} | {ratio(j, t)} | {jb:.4f} | {tb:.4f} | {ratio(jb, tb)} |")
        summary.write(f"summary op={op} ranks={ranks} bytes={b} ddp4j_us={fmt(j, '.2f')} torch_us={fmt(t, '.2f')}"
                      f" ddp4j_busbw={jb:.6f} torch_busbw={tb:.6f} torch_impl={impl.get(op, 'n/a')}\n")
for op in ops:
    if not impl.get(op, "").startswith("dist."):
        print(f"* PyTorch {op}: {impl.get(op, 'no result')} (this torch's Gloo lacks the collective)")
missing = [k for k in keys if k not in ddp4j or len(torch.get(k, [])) < runs]
if missing:
    print(f"missing results at {missing} (see {out})")
PY
echo
echo "date: $(date -u +%Y-%m-%d) machine: $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load $(cut -d' ' -f1-3 /proc/loadavg); ranks: $ranks; ddp4j backend: $backend, transport: $([[ "${DDP4J_SHM:-1}" =~ ^(0|false|FALSE|False)$ ]] && echo "gloo (DDP4J_SHM=0)" || echo "shared memory between local ranks for reduce/reducescatter (DDP4J_SHM=0 turns it off)"); PyTorch runs: $torch_runs; torch $torch_ver from $torch_py$([[ "$smoke" == 1 ]] && echo "; SMOKE RUN: not a measurement")"
echo "JMH JSON: $json_dir/{${ops}}-${ranks}ranks.json"
echo "raw output: $out"
cat "$out/summary.txt"
