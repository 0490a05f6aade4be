#!/usr/bin/env python3
"""Writes the tiny Hugging Face fixtures of issue 21 and their references.

Nine transformers families, each built from a config (no hub download) with
hidden 32, 2 layers, 4 heads, intermediate 64, vocabulary 272 (pp-data's
byte-level tokens 0..256 fit), 64 positions, sequence 16:

  gpt2       GPT2LMHeadModel, lm_head tied to transformer.wte
  llama      LlamaForCausalLM, 4 key/value heads
  llama-gqa  LlamaForCausalLM, 2 key/value heads (grouped-query attention)
  qwen2      Qwen2ForCausalLM (q/k/v biases), 2 key/value heads
  qwen3      Qwen3ForCausalLM (q/k norms), lm_head tied to embed_tokens
  mistral    MistralForCausalLM, sliding_window 8 < sequence 16
  phi3       Phi3ForCausalLM (fused qkv_proj and gate_up_proj)
  gpt-neox   GPTNeoXForCausalLM (partial rotary, parallel residual)
  bert       BertForMaskedLM, cls.predictions.decoder tied to the word
             embeddings

Every model uses attn_implementation="eager": it is the implementation
issue 21's probe exported (its softmax(x, dim, dtype=float32) is what the
TorchScript frontend must read), and the one every exporter traces the same
way (sdpa lowers differently per exporter and version). Dropout is 0. After
construction every norm weight and bias and every other bias is redrawn
(normal, not 1 and 0) and the weights use initializer_range 0.1, so that a
frontend that drops a bias or a norm scale gets visibly wrong logits.

The model's forward is replaced (a subclass, so the parameters keep the
module names Hugging Face gives them) by one that takes `input_ids` int64
[batch, 16] and returns `logits` float32 [batch, 16, 272]; the attention
mask is torch.ones_like(input_ids) inside it, so the graph has one input
(the TorchScript-based ONNX exporter fails on HF causal LMs without one).

Per family FAMILY it writes into the output folder:

  FAMILY.dynamo.onnx               torch.onnx.export(dynamo=True, optimize=True)
  FAMILY.dynamo-unoptimized.onnx   torch.onnx.export(dynamo=True, optimize=False)
  FAMILY.torchscript-exporter.onnx torch.onnx.export(dynamo=False, opset 17)
  FAMILY.traced.pt                 torch.jit.trace(...).save
  FAMILY.pt2                       torch.export.save(torch.export.export(...))
  FAMILY.input_0.pb                token windows 0 and 1 of tokens.bin, [2, 16]
  FAMILY.output_0.pb               PyTorch's fp32 logits for them
  FAMILY.reference.json            see below

The dynamo exports drop only the per-node "pkg.torch.onnx.stack_trace"
metadata (source lines and paths of the machine that ran the export, half
of each file); every other metadata entry stays as the exporter wrote it.
All exports have a symbolic batch (dim_param "batch" in ONNX, `?` for
--input-shape) and a static sequence of 16; the ONNX files hold every
initializer inline (no external data).

tokens.bin is the training data: the first 1041 bytes of Debian's
Apache-2.0 license text as flat little-endian uint16 tokens (nanoGPT's
train.bin format: pp-run --data tokens.bin --token-width 2 --seq-len 16),
65 windows of 16.

FAMILY.reference.json holds:
  - "parameters": every parameter and buffer (named_parameters and
    named_buffers, ties included once) with its module name, shape, dtype,
    kind ("parameter" or "buffer"), and "tied": the groups of names that
    share one storage (the first name is the one named_parameters keeps);
  - "infer": the logits' shape, a checksum and the max |fp32 - fp64|
    difference of the same model run in float64 (how far fp32 rounding
    alone moves them);
  - "train": pp-run's semantics for
        pp-run MODEL --loss cross_entropy:logits --optimizer adamw
          --microbatch-size 4 --steps 5 --data tokens.bin --token-width 2
          --seq-len 16 (seed 0, lr 0.01, betas 0.9/0.999, eps 1e-8, weight
          decay 0, no clipping: pp-run's defaults)
    step t (0-based) reads the windows pp's TrainingSampler(seed 0, 65
    windows) gives global positions 4t..4t+3 (test/E2E/unseen-lm/
    pp_sampler.py); window n is tokens [16n, 16n + 17): the first 16 the
    input, the last 16 the labels; the loss is the mean cross-entropy over
    the step's tokens; grad_norm is the global 2-norm of the gradients
    before the update (a tied parameter counted once). The losses and
    grad norms of steps 1..5 are PyTorch's (fp32, torch.optim.AdamW).

Make the venv and run it (torch 2.x and transformers from PyPI; CI never
runs this script, it only reads what it wrote):

    python3 -m venv /work/fixture-venv
    /work/fixture-venv/bin/pip install torch transformers onnx onnxscript \\
        numpy safetensors onnxruntime

(onnxruntime only checks the ONNX files: each written file is run on the
input and must reproduce the logits within 1e-4.)
    /work/fixture-venv/bin/python test/models/hf/make_hf_models.py \\
        test/models/hf [FAMILY...]
"""
import argparse
import copy
import hashlib
import json
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F
import transformers
import onnx
from onnx import numpy_helper

VOCAB, HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS = 272, 32, 2, 4, 64, 64
SEQ, BATCH = 16, 2
TRAIN_STEPS, TRAIN_BATCH, TRAIN_SEED, TRAIN_LR = 5, 4, 0, 0.01
TOKEN_COUNT = 65 * SEQ + 1
STACK_TRACE = "pkg.torch.onnx.stack_trace"
LICENSE = "/usr/share/common-licenses/Apache-2.0"

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "E2E", "unseen-lm"))
import pp_sampler  # noqa: E402

COMMON = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
              num_attention_heads=HEADS, intermediate_size=INTERMEDIATE,
              max_position_embeddings=POSITIONS, initializer_range=0.1,
              pad_token_id=None, bos_token_id=0, eos_token_id=0)
DECODER = dict(COMMON, attention_dropout=0.0, tie_word_embeddings=False)

# family: (config class, model class, config arguments, seed)
FAMILIES = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel",
             dict(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS,
                  n_head=HEADS, n_inner=INTERMEDIATE, n_positions=POSITIONS,
                  resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                  initializer_range=0.1, tie_word_embeddings=True,
                  bos_token_id=0, eos_token_id=0), 1),
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(DECODER, num_key_value_heads=HEADS), 2),
    "llama-gqa": ("LlamaConfig", "LlamaForCausalLM",
                  dict(DECODER, num_key_value_heads=2), 3),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM",
              dict(DECODER, num_key_value_heads=2), 4),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM",
              dict(DECODER, num_key_value_heads=2, head_dim=HIDDEN // HEADS,
                   tie_word_embeddings=True), 5),
    "mistral": ("MistralConfig", "MistralForCausalLM",
                dict(DECODER, num_key_value_heads=2, sliding_window=8), 6),
    "phi3": ("Phi3Config", "Phi3ForCausalLM",
             dict(DECODER, num_key_value_heads=HEADS, resid_pdrop=0.0,
                  embd_pdrop=0.0, original_max_position_embeddings=POSITIONS),
             7),
    "gpt-neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM",
                 dict(DECODER, hidden_dropout=0.0, classifier_dropout=0.0),
                 8),
    "bert": ("BertConfig", "BertForMaskedLM",
             dict(COMMON, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0, tie_word_embeddings=True,
                  pad_token_id=0), 9),
}
FORMATS = ["dynamo", "dynamo-unoptimized", "torchscript-exporter", "traced",
           "pt2"]


def logits_forward(base):
    """A forward taking only input_ids and returning only the logits."""
    causal = base.__name__ != "BertForMaskedLM"

    def forward(self, input_ids):
        mask = torch.ones_like(input_ids)
        extra = {"use_cache": False} if causal else {}
        return base.forward(self, input_ids=input_ids, attention_mask=mask,
                            return_dict=True, **extra).logits

    return forward


def build(family):
    config_name, model_name, arguments, seed = FAMILIES[family]
    config = getattr(transformers, config_name)(**arguments)
    config._attn_implementation = "eager"
    base = getattr(transformers, model_name)
    cls = type(model_name + "Logits", (base,),
               {"forward": logits_forward(base)})
    torch.manual_seed(seed)
    model = cls(config)
    model.eval()
    # Norm weights and biases and every bias: random, not 1 and 0.
    generator = torch.Generator().manual_seed(100 + seed)
    with torch.no_grad():
        for module_name, module in model.named_modules():
            is_norm = "norm" in type(module).__name__.lower()
            for name, p in module.named_parameters(recurse=False):
                noise = torch.randn(p.shape, generator=generator)
                if is_norm and name == "weight":
                    p.copy_(1.0 + 0.2 * noise)
                elif name == "bias" or name.endswith("_bias") or is_norm:
                    p.copy_(0.1 * noise)
    return model


def tokens(out_dir):
    path = os.path.join(out_dir, "tokens.bin")
    if not os.path.exists(path):
        with open(LICENSE, "rb") as f:
            data = np.frombuffer(f.read(TOKEN_COUNT), np.uint8)
        assert data.size == TOKEN_COUNT, LICENSE + " is too short"
        data.astype("<u2").tofile(path)
    return np.fromfile(path, "<u2").astype(np.int64)


def window_batch(data, windows):
    x = np.stack([data[n * SEQ:n * SEQ + SEQ] for n in windows])
    y = np.stack([data[n * SEQ + 1:n * SEQ + SEQ + 1] for n in windows])
    return torch.from_numpy(x), torch.from_numpy(y)


def batch_dim():
    return torch.export.Dim("batch", min=1, max=1024)


def drop_stack_traces(path):
    """Drops the dynamo exporter's per-node pkg.torch.onnx.stack_trace
    metadata (source lines of this machine's files, half of the file) and
    keeps every other metadata entry as the exporter wrote it."""
    model = onnx.load(path)
    for node in model.graph.node:
        kept = [p for p in node.metadata_props if p.key != STACK_TRACE]
        del node.metadata_props[:]
        node.metadata_props.extend(kept)
    onnx.save(model, path, save_as_external_data=False)


def export_all(model, family, x, out_dir, formats):
    stem = os.path.join(out_dir, family)
    dynamic = {"input_ids": {0: batch_dim()}}
    for fmt in formats:
        path = "%s.%s" % (stem, "pt2" if fmt == "pt2" else
                          fmt + (".pt" if fmt == "traced" else ".onnx"))
        if fmt in ("dynamo", "dynamo-unoptimized"):
            torch.onnx.export(model, (x,), path, dynamo=True,
                              optimize=fmt == "dynamo", external_data=False,
                              input_names=["input_ids"],
                              output_names=["logits"],
                              dynamic_shapes=dynamic, verbose=False)
            drop_stack_traces(path)
        elif fmt == "torchscript-exporter":
            torch.onnx.export(model, (x,), path, dynamo=False,
                              opset_version=17, input_names=["input_ids"],
                              output_names=["logits"],
                              dynamic_axes={"input_ids": {0: "batch"},
                                            "logits": {0: "batch"}})
        elif fmt == "traced":
            torch.jit.trace(model, (x,)).save(path)
        else:
            program = torch.export.export(model, (x,), dynamic_shapes=dynamic)
            torch.export.save(program, path)
        print("%s: %d bytes" % (path, os.path.getsize(path)))


def verify(family, out_dir, x, logits, formats):
    """Runs every written file on x and prints its largest difference from
    the model's logits (ONNX files through onnxruntime when the venv has
    it); fails on one that differs by more than 1e-4 or is over 1 MB."""
    stem = os.path.join(out_dir, family)
    for fmt in formats:
        path = "%s.%s" % (stem, "pt2" if fmt == "pt2" else
                          fmt + (".pt" if fmt == "traced" else ".onnx"))
        assert os.path.getsize(path) < 1 << 20, path + " is over 1 MB"
        with torch.no_grad():
            if fmt == "traced":
                got = torch.jit.load(path)(x)
            elif fmt == "pt2":
                got = torch.export.load(path).module()(x)
            else:
                try:
                    import onnxruntime
                except ImportError:
                    print("%s: not run (no onnxruntime)" % path)
                    continue
                session = onnxruntime.InferenceSession(
                    path, providers=["CPUExecutionProvider"])
                got = torch.from_numpy(session.run(
                    None, {"input_ids": x.numpy()})[0])
        diff = (got - logits).abs().max().item()
        print("%s: max |logits - PyTorch's| %.3g" % (path, diff))
        assert diff <= 1e-4, path + " does not reproduce the logits"


def parameter_record(model):
    by_storage, tied, records = {}, [], []
    for name, p in model.named_parameters(remove_duplicate=False):
        by_storage.setdefault(p.data_ptr(), []).append(name)
    for names in by_storage.values():
        if len(names) > 1:
            tied.append(names)
    kept = {name for name, _ in model.named_parameters()}
    for name, p in model.named_parameters():
        records.append({"name": name, "kind": "parameter",
                        "shape": list(p.shape), "dtype": str(p.dtype)[6:]})
    for name, b in model.named_buffers():
        records.append({"name": name, "kind": "buffer",
                        "shape": list(b.shape), "dtype": str(b.dtype)[6:]})
    assert all(group[0] in kept for group in tied)
    return records, tied


def train_reference(model, data):
    """pp-run's default AdamW training (see the module docstring)."""
    model = copy.deepcopy(model)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=TRAIN_LR,
                                  betas=(0.9, 0.999), eps=1e-8,
                                  weight_decay=0.0)
    samples = (len(data) - 1) // SEQ
    steps = []
    for step in range(TRAIN_STEPS):
        windows = pp_sampler.training_step(TRAIN_SEED, samples, step,
                                           TRAIN_BATCH)
        x, y = window_batch(data, windows)
        optimizer.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        norm = torch.sqrt(sum((p.grad.double() ** 2).sum()
                              for p in model.parameters()
                              if p.grad is not None)).item()
        optimizer.step()
        steps.append({"step": step + 1, "windows": windows,
                      "loss": loss.item(), "grad_norm": norm})
    return steps


def write_tensor(path, value, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(value, name).SerializeToString())


def make(family, out_dir, data, formats):
    model = build(family)
    x, _ = window_batch(data, [0, 1])
    with torch.no_grad():
        logits = model(x)
        logits64 = copy.deepcopy(model).double()(x)
    stem = os.path.join(out_dir, family)
    write_tensor(stem + ".input_0.pb", x.numpy(), "input_ids")
    write_tensor(stem + ".output_0.pb", logits.numpy(), "logits")
    export_all(model, family, x, out_dir, formats)
    verify(family, out_dir, x, logits, formats)
    records, tied = parameter_record(model)
    reference = {
        "family": family,
        "model_class": FAMILIES[family][1],
        "config": FAMILIES[family][2],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sequence": SEQ,
        "vocabulary": VOCAB,
        "parameters": records,
        "tied": tied,
        "infer": {
            "input": family + ".input_0.pb",
            "output": family + ".output_0.pb",
            "shape": list(logits.shape),
            "sha256_fp32": hashlib.sha256(logits.numpy().tobytes())
            .hexdigest(),
            "max_abs_fp32_vs_fp64": (logits.double() - logits64).abs()
            .max().item(),
        },
        "train": {
            "data": "tokens.bin", "token_width": 2, "seq_len": SEQ,
            "microbatch_size": TRAIN_BATCH, "seed": TRAIN_SEED,
            "optimizer": "adamw", "lr": TRAIN_LR, "betas": [0.9, 0.999],
            "eps": 1e-8, "weight_decay": 0.0, "clip_grad_norm": 0.0,
            "steps": train_reference(model, data),
        },
    }
    with open(stem + ".reference.json", "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")
    print("%s: loss %s" % (family, " ".join(
        "%.6f" % s["loss"] for s in reference["train"]["steps"])))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("families", nargs="*", default=list(FAMILIES))
    parser.add_argument("--formats", default=",".join(FORMATS))
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    os.makedirs(args.out_dir, exist_ok=True)
    data = tokens(args.out_dir)
    for family in args.families:
        make(family, args.out_dir, data, args.formats.split(","))


if __name__ == "__main__":
    main()
