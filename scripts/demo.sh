#!/usr/bin/env bash
# The README's main command: sets up, builds, then trains the bundled
# GPT-style model (test/models/gpt.traced.pt, made by
# test/models/make_transformers.py: token and position embeddings, 2 pre-LN
# blocks with causal attention and tanh GELU, an LM head) as a 4-stage
# pipeline on four CPU rank processes with the 1F1B schedule, on language
# model batches (labels are the next tokens' ids, padded sequences counted
# token by token), and repeats it unpipelined to show that both end with
# the same parameters.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"
"$root/scripts/build.sh"

run() {
  "$build/bin/pp-run" "$root/test/models/gpt.traced.pt" --cache-dir "$build/pp-cache" \
    --input-shape tokens=?x8xi64 --loss cross_entropy:output_0 \
    --microbatch-size 4 --microbatches 8 --steps 10 --data synthetic --seed 0 \
    --optimizer adamw --lr 0.003 --clip-grad-norm 1.0 "$@"
}

echo "== GPT, 4 stages, 4 rank processes, 1F1B =="
run --stages 4 --schedule 1f1b
echo "== GPT, 1 stage (unpipelined) =="
run --stages 1 --schedule gpipe | tail -n 1
