#!/usr/bin/env bash
# Starts N local ranks of a PyTorch script with torch.distributed's env:// variables, as torchrun
# --nproc-per-node N does (Debian's torch 1.13 ships a torchrun that does not start): MASTER_ADDR
# 127.0.0.1, MASTER_PORT, WORLD_SIZE=N, and RANK and LOCAL_RANK per process. With N > 1 each rank
# gets OMP_NUM_THREADS=1 unless it is set (torchrun's default). When one rank fails, the others are
# stopped and run.sh exits with the failed rank's status.
#
# usage: benchmarks/pytorch/run.sh N SCRIPT.py [ARGS...]
# environment:
#   TORCH_PYTHON=PATH   the interpreter (default: what scripts/torch-python.sh picks)
#   MASTER_PORT=P       the rendezvous port (default 29533)
# e.g.  benchmarks/pytorch/run.sh 2 benchmarks/pytorch/allreduce_bench.py --max-bytes 1M
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
esac
(($# >= 2)) || { usage >&2; exit 2; }
n="$1"; shift
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: N must be a positive number, got '$n'" >&2; exit 2; }
python="$("$root/scripts/torch-python.sh")"
((n > 1)) && export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}" MASTER_PORT="${MASTER_PORT:-29533}" WORLD_SIZE="$n"
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n "$python" "$@" &
  pids+=($!)
done
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap 'stop; exit 130' INT TERM
rc=0
for ((left = n; left > 0; left--)); do
  status=0
  wait -n || status=$?
  if ((status != 0 && rc == 0)); then
    rc=$status
    echo "run.sh: a rank exited with status $status; stopping the others" >&2
    stop
  fi
done
exit $rc
