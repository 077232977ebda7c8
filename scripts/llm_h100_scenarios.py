#!/usr/bin/env python3
"""Writes one dtsim scenario per run of the llm-h100 development set and a
runs file for `dtsim fit` (docs/fit.md), from the stated facts only.

    scripts/llm_h100_scenarios.py [RUNS_CSV] [OUT_DIR]

RUNS_CSV defaults to ../shared/validation/llm-h100/runs.csv (README there),
OUT_DIR to scenarios/validation/llm-h100/. What a source does not state is
chosen here, the same for every row, and written in each scenario's header:

- micro-batch 1 where not stated (Megatron-LM's default, `--micro-batch-size`);
- sequence parallelism whenever tensor parallelism > 1 (Megatron-Core's
  performance runs and MLPerf's NeMo configs enable it with TP);
- no activation recomputation where not stated;
- MLPerf GPT-3's vocabulary: GPT-2's BPE, 50,257 entries, padded by
  Megatron to a multiple of 128 x TP (`--make-vocab-size-divisible-by 128`):
  50,688 at TP 4;
- 8 x ConnectX-7 NDR 400 Gb/s per node on a non-blocking fat tree (Eos's
  system description; the Megatron README states no network, taken alike).

A Megatron-LM README row gives model TFLOP/s per GPU; its step time is
Megatron's FLOP count per step over (TFLOP/s x GPUs), with the count
72 B S L h^2 (1 + S/(6h) + V/(12 h L)) for B sequences of S tokens
(README of the development set).
"""
import csv
import os
import sys


def megatron_flops(row):
    b, s = int(row["global_batch"]), int(row["sequence"])
    l, h, v = int(row["layers"]), int(row["hidden"]), int(row["vocab"])
    return 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * h * l))


def padded_vocab(row):
    if row["vocab"]:
        return int(row["vocab"])
    multiple = 128 * int(row["tp"])
    return (50257 + multiple - 1) // multiple * multiple


def name_of(row):
    src = "megatron" if row["source"] == "megatron-lm-readme" else "mlperf-gpt3"
    return f"{src}-{row['row'].replace(' ', '').lower()}"


def scenario(row):
    tp, pp, vp, cp = (int(row[k]) for k in ("tp", "pp", "vp", "cp"))
    gpus = int(row["gpus"])
    micro = int(row["micro_batch"]) if row["micro_batch"] else 1
    fp8 = row["precision"].startswith("fp8")
    recompute = row["recompute"] or "none"
    bool_of = lambda k, default: (row[k] or default).lower() == "true"
    lines = [
        f"# {row['source']}, row '{row['row']}': written by scripts/llm_h100_scenarios.py from",
        "# ../shared/validation/llm-h100/runs.csv (the stated facts; the choices for what a",
        "# source does not state are in the script's header).",
        f"name: {name_of(row)}",
        "seed: 1",
        "",
        "cluster:",
        f"  nodes: {gpus // 8}",
        "  devices_per_node: 8",
        "  device: H100-SXM",
        "  intra_node_link: nvswitch-h100",
        "  network:",
        "    link: ib-ndr",
        "    nics_per_node: 8",
        "    topology: fat_tree",
        "    oversubscription: 1",
        "",
        "workload:",
        "  model:",
        "    transformer:",
        f"      layers: {row['layers']}",
        f"      hidden: {row['hidden']}",
        f"      heads: {row['heads']}",
        f"      ffn_hidden: {row['ffn_hidden']}",
        f"      vocab: {padded_vocab(row)}",
        f"      sequence: {row['sequence']}",
        f"      mlp: {row['mlp']}",
        "      norm: layernorm",
        f"      positions: {row['positions']}",
        f"      bias: {row['bias']}",
        f"      dropout: {row['dropout']}",
        f"      tied_embeddings: {row['tied_embeddings'] or 'false'}",
        "      attention: flash",
        f"  precision: {'fp8' if fp8 else 'bf16'}",
        "  framework: megatron-core",
        "  iterations: 1",
        "",
        "parallelism:",
        "  strategy: hybrid",
        f"  tensor_parallel: {tp}",
    ]
    if tp > 1:
        lines.append("  sequence_parallel: true")
    lines.append(f"  pipeline_parallel: {pp}")
    if cp > 1:
        lines.append(f"  context_parallel: {cp}")
    if vp > 1:
        lines += ["  schedule: interleaved", f"  virtual_stages: {vp}"]
    lines += [
        f"  micro_batch_size: {micro}",
        f"  global_batch: {row['global_batch']}",
        f"  recompute: {'false' if recompute == 'none' else recompute}",
        "  optimizer: adam",
        f"  zero_stage: {1 if bool_of('distributed_optimizer', 'false') else 0}",
    ]
    if tp > 1:
        lines.append(f"  tp_comm_overlap: {'true' if bool_of('tp_comm_overlap', 'false') else 'false'}")
    lines.append(f"  dp_overlap: {'true' if bool_of('dp_overlap', 'false') else 'false'}")
    return "\n".join(lines) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "..", "shared", "validation", "llm-h100", "runs.csv")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        here, "..", "scenarios", "validation", "llm-h100")
    os.makedirs(out, exist_ok=True)
    runs = ["scenario,step_time,source,row,measured"]
    with open(src, newline="") as f:
        for row in csv.DictReader(f):
            name = name_of(row)
            with open(os.path.join(out, name + ".yaml"), "w") as y:
                y.write(scenario(row))
            if row["metric"] == "step_time_s":
                step = float(row["value"])
                measured = f"{row['value']} s per step"
            else:
                step = megatron_flops(row) / (float(row["value"]) * 1e12 * int(row["gpus"]))
                measured = f"{row['value']} model TFLOP/s per GPU"
            runs.append(f"{name}.yaml,{step:.6g}s,{row['source']},{row['row']},{measured}")
    with open(os.path.join(out, "runs.csv"), "w") as f:
        f.write("\n".join(runs) + "\n")


if __name__ == "__main__":
    main()
