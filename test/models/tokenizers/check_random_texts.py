"""Compares `pp-data pack --tokenizer` with the reference libraries on
random texts, for the fixture tokenizers and for variants of them that no
committed fixture covers (add_prefix_space, lstrip/rstrip, every Split
behaviour inverted or not, every Metaspace prepend_scheme with and without
split, unknown tokens fused or apart, NFKC, a regex Replace). A developer
check, run with the fixture venv after changing runtime/tokenizers/:

    /work/fixture-venv/bin/python test/models/tokenizers/check_random_texts.py \\
        build/bin/pp-data [SEED]

It prints one line per tokenizer and, for the first text that differs, the
text, the reference tokens and the two id lists; it exits 1 if any differs.
"""

import copy
import json
import pathlib
import random
import struct
import subprocess
import sys
import tempfile

import sentencepiece as spm
from tokenizers import Tokenizer

HERE = pathlib.Path(__file__).resolve().parent

PIECES = list("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 ,.;:'\"!?-_()[]{}<>|/\\\t\n\r") + [
    "  ", "   ", " \n", "\r\n", "'s", "'LL", "é", "e\u0301", "ß", "Ж", "Ω", "中",
    "😀", "👨‍👩‍👧", "\u00a0", "\u3000", "\u200b", "١٢٣", "<s>", "</s>",
    "<|endoftext|>", "<|end_of_text|>", "<unk>", "▁", " the", "GNU", "1234567"]


def random_texts(seed, count=400):
    generator = random.Random(seed)
    return ["".join(generator.choice(PIECES) for _ in range(generator.randint(1, 60)))
            for _ in range(count)]


def load(name):
    return json.loads((HERE / name).read_text(encoding="utf-8"))


def variant(name, edit):
    spec = copy.deepcopy(load(name))
    edit(spec)
    return spec


def tokenizers():
    """(label, tokenizer.json object or SentencePiece path, end-of-document)."""
    for name, eod in (("gpt2-bpe.json", "<|endoftext|>"),
                      ("llama3-bpe.json", "<|end_of_text|>"),
                      ("qwen2-bpe.json", "<|end_of_text|>"),
                      ("metaspace-bpe.json", "</s>"),
                      ("metaspace-pretok.json", "</s>")):
        yield name, load(name), eod
    yield "gpt2 add_prefix_space", variant(
        "gpt2-bpe.json", lambda s: s["pre_tokenizer"].update(add_prefix_space=True)), "<|endoftext|>"
    yield "gpt2 lstrip rstrip", variant(
        "gpt2-bpe.json", lambda s: s["added_tokens"][0].update(lstrip=True, rstrip=True)), "<|endoftext|>"
    for behavior in ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"):
        for invert in (False, True):
            yield f"llama3 {behavior} invert={invert}", variant(
                "llama3-bpe.json", lambda s: s["pre_tokenizer"]["pretokenizers"][0].update(
                    behavior=behavior, invert=invert)), "<|end_of_text|>"
    for scheme in ("always", "first", "never"):
        for split in (True, False):
            yield f"metaspace {scheme} split={split}", variant(
                "metaspace-pretok.json", lambda s: s["pre_tokenizer"].update(
                    prepend_scheme=scheme, split=split)), "</s>"
    yield "metaspace unknown fused", variant(
        "metaspace-pretok.json", lambda s: s["model"].update(byte_fallback=False)), "</s>"
    yield "metaspace unknown apart", variant(
        "metaspace-pretok.json", lambda s: s["model"].update(byte_fallback=False, fuse_unk=False)), "</s>"
    yield "metaspace NFKC", variant(
        "metaspace-bpe.json", lambda s: s["normalizer"]["normalizers"].insert(0, {"type": "NFKC"})), "</s>"
    yield "metaspace regex Replace", variant(
        "metaspace-bpe.json", lambda s: s["normalizer"]["normalizers"].append(
            {"type": "Replace", "pattern": {"Regex": "[0-9]+"}, "content": "#"})), "</s>"
    yield "sentencepiece.model", HERE / "sentencepiece.model", None


def packed_ids(pp_data, tokenizer_path, records, output):
    subprocess.run([pp_data, "pack", "--tokenizer", str(tokenizer_path), str(records),
                    "-o", str(output)], check=True, stdout=subprocess.DEVNULL)
    data = output.read_bytes()
    count = struct.unpack_from("<Q", data, 16)[0]
    width = struct.unpack_from("<I", data, 12)[0]
    return list(struct.unpack_from("<%d%s" % (count, "H" if width == 2 else "I"), data, 72))


def main():
    pp_data = sys.argv[1]
    texts = random_texts(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    failed = False
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        records = scratch / "texts.jsonl"
        records.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
        for label, spec, eod in tokenizers():
            if isinstance(spec, pathlib.Path):
                processor = spm.SentencePieceProcessor(model_file=str(spec))
                encode, tokens, eod_id, path = processor.encode, processor.encode_as_pieces, processor.eos_id(), spec
            else:
                path = scratch / "tokenizer.json"
                path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
                reference = Tokenizer.from_file(str(path))
                encode = lambda t, r=reference: r.encode(t, add_special_tokens=False).ids
                tokens = lambda t, r=reference: r.encode(t, add_special_tokens=False).tokens
                eod_id = reference.token_to_id(eod)
            got = packed_ids(pp_data, path, records, scratch / "packed.bin")
            position = 0
            for text in texts:
                want = encode(text) + [eod_id]
                if got[position:position + len(want)] != want:
                    print(f"{label}: differs on {text!r}\n  reference tokens {tokens(text)}\n"
                          f"  reference {want}\n  pp-data   {got[position:position + len(want)]}")
                    failed = True
                    break
                position += len(want)
            else:
                print(f"{label}: same ids on {len(texts)} texts")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
