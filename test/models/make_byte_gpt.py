#!/usr/bin/python3
"""Writes byte-gpt.traced.pt, the GPT the README trains on real text.

make_transformers.py's GPT (token and position embeddings, 2 pre-LN blocks
with causal attention and tanh GELU, an untied LM head) at the size of
`pp-data pack`'s byte-level tokenizer: a vocabulary of 257 tokens (the 256
bytes and end-of-document), sequences of 32 tokens, d_model 64, 4 heads.
It takes `tokens` (int64 [batch, 32]) and returns the logits
(float32 [batch, 32, 257]).

    /usr/bin/python3 test/models/make_byte_gpt.py test/models

`--vocab V` writes byte-gpt-vV.traced.pt instead, the same GPT with a
vocabulary of V (for a tensor-parallel degree that does not divide 257,
e.g. 258 for tp 2; scripts/bench/parallel.sh uses it).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_transformers as transformers  # noqa: E402

VOCAB, D_MODEL, SEQ = 257, 64, 32


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output_dir", nargs="?", default=".")
    parser.add_argument("--vocab", type=int, default=VOCAB)
    args = parser.parse_args()
    torch.set_num_threads(1)
    # The classes read the sizes from their module when built.
    transformers.VOCAB, transformers.D_MODEL = args.vocab, D_MODEL
    transformers.SEQ = SEQ
    torch.manual_seed(20261130)
    model = transformers.Gpt().eval()
    tokens = torch.randint(0, args.vocab, (2, SEQ), dtype=torch.long)
    traced = torch.jit.trace(model, (tokens,), check_trace=False)
    name = "byte-gpt" if args.vocab == VOCAB else f"byte-gpt-v{args.vocab}"
    torch.jit.save(traced, os.path.join(args.output_dir, f"{name}.traced.pt"))


if __name__ == "__main__":
    main()
