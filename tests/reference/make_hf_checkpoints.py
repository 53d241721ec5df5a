#!/usr/bin/env python3
"""Writes the tiny Hugging Face model folders of tests/fixtures/hf/ and their golden outputs.

Each folder is laid out as the Hub serves one (config.json, model.safetensors or
pytorch_model.bin, and the tokenizer files), with random weights, and golden.json holds what
tests/reference/hf_reference.py (numpy, float64, independent of relpos) computes on it: the
final hidden states and LM logits for fixed input ids, and the translation invariance of P·Pᵀ
for the absolute position table. tests/test_hf_import.cpp compares relpos's import against them.

Run from the repository root with Debian's python3 (numpy; python3-torch for the .bin files;
the sentencepiece package's spm_train/spm_encode for ALBERT's spiece.model):
    /usr/bin/python3 tests/reference/make_hf_checkpoints.py [bert albert roberta gpt2]
CI does not run it: its outputs are committed.
"""
import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import byte_bpe as bpe  # noqa: E402
import hf_reference as ref  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf")

# BERT's vocab.txt order: [PAD] first, then unused slots, then [UNK] [CLS] [SEP] [MASK], as in
# bert-base-uncased (relpos renumbers the specials to 0..4 on import).
BERT_VOCAB = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a",
              "cat", "dog", "sat", "on", "mat", "##s", "run", "##ning", ",", ".", "is", "was",
              "big", "small", "red", "blue", "house", "tree", "and", "of", "to", "in", "it", "he",
              "she", "they", "we", "you", "i", "##ed", "##ly"]
BERT_TEXT_A = "The cat sat on the mat."  # relpos's WordPiece must give the same pieces (uncased)
BERT_TEXT_B = "dogs running"
BERT_PIECES_A = ["the", "cat", "sat", "on", "the", "mat", "."]
BERT_PIECES_B = ["dog", "##s", "run", "##ning"]

ALBERT_TEXT = "the cat sat on the red mat"
ALBERT_CORPUS = """the cat sat on the mat
the dog ran to the red house
a small bird sang in the big tree
they walked to the blue house and sat down
she said the cat was on the mat again
we ran and ran until the sun went down
the house by the tree was red and small
""" * 4


def rng_for(name):
    return np.random.default_rng(sum(map(ord, name)) * 7919)  # fixed per folder


def normal(rng, *shape, std=0.3):
    return rng.normal(0.0, std, size=shape)


def ln_params(rng, n):
    return 1.0 + normal(rng, n, std=0.1), normal(rng, n, std=0.1)


def bert_tensors(cfg, rng, arch, head=True, nsp=False):
    """Base-model names without prefix, heads as the architecture names them."""
    V, D, F = cfg["vocab_size"], cfg["hidden_size"], cfg["intermediate_size"]
    E = cfg.get("embedding_size", D)
    M, TV = cfg["max_position_embeddings"], cfg["type_vocab_size"]
    d = D // cfg["num_attention_heads"]
    pos_type = cfg.get("position_embedding_type", "absolute")
    t = collections.OrderedDict()
    t["embeddings.word_embeddings.weight"] = normal(rng, V, E)
    t["embeddings.position_embeddings.weight"] = normal(rng, M, E)
    t["embeddings.token_type_embeddings.weight"] = normal(rng, TV, E)
    t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"] = ln_params(rng, E)
    if arch == "albert":
        t["encoder.embedding_hidden_mapping_in.weight"] = normal(rng, D, E)
        t["encoder.embedding_hidden_mapping_in.bias"] = normal(rng, D, std=0.1)
        layers = [("encoder.albert_layer_groups.0.albert_layers.0.",
                   {"q": "attention.query", "k": "attention.key", "v": "attention.value",
                    "o": "attention.dense", "ln1": "attention.LayerNorm", "i": "ffn",
                    "o2": "ffn_output", "ln2": "full_layer_layer_norm"})]
    else:
        layers = [(f"encoder.layer.{l}.",
                   {"q": "attention.self.query", "k": "attention.self.key",
                    "v": "attention.self.value", "o": "attention.output.dense",
                    "ln1": "attention.output.LayerNorm", "i": "intermediate.dense",
                    "o2": "output.dense", "ln2": "output.LayerNorm"})
                  for l in range(cfg["num_hidden_layers"])]
    for p, n in layers:
        for key, (o, i) in {"q": (D, D), "k": (D, D), "v": (D, D), "o": (D, D), "i": (F, D),
                            "o2": (D, F)}.items():
            t[p + n[key] + ".weight"] = normal(rng, o, i, std=0.3 if i == D else 0.2)
            t[p + n[key] + ".bias"] = normal(rng, o, std=0.1)
        for key in ("ln1", "ln2"):
            t[p + n[key] + ".weight"], t[p + n[key] + ".bias"] = ln_params(rng, D)
        if pos_type != "absolute":
            t[p + "attention.self.distance_embedding.weight"] = normal(rng, 2 * M - 1, d, std=0.5)
    if head:
        names = {"bert": ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                          "cls.predictions"),
                 "roberta": ("lm_head.dense", "lm_head.layer_norm", "lm_head"),
                 "albert": ("predictions.dense", "predictions.LayerNorm", "predictions")}[arch]
        t[names[0] + ".weight"] = normal(rng, E, D)
        t[names[0] + ".bias"] = normal(rng, E, std=0.1)
        t[names[1] + ".weight"], t[names[1] + ".bias"] = ln_params(rng, E)
        t[names[2] + ".bias"] = normal(rng, V, std=0.1)
    if nsp:
        t["cls.seq_relationship.weight"] = normal(rng, 2, D)
        t["cls.seq_relationship.bias"] = normal(rng, 2)
    return t


def gpt2_tensors(cfg, rng):
    V, D, M = cfg["vocab_size"], cfg["n_embd"], cfg["n_positions"]
    F = cfg.get("n_inner") or 4 * D
    t = collections.OrderedDict()
    t["wte.weight"] = normal(rng, V, D)
    t["wpe.weight"] = normal(rng, M, D)
    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        t[p + "ln_1.weight"], t[p + "ln_1.bias"] = ln_params(rng, D)
        t[p + "attn.c_attn.weight"] = normal(rng, D, 3 * D)  # Conv1D: (in, out)
        t[p + "attn.c_attn.bias"] = normal(rng, 3 * D, std=0.1)
        t[p + "attn.c_proj.weight"] = normal(rng, D, D)
        t[p + "attn.c_proj.bias"] = normal(rng, D, std=0.1)
        t[p + "ln_2.weight"], t[p + "ln_2.bias"] = ln_params(rng, D)
        t[p + "mlp.c_fc.weight"] = normal(rng, D, F, std=0.2)
        t[p + "mlp.c_fc.bias"] = normal(rng, F, std=0.1)
        t[p + "mlp.c_proj.weight"] = normal(rng, F, D, std=0.2)
        t[p + "mlp.c_proj.bias"] = normal(rng, D, std=0.1)
        # The causal-mask buffers older GPT-2 checkpoints carry (not parameters).
        t[p + "attn.bias"] = np.tril(np.ones((M, M))).reshape(1, 1, M, M)
    t["h.0.attn.masked_bias"] = np.array(-1e4)
    t["ln_f.weight"], t["ln_f.bias"] = ln_params(rng, D)
    return t


def with_prefix(t, prefix, heads=("cls.", "lm_head.", "predictions.", "sop_classifier.")):
    out = collections.OrderedDict()
    for k, v in t.items():
        out[k if k.startswith(heads) else prefix + k] = v
    return out


def stored(tensors, dtype):
    """The values as the file stores them (the reference computes on exactly these)."""
    out = collections.OrderedDict()
    for k, v in tensors.items():
        if dtype == "F16":
            v = v.astype(np.float16).astype(np.float64)
        elif dtype == "BF16":
            v = ref.bf16_round(v)
        else:
            v = v.astype(np.float32).astype(np.float64)
        out[k] = v
    return out


def write_folder(name, cfg, tensors, dtype="F32", files=None, bin_kind=None):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    for fname, text in (files or {}).items():
        mode = "wb" if isinstance(text, bytes) else "w"
        with open(os.path.join(d, fname), mode) as f:
            f.write(text)
    if bin_kind is None:
        ref.write_safetensors(os.path.join(d, "model.safetensors"), list(tensors.items()), dtype,
                              {"format": "pt"})
    else:
        import torch  # Debian's python3-torch
        sd = collections.OrderedDict(
            (k, torch.tensor(np.asarray(v), dtype=torch.int64 if np.asarray(v).dtype.kind == "i"
                             else torch.float32)) for k, v in tensors.items())
        torch.save(sd if bin_kind == "ordered" else dict(sd), os.path.join(d, "pytorch_model.bin"))
    return d


def golden(d, cfg, tensors, ids, types=None, extra=None, table=None, offset=0):
    hidden, logits = ref.forward(cfg, tensors, ids, types)
    g = {"ids": list(map(int, ids)),
         "types": None if types is None else list(map(int, types)),
         "hidden": hidden.tolist(),
         "logits": None if logits is None else logits.tolist()}
    if table is not None:
        p = tensors[table][offset:]
        g["gram_invariance"] = ref.invariance(p @ p.T)
        g["gram_rows"] = int(p.shape[0])
    for w in ("model.safetensors", "pytorch_model.bin"):
        if os.path.exists(os.path.join(d, w)):
            with open(os.path.join(d, w), "rb") as f:
                g["weights_sha256"] = hashlib.sha256(f.read()).hexdigest()
    g.update(extra or {})
    with open(os.path.join(d, "golden.json"), "w") as f:
        json.dump(g, f)
        f.write("\n")


def bert_config(**kw):
    c = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "vocab_size": len(BERT_VOCAB),
         "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
         "intermediate_size": 32, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 16, "type_vocab_size": 2,
         "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
         "position_embedding_type": "absolute"}
    c.update(kw)
    return c


def bert_inputs():
    v = {tok: i for i, tok in enumerate(BERT_VOCAB)}
    ids = [v["[CLS]"]] + [v[p] for p in BERT_PIECES_A] + [v["[SEP]"]] + \
          [v[p] for p in BERT_PIECES_B] + [v["[SEP]"]]
    types = [0] * (len(BERT_PIECES_A) + 2) + [1] * (len(BERT_PIECES_B) + 1)
    return ids, types, {"text_a": BERT_TEXT_A, "text_b": BERT_TEXT_B}


def make_bert():
    vocab_files = {"vocab.txt": "\n".join(BERT_VOCAB) + "\n"}
    ids, types, texts = bert_inputs()
    # absolute, F32, "bert." prefix, next-sentence head, pooler and the position_ids buffer
    # (tensors relpos does not use), and the tied decoder stored as a copy.
    cfg = bert_config()
    rng = rng_for("bert_absolute")
    t = bert_tensors(cfg, rng, "bert", nsp=True)
    t["pooler.dense.weight"] = normal(rng, 16, 16)
    t["pooler.dense.bias"] = normal(rng, 16)
    t["cls.predictions.decoder.weight"] = t["embeddings.word_embeddings.weight"].copy()
    t["cls.predictions.decoder.bias"] = t["cls.predictions.bias"].copy()
    full = with_prefix(t, "bert.")
    full["bert.embeddings.position_ids"] = np.arange(16, dtype=np.int64).reshape(1, 16)
    files = dict(vocab_files, **{"tokenizer_config.json": '{"do_lower_case": true}\n'})
    d = write_folder("bert_absolute", cfg, full, "F32", files)
    golden(d, cfg, stored(full, "F32"), ids, types, texts, "bert.embeddings.position_embeddings.weight")

    # relative_key, gelu_new, LayerNorm parameters under their old names gamma/beta, no copy
    # of the tied decoder, no tokenizer_config.json (casing inferred from the vocabulary).
    cfg = bert_config(position_embedding_type="relative_key", hidden_act="gelu_new")
    t = bert_tensors(cfg, rng_for("bert_relative_key"), "bert")
    old = collections.OrderedDict()
    for k, v in with_prefix(t, "bert.").items():
        if "LayerNorm" in k:
            k = k.replace(".weight", ".gamma").replace(".bias", ".beta")
        old[k] = v
    d = write_folder("bert_relative_key", cfg, old, "F32", vocab_files)
    golden(d, cfg, stored(old, "F32"), ids, types, texts)

    # relative_key_query (Huang et al.'s method 4), stored as F16.
    cfg = bert_config(position_embedding_type="relative_key_query")
    t = with_prefix(bert_tensors(cfg, rng_for("bert_relative_key_query"), "bert"), "bert.")
    d = write_folder("bert_relative_key_query", cfg, t, "F16", vocab_files)
    golden(d, cfg, stored(t, "F16"), ids, types, texts)

    # BF16, a bare BertModel (no prefix, no MLM head, a pooler): hidden states only.
    cfg = bert_config(architectures=["BertModel"], layer_norm_eps=1e-5)
    rng = rng_for("bert_bf16_bare")
    t = bert_tensors(cfg, rng, "bert", head=False)
    t["pooler.dense.weight"] = normal(rng, 16, 16)
    t["pooler.dense.bias"] = normal(rng, 16)
    d = write_folder("bert_bf16_bare", cfg, t, "BF16", vocab_files)
    golden(d, cfg, stored(t, "BF16"), ids, types, texts, "embeddings.position_embeddings.weight")

    # pytorch_model.bin: a plain dict (which LibTorch 1.13 reads) ...
    cfg = bert_config()
    t = with_prefix(bert_tensors(cfg, rng_for("bert_bin"), "bert"), "bert.")
    d = write_folder("bert_bin", cfg, t, files=vocab_files, bin_kind="dict")
    golden(d, cfg, stored(t, "F32"), ids, types, texts, "bert.embeddings.position_embeddings.weight")
    # ... and the OrderedDict that Hugging Face's save_pretrained writes (which it does not).
    small = collections.OrderedDict(list(t.items())[:3])
    write_folder("bert_bin_ordered", cfg, small, files=vocab_files, bin_kind="ordered")


def make_albert():
    d = os.path.join(OUT, "albert")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    corpus = os.path.join(OUT, "albert_corpus.txt")
    with open(corpus, "w") as f:
        f.write(ALBERT_CORPUS)
    # ALBERT's spiece.model reserves <pad> <unk> [CLS] [SEP] [MASK] as ids 0..4.
    subprocess.run(["spm_train", f"--input={corpus}", f"--model_prefix={d}/spiece",
                    "--vocab_size=60", "--model_type=unigram", "--pad_id=0", "--unk_id=1",
                    "--bos_id=-1", "--eos_id=-1", "--pad_piece=<pad>", "--unk_piece=<unk>",
                    "--control_symbols=[CLS],[SEP],[MASK]", "--character_coverage=1.0",
                    "--hard_vocab_limit=false", "--num_threads=1", "--minloglevel=2",
                    "--normalization_rule_name=identity"],
                   check=True)
    os.remove(corpus)
    with open(f"{d}/spiece.vocab") as f:
        V = sum(1 for _ in f)
    os.remove(f"{d}/spiece.vocab")
    pieces = subprocess.run(["spm_encode", f"--model={d}/spiece.model", "--output_format=id"],
                            input=ALBERT_TEXT, capture_output=True, text=True, check=True)
    ids = [2] + [int(x) for x in pieces.stdout.split()] + [3]
    cfg = {"architectures": ["AlbertForMaskedLM"], "model_type": "albert", "vocab_size": V,
           "embedding_size": 8, "hidden_size": 16, "num_hidden_layers": 3, "num_attention_heads": 2,
           "intermediate_size": 32, "hidden_act": "gelu_new", "max_position_embeddings": 32,
           "type_vocab_size": 2, "layer_norm_eps": 1e-12, "num_hidden_groups": 1,
           "inner_group_num": 1, "pad_token_id": 0}
    rng = rng_for("albert")
    t = bert_tensors(cfg, rng, "albert")
    t["predictions.decoder.weight"] = t["embeddings.word_embeddings.weight"].copy()
    t["predictions.decoder.bias"] = t["predictions.bias"].copy()
    t["pooler.weight"] = normal(rng, 16, 16)
    t["pooler.bias"] = normal(rng, 16)
    t["sop_classifier.classifier.weight"] = normal(rng, 2, 16)
    t["sop_classifier.classifier.bias"] = normal(rng, 2)
    full = with_prefix(t, "albert.")
    spiece = open(f"{d}/spiece.model", "rb").read()
    d = write_folder("albert", cfg, full, "F32", {"spiece.model": spiece})
    golden(d, cfg, stored(full, "F32"), ids, None, {"text": ALBERT_TEXT},
           "albert.embeddings.position_embeddings.weight")


# Byte-level BPE (GPT-2, RoBERTa): every byte symbol, then merges learned on this corpus by
# byte_bpe.py (an independent reference of relpos's tokenizer), then the special tokens.
BPE_CORPUS = ("the cat sat on the mat. the dog's 12 toys aren't here; they'll be there in 2024!\n"
              "The café is naïve about it, isn't it? We've seen 3 cats and I'd say  so.\n") * 3
BPE_MERGES = 48
BPE_TEXT = "The cat's 2 dogs sat."  # the model golden: short enough for 16 positions
# Texts whose ids golden.json keeps for the tokenizer test: contractions, digits, runs of spaces
# and newlines, accents, a combining mark, an emoji (4 UTF-8 bytes), a no-break space, tabs.
BPE_CASES = ["The cat's 2 dogs sat.", "Hello  world, they'll   go!\n\nNew  line\t\tx  ",
             "caf\u00e9 na\u00efve e\u0301t\u00e9 \U0001F642 2024-11-27 ;-) I'M 'quoted'",
             "\u00a0spaced\u3000wide \u0663\u0664 \u2167 x\x1cy", " leading and trailing ", ""]


def bpe_files(specials_first, specials_last):
    """vocab.json (token -> id) and merges.txt of a tiny byte-level BPE."""
    merges = bpe.learn_merges(BPE_CORPUS, BPE_MERGES)
    tokens = list(specials_first) + bpe.byte_symbols_in_vocab_order() + \
        [a + b for a, b in merges] + list(specials_last)
    vocab = {t: i for i, t in enumerate(tokens)}
    assert len(vocab) == len(tokens), "a merge repeated a token"
    merges_txt = "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges)
    ranks = {m: i for i, m in enumerate(merges)}
    cases = [{"text": t, "ids": bpe.encode(t, vocab, ranks)} for t in BPE_CASES]
    return vocab, merges_txt, ranks, cases


def make_roberta():
    vocab, merges_txt, ranks, cases = bpe_files(["<s>", "<pad>", "</s>", "<unk>"], ["<mask>"])
    cfg = {"architectures": ["RobertaForMaskedLM"], "model_type": "roberta",
           "vocab_size": len(vocab), "hidden_size": 16, "num_hidden_layers": 2,
           "num_attention_heads": 2, "intermediate_size": 32, "hidden_act": "gelu",
           "max_position_embeddings": 66, "type_vocab_size": 1, "layer_norm_eps": 1e-5,
           "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2}
    rng = rng_for("roberta")
    t = bert_tensors(cfg, rng, "roberta")
    t["lm_head.decoder.weight"] = t["embeddings.word_embeddings.weight"].copy()
    t["lm_head.decoder.bias"] = t["lm_head.bias"].copy()
    t["pooler.dense.weight"] = normal(rng, 16, 16)
    t["pooler.dense.bias"] = normal(rng, 16)
    full = with_prefix(t, "roberta.")
    full["roberta.embeddings.position_ids"] = np.arange(66, dtype=np.int64).reshape(1, 66)
    files = {"vocab.json": json.dumps(vocab, ensure_ascii=False) + "\n", "merges.txt": merges_txt}
    d = write_folder("roberta", cfg, full, "F32", files)
    # <s> text </s>; no pad id (1): every token gets a position.
    ids = [vocab["<s>"]] + bpe.encode(BPE_TEXT, vocab, ranks) + [vocab["</s>"]]
    golden(d, cfg, stored(full, "F32"), ids, None, {"text": BPE_TEXT, "bpe_cases": cases},
           "roberta.embeddings.position_embeddings.weight", offset=2)


def make_gpt2():
    vocab, merges_txt, ranks, cases = bpe_files([], ["<|endoftext|>"])
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": len(vocab),
           "n_embd": 16, "n_layer": 2, "n_head": 2, "n_inner": None, "n_positions": 16,
           "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5}
    t = gpt2_tensors(cfg, rng_for("gpt2"))
    full = with_prefix(t, "transformer.")
    full["lm_head.weight"] = t["wte.weight"].copy()
    files = {"vocab.json": json.dumps(vocab, ensure_ascii=False) + "\n", "merges.txt": merges_txt}
    d = write_folder("gpt2", cfg, full, "F32", files)
    ids = bpe.encode(BPE_TEXT, vocab, ranks)
    golden(d, cfg, stored(full, "F32"), ids, None, {"text": BPE_TEXT, "bpe_cases": cases},
           "transformer.wpe.weight")


def main():
    """All folders, or those named on the command line (bert, albert, roberta, gpt2)."""
    os.makedirs(OUT, exist_ok=True)
    makers = {"bert": make_bert, "albert": make_albert, "roberta": make_roberta, "gpt2": make_gpt2}
    for name in sys.argv[1:] or makers:
        makers[name]()
    print("wrote", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
