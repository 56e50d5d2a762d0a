# bench-common.sh: what the side-by-side benchmark scripts share; source it after setting `root` and
# a `die` function (measure_gemm also reads `out`, the raw-output folder, `gemm`, 1: measure the
# GEMM limit, and `bench_jar` when it runs).
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then  # run, not sourced: say what it is
  sed -n '1,3s/^# \{0,1\}//p' "$0"; exit 0
fi

# A TCP port nobody listens on right now.
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The GEMM limit: measure_gemm N runs JMH's KernelBenchmark.gemm512 at one thread (the rate per core
# that a rank's threads multiply) into $out/gemm-N.txt and appends its GFLOP/s to gemm_rates.
gemm_rates=()
measure_gemm() {
  ((gemm)) || return 0
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 timeout 600 java -jar "$bench_jar" 'KernelBenchmark\.gemm512$' \
    -f 1 -wi 3 -i 5 -w 1 -r 1 > "$out/gemm-$1.txt" 2>&1 || { tail -20 "$out/gemm-$1.txt" >&2; die "JMH KernelBenchmark.gemm512 failed"; }
  # JMH's score is ops/ns with one op per FLOP, i.e. GFLOP/s
  local rate; rate="$(awk '$1 ~ /KernelBenchmark\.gemm512$/ {printf "%.1f", $(NF-3)}' "$out/gemm-$1.txt")"
  [[ -n "$rate" ]] || die "no gemm512 score in $out/gemm-$1.txt"
  gemm_rates+=("$rate")
}

# The PyTorch side's python, chosen by scripts/torch-python.sh (TORCH_PYTHON, else a venv with torch
# 2.13 in .venv-torch or build/torch-venv, else Debian's /usr/bin/python3 with torch 1.13); torch_python
# MODULES [MIN_VERSION] also needs those (comma-separated, e.g. numpy) and a torch that recent. When none has torch and TORCH_PYTHON is not
# set, scripts/torch-anchor.sh installs Debian's python3-torch (as root) and the choice is made again.
torch_python() {
  local extra=() python
  [[ -n "${1:-}" ]] && extra=(--modules "$1")
  [[ -n "${2:-}" ]] && extra+=(--min-version "$2")
  python="$("$root/scripts/torch-python.sh" "${extra[@]}" 2>/dev/null)" && { echo "$python"; return 0; }
  if [[ -z "${TORCH_PYTHON:-}${PYTHON:-}" ]]; then
    "$root/scripts/torch-anchor.sh" >&2 || true
  fi
  "$root/scripts/torch-python.sh" "${extra[@]}" || die "no Python with torch${1:+ and $1} (see scripts/torch-python.sh --help)"
}

# The torch version of an interpreter, e.g. 2.13.0+cpu.
torch_version() { "$1" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo unknown; }

# Where the PyTorch side's scripts are, and their launcher (N local ranks with the env:// variables).
pytorch_dir="$root/benchmarks/pytorch"
pytorch_run() { TORCH_PYTHON="$torch_py" "$pytorch_dir/run.sh" "$@"; }

# GPTDemo's model options for a --model name, gpt2 (124M) or small, into the array `shape`.
gpt_shape() {
  case "$1" in
    gpt2) shape=(--n-layer 12 --n-head 12 --n-embd 768) ;;
    small) shape=(--n-layer 6 --n-head 6 --n-embd 384) ;;
    *) die "--model must be gpt2 or small, got $1" ;;
  esac
}

# Builds ddp4j unless SKIP_SETUP=1, and writes Debian's fortunes through GPT-2's BPE once; sets `data`.
gpt_prepare() {
  if [[ "${SKIP_SETUP:-0}" != 1 ]]; then
    "$root/scripts/setup.sh" >/dev/null 2>&1 || die "scripts/setup.sh failed; run it to see why"
  fi
  data="$root/java/target/fortunes-gpt2"
  if [[ ! -f "$data/meta.json" ]]; then
    java -cp "$root/java/target/classes:$root/java/target/lib/*" org.ddp4j.text.PrepareText --out "$data" >&2
  fi
}
