#!/usr/bin/env bash
# The one prepared check for a GPU machine (x86-64 with nvcc, CMake, python3 + PyTorch with CUDA
# and NCCL from the pip package nvidia-nccl-cu13; no internet, no apt, maybe no Java, Gloo or
# OpenBLAS). On a CPU machine first:  scripts/gpu-bundle.sh  (writes build/gpu-bundle/: a trimmed
# Java runtime, the jars and test classes, a Gloo + OpenBLAS sysroot and Fashion-MNIST, packed).
# Then copy the repository with build/gpu-bundle to the GPU machine (the device tool: carry
# build/gpu-bundle, timeout 540 s) and run, from the repository root there:
#   scripts/gpu-check.sh
#
# It builds the native code there (CMake, all cores, only the GPU's architecture), runs
#   ctest -L cuda and the CPU ctests; the Java tests tagged "gpu" (JUnit console launcher);
#   ConvNet training step time on the GPU at batch 100 and 1024, ddp4j (GpuStepTime) against
#   PyTorch (scripts/gpu/torch_convnet_step.py: same model, float32, TF32 off, same timing);
#   kernel GFLOP/s on the GPU (JMH KernelBenchmark -p device=cuda);
#   all-reduce through ddp4j's NCCL group at 1 GPU (GpuAllReduceBench) and torch.distributed's
#   (scripts/gpu/torch_allreduce.py); LinearDemo and ConvNetDemo (1 epoch) on --device cuda.
# Each group is time-boxed and recorded as pass / fail / skip with a reason; nothing stops the
# rest; the whole run stays under 8 minutes (GPU_CHECK_DEADLINE_S, default 450 s); a markdown
# table of the groups comes LAST. Logs: build/gpu-check/logs/. Exit status: 0 when no group failed.
#
# Environment: JAVA_HOME / java on PATH (a JDK 17+ there is used, else the bundle's runtime),
# DDP4J_NCCL_LIBRARY (else found in the nvidia-nccl pip package), CUDA_HOME, GPU_CHECK_BUNDLE
# (the bundle folder, default build/gpu-bundle), GPU_CHECK_SYSTEM_LIBS=1 (use installed Gloo /
# OpenBLAS instead of the bundle's sysroot), GPU_CHECK_BUNDLE_JAVA=1 (the bundle's runtime even where
# a JDK is installed), GPU_CHECK_CUDA_ARCHS (default: the GPU's own, e.g. 90).
# scripts/gpu-check.sh --sources-hash prints the hash gpu-bundle.sh records (Java sources).
set -u
case "${1:-}" in -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1

sources_hash() {  # what the bundle's compiled classes were built from
  find java/src benchmarks/src -type f 2>/dev/null | LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum | cut -c1-16
}
if [[ "${1:-}" == --sources-hash ]]; then
  sources_hash
  exit 0
fi

start=$SECONDS
deadline=$((start + ${GPU_CHECK_DEADLINE_S:-450}))
work="$root/build/gpu-check"
logs="$work/logs"
rm -rf "$logs"
mkdir -p "$logs"
cores="$(nproc 2>/dev/null || echo 2)"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# ---- results ---------------------------------------------------------------------------------
groups=(); results=(); figures=()
record() {  # group result figure
  local result="$2"
  [[ "$3" == *"not started: out of time"* ]] && result=skip  # neither passed nor failed
  groups+=("$1"); results+=("$result"); figures+=("$3")
  printf '[gpu-check %4ds] %-34s %-4s %s\n' $((SECONDS - start)) "$1" "$result" "$3"
}
section() { printf '\n[gpu-check %4ds] == %s ==\n' $((SECONDS - start)) "$*"; }
# Seconds a step may take: its box, or what is left before the deadline (0: no time left).
allow() {
  local left=$((deadline - SECONDS - 3))
  (( left < 5 )) && { echo 0; return; }
  (( $1 < left )) && echo "$1" || echo "$left"
}
# run_boxed NAME SECONDS cmd...: runs cmd with a timeout, output to $logs/NAME.log; returns its
# status (124: timed out, 125: not started for lack of time).
run_boxed() {
  local name="$1" secs
  secs="$(allow "$2")"
  shift 2
  if (( secs == 0 )); then
    echo "not started: out of time" > "$logs/$name.log"
    return 125
  fi
  timeout -k 5 "$secs" "$@" > "$logs/$name.log" 2>&1
}
why() {  # a short reason from a log: the most telling error line, else the last line
  local line pat
  for pat in 'CMake Error|Unknown option|[A-Za-z.]*(Exception|Error):|error:|FAILED|No module named' \
             'error|exception|fail|not found|no such|cannot|unable|refused|no CUDA'; do
    line="$(grep -E -i -A1 "$pat" "$1" 2>/dev/null | grep -v -E '^\s+at |tests? (successful|failed)|0 failed|See also|^--$' \
      | grep -v '^\s*$' | head -2 | tr '\n' ' ')"
    [[ -n "$line" ]] && break
  done
  [[ -z "$line" ]] && line="$(grep -v '^\s*$' "$1" 2>/dev/null | tail -1)"
  line="$(echo "$line" | tr -s ' \t' ' ' | sed 's/|/\//g')"
  echo "${line:0:180}"
}
status_reason() {  # rc log -> reason text
  case "$1" in
    124|137) echo "timed out (log: ${2#"$root"/})" ;;
    125) echo "not started: out of time" ;;
    *) echo "exit $1: $(why "$2")" ;;
  esac
}
show_tail() { echo "--- last lines of ${1#"$root"/}:"; tail -n "${2:-12}" "$1" | cut -c1-240; echo "---"; }
no_gpu_pattern='no CUDA device|no CUDA support|CUDA driver|cudaErrorNoDevice|exit code 77'

# ---- machine ---------------------------------------------------------------------------------
section "machine"
gpu_names="$(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>/dev/null \
  | grep -E ', [0-9]+\.[0-9]+, ' || true)"
gpu_count="$(printf '%s' "$gpu_names" | grep -c . || true)"
if (( gpu_count == 0 )); then  # an nvidia-smi without compute_cap
  gpu_count="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
fi
echo "cores: $cores; GPUs: ${gpu_count} ${gpu_names:+($(echo "$gpu_names" | head -1))}"
[[ "$gpu_count" -gt 0 ]] || echo "nvidia-smi lists no GPU: the GPU groups will skip or fail with the reason"

# ---- tools -------------------------------------------------------------------------------------
python=""   # a python3 that imports torch, else any python3
pythons=()  # every python3 found (where to look for the nvidia-nccl pip package)
for c in "$(command -v python3 2>/dev/null)" /usr/bin/python3 /usr/local/bin/python3 /opt/conda/bin/python3; do
  [[ -n "$c" && -x "$c" ]] || continue
  pythons+=("$c")
  [[ -z "$python" ]] && python="$c"
  if timeout 60 "$c" -c 'import torch' 2>/dev/null; then python="$c"; break; fi
done
find_nvcc() {
  local c
  for c in "$(command -v nvcc 2>/dev/null)" "${CUDA_HOME:-/nonexistent}/bin/nvcc" /usr/local/cuda/bin/nvcc \
           /usr/local/cuda-*/bin/nvcc \
           $([[ -n "$python" ]] && "$python" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null \
             | tr ' ' '\n' | sed -e 's|$|/nvidia/cu13/bin/nvcc|' -e 'p' -e 's|cu13|cuda_nvcc|'); do
    [[ -n "$c" && -x "$c" ]] && { readlink -f "$c"; return 0; }
  done
  return 1
}
nvcc="$(find_nvcc || true)"
echo "nvcc: ${nvcc:-none}${nvcc:+ ($("$nvcc" --version | grep -o 'release [0-9.]*'))}"
echo "cmake: $(command -v cmake || echo none) $(cmake --version 2>/dev/null | head -1 | grep -o '[0-9][0-9.]*')"
echo "python3: ${python:-none}"
torch_info=""
if [[ -n "$python" ]]; then
  torch_info="$(timeout 60 "$python" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), torch.cuda.device_count())' 2>/dev/null || true)"
fi
echo "torch: ${torch_info:-not importable}"

# NCCL: DDP4J_NCCL_LIBRARY, else the pip package (nvidia/nccl/lib/libnccl.so.2), else the system's
nccl_lib="${DDP4J_NCCL_LIBRARY:-}"
nccl_inc="${NCCL_INCLUDE_DIR:-}"
for py in "$python" "${pythons[@]}"; do
  [[ -n "$nccl_lib" || -z "$py" ]] && break
  nccl_lib="$(timeout 30 "$py" - <<'EOF' 2>/dev/null || true
import glob, os, site, sys
roots = []
try:
    import nvidia.nccl as m
    roots += list(getattr(m, '__path__', []))
except Exception:
    pass
try:
    import nvidia
    roots += [os.path.join(p, 'nccl') for p in getattr(nvidia, '__path__', [])]
    roots += [os.path.dirname(os.path.dirname(x)) for p in getattr(nvidia, '__path__', [])
              for x in glob.glob(os.path.join(p, '*', 'lib', 'libnccl.so.2'))]
except Exception:
    pass
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    roots += glob.glob(os.path.join(sp, 'nvidia', 'nccl')) + [os.path.dirname(os.path.dirname(x))
              for x in glob.glob(os.path.join(sp, 'nvidia', '*', 'lib', 'libnccl.so.2'))]
for r in roots:
    lib = os.path.join(r, 'lib', 'libnccl.so.2')
    if os.path.exists(lib):
        print(lib)
        sys.exit(0)
EOF
)"
done
if [[ -z "$nccl_lib" ]]; then
  for c in /usr/lib/x86_64-linux-gnu/libnccl.so.2 /usr/local/cuda/lib64/libnccl.so.2 "${NCCL_HOME:-/nonexistent}/lib/libnccl.so.2"; do
    [[ -f "$c" ]] && { nccl_lib="$c"; break; }
  done
fi
if [[ -n "$nccl_lib" && -z "$nccl_inc" ]]; then
  for c in "$(dirname "$(dirname "$nccl_lib")")/include" /usr/include "${NCCL_HOME:-/nonexistent}/include"; do
    [[ -f "$c/nccl.h" ]] && { nccl_inc="$c"; break; }
  done
fi
if [[ -n "$nccl_lib" ]]; then
  export DDP4J_NCCL_LIBRARY="$nccl_lib"
  [[ -n "$nccl_inc" ]] && export NCCL_INCLUDE_DIR="$nccl_inc"
fi
nccl_version="$([[ -n "$nccl_inc" ]] && awk '/#define NCCL_(MAJOR|MINOR|PATCH) /{printf "%s%s", sep, $3; sep="."}' "$nccl_inc/nccl.h")"
echo "NCCL: ${nccl_lib:-not found}${nccl_version:+ (nccl.h $nccl_version in $nccl_inc)}"

# ---- bundle -------------------------------------------------------------------------------------
section "bundle"
bundle_src="${GPU_CHECK_BUNDLE:-$root/build/gpu-bundle}"
bundle=""      # the unpacked tree
bundle_note=""
if [[ -f "$bundle_src/ddp4j-gpu-bundle.tar.xz" ]]; then
  bundle="$work/bundle"
  stamp="$(stat -c '%s %Y' "$bundle_src/ddp4j-gpu-bundle.tar.xz")"
  if [[ -f "$bundle/.stamp" && "$(cat "$bundle/.stamp")" == "$stamp" ]]; then
    echo "already unpacked in ${bundle#"$root"/}"
  else
    rm -rf "$bundle"; mkdir -p "$bundle"
    t0=$SECONDS
    if { tar -C "$bundle" -xJf "$bundle_src/ddp4j-gpu-bundle.tar.xz" 2>"$logs/bundle.log" \
         || { [[ -n "$python" ]] && "$python" -m tarfile -e "$bundle_src/ddp4j-gpu-bundle.tar.xz" "$bundle" 2>>"$logs/bundle.log"; }; }; then
      echo "$stamp" > "$bundle/.stamp"
      echo "unpacked in $((SECONDS - t0)) s into ${bundle#"$root"/}"
    else
      bundle_note="cannot unpack: $(why "$logs/bundle.log")"
      bundle=""
    fi
  fi
elif [[ -d "$bundle_src/jars" ]]; then
  bundle="$bundle_src"   # an unpacked tree given directly
fi
if [[ -n "$bundle" ]]; then
  grep -E '^(commit|sources_hash|java|needs):' "$bundle/MANIFEST.txt" 2>/dev/null
  want="$(awk '/^sources_hash:/ {print $2}' "$bundle/MANIFEST.txt" 2>/dev/null)"
  have="$(sources_hash)"
  if [[ "$want" == "$have" ]]; then
    bundle_result=pass; bundle_note="jars match the Java sources here"
  else
    bundle_result=fail
    bundle_note="STALE: the jars were built from other Java sources (bundle $want, tree $have); rerun scripts/gpu-bundle.sh"
  fi
else
  bundle_result=skip
  [[ -z "$bundle_note" ]] && bundle_note="no bundle at ${bundle_src#"$root"/} (scripts/gpu-bundle.sh makes it); using java/target if built"
fi
echo "$bundle_note"
record "bundle" "$bundle_result" "$bundle_note"

# Java runtime: a JDK 17+ on this machine, else the bundle's
java_ok() { [[ -x "$1" ]] && "$1" -version 2>&1 | head -1 | grep -q -E '"(1[7-9]|[2-9][0-9])'; }
java=""; java_home=""
java_candidates=("${JAVA_HOME:-/nonexistent}/bin/java" "$(command -v java 2>/dev/null)")
[[ "${GPU_CHECK_BUNDLE_JAVA:-0}" == 1 ]] && java_candidates=()
for c in "${java_candidates[@]}"; do
  if [[ -n "$c" ]] && java_ok "$c"; then
    java="$(readlink -f "$c")"; java_home="$(dirname "$(dirname "$java")")"; break
  fi
done
if [[ -z "$java" && -n "$bundle" ]] && java_ok "$bundle/jre/bin/java"; then
  java="$bundle/jre/bin/java"; java_home="$bundle/jre"
fi
echo "java: ${java:-none} $([[ -n "$java" ]] && "$java" -version 2>&1 | head -1)"
# JNI headers for CMake: this Java's, else the bundle runtime's (jlink kept them)
jni_home="$java_home"
[[ -n "$jni_home" && -f "$jni_home/include/jni.h" ]] || jni_home="${bundle:+$bundle/jre}"

# Jars: the bundle's, else this checkout's Maven output
if [[ -n "$bundle" ]]; then
  jars="$bundle/jars"
  cp_main="$jars/ddp4j.jar:$jars/lib/*"
  cp_test="$jars/test-classes:$jars/ddp4j.jar:$jars/lib/*:$jars/test-lib/*:$jars/junit-platform-console-standalone.jar"
  bench_jar="$jars/benchmarks.jar"
  data_dir="$bundle/data/fashion-mnist"
else
  jars=""
  cp_main="$root/java/target/classes:$root/java/target/lib/*"
  console="$(ls ~/.m2/repository/org/junit/platform/junit-platform-console-standalone/*/junit-platform-console-standalone-*.jar 2>/dev/null | tail -1)"
  cp_test="$root/java/target/test-classes:$root/java/examples/target/test-classes:$root/java/spark/target/test-classes:$cp_main${console:+:$console}"
  bench_jar="$root/benchmarks/target/benchmarks.jar"
  data_dir="/usr/share/datasets/fashion-mnist"
fi

# Gloo + OpenBLAS: the bundle's sysroot unless asked for the installed ones (PyTorch runs with
# the original LD_LIBRARY_PATH: the sysroot has an ibverbs and a libgfortran of its own)
orig_ld="${LD_LIBRARY_PATH:-}"
sysroot=""
if [[ -n "$bundle" && -d "$bundle/sysroot/usr/lib" && "${GPU_CHECK_SYSTEM_LIBS:-0}" != 1 ]]; then
  sysroot="$bundle/sysroot"
  run_libs="$sysroot/usr/lib"
  needed="$(awk '/^needs:/ {for (i = 1; i <= NF; i++) if ($i ~ /^GLIBCXX_/) print $i}' "$bundle/MANIFEST.txt")"
  sys_stdcxx="$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print $NF; exit}')"
  if [[ -n "$needed" && -n "$sys_stdcxx" ]] && ! grep -q -a "$needed" "$sys_stdcxx"; then
    echo "this system's libstdc++ lacks $needed: using the bundle's (sysroot/compat)"
    run_libs="$run_libs:$sysroot/compat"
  fi
  export LD_LIBRARY_PATH="$run_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "Gloo/OpenBLAS: the bundle's sysroot (${sysroot#"$root"/})"
else
  echo "Gloo/OpenBLAS: the installed ones"
fi

# ---- native build ----------------------------------------------------------------------------
section "native build (CMake)"
build="$work/native"
libdir="$work/lib"
cuda_archs="${GPU_CHECK_CUDA_ARCHS:-$(echo "$gpu_names" | head -1 | awk -F', ' '{gsub(/\./, "", $2); print $2}')}"
cmake_args=(-S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "-DDDP4J_OUTPUT_DIR=$libdir")
# The JNI headers javac -h wrote: the bundle's, else this checkout's (CMake's default, java/target/jni-headers)
[[ -n "$bundle" && -d "$bundle/jni-headers" ]] && cmake_args+=("-DDDP4J_JNI_HEADERS_DIR=$bundle/jni-headers")
[[ -n "$nvcc" ]] && cmake_args+=("-DCMAKE_CUDA_COMPILER=$nvcc")
[[ -n "$cuda_archs" ]] && cmake_args+=("-DCMAKE_CUDA_ARCHITECTURES=$cuda_archs")
[[ -n "$nccl_inc" ]] && cmake_args+=("-DNCCL_INCLUDE_DIR=$nccl_inc")
if [[ -n "$sysroot" ]]; then
  cmake_args+=("-DCMAKE_PREFIX_PATH=$sysroot/usr" "-DGloo_DIR=$sysroot/usr/share/cmake/Gloo"
               "-DCBLAS_INCLUDE_DIR=$sysroot/usr/include"
               "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$sysroot/usr/lib"
               "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,-rpath-link,$sysroot/usr/lib")
fi
native_ok=0
if ! command -v cmake >/dev/null 2>&1; then
  record "native build" fail "cmake not found"
elif [[ -z "$jni_home" ]]; then
  record "native build" fail "no JDK with include/jni.h and no bundle runtime: CMake's FindJNI needs one"
else
  rm -rf "$build"
  t0=$SECONDS
  JAVA_HOME="$jni_home" run_boxed cmake-configure 120 cmake "${cmake_args[@]}"
  rc=$?
  if (( rc == 0 )); then
    JAVA_HOME="$jni_home" run_boxed cmake-build 300 cmake --build "$build" --parallel "$cores"
    rc=$?
    log="$logs/cmake-build.log"
  else
    log="$logs/cmake-configure.log"
  fi
  cuda_built="no libddp4j_cuda.so"; [[ -f "$libdir/libddp4j_cuda.so" ]] && cuda_built="libddp4j_cuda.so"
  nccl_check="$(grep -q 'checking NCCL declarations' "$logs/cmake-configure.log" && echo "NCCL decls checked against nccl.h" || echo "NCCL decls not checked (no nccl.h)")"
  if (( rc == 0 )) && [[ -f "$libdir/libddp4j.so" ]]; then
    native_ok=1
    record "native build" pass "$((SECONDS - t0)) s, $cores jobs, arch ${cuda_archs:-default}, $cuda_built, $nccl_check"
  else
    show_tail "$log" 15
    record "native build" fail "$(status_reason "$rc" "$log")"
  fi
fi
if (( native_ok )); then
  export DDP4J_LIBRARY_PATH="$libdir"
fi

# ---- ctest ---------------------------------------------------------------------------------------
ctest_group() {  # group-name label-args...
  local name="$1" log="$logs/$2.log"; shift 2
  if (( ! native_ok )); then
    record "$name" skip "native build failed"; return
  fi
  run_boxed "$(basename "$log" .log)" 120 ctest --test-dir "$build" --output-on-failure --timeout 90 "$@"
  local rc=$? total failed skipped
  total="$(grep -o -E 'tests failed out of [0-9]+' "$log" | grep -o -E '[0-9]+$')"
  failed="$(grep -o -E '[0-9]+ tests failed out of' "$log" | grep -o -E '^[0-9]+')"
  skipped="$(grep -c -E '\(Skipped\)' "$log")"
  if grep -q 'No tests were found' "$log"; then
    record "$name" skip "no tests with this label"
  elif [[ -z "$total" ]]; then
    record "$name" fail "$(status_reason "$rc" "$log")"
  elif (( rc != 0 || failed > 0 )); then
    show_tail "$log" 15
    record "$name" fail "$failed of $total failed: $(grep -E '^\s+[0-9]+ - ' "$log" | grep -v Skipped | awk '{print $3}' | tr '\n' ' ')"
  elif (( skipped == total )); then
    record "$name" skip "all $total skipped (exit 77: no GPU)"
  else
    record "$name" pass "$((total - skipped)) passed${skipped:+, $skipped skipped} of $total"
  fi
}
section "ctest"
ctest_group "ctest cuda (C++ GPU tests)" ctest-cuda -L cuda
ctest_group "ctest cpu" ctest-cpu -LE cuda

# ---- Java -----------------------------------------------------------------------------------------
java_ready() {  # group: records skip and returns 1 when Java cannot run
  if [[ -z "$java" ]]; then
    record "$1" skip "no Java 17+ here and no bundle (scripts/gpu-bundle.sh)"; return 1
  fi
  if (( ! native_ok )) && [[ -n "$bundle" ]]; then
    return 0  # the jar's own libraries (built with the bundle) are used instead
  fi
  return 0
}
natives_note() { (( native_ok )) && echo "" || echo " [natives from the jar, the native build failed]"; }

section "Java tests tagged gpu (JUnit console)"
if java_ready "java gpu tests"; then
  # every test-classes folder of the class path (ddp4j's, ddp4j-examples', ddp4j-spark's)
  test_roots="$(tr ':' '\n' <<< "$cp_test" | grep 'test-classes$' | paste -sd:)"
  run_boxed java-gpu-tests 150 "$java" -Xmx4g -cp "$cp_test" org.junit.platform.console.ConsoleLauncher execute \
    --disable-banner --disable-ansi-colors --details=tree --include-tag gpu --scan-class-path "$test_roots"
  rc=$?
  log="$logs/java-gpu-tests.log"
  count() { grep -o -E "\[ *[0-9]+ tests $1" "$log" | head -1 | grep -o -E '[0-9]+'; }
  found="$(count found)"; ok="$(count successful)"; bad="$(count failed)"; aborted="$(count aborted)"; skipped="$(count skipped)"
  if [[ -z "$found" ]]; then
    show_tail "$log"
    record "java gpu tests" fail "$(status_reason "$rc" "$log")"
  elif (( found == 0 )); then
    record "java gpu tests" skip "no tests tagged gpu"
  elif (( bad > 0 || rc != 0 )); then
    grep -E '✘|\[X\]' "$log" | head -10
    record "java gpu tests" fail "$bad failed, $ok passed, $aborted aborted of $found$(natives_note)"
  elif (( ok == 0 )); then
    record "java gpu tests" skip "all $found aborted/skipped: $(grep -o -E 'Assumption failed: .*' "$log" | head -1 | cut -c1-100)"
  else
    record "java gpu tests" pass "$ok passed, $aborted aborted, $skipped skipped of $found$(natives_note)"
  fi
fi

# A Java GPU job: records pass, skip (no GPU, from the job's own message) or fail.
java_job_result() {  # group rc log figure-if-ok
  local group="$1" rc="$2" log="$3" fig="$4"
  if (( rc == 0 )) && [[ -n "$fig" ]]; then
    record "$group" pass "$fig$(natives_note)"
  elif (( rc == 77 )) || grep -q -E "$no_gpu_pattern" "$log"; then
    record "$group" skip "$(grep -o -E "($no_gpu_pattern).*" "$log" | head -1 | cut -c1-150)"
  else
    show_tail "$log"
    record "$group" fail "$(status_reason "$rc" "$log")"
  fi
}

# ConvNet step time, ddp4j and PyTorch
section "ConvNet training step on the GPU (batch 100 and 1024)"
declare -A j_ms=() t_ms=()
if java_ready "ConvNet step (ddp4j)"; then
  run_boxed step-ddp4j 90 "$java" -Xmx4g -cp "$bench_jar" org.ddp4j.benchmarks.GpuStepTime --batch 100,1024
  rc=$?
  cat "$logs/step-ddp4j.log" | grep -E '^(gpu_step|device)' || true
  while read -r b ms; do j_ms[$b]="$ms"; done < <(sed -n -E 's/^gpu_step batch=([0-9]+) .*median_ms=([0-9.]+).*/\1 \2/p' "$logs/step-ddp4j.log")
  (( ${#j_ms[@]} > 0 )) || java_job_result "ConvNet step (ddp4j)" "$rc" "$logs/step-ddp4j.log" ""
fi
if [[ -z "$torch_info" ]]; then
  record "ConvNet step (PyTorch)" skip "no python3 that imports torch"
else
  run_boxed step-torch 90 env LD_LIBRARY_PATH="$orig_ld" "$python" "$root/scripts/gpu/torch_convnet_step.py" --batch 100,1024
  rc=$?
  grep -E '^(gpu_step|device)' "$logs/step-torch.log" || true
  while read -r b ms; do t_ms[$b]="$ms"; done < <(sed -n -E 's/^gpu_step batch=([0-9]+) .*median_ms=([0-9.]+).*/\1 \2/p' "$logs/step-torch.log")
  if (( ${#t_ms[@]} == 0 )); then
    if (( rc == 77 )); then
      record "ConvNet step (PyTorch)" skip "$(why "$logs/step-torch.log")"
    else
      record "ConvNet step (PyTorch)" fail "$(status_reason "$rc" "$logs/step-torch.log")"
    fi
  fi
fi
for b in 100 1024; do
  j="${j_ms[$b]:-}"; t="${t_ms[$b]:-}"
  if [[ -n "$j" || -n "$t" ]]; then
    ratio="$(awk -v a="$j" -v b="$t" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else print "n/a" }')"
    res=pass; [[ -z "$j" || -z "$t" ]] && res=fail
    record "ConvNet step, batch $b" "$res" "ddp4j ${j:-n/a} ms, PyTorch ${t:-n/a} ms, ddp4j/PyTorch $ratio (median, float32)"
  fi
done

# Kernel throughput on the GPU: the JMH KernelBenchmark (score = GFLOP/s) with -p device=cuda
section "kernels on the GPU (JMH KernelBenchmark, GFLOP/s)"
if java_ready "kernels (JMH, GPU)"; then
  run_boxed kernels-jmh 80 "$java" -Xmx2g -jar "$bench_jar" 'KernelBenchmark\.(gemm512|conv2Forward|conv2Backward|linear1568x10Forward)' \
    -p device=cuda -f 1 -wi 1 -i 2 -w 1 -r 1 -foe true
  rc=$?
  grep -E '^KernelBenchmark\.' "$logs/kernels-jmh.log" || true
  gflops="$(awk '/^KernelBenchmark\./ { sub("KernelBenchmark.", "", $1); printf "%s%s %.0f", sep, $1, $5 * 1; sep = ", " }' "$logs/kernels-jmh.log")"
  java_job_result "kernels (JMH, GPU)" "$rc" "$logs/kernels-jmh.log" "${gflops:+$gflops GFLOP/s (batch 100 shapes)}"
fi

# All-reduce at 1 GPU (NCCL), ddp4j and PyTorch
section "all-reduce through NCCL, 1 GPU"
ar_env=(env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1)
big=$((256 * 1024 * 1024))
j_ar=""; t_ar=""
if java_ready "all-reduce (ddp4j)"; then
  run_boxed allreduce-ddp4j 90 "${ar_env[@]}" MASTER_PORT=29731 "$java" -Xmx2g -cp "$bench_jar" \
    org.ddp4j.benchmarks.GpuAllReduceBench 8 "$big"
  rc=$?
  cat "$logs/allreduce-ddp4j.log" | grep -E '^ *[0-9]+ ' | tail -4 || true
  j_ar="$(awk -v s="$big" '$1 == s {print $4, $5}' "$logs/allreduce-ddp4j.log")"
  [[ -n "$j_ar" ]] || java_job_result "all-reduce (ddp4j)" "$rc" "$logs/allreduce-ddp4j.log" ""
fi
if [[ -z "$torch_info" ]]; then
  record "all-reduce (PyTorch)" skip "no python3 that imports torch"
else
  run_boxed allreduce-torch 90 "${ar_env[@]}" LD_LIBRARY_PATH="$orig_ld" MASTER_PORT=29732 "$python" "$root/scripts/gpu/torch_allreduce.py" 8 "$big"
  rc=$?
  grep -E '^ *[0-9]+ ' "$logs/allreduce-torch.log" | tail -4 || true
  t_ar="$(awk -v s="$big" '$1 == s {print $4, $5}' "$logs/allreduce-torch.log")"
  if [[ -z "$t_ar" ]]; then
    if (( rc == 77 )); then record "all-reduce (PyTorch)" skip "$(why "$logs/allreduce-torch.log")"
    else record "all-reduce (PyTorch)" fail "$(status_reason "$rc" "$logs/allreduce-torch.log")"; fi
  fi
fi
if [[ -n "$j_ar" || -n "$t_ar" ]]; then
  read -r j_alg j_bus <<< "${j_ar:-n/a n/a}"
  read -r t_alg t_bus <<< "${t_ar:-n/a n/a}"
  res=pass; [[ -z "$j_ar" || -z "$t_ar" ]] && res=fail
  record "all-reduce 256 MiB, 1 GPU (NCCL)" "$res" \
    "busbw ddp4j $j_bus / PyTorch $t_bus GB/s (0 by definition at 1 rank: x2(n-1)/n); algbw ddp4j $j_alg / PyTorch $t_alg GB/s"
fi

# Demos on the GPU, through the launcher (one process per GPU, at least one)
section "demos on --device cuda"
nproc_gpu=$(( gpu_count > 0 ? gpu_count : 1 ))
if java_ready "LinearDemo cuda"; then
  run_boxed linear-demo 60 "$java" -cp "$cp_main" org.ddp4j.launch.Launcher --nproc-per-node "$nproc_gpu" \
    --master-port 29741 org.ddp4j.examples.LinearDemo --device cuda
  rc=$?
  grep -E 'distributed init|summary rank' "$logs/linear-demo.log" | head -4
  us="$(grep -o -E 'us_per_step=[0-9.]+' "$logs/linear-demo.log" | head -1 | cut -d= -f2)"
  java_job_result "LinearDemo cuda ($nproc_gpu proc)" "$rc" "$logs/linear-demo.log" "${us:+$us us/step}"
fi
if java_ready "ConvNetDemo cuda"; then
  run_boxed convnet-demo 120 "$java" -cp "$cp_main" org.ddp4j.launch.Launcher --nproc-per-node "$nproc_gpu" \
    --master-port 29742 org.ddp4j.examples.ConvNetDemo --device cuda --epochs 1 --data "$data_dir"
  rc=$?
  grep -E '(Epoch \[1/1\], Step \[600|Training complete|summary rank|summary test|Test accuracy)' "$logs/convnet-demo.log" | head -6
  acc="$(grep -o -E 'test_accuracy=[0-9.]+' "$logs/convnet-demo.log" | cut -d= -f2)"
  ips="$(grep -o -E 'images_per_s=[0-9.]+' "$logs/convnet-demo.log" | head -1 | cut -d= -f2)"
  if (( rc == 0 )) && [[ -n "$acc" ]] && awk -v a="$acc" 'BEGIN { exit !(a < 0.80) }'; then
    record "ConvNetDemo cuda (1 epoch)" fail "test accuracy $acc < 0.80 (CPU gets ~0.87)"
  else
    java_job_result "ConvNetDemo cuda (1 epoch)" "$rc" "$logs/convnet-demo.log" \
      "${acc:+test accuracy $acc, $ips images/s}"
  fi
fi

# ---- the table, last ----------------------------------------------------------------------------
# The device tool brings back what lands in $OUT: the logs (the table is also written there)
if [[ -n "${OUT:-}" && -d "${OUT:-}" ]]; then
  mkdir -p "$OUT/gpu-check-logs"
  cp "$logs"/*.log "$OUT/gpu-check-logs/" 2>/dev/null
  cp "$build/Testing/Temporary/LastTest.log" "$OUT/gpu-check-logs/ctest-LastTest.log" 2>/dev/null
fi
section "summary"
gpu_line="$(echo "$gpu_names" | head -1)"
echo "machine: ${gpu_line:-no GPU}, $cores cores; nvcc ${nvcc:+$("$nvcc" --version | grep -o 'release [0-9.]*' | cut -d' ' -f2)}; torch ${torch_info%% *}; NCCL ${nccl_version:-none}; java $([[ -n "$java" ]] && "$java" -version 2>&1 | head -1 | grep -o '"[^"]*"' | tr -d '"')$([[ "$java" == "$bundle/jre/bin/java" && -n "$bundle" ]] && echo ' (bundle)'); $((SECONDS - start)) s in all; logs: ${logs#"$root"/}"
echo
echo "| group | result | figure |"
echo "|---|---|---|"
failed=0
for i in "${!groups[@]}"; do
  echo "| ${groups[$i]} | ${results[$i]} | ${figures[$i]} |"
  [[ "${results[$i]}" == fail ]] && failed=$((failed + 1))
done | tee "$logs/summary.md"
failed="$(grep -c '^| [^|]* | fail |' "$logs/summary.md")"
[[ -n "${OUT:-}" && -d "${OUT:-}" ]] && cp "$logs/summary.md" "$OUT/gpu-check-logs/" 2>/dev/null
exit $(( failed > 0 ? 1 : 0 ))
