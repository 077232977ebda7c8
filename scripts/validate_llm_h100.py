#!/usr/bin/env python3
"""dtsim on the llm-h100 development set: predictions against the 14
published H100 runs, the cross-validated fit of megatron-core's
kernel_efficiency, and a bar chart. Writes results/llm-h100/.

    scripts/validate_llm_h100.py [--dtsim build/tools/dtsim] [--runs RUNS_CSV]

Steps (docs/validation.md, "LLM pre-training on H100"). The constant under
test is Hopper's sustained fraction (sim/cost/gpu_kernel_model.h, 0.7525):
the fits below fit megatron-core's kernel_efficiency, a factor on top of it,
so that each fold re-derives their product from its own runs (a residual
near 1 on all runs says the shipped fraction is the fit's):
 1. scripts/llm_h100_scenarios.py writes one scenario per run and runs.csv
    (scenarios/validation/llm-h100/);
 2. `dtsim fit runs.csv --fit kernel_efficiency --folds 14`: leave-one-out
    cross-validation (fit.json, predictions.csv: the held-out predictions);
 3. leave-one-source-out: the constant fitted on one publisher's runs
    predicts the other's (sources.csv);
 4. every run predicted with the shipped profile (shipped.csv), the error
    summary (summary.md) and predicted against measured (chart.svg).
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HOPPER_SUSTAINED = 0.7525  # sim/cost/gpu_kernel_model.cc, SustainedFraction
ROOT = os.path.dirname(HERE)
SCEN = os.path.join(ROOT, "scenarios", "validation", "llm-h100")
OUT = os.path.join(ROOT, "results", "llm-h100")


def run(cmd):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def predict(dtsim, scenario):
    report = json.loads(run([dtsim, "run", scenario, "-q", "--json", "-", "--no-trace",
                             "--out", tempfile.mkdtemp(prefix="dtsim-llm-")]))
    return report


def errors(pairs):
    e = [100 * (p - m) / m for m, p in pairs]
    a = [abs(x) for x in e]
    return {"runs": len(e), "median_abs": statistics.median(a), "mean_abs": statistics.mean(a),
            "max_abs": max(a), "mean_signed": statistics.mean(e)}


def fmt(s):
    return (f"median {s['median_abs']:.1f}%, mean {s['mean_abs']:.1f}%, max {s['max_abs']:.1f}% "
            f"(signed mean {s['mean_signed']:+.1f}%, {s['runs']} runs)")


def with_efficiency(path, value, tmp):
    """A copy of scenario `path` whose framework is megatron-core with
    kernel_efficiency `value`."""
    text = open(path).read().replace(
        "  framework: megatron-core\n",
        f"  framework: {{base: megatron-core, kernel_efficiency: {value:.6g}}}\n")
    out = os.path.join(tmp, os.path.basename(path))
    with open(out, "w") as f:
        f.write(text)
    return out


def chart(rows):
    """predicted against measured, one pair of bars per run, as % of measured."""
    w, h, left, top, bar = 900, 460, 60, 30, 22
    n = len(rows)
    step = (w - left - 20) / n
    ymax = 140.0
    y = lambda v: top + (h - top - 150) * (1 - v / ymax)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             'font-family="sans-serif" font-size="11">',
             f'<text x="{left}" y="18" font-size="13">llm-h100: predicted step time as % of '
             'measured (grey: measured = 100%, blue: dtsim)</text>']
    for v in (0, 20, 40, 60, 80, 100, 120, 140):
        parts.append(f'<line x1="{left}" x2="{w - 20}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                     f'stroke="#ddd"/><text x="{left - 6}" y="{y(v) + 4:.1f}" '
                     f'text-anchor="end">{v}%</text>')
    for i, r in enumerate(rows):
        x = left + i * step + 4
        pct = 100 * r["predicted"] / r["measured"]
        parts.append(f'<rect x="{x:.1f}" y="{y(100):.1f}" width="{bar / 2:.1f}" '
                     f'height="{y(0) - y(100):.1f}" fill="#bbb"/>')
        parts.append(f'<rect x="{x + bar / 2:.1f}" y="{y(pct):.1f}" width="{bar / 2:.1f}" '
                     f'height="{y(0) - y(pct):.1f}" fill="#3b6fb6"/>')
        parts.append(f'<text x="{x + bar / 2:.1f}" y="{y(pct) - 3:.1f}" text-anchor="middle" '
                     f'font-size="9">{pct - 100:+.0f}</text>')
        parts.append(f'<text transform="translate({x + bar / 2:.1f},{y(0) + 8:.1f}) rotate(60)" '
                     f'font-size="10">{r["name"]}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtsim", default=os.path.join(ROOT, "build", "tools", "dtsim"))
    ap.add_argument("--runs", default=None, help="the development set's runs.csv")
    a = ap.parse_args()
    gen = [sys.executable, os.path.join(HERE, "llm_h100_scenarios.py")]
    if a.runs:
        gen.append(a.runs)
    run(gen)
    os.makedirs(OUT, exist_ok=True)
    runs = list(csv.DictReader(open(os.path.join(SCEN, "runs.csv"))))
    measured = {r["scenario"]: float(r["step_time"].rstrip("s")) for r in runs}

    # 2. Leave-one-out.
    fit_dir = tempfile.mkdtemp(prefix="dtsim-llm-fit-")
    run([a.dtsim, "fit", os.path.join(SCEN, "runs.csv"), "--fit", "kernel_efficiency",
         "--folds", str(len(runs)), "--out", fit_dir, "-q"])
    for f in ("fit.json", "predictions.csv"):
        shutil.copy(os.path.join(fit_dir, f), os.path.join(OUT, f))
    fit = json.load(open(os.path.join(fit_dir, "fit.json")))

    # 3. Leave-one-source-out.
    sources = sorted({r["source"] for r in runs})
    # A fixed folder: `dtsim fit` assigns its folds by a hash of each row's
    # file:line, so the training files' paths must not vary between runs.
    tmp = os.path.join(tempfile.gettempdir(), "dtsim-llm-h100-sources")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    src_rows = []
    for held in sources:
        train = [r for r in runs if r["source"] != held]
        train_csv = os.path.join(tmp, f"train-{held}.csv")
        with open(train_csv, "w") as f:
            f.write("scenario,step_time\n")
            for r in train:
                f.write(f"{os.path.join(SCEN, r['scenario'])},{r['step_time']}\n")
        d = os.path.join(tmp, f"fit-{held}")
        # Only the value fitted on every training row is used; its own
        # cross-validation (leave-one-out: every training set keeps 3 rows or
        # more) is a by-product.
        run([a.dtsim, "fit", train_csv, "--fit", "kernel_efficiency", "--folds", str(len(train)),
             "--out", d, "-q"])
        value = json.load(open(os.path.join(d, "fit.json")))["constants"][0]["fitted"]
        value_total = value * HOPPER_SUSTAINED
        for r in runs:
            if r["source"] != held:
                continue
            s = with_efficiency(os.path.join(SCEN, r["scenario"]), value, tmp)
            p = predict(a.dtsim, s)["step_time_s"]
            src_rows.append({"scenario": r["scenario"], "held_out_source": held,
                             "sustained_x_residual": value_total,
                             "measured_s": measured[r["scenario"]],
                             "predicted_s": p})
    with open(os.path.join(OUT, "sources.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(src_rows[0]))
        w.writeheader()
        w.writerows(src_rows)

    # 4. The shipped profile.
    shipped = []
    for r in runs:
        rep = predict(a.dtsim, os.path.join(SCEN, r["scenario"]))
        shipped.append({"name": r["scenario"][:-5], "measured": measured[r["scenario"]],
                        "predicted": rep["step_time_s"], "mfu": rep.get("mfu", 0),
                        "memory_gib": rep["memory"]["per_device_bytes"] / 2**30,
                        "memory_verdict": rep["memory"]["verdict"]})
    with open(os.path.join(OUT, "shipped.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(shipped[0]))
        w.writeheader()
        w.writerows(shipped)
    with open(os.path.join(OUT, "chart.svg"), "w") as f:
        f.write(chart(shipped))

    # The kernels alone (the sustained fraction undone): what it corrects.
    alone = []
    for r in runs:
        s = with_efficiency(os.path.join(SCEN, r["scenario"]), 1 / HOPPER_SUSTAINED, tmp)
        alone.append((measured[r["scenario"]], predict(a.dtsim, s)["step_time_s"]))

    held = list(csv.DictReader(open(os.path.join(OUT, "predictions.csv"))))
    loo = errors([(float(r["measured_s"]), float(r["predicted_held_out_s"])) for r in held])
    kernels = errors(alone)
    src = errors([(r["measured_s"], r["predicted_s"]) for r in src_rows])
    ship = errors([(r["measured"], r["predicted"]) for r in shipped])
    lines = [
        "# dtsim on the llm-h100 development set",
        "",
        "Written by `scripts/validate_llm_h100.py` from `../shared/validation/llm-h100/runs.csv`"
        " (14 published H100 runs: the Megatron-LM README's weak-scaling table and MLPerf"
        " Training v3.1 GPT-3 175B on Eos). Absolute errors of the step time, % of measured.",
        "",
        f"- Hopper's sustained fraction {HOPPER_SUSTAINED} x the residual `kernel_efficiency` "
        f"fitted on all 14 runs, {fit['constants'][0]['fitted']:.4f} (objective: mean absolute "
        f"% error): {HOPPER_SUSTAINED * fit['constants'][0]['fitted']:.4f}",
        f"- held out, leave-one-out (14 folds): {fmt(loo)}",
        f"- held out, leave-one-source-out (fit on one publisher, predict the other): {fmt(src)}",
        f"- the shipped profile (fitted on all runs): {fmt(ship)}",
        f"- the kernels alone (the sustained fraction undone, everything else as shipped): "
        f"{fmt(kernels)}",
        "",
        "| run | measured (s) | predicted (s) | error | MFU | memory (GiB) |",
        "|---|---|---|---|---|---|",
    ]
    for r in shipped:
        lines.append(f"| {r['name']} | {r['measured']:.4f} | {r['predicted']:.4f} | "
                     f"{100 * (r['predicted'] - r['measured']) / r['measured']:+.1f}% | "
                     f"{100 * r['mfu']:.1f}% | {r['memory_gib']:.1f} ({r['memory_verdict']}) |")
    lines += ["", "![predicted vs measured](chart.svg)", ""]
    with open(os.path.join(OUT, "summary.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines[4:9]))


if __name__ == "__main__":
    main()
