#!/usr/bin/env bash
# The synthetic ResNet benchmark (after Horovod's pytorch_synthetic_benchmark.py), ddp4j against
# PyTorch, side by side in one run on this machine: ddp4j's org.ddp4j.examples.ResNetSynthetic and
# benchmarks/pytorch/resnet_synthetic.py (started by benchmarks/pytorch/run.sh, on the Python that
# scripts/torch-python.sh picks: TORCH_PYTHON, a torch 2.13 venv, or Debian's torch 1.13; the
# table names the version). Optionally a third column, opt-in: a JavaCPP libtorch build of the same
# job, from a Maven project you name with JAVACPP_ANCHOR=DIR (none by default; see below).
# All sides train the same model on one synthetic batch per rank (SGD, momentum 0.9) and print
# `summary ... images_per_s=X`; the runs are interleaved (ddp4j, torch, javacpp, repeat) so that a
# change in the machine's load hits all of them. The GEMM rate per core (JMH KernelBenchmark.gemm512, one
# thread) is measured in the same run, before and after the training runs; the higher counts (the
# limit: a busy moment only lowers it).
#
# Prints ONE table: per model and configuration (ranks x threads per rank), images/s per rank of each
# (median over --repeats runs of the mean over ranks), the ratios ddp4j/torch and ddp4j/javacpp, the
# share of the GEMM limit of each (training GFLOP per image x images/s / (GEMM GFLOP/s per core x
# threads per rank); ResNet-18 10.9 and ResNet-50 24.5 GFLOP per image at 224x224, scaled by
# (S/224)^2 at other sizes) and peak RSS per rank (GNU time's maximum resident set size over the
# processes of a run: the largest rank; max over the repeats). A `!` after a figure: the ranks of
# that run ended with different param_crc (DDP did not keep them equal). Paste it into
# benchmarks/RESULTS.md.
#
# usage: scripts/resnet-bench.sh [options]
#   --models M[,M]      resnet18,resnet50 (default both)
#   --configs C[,C]     RxT: R ranks x T threads per rank, T a number or "all" (nproc);
#                       default 1xall,1x1,2x1
#   --steps N           timed steps (default 10)    --warmup-steps N (default 2)
#   --batch-size B      per rank (default 32)       --image-size S (default 224)
#   --repeats K         runs of each side per cell (default 1)
#   --only LIST         sides to run: ddp4j,torch,javacpp (default ddp4j,torch, plus javacpp when
#                       JAVACPP_ANCHOR is set; torch113 and torch210 are older names of torch and javacpp)
#   --no-gemm           skip the JMH GEMM measurement (no share column)
#   --smoke             a check that the sides run (well under a minute): resnet18, image 32, batch 4,
#                       1 warm-up + 2 steps, configs 1x1,2x1, no GEMM; its figures are not measurements
# environment:
#   TORCH_PYTHON=PATH   the PyTorch side's python (default: what scripts/torch-python.sh picks)
#   JAVACPP_ANCHOR=DIR  opt-in third column, no default: a Maven project running the same job on
#                       libtorch through JavaCPP's presets (org.bytedeco:pytorch), whose `mvn package`
#                       makes target/javacpp-pytorch-anchor.jar and whose DIR/run.sh N ResNetSynthetic
#                       ARGS starts N ranks printing the same check/summary lines. It is copied to
#                       build/javacpp-anchor and built there (rebuilt when DIR changes).
#   SKIP_SETUP=1      do not run scripts/setup.sh (ddp4j and its benchmarks jar are already built)
#   RUN_TIMEOUT=S     bound on one run, seconds (default 1800)
#   the environment passes through to every run (e.g. DDP4J_DDP_OVERLAP=0); OMP_NUM_THREADS and
#   OPENBLAS_NUM_THREADS are set to each run's threads per rank on every side (Debian's OpenBLAS,
#   which torch 1.13 uses for fc, only reads them at start)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
javacpp="${JAVACPP_ANCHOR:-}"
models=resnet18,resnet50
configs=1xall,1x1,2x1
steps=10
warmup=2
batch=32
image=224
repeats=1
only=ddp4j,torch${javacpp:+,javacpp}
gemm=1
run_timeout="${RUN_TIMEOUT:-1800}"
die() { echo "resnet-bench.sh: $*" >&2; exit 1; }
while (($#)); do
  case "$1" in
    --models) models="$2"; shift 2 ;;
    --configs) configs="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --warmup-steps) warmup="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --image-size) image="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --no-gemm) gemm=0; shift ;;
    --smoke) models=resnet18; image=32; batch=4; warmup=1; steps=2; configs=1x1,2x1; gemm=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for v in steps warmup batch image repeats; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "--${v} must be a number, got '${!v}'"
done
((steps > 0 && batch > 0 && image > 0 && repeats > 0)) || die "--steps, --batch-size, --image-size and --repeats must be positive"
IFS=, read -r -a model_list <<< "$models"
IFS=, read -r -a config_list <<< "$configs"
only="$(sed 's/torch113/torch/g; s/torch210/javacpp/g' <<< "$only")"
IFS=, read -r -a sides <<< "$only"
for m in "${model_list[@]}"; do [[ "$m" == resnet18 || "$m" == resnet50 ]] || die "--models: resnet18 or resnet50, got '$m'"; done
for c in "${config_list[@]}"; do [[ "$c" =~ ^[1-9][0-9]*x([1-9][0-9]*|all)$ ]] || die "--configs: RxT (e.g. 2x1, 1xall), got '$c'"; done
for s in "${sides[@]}"; do [[ "$s" =~ ^(ddp4j|torch|javacpp)$ ]] || die "--only: ddp4j, torch or javacpp, got '$s'"; done
has_side() { [[ ",$only," == *",$1,"* ]]; }
cores=$(nproc)

# ---- what each side needs -------------------------------------------------------------------------
[[ -x /usr/bin/time ]] || die "needs GNU time for peak RSS (apt-get install -y time)"
# shellcheck source=scripts/bench-common.sh
source "$root/scripts/bench-common.sh"
torch_ver=none
if has_side torch; then
  torch_py="$(torch_python)"
  torch_ver="$(torch_version "$torch_py")"
fi
anchor_java="$root/build/javacpp-anchor"
if has_side javacpp; then
  [[ -n "$javacpp" ]] || die "--only javacpp needs JAVACPP_ANCHOR=DIR, a Maven project of the same job on JavaCPP's libtorch (see --help)"
  [[ -f "$javacpp/pom.xml" && -f "$javacpp/run.sh" ]] || die "no pom.xml and run.sh in JAVACPP_ANCHOR=$javacpp"
  # a copy built here (DIR may be read-only); rebuilt when its sources changed
  if [[ ! -f "$anchor_java/target/javacpp-pytorch-anchor.jar" ]] \
      || ! diff -rq "$javacpp/src" "$anchor_java/src" >/dev/null 2>&1 \
      || ! cmp -s "$javacpp/pom.xml" "$anchor_java/pom.xml"; then
    echo "resnet-bench.sh: building the JavaCPP libtorch project in $anchor_java (the first build fetches ~110 MB of jars from Maven Central)" >&2
    rm -rf "$anchor_java"
    mkdir -p "$root/build"
    cp -r "$javacpp" "$anchor_java"
    (cd "$anchor_java" && { mvn -q -B -o package >/dev/null 2>&1 || mvn -q -B package >&2; }) \
      || die "building the JavaCPP libtorch project failed (cd $anchor_java && mvn package)"
  fi
fi
if [[ "${SKIP_SETUP:-0}" != 1 ]]; then
  "$root/scripts/setup.sh" >/dev/null 2>&1 || die "scripts/setup.sh failed; run it to see why"
fi
bench_jar="$root/benchmarks/target/benchmarks.jar"
((gemm == 0)) || [[ -f "$bench_jar" ]] || die "no $bench_jar: run scripts/setup.sh (or pass --no-gemm)"
export DDP4J_TIMEOUT_SECONDS="${DDP4J_TIMEOUT_SECONDS:-600}"
out="$(mktemp -d)"

echo "resnet-bench.sh: raw outputs in $out" >&2
echo "resnet-bench.sh: GEMM rate (JMH KernelBenchmark.gemm512, 1 thread)" >&2
measure_gemm 1

# ---- one run of one side ------------------------------------------------------------------------------
# run SIDE MODEL RANKS THREADS REP: writes $out/SIDE-MODEL-RxT-REP.{txt,time}; prints nothing
run() {
  local side=$1 model=$2 ranks=$3 threads=$4 rep=$5
  local f="$out/$side-$model-${ranks}x$threads-$rep"
  local args=(--model "$model" --batch-size "$batch" --image-size "$image" --warmup-steps "$warmup" --steps "$steps" --threads "$threads")
  local port; port="$(free_port)"
  local rc=0
  case "$side" in
    ddp4j)
      OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads timeout "$run_timeout" /usr/bin/time -v -o "$f.time" \
        "$root/scripts/ddp4j-run" --nproc-per-node "$ranks" --master-port "$port" \
        org.ddp4j.examples.ResNetSynthetic "${args[@]}" > "$f.txt" 2>&1 || rc=$? ;;
    torch)
      OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MASTER_PORT=$port timeout "$run_timeout" \
        /usr/bin/time -v -o "$f.time" env TORCH_PYTHON="$torch_py" "$pytorch_dir/run.sh" "$ranks" \
        "$pytorch_dir/resnet_synthetic.py" "${args[@]}" > "$f.txt" 2>&1 || rc=$? ;;
    javacpp)
      OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MASTER_PORT=$port timeout "$run_timeout" \
        /usr/bin/time -v -o "$f.time" "$anchor_java/run.sh" "$ranks" ResNetSynthetic "${args[@]}" > "$f.txt" 2>&1 || rc=$? ;;
  esac
  if ((rc != 0)); then
    echo "resnet-bench.sh: $side $model ${ranks}x$threads run $rep failed (exit $rc); its output:" >&2
    tail -20 "$f.txt" >&2
  fi
}

for model in "${model_list[@]}"; do
  for config in "${config_list[@]}"; do
    ranks=${config%x*}
    threads=${config#*x}
    [[ "$threads" == all ]] && threads=$cores
    for ((rep = 1; rep <= repeats; rep++)); do
      for side in ddp4j torch javacpp; do
        has_side "$side" || continue
        echo "resnet-bench.sh: $model ${ranks}x$threads run $rep: $side" >&2
        run "$side" "$model" "$ranks" "$threads" "$rep"
      done
    done
  done
done

echo "resnet-bench.sh: GEMM rate again" >&2
measure_gemm 2
gemm_rate=""
((${#gemm_rates[@]})) && gemm_rate="$(printf '%s\n' "${gemm_rates[@]}" | sort -g | tail -1)"

# ---- the table ------------------------------------------------------------------------------------------
echo
echo "date: $(date -u +%Y-%m-%d) machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "PyTorch: torch $torch_ver${torch_py:+ from $torch_py}$([[ -n "$javacpp" ]] && echo "; javacpp: $javacpp")"
echo "batch $batch per rank, image ${image}x$image, $warmup warm-up + $steps timed steps, $repeats run(s) per cell (median);" \
  "GEMM limit: ${gemm_rate:-not measured} GFLOP/s per core (JMH KernelBenchmark.gemm512, 1 thread; before / after: ${gemm_rates[*]:-})"
echo
/usr/bin/python3 - "$out" "$gemm_rate" "$image" "$models" "$configs" "$cores" "$torch_ver" <<'PY'
import glob, os, re, statistics, sys
out, gemm, image, models, configs, cores = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
torch_ver = sys.argv[7]
gemm = float(gemm) if gemm else None
gflop = {"resnet18": 10.9, "resnet50": 24.5}  # training FLOPs per image at 224x224 (three forwards)
sides = ["ddp4j", "torch", "javacpp"]

def parse(path):
    """(mean images/s per rank, ranks equal?) of one run, or None when it printed no summary."""
    ips, crcs = [], set()
    for line in open(path, errors="replace"):
        m = re.search(r"summary rank=\d+ .*images_per_s=([\d.]+)", line)
        if m:
            ips.append(float(m.group(1)))
        m = re.search(r"check rank=\d+ .*param_crc=([0-9a-f]+)", line)
        if m:
            crcs.add(m.group(1))
    return (statistics.mean(ips), len(crcs) <= 1) if ips else None

def peak_mb(path):
    try:
        for line in open(path):
            if "Maximum resident set size" in line:
                return int(line.split()[-1]) / 1024
    except OSError:
        pass
    return None

def cell(side, model, config):
    runs, rss, equal = [], [], True
    for f in sorted(glob.glob(f"{out}/{side}-{model}-{config}-*.txt")):
        r = parse(f)
        if r:
            runs.append(r[0])
            equal &= r[1]
        p = peak_mb(f[:-4] + ".time")
        if p is not None:
            rss.append(p)
    return (statistics.median(runs) if runs else None), (max(rss) if rss else None), equal

fmt = lambda v, spec: "n/a" if v is None else format(v, spec)
ratio = lambda a, b: f"{a / b:.2f}" if a and b else "n/a"
print(f"| model | ranks × threads | ddp4j img/s | PyTorch {torch_ver} img/s | JavaCPP libtorch img/s | ddp4j / PyTorch | ddp4j / JavaCPP "
      "| GEMM share ddp4j / PyTorch / JavaCPP | peak RSS MB ddp4j / PyTorch / JavaCPP |")
print("|---|---|---|---|---|---|---|---|---|")
for model in models.split(","):
    for config in configs.split(","):
        ranks, threads = config.split("x")
        threads = cores if threads == "all" else int(threads)
        key = f"{ranks}x{threads}"
        c = {s: cell(s, model, key) for s in sides}
        ips = {s: c[s][0] for s in sides}
        flop = gflop[model] * (image / 224) ** 2
        share = lambda v: "n/a" if v is None or not gemm else f"{100 * flop * v / (gemm * threads):.0f}%"
        mark = lambda s: "" if c[s][2] else "!"
        print(f"| {model} | {ranks} × {threads} | {fmt(ips['ddp4j'], '.2f')}{mark('ddp4j')} | {fmt(ips['torch'], '.2f')}{mark('torch')} "
              f"| {fmt(ips['javacpp'], '.2f')}{mark('javacpp')} | {ratio(ips['ddp4j'], ips['torch'])} | {ratio(ips['ddp4j'], ips['javacpp'])} "
              f"| {' / '.join(share(ips[s]) for s in sides)} | {' / '.join(fmt(c[s][1], '.0f') for s in sides)} |")
PY
echo
echo "(images/s per rank; share: training GFLOP/image (ResNet-18 10.9, ResNet-50 24.5 at 224², x (S/224)²) x img/s / (GEMM GFLOP/s per core x threads per rank);"
echo " peak RSS: the largest process of a run; '!': the ranks ended with different param_crc; raw outputs in $out)"
