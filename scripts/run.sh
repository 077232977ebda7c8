#!/usr/bin/env bash
# The quick first run: installs only what building dtsim needs
# (scripts/setup.sh --run), builds the dtsim binary alone into build-run/
# (no tests, benchmarks or CUDA module: `dtsim run` needs none of them) and
# runs a scenario (default: scenarios/default.yaml). Arguments after the
# scenario go to `dtsim run`. Extra CMake options can be passed in
# DTSIM_CMAKE_ARGS (after these, so they win). scripts/test.sh builds
# everything, tests included, into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --run
jobs=$(nproc 2>/dev/null || echo 2)
# shellcheck disable=SC2086  # DTSIM_CMAKE_ARGS holds several words
cmake -S . -B build-run -DCMAKE_BUILD_TYPE=Release -DDTSIM_BUILD_TESTS=OFF -DDTSIM_BUILD_BENCH=OFF \
  -DDTSIM_CUDA=OFF ${DTSIM_CMAKE_ARGS:-}
cmake --build build-run -j"$jobs" --target dtsim
scenario=${1:-scenarios/default.yaml}
shift || true
./build-run/tools/dtsim run "$scenario" "$@"
