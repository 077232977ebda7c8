#!/usr/bin/env python3
"""Predicts PyTorch's own CPU training steps on this machine from one
process's torch.profiler trace, and compares with what PyTorch measured.

Inputs (written by scripts/torch_ddp_check.py, in results/torch-cpu/):
  ddp_steps.json            measured step times: 1 process, and 2-process DDP over gloo
  gloo_allreduce.json       dist.all_reduce times between the 2 processes, 4 KiB .. 32 MiB
  <model>_..._1proc.trace.json.gz   two profiled steps of the single process
  <model>_..._2proc.trace.json.gz   the same, recorded beside a second training copy
                                    (scripts/torch_concurrent_traces.py); used for 2 processes

For each model it writes a scenario (results/torch-cpu/prediction/<model>-<n>proc.yaml):
1 or 2 cpu-host devices, synchronous data parallelism with a ring all-reduce
of DDP's 25 MiB buckets overlapped with the backward, compute priced from the
trace (workload.cost_model: measured), and, for 2 processes, the link fitted
to the gloo measurements: a 2-rank ring all-reduce of S bytes takes
2 x latency + S / bandwidth in dtsim's model (two steps of S/2 bytes), so a
least-squares line t = a + S / b through the medians gives latency = a / 2
and bandwidth = b. It runs `dtsim run` on each and writes
results/torch-cpu/prediction.md and prediction.json.

  /usr/bin/python3 scripts/predict_torch_ddp.py [--dtsim build/tools/dtsim]
(any python3 works: this script needs no torch.)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

RESULTS = "results/torch-cpu"
MODELS = {
    # name in ddp_steps.json -> (dtsim model reference, trace file)
    "cifar10-cnn": ("cifar10-cnn", "cifar10-cnn_b32_1proc.trace.json.gz"),
    "resnet18": ("{file: ../../../models/testdata/onnx/resnet18_train_op17.onnx}",
                 "resnet18_b8_1proc.trace.json.gz"),
}


def fit_link(allreduce):
    """Least squares t = a + S / b over the measured medians."""
    xs = [r["bytes"] for r in allreduce]
    ys = [r["median_s"] for r in allreduce]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - slope * mx
    return max(a, 0.0) / 2, 1.0 / slope  # latency (s), bandwidth (bytes/s)


def scenario(name, model, batch, processes, trace, latency_s, bw):
    lines = [
        f"# Written by scripts/predict_torch_ddp.py: PyTorch's {name} step, {processes} process(es).",
        f"name: torch-{name}-{processes}proc",
        "seed: 1",
        "cluster:",
        "  nodes: 1",
        f"  devices_per_node: {processes}",
        "  device: cpu-host",
    ]
    if processes > 1:
        lines += [
            "  intra_node_link: gloo-loopback",
            "  links:",
            f"    - {{name: gloo-loopback, bandwidth: {bw / 1e6:.1f}MBps, latency: {latency_s * 1e6:.1f}us,",
            "       source: \"gloo all_reduce between the 2 processes (results/torch-cpu/gloo_allreduce.json)\"}",
            "  network:",
            "    collective_latency: 0us   # in the fitted link's latency",
        ]
    lines += [
        "workload:",
        f"  model: {model}",
        f"  batch_per_device: {batch}",
        "  precision: fp32",
        "  iterations: 6",
        "  cost_model: measured",
        f"  cost_table: ../{trace}",
        "parallelism:",
        "  strategy: data",
        "  algorithm: ring",
        "  bucket_size: 25MiB         # DistributedDataParallel's bucket_cap_mb",
        "  overlap: true",
        "  optimizer: momentum",
        "outputs:",
        "  trace: false",
    ]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtsim", default="build/tools/dtsim")
    args = ap.parse_args()
    steps = json.load(open(os.path.join(RESULTS, "ddp_steps.json")))
    gloo = json.load(open(os.path.join(RESULTS, "gloo_allreduce.json")))["allreduce"]
    latency_s, bw = fit_link(gloo)
    out_dir = os.path.join(RESULTS, "prediction")
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    for name, (model, trace) in MODELS.items():
        for processes, key in ((1, "single_process"), (2, "ddp_2proc_gloo")):
            m = steps[key][name]
            batch = m.get("batch_per_process", m.get("batch"))
            # Two processes share the machine: the trace recorded beside a
            # second training copy (scripts/torch_concurrent_traces.py), when there.
            shared = trace.replace("_1proc.", "_2proc.")
            used = shared if processes == 2 and os.path.exists(os.path.join(RESULTS, shared)) else trace
            path = os.path.join(out_dir, f"{name}-{processes}proc.yaml")
            with open(path, "w") as f:
                f.write(scenario(name, model, batch, processes, used, latency_s, bw))
            run_dir = os.path.join(out_dir, "runs", f"{name}-{processes}proc")
            r = subprocess.run([args.dtsim, "run", path, "--quiet", "--out", run_dir],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"dtsim run {path} failed ({r.returncode}): {r.stderr}")
            report = json.load(open(os.path.join(run_dir, "report.json")))
            predicted = report["step_time_s"]
            measured = m["step_median_s"]
            passes = m["pass_step_s"]
            rows.append({
                "model": name, "processes": processes, "batch": batch, "trace": used,
                "predicted_step_s": predicted, "measured_step_s": measured,
                "measured_passes_s": passes,
                "error_percent": 100 * (predicted / measured - 1),
                "measured_share": report["cost_sources"]["measured_share"],
                "modelled_ops": report["cost_sources"]["modelled_ops"],
                "breakdown": report["breakdown"],
            })
    result = {"link": {"latency_s": latency_s, "bandwidth_bytes_per_s": bw,
                       "fit": "t = 2 latency + S / bandwidth, least squares over gloo_allreduce.json medians"},
              "rows": rows}
    with open(os.path.join(RESULTS, "prediction.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(RESULTS, "prediction.md"), "w") as f:
        f.write("# dtsim's prediction of PyTorch's CPU steps from one process's trace\n\n")
        f.write(f"Link fitted to gloo's all_reduce: latency {latency_s * 1e6:.0f} us, "
                f"{bw / 1e9:.2f} GB/s. Written by `scripts/predict_torch_ddp.py`.\n\n")
        f.write("| model | processes | trace | predicted step | measured step (median of passes) | passes | error | compute measured |\n")
        f.write("|---|---:|---|---:|---:|---|---:|---:|\n")
        for r in rows:
            f.write(f"| {r['model']} | {r['processes']} | `{r['trace']}` | {r['predicted_step_s']:.3f} s | "
                    f"{r['measured_step_s']:.3f} s | "
                    + ", ".join(f"{p:.3f}" for p in r["measured_passes_s"])
                    + f" | {r['error_percent']:+.1f}% | {100 * r['measured_share']:.1f}% |\n")
    print(open(os.path.join(RESULTS, "prediction.md")).read())


if __name__ == "__main__":
    main()
