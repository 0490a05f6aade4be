#!/usr/bin/env bash
# The README's main command: sets up, builds, packs real text (the license
# texts Debian's base-files installs in /usr/share/common-licenses) with
# pp-data's byte-level tokenizer, then trains the bundled byte-level GPT
# (test/models/byte-gpt.traced.pt, made by test/models/make_byte_gpt.py:
# token and position embeddings, 2 pre-LN blocks with causal attention and
# tanh GELU, an LM head; 257 tokens, sequences of 32) on a pp=2 x dp=2
# mesh of four CPU rank processes with the 1F1B schedule, evaluating on a
# held-out license before training, every 20 steps and after the last.
# Then it trains the same global batch on one rank, which gives the same
# losses within fp32 rounding.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PP_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"
"$root/scripts/build.sh"

data="$build/demo-data"
licenses=/usr/share/common-licenses
mkdir -p "$data"
"$build/bin/pp-data" pack "$licenses/GPL-3" "$licenses/GPL-2" \
  "$licenses/LGPL-2.1" "$licenses/Apache-2.0" -o "$data/train.tok"
"$build/bin/pp-data" pack "$licenses/MPL-2.0" -o "$data/eval.tok"

run() {
  "$build/bin/pp-run" "$root/test/models/byte-gpt.traced.pt" \
    --cache-dir "$build/pp-cache" --input-shape tokens=?x32xi64 \
    --loss cross_entropy:output_0 --microbatch-size 8 --steps 60 \
    --data "$data/train.tok" --seq-len 32 --eval-data "$data/eval.tok" \
    --eval-every 20 --eval-batches 4 --seed 0 --optimizer adamw --lr 0.003 \
    --clip-grad-norm 1.0 "$@"
}

echo "== byte-level GPT on license texts: pp=2 x dp=2, 1F1B, global batch 32 =="
run --stages 2 --dp 2 --microbatches 2 --schedule 1f1b
echo "== the same global batch on one rank (pp=1 x dp=1) =="
run --stages 1 --microbatches 4 | grep -E "^(eval|step 60 )"
