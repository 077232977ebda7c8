#!/usr/bin/python3
"""Host time PyTorch eager spends per op of a GPT layer, measured on this machine.

A Megatron-style GPT layer (pre-LN attention and MLP, the op sequence of
dtsim's transformer layer: models/transformer_blocks.cc) runs forward and
backward on tensors so small (hidden 8, sequence 4, batch 1) that the
arithmetic is negligible and the time is PyTorch's own: Python, nn.Module
calls, the dispatcher and autograd. Each layer runs under
torch.utils.checkpoint (activation recomputation, as Megatron's
--checkpoint-activations), so one step is forward, recomputed forward and
backward, as dtsim schedules it with recompute: full.

A stack of ResNet basic blocks on a 1 x 4 x 4 x 4 input does the same for
a convolutional network (forward and backward, no recomputation).

Prints JSON: seconds per layer for the forward alone and for the whole
step, and the host seconds per op and pass that dtsim's framework key
per_op needs for its host model to spend the same time on the layer.

Usage: /usr/bin/python3 scripts/torch_host_overhead.py [--layers 24] [--steps 50]
"""
import argparse
import json
import math
import os
import platform
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as cp


class Attention(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):  # x: [s, b, h] as Megatron lays it out
        s, b, h = x.shape
        y = self.ln(x)
        qkv = self.qkv(y)
        q, k, v = qkv.split(h, dim=-1)  # q_slice, k_slice, v_slice
        d = h // self.heads
        q = q.reshape(s, b * self.heads, d).transpose(0, 1)
        k = k.reshape(s, b * self.heads, d).transpose(0, 1)
        v = v.reshape(s, b * self.heads, d).transpose(0, 1)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d)
        probs = self.drop(F.softmax(scores, dim=-1))
        ctx = torch.bmm(probs, v).transpose(0, 1).reshape(s, b, h)
        return x + self.drop(self.proj(ctx))


class Mlp(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.ln = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln(x)))))


class Block(nn.Module):
    """A ResNet basic block: conv, bn, relu, conv, bn, add, relu (7 ops)."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class Layer(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.attn = Attention(h, heads)
        self.mlp = Mlp(h)

    def forward(self, x):
        return self.mlp(self.attn(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    h, heads, s, b = 8, 2, 4, 1
    layers = nn.ModuleList(Layer(h, heads) for _ in range(args.layers))
    x0 = torch.randn(s, b, h, requires_grad=True)

    def forward(recompute):
        x = x0
        for layer in layers:
            x = cp.checkpoint(layer, x) if recompute else layer(x)
        return x

    def timed(fn):
        times = []
        for i in range(args.warmup + args.steps):
            t = time.process_time()
            fn()
            if i >= args.warmup:
                times.append(time.process_time() - t)
        return statistics.median(times)

    with torch.no_grad():
        fwd = timed(lambda: forward(False))
    step = timed(lambda: forward(True).sum().backward())

    blocks = nn.Sequential(*(Block(4) for _ in range(args.layers)))
    xc = torch.randn(1, 4, 4, 4, requires_grad=True)
    with torch.no_grad():
        cnn_fwd = timed(lambda: blocks(xc))
    cnn_step = timed(lambda: blocks(xc).sum().backward())

    # dtsim's transformer layer (dtsim model gpt2) has 22 ops: ln, qkv,
    # 3 x (slice, heads reshape), scores, softmax, dropout, context,
    # merge_heads, proj, dropout, residual; ln, fc1, gelu, fc2, dropout,
    # residual. Its host model (sim/cost/host_costs.h) charges per_op to the ops
    # that launch kernels: not the 7 reshapes (plan::IsFreeOp), and not the
    # 2 residual adds where the profile fuses them (megatron-lm): 13 ops, 15
    # without fusion. A step with recompute: full runs each 3 times (forward,
    # recomputed forward, backward). The ResNet block's 7 ops are all
    # charged, twice per step (forward, backward).
    out = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                     if l.startswith("model name")), platform.processor()),
        "threads": torch.get_num_threads(),
        "clock": "process CPU time (time.process_time), median of the steps",
        "layers": args.layers,
        "steps": args.steps,
        "gpt_layer": {
            "forward_s": fwd / args.layers,
            "step_with_recompute_s": step / args.layers,
            "per_op_and_pass_s_megatron": step / args.layers / (3 * 13),
            "per_op_and_pass_s_unfused": step / args.layers / (3 * 15),
        },
        "resnet_block": {
            "forward_s": cnn_fwd / args.layers,
            "step_s": cnn_step / args.layers,
            "per_op_and_pass_s": cnn_step / args.layers / (2 * 7),
        },
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
