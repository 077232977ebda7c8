#!/usr/bin/python3
"""A small Llama-style decoder trained by PyTorch for a few SGD steps: the
real-framework reference that exec/runtime/torch_reference_test.cc trains
`dtsim exec`'s ModelRuntime against, from the same weights and tokens
(CI reads the committed output; it does not need PyTorch).

Run with Debian's Python, which has PyTorch (python3-torch):
    /usr/bin/python3 scripts/torch_llama_reference.py [exec/runtime/testdata/torch_llama_sgd.json]

The model is written as Meta's llama/model.py and Hugging Face's Llama
write it: RMSNorm (eps 1e-5) before attention and MLP, one fused qkv
projection (q, then k, then v columns), rotary positions in the rotate-half
layout (base 10000) on q and k, key/value heads repeated for the query heads
that share them (repeat_interleave), causal softmax(q k^T / sqrt(d)) v,
SwiGLU MLP (fc1 gives gate then up; silu(gate) * up; fc2), a final RMSNorm,
an untied LM head, and the mean cross entropy over every token. No biases,
no dropout. Weights: normal(0, 0.2), norm gains 1 + normal(0, 0.1), seeded;
tokens uniform, each label the next token. Plain SGD, lr 0.5, float32.
Writes every weight under dtsim's op name (`dtsim model` lists them), the
tokens and labels of each step, and PyTorch's loss before each update.
"""
import json
import sys

import torch

LAYERS, HIDDEN, HEADS, KV_HEADS, FFN, SEQ, VOCAB = 2, 16, 4, 2, 32, 8, 16
BATCH, STEPS, LR, EPS = 2, 8, 0.5, 1e-5
HEAD = HIDDEN // HEADS


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


def rotary(x):  # (batch, heads, seq, head)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD, 2, dtype=torch.float32) / HEAD))
    freqs = torch.outer(torch.arange(SEQ, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    half = HEAD // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * emb.cos() + rotated * emb.sin()


def forward(p, tokens):
    x = p["embed.tokens"][tokens]  # (batch, seq, hidden)
    mask = torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1)
    for layer in range(LAYERS):
        a = f"layer{layer}."
        h = rms_norm(x, p[a + "attn.ln"])
        qkv = h @ p[a + "attn.qkv"].T
        q, k, v = qkv.split([HIDDEN, KV_HEADS * HEAD, KV_HEADS * HEAD], dim=-1)
        q = q.view(BATCH, SEQ, HEADS, HEAD).transpose(1, 2)
        k = k.view(BATCH, SEQ, KV_HEADS, HEAD).transpose(1, 2)
        v = v.view(BATCH, SEQ, KV_HEADS, HEAD).transpose(1, 2)
        q, k = rotary(q), rotary(k)
        k = k.repeat_interleave(HEADS // KV_HEADS, dim=1)
        v = v.repeat_interleave(HEADS // KV_HEADS, dim=1)
        scores = (q @ k.transpose(-1, -2) / HEAD ** 0.5).masked_fill(mask, float("-inf"))
        ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(BATCH, SEQ, HIDDEN)
        x = x + ctx @ p[a + "attn.proj"].T
        h = rms_norm(x, p[a + "mlp.ln"])
        gate, up = (h @ p[a + "mlp.fc1"].T).split([FFN, FFN], dim=-1)
        x = x + (torch.nn.functional.silu(gate) * up) @ p[a + "mlp.fc2"].T
    logits = rms_norm(x, p["final_ln"]) @ p["lm_head"].T
    return logits


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "exec/runtime/testdata/torch_llama_sgd.json"
    g = torch.Generator().manual_seed(47)
    shapes = {"embed.tokens": (VOCAB, HIDDEN), "final_ln": (HIDDEN,), "lm_head": (VOCAB, HIDDEN)}
    for layer in range(LAYERS):
        a = f"layer{layer}."
        shapes[a + "attn.ln"] = (HIDDEN,)
        shapes[a + "attn.qkv"] = (HIDDEN + 2 * KV_HEADS * HEAD, HIDDEN)
        shapes[a + "attn.proj"] = (HIDDEN, HIDDEN)
        shapes[a + "mlp.ln"] = (HIDDEN,)
        shapes[a + "mlp.fc1"] = (2 * FFN, HIDDEN)
        shapes[a + "mlp.fc2"] = (HIDDEN, FFN)
    params = {}
    for name, shape in shapes.items():
        if len(shape) == 1:
            w = 1 + 0.1 * torch.randn(shape, generator=g)
        else:
            w = 0.2 * torch.randn(shape, generator=g)
        params[name] = w.float().requires_grad_(True)
    initial = {n: [float(v) for v in w.detach().reshape(-1)] for n, w in params.items()}
    steps = []
    for _ in range(STEPS):
        seq = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=g)
        tokens, labels = seq[:, :-1], seq[:, 1:]
        logits = forward(params, tokens)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))
        for w in params.values():
            w.grad = None
        loss.backward()
        with torch.no_grad():
            for w in params.values():
                w -= LR * w.grad
        steps.append({"tokens": tokens.reshape(-1).tolist(), "labels": labels.reshape(-1).tolist(),
                      "loss": float(loss)})
    doc = {"generator": "scripts/torch_llama_reference.py", "torch": torch.__version__,
           "model": {"layers": LAYERS, "hidden": HIDDEN, "heads": HEADS, "kv_heads": KV_HEADS,
                     "ffn_hidden": FFN, "sequence": SEQ, "vocab": VOCAB},
           "batch": BATCH, "lr": LR, "params": initial, "steps": steps}
    with open(out, "w") as f:
        json.dump(doc, f, indent=0)
        f.write("\n")
    print("wrote", out, "losses", " ".join(f"{s['loss']:.4f}" for s in steps))


if __name__ == "__main__":
    main()
