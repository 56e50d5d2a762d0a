#!/usr/bin/env bash
# All-reduce, ddp4j (JMH, org.ddp4j.benchmarks.collective.CollectiveBench under scripts/ddp4j-run)
# against PyTorch (benchmarks/pytorch/allreduce_bench.py on Gloo, started by benchmarks/pytorch/run.sh), side by side in
# one run on this machine: float32 SUM, 8 B x 4^k for k = 0..12 (8 B to 128 MiB), RANKS local ranks.
# The same run measures this machine's one-thread copy rate beyond the cache (memcpy of 256 MiB
# buffers, best of 5, by java/target/native-build/shm_allreduce_bench --copy; taken before and
# after ddp4j's run, the better counts) and checks ddp4j's curve against these targets:
#   - no cliff: no size's time per call more than 10% above the next larger size's (each pair
#     that breaks it is printed);
#   - busbw at 32 MiB and up >= 60% of the copy rate; 8 B <= 2 us; 32 MiB busbw >= 6 GB/s.
# Prints one table with ratios, writes a PNG of busbw against size (log-log, both curves), and ends
# with one line per size and one verdict line:
#   summary op=allreduce ranks=N bytes=B ddp4j_us=T torch_us=T2 ddp4j_busbw=X torch_busbw=Y
#   verdict cliffs=C copy_gbps=R busbw_share_min=S small_us=U busbw_32m=Z ok=yes|no
# T, T2: median µs per call (ddp4j: median over the JMH iterations of each one's time per call;
# PyTorch: median over TORCH_RUNS runs of allreduce_bench.py, which prints each size's mean per call);
# X, Y: busbw in GB/s (10^9 B/s) from those medians, algbw x 2(n-1)/n as nccl-tests.
# Each ddp4j size runs in a fresh pair of JVMs (one JMH fork per size), so the curve also shows
# how much a size depends on where the machine puts the ranks at that moment.
# usage: scripts/allreduce-bench.sh [--smoke] [RANKS]      (default 2; about 2-4 minutes at 2 ranks)
#   --smoke, QUICK=1  smoke run (about 30 s): sizes 8 B, 2 KiB, 128 KiB, 512 KiB, 2 MiB, 8 MiB, 32 MiB,
#                   5 iterations each, one PyTorch run up to 32 MiB, a 64 MiB copy
#   SIZES=LIST      ddp4j's sizes instead (CollectiveBench --sizes: 8,1K,64K,1M; K, M binary),
#                   e.g. every power of 2
#   ITERATIONS=N    JMH iterations per size (default 10; QUICK 5)
#   TORCH_PYTHON=PATH  the PyTorch side's python (default: what scripts/torch-python.sh picks; the
#                   table and the plot name its torch version)
#   TORCH_RUNS=R    runs of the PyTorch side (default 3, QUICK 1, 0 = none; one before ddp4j's, the rest after)
#   BACKEND=NAME    ddp4j's process-group backend (default gloo); the environment passes through
#                   to the ranks, e.g. DDP4J_SHM=0/1 to pick the transport
#   PLOT=FILE.png   the plot (default benchmarks/results/allreduce-busbw-RANKSranks.png; QUICK: the raw-output folder)
#   JSON=FILE       JMH's JSON results (default next to the plot, .json)
#   SKIP_SETUP=1    use the jars and the native build as they are instead of running scripts/setup.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "allreduce-bench.sh: $*" >&2; exit 1; }
quick="${QUICK:-0}"
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --smoke) quick=1; shift ;;
esac
ranks="${1:-2}"
torch_max=128M
if [[ "$quick" == 1 ]]; then
  torch_runs="${TORCH_RUNS:-1}"; iterations="${ITERATIONS:-5}"; copy_bytes=$((64 << 20))
  sizes="${SIZES:-8,2K,128K,512K,2M,8M,32M}"; torch_max=32M
else
  torch_runs="${TORCH_RUNS:-3}"; iterations="${ITERATIONS:-10}"; copy_bytes=$((256 << 20))
  sizes="${SIZES:-}"
fi
backend="${BACKEND:-gloo}"
bench="$root/java/target/native-build/shm_allreduce_bench"
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || { echo "allreduce-bench.sh: RANKS must be a positive number, got '$ranks'" >&2; exit 2; }
[[ "$torch_runs" =~ ^[0-9]+$ ]] || { echo "allreduce-bench.sh: TORCH_RUNS must be 0 or more, got '$torch_runs'" >&2; exit 2; }
[[ "$iterations" =~ ^[1-9][0-9]*$ ]] || { echo "allreduce-bench.sh: ITERATIONS must be a positive number, got '$iterations'" >&2; exit 2; }
[[ -x /usr/bin/python3 ]] || { echo "allreduce-bench.sh: needs /usr/bin/python3" >&2; exit 1; }
# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"
torch_py=""; torch_ver="none"
if ((torch_runs > 0)); then
  torch_py="$(torch_python)"
  torch_ver="$(torch_version "$torch_py")"
fi
if [[ "${SKIP_SETUP:-0}" != 1 ]]; then
  "$root/scripts/setup.sh" >/dev/null 2>&1 || { echo "allreduce-bench.sh: scripts/setup.sh failed; run it to see why" >&2; exit 1; }
fi
[[ -f "$root/benchmarks/target/benchmarks.jar" ]] || {
  echo "allreduce-bench.sh: no benchmarks/target/benchmarks.jar; run scripts/setup.sh (or mvn -DskipTests package)" >&2; exit 1; }
[[ -x "$bench" ]] || {
  echo "allreduce-bench.sh: no $bench (the copy-rate probe); run scripts/setup.sh, which builds it with the native library" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# A rank that hangs fails the group within 2 minutes instead of the default 30 (set it to override).
export DDP4J_TIMEOUT_SECONDS="${DDP4J_TIMEOUT_SECONDS:-120}"
out="$(mktemp -d)"
# A smoke run does not replace the recorded results: its plot and JSON stay in the raw-output folder.
if [[ "$quick" == 1 ]]; then plot="${PLOT:-$out/allreduce-busbw-${ranks}ranks.png}"
else plot="${PLOT:-$root/benchmarks/results/allreduce-busbw-${ranks}ranks.png}"; fi
json="${JSON:-${plot%.png}.json}"
mkdir -p "$(dirname "$plot")" "$(dirname "$json")"
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

torch_run() {  # i: one run of the PyTorch side, bounded
  MASTER_PORT="$(free_port)" timeout 240 env TORCH_PYTHON="$torch_py" "$pytorch_dir/run.sh" "$ranks" \
    "$pytorch_dir/allreduce_bench.py" --max-bytes "$torch_max" > "$out/torch_$1.txt" 2>&1 || {
    echo "allreduce-bench.sh: PyTorch run $1 failed:" >&2; tail -20 "$out/torch_$1.txt" >&2; exit 1; }
}
ddp4j_run() {  # the JMH benchmark under the launcher, bounded
  local size_args=()
  [[ -n "$sizes" ]] && size_args=(--sizes "$sizes")
  timeout 600 "$root/scripts/ddp4j-run" --nproc-per-node "$ranks" --master-port "$(free_port)" \
    java -cp "$root/benchmarks/target/benchmarks.jar" org.ddp4j.benchmarks.collective.CollectiveBench \
    --op allreduce --backend "$backend" --iterations "$iterations" "${size_args[@]}" --json "$json" > "$out/ddp4j.txt" 2>&1 || {
    echo "allreduce-bench.sh: the ddp4j benchmark failed:" >&2; tail -30 "$out/ddp4j.txt" >&2; exit 1; }
}
copy_run() {  # i: one thread copying buffers well beyond the cache (memcpy and the transport's copy loop)
  timeout 120 "$bench" --copy "$copy_bytes" --sizes "" > "$out/copy_$1.txt" 2>&1 || {
    echo "allreduce-bench.sh: the copy-rate probe failed:" >&2; cat "$out/copy_$1.txt" >&2; exit 1; }
}

# Alternate the sides, so that a change in the machine's load hits all of them.
copy_run 1
((torch_runs > 0)) && torch_run 1
ddp4j_run
copy_run 2
for ((i = 2; i <= torch_runs; i++)); do torch_run "$i"; done

# Medians, busbw, the table and the checks; busbw.tsv feeds the plot, summary.txt is printed last.
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
copy = []
for f in sorted(glob.glob(out + "/copy_*.txt")):
    for line in open(f):
        if line.startswith("copy "):
            kv = dict(p.split("=", 1) for p in line.split()[1:])
            copy.append((int(kv["bytes"]), float(kv["memcpy_gbps"]), float(kv["copy_bytes_gbps"])))
# The machine's rate: the better of memcpy and the transport's own copy loop, in the better run.
copy_gbps = max(max(m, c) for _, m, c in copy)
sizes = sorted(ddp4j) or sorted(torch)  # ddp4j's sizes (a smoke run measures fewer than PyTorch prints)
busbw = lambda b, us: b / us / 1e3 * factor if us else 0.0
fmt = lambda v, spec: format(v, spec) if v is not None else "n/a"
ratio = lambda a, b: format(a / b, ".2f") if a and b else "n/a"
print("| bytes | ddp4j µs | PyTorch µs | ddp4j / PyTorch time | ddp4j busbw GB/s | PyTorch busbw GB/s | ddp4j / PyTorch busbw | ddp4j busbw / copy rate |")
print("|---|---|---|---|---|---|---|---|")
with open(out + "/busbw.tsv", "w") as tsv, open(out + "/summary.txt", "w") as summary:
    tsv.write("bytes ddp4j PyTorch\n")
    for b in sizes:
        j = ddp4j.get(b)
        t = statistics.median(torch[b]) if b in torch else None
        jb, tb = busbw(b, j), busbw(b, t)
        print(f"| {b} | {fmt(j, '.1f')} | {fmt(t, '.1f')} | {ratio(j, t)} | {jb:.4f} | {tb:.4f} | {ratio(jb, tb)} | {jb / copy_gbps:.2f} |")
        tsv.write(f"{b} {jb:.9f} {tb:.9f}\n")
        summary.write(f"summary op=allreduce ranks={ranks} bytes={b} ddp4j_us={fmt(j, '.2f')} torch_us={fmt(t, '.2f')}"
                      f" ddp4j_busbw={jb:.6f} torch_busbw={tb:.6f}\n")
    print()
    for b, m, c in copy:
        print(f"one-thread copy of {b >> 20} MiB: memcpy {m:.2f} GB/s, the transport's copy loop {c:.2f} GB/s")
    print(f"copy rate beyond the cache (the best of those): {copy_gbps:.2f} GB/s; 60% of it: {0.6 * copy_gbps:.2f} GB/s")
    # The checks on ddp4j's curve.
    measured = sorted(ddp4j)
    cliffs = [(a, b) for a, b in zip(measured, measured[1:]) if ddp4j[a] > 1.1 * ddp4j[b]]
    for a, b in cliffs:
        print(f"CLIFF: {a} B takes {ddp4j[a]:.1f} µs, {ddp4j[a] / ddp4j[b]:.2f}x the {ddp4j[b]:.1f} µs of {b} B (limit 1.10x)")
    if not cliffs:
        print(f"no cliff: every size's time is at most 1.10x the next larger size's ({len(measured)} sizes)")
    large = [b for b in measured if b >= 32 << 20]
    shares = {b: busbw(b, ddp4j[b]) / copy_gbps for b in large}
    for b in large:
        mark = "ok" if shares[b] >= 0.6 else "BELOW"
        print(f"busbw at {b >> 20} MiB: {busbw(b, ddp4j[b]):.2f} GB/s = {shares[b]:.2f} of the copy rate (target 0.60): {mark}")
    small = ddp4j.get(8)
    if small is not None:
        print(f"8 B: {small:.2f} µs (target <= 2): {'ok' if small <= 2 else 'ABOVE'}")
    b32 = busbw(32 << 20, ddp4j[32 << 20]) if (32 << 20) in ddp4j else None
    if b32 is not None:
        print(f"32 MiB busbw: {b32:.2f} GB/s (target >= 6): {'ok' if b32 >= 6 else 'BELOW'}")
    ok = not cliffs and all(s >= 0.6 for s in shares.values()) and (small is None or small <= 2) and (b32 is None or b32 >= 6)
    summary.write(f"verdict cliffs={len(cliffs)} copy_gbps={copy_gbps:.3f}"
                  f" busbw_share_min={fmt(min(shares.values()) if shares else None, '.3f')} small_us={fmt(small, '.2f')}"
                  f" busbw_32m={fmt(b32, '.3f')} ok={'yes' if ok else 'no'}\n")
missing = [b for b in sizes if b not in ddp4j or (runs > 0 and len(torch.get(b, [])) < runs)]
if missing:
    print(f"missing results at sizes {missing} (see {out})")
PY
echo
echo "date: $(date -u +%Y-%m-%d) machine: $(nproc --all) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load $(cut -d' ' -f1-3 /proc/loadavg); ranks: $ranks; ddp4j backend: $backend, transport: $([[ "${DDP4J_SHM:-1}" =~ ^(0|false|FALSE|False)$ ]] && echo "gloo (DDP4J_SHM=0)" || echo "shared memory between local ranks (DDP4J_SHM=0 turns it off)"); PyTorch runs: $torch_runs (torch $torch_ver${torch_py:+ from $torch_py}); JMH iterations: $iterations$([[ "$quick" == 1 ]] && echo "; SMOKE RUN: not a measurement")"
java -Djava.awt.headless=true -cp "$root/benchmarks/target/benchmarks.jar" org.ddp4j.benchmarks.collective.BusBandwidthPlot \
  "$out/busbw.tsv" "$plot" "all-reduce busbw, float32 SUM, $ranks ranks: ddp4j ($backend) vs PyTorch $torch_ver (Gloo)"
echo "JMH JSON: $json"
echo "raw output: $out"
cat "$out/summary.txt"
