#!/usr/bin/python3
"""PyTorch's results for exec's kernels of today's transformer ops: the
reference that exec/kernels/cpu_llm_kernels_test.cc checks the CPU kernels
against (CI does not need PyTorch).

Run with Debian's Python, which has PyTorch (python3-torch):
    /usr/bin/python3 scripts/exec_kernel_fixtures.py [exec/kernels/testdata/llm_kernels.json]

Each case holds float32 inputs, the output gradient dy, PyTorch's output y
and the input gradients autograd gives for L = sum(y * dy), computed in
float64 from the float32 inputs (so the reference carries no float32
rounding of its own). The ops are written as the libraries that run them
write them: SiLU and sigmoid by torch.nn.functional; RMS norm as Llama's
RMSNorm (x * rsqrt(mean(x^2) + eps) * weight, Meta's llama/model.py);
rotary embedding as Hugging Face's Llama (rotate_half, inv_freq =
1 / 10000^(2i/d), cos and sin of cat(freqs, freqs)); the gate times its
input as a broadcast product; attention as softmax(q k^T / sqrt(d)) v with
repeated key/value heads and a causal mask.
"""
import json
import sys

import torch

torch.manual_seed(20261207)


def f32(shape, lo=-2.0, hi=2.0):
    return (torch.rand(*shape) * (hi - lo) + lo).float()


def run(fn, inputs, dy):
    xs = [x.double().requires_grad_(True) for x in inputs]
    y = fn(*xs)
    (y * dy.double()).sum().backward()
    return y.detach(), [x.grad for x in xs]


def flat(t):
    return [float(v) for v in t.reshape(-1).tolist()]


def case(name, fn, inputs, extra=None):
    y_shape = fn(*[x.double() for x in inputs]).shape
    dy = f32(y_shape)
    y, grads = run(fn, inputs, dy)
    c = {"name": name, "inputs": [flat(x) for x in inputs],
         "input_shapes": [list(x.shape) for x in inputs], "dy": flat(dy), "y": flat(y),
         "grads": [flat(g) for g in grads]}
    c.update(extra or {})
    return c


def rms_norm(x, w, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotary(x):
    n, s, d = x.shape
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(s, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    half = d // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * emb.cos() + rotated * emb.sin()


def attention(q, k, v, causal=True):
    """Softmax attention written out (PyTorch 1.13 has no
    scaled_dot_product_attention): key/value heads repeated for the query
    heads that share them (Hugging Face's repeat_kv), scores scaled by
    1 / sqrt(d), future keys masked."""
    n, heads, s, d = q.shape
    group = heads // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = q @ k.transpose(-1, -2) / d ** 0.5
    if causal:
        mask = torch.ones(s, s, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(-1) @ v


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "exec/kernels/testdata/llm_kernels.json"
    cases = [
        case("sigmoid", torch.sigmoid, [f32((37,), -6, 6)]),
        case("silu", torch.nn.functional.silu, [f32((37,), -6, 6)]),
        case("rms_norm", lambda x, w: rms_norm(x, w), [f32((4, 16)), f32((16,), 0.5, 1.5)],
             {"eps": 1e-5}),
        case("rotary", rotary, [f32((2, 5, 8))]),
        case("mul", lambda a, b: a * b, [f32((3, 6)), f32((3, 6))], {"broadcast": "none"}),
        case("mul_per_row", lambda a, b: a * b, [f32((3, 6)), f32((3, 1))],
             {"broadcast": "per_row"}),
        case("mul_per_column", lambda a, b: a * b, [f32((3, 6)), f32((1, 6))],
             {"broadcast": "per_column"}),
        case("attention_gqa_causal", attention,
             [f32((2, 4, 6, 8)), f32((2, 2, 6, 8)), f32((2, 2, 6, 8))], {"causal": True}),
        case("attention_full", lambda q, k, v: attention(q, k, v, causal=False),
             [f32((1, 2, 5, 4)), f32((1, 2, 5, 4)), f32((1, 2, 5, 4))], {"causal": False}),
    ]
    doc = {"generator": "scripts/exec_kernel_fixtures.py", "torch": torch.__version__,
           "cases": cases}
    with open(out, "w") as f:
        json.dump(doc, f, indent=0)
        f.write("\n")
    print("wrote", out, "with", len(cases), "cases (torch", torch.__version__ + ")")


if __name__ == "__main__":
    main()
