#!/usr/bin/env bash
# Behaviour check for refactors: runs every shipped scenario through the
# commands whose outputs must not move, and either records them or compares
# them with an earlier recording byte for byte.
#
#   scripts/check_unchanged.sh record DIR [DTSIM]   write the outputs under DIR
#   scripts/check_unchanged.sh compare DIR [DTSIM]  run again and diff with DIR
#
# DTSIM defaults to build/tools/dtsim. What is compared:
#   - report.json of `dtsim run` for every scenarios/*.yaml that is not a sweep
#     or search scenario (lists in it make it a sweep), on the analytic engine;
#   - sweep.csv of `dtsim sweep` for every scenarios/sweep-*.yaml;
#   - search.csv of `dtsim search` for every scenarios/*-search.yaml;
#   - the losses of `dtsim exec` (exec.json's per-iteration losses;
#     times are measurements and vary) for the small scenarios/local ones.
# Exit status: 0 when everything matches, 1 on any difference, 2 on misuse.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 record|compare DIR [DTSIM]" >&2; exit 2; }
mode=$1 dir=$2 dtsim=${3:-build/tools/dtsim}
case "$mode" in record|compare) ;; *) echo "$0: mode must be record or compare" >&2; exit 2 ;; esac
[ -x "$dtsim" ] || { echo "$0: $dtsim is not built" >&2; exit 2; }
if [ "$mode" = record ]; then out=$dir; rm -rf "$out"; else out=$(mktemp -d); fi
trap '[ "$mode" = compare ] && rm -rf "$out"' EXIT
mkdir -p "$out"

for f in scenarios/*.yaml; do
  n=$(basename "$f" .yaml)
  case "$n" in
    sweep-*)
      "$dtsim" sweep "$f" -q -j 2 -o "$out/work/$n" > /dev/null
      cp "$out/work/$n/sweep.csv" "$out/$n.sweep.csv" ;;
    *-search)
      "$dtsim" search "$f" -o "$out/work/$n" > /dev/null
      cp "$out/work/$n/search.csv" "$out/$n.search.csv" ;;
    *)
      "$dtsim" run "$f" -q --no-trace -o "$out/work/$n" > /dev/null
      cp "$out/work/$n/report.json" "$out/$n.report.json" ;;
  esac
  echo "  $n" >&2
done
for f in scenarios/local/cifar10-1cpu.yaml scenarios/local/cifar10-dp-2cpu.yaml \
         scenarios/local/cifar10-localsgd-2cpu.yaml scenarios/local/cifar10-ps-2workers.yaml \
         scenarios/local/cifar10-pipeline-2cpu.yaml; do
  n=exec-$(basename "$f" .yaml)
  "$dtsim" exec "$f" --iterations 6 --portable -q -o "$out/work/$n" > /dev/null
  python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
json.dump({k: r[k] for k in ("loss", "ranks", "iterations", "samples_per_iteration") if k in r}, sys.stdout, sort_keys=True)' \
    "$out/work/$n/exec.json" > "$out/$n.losses.json"
  echo "  $n" >&2
done
rm -rf "$out/work"

if [ "$mode" = compare ]; then
  if diff -r "$dir" "$out" > /dev/null; then
    echo "unchanged: $(ls "$out" | wc -l) outputs equal those in $dir"
  else
    diff -r -q "$dir" "$out" || true
    echo "CHANGED: the outputs above differ from those in $dir" >&2
    exit 1
  fi
else
  echo "recorded $(ls "$out" | wc -l) outputs in $out"
fi
