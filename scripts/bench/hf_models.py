"""The realistic models of `scripts/bench.sh --peers` (issue 28): Hugging
Face causal LMs built from configs (random init, seeded; no download).

  gpt2   GPT2LMHeadModel: d_model 768, 12 heads, 4 layers, vocabulary
         50257, head tied to the token embedding (67M parameters)
  llama  LlamaForCausalLM: d_model 1024, 16 heads, 4 key/value heads,
         SwiGLU intermediate 2816, 4 layers, vocabulary 32000 (111M)

Dropout is 0. Every bias is drawn like the weights (normal, the config's
initializer_range) instead of Hugging Face's zeros: the exporter's
optimizer removes an Add of an all-zero initializer, which would leave
GPT-2's 16 linear biases out of the ONNX model pp trains. Both take
input_ids int64 [2, 256] (microbatch 2, sequence 256) and return logits
float32 [2, 256, vocabulary].

  hf_models.py DIR NAME...
      writes DIR/NAME.onnx (torch.onnx.export(dynamo=True), eager
      attention: the implementation test/models/hf/make_hf_models.py's
      fixtures show pp imports), DIR/NAME.safetensors (the same initial
      weights, every state_dict entry, a tied one under each name) and
      DIR/NAME.config.json (the Hugging Face config), each unless present.

The PyTorch peer (peer_models.py) builds the model from the config on the
meta device and loads only its stage's weights from the safetensors file,
so that pp and PyTorch train the same model from the same weights.
"""
import os
import sys

import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "models", "hf"))
from make_hf_models import logits_forward  # noqa: E402

MICROBATCH, SEQ, SEED = 2, 256, 28

# name: (config class, model class, config arguments)
MODELS = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel",
             dict(vocab_size=50257, n_embd=768, n_layer=4, n_head=12,
                  n_positions=1024, resid_pdrop=0.0, embd_pdrop=0.0,
                  attn_pdrop=0.0, tie_word_embeddings=True)),
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(vocab_size=32000, hidden_size=1024, num_hidden_layers=4,
                   num_attention_heads=16, num_key_value_heads=4,
                   intermediate_size=2816, max_position_embeddings=2048,
                   attention_dropout=0.0, tie_word_embeddings=False)),
}


def model_class(name):
    return getattr(transformers, MODELS[name][1])


def make_config(name):
    config_name, _, arguments = MODELS[name]
    return getattr(transformers, config_name)(**arguments)


def export(name, out_dir):
    """Writes NAME's config, weights and ONNX export into out_dir."""
    from safetensors.torch import save_file
    paths = {kind: os.path.join(out_dir, f"{name}.{kind}")
             for kind in ("onnx", "safetensors", "config.json")}
    if all(os.path.exists(path) for path in paths.values()):
        return
    config = make_config(name)
    config._attn_implementation = "eager"
    base = model_class(name)
    logits_only = type(base.__name__ + "Logits", (base,),
                       {"forward": logits_forward(base)})
    torch.manual_seed(SEED)
    model = logits_only(config).eval()
    with torch.no_grad():
        for key, parameter in model.named_parameters():
            if key.endswith(".bias"):
                parameter.normal_(0.0, config.initializer_range)
    config.to_json_file(paths["config.json"])
    save_file({key: value.contiguous().clone()
               for key, value in model.state_dict().items()}, paths["safetensors"])
    input_ids = torch.zeros(MICROBATCH, SEQ, dtype=torch.int64)
    torch.onnx.export(model, (input_ids,), paths["onnx"], dynamo=True,
                      input_names=["input_ids"], output_names=["logits"],
                      external_data=False)


def main():
    if len(sys.argv) < 3 or any(name not in MODELS for name in sys.argv[2:]):
        sys.exit(f"usage: hf_models.py DIR NAME... (NAME: {', '.join(MODELS)})")
    for name in sys.argv[2:]:
        export(name, sys.argv[1])


if __name__ == "__main__":
    main()
