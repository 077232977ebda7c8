#!/usr/bin/python3
"""Measures PyTorch's own CPU training steps, one process and 2-process DDP.

Run with Debian's python3-torch on the machine dtsim predicts:

    /usr/bin/python3 scripts/torch_ddp_check.py [--out results/torch-cpu] [--quick]

For the CIFAR-10 CNN (batch 32 per process) and ResNet-18 (batch 8 per
process), synthetic data, cross-entropy loss, SGD momentum 0.9,
torch.set_num_threads(1) in every process:
  0. waits (at most --wait-idle s) until other work leaves the CPUs, and
     records how busy they were and, per pass, CPU time / wall time;
  1. one process: the step time over --steps steps after warm-up (median of
     --passes passes), then two steps profiled with record_shapes=True,
     written as MODEL_bB_1proc.trace.json.gz (the trace dtsim imports;
     schema: scripts/torch_traces.py);
  2. two processes under DistributedDataParallel with gloo on 127.0.0.1,
     each on its own batch: the step time of rank 0 over --steps steps after
     warm-up, per pass (a barrier starts each pass), median and spread over
     --passes passes;
  3. a gloo all_reduce of float32 tensors of 4 KiB .. 32 MiB between the two
     processes: seconds per call (median of repetitions) and the algorithm
     bandwidth bytes / seconds.
Writes ddp_steps.json and gloo_allreduce.json to --out.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_traces  # noqa: E402  (model definitions and the trace writer)

MODELS = [("cifar10-cnn", 32), ("resnet18", 8)]
ALLREDUCE_BYTES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 32 << 20]


def machine_busy(seconds=3.0):
    """Fraction of all CPUs busy over `seconds` (/proc/stat)."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]  # total, idle + iowait
    t0, i0 = sample()
    time.sleep(seconds)
    t1, i1 = sample()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def wait_idle(limit_s):
    """Waits until other work leaves the CPUs (< 15% busy), at most limit_s."""
    start = time.time()
    busy = machine_busy()
    while busy > 0.15 and time.time() - start < limit_s:
        busy = machine_busy()
    return busy


def timed_passes(step, warmup, steps, passes, barrier=lambda: None, cpu=None):
    """Seconds per step of each pass; `cpu` (a list) receives each pass's
    process CPU time / wall time (1.0: the process had its core throughout)."""
    for _ in range(warmup):
        step()
    out = []
    for _ in range(passes):
        barrier()
        t, c = time.perf_counter(), time.process_time()
        for _ in range(steps):
            step()
        wall = time.perf_counter() - t
        out.append(wall / steps)
        if cpu is not None:
            cpu.append((time.process_time() - c) / wall)
    return out


def single(a, torch):
    results = {}
    for name, batch in MODELS:
        torch.manual_seed(1)
        model, shape, classes = torch_traces.build(name)
        model.train()
        step = torch_traces.make_step(torch, model, shape, classes, batch)
        steps = a.steps if name == "cifar10-cnn" else a.steps_large
        cpu = []
        passes = timed_passes(step, a.warmup, steps, a.passes, cpu=cpu)
        events = torch_traces.profile_steps(torch, step, 2)
        trace = "%s_b%d_1proc.trace.json.gz" % (name, batch)
        torch_traces.write_trace(os.path.join(a.out, trace), events, torch_traces.NOTE)
        results[name] = {"batch": batch, "steps_per_pass": steps, "pass_step_s": passes,
                         "pass_cpu_per_wall": cpu,
                         "step_median_s": statistics.median(passes), "trace": trace}
        print("1 process %s batch %d: step %.4f s (passes %s)" %
              (name, batch, statistics.median(passes), ["%.4f" % p for p in passes]), flush=True)
    return results


def ddp_worker(rank, a, queue):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(a.port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    out = {"models": {}, "allreduce": []}
    for name, batch in MODELS:
        torch.manual_seed(1 + rank)
        model, shape, classes = torch_traces.build(name)
        model.train()
        ddp = DistributedDataParallel(model)
        step = torch_traces.make_step(torch, ddp, shape, classes, batch)
        steps = a.steps if name == "cifar10-cnn" else a.steps_large
        cpu = []
        passes = timed_passes(step, a.warmup, steps, a.passes, dist.barrier, cpu)
        out["models"][name] = {"batch_per_process": batch, "steps_per_pass": steps,
                               "pass_step_s": passes, "pass_cpu_per_wall_rank0": cpu,
                               "step_median_s": statistics.median(passes),
                               "spread": (max(passes) - min(passes)) / statistics.median(passes)}
        del ddp, model
    for size in ALLREDUCE_BYTES:
        t = torch.ones(size // 4, dtype=torch.float32)
        reps = max(5, min(200, (64 << 20) // size))
        for _ in range(3):
            dist.all_reduce(t)
        times = []
        for _ in range(reps):
            dist.barrier()
            s = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - s)
        med = statistics.median(times)
        out["allreduce"].append({"bytes": size, "reps": reps, "median_s": med,
                                 "min_s": min(times), "max_s": max(times),
                                 "algbw_bytes_per_s": size / med})
    if rank == 0:
        queue.put(out)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="results/torch-cpu")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per pass, CIFAR CNN")
    ap.add_argument("--steps-large", type=int, default=8, help="timed steps per pass, ResNet-18")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--port", type=int, default=29541)
    ap.add_argument("--wait-idle", type=float, default=300,
                    help="seconds to wait at most for other work to leave the CPUs")
    a = ap.parse_args()
    import torch
    import torch.multiprocessing as mp
    torch.set_num_threads(1)
    os.makedirs(a.out, exist_ok=True)
    start = time.time()
    meta = {"torch": torch.__version__, "threads_per_process": 1, "cpus": os.cpu_count(),
            "processor": platform.processor(), "machine": platform.machine(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "optimizer": "SGD momentum 0.9", "data": "synthetic, on the process"}
    load0 = list(os.getloadavg())  # other work on the machine skews the figures
    meta["busy_before"] = wait_idle(a.wait_idle)
    one = single(a, torch)
    meta["busy_before_ddp"] = wait_idle(a.wait_idle)
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(ddp_worker, args=(a, queue), nprocs=2, join=True)
    two = queue.get()
    for name, r in two["models"].items():
        print("2-process DDP %s batch %d/process: step %.4f s (passes %s)" %
              (name, r["batch_per_process"], r["step_median_s"],
               ["%.4f" % p for p in r["pass_step_s"]]), flush=True)
    for r in two["allreduce"]:
        print("gloo all_reduce %9d B: %.6f s, %.1f MB/s" %
              (r["bytes"], r["median_s"], r["algbw_bytes_per_s"] / 1e6))
    meta["runtime_s"] = time.time() - start
    meta["loadavg_before_after"] = [load0, list(os.getloadavg())]
    with open(os.path.join(a.out, "ddp_steps.json"), "w") as f:
        json.dump(dict(meta, single_process=one, ddp_2proc_gloo=two["models"]), f, indent=1,
                  sort_keys=True)
        f.write("\n")
    with open(os.path.join(a.out, "gloo_allreduce.json"), "w") as f:
        json.dump(dict(meta, processes=2, dtype="float32", allreduce=two["allreduce"]), f,
                  indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
