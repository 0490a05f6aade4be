#!/usr/bin/python3
"""Writes the tied-GPT fixtures of pp's tied-weight tests.

make_transformers.py's GPT with its LM head tied to the token embedding
(`lm_head.weight` IS `tok.weight`, as GPT-2 does), exported with a fixed
seed by torch.onnx.export (opset 17, symbolic batch "batch") twice:

  tied-gpt.onnx         do_constant_folding=False: one initializer, read by
                        the embedding's Gather and by the head's MatMul
                        through a Transpose, so the tie survives;
  tied-gpt.folded.onnx  do_constant_folding=True: the exporter folds the
                        head's Transpose into a second initializer holding
                        the table's transpose, which unties the weights
                        (pp --tie-equal-weights ties them again).

    /usr/bin/python3 test/models/make_tied_gpt.py test/models
"""
import argparse
import os

import torch

from make_transformers import BATCH, SEQ, VOCAB, Gpt


class TiedGpt(Gpt):
    def __init__(self):
        super().__init__()
        self.lm_head.weight = self.tok.weight


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output_dir", nargs="?", default=".")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(20261207)
    model = TiedGpt().eval()
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.long)
    for suffix, fold in ((".onnx", False), (".folded.onnx", True)):
        torch.onnx.export(model, (tokens,),
                          os.path.join(args.output_dir, "tied-gpt" + suffix),
                          input_names=["tokens"], output_names=["logits"],
                          dynamic_axes={"tokens": {0: "batch"},
                                        "logits": {0: "batch"}},
                          opset_version=17, do_constant_folding=fold)


if __name__ == "__main__":
    main()
