# bench-common.sh: what the side-by-side benchmark scripts share; source it after setting `root`,
# `out` (the raw-output folder), `gemm` (1: measure the GEMM limit), `bench_jar` and a `die` function.

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
