#!/usr/bin/env bash
# Installs what is missing, builds dtsim with its tests and runs them. Extra
# CMake options can be passed in DTSIM_CMAKE_ARGS.
#
#   scripts/test.sh                  the whole suite, in build/ (what CI runs)
#   scripts/test.sh --fast           every test but the slow and MPI ones, and
#                                    the GPU ones where no GPU is visible
#                                    (labels: cmake/DtsimTestLabels.cmake,
#                                    docs/testing.md)
#   scripts/test.sh --sanitize       the whole suite under AddressSanitizer and
#                                    UndefinedBehaviorSanitizer (GCC), in
#                                    build-sanitize/ (docs/fuzzing.md)
#   scripts/test.sh [--sanitize] --only config_test,sim_test
#                                    only these test programs (their targets
#                                    are built and their tests run, nothing
#                                    else; CI uses it for the sanitized step)
#
# Any failing test, sanitizer report included, makes the exit status non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: $0 [--fast] [--sanitize] [--only TEST_PROGRAM[,TEST_PROGRAM...]]" >&2
  exit 2
}
sanitize=0
fast=0
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --fast) fast=1 ;;
    --sanitize) sanitize=1 ;;
    --only) [ $# -ge 2 ] || usage; only=$2; shift ;;
    --only=*) only=${1#--only=} ;;
    *) usage ;;
  esac
  shift
done

scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
exclude=()
if [ "$sanitize" = 1 ]; then
  build=build-sanitize
  # Not run under the sanitizers, each for a reason outside dtsim:
  #  - SimgridEngine.RunsFromSeveralThreadsAtOnce forks (sim/engine/simgrid_engine.cc
  #    runs each SimGrid simulation in a child) from several threads at once.
  #    GCC 12's libasan takes no lock of its allocator around fork(), so a
  #    child forked while another thread allocates inherits a held allocator
  #    lock and waits forever (seen: the child in SizeClassAllocator64::
  #    GetFromAllocator under simgrid::config::set_parse). glibc's malloc is
  #    fork-safe, so the plain build runs the test.
  exclude=(-E '^SimgridEngine\.RunsFromSeveralThreadsAtOnce$')
  echo "test.sh --sanitize: not run under the sanitizers (see scripts/test.sh): ${exclude[1]}"
  # -O1 with line tables: reports name file:line, the build stays quick and
  # the tests run at a usable speed. Benchmarks are not tests.
  cmake_args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DDTSIM_SANITIZE=ON
              -DDTSIM_BUILD_BENCH=OFF)
else
  build=build
  cmake_args=(-DCMAKE_BUILD_TYPE=Release)
fi
if [ "$fast" = 1 ]; then
  skip='slow|mpi'
  nvidia-smi -L >/dev/null 2>&1 || skip="$skip|gpu"
  exclude_labels=(-LE "^($skip)\$")
  echo "test.sh --fast: not run: tests labelled ${skip//|/, }"
else
  exclude_labels=()
fi
# shellcheck disable=SC2086  # DTSIM_CMAKE_ARGS holds several words
cmake -S . -B "$build" "${cmake_args[@]}" ${DTSIM_CMAKE_ARGS:-}

if [ -n "$only" ]; then
  IFS=, read -r -a programs <<< "$only"
  cmake --build "$build" -j"$jobs" --target "${programs[@]}"
  # Each test carries its program's name as label (cmake/DtsimHelpers.cmake).
  labels="^($(IFS='|'; echo "${programs[*]}"))\$"
  ctest --test-dir "$build" --output-on-failure -j"$jobs" -L "$labels" --no-tests=error \
    "${exclude[@]}" "${exclude_labels[@]}"
else
  cmake --build "$build" -j"$jobs"
  ctest --test-dir "$build" --output-on-failure -j"$jobs" "${exclude[@]}" "${exclude_labels[@]}"
fi
