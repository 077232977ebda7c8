#!/usr/bin/env bash
# Checks the CUDA backend against the CPU backend on a GPU machine that has
# the CUDA toolkit and CMake but none of dtsim's Debian libraries.
#
#   scripts/device_cuda_check.sh prepare
#       On the development machine: copies GoogleTest's sources
#       (/usr/src/googletest) and Eigen's headers (/usr/include/eigen3) into
#       build-device/ (git-ignored, ~14 MB), to be carried to the GPU machine.
#   scripts/device_cuda_check.sh run
#       On the GPU machine: configures and builds exec/cuda/standalone in
#       build-device/build (sm_90 only unless DTSIM_CUDA_ARCHS is set) and runs
#       cuda_backend_test and nccl_communicator_test. Logs and GoogleTest XML
#       go to $OUT when it is set (else build-device/out). The exit status is
#       non-zero when the build or a test fails, or a test was skipped (no
#       usable GPU; DTSIM_ALLOW_SKIP=1 accepts skips, e.g. to try the build
#       on a machine without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-device

case "${1:-}" in
  prepare)
    mkdir -p "$dir"
    # A build folder configured here would name this machine's paths.
    rm -rf "$dir/googletest" "$dir/eigen3" "$dir/build" "$dir/out"
    cp -r /usr/src/googletest "$dir/googletest"
    cp -r /usr/include/eigen3 "$dir/eigen3"
    du -sh "$dir/googletest" "$dir/eigen3"
    echo "prepared $dir: carry it to the GPU machine, then run: $0 run"
    ;;
  run)
    for need in "$dir/googletest/CMakeLists.txt" "$dir/eigen3/Eigen/Core"; do
      [[ -e $need ]] || { echo "missing $need: run '$0 prepare' first" >&2; exit 2; }
    done
    out=${OUT:-$dir/out}
    mkdir -p "$out"
    nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
    cuda_args=()
    if ! command -v nvcc > /dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
      cuda_args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
    fi
    jobs=$(nproc 2>/dev/null || echo 4)
    {
      cmake -S exec/cuda/standalone -B "$dir/build" -DCMAKE_BUILD_TYPE=Release \
        -DGTEST_SRC="$PWD/$dir/googletest" -DEIGEN_DIR="$PWD/$dir/eigen3" \
        -DDTSIM_CUDA_ARCHITECTURES="${DTSIM_CUDA_ARCHS:-90}" "${cuda_args[@]}"
      cmake --build "$dir/build" -j"$jobs"
    } > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; echo "build failed" >&2; exit 1; }
    status=0
    for test in cuda_backend_test nccl_communicator_test; do
      [[ -x $dir/build/$test ]] || continue
      "$dir/build/$test" --gtest_output="xml:$out/$test.xml" 2>&1 | tee "$out/$test.log" ||
        status=1
    done
    # On the GPU machine a skipped test means the GPU was not usable.
    if [[ ${DTSIM_ALLOW_SKIP:-0} != 1 ]] && grep -qs '^\[  SKIPPED \]' "$out"/*_test.log; then
      echo "tests were skipped (no usable GPU?); DTSIM_ALLOW_SKIP=1 accepts that" >&2
      status=1
    fi
    exit "$status"
    ;;
  *)
    echo "usage: $0 prepare|run" >&2
    exit 2
    ;;
esac
