#!/usr/bin/env bash
# Old build against this checkout, side by side: the linear demo (2000 epochs, 2 ranks) on one node
# (2 ranks) and as two nodes on loopback (1 rank each, keep-alive on), alternating old and new so
# that drifts of the machine hit both. Prints one line per run pair and the medians.
# usage: scripts/ab-linear.sh OLD_CLASSPATH [PAIRS]
#   OLD_CLASSPATH: the other build's class path, e.g. "/tmp/old/java/target/classes:/tmp/old/java/target/lib/*"
#   (make one with: git worktree add /tmp/old REV && (cd /tmp/old && mvn -q -DskipTests package))
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
old="${1:?usage: scripts/ab-linear.sh OLD_CLASSPATH [PAIRS]}"
pairs="${2:-10}"
new="$root/java/target/classes:$root/java/target/lib/*"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
port=29800
run() {  # classpath nodes -> mean of the ranks' us_per_step
  local cp="$1" nodes="$2" p=$((port++))
  if [[ "$nodes" == 1 ]]; then
    timeout 300 java -cp "$cp" org.ddp4j.launch.Launcher --nproc-per-node 2 --master-port "$p" \
      org.ddp4j.examples.LinearDemo --epochs 2000 > "$out/a.txt" 2>&1 || true
    : > "$out/b.txt"
  else
    timeout 300 java -cp "$cp" org.ddp4j.launch.Launcher --nnodes 2 --node-rank 1 --nproc-per-node 1 \
      --master-addr 127.0.0.1 --master-port "$p" org.ddp4j.examples.LinearDemo --epochs 2000 > "$out/b.txt" 2>&1 &
    timeout 300 java -cp "$cp" org.ddp4j.launch.Launcher --nnodes 2 --node-rank 0 --nproc-per-node 1 \
      --master-addr 127.0.0.1 --master-port "$p" org.ddp4j.examples.LinearDemo --epochs 2000 > "$out/a.txt" 2>&1 || true
    wait || true
  fi
  cat "$out/a.txt" "$out/b.txt" | grep -o 'us_per_step=[0-9.]*' | cut -d= -f2 \
    | awk '{s+=$1; n++} END {if (n == 2) printf "%.1f", s / n; else print "fail"}'
}
for i in $(seq "$pairs"); do
  for nodes in 1 2; do
    echo "pair $i nodes=$nodes old=$(run "$old" $nodes) new=$(run "$new" $nodes)"
  done
done | tee "$out/pairs.txt"
median() { sort -n | awk '{v[NR]=$1} END {if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR+1)/2]; else printf "%.1f", (v[NR/2]+v[NR/2+1])/2}'; }
for nodes in 1 2; do
  rows="$(grep "nodes=$nodes " "$out/pairs.txt" | grep -v fail || true)"
  echo "summary nodes=$nodes pairs=$(grep -c . <<< "$rows") old_median_us=$(grep -o 'old=[0-9.]*' <<< "$rows" | cut -d= -f2 | median) new_median_us=$(grep -o 'new=[0-9.]*' <<< "$rows" | cut -d= -f2 | median)"
done
