#!/usr/bin/env bash
# Installs what is missing, builds dtsim with its tests and runs the whole
# test suite. Extra CMake options can be passed in DTSIM_CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${DTSIM_CMAKE_ARGS:-}
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
