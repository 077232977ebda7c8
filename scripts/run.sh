#!/usr/bin/env bash
# Installs what is missing, builds the dtsim binary and runs a scenario
# (default: scenarios/default.yaml). Arguments after the scenario go to
# `dtsim run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${DTSIM_CMAKE_ARGS:-}
cmake --build build -j"$jobs" --target dtsim
scenario=${1:-scenarios/default.yaml}
shift || true
./build/tools/dtsim run "$scenario" "$@"
