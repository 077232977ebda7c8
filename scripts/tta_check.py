#!/usr/bin/env python3
"""Time to accuracy, predicted and real (docs/tta.md, "Checked against real training").

Trains fashion-mnist-cnn on Debian's Fashion-MNIST for real with `dtsim exec`
(4 worker ranks on this machine, over an emulated network per --networks),
for each synchronisation setting and seed, to a held-out accuracy target;
predicts the same settings with `dtsim tta` (the proxy trained as exec trains,
seconds per update simulated for this machine and link); and compares the
times to target, the ranking of the settings and the best averaging period.

  scripts/tta_check.py                 # the whole check (about 25 minutes on 2 cores, root)
  scripts/tta_check.py --quick         # 2 settings, 1 seed, 1 network (the test suite's)

Writes OUT (default results/tta-fashion-mnist/): real/<network>/<setting>/seed<k>/
(exec's outputs), predicted/<network>/<group>/ (dtsim tta's), real_runs.csv,
comparison.csv, summary.md and index.html (the curves). Exit 0 when every
step ran (the targets are reported, not enforced), 77 when the data set is
missing, 1 on a failed command.
"""
import argparse
import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

DATA = "/usr/share/datasets/fashion-mnist"
MODEL = "fashion-mnist-cnn"
WORKERS = 4
BATCH = 32  # per worker
# The learning-rate rule every run uses, real and proxy: momentum 0.9, a
# rate of LR_PER_BATCH per worker batch of 32 scaled linearly with the
# samples an update averages (Goyal et al. 2017): 4 x 32 for synchronous
# data parallelism and local SGD (0.05), 32 for an asynchronous server's
# update (0.0125); linear warm-up over the first WARMUP updates.
LR_PER_BATCH = 0.0125
WARMUP = 20
EVAL_EVERY = 20        # iterations between held-out evaluations
EVAL_SAMPLES = 2048    # the test split's first samples
TARGET_ACCURACY = 0.85

# name -> (parallelism mapping, lr multiple of LR_PER_BATCH, iterations at
# most, networks it runs on or None for all). Exec stops data-parallel and
# local SGD runs at the target; parameter-server runs go on to the end
# (their evaluations happen after the run), and on 100 Mb/s the one
# server's link makes 500 iterations take minutes: they run on 1 Gb/s and
# shared memory only.
SETTINGS = {
    "sync": ("{strategy: data, algorithm: ring, overlap: true, optimizer: momentum}", 4, 1500, None),
    **{f"H{h}": (f"{{strategy: local_sgd, averaging_period: {h}, algorithm: ring, overlap: false, "
                 f"optimizer: momentum}}", 4, 1500, None) for h in (2, 4, 8, 16, 32)},
    "async-ps": ("{strategy: parameter_server, sync: asynchronous, optimizer: momentum, "
                 "parameter_server: {servers: 1, placement: dedicated, device: cpu-host, "
                 "payload: gradients}}", 1, 500, ("1Gbps", "")),
}


def runs_on(name, net):
    allowed = SETTINGS[name][3]
    return allowed is None or net in allowed


def log(msg):
    print(msg, flush=True)


def run(cmd, **kw):
    log("+ " + " ".join(cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        sys.stdout.write(r.stdout)
        raise SystemExit(f"tta_check: command failed with status {r.returncode}")
    return r.stdout


def scenario_text(name, seed, parallelism, profile):
    return (f"name: {name}\nseed: {seed}\n"
            f"cluster: {{nodes: 1, devices_per_node: {WORKERS}, device: cpu-host, "
            f"device_profile: {profile}}}\n"
            f"workload: {{model: {MODEL}, batch_per_device: {BATCH}, precision: fp32}}\n"
            f"parallelism: {parallelism}\n")


def crossing(points, key="accuracy", target=TARGET_ACCURACY):
    """First crossing of the target, linearly interpolated: (updates, seconds), or None."""
    prev = None
    for p in points:
        if p[key] >= target:
            if prev is None:
                return p["updates"], p["train_seconds"]
            f = (target - prev[key]) / (p[key] - prev[key])
            return (prev["updates"] + f * (p["updates"] - prev["updates"]),
                    prev["train_seconds"] + f * (p["train_seconds"] - prev["train_seconds"]))
        prev = p
    return None


def real_runs(args, dtsim, out, profile):
    rows = []
    for net in args.networks:
        for name in args.settings:
            parallelism, lr_mult, iterations, _ = SETTINGS[name]
            if not runs_on(name, net):
                continue
            for seed in range(1, args.seeds + 1):
                d = os.path.join(out, "real", net or "shared-memory", name, f"seed{seed}")
                os.makedirs(d, exist_ok=True)
                scen = os.path.join(d, "scenario.yaml")
                with open(scen, "w") as f:
                    f.write(scenario_text(f"tta-{name}-s{seed}", seed, parallelism, profile))
                cmd = [dtsim, "exec", scen, "--dataset", DATA, "--iterations", str(iterations),
                       "--lr", str(LR_PER_BATCH * lr_mult), "--lr-warmup-steps", str(WARMUP),
                       "--eval-every", str(EVAL_EVERY), "--eval-samples", str(EVAL_SAMPLES),
                       "--stop-at-accuracy", str(TARGET_ACCURACY), "-q", "--out", d]
                if net:
                    cmd += ["--network", net]
                start = time.monotonic()
                run(cmd)
                wall = time.monotonic() - start
                j = json.load(open(os.path.join(d, "exec.json")))
                points = j["eval"]["points"]
                hit = crossing(points)
                rows.append({
                    "network": net or "shared-memory", "setting": name, "seed": seed,
                    "updates_to_target": f"{hit[0]:.1f}" if hit else "",
                    "seconds_to_target": f"{hit[1]:.3f}" if hit else "",
                    "final_accuracy": f"{points[-1]['accuracy']:.4f}",
                    "iterations": j["iterations"],
                    "step_time_s": f"{j['measured']['step_time_s']:.5f}",
                    "wall_s": f"{wall:.1f}",
                })
                log(f"  {rows[-1]}")
    return rows


# Prediction groups: (name, parallelism mapping or None for the local SGD
# sweep, settings it yields).
def predicted(args, dtsim, out, profile, net):
    """Runs dtsim tta for the settings; returns {setting: tta.csv row}."""
    groups = []
    if "sync" in args.settings:
        groups.append(("sync", SETTINGS["sync"][0], 4))
    hs = [int(n[1:]) for n in args.settings if n.startswith("H")]
    if hs:
        groups.append(("local-sgd", "{strategy: local_sgd, averaging_period: [%s], algorithm: ring, "
                       "overlap: false, optimizer: momentum}" % ", ".join(map(str, hs)), 4))
    if "async-ps" in args.settings and runs_on("async-ps", net):
        groups.append(("async-ps", SETTINGS["async-ps"][0], 1))
    rows = {}
    for group, parallelism, _ in groups:
        d = os.path.join(out, "predicted", net or "shared-memory", group)
        os.makedirs(d, exist_ok=True)
        scen = os.path.join(d, "scenario.yaml")
        with open(scen, "w") as f:
            f.write(scenario_text(f"tta-{group}", 1, parallelism, profile))
        # An asynchronous update is one worker's: evaluate every WORKERS x
        # EVAL_EVERY of them, as often as worker 0's evaluations of the real run.
        steps = 2000 if group == "async-ps" else 1500
        every = EVAL_EVERY * (WORKERS if group == "async-ps" else 1)
        cmd = [dtsim, "tta", scen, "--dataset", DATA, "--proxy", MODEL, "--batch", str(BATCH),
               "--seeds", str(args.seeds), "--steps", str(steps), "--eval-every", str(every),
               "--eval-samples", str(EVAL_SAMPLES), "--target-accuracy", str(TARGET_ACCURACY),
               "--lr", str(LR_PER_BATCH), "--lr-scaling", "linear", "--optimizer", "momentum",
               "--lr-warmup-steps", str(WARMUP), "--local", "-q", "-o", d]
        if net:
            cmd += ["--network", net]
        run(cmd)
        for r in csv.DictReader(open(os.path.join(d, "tta.csv"))):
            if group == "local-sgd":
                name = "H" + r["parallelism.averaging_period"]
            else:
                name = group
            rows[name] = r
    return rows


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return r
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return num / den if den > 0 else float("nan")


def compare(args, rows, preds):
    """Per network and setting: real (mean over seeds, spread) against predicted."""
    table, summary = [], []
    for net in args.networks:
        net = net or "shared-memory"
        real = {}
        for r in rows:
            if r["network"] != net or not r["seconds_to_target"]:
                continue
            real.setdefault(r["setting"], []).append(
                (float(r["updates_to_target"]), float(r["seconds_to_target"])))
        pred = preds.get(net, {})
        names = [n for n in args.settings if n in real and len(real[n]) == args.seeds]
        ran = {r["setting"] for r in rows if r["network"] == net}
        unreached = sorted(ran - set(names))
        both = []
        for n in names:
            u = [a for a, _ in real[n]]
            t = [b for _, b in real[n]]
            p = pred.get(n, {})
            pt = float(p["time_to_target_s"]) if p.get("time_to_target_s") else None
            pu = float(p["updates_to_target"]) if p.get("updates_to_target") else None
            ps = float(p["seconds_per_update"]) if p.get("seconds_per_update") else None
            row = {"network": net, "setting": n,
                   "real_seconds": statistics.mean(t), "real_seconds_min": min(t),
                   "real_seconds_max": max(t), "real_updates": statistics.mean(u),
                   "real_seconds_per_update": statistics.mean(b / a for a, b in real[n]),
                   "predicted_seconds": pt, "predicted_updates": pu,
                   "predicted_seconds_per_update": ps}
            for k, (a, b) in {"time_error": ("predicted_seconds", "real_seconds"),
                              "updates_error": ("predicted_updates", "real_updates"),
                              "step_error": ("predicted_seconds_per_update",
                                             "real_seconds_per_update")}.items():
                row[k] = row[a] / row[b] - 1 if row[a] is not None else None
            table.append(row)
            if pt is not None:
                both.append(row)
        rho = spearman([r["real_seconds"] for r in both], [r["predicted_seconds"] for r in both]) \
            if len(both) >= 2 else float("nan")
        periods = [r for r in both if r["setting"] == "sync" or r["setting"].startswith("H")]
        best_real = min(periods, key=lambda r: r["real_seconds"]) if periods else None
        best_pred = min(periods, key=lambda r: r["predicted_seconds"]) if periods else None
        summary.append({
            "network": net, "settings": len(both), "spearman": rho,
            "best_real": best_real["setting"] if best_real else "",
            "best_predicted": best_pred["setting"] if best_pred else "",
            "best_predicted_real_gap": (best_pred["real_seconds"] / best_real["real_seconds"] - 1)
            if periods else float("nan"),
            "unreached": ", ".join(unreached),
        })
    return table, summary


def fmt(v, pct=False):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{100 * v:+.1f}%" if pct else (f"{v:.3f}" if isinstance(v, float) else str(v))


def write_summary(out, args, table, summary, real_s, pred_s):
    errs = [abs(r["time_error"]) for r in table if r["time_error"] is not None]
    uerr = [abs(r["updates_error"]) for r in table if r["updates_error"] is not None]
    serr = [abs(r["step_error"]) for r in table if r["step_error"] is not None]
    lines = ["# Time to accuracy: `dtsim tta` against real `dtsim exec` runs", "",
             f"{MODEL}, Fashion-MNIST, {WORKERS} workers x batch {BATCH}, target held-out accuracy "
             f"{TARGET_ACCURACY} (first {EVAL_SAMPLES} test images), momentum 0.9, lr "
             f"{LR_PER_BATCH} per batch of {BATCH} scaled linearly, {WARMUP} warm-up updates; "
             f"{args.seeds} seeds. Real runs {real_s:.0f} s, predictions {pred_s:.0f} s.", "",
             "| network | setting | real s (min-max) | predicted s | error | real updates | "
             "predicted updates | error | real s/update | predicted s/update | error |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append(
            f"| {r['network']} | {r['setting']} | {r['real_seconds']:.2f} ({r['real_seconds_min']:.2f}-"
            f"{r['real_seconds_max']:.2f}) | {fmt(r['predicted_seconds'])} | {fmt(r['time_error'], True)} | "
            f"{r['real_updates']:.0f} | {fmt(r['predicted_updates'])} | {fmt(r['updates_error'], True)} | "
            f"{r['real_seconds_per_update']:.4f} | {fmt(r['predicted_seconds_per_update'])} | "
            f"{fmt(r['step_error'], True)} |")
    lines += ["", "| network | settings | Spearman | best real | best predicted | its real time over "
              "the best | real runs short of the target |", "|---|---|---|---|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['network']} | {s['settings']} | {fmt(s['spearman'])} | {s['best_real']} | "
                     f"{s['best_predicted']} | {fmt(s['best_predicted_real_gap'], True)} | "
                     f"{s['unreached'] or 'none'} |")
    med = lambda v: statistics.median(v) if v else float("nan")
    lines += ["", f"Median |error| over settings and networks: time to target {fmt(med(errs), True)}, "
              f"updates to target (statistical proxy) {fmt(med(uerr), True)}, seconds per update "
              f"(simulated step) {fmt(med(serr), True)}.", ""]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(out, "comparison.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0]) if table else ["network"])
        w.writeheader()
        w.writerows(table)
    log("\n".join(lines))


COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]


def svg_plot(title, series, xlabel, ylabel, ymin=0.0, ymax=1.0, width=640, height=360):
    """series: [(label, color, dashed, [(x, y)])] -> an SVG line chart."""
    xs = [x for _, _, _, pts in series for x, _ in pts] or [1.0]
    xmax = max(xs) * 1.05 or 1.0
    L, R, T, B = 60, 150, 30, 45
    pw, ph = width - L - R, height - T - B
    sx = lambda x: L + pw * x / xmax
    sy = lambda y: T + ph * (1 - (min(max(y, ymin), ymax) - ymin) / (ymax - ymin))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{L}" y="18" font-size="13">{title}</text>',
           f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    for k in range(6):
        y = ymin + (ymax - ymin) * k / 5
        out.append(f'<text x="{L - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
        x = xmax * k / 5
        out.append(f'<text x="{sx(x):.1f}" y="{T + ph + 15}" text-anchor="middle">{x:.0f}</text>')
    out.append(f'<text x="{L + pw / 2}" y="{height - 8}" text-anchor="middle">{xlabel}</text>')
    out.append(f'<text x="14" y="{T + ph / 2}" transform="rotate(-90 14 {T + ph / 2})" '
               f'text-anchor="middle">{ylabel}</text>')
    for i, (label, color, dashed, pts) in enumerate(series):
        if pts:
            d = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            dash = ' stroke-dasharray="5,3"' if dashed else ""
            out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="1.5"{dash}/>')
        out.append(f'<text x="{L + pw + 8}" y="{T + 12 + 14 * i}" fill="{color}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out)


def proxy_curves(out, net):
    """{setting: [(updates, accuracy)]} of the proxy's seed 1, from dtsim tta's curves.csv."""
    curves = {}
    base = os.path.join(out, "predicted", net)
    if not os.path.isdir(base):
        return curves
    for group in os.listdir(base):
        path = os.path.join(base, group, "curves.csv")
        if not os.path.exists(path):
            continue
        for r in csv.DictReader(open(path)):
            if r.get("seed", "1") not in ("1", "0") or not r.get("accuracy"):
                continue
            name = group
            if group == "local-sgd":  # setting "local_sgd H=8"
                name = "H" + r["setting"].split("H=")[-1]
            curves.setdefault(name, []).append((float(r["update"]), float(r["accuracy"])))
    return curves


def write_page(out, args, preds):
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>dtsim tta against real runs"
             "</title></head><body style='font-family:sans-serif'>",
             "<h1>Time to accuracy: predicted (dashed) and real (solid)</h1>",
             f"<p>{MODEL} on Fashion-MNIST, {WORKERS} workers; held-out accuracy on the first "
             f"{EVAL_SAMPLES} test images against training seconds (seed 1 of each setting). "
             "Predicted: the proxy's accuracy curve at the simulated seconds per update. "
             "Table: summary.md.</p>"]
    spu = {(net, name): float(r["seconds_per_update"]) for net, rows in preds.items()
           for name, r in rows.items() if r.get("seconds_per_update")}
    for net in args.networks:
        net = net or "shared-memory"
        proxy = proxy_curves(out, net)
        series = []
        for i, name in enumerate(args.settings):
            color = COLORS[i % len(COLORS)]
            path = os.path.join(out, "real", net, name, "seed1", "exec.json")
            if os.path.exists(path):
                pts = [(p["train_seconds"], p["accuracy"])
                       for p in json.load(open(path))["eval"]["points"]]
                series.append((name + " real", color, False, pts))
            if name in proxy and spu.get((net, name)):
                series.append((name + " predicted", color, True,
                               [(u * spu[(net, name)], a) for u, a in proxy[name]]))
        parts.append(svg_plot(f"{net}: held-out accuracy", series, "training seconds", "accuracy",
                              ymin=0.5, ymax=0.9))
    parts.append("</body></html>")
    with open(os.path.join(out, "index.html"), "w") as f:
        f.write("\n".join(parts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="sync and H8, 1 seed, 1Gbps")
    ap.add_argument("--out", default="results/tta-fashion-mnist")
    ap.add_argument("--dtsim", default="build/tools/dtsim")
    ap.add_argument("--networks", default="100Mbps,1Gbps",
                    help="emulated networks (root); 'none' = shared memory")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--skip-real", action="store_true", help="reuse OUT/real_runs.csv")
    ap.add_argument("--page-only", action="store_true",
                    help="only rewrite OUT/index.html from OUT's runs and predictions")
    args = ap.parse_args()
    if args.quick:
        args.settings, args.seeds = "sync,H8", 1
        args.networks = "1Gbps" if args.networks == "100Mbps,1Gbps" else args.networks
    args.settings = args.settings.split(",")
    args.networks = ["" if n == "none" else n for n in args.networks.split(",")]
    for s in args.settings:
        if s not in SETTINGS:
            raise SystemExit(f"tta_check: unknown setting {s}; known: {', '.join(SETTINGS)}")
    if not os.path.exists(os.path.join(DATA, "t10k-images-idx3-ubyte.gz")):
        print(f"tta_check: no {DATA} (apt-get install dataset-fashion-mnist): skipped")
        return 77
    if any(args.networks) and os.geteuid() != 0:
        raise SystemExit("tta_check: --network needs root (use --networks none)")
    dtsim = os.path.abspath(args.dtsim)
    out = args.out
    os.makedirs(out, exist_ok=True)
    profile = os.path.abspath("results/calibration/device_profile.yaml")
    if not os.path.exists(profile):
        run([dtsim, "calibrate", "--quick", "-o", profile])
    if args.page_only:
        preds = {}
        for net in args.networks:
            net = net or "shared-memory"
            preds[net] = {}
            for group in ("sync", "local-sgd", "async-ps"):
                path = os.path.join(out, "predicted", net, group, "tta.csv")
                for r in csv.DictReader(open(path)) if os.path.exists(path) else []:
                    name = "H" + r["parallelism.averaging_period"] if group == "local-sgd" else group
                    preds[net][name] = r
        write_page(out, args, preds)
        return 0
    t0 = time.monotonic()
    if args.skip_real:
        rows = list(csv.DictReader(open(os.path.join(out, "real_runs.csv"))))
    else:
        rows = real_runs(args, dtsim, out, profile)
        with open(os.path.join(out, "real_runs.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    real_s = time.monotonic() - t0
    log(f"real runs: {real_s:.0f} s")
    t1 = time.monotonic()
    preds = {net or "shared-memory": predicted(args, dtsim, out, profile, net) for net in args.networks}
    pred_s = time.monotonic() - t1
    table, summary = compare(args, rows, preds)
    write_summary(out, args, table, summary, real_s, pred_s)
    write_page(out, args, preds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
