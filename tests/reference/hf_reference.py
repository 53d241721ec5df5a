#!/usr/bin/env python3
"""Independent reference for relpos's Hugging Face import and export (docs/pretrained.md).

Written from the published architectures and the safetensors format description, with numpy
only, in float64; it shares no code with relpos. It provides:

  * a safetensors reader that checks the file against the format (8-byte little-endian header
    length, a JSON header of {name: {dtype, shape, data_offsets}} and optional __metadata__, the
    tensors tiling the data without gaps or overlaps) and a writer;
  * the forward pass of BERT (absolute, relative_key, relative_key_query), ALBERT, RoBERTa and
    GPT-2 from a model folder's config.json and weights: final hidden states and LM logits;
  * translation invariance of a matrix as docs/analysis.md defines it.

Command line (used by the C++ tests at run time, /usr/bin/python3 with numpy):
  hf_reference.py forward DIR --ids 2,7,9 [--types 0,0,1]   JSON {"hidden": [[...]], "logits": ...}
  hf_reference.py check DIR        validates an exported BertForMaskedLM folder; exit 1 + reason
make_hf_checkpoints.py uses it to write the committed fixtures and golden outputs.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

DTYPES = {"F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": (None, 2),
          "I64": ("<i8", 8), "I32": ("<i4", 4), "I16": ("<i2", 2), "I8": ("i1", 1),
          "U8": ("u1", 1), "BOOL": ("?", 1)}


class FormatError(Exception):
    pass


# ---------------------------------------------------------------- safetensors

def read_safetensors(path):
    """(tensors as float64 or integer numpy arrays, metadata); raises FormatError."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise FormatError(f"{path}: {len(raw)} bytes, no room for the header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise FormatError(f"{path}: header length {n} runs past the file ({len(raw)} bytes)")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError(f"{path}: header is not JSON: {e}")
    if not isinstance(header, dict):
        raise FormatError(f"{path}: header is not a JSON object")
    data = raw[8 + n:]
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and
                                 all(isinstance(v, str) for v in meta.values())):
        raise FormatError(f"{path}: __metadata__ must map strings to strings")
    spans, out = [], {}
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) - {"dtype", "shape", "data_offsets"} or len(e) != 3:
            raise FormatError(f"{path}: {name}: entry must have exactly dtype, shape, data_offsets")
        dt, shape, off = e["dtype"], e["shape"], e["data_offsets"]
        if dt not in DTYPES:
            raise FormatError(f"{path}: {name}: unknown dtype {dt!r}")
        if not (isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)):
            raise FormatError(f"{path}: {name}: bad shape {shape!r}")
        if not (isinstance(off, list) and len(off) == 2 and all(isinstance(o, int) for o in off)
                and 0 <= off[0] <= off[1] <= len(data)):
            raise FormatError(f"{path}: {name}: bad data_offsets {off!r} (data is {len(data)} bytes)")
        count = int(np.prod(shape)) if shape else 1
        if count * DTYPES[dt][1] != off[1] - off[0]:
            raise FormatError(f"{path}: {name}: {off[1] - off[0]} bytes for {dt} {shape}")
        spans.append((off[0], off[1], name))
        buf = data[off[0]:off[1]]
        if dt == "BF16":
            bits = np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16
            arr = bits.view(np.float32).astype(np.float64)
        else:
            arr = np.frombuffer(buf, dtype=DTYPES[dt][0])
            arr = arr.astype(np.float64) if dt.startswith("F") else arr.copy()
        out[name] = arr.reshape(shape)
    end = 0
    for b, e, name in sorted(spans):
        if b != end:
            raise FormatError(f"{path}: {name} starts at {b}, expected {end} (gap or overlap)")
        end = e
    if end != len(data):
        raise FormatError(f"{path}: {len(data) - end} bytes after the last tensor")
    return out, meta


def bf16_bits(x):
    """float32 -> bfloat16 bit patterns, round to nearest even."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_round(x):
    return (bf16_bits(x).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def write_safetensors(path, tensors, dtype="F32", metadata=None):
    """tensors: list of (name, array); floats stored as `dtype`, integer arrays as I64/U8."""
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, a in tensors:
        a = np.asarray(a)
        if a.dtype.kind in "iu":
            dt, blob = ("U8", a.astype("u1").tobytes()) if a.dtype == np.uint8 else \
                ("I64", a.astype("<i8").tobytes())
        elif dtype == "BF16":
            dt, blob = "BF16", bf16_bits(a).astype("<u2").tobytes()
        else:
            dt, blob = dtype, a.astype(DTYPES[dtype][0]).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


# ---------------------------------------------------------------- building blocks

def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


_erf = np.vectorize(math.erf)


def activation(name):
    if name == "gelu":  # exact: x Phi(x)
        return lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_pytorch_tanh"):  # tanh approximation
        return lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    raise ValueError(f"activation {name}")


def linear(x, w, b):  # PyTorch Linear: w is (out, in)
    return x @ w.T + b


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def heads(x, h):  # (T, D) -> (H, T, d)
    t, d = x.shape
    return x.reshape(t, h, d // h).transpose(1, 0, 2)


def merge(x):  # (H, T, d) -> (T, D)
    h, t, d = x.shape
    return x.transpose(1, 0, 2).reshape(t, h * d)


class Weights:
    """Lookup by the architecture's name, with or without the base prefix, old gamma/beta names."""

    def __init__(self, tensors, prefix):
        self.t = {}
        for k, v in tensors.items():
            n = k[len(prefix):] if k.startswith(prefix) else k
            if n.endswith(".gamma"):
                n = n[:-6] + ".weight"
            if n.endswith(".beta"):
                n = n[:-5] + ".bias"
            self.t[n] = v

    def __getitem__(self, k):
        return self.t[k]

    def __contains__(self, k):
        return k in self.t


# ---------------------------------------------------------------- the architectures

def self_attention(x, q, k, v, h, pos_type=None, dist=None, max_pos=None, causal=False,
                   scale_relative=True):
    Q, K, V = heads(q, h), heads(k, h), heads(v, h)  # (H, T, d)
    d = Q.shape[-1]
    s = Q @ K.transpose(0, 2, 1)  # (H, T, T)
    if pos_type in ("relative_key", "relative_key_query"):
        t = x.shape[0]
        i = np.arange(t)[:, None]
        j = np.arange(t)[None, :]
        E = dist[(i - j) + max_pos - 1]  # (T, T, d): the row of query - key
        s = s + np.einsum("hid,ijd->hij", Q, E)
        if pos_type == "relative_key_query":
            s = s + np.einsum("hjd,ijd->hij", K, E)
    s = s / math.sqrt(d)
    if causal:
        t = x.shape[0]
        s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
    return merge(softmax(s) @ V)


def bert_like(cfg, W, ids, types, arch):
    """BERT / RoBERTa / ALBERT encoders (post-LN). Returns (hidden, logits or None)."""
    eps = cfg.get("layer_norm_eps", 1e-12)
    act = activation(cfg.get("hidden_act", "gelu_new" if arch == "albert" else "gelu"))
    h = cfg["num_attention_heads"]
    pos_type = cfg.get("position_embedding_type", "absolute")
    t = len(ids)
    pos = np.arange(t)
    if arch == "roberta":  # positions count from pad_token_id + 1
        pos = pos + cfg.get("pad_token_id", 1) + 1
    x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.token_type_embeddings.weight"][types]
    if pos_type == "absolute":
        x = x + W["embeddings.position_embeddings.weight"][pos]
    x = layer_norm(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
    if arch == "albert":
        x = linear(x, W["encoder.embedding_hidden_mapping_in.weight"],
                   W["encoder.embedding_hidden_mapping_in.bias"])
    for layer in range(cfg["num_hidden_layers"]):
        if arch == "albert":
            p = "encoder.albert_layer_groups.0.albert_layers.0."
            n = {"q": "attention.query", "k": "attention.key", "v": "attention.value",
                 "o": "attention.dense", "ln1": "attention.LayerNorm", "i": "ffn",
                 "o2": "ffn_output", "ln2": "full_layer_layer_norm"}
        else:
            p = f"encoder.layer.{layer}."
            n = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
                 "o": "attention.output.dense", "ln1": "attention.output.LayerNorm",
                 "i": "intermediate.dense", "o2": "output.dense", "ln2": "output.LayerNorm"}
        lin = lambda inp, key: linear(inp, W[p + n[key] + ".weight"], W[p + n[key] + ".bias"])
        dist = W[p + "attention.self.distance_embedding.weight"] if pos_type != "absolute" else None
        z = self_attention(x, lin(x, "q"), lin(x, "k"), lin(x, "v"), h, pos_type, dist,
                           cfg.get("max_position_embeddings"))
        x = layer_norm(x + lin(z, "o"), W[p + n["ln1"] + ".weight"], W[p + n["ln1"] + ".bias"], eps)
        f = lin(act(lin(x, "i")), "o2")
        x = layer_norm(x + f, W[p + n["ln2"] + ".weight"], W[p + n["ln2"] + ".bias"], eps)
    head = {"bert": ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                     "cls.predictions.bias"),
            "roberta": ("lm_head.dense", "lm_head.layer_norm", "lm_head.bias"),
            "albert": ("predictions.dense", "predictions.LayerNorm", "predictions.bias")}[arch]
    if head[0] + ".weight" not in W:
        return x, None
    y = act(linear(x, W[head[0] + ".weight"], W[head[0] + ".bias"]))
    y = layer_norm(y, W[head[1] + ".weight"], W[head[1] + ".bias"], eps)
    return x, y @ W["embeddings.word_embeddings.weight"].T + W[head[2]]


def gpt2(cfg, W, ids):
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    act = activation(cfg.get("activation_function", "gelu_new"))
    h, D = cfg["n_head"], cfg["n_embd"]
    x = W["wte.weight"][ids] + W["wpe.weight"][np.arange(len(ids))]
    for layer in range(cfg["n_layer"]):
        p = f"h.{layer}."
        a = layer_norm(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"], eps)
        qkv = a @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]  # Conv1D: (in, out)
        z = self_attention(a, qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:], h, causal=True)
        x = x + z @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        m = layer_norm(x, W[p + "ln_2.weight"], W[p + "ln_2.bias"], eps)
        x = x + act(m @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"]) @ W[p + "mlp.c_proj.weight"] \
            + W[p + "mlp.c_proj.bias"]
    x = layer_norm(x, W["ln_f.weight"], W["ln_f.bias"], eps)
    return x, x @ W["wte.weight"].T


PREFIX = {"bert": "bert.", "roberta": "roberta.", "albert": "albert.", "gpt2": "transformer."}


def forward(cfg, tensors, ids, types=None):
    arch = cfg["model_type"]
    W = Weights(tensors, PREFIX[arch])
    ids = np.asarray(ids)
    if arch == "gpt2":
        return gpt2(cfg, W, ids)
    types = np.zeros_like(ids) if types is None else np.asarray(types)
    return bert_like(cfg, W, ids, types, arch)


def load_folder(d):
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    tensors, meta = read_safetensors(os.path.join(d, "model.safetensors"))
    return cfg, tensors, meta


def invariance(a):
    """1 - ||A - Toeplitz(diagonal means)||^2 / ||A - mean(A)||^2 (docs/analysis.md)."""
    a = np.asarray(a, dtype=np.float64)
    n = a.shape[0]
    toeplitz = np.zeros_like(a)
    for k in range(-(n - 1), n):
        diag = np.diagonal(a, offset=k)
        idx = np.arange(len(diag))
        r, c = (idx, idx + k) if k >= 0 else (idx - k, idx)
        toeplitz[r, c] = diag.mean()
    den = ((a - a.mean()) ** 2).sum()
    if den <= 1e-12 * (a ** 2).sum():
        return 1.0
    return 1.0 - ((a - toeplitz) ** 2).sum() / den


# ---------------------------------------------------------------- checking an exported folder

def bert_mlm_names(cfg):
    """The tensors BertForMaskedLM with this config holds (decoder.weight/bias are tied copies)."""
    b = "bert."
    names = [b + "embeddings." + n + ".weight" for n in
             ("word_embeddings", "position_embeddings", "token_type_embeddings")]
    names += [b + "embeddings.LayerNorm.weight", b + "embeddings.LayerNorm.bias"]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"{b}encoder.layer.{layer}."
        for m in ("attention.self.query", "attention.self.key", "attention.self.value",
                  "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
                  "output.dense", "output.LayerNorm"):
            names += [p + m + ".weight", p + m + ".bias"]
        if cfg.get("position_embedding_type", "absolute") != "absolute":
            names.append(p + "attention.self.distance_embedding.weight")
    names += ["cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
              "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias",
              "cls.predictions.bias"]
    return names


def check_folder(d):
    cfg, tensors, meta = load_folder(d)
    if not meta or meta.get("format") != "pt":
        raise FormatError(f"{d}: __metadata__ format must be 'pt' (Hugging Face refuses others)")
    if cfg.get("model_type") != "bert" or cfg.get("architectures") != ["BertForMaskedLM"]:
        raise FormatError(f"{d}: config.json is not a BertForMaskedLM config")
    want = set(bert_mlm_names(cfg))
    have = set(tensors)
    tied = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
    if want - have:
        raise FormatError(f"{d}: missing {sorted(want - have)}")
    if have - want - tied:
        raise FormatError(f"{d}: unexpected {sorted(have - want - tied)}")
    V, D, M = cfg["vocab_size"], cfg["hidden_size"], cfg["max_position_embeddings"]
    d_head = D // cfg["num_attention_heads"]
    shapes = {"bert.embeddings.word_embeddings.weight": (V, D),
              "bert.embeddings.position_embeddings.weight": (M, D),
              "bert.embeddings.token_type_embeddings.weight": (cfg["type_vocab_size"], D),
              "bert.encoder.layer.0.intermediate.dense.weight": (cfg["intermediate_size"], D),
              "cls.predictions.bias": (V,)}
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        shapes["bert.encoder.layer.0.attention.self.distance_embedding.weight"] = (2 * M - 1, d_head)
    for name, shape in shapes.items():
        if tensors[name].shape != shape:
            raise FormatError(f"{d}: {name} has shape {tensors[name].shape}, config.json needs {shape}")
    if "cls.predictions.decoder.weight" in have and not np.array_equal(
            tensors["cls.predictions.decoder.weight"], tensors["bert.embeddings.word_embeddings.weight"]):
        raise FormatError(f"{d}: cls.predictions.decoder.weight is not tied to the word embeddings")
    vocab = os.path.join(d, "vocab.txt")
    if os.path.exists(vocab):
        with open(vocab, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) != V:
            raise FormatError(f"{vocab}: {len(lines)} tokens, config.json says vocab_size {V}")


def ints(text):
    return [int(x) for x in text.split(",")] if text else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("forward")
    f.add_argument("dir")
    f.add_argument("--ids", required=True)
    f.add_argument("--types", default="")
    c = sub.add_parser("check")
    c.add_argument("dir")
    a = ap.parse_args()
    try:
        if a.cmd == "check":
            check_folder(a.dir)
            print("ok")
        else:
            cfg, tensors, _ = load_folder(a.dir)
            hidden, logits = forward(cfg, tensors, ints(a.ids), ints(a.types))
            print(json.dumps({"hidden": hidden.tolist(),
                              "logits": None if logits is None else logits.tolist()}))
    except FormatError as e:
        print(f"invalid: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
