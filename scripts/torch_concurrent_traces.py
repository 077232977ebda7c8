#!/usr/bin/python3
"""Records one PyTorch process's trace while a second copy trains beside it.

The single-process traces of scripts/torch_ddp_check.py time each op with the
machine to itself; a 2-process DDP run shares its cores, memory bandwidth and
caches. As `dtsim profile --concurrent` does for dtsim's own kernels, this
runs two independent training processes (no communication between them),
started together at every step by a barrier, and writes process 0's profiled
steps as MODEL_bB_2proc.trace.json.gz in --out: the per-op times the DDP
ranks meet. Same models, batches, loss, optimizer and threads (1 per
process) as scripts/torch_ddp_check.py.

    /usr/bin/python3 scripts/torch_concurrent_traces.py [--out results/torch-cpu]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_traces  # noqa: E402  (model definitions and the trace writer)

MODELS = [("cifar10-cnn", 32), ("resnet18", 8)]


def copy(index, out, barrier, warmup, steps):
    import torch
    torch.set_num_threads(1)
    for name, batch in MODELS:
        torch.manual_seed(1 + index)
        model, shape, classes = torch_traces.build(name)
        model.train()
        step = torch_traces.make_step(torch, model, shape, classes, batch)

        def synchronized():
            barrier.wait()
            step()
        for _ in range(warmup):
            synchronized()
        events = torch_traces.profile_steps(torch, synchronized, steps)
        if index == 0:
            path = os.path.join(out, "%s_b%d_2proc.trace.json.gz" % (name, batch))
            torch_traces.write_trace(path, events, torch_traces.NOTE +
                                     "; process 0 of 2 training side by side (no communication)")
            print("wrote", path, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="results/torch-cpu")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=2)
    a = ap.parse_args()
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=copy, args=(i, a.out, barrier, a.warmup, a.steps)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            sys.exit("a training process failed (exit %d)" % p.exitcode)


if __name__ == "__main__":
    main()
