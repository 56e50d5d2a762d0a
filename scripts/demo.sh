#!/usr/bin/env bash
# The main job: installs and builds what is missing (scripts/setup.sh), then runs
#  1. the two-node linear-model demo: two launchers (node 0 and node 1, 2 processes each, master
#     127.0.0.1), so 4 ranks;
#  2. the two-conv network on Fashion-MNIST with 2 ranks for 1 epoch, printing test accuracy;
#  3. a small GPT-2 on Debian's fortunes (GPT-2's BPE, 2 ranks, 60 steps), printing the validation
#     loss and a sample.
# Extra arguments go to the ConvNet demo (e.g. --limit 2000 for a quick run).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"

echo "== two-node linear demo (2 nodes x 2 processes) =="
"$root/scripts/two-node-demo.sh"

echo "== two-conv network on Fashion-MNIST (2 ranks, 1 epoch) =="
"$root/scripts/ddp4j-run" --nproc-per-node 2 --master-port "${CONVNET_PORT:-29512}" \
  org.ddp4j.examples.ConvNetDemo --epochs 1 "$@"

echo "== a small GPT-2 on Debian's fortunes (2 ranks, 60 steps) =="
gpt_data="$root/java/target/fortunes-gpt2"
if [[ ! -f "$gpt_data/meta.json" ]]; then
  java -cp "$root/java/target/classes:$root/java/target/lib/*" org.ddp4j.text.PrepareText --out "$gpt_data"
fi
"$root/scripts/ddp4j-run" --nproc-per-node 2 --master-port "${GPT_PORT:-29513}" \
  org.ddp4j.examples.GPTDemo --data "$gpt_data" --max-iters 60 --warmup-iters 10 --eval-interval 30 \
  --log-interval 10 --sample-tokens 60
