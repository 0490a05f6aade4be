"""The models of `scripts/bench.sh --peers` as PyTorch 2.x nn.Modules.

Each model is built with the architecture and the initial weights of the
file pp trains, and can be cut into the two stages of a 2-rank pipeline
without either rank holding the other's parameters:

  mlp6  an ONNX MLP of test/models/make_mlp6.py (any --width), weights read
        from the ONNX initializers. pp trains the loss on `y` only and leaves
        out `aux_head`, whose output `aux_out` nothing uses; so does this
        one. Stage 1 starts at `sigmoid3`, where pp's partition starts it.
  gpt   a traced GPT of test/models/make_transformers.py or
        make_byte_gpt.py, built from make_transformers' classes with the
        sizes and weights of the traced module's state_dict (the head count
        is make_transformers.HEADS, which the weights do not show). Stage 1
        starts at the middle block.
  hf    a Hugging Face causal LM of scripts/bench/hf_models.py (GPT-2 or
        LLaMA family), its MODEL the export NAME.onnx: built from
        NAME.config.json on the meta device with the weights of its stage
        only, from NAME.safetensors (pp's initial weights), attention
        `sdpa` (PyTorch's default, causal without a mask). A stage holds
        layers [first, last), with the embeddings on the first and the
        final norm and head on the last; a head tied to the embedding is
        held by both ranks, which sum its gradient (as pp does). Stage 1
        starts at the middle layer (split "half") or where the larger
        stage's matmul FLOPs are fewest (split "flops"; it may hold only
        the final norm and head).

`load(kind, path, split)` returns a Model: its stage modules, a batch maker,
the loss, with pp's shapes (microbatch rows first), and the tied parameters
of a stage.
"""
import json
import os
import sys

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "models"))
import make_transformers as transformers  # noqa: E402


class _Mlp6Part(nn.Module):
    """Some of make_mlp6.py's nodes: holds the initializers named in NAMES
    (as p.fc1_weight for fc1.weight, ...)."""

    NAMES = []

    def __init__(self, weights):
        super().__init__()
        self.p = nn.ParameterDict({
            name.replace(".", "_"): nn.Parameter(torch.from_numpy(weights[name].copy()))
            for name in self.NAMES})


class Mlp6Front(_Mlp6Part):
    """make_mlp6.py's nodes flatten .. fc3_bias; returns (h3, x_flat)."""

    NAMES = ["fc1.weight", "fc1.bias", "aux.weight", "aux.bias", "fc2.weight",
             "fc2.bias", "fc3.weight", "fc3.bias"]

    def forward(self, x, aux):
        p = self.p
        x_flat = x.flatten(1)
        a1 = F.relu(F.linear(x_flat, p.fc1_weight, p.fc1_bias))
        a1_mix = a1 + F.linear(aux, p.aux_weight, p.aux_bias)
        a2 = torch.tanh(0.5 * F.linear(a1_mix, p.fc2_weight) + 2.0 * p.fc2_bias)
        return a2 @ p.fc3_weight + p.fc3_bias, x_flat


class Mlp6Back(_Mlp6Part):
    """make_mlp6.py's nodes sigmoid3 .. head; returns y."""

    NAMES = ["fc4.weight", "fc4.bias", "skip.weight", "fc5.weight",
             "fc5.bias", "head.weight", "head.bias"]

    def forward(self, h3, x_flat):
        p = self.p
        a3_half = torch.sigmoid(h3) * 0.5
        a4 = F.relu(F.linear(a3_half, p.fc4_weight, p.fc4_bias))
        a4_skip = a4 - F.linear(x_flat, p.skip_weight)
        a5 = torch.tanh(F.linear(a4_skip, p.fc5_weight, p.fc5_bias))
        return F.linear(a5, p.head_weight, p.head_bias)


class Mlp6(nn.Module):
    """The whole MLP: Mlp6Front, then Mlp6Back."""

    def __init__(self, weights):
        super().__init__()
        self.front, self.back = Mlp6Front(weights), Mlp6Back(weights)

    def forward(self, x, aux):
        return self.back(*self.front(x, aux))


def _set_gpt_sizes(state, layers):
    """Sets make_transformers' sizes, which its classes read when built,
    to those of the weights in `state`."""
    transformers.VOCAB, transformers.D_MODEL = state["tok.weight"].shape
    transformers.SEQ = state["pos.weight"].shape[0]
    transformers.LAYERS = layers


class GptStage(nn.Module):
    """Blocks [first, last) of make_transformers.Gpt, with its embeddings
    when first is 0 and its final norm and head when last is the block
    count."""

    def __init__(self, state, first, last, layers):
        super().__init__()
        _set_gpt_sizes(state, layers)
        vocab, d_model = state["tok.weight"].shape
        self.embeds, self.heads = first == 0, last == layers
        if self.embeds:
            self.tok = nn.Embedding(vocab, d_model)
            self.pos = nn.Embedding(transformers.SEQ, d_model)
        self.blocks = nn.ModuleList(transformers.GptBlock()
                                    for _ in range(first, last))
        if self.heads:
            self.ln_f = nn.LayerNorm(d_model)
            self.lm_head = nn.Linear(d_model, vocab, bias=False)

        def mine(key):
            if key.startswith("blocks."):
                return first <= int(key.split(".")[1]) < last
            return self.embeds if key.startswith(("tok.", "pos.")) else self.heads

        self.load_state_dict(
            {(f"blocks.{int(k.split('.')[1]) - first}." + k.split(".", 2)[2]
              if k.startswith("blocks.") else k): v
             for k, v in state.items() if mine(k)}, strict=True)

    def forward(self, x):
        if self.embeds:
            positions = torch.arange(0, x.size(1), dtype=torch.long)
            x = self.tok(x) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x)) if self.heads else x


class Model:
    """A peer model: stage modules, batches and loss in pp's shapes."""

    def __init__(self, build_stage, make_batch, loss, tied=lambda module: []):
        self.build_stage = build_stage  # (index, count) -> nn.Module
        self.make_batch = make_batch    # (rows, generator) -> (inputs, target)
        self.loss = loss                # (output, target) -> scalar
        # (stage module) -> the parameters every rank of a pipeline holds
        # a copy of, whose gradients the ranks sum
        self.tied = tied


def _load_mlp6(path):
    weights = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(path).graph.initializer}

    def build_stage(index, count):
        if count == 1:
            return Mlp6(weights)
        return (Mlp6Front if index == 0 else Mlp6Back)(weights)

    def make_batch(rows, generator):
        x = torch.randn(rows, 4, 4, generator=generator)
        aux = torch.randn(rows, 8, generator=generator)
        return (x, aux), torch.randn(rows, 4, generator=generator)

    return Model(build_stage, make_batch, F.mse_loss)


def _load_gpt(path):
    state = torch.jit.load(path).state_dict()
    layers = 1 + max(int(k.split(".")[1]) for k in state if k.startswith("blocks."))
    vocab = state["tok.weight"].shape[0]
    seq = state["pos.weight"].shape[0]

    def build_stage(index, count):
        if count == 1:
            _set_gpt_sizes(state, layers)
            model = transformers.Gpt()
            model.load_state_dict(state, strict=True)
            return model
        middle = layers // 2
        return GptStage(state, *[(0, middle), (middle, layers)][index], layers)

    return Model(build_stage, token_batch(vocab, seq), lm_loss)


def token_batch(vocab, seq):
    """A batch maker of random token ids and labels, [rows, seq]."""
    def make_batch(rows, generator):
        tokens = torch.randint(0, vocab, (rows, seq), generator=generator)
        return (tokens,), torch.randint(0, vocab, (rows, seq), generator=generator)

    return make_batch


def lm_loss(logits, labels):
    """Mean cross-entropy over every position, as pp's cross_entropy loss."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))


# The module names of a Hugging Face causal LM's parts, by model_type:
# embeddings, the layer list, the final norm, the head.
HF_PARTS = {
    "gpt2": (["transformer.wte", "transformer.wpe"], "transformer.h",
             "transformer.ln_f", "lm_head"),
    "llama": (["model.embed_tokens"], "model.layers", "model.norm", "lm_head"),
}


class HfStage(nn.Module):
    """Layers [first, last) of a Hugging Face causal LM of HF_PARTS, with
    the embeddings on the first stage and the final norm and head on the
    last (`heads`); holds only those parts' weights, read from `weights`
    (a safetensors file)."""

    def __init__(self, model_class, config, weights, first, last, heads):
        super().__init__()
        from safetensors import safe_open
        embeds, layers, norm, head = HF_PARTS[config.model_type]
        self.gpt2 = config.model_type == "gpt2"
        with torch.device("meta"):
            model = model_class(config)
        self.embeds, self.heads = first == 0, heads
        owned = [f"{layers}.{i}." for i in range(first, last)]
        owned += [f"{name}." for name in embeds] if self.embeds else []
        owned += [f"{norm}.", f"{head}."] if self.heads else []
        with safe_open(weights, "pt") as f:
            model.load_state_dict(
                {key: f.get_tensor(key) for key in f.keys() if key.startswith(tuple(owned))},
                strict=False, assign=True)
        if self.embeds and self.heads and config.tie_word_embeddings:
            model.lm_head.weight = model.get_input_embeddings().weight
        if self.embeds:
            self.embed = nn.ModuleList(model.get_submodule(name) for name in embeds)
        self.layers = model.get_submodule(layers)[first:last]
        if self.heads:
            self.norm, self.head = model.get_submodule(norm), model.get_submodule(head)
        if not self.gpt2:
            # The rotary tables are buffers the meta device left empty.
            self.rotary = type(model.model.rotary_emb)(config)

    def forward(self, x):
        positions = torch.arange(x.size(1)).unsqueeze(0)
        if self.embeds:
            # The token embedding, plus GPT-2's position embedding.
            x = sum(embed(ids) for embed, ids in zip(self.embed, (x, positions)))
        extra = {} if self.gpt2 else {"position_ids": positions,
                                      "position_embeddings": self.rotary(x, positions)}
        for layer in self.layers:
            x = layer(x, attention_mask=None, use_cache=False, **extra)
        return self.head(self.norm(x)) if self.heads else x


def flop_balanced_split(model, seq):
    """The layer at which stage 1 starts (the layer count: at the final
    norm) that makes the larger stage's forward matmul FLOPs per token
    fewest: 2 per weight element of a layer's or the head's linear maps,
    plus the attention's 4 x seq x width per layer."""
    def linear_elements(module):
        return sum(m.weight.numel() for m in module.modules()
                   if isinstance(m, nn.Linear) or type(m).__name__ == "Conv1D")

    _, layers, _, head = HF_PARTS[model.config.model_type]
    width = model.config.hidden_size
    layer_costs = [2 * linear_elements(layer) + 4 * seq * width
                   for layer in model.get_submodule(layers)]
    head_cost = 2 * model.get_submodule(head).weight.numel()
    return min(range(1, len(layer_costs) + 1),
               key=lambda k: max(sum(layer_costs[:k]), sum(layer_costs[k:]) + head_cost))


def _load_hf(path, split):
    from transformers import AutoConfig
    import hf_models
    base = os.path.splitext(path)[0]
    with open(base + ".config.json") as f:
        settings = json.load(f)
    config = AutoConfig.for_model(**settings)
    config._attn_implementation = "sdpa"
    layers = config.num_hidden_layers
    model_class = hf_models.model_class(config.model_type)
    if split == "half":
        middle = layers // 2
    else:
        with torch.device("meta"):
            middle = flop_balanced_split(model_class(config), hf_models.SEQ)

    def build_stage(index, count):
        bounds = [(0, layers)] if count == 1 else [(0, middle), (middle, layers)]
        return HfStage(model_class, config, base + ".safetensors", *bounds[index],
                       heads=index == count - 1)

    def tied(module):
        # Both ranks hold a tied head: the embedding on the first, the head
        # on the last.
        if not config.tie_word_embeddings or (module.embeds and module.heads):
            return []
        return [module.embed[0].weight if module.embeds else module.head.weight]

    return Model(build_stage, token_batch(config.vocab_size, hf_models.SEQ),
                 lm_loss, tied)


LOADERS = {"mlp6": _load_mlp6, "gpt": _load_gpt, "hf": _load_hf}


def load(kind, path, split="half"):
    """The Model of KIND in PATH; split "flops" (a FLOP-balanced 2-stage
    cut) only for hf models."""
    if kind not in LOADERS:
        raise SystemExit(f"peer_models: unknown model kind '{kind}'; use "
                         f"{' or '.join(LOADERS)}")
    if kind == "hf":
        return _load_hf(path, split)
    if split != "half":
        raise SystemExit(f"peer_models: a {kind} model has only the half split")
    return LOADERS[kind](path)
