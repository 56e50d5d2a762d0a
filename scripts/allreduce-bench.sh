#!/usr/bin/env bash
# All-reduce, ddp4j (JMH, org.ddp4j.benchmarks.collective.CollectiveBench under scripts/ddp4j-run)
# against the PyTorch anchor (allreduce_bench.py, Debian's python3-torch, Gloo), side by side in
# one run on this machine: float32 SUM, 8 B x 4^k for k = 0..12 (8 B to 128 MiB), RANKS local ranks.
# Prints one table with ratios, writes a PNG of busbw against size (log-log, both curves), and ends
# with one line per size:
#   summary op=allreduce ranks=N bytes=B ddp4j_us=T torch_us=T2 ddp4j_busbw=X torch_busbw=Y
# T, T2: median µs per call (ddp4j: median over 10 JMH iterations of each one's time per call;
# PyTorch: median over TORCH_RUNS runs of the anchor, which prints each size's mean per call);
# X, Y: busbw in GB/s (10^9 B/s) from those medians, algbw x 2(n-1)/n as nccl-tests.
# usage: scripts/allreduce-bench.sh [RANKS]      (default 2; about 2-4 minutes at 2 ranks)
#   ANCHORS=DIR     the anchor folder (default ../shared/anchors/pytorch), as in scripts/bench.sh
#   TORCH_RUNS=R    runs of the anchor (default 3; one before ddp4j's, the rest after)
#   BACKEND=NAME    ddp4j's process-group backend (default gloo); the environment passes through
#                   to the ranks, e.g. DDP4J_SHM=0/1 to pick the transport
#   PLOT=FILE.png   the plot (default benchmarks/results/allreduce-busbw-RANKSranks.png)
#   JSON=FILE       JMH's JSON results (default next to the plot, .json)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ranks="${1:-2}"
anchors="${ANCHORS:-$root/../shared/anchors/pytorch}"
torch_runs="${TORCH_RUNS:-3}"
backend="${BACKEND:-gloo}"
plot="${PLOT:-$root/benchmarks/results/allreduce-busbw-${ranks}ranks.png}"
json="${JSON:-${plot%.png}.json}"
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || { echo "allreduce-bench.sh: RANKS must be a positive number, got '$ranks'" >&2; exit 2; }
[[ -x /usr/bin/python3 ]] && /usr/bin/python3 -c "import torch" 2>/dev/null || {
  echo "allreduce-bench.sh: needs Debian's python3-torch (apt-get install -y python3-torch)" >&2; exit 1; }
[[ -f "$anchors/allreduce_bench.py" && -f "$anchors/run2.sh" ]] || {
  echo "allreduce-bench.sh: no allreduce_bench.py and run2.sh in $anchors (set ANCHORS=DIR)" >&2; exit 1; }
"$root/scripts/setup.sh" >/dev/null 2>&1 || { echo "allreduce-bench.sh: scripts/setup.sh failed; run it to see why" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# A rank that hangs fails the group within 2 minutes instead of the default 30 (set it to override).
export DDP4J_TIMEOUT_SECONDS="${DDP4J_TIMEOUT_SECONDS:-120}"
out="$(mktemp -d)"
mkdir -p "$(dirname "$plot")" "$(dirname "$json")"
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

torch_run() {  # i: one run of the anchor, bounded
  (cd "$anchors" && MASTER_PORT="$(free_port)" timeout 240 bash run2.sh "$ranks" allreduce_bench.py) > "$out/torch_$1.txt" 2>&1 || {
    echo "allreduce-bench.sh: PyTorch anchor run $1 failed:" >&2; tail -20 "$out/torch_$1.txt" >&2; exit 1; }
}
ddp4j_run() {  # the JMH benchmark under the launcher, bounded
  timeout 420 "$root/scripts/ddp4j-run" --nproc-per-node "$ranks" --master-port "$(free_port)" \
    java -cp "$root/benchmarks/target/benchmarks.jar" org.ddp4j.benchmarks.collective.CollectiveBench \
    --op allreduce --backend "$backend" --json "$json" > "$out/ddp4j.txt" 2>&1 || {
    echo "allreduce-bench.sh: the ddp4j benchmark failed:" >&2; tail -30 "$out/ddp4j.txt" >&2; exit 1; }
}

# Alternate the two sides, so that a change in the machine's load hits both.
torch_run 1
ddp4j_run
for ((i = 2; i <= torch_runs; i++)); do torch_run "$i"; done

# Medians, busbw and the table; busbw.tsv feeds the plot, summary.txt is printed last.
/usr/bin/python3 - "$ranks" "$out" "$torch_runs" <<'PY'
import glob, re, statistics, sys
ranks, out, runs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
factor = 2 * (ranks - 1) / ranks
torch = {}
for f in sorted(glob.glob(out + "/torch_*.txt")):
    for line in open(f):
        m = re.fullmatch(r"\s*(\d+)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s*", line)
        if m:
            torch.setdefault(int(m.group(1)), []).append(float(m.group(2)))
ddp4j = {}
for line in open(out + "/ddp4j.txt"):
    if line.startswith("[rank0]: result op=allreduce "):
        kv = dict(p.split("=", 1) for p in line.split(": ", 1)[1].split()[1:])
        ddp4j[int(kv["bytes"])] = float(kv["median_us"])
sizes = sorted(set(torch) | set(ddp4j))
busbw = lambda b, us: b / us / 1e3 * factor if us else 0.0
fmt = lambda v, spec: format(v, spec) if v is not None else "n/a"
ratio = lambda a, b: format(a / b, ".2f") if a and b else "n/a"
print("| bytes | ddp4j µs | PyTorch µs | ddp4j / PyTorch time | ddp4j busbw GB/s | PyTorch busbw GB/s | ddp4j / PyTorch busbw |")
print("|---|---|---|---|---|---|---|")
with open(out + "/busbw.tsv", "w") as tsv, open(out + "/summary.txt", "w") as summary:
    tsv.write("bytes ddp4j PyTorch\n")
    for b in sizes:
        j = ddp4j.get(b)
        t = statistics.median(torch[b]) if b in torch else None
        jb, tb = busbw(b, j), busbw(b, t)
        print(f"| {b} | {fmt(j, '.1f')} | {fmt(t, '.1f')} | {ratio(j, t)} | {jb:.4f} | {tb:.4f} | {ratio(jb, tb)} |")
        tsv.write(f"{b} {jb:.9f} {tb:.9f}\n")
        summary.write(f"summary op=allreduce ranks={ranks} bytes={b} ddp4j_us={fmt(j, '.2f')} torch_us={fmt(t, '.2f')}"
                      f" ddp4j_busbw={jb:.6f} torch_busbw={tb:.6f}\n")
missing = [b for b in sizes if b not in ddp4j or len(torch.get(b, [])) < runs]
if missing:
    print(f"missing results at sizes {missing} (see {out})")
PY
echo
echo "date: $(date -u +%Y-%m-%d) machine: $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load $(cut -d' ' -f1-3 /proc/loadavg); ranks: $ranks; ddp4j backend: $backend, transport: $([[ "${DDP4J_SHM:-1}" =~ ^(0|false|FALSE|False)$ ]] && echo "gloo (DDP4J_SHM=0)" || echo "shared memory between local ranks (DDP4J_SHM=0 turns it off)"); PyTorch runs: $torch_runs"
java -Djava.awt.headless=true -cp "$root/benchmarks/target/benchmarks.jar" org.ddp4j.benchmarks.collective.BusBandwidthPlot \
  "$out/busbw.tsv" "$plot" "all-reduce busbw, float32 SUM, $ranks ranks: ddp4j ($backend) vs PyTorch 1.13 (Gloo)"
echo "JMH JSON: $json"
echo "raw output: $out"
cat "$out/summary.txt"
