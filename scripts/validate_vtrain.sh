#!/usr/bin/env bash
# Builds dtsim and predicts every measured run of vTrain's data (Megatron-
# DeepSpeed iteration times on A100 clusters): results/vtrain/ gets
# predictions.csv, summary.json, summary.md and scatter.svg. Arguments go to
# `dtsim validate vtrain` (e.g. --limit 20, --jobs 2, --data DIR, --out DIR).
# The data is read from ../shared/validation/vtrain unless --data says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${DTSIM_CMAKE_ARGS:-}
cmake --build build -j"$jobs" --target dtsim
./build/tools/dtsim validate vtrain "$@"
