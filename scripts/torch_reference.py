#!/usr/bin/env python3
"""PyTorch reference for dtsim's measured and predicted training steps.

Trains one of dtsim's zoo models, written here layer for layer as
`dtsim model NAME` lists it, on synthetic data with plain SGD, and prints the
mean step time (forward, backward, update; CUDA synchronised) after warm-up:

    python3 scripts/torch_reference.py resnet50 --batch 64
    python3 scripts/torch_reference.py gpt2 --batch 8 --attention sdpa
    python3 scripts/torch_reference.py cifar10-cnn --batch 32 --ranks 2 --threads 1

With --ranks N, N processes train data-parallel under DistributedDataParallel
(gloo on CPU, NCCL on GPUs), each on its own batch; samples/s counts them all.

Precision: fp32 with TF32 off (matmul and cuDNN), as dtsim's CUDA backend
runs, unless --tf32 (PyTorch's own default keeps cuDNN on TF32). Device:
cuda when present, else cpu. The last line is machine-readable:
    torch MODEL batch B device D: step S s, R samples/s
"""
import argparse
import sys
import time


def cifar10_cnn(nn):
    # tensorflow/models tutorials/image/cifar10/cifar10.py, as dtsim's zoo:
    # LRN depth_radius 4, bias 1, alpha 0.001/9, beta 0.75. PyTorch's LRN
    # divides alpha by its size (9 = 2 * 4 + 1), so alpha = 0.001 here.
    lrn = lambda: nn.LocalResponseNorm(9, alpha=0.001, beta=0.75, k=1.0)
    return nn.Sequential(
        nn.Conv2d(3, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1), lrn(),
        nn.Conv2d(64, 64, 5, padding=2), nn.ReLU(), lrn(), nn.MaxPool2d(3, 2, padding=1),
        nn.Flatten(), nn.Linear(64 * 6 * 6, 384), nn.ReLU(), nn.Linear(384, 192), nn.ReLU(),
        nn.Linear(192, 10))


def mnist_mlp(nn):
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 500), nn.ReLU(), nn.Linear(500, 10))


def gpt2(attention):
    """HF GPT2LMHeadModel with GPT-2 small's default configuration (124M)."""
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config()  # n_layer 12, n_embd 768, n_head 12, n_positions 1024
    config.use_cache = False
    config._attn_implementation = attention
    model = GPT2LMHeadModel(config)
    if hasattr(model, "set_attn_implementation"):  # transformers >= 4.56
        model.set_attn_implementation(attention)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", choices=["cifar10-cnn", "mnist-mlp", "resnet50", "gpt2"])
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--iterations", type=int, default=20, help="timed steps (default 20)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first (default 5)")
    ap.add_argument("--tf32", action="store_true", help="TF32 tensor cores for fp32 matmul/conv")
    ap.add_argument("--attention", default="eager", choices=["eager", "sdpa"],
                    help="gpt2: unfused attention as dtsim runs it (eager) or PyTorch's "
                         "fused scaled_dot_product_attention (sdpa)")
    ap.add_argument("--threads", type=int, default=0, help="cpu: torch.set_num_threads")
    ap.add_argument("--profile", action="store_true",
                    help="also print PyTorch's profiler table of the timed steps' CUDA "
                         "kernels (one rank)")
    ap.add_argument("--ranks", type=int, default=1,
                    help="processes training data-parallel under DDP (default 1)")
    a = ap.parse_args()

    try:
        import torch
    except ImportError:
        print("torch_reference: PyTorch is not installed (python3-torch); skipped")
        return 3
    if a.ranks <= 1:
        return run(a, 0, 1, None)
    import torch.multiprocessing as mp
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(run, args=(a, a.ranks, results), nprocs=a.ranks, join=True)
    for line in results.get():
        print(line)
    return 0


def run(rank_or_args, args_or_rank, world, results):
    """Trains on one process; with results (DDP), rank 0 puts its lines there."""
    # mp.spawn passes the rank first; the single-process call passes args.
    if isinstance(rank_or_args, int):
        rank, a = rank_or_args, args_or_rank
    else:
        a, rank = rank_or_args, args_or_rank
    import os
    import torch
    from torch import nn
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if world > 1:
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        if device == "cuda":
            torch.cuda.set_device(rank % torch.cuda.device_count())
        dist.init_process_group("nccl" if device == "cuda" else "gloo", rank=rank,
                                world_size=world)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cudnn.benchmark = True  # cudnnFind, as the kernel model assumes
    torch.manual_seed(1 + rank)

    if a.model == "gpt2":
        model = gpt2(a.attention)
        seq = 1024
        tokens = torch.randint(0, 50257, (a.batch, seq), device=device)
        model = model.to(device)
        step_input = lambda: model(input_ids=tokens, labels=tokens).loss
    else:
        if a.model == "resnet50":
            import torchvision
            model, shape, classes = torchvision.models.resnet50(), (3, 224, 224), 1000
        elif a.model == "cifar10-cnn":
            model, shape, classes = cifar10_cnn(nn), (3, 24, 24), 10
        else:
            model, shape, classes = mnist_mlp(nn), (1, 28, 28), 10
        model = model.to(device)
        x = torch.randn((a.batch,) + shape, device=device)
        y = torch.randint(0, classes, (a.batch,), device=device)
        loss_fn = nn.CrossEntropyLoss()
        step_input = lambda: loss_fn(model(x), y)
    model.train()
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel
        inner = model
        model = DistributedDataParallel(model)
        model.config = getattr(inner, "config", None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = step_input()
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(a.iterations):
        loss = step()
    sync()
    seconds = (time.perf_counter() - start) / a.iterations
    if a.profile and world == 1:
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda"
                                               else [])
        with profile(activities=activities) as prof:
            for _ in range(3):
                step()
            sync()
        print("profile of 3 steps:")
        table = None
        for key in (["device_time_total", "cuda_time_total"] if device == "cuda" else
                    ["cpu_time_total"]):
            try:  # PyTorch 2.4 renamed cuda_time_total to device_time_total
                table = prof.key_averages().table(sort_by=key, row_limit=25,
                                                  max_name_column_width=60)
                break
            except (AttributeError, KeyError, ValueError):
                continue
        print(table)
    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    lines = ["torch %s (%s): loss %.3f, %s, tf32 %s, %d rank(s), %d thread(s)%s" %
             (torch.__version__, name, loss.item(), a.model, a.tf32, world,
              torch.get_num_threads(),
              ", attention " + str(model.config._attn_implementation) if a.model == "gpt2"
              else ""),
             "torch %s batch %d device %s: step %.6f s, %.1f samples/s" %
             (a.model, a.batch, device, seconds, a.batch * world / seconds)]
    if world > 1:
        import torch.distributed as dist
        if rank == 0:
            results.put(lines)
        dist.destroy_process_group()
        return 0
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
