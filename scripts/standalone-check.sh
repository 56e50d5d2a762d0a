#!/usr/bin/env bash
# Checks that the repository stands alone: a copy of its committed tree (git archive HEAD; a tree
# without .git: its files less build outputs) in an
# empty temporary folder, with nothing next to it, must
#   1. mention no folder outside it: no file names the sibling folder `..`/shared (or its anchors);
#   2. answer -h/--help in every script (scripts/*.sh, scripts/ddp4j-run, and the PyTorch scripts
#      scripts/*.py, scripts/gpu/*.py, benchmarks/pytorch/*.py on the interpreter that
#      scripts/torch-python.sh picks, skipped when none has torch) with exit status 0, printing
#      something and writing nothing into the copy (so nothing was built);
#   3. with --smoke: build the copy (mvn -o -DskipTests package; ccache when installed) and run every
#      benchmark script's smoke mode there with SKIP_SETUP=1, each bounded by SMOKE_TIMEOUT seconds
#      (default 600), printing each one's status and seconds. hooks-bench.sh runs only where
#      scripts/cluster.sh check passes (root, network namespaces); gpt-bench.sh and gpt-curves.sh
#      only where scripts/torch-python.sh finds a torch >= 2 with numpy.
# Without --smoke it builds nothing and takes well under a minute (it may join the test suite).
# Prints one line per check (ok / FAIL / skip) and a last line `standalone-check: N failed`;
# exits 1 when any failed.
#
# usage: scripts/standalone-check.sh [--smoke] [--prebuilt DIR] [--keep]
#   --smoke          also build the copy and run the benchmark smoke runs (many minutes)
#   --prebuilt DIR   with --smoke: copy DIR/java/target and DIR/benchmarks/target (a tree built from
#                    the same sources) into the copy instead of building it
#   --keep           leave the copy (its path is printed) instead of deleting it
# environment: TORCH_PYTHON (as scripts/torch-python.sh), SMOKE_TIMEOUT=S, TMPDIR (where the copy goes)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
smoke=0
prebuilt=""
keep=0
while (($#)); do
  case "$1" in
    --smoke) smoke=1; shift ;;
    --prebuilt) prebuilt="${2:?--prebuilt needs a folder}"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "standalone-check.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
smoke_timeout="${SMOKE_TIMEOUT:-600}"
failed=0
ok() { printf 'ok    %s\n' "$*"; }
fail() { printf 'FAIL  %s\n' "$*"; failed=$((failed + 1)); }
skip() { printf 'skip  %s\n' "$*"; }

# ---- the copy --------------------------------------------------------------------------------------
parent="$(mktemp -d "${TMPDIR:-/tmp}/ddp4j-alone.XXXXXX")"
copy="$parent/ddp4j"
mkdir "$copy"
if ((keep)); then echo "standalone-check: the copy is $copy (kept)"; else trap 'rm -rf "$parent"' EXIT; fi
if [[ "$(git -C "$root" rev-parse --show-toplevel 2>/dev/null)" == "$root" ]]; then
  git -C "$root" archive HEAD | tar -x -C "$copy" || { echo "standalone-check: git archive HEAD failed" >&2; exit 1; }
  what="$(git -C "$root" rev-parse --short HEAD)"
else  # a tree without its git folder (e.g. itself an archive): its files, less build outputs
  (cd "$root" && tar --exclude=./java/target --exclude=./benchmarks/target --exclude=./build --exclude=./.venv-torch -cf - .) \
    | tar -x -C "$copy" || { echo "standalone-check: copying $root failed" >&2; exit 1; }
  what="$root (no git)"
fi
echo "standalone-check: $what copied alone into $copy ($(find "$copy" -type f | wc -l) files)"

# ---- 1. no folder outside the repository -------------------------------------------------------------
# (the patterns are assembled so that this file does not match them itself)
outside=shared
mentions="$(cd "$copy" && grep -rIn -e "\.\./$outside" -e "$outside/anchors" . | sed 's|^\./||')"
if [[ -z "$mentions" ]]; then
  ok "no file mentions ../$outside or $outside/anchors"
else
  fail "$(wc -l <<< "$mentions") line(s) mention ../$outside or $outside/anchors:"
  sed 's/^/        /' <<< "$mentions" | cut -c1-200
fi

# ---- 2. every script answers --help ------------------------------------------------------------------
before="$(cd "$copy" && find . | sort)"
help_check() {  # label command...
  local label="$1" out rc; shift
  out="$(cd "$copy" && timeout 60 "$@" --help 2>&1 </dev/null)"; rc=$?
  if ((rc == 0)) && [[ -n "$out" ]]; then ok "$label --help"
  else fail "$label --help: exit $rc$([[ -z "$out" ]] && echo ', printed nothing')"; sed 's/^/        /' <<< "$out" | tail -5; fi
}
for f in "$copy"/scripts/*.sh "$copy"/scripts/ddp4j-run; do
  help_check "scripts/${f##*/}" bash "$f"
done
torch_py="$("$copy/scripts/torch-python.sh" 2>/dev/null)"
if [[ -n "$torch_py" ]]; then
  for f in "$copy"/scripts/*.py "$copy"/scripts/gpu/*.py "$copy"/benchmarks/pytorch/*.py; do
    help_check "${f#"$copy"/}" "$torch_py" "$f"
  done
else
  skip "the PyTorch scripts' --help: no Python with torch (scripts/torch-python.sh --help)"
fi
after="$(cd "$copy" && find . | sort)"
if [[ "$before" == "$after" ]]; then
  ok "--help wrote nothing into the copy (nothing was built)"
else
  fail "--help runs left files in the copy:"; diff <(echo "$before") <(echo "$after") | grep '^>' | head -10 | sed 's/^/        /'
fi

# ---- 3. smoke runs ---------------------------------------------------------------------------------
if ((smoke)); then
  if [[ -n "$prebuilt" ]]; then
    for d in java/target benchmarks/target; do
      [[ -d "$prebuilt/$d" ]] || { fail "--prebuilt: no $prebuilt/$d"; continue; }
      mkdir -p "$copy/${d%/target}" && cp -a "$prebuilt/$d" "$copy/$d"
    done
    ok "build taken from $prebuilt"
  else
    start=$SECONDS
    command -v ccache >/dev/null && export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="${TMPDIR:-/tmp}" CCACHE_NOHASHDIR=1
    if (cd "$copy" && timeout 1500 mvn -q -B -o -DskipTests package > "$parent/build.log" 2>&1); then
      ok "build (mvn -o -DskipTests package, $((SECONDS - start)) s)"
    else
      fail "build (mvn -o -DskipTests package): see the end of its log:"; tail -20 "$parent/build.log" | sed 's/^/        /'
    fi
  fi
  export SKIP_SETUP=1
  mkdir -p "$parent/smoke"
  smoke_run() {  # name command... (run in the copy, bounded, timed)
    local name="$1" start=$SECONDS rc; shift
    (cd "$copy" && timeout "$smoke_timeout" "$@") > "$parent/smoke/$name.log" 2>&1 </dev/null; rc=$?
    if ((rc == 0)); then ok "smoke $name ($((SECONDS - start)) s)"
    else fail "smoke $name: exit $rc after $((SECONDS - start)) s; the end of its output:"; tail -15 "$parent/smoke/$name.log" | sed 's/^/        /'; fi
  }
  port=$((29900 + RANDOM % 50))
  smoke_run pytorch-linear env STEPS=20 MASTER_PORT=$((port++)) benchmarks/pytorch/run.sh 2 benchmarks/pytorch/linear_demo.py
  smoke_run pytorch-allreduce env MASTER_PORT=$((port++)) benchmarks/pytorch/run.sh 2 benchmarks/pytorch/allreduce_bench.py --max-bytes 128K
  smoke_run pytorch-convnet env MASTER_PORT=$((port++)) benchmarks/pytorch/run.sh 2 benchmarks/pytorch/convnet_mnist.py --max-steps 5
  smoke_run pytorch-resnet env MASTER_PORT=$((port++)) benchmarks/pytorch/run.sh 2 benchmarks/pytorch/resnet_synthetic.py \
    --model resnet18 --image-size 32 --batch-size 2 --warmup-steps 1 --steps 1
  smoke_run bench scripts/bench.sh --smoke
  smoke_run accuracy-seeds scripts/accuracy-seeds.sh --smoke
  smoke_run allreduce-bench scripts/allreduce-bench.sh --smoke
  smoke_run collectives-bench scripts/collectives-bench.sh --smoke
  smoke_run resnet-bench scripts/resnet-bench.sh --smoke
  smoke_run memory-bench scripts/memory-bench.sh --smoke
  if "$copy/scripts/torch-python.sh" --modules numpy --min-version 2.0 >/dev/null 2>&1; then
    smoke_run gpt-bench scripts/gpt-bench.sh --smoke
    smoke_run gpt-curves scripts/gpt-curves.sh --smoke
  else
    skip "smoke gpt-bench, gpt-curves: their PyTorch side needs torch >= 2 (TORCH_PYTHON, or scripts/torch-anchor.sh --venv .venv-torch)"
  fi
  smoke_run ddp-overhead scripts/ddp-overhead.sh --smoke
  smoke_run ab-linear scripts/ab-linear.sh "$copy/java/target/classes:$copy/java/target/lib/*" 1
  if (cd "$copy" && scripts/cluster.sh check) >/dev/null 2>&1; then
    smoke_run hooks-bench scripts/hooks-bench.sh --smoke
  else
    skip "smoke hooks-bench: scripts/cluster.sh check fails here (needs root and network namespaces)"
  fi
  echo "standalone-check: smoke logs in $parent/smoke$( ((keep)) || echo ' (deleted on exit: --keep keeps them)')"
fi
echo "standalone-check: $failed failed"
((failed == 0))
