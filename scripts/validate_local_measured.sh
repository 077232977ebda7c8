#!/bin/sh
# Closes the measurement loop on this machine: profiles every scenario of
# scenarios/local/ with `dtsim profile` (an op-cost table per scenario) and
# validates it against real runs with `dtsim validate --cost-table` at once,
# three passes over all of them in a row, and writes the step-time errors and
# their median per scenario to $OUT/summary.md (docs/measured_costs.md).
#
#   scripts/validate_local_measured.sh            # all of scenarios/local/
#   scripts/validate_local_measured.sh cifar10-1cpu cifar10-dp-2cpu
#
# The *-1gbps scenarios run under `--network 1Gbps` (root: network
# namespaces and tc); without root they are skipped. Environment: DTSIM
# (default build/tools/dtsim), OUT (default results/local-measured), PASSES
# (default 3), CALIBRATE=0 to keep an existing device profile, BASELINE=1
# to also validate each scenario with the device profile alone (the
# roofline with measured per-kind efficiencies), in the same pass.
set -eu
DTSIM=${DTSIM:-build/tools/dtsim}
OUT=${OUT:-results/local-measured}
PASSES=${PASSES:-3}
mkdir -p "$OUT/runs"

if [ $# -gt 0 ]; then
  names="$*"
else
  names=$(for f in scenarios/local/*.yaml; do basename "$f" .yaml; done)
fi
network_of() {
  case "$1" in *-1gbps) echo "--network 1Gbps" ;; *) echo "" ;; esac
}
runnable() {
  case "$1" in *-1gbps) [ "$(id -u)" -eq 0 ] ;; *) true ;; esac
}

# The links, scheduler handoff and input draws still come from the device
# profile; compute comes from the tables.
if [ "${CALIBRATE:-1}" != 0 ]; then
  echo "== calibrate --ranks 2" >&2
  "$DTSIM" calibrate --ranks 2 --out results/calibration/device_profile.yaml > "$OUT/runs/calibrate.log"
fi

# Each pass profiles a scenario right before validating it: this VM's speed
# drifts by 10-30% within the hour, and the table is to describe the machine
# the run meets. The last pass's tables are kept in $OUT.
: > "$OUT/errors.csv"
: > "$OUT/baseline_errors.csv"
pass=1
while [ "$pass" -le "$PASSES" ]; do
  for n in $names; do
    runnable "$n" || { echo "== skip $n (needs root)" >&2; continue; }
    echo "== pass $pass: profile and validate $n" >&2
    "$DTSIM" profile "scenarios/local/$n.yaml" --out "$OUT/$n.json" --quiet \
      > "$OUT/runs/$n-pass$pass.profile.log"
    # shellcheck disable=SC2046
    "$DTSIM" validate "scenarios/local/$n.yaml" $(network_of "$n") --cost-table "$OUT/$n.json" \
      --out "$OUT/runs/$n-pass$pass" --quiet > "$OUT/runs/$n-pass$pass.log" 2>&1 || {
      echo "validate $n failed: see $OUT/runs/$n-pass$pass.log" >&2; exit 1; }
    python3 - "$OUT/runs/$n-pass$pass/validation.json" "$n" "$pass" >> "$OUT/errors.csv" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]},{sys.argv[3]},{j['predicted']['step_time_s']:.6f},"
      f"{j['measured']['step_time_s']:.6f},{j['error_percent']['step_time']:.2f}")
PY
    if [ "${BASELINE:-0}" != 0 ]; then
      # The same scenario predicted with the device profile alone.
      # shellcheck disable=SC2046
      "$DTSIM" validate "scenarios/local/$n.yaml" $(network_of "$n") \
        --out "$OUT/runs/$n-pass$pass-profile" --quiet > "$OUT/runs/$n-pass$pass-profile.log" 2>&1 || {
        echo "validate $n failed: see $OUT/runs/$n-pass$pass-profile.log" >&2; exit 1; }
      python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(f\"{sys.argv[2]},{sys.argv[3]},{j['error_percent']['step_time']:.2f}\")" \
        "$OUT/runs/$n-pass$pass-profile/validation.json" "$n" "$pass" >> "$OUT/baseline_errors.csv"
    fi
  done
  pass=$((pass + 1))
done

python3 - "$OUT/errors.csv" "$OUT/baseline_errors.csv" > "$OUT/summary.md" <<'PY'
import csv, statistics, sys
rows = {}
for name, p, pred, meas, err in csv.reader(open(sys.argv[1])):
    rows.setdefault(name, []).append((float(pred), float(meas), float(err)))
print("| scenario (`scenarios/local/`) | predicted step | errors of the passes | median |")
print("|---|---:|---|---:|")
medians = []
for name, r in rows.items():
    errs = [e for _, _, e in r]
    med = statistics.median(errs)
    medians.append(abs(med))
    print(f"| `{name}` | {statistics.median(p for p, _, _ in r):.4f} s | "
          + ", ".join(f"{e:+.1f}%" for e in errs) + f" | {med:+.1f}% |")
print()
print(f"within 5% by the median: {sum(m <= 5 for m in medians)} of {len(medians)}; "
      f"median of |median errors| {statistics.median(medians):.1f}%, max {max(medians):.1f}%")
base = {}
for line in open(sys.argv[2]):
    name, p, err = line.strip().split(",")
    base.setdefault(name, []).append(float(err))
if base:
    print()
    print("Device profile alone (roofline with measured efficiencies), the same passes:")
    print()
    print("| scenario | errors of the passes | median |")
    print("|---|---|---:|")
    bm = []
    for name, errs in base.items():
        med = statistics.median(errs)
        bm.append(abs(med))
        print(f"| `{name}` | " + ", ".join(f"{e:+.1f}%" for e in errs) + f" | {med:+.1f}% |")
    print()
    print(f"within 5% by the median: {sum(m <= 5 for m in bm)} of {len(bm)}; "
          f"median of |median errors| {statistics.median(bm):.1f}%, max {max(bm):.1f}%")
PY
cat "$OUT/summary.md"
