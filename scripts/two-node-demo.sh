#!/usr/bin/env bash
# The two-node linear demo on one machine: two launcher processes play node 0 and node 1, each
# starting 2 workers, meeting at 127.0.0.1:$MASTER_PORT. On two real machines, run the same
# ddp4j-run line on each with --node-rank 0 / 1 and --master-addr set to node 0's address, and the
# same store secret on both (a shared home directory, the same ~/.ddp4j/store-secret, or the same
# DDP4J_STORE_SECRET).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port="${MASTER_PORT:-29511}"
run_node() {
  "$root/scripts/ddp4j-run" --nnodes 2 --node-rank "$1" --nproc-per-node 2 \
    --master-addr 127.0.0.1 --master-port "$port" org.ddp4j.examples.LinearDemo "${@:2}"
}
run_node 0 "$@" &
node0=$!
run_node 1 "$@" &
node1=$!
rc=0
wait "$node0" || rc=$?
wait "$node1" || rc=$?
exit "$rc"
