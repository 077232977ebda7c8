#!/usr/bin/python3
"""Writes the ONNX files of models/testdata/onnx/ with the real exporter.

Run with Debian's Python, which has PyTorch:

    /usr/bin/python3 scripts/onnx_fixtures.py [models/testdata/onnx]

The committed files were made with Debian 12's python3-torch 1.13.1,
python3-torchvision 0.14.1 and python3-onnx 1.12.0 (the versions are also
written to manifest.json). Each model is exported by `torch.onnx.export`
at batch 1:

- in training mode, as dtsim needs it (`model.train()`,
  `training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False`),
  at opsets 13 and 17, for every model;
- in eval mode with the exporter's defaults (BatchNorm folded into the
  convolutions), at opsets 13 and 17, for resnet18 and resnet50.

The weights are stripped so that the files stay small: integer and boolean
tensors and float tensors of at most 64 elements keep their values, the
other float tensors keep their dimensions and type with empty data (dtsim
never reads weight values). `onnx.load` and `onnx.checker` still read the
stripped files.

manifest.json gives, per file, PyTorch's parameter count
`sum(p.numel() for p in model.parameters())` and an independent forward
FLOP count: `torch.profiler.profile(with_flops=True)` over one forward pass
in training mode, summing the FLOPs the profiler reports for aten::conv2d,
addmm, mm, bmm and matmul (2 FLOPs per multiply-add), skipping an event
inside another that already reports FLOPs, so that nothing is counted twice
(the profiler gives aten::matmul no FLOPs and counts the mm or bmm it calls).
"""
import json
import math
import os
import sys

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

SEQ = 128  # sequence length of the transformers


class BertEncoder(nn.Module):
    """BERT-base's shape on nn.TransformerEncoder: token, position and
    token-type tables, embedding LayerNorm, 12 post-LN layers of d_model 768,
    12 heads, ff 3072 (GELU), a pooler (first token, dense, tanh) and a
    2-class head."""

    def __init__(self, vocab=30522, positions=512, d=768, heads=12, ff=3072, layers=12):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(positions, d)
        self.token_types = nn.Embedding(2, d)
        self.norm = nn.LayerNorm(d, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, activation="gelu",
                                           batch_first=True, layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.pooler = nn.Linear(d, d)
        self.classifier = nn.Linear(d, 2)
        self.register_buffer("position_ids", torch.arange(positions).unsqueeze(0))

    def forward(self, ids):
        s = ids.size(1)
        x = self.tokens(ids) + self.positions(self.position_ids[:, :s]) + \
            self.token_types(torch.zeros_like(ids))
        x = self.dropout(self.norm(x))
        x = self.encoder(x)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(self.dropout(pooled))


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.attn_dropout = nn.Dropout(0.1)
        self.resid_dropout = nn.Dropout(0.1)
        self.heads = heads
        self.register_buffer("bias", torch.tril(torch.ones(block, block, dtype=torch.bool))
                             .view(1, 1, block, block))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.bias[:, :, :t, :t], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, block)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d),
                                 nn.Dropout(0.1))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt2(nn.Module):
    """GPT-2 small as nanoGPT writes it (token and position tables, pre-LN
    blocks with a causal mask buffer, final LayerNorm, LM head tied to the
    token table), with a block size of SEQ so that the mask buffer stays
    small."""

    def __init__(self, vocab=50257, block=SEQ, d=768, heads=12, layers=12):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([Block(d, heads, block) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class LstmLm(nn.Module):
    """A 2-layer LSTM language model (Zaremba et al.'s medium PTB model):
    embedding 650, LSTM 650 x 2 layers, decoder to the 10,000 words."""

    def __init__(self, vocab=10000, d=650, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.drop = nn.Dropout(0.5)
        # No dropout between the LSTM layers: torch 1.13 cannot export it in
        # training mode.
        self.lstm = nn.LSTM(d, d, num_layers=layers, batch_first=True)
        self.decoder = nn.Linear(d, vocab)

    def forward(self, ids):
        y, _ = self.lstm(self.drop(self.embed(ids)))
        return self.decoder(self.drop(y))


def image():
    return torch.randn(1, 3, 224, 224)


def tokens(vocab, length=SEQ):
    return torch.randint(0, vocab, (1, length))


def models():
    tv = torchvision.models
    return [
        ("resnet18", lambda: tv.resnet18(weights=None), image, True),
        ("resnet50", lambda: tv.resnet50(weights=None), image, True),
        ("vgg16", lambda: tv.vgg16(weights=None), image, False),
        ("mobilenet_v2", lambda: tv.mobilenet_v2(weights=None), image, False),
        ("densenet121", lambda: tv.densenet121(weights=None), image, False),
        # Stochastic depth off: torch 1.13 cannot export its in-place
        # bernoulli_ in training mode (it is an identity at inference).
        ("efficientnet_b0", lambda: tv.efficientnet_b0(weights=None, stochastic_depth_prob=0.0),
         image, False),
        ("vit_b_16", lambda: tv.vit_b_16(weights=None), image, False),
        ("bert_base_encoder", BertEncoder, lambda: tokens(30522), False),
        ("gpt2_small", Gpt2, lambda: tokens(50257), False),
        ("lstm_lm", LstmLm, lambda: tokens(10000, 35), False),
    ]


GEMM_OPS = {"aten::conv2d", "aten::addmm", "aten::mm", "aten::bmm", "aten::matmul"}


def profiled_flops(model, x):
    """Forward FLOPs of the GEMM-like aten ops, outermost events only."""
    with torch.profiler.profile(with_flops=True) as prof:
        model(x)
    total = 0
    for e in prof.events():
        if e.name not in GEMM_OPS or not e.flops:
            continue
        parent = e.cpu_parent
        nested = False
        while parent is not None:
            if parent.name in GEMM_OPS and parent.flops:
                nested = True
                break
            parent = parent.cpu_parent
        if not nested:
            total += e.flops
    return int(total)


def strip(path):
    m = onnx.load(path)
    tensors = list(m.graph.initializer)
    for node in m.graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                tensors.append(a.t)
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
              onnx.TensorProto.BFLOAT16}
    for node in m.graph.node:
        node.doc_string = ""
    for t in tensors:
        if t.data_type in floats and math.prod(t.dims) > 64:
            t.ClearField("float_data")
            t.ClearField("double_data")
            t.raw_data = b""
    onnx.save(m, path)
    onnx.load(path)  # still readable


def export(model, x, path, opset, training):
    if training:
        torch.onnx.export(model.train(), x, path, opset_version=opset,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    else:
        torch.onnx.export(model.eval(), x, path, opset_version=opset)
    strip(path)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "models/testdata/onnx"
    only = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    manifest_path = os.path.join(out, "manifest.json")
    manifest = {
        "generator": "scripts/onnx_fixtures.py",
        "versions": {"torch": torch.__version__, "torchvision": torchvision.__version__,
                     "onnx": onnx.__version__},
        "params": "sum(p.numel() for p in model.parameters())",
        "forward_flops": "torch.profiler.profile(with_flops=True), one forward pass in training "
                         "mode at batch 1, FLOPs of aten::conv2d/addmm/mm/bmm/matmul (2 per "
                         "multiply-add), an event inside one that already reports FLOPs skipped",
        "files": {},
    }
    if only and os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest["files"] = json.load(f)["files"]
    torch.manual_seed(0)
    for name, make, inp, eval_too in models():
        if only and name not in only:
            continue
        model = make()
        x = inp()
        params = sum(p.numel() for p in model.parameters())
        flops = profiled_flops(model.train(), x)
        modes = [("train", True)] + ([("eval", False)] if eval_too else [])
        for mode, training in modes:
            for opset in (13, 17):
                file = f"{name}_{mode}_op{opset}.onnx"
                export(model, x, os.path.join(out, file), opset, training)
                manifest["files"][file] = {"model": name, "opset": opset, "mode": mode,
                                           "params": params, "forward_flops": flops}
                print(file, params, flops, os.path.getsize(os.path.join(out, file)), flush=True)
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
