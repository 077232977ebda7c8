#!/usr/bin/env python3
"""Lists the slowest tests of the last ctest run, with their labels.

  scripts/test_times.py                      build/'s last run, 25 slowest
  scripts/test_times.py --build build-x -n 50
  scripts/test_times.py --over 2             only tests over 2 s (the
                                             threshold of the `slow` label)
  scripts/test_times.py --junit run.xml      a `ctest --output-junit` file

Reads build/Testing/Temporary/LastTest.log, which every ctest run rewrites
(so after `ctest -R X` it holds only X's tests). Times are wall-clock
seconds per test as ctest measured them, which under -j2 includes waiting
for the CPU. Labels are ctest's own (`ctest --show-only=json-v1`). Prints
the number of tests and their summed time too.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def times_from_log(path):
    """{test name: seconds} from a LastTest.log."""
    times = {}
    name = None
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"^\d+/\d+ Test: (.+)$", line)
        if m:
            name = m.group(1)
            continue
        m = re.match(r"^Test time =\s*([0-9.]+) sec", line)
        if m and name is not None:
            times[name] = float(m.group(1))
            name = None
    return times


def times_from_junit(path):
    """{test name: seconds} from `ctest --output-junit` XML."""
    root = ET.parse(path).getroot()
    return {tc.get("name"): float(tc.get("time", 0)) for tc in root.iter("testcase")}


def labels_of(build):
    """{test name: [labels]} as ctest sees them (empty if ctest fails)."""
    # Even `ctest --show-only` rewrites LastTest.log: keep the run's record.
    log = build / "Testing" / "Temporary" / "LastTest.log"
    saved = log.read_bytes() if log.exists() else None
    try:
        out = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    finally:
        if saved is not None:
            log.write_bytes(saved)
    labels = {}
    for t in json.loads(out).get("tests", []):
        for p in t.get("properties", []):
            if p.get("name") == "LABELS":
                labels[t["name"]] = p.get("value", [])
    return labels


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="build folder (default build)")
    ap.add_argument("--junit", help="read this ctest --output-junit file instead")
    ap.add_argument("-n", type=int, default=25, help="how many to list (default 25)")
    ap.add_argument("--over", type=float, help="list every test over this many seconds")
    args = ap.parse_args()

    build = pathlib.Path(args.build)
    if args.junit:
        times = times_from_junit(args.junit)
    else:
        log = build / "Testing" / "Temporary" / "LastTest.log"
        if not log.exists():
            sys.exit(f"test_times: no {log}; run ctest --test-dir {build} first")
        times = times_from_log(log)
    labels = labels_of(build)
    ranked = sorted(times.items(), key=lambda kv: -kv[1])
    if args.over is not None:
        ranked = [kv for kv in ranked if kv[1] > args.over]
    else:
        ranked = ranked[:args.n]
    for name, sec in ranked:
        print(f"{sec:8.2f} s  {name}  [{','.join(labels.get(name, []))}]")
    print(f"{len(times)} tests, {sum(times.values()):.1f} s summed "
          f"({len(ranked)} listed)")


if __name__ == "__main__":
    main()
