#!/usr/bin/python3
"""Small recurrent language models (an embedding, one nn.RNN/nn.LSTM/nn.GRU
layer, a linear head) trained by PyTorch for a few SGD steps: the
real-framework reference that exec/runtime/torch_reference_test.cc trains
`dtsim exec`'s ModelRuntime against, from the same weights and tokens (CI
reads the committed output; it does not need PyTorch).

Run with Debian's Python, which has PyTorch (python3-torch):
    /usr/bin/python3 scripts/torch_rnn_reference.py [exec/runtime/testdata/torch_rnn_sgd.json]

For each cell (tanh, lstm, gru): PyTorch's own modules (nn.Embedding,
nn.RNN/nn.LSTM/nn.GRU with batch_first, one layer, zero initial state,
nn.Linear with bias), their default initialisation under a fixed seed, the
mean cross entropy over every token, plain SGD (lr 0.5), float32. Writes
every parameter under dtsim's op name (`embed`, `rnn` as W_ih, W_hh, b_ih,
b_hh in PyTorch's layout, `head` as weight then bias), the tokens and
labels of each step and PyTorch's loss before each update.
"""
import json
import sys

import torch

SEQ, VOCAB, EMBED, HIDDEN, BATCH, STEPS, LR = 6, 12, 8, 10, 3, 6, 0.5


def run(cell):
    torch.manual_seed({"tanh": 1, "lstm": 2, "gru": 3}[cell])
    embed = torch.nn.Embedding(VOCAB, EMBED)
    rnn = {"tanh": torch.nn.RNN, "lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[cell](
        EMBED, HIDDEN, batch_first=True)
    head = torch.nn.Linear(HIDDEN, VOCAB)
    params = {
        "embed": embed.weight.detach().reshape(-1).tolist(),
        "rnn": torch.cat([rnn.weight_ih_l0.detach().reshape(-1), rnn.weight_hh_l0.detach().reshape(-1),
                          rnn.bias_ih_l0.detach(), rnn.bias_hh_l0.detach()]).tolist(),
        "head": torch.cat([head.weight.detach().reshape(-1), head.bias.detach()]).tolist(),
    }
    modules = [embed, rnn, head]
    steps = []
    for _ in range(STEPS):
        seq = torch.randint(0, VOCAB, (BATCH, SEQ + 1))
        tokens, labels = seq[:, :-1], seq[:, 1:]
        out, _ = rnn(embed(tokens))
        logits = head(out)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))
        for m in modules:
            m.zero_grad()
        loss.backward()
        with torch.no_grad():
            for m in modules:
                for p in m.parameters():
                    p -= LR * p.grad
        steps.append({"tokens": tokens.reshape(-1).tolist(), "labels": labels.reshape(-1).tolist(),
                      "loss": float(loss)})
    return {"cell": cell, "params": params, "steps": steps}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "exec/runtime/testdata/torch_rnn_sgd.json"
    doc = {"generator": "scripts/torch_rnn_reference.py", "torch": torch.__version__,
           "model": {"sequence": SEQ, "vocab": VOCAB, "embed": EMBED, "hidden": HIDDEN},
           "batch": BATCH, "lr": LR, "runs": [run(c) for c in ("tanh", "lstm", "gru")]}
    with open(out, "w") as f:
        json.dump(doc, f, indent=0)
        f.write("\n")
    for r in doc["runs"]:
        print(r["cell"], " ".join(f"{s['loss']:.4f}" for s in r["steps"]))
    print("wrote", out)


if __name__ == "__main__":
    main()
