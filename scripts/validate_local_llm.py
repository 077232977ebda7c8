#!/usr/bin/env python3
"""A Llama-style decoder run for real on this machine against dtsim's
prediction, with and without an op-cost table measured here: writes
results/local-llm/summary.md (and op_costs.json, runs.csv).

    scripts/validate_local_llm.py [--dtsim build/tools/dtsim] [--passes 3]

Steps: `dtsim calibrate --ranks 2` when results/calibration/ has no profile;
`dtsim profile` of scenarios/local/tiny-llama-dp-2cpu.yaml (the op-cost
table); then `dtsim validate` of the scenario `passes` times as shipped (the
device profile's roofline prices compute) and `passes` times priced from
the table (workload.cost_model: measured). The summary gives the median over
the passes of each error (predicted against measured step time, compute
and communication per rank) and the machine it ran on.
"""
import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO = "scenarios/local/tiny-llama-dp-2cpu.yaml"
OUT = os.path.join(ROOT, "results", "local-llm")


def run(cmd):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def validate(dtsim, scenario, out):
    run([dtsim, "validate", scenario, "--out", out, "-q"])
    with open(os.path.join(out, "validation.json")) as f:
        return json.load(f)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtsim", default=os.path.join(ROOT, "build", "tools", "dtsim"))
    ap.add_argument("--passes", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if not os.path.exists(os.path.join(ROOT, "results", "calibration", "device_profile.yaml")):
        run([a.dtsim, "calibrate", "--ranks", "2"])
    table = os.path.join(OUT, "op_costs.json")
    run([a.dtsim, "profile", SCENARIO, "-o", table, "--quiet"])
    with open(os.path.join(ROOT, SCENARIO)) as f:
        text = f.read()
    measured_text = text.replace("  precision: fp32\n",
                                 f"  precision: fp32\n  cost_model: measured\n  cost_table: {table}\n")
    assert measured_text != text
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        measured = os.path.join(tmp, "tiny-llama-measured.yaml")
        with open(measured, "w") as f:
            f.write(measured_text)
        for pricing, scenario in (("device profile", SCENARIO), ("op-cost table", measured)):
            for p in range(a.passes):
                v = validate(a.dtsim, scenario, os.path.join(tmp, f"{len(rows)}"))
                e = v["error_percent"]
                rows.append({"pricing": pricing, "pass": p + 1,
                             "measured_step_s": v["measured"]["step_time_s"],
                             "step_error_pct": e["step_time"], "compute_error_pct": e["compute"],
                             "comm_error_pct": e["comm"]})
    with open(os.path.join(OUT, "runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = ["# A Llama-style decoder on this machine: predicted against measured", "",
             f"Written by `scripts/validate_local_llm.py` on {cpu_model()}, {os.cpu_count()} cores "
             f"(`{SCENARIO}`: 2 MPI ranks, one core each, data parallel; median of "
             f"{a.passes} passes of `dtsim validate`). Errors are predicted minus measured, % of "
             "measured. Communication is measured with the wait for the other rank.", "",
             "| pricing | step time | compute per rank | communication per rank |",
             "|---|---:|---:|---:|"]
    for pricing in ("device profile", "op-cost table"):
        sel = [r for r in rows if r["pricing"] == pricing]
        med = {k: statistics.median(r[k] for r in sel)
               for k in ("step_error_pct", "compute_error_pct", "comm_error_pct")}
        lines.append(f"| {pricing} | {med['step_error_pct']:+.1f}% | {med['compute_error_pct']:+.1f}% "
                     f"| {med['comm_error_pct']:+.1f}% |")
    lines += ["", "Per pass: `runs.csv`; the table: `op_costs.json` (`dtsim profile`)."]
    with open(os.path.join(OUT, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
