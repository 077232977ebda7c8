#!/usr/bin/python3
"""Writes the torch.profiler traces that config/torch_trace_test.cc imports.

Run with Debian's python3-torch (CPU):

    /usr/bin/python3 scripts/torch_traces.py [--out config/testdata/torch]

For each model and batch it trains a few steps on synthetic data (forward,
cross-entropy loss, backward, SGD with momentum; torch.set_num_threads(1)),
profiles two steps with record_shapes=True after a warm-up, and writes
MODEL_bB.trace.json.gz. manifest.json records the torch version, threads,
batch, the profiled steps and the wall time of unprofiled steps. Rank 0 of a
2-process DistributedDataParallel run (gloo, CIFAR-10 CNN, batch 16 each)
writes cifar10-cnn_b16_ddp2_rank0.trace.json.gz: collectives beside compute.
--only-gpt2 writes gpt2-small_s128_b2.trace.json.gz (GPT-2 small, 128
tokens, batch 2, one profiled step; minutes of CPU) and adds it to the
manifest.

Trace format. torch.profiler writes its Chrome trace through Kineto; Debian's
torch 1.13 is built without Kineto (torch.autograd.kineto_available() is
False), and its fallback export_chrome_trace writes events without shapes or
sequence numbers ("args": {}). So this script writes the profiler's own
events (prof.events(): name, thread, start, duration, input shapes, autograd
sequence number) in the schema Kineto writes: {"schemaVersion": 1,
"record_shapes": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op" |
"user_annotation", "name", "pid", "tid", "ts", "dur" (microseconds),
"args": {"External id", "Input Dims", "Sequence number", "Fwd thread id"}}]}.
The fallback export itself is kept as MODEL_bB.legacy.json (what the importer
must refuse: no shapes).

The CIFAR-10 CNN is dtsim's zoo model cifar10-cnn layer for layer (pools with
ceil_mode and no padding, as the zoo); ResNet-18 is torchvision's, whose
graph dtsim reads from models/testdata/onnx/resnet18_train_op17.onnx.
"""
import argparse
import gzip
import json
import os
import platform
import statistics
import sys
import time

MODELS = {"cifar10-cnn": [16, 32], "resnet18": [8, 16]}


def cifar10_cnn(nn):
    # dtsim zoo cifar10-cnn (models/zoo_small.cc): TF's LRN depth_radius 4,
    # bias 1, alpha 0.001/9, beta 0.75; PyTorch divides alpha by its size 9.
    lrn = lambda: nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0)
    pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)  # TF 'SAME' 3x3/2: 24 -> 12 -> 6
    return nn.Sequential(
        nn.Conv2d(3, 64, 5, padding=2), nn.ReLU(), pool(), lrn(),
        nn.Conv2d(64, 64, 5, padding=2), nn.ReLU(), lrn(), pool(),
        nn.Flatten(), nn.Linear(64 * 6 * 6, 384), nn.ReLU(), nn.Linear(384, 192), nn.ReLU(),
        nn.Linear(192, 10))


def build(name):
    """(model, per-sample input shape, classes)."""
    from torch import nn
    if name == "cifar10-cnn":
        return cifar10_cnn(nn), (3, 24, 24), 10
    import torchvision
    return torchvision.models.resnet18(), (3, 224, 224), 1000


def make_step(torch, model, shape, classes, batch):
    x = torch.randn((batch,) + shape)
    y = torch.randint(0, classes, (batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def kineto_events(events, pid, record_shapes):
    """prof.events() as Kineto's Chrome-trace events (see the module doc);
    "Input Dims" only when the shapes were recorded, as Kineto."""
    out = []
    step = 0
    for i, e in enumerate(events):
        name = e.name
        if name == "ProfilerStep*":  # the fallback profiler's name for ProfilerStep#N
            name = "ProfilerStep#%d" % step
            step += 1
        op = name.startswith(("aten::", "autograd::", "torch::autograd::", "c10d::")) or \
            "Backward" in name
        args = {"External id": i + 1}
        if record_shapes and op:
            args["Input Dims"] = [list(s) for s in (e.input_shapes or [])]
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
            args["Fwd thread id"] = e.fwd_thread
        out.append({"ph": "X", "cat": "cpu_op" if op else "user_annotation", "name": name,
                    "pid": pid, "tid": e.thread, "ts": e.time_range.start,
                    "dur": e.time_range.elapsed_us(), "args": args})
    return out


def write_trace(path, events, note, record_shapes=True):
    doc = {"schemaVersion": 1, "record_shapes": int(record_shapes), "displayTimeUnit": "ms",
           "dtsim_note": note,
           "traceEvents": kineto_events(events, os.getpid(), record_shapes)}
    text = json.dumps(doc, separators=(",", ":"))
    if path.endswith(".gz"):
        with gzip.GzipFile(path, "wb", mtime=0) as f:  # mtime 0: same bytes for same events
            f.write(text.encode())
    else:
        with open(path, "w") as f:
            f.write(text)


NOTE = ("torch.profiler events (record_shapes=True) of Debian's torch without Kineto, "
        "written in Kineto's Chrome-trace schema by dtsim scripts/torch_traces.py")


def profile_steps(torch, step, steps, record_shapes=True, legacy_path=None):
    """Runs 1 warm-up + `steps` profiled steps; returns the profiler's events."""
    from torch.profiler import ProfilerActivity, profile, schedule
    kept = []

    def ready(prof):
        if legacy_path:
            prof.export_chrome_trace(legacy_path)
        kept.extend(prof.events())
    with profile(activities=[ProfilerActivity.CPU], record_shapes=record_shapes,
                 schedule=schedule(wait=0, warmup=1, active=steps),
                 on_trace_ready=ready) as prof:
        for _ in range(1 + steps):
            step()
            prof.step()
    return kept


DDP_PORT = 29571


def ddp_rank(rank, out, steps):
    """One of two DDP processes (gloo) training the CIFAR-10 CNN at batch 16
    each; rank 0 writes its trace: the collectives beside the compute."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(DDP_PORT)
    torch.set_num_threads(1)
    torch.manual_seed(1 + rank)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    model, shape, classes = build("cifar10-cnn")
    step = make_step(torch, DistributedDataParallel(model), shape, classes, 16)
    for _ in range(2):
        step()
    events = profile_steps(torch, step, steps)
    if rank == 0:
        write_trace(os.path.join(out, "cifar10-cnn_b16_ddp2_rank0.trace.json.gz"), events,
                    NOTE + "; rank 0 of 2 under DistributedDataParallel (gloo)")
    dist.destroy_process_group()


GPT2_BATCH = 2


def gpt2_trace(torch, out):
    """GPT-2 small as models/testdata/onnx/gpt2_small_train_op17.onnx was
    exported (scripts/onnx_fixtures.py's nanoGPT-style Gpt2, 128 tokens),
    batch 2, one profiled step: linear, layer_norm, matmul, softmax with its
    scale and causal mask, gelu, embedding, dropout and a tied LM head."""
    import onnx_fixtures
    torch.manual_seed(1)
    model = onnx_fixtures.Gpt2()
    model.train()
    vocab, seq = 50257, onnx_fixtures.SEQ
    x = torch.randint(0, vocab, (GPT2_BATCH, seq))
    y = torch.randint(0, vocab, (GPT2_BATCH * seq,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x).view(-1, vocab), y)
        loss.backward()
        opt.step()
    walls = wall_times(step, 1)
    events = profile_steps(torch, step, 1)
    name = "gpt2-small_s%d_b%d.trace.json.gz" % (seq, GPT2_BATCH)
    write_trace(os.path.join(out, name), events, NOTE)
    return name, {"model": "gpt2_small_train_op17.onnx", "batch": GPT2_BATCH, "tokens": seq,
                  "unprofiled_step_s": walls}


def wall_times(step, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="config/testdata/torch")
    ap.add_argument("--steps", type=int, default=2, help="profiled steps (default 2)")
    ap.add_argument("--only-gpt2", action="store_true",
                    help="write only the GPT-2 trace (minutes of CPU) into the manifest")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(1)
    os.makedirs(a.out, exist_ok=True)
    manifest_path = os.path.join(a.out, "manifest.json")
    if a.only_gpt2:
        with open(manifest_path) as f:
            manifest = json.load(f)
        name, entry = gpt2_trace(torch, a.out)
        manifest["traces"][name] = entry
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.write("\n")
        return 0
    manifest = {"torch": torch.__version__, "kineto": torch.autograd.kineto_available(),
                "threads": torch.get_num_threads(), "machine": platform.machine(),
                "processor": platform.processor(), "profiled_steps": a.steps,
                "optimizer": "SGD momentum 0.9", "traces": {}}
    for name, batches in MODELS.items():
        for batch in batches:
            model, shape, classes = build(name)
            model.train()
            step = make_step(torch, model, shape, classes, batch)
            for _ in range(2):
                step()
            walls = wall_times(step, 3)
            base = "%s_b%d" % (name, batch)
            events = profile_steps(torch, step, a.steps)
            write_trace(os.path.join(a.out, base + ".trace.json.gz"), events, NOTE)
            manifest["traces"][base + ".trace.json.gz"] = {
                "model": name, "batch": batch, "input": list(shape), "classes": classes,
                "params": sum(p.numel() for p in model.parameters()),
                "unprofiled_step_s": walls,
                "unprofiled_step_median_s": statistics.median(walls)}
            print(base, "step %.4f s" % statistics.median(walls), flush=True)
    # The fallback export (no shapes, "args": {}) and a trace recorded
    # without shapes, both of which the importer refuses.
    model, shape, classes = build("cifar10-cnn")
    step = make_step(torch, model, shape, classes, 4)
    step()
    events = profile_steps(torch, step, 1, record_shapes=False,
                           legacy_path=os.path.join(a.out, "cifar10-cnn_b4.legacy.json"))
    write_trace(os.path.join(a.out, "cifar10-cnn_b4.noshapes.trace.json.gz"), events,
                NOTE.replace("record_shapes=True", "record_shapes=False"), record_shapes=False)
    import torch.multiprocessing as mp
    mp.spawn(ddp_rank, args=(a.out, a.steps), nprocs=2, join=True)
    manifest["ddp"] = {"cifar10-cnn_b16_ddp2_rank0.trace.json.gz": {
        "model": "cifar10-cnn", "batch_per_process": 16, "processes": 2, "backend": "gloo"}}
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
