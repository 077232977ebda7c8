#!/usr/bin/env python3
"""Sums an Nsight Compute CSV (ncu --csv --page raw --metrics
gpu__time_duration.sum) by kernel name: one line per name with its launches,
total and share of the GPU time, largest first.

    python3 scripts/ncu_kernel_table.py ncu.csv [--top 30]
"""
import argparse
import csv
import re
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    with open(a.csv, newline="") as f:
        # ncu prints its own lines (==PROF==, the program's output) before the table.
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.DictReader(lines))
    totals, counts = {}, {}
    for row in rows:
        value = row.get("gpu__time_duration.sum", "").replace(",", "")
        try:
            ns = float(value)
        except ValueError:
            continue  # the units row
        # Templates and argument lists make every instance its own name.
        name = row.get("Kernel Name", "?")
        name = re.sub(r"\((anonymous namespace|<unnamed>)\)::|<unnamed>::", "", name)
        name = re.sub(r"\(.*", "", name)
        name = re.sub(r"<.*", "", name)[:70]
        totals[name] = totals.get(name, 0.0) + ns
        counts[name] = counts.get(name, 0) + 1
    total = sum(totals.values())
    if total == 0:
        print("ncu_kernel_table: no kernel durations in %s" % a.csv)
        return 1
    print("%d kernels, %.2f ms of GPU time" % (sum(counts.values()), total / 1e6))
    for name in sorted(totals, key=totals.get, reverse=True)[:a.top]:
        print("%9.3f ms %5.1f%% %6d  %s" % (totals[name] / 1e6, 100 * totals[name] / total,
                                             counts[name], name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
