"""Trains the small tokenizers pp-data's tokenizer tests use and writes the
token datasets the reference libraries make of the test texts.

Run with a Python that has Hugging Face `tokenizers` and `sentencepiece`
(the fixture venv, not CI):

    /work/fixture-venv/bin/python test/models/tokenizers/make_tokenizers.py

It trains on the license texts under texts/ (copies of Debian's
/usr/share/common-licenses, so that the tests do not depend on the
machine's base-files; their sha256 in texts.sha256) and writes, next to
itself:

  gpt2-bpe.json       byte-level BPE, ByteLevel pre-tokenizer with GPT-2's
                      built-in regex, merges as "a b" strings
  llama3-bpe.json     byte-level BPE, Split(LLaMA 3's regex) + ByteLevel
                      (use_regex false), ignore_merges, merges as pairs
  qwen2-bpe.json      llama3-bpe's vocabulary and merges as Qwen2 runs them:
                      normalizer NFC, Qwen2's regex (single digits), no
                      ignore_merges (expected ids for the non-ASCII sample
                      and the records only, to keep the fixtures small)
  metaspace-bpe.json  LLaMA-2 style: normalizer Prepend("▁") + Replace(" ",
                      "▁"), no pre-tokenizer, byte_fallback to <0xNN>,
                      fuse_unk; </s> matched after normalization
  metaspace-pretok.json  the same model with a Metaspace pre-tokenizer
                      (prepend_scheme "first", split false), as Mistral's
  sentencepiece.model  a SentencePiece model: BPE, identity normalization
                      (the NFKC table alone would be 240 KB). Not unigram,
                      the trainer's default: Debian's libsentencepiece
                      0.1.97 loads a unigram model of sentencepiece 0.2.3
                      but breaks ties between segmentations of equal score
                      otherwise (14 dashes: "-" "-" "-"*12 against "-"
                      "-"*12 "-"), so no library of the two is a reference
                      for the other there
  inputs/non-ascii.txt, inputs/records.jsonl  the other test inputs
  expected/NAME-{licenses,non-ascii,records}.bin.xz  what `pp-data pack
                      --tokenizer` must write: the reference library's ids,
                      each document followed by its end-of-document token,
                      as a pp token dataset (docs/tools/pp-data.md), xz
                      compressed
"""

import copy
import hashlib
import json
import lzma
import pathlib
import struct

import sentencepiece as spm
from tokenizers import (Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, trainers)

HERE = pathlib.Path(__file__).resolve().parent
TEXTS = HERE / "texts"
INPUTS = HERE / "inputs"
EXPECTED = HERE / "expected"
LICENSES = sorted(TEXTS.iterdir())
VOCABULARY = 1000

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"
                r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"
               r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

NON_ASCII = (
    "Café naïve façade — déjà vu, Ångström, Œuvre, straße.\n"
    "Русский текст: Съешь же ещё этих мягких французских булок.\n"
    "Ελληνικά: Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.\n"
    "中文：我能吞下玻璃而不伤身体。日本語：私はガラスを食べられます。한국어\n"
    "العربية: أنا قادر على أكل الزجاج و هذا لا يؤلمني.\n"
    "Emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ — flags 🇫🇷🇯🇵\n"
    "Combining: e\u0301 a\u0308 n\u0303 Z\u0351\u0346\u0300algo\n"
    "\tTabs\tbetween\t\twords\n"
    "Runs of spaces:     five,          ten,  two.   \n"
    "CRLF line\r\nanother\r\n\r\n"
    "Digits: 1234567890 3.14159 1,000,000 2026-12-02 0x1F 007\n"
    "Mixed: l'été it's we'LL THEY'RE I'M you'd don't\n"
    "  leading spaces and trailing   \n"
    "Zero width: a\u200bb, nbsp:\u00a0x, ideographic space:\u3000y\n"
    "\n\n\nend")

RECORDS = [
    {"text": "The first record.\nIt has two lines."},
    {"id": 2, "text": "Second: café, Ελληνικά, 中文, 😀.", "meta": {"a": [1]}},
    {"text": "Specials inside text: <|endoftext|> and </s> and <s> stay "
             "special.<|end_of_text|>done"},
    {"text": "   leading and trailing spaces   "},
    {"text": "GNU GENERAL PUBLIC LICENSE\r\nVersion 3, 29 June 2007\r\n"},
]


def write_inputs():
    INPUTS.mkdir(exist_ok=True)
    (INPUTS / "non-ascii.txt").write_bytes(NON_ASCII.encode())
    lines = [json.dumps(r, ensure_ascii=(i % 2 == 1)) for i, r in enumerate(RECORDS)]
    # A blank line between records: pp-data skips it, as it is no record.
    lines.insert(2, "")
    (INPUTS / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sums = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  texts/{p.name}\n"
                   for p in LICENSES)
    (HERE / "texts.sha256").write_text(sums)


def license_texts():
    return [p.read_bytes().decode() for p in LICENSES]


def train_byte_level(pre_tokenizer, ignore_merges, specials):
    tokenizer = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCABULARY, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(license_texts(), trainer)
    return tokenizer


def train_metaspace():
    bytes_tokens = ["<0x%02X>" % b for b in range(256)]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True,
                                     fuse_unk=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
    trainer = trainers.BpeTrainer(
        vocab_size=VOCABULARY, show_progress=False,
        special_tokens=["<unk>", "<s>", "</s>"] + bytes_tokens)
    tokenizer.train_from_iterator(license_texts(), trainer)
    saved = json.loads(tokenizer.to_str())
    # LLaMA-2's byte tokens are vocabulary entries, not added tokens.
    saved["added_tokens"] = [t for t in saved["added_tokens"]
                             if t["content"] not in bytes_tokens]
    saved["decoder"] = json.loads(decoders.Sequence([
        decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
        decoders.Strip(" ", 1, 0)]).__getstate__())
    normalized = copy.deepcopy(saved)
    # </s> is matched in the normalized text, <s> in the raw text.
    for token in normalized["added_tokens"]:
        token["normalized"] = token["content"] == "</s>"
    normalized["normalizer"] = json.loads(normalizers.Sequence([
        normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]).__getstate__())
    normalized["pre_tokenizer"] = None
    pretokenized = copy.deepcopy(saved)
    pretokenized["pre_tokenizer"] = json.loads(pre_tokenizers.Metaspace(
        prepend_scheme="first", split=False).__getstate__())
    return normalized, pretokenized


def merges_as_strings(saved):
    saved["model"]["merges"] = [" ".join(m) for m in saved["model"]["merges"]]
    return saved


def write_json(name, saved):
    path = HERE / name
    path.write_text(json.dumps(saved, ensure_ascii=False, separators=(",", ":")),
                    encoding="utf-8")
    return Tokenizer.from_file(str(path))


def token_dataset(documents, vocabulary):
    tokens = [t for d in documents for t in d]
    payload = struct.pack("<%dH" % len(tokens), *tokens)
    header = b"PPTOKENS" + struct.pack("<IIQQII", 1, 2, len(tokens),
                                       len(documents), vocabulary, max(tokens))
    return header + hashlib.sha256(payload).digest() + payload


def write_expected(name, encode, eod, vocabulary, licenses=True):
    """Writes NAME's expected datasets; `encode` maps a text to its ids."""
    inputs = {
        "licenses": license_texts(),
        "non-ascii": [NON_ASCII],
        "records": [r["text"] for r in RECORDS],
    }
    if not licenses:
        del inputs["licenses"]
    for kind, documents in inputs.items():
        ids = [encode(text) + [eod] for text in documents]
        data = token_dataset(ids, vocabulary)
        (EXPECTED / f"{name}-{kind}.bin.xz").write_bytes(
            lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))


def hf_encoder(tokenizer):
    return lambda text: tokenizer.encode(text, add_special_tokens=False).ids


def main():
    EXPECTED.mkdir(exist_ok=True)
    write_inputs()

    gpt2 = train_byte_level(pre_tokenizers.ByteLevel(add_prefix_space=False),
                            False, ["<|endoftext|>"])
    gpt2 = write_json("gpt2-bpe.json",
                      merges_as_strings(json.loads(gpt2.to_str())))
    write_expected("gpt2-bpe", hf_encoder(gpt2), gpt2.token_to_id("<|endoftext|>"),
                   gpt2.get_vocab_size())

    llama3 = train_byte_level(pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        True, ["<|begin_of_text|>", "<|end_of_text|>"])
    llama3 = write_json("llama3-bpe.json", json.loads(llama3.to_str()))
    write_expected("llama3-bpe", hf_encoder(llama3),
                   llama3.token_to_id("<|end_of_text|>"), llama3.get_vocab_size())

    qwen2 = json.loads(llama3.to_str())
    qwen2["normalizer"] = json.loads(normalizers.NFC().__getstate__())
    qwen2["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = QWEN2_REGEX
    qwen2["model"]["ignore_merges"] = False
    qwen2 = write_json("qwen2-bpe.json", qwen2)
    write_expected("qwen2-bpe", hf_encoder(qwen2),
                   qwen2.token_to_id("<|end_of_text|>"), qwen2.get_vocab_size(),
                   licenses=False)

    normalized, pretokenized = train_metaspace()
    for name, saved in (("metaspace-bpe", normalized),
                        ("metaspace-pretok", pretokenized)):
        tokenizer = write_json(name + ".json", saved)
        write_expected(name, hf_encoder(tokenizer), tokenizer.token_to_id("</s>"),
                       tokenizer.get_vocab_size())

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(line for text in license_texts()
                               for line in text.splitlines() if line.strip()),
        model_prefix=str(HERE / "sentencepiece"), vocab_size=VOCABULARY,
        model_type="bpe", normalization_rule_name="identity", minloglevel=2)
    (HERE / "sentencepiece.vocab").unlink()
    sp = spm.SentencePieceProcessor(model_file=str(HERE / "sentencepiece.model"))
    write_expected("sentencepiece", sp.encode, sp.eos_id(), sp.get_piece_size())


if __name__ == "__main__":
    main()
