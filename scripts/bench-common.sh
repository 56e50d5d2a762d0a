# bench-common.sh: what the side-by-side benchmark scripts share; source it after setting `root` and
# a `die` function (measure_gemm also reads `out`, the raw-output folder, `gemm`, 1: measure the
# GEMM limit, and `bench_jar` when it runs).

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

# The PyTorch side's python: $PYTHON, else build/torch-venv/bin/python (a venv with the image's
# torch 2.13 wheel) where it exists, else python3 (Debian's 1.13); dies unless it has torch and numpy.
torch_python() {
  local python="${PYTHON:-}"
  if [[ -z "$python" ]]; then
    python=python3
    [[ -x "$root/build/torch-venv/bin/python" ]] && python="$root/build/torch-venv/bin/python"
  fi
  "$python" -c 'import torch, numpy' 2>/dev/null || die "$python has no torch and numpy: set PYTHON= or make build/torch-venv"
  echo "$python"
}

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
