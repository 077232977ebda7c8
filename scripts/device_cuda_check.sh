#!/usr/bin/env bash
# Runs the CUDA path of dtsim on a GPU machine that has the CUDA toolkit,
# CMake and PyTorch but none of dtsim's Debian libraries (issue 14, item 5).
#
#   scripts/device_cuda_check.sh prepare
#       On the development machine, after building (build/, with CUDA):
#       fills build-device/ (git-ignored) with
#         bin/        dtsim and its CUDA module (libdtsim-cuda.so),
#                     cuda_backend_test, nccl_communicator_test and
#                     cuda_kernels_bench from build/;
#         root.tar.gz the Debian libraries they load (ldd's list, less the
#                     CUDA libraries and the C library) and OpenMPI (mpirun,
#                     its plug-ins, PMIx), at their Debian paths;
#         googletest/, eigen3/  sources for the standalone build
#                     (exec/cuda/standalone), which needs only CUDA.
#   scripts/device_cuda_check.sh run
#       On the GPU machine (as root): unpacks root.tar.gz into / without
#       replacing any file already there, then
#         1. runs every CUDA and NCCL test (the binaries built here, sm_80 and
#            sm_90);
#         2. cuda_kernels_bench: cuBLAS GEMM TFLOP/s per precision, and the
#            backend's GEMM, convolution and attention;
#         3. dtsim exec --backend cuda on scenarios/gpu/ (CIFAR-10 CNN,
#            ResNet-50, GPT-2 small; one GPU, fp32) against
#            scripts/torch_reference.py on the same card;
#         4. two MPI ranks sharing the GPU (MPI-staged all-reduce): the
#            data-parallel and pipeline CIFAR-10 scenarios of scenarios/local/;
#         5. the standalone build of the CUDA tests from source, and its tests.
#       DTSIM_BENCH_FILTER picks benchmarks (a regex); DTSIM_TORCH_MODELS
#       (e.g. "resnet50") and DTSIM_TORCH_FP32=1 narrow PyTorch's runs.
#       DTSIM_SKIP_STANDALONE=1 skips step 5; DTSIM_QUICK=1 runs only the
#       tests, two of the training steps (no PyTorch), `dtsim devices` and
#       step 4.
#       Writes summary.txt (every result line), bench.json and logs.tar.gz to
#       $OUT when set (else build-device/out). Exits non-zero when a test
#       fails or is skipped (no usable GPU; DTSIM_ALLOW_SKIP=1 accepts skips),
#       or a run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-device
build=${DTSIM_BUILD:-build}

# The files each of `binaries` loads (ldd), less the CUDA libraries (the GPU
# machine has its own, matching its driver) and glibc's own.
library_closure() {
  ldd "$@" 2>/dev/null | awk '/=> \// {print $3}' | sort -u |
    grep -Ev '^/usr/local/cuda|/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64)\.so' || true
}

# On the GPU machine: unpacks the carried libraries, points the loader at the
# CUDA libraries and lets OpenMPI run as root; sets out, logs, summary, bin,
# say and fail.
setup_machine() {
  for need in "$dir/root.tar.gz" "$dir/bin/dtsim" "$dir/googletest/CMakeLists.txt"; do
    [[ -e $need ]] || { echo "missing $need: run '$0 prepare' first" >&2; exit 2; }
  done
  out=${OUT:-$dir/out}
  logs=$dir/logs
  mkdir -p "$out" "$logs"
  summary=$out/summary.txt
  : > "$summary"
  say() { echo "$*" | tee -a "$summary"; }
  status=0
  fail() { say "FAILED: $*"; status=1; }

  nvidia-smi > "$logs/nvidia-smi.txt" 2>&1 || true
  say "== machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv,noheader 2>&1 | head -1); $(nproc) cores; $(nvcc --version 2>&1 | tail -1)"
  say "mpirun before unpacking: $(command -v mpirun || echo none)"
  # Paths are under /usr (merged /usr: /lib is a link there); neither a file
  # already there nor a link to a folder is replaced.
  tar -xzf "$dir/root.tar.gz" -C / --skip-old-files --keep-directory-symlink
  ldconfig || true
  # CUDA libraries: the toolkit's, then PyTorch's wheels (NCCL, cuBLAS).
  libs=/usr/local/cuda/lib64
  for d in $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in os.listdir(p)))' 2>/dev/null); do
    [[ -d $d ]] && libs=$libs:$d
  done
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  bin=$PWD/$dir/bin
}

case "${1:-}" in
  prepare)
    mkdir -p "$dir/bin"
    rm -rf "$dir/googletest" "$dir/eigen3" "$dir/build" "$dir/out" "$dir/bin"/* "$dir/root.tar.gz"
    cp -r /usr/src/googletest "$dir/googletest"
    cp -r /usr/include/eigen3 "$dir/eigen3"
    bins=("$build/tools/dtsim" "$build/tools/libdtsim-cuda.so" "$build/exec/cuda/cuda_backend_test"
          "$build/exec/cuda/nccl_communicator_test" "$build/bench/cuda_kernels_bench")
    for b in "${bins[@]}"; do
      [[ -f $b ]] || { echo "missing $b: build it first (cmake --build $build)" >&2; exit 2; }
      cp "$b" "$dir/bin/"
    done
    # OpenMPI's files (mpirun, orted, plug-ins, help texts) and PMIx's, then
    # every library any of them or the binaries loads.
    mpi_files=$(dpkg -L openmpi-bin openmpi-common libopenmpi3 libpmix2 |
      grep -Ev '/(doc|man|lintian)/' | while read -r f; do [[ -f $f ]] && echo "$f"; done)
    plugins=$(echo "$mpi_files" | grep '\.so$' || true)
    { echo "$mpi_files"; library_closure "${bins[@]}" /usr/bin/orterun /usr/bin/orted $plugins
      echo /usr/bin/mpirun; } | sed 's#^/lib/#/usr/lib/#' | sort -u > "$dir/root.files"
    # -h: links are stored as the files they point to (sonames, alternatives).
    tar -chzf "$dir/root.tar.gz" -T "$dir/root.files" 2>/dev/null
    du -sh "$dir/bin" "$dir/root.tar.gz" "$dir/googletest" "$dir/eigen3"
    echo "prepared $dir: carry it to the GPU machine, then run: $0 run"
    ;;
  run)
    setup_machine
    say "dtsim loads: $(ldd "$bin/dtsim" "$bin/libdtsim-cuda.so" |
      grep -E 'not found|cuda|cublas|nccl|mpi\.' | tr -s ' \t\n' ' ')"

    # 1. Every CUDA and NCCL test.
    for test in cuda_backend_test nccl_communicator_test; do
      if timeout 120 "$bin/$test" > "$logs/$test.log" 2>&1; then
        say "$test: $(grep -E '^\[  PASSED  \]' "$logs/$test.log")"
      else
        fail "$test"; tail -30 "$logs/$test.log" | tee -a "$summary"
      fi
      if grep -q '^\[  SKIPPED \]' "$logs/$test.log" && [[ ${DTSIM_ALLOW_SKIP:-0} != 1 ]]; then
        fail "$test skipped tests (no usable GPU?)"
      fi
    done

    # DTSIM_QUICK=1: tests, the CIFAR-10 and ResNet-50 steps without
    # PyTorch, `dtsim devices` and two ranks; no benchmarks, no standalone
    # build (a check of the CUDA path after a change, in about a minute).
    quick=${DTSIM_QUICK:-0}
    if [[ $quick == 1 ]]; then
      export DTSIM_SKIP_STANDALONE=1
      say "devices --local: $("$bin/dtsim" devices --local 2>&1 | grep -E '^  gpu|no GPU' | tr -s ' ' | head -2 | tr '\n' ' ')"
    fi

    # 2. Kernel benchmarks.
    if [[ $quick == 1 ]]; then :; elif timeout 150 "$bin/cuda_kernels_bench" --benchmark_min_time=0.3 \
        --benchmark_filter="${DTSIM_BENCH_FILTER:-.}" \
        --benchmark_out="$out/bench.json" --benchmark_out_format=json > "$logs/bench.log" 2>&1; then
      grep -E '^BM_' "$logs/bench.log" | tee -a "$summary"
    else
      fail "cuda_kernels_bench"; tail -20 "$logs/bench.log" | tee -a "$summary"
    fi

    # 3. Training steps: dtsim exec (CUDA backend), PyTorch, prediction.
    specs=("cifar10 cifar10-cnn 128 10" "resnet50 resnet50 64 6" "gpt2 gpt2 8 6")
    [[ $quick == 1 ]] && specs=("${specs[@]:0:2}")
    for spec in "${specs[@]}"; do
      set -- $spec
      scen=scenarios/gpu/$1-1xH100.yaml
      if timeout 150 "$bin/dtsim" exec "$scen" --backend cuda --iterations "$4" -q \
          -o "$logs/exec-$1" > "$logs/exec-$1.log" 2>&1; then
        say "dtsim exec $1: $(grep -E 'step time' "$logs/exec-$1.log")"
      else
        fail "dtsim exec $1"; tail -20 "$logs/exec-$1.log" | tee -a "$summary"
      fi
      "$bin/dtsim" run "$scen" -o "$logs/run-$1" > "$logs/run-$1.log" 2>&1 &&
        say "dtsim run $1 (predicted): $(grep -E '^throughput:' "$logs/run-$1.log")" ||
        fail "dtsim run $1"
      # ResNet-50's synthetic images take 4 threads about as long to draw as
      # the GPU takes to train on them: once more with 8, the GPU fed.
      if [[ $1 == resnet50 && $quick != 1 ]]; then
        if timeout 150 "$bin/dtsim" exec "$scen" --backend cuda --iterations "$4" -q \
            --input-threads 8 -o "$logs/exec-$1-8" > "$logs/exec-$1-8.log" 2>&1; then
          say "dtsim exec $1 --input-threads 8: $(grep -E 'step time' "$logs/exec-$1-8.log")"
        else
          fail "dtsim exec $1 --input-threads 8"; tail -20 "$logs/exec-$1-8.log" | tee -a "$summary"
        fi
      fi
      variants=("" "--tf32")
      [[ $1 == gpt2 ]] && variants+=("--attention=sdpa --tf32")
      # DTSIM_TORCH_FP32=1: PyTorch's fp32 step alone (the comparison the
      # targets name), for the models in DTSIM_TORCH_MODELS (default all).
      [[ ${DTSIM_TORCH_FP32:-0} == 1 ]] && variants=("")
      [[ " ${DTSIM_TORCH_MODELS:-$1} " == *" $1 "* ]] || variants=()
      [[ $quick == 1 ]] && variants=()
      for i in "${!variants[@]}"; do
        log=$logs/torch-$1-$i.log
        if timeout 120 python3 scripts/torch_reference.py "$2" --batch "$3" ${variants[$i]} \
            > "$log" 2>&1; then
          say "$(tail -2 "$log" | head -1 | cut -c1-90) | $(tail -1 "$log")"
        else
          fail "torch $1 ${variants[$i]}"; tail -8 "$log" | tee -a "$summary"
        fi
      done
    done

    # 4. Two ranks on one GPU: NCCL refuses them, so all-reduces and the
    # pipeline's activations go through MPI in host memory.
    for s in cifar10-dp-2cpu cifar10-pipeline-2cpu; do
      if timeout 120 "$bin/dtsim" exec "scenarios/local/$s.yaml" --backend cuda --iterations 6 -q \
          -o "$logs/exec-$s" > "$logs/exec-$s.log" 2>&1; then
        say "dtsim exec $s (2 ranks, 1 GPU): $(grep -E 'step time' "$logs/exec-$s.log")"
      else
        fail "dtsim exec $s"; tail -20 "$logs/exec-$s.log" | tee -a "$summary"
      fi
    done

    # 5. The standalone build (CUDA and GoogleTest only), sm_90; skipped with
    # DTSIM_SKIP_STANDALONE=1 (a rerun after it passed).
    cuda_args=()
    if ! command -v nvcc > /dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
      cuda_args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
    fi
    if [[ ${DTSIM_SKIP_STANDALONE:-0} == 1 ]]; then
      say "standalone build: skipped (DTSIM_SKIP_STANDALONE=1)"
    elif timeout "${DTSIM_STANDALONE_TIMEOUT:-150}" bash -c '
        cmake -S exec/cuda/standalone -B "$0/build" -DCMAKE_BUILD_TYPE=Release \
          -DGTEST_SRC="$PWD/$0/googletest" -DEIGEN_DIR="$PWD/$0/eigen3" \
          -DDTSIM_CUDA_ARCHITECTURES="${DTSIM_CUDA_ARCHS:-90}" "${@:1}" &&
        cmake --build "$0/build" -j"$(nproc)"' "$dir" "${cuda_args[@]}" \
        > "$logs/standalone-build.log" 2>&1; then
      for test in cuda_backend_test nccl_communicator_test; do
        [[ -x $dir/build/$test ]] || continue
        if "$dir/build/$test" > "$logs/standalone-$test.log" 2>&1; then
          say "standalone $test: $(grep -E '^\[  PASSED  \]' "$logs/standalone-$test.log")"
        else
          fail "standalone $test"
        fi
      done
    else
      fail "standalone build (or its time limit)"; tail -15 "$logs/standalone-build.log" | tee -a "$summary"
    fi

    rm -rf "$logs"/exec-*/checkpoints
    tar -czf "$out/logs.tar.gz" -C "$dir" logs
    say "status $status"
    exit "$status"
    ;;
  profile)
    # Where a training step's GPU time goes, kernel by kernel: Nsight Compute
    # (ncu, one duration metric, clocks as they are) over one iteration of
    # dtsim exec --backend cuda on scenarios/gpu/$DTSIM_PROFILE_MODEL-1xH100
    # (default resnet50), summed by kernel name; then PyTorch's profiler over
    # the same model's reference step, and scripts/torch_conv_layers.py
    # (cuDNN against im2col GEMMs, layer by layer). Writes the tables to
    # $OUT (summary.txt, ncu.csv, torch-profile.txt, conv-layers.txt).
    setup_machine
    model=${DTSIM_PROFILE_MODEL:-resnet50}
    scen=scenarios/gpu/$model-1xH100.yaml
    if timeout "${DTSIM_NCU_TIMEOUT:-240}" ncu --clock-control none --metrics gpu__time_duration.sum \
        --csv --page raw -c "${DTSIM_NCU_KERNELS:-4000}" "$bin/dtsim" exec "$scen" --backend cuda \
        --iterations 1 --input-threads 0 -q -o "$logs/ncu-$model" > "$out/ncu.csv" 2> "$logs/ncu.err"; then
      python3 scripts/ncu_kernel_table.py "$out/ncu.csv" | tee -a "$summary"
    else
      fail "ncu over dtsim exec $model"; tail -20 "$logs/ncu.err" "$out/ncu.csv" | tee -a "$summary"
    fi
    # DTSIM_PROFILE_TORCH=0: dtsim's kernels only (PyTorch's side unchanged).
    [[ ${DTSIM_PROFILE_TORCH:-1} == 0 ]] && { say "status $status"; exit "$status"; }
    python3 scripts/torch_reference.py "$model" --batch "${DTSIM_PROFILE_BATCH:-64}" --profile \
      > "$out/torch-profile.txt" 2>&1 || fail "torch profile"
    tail -40 "$out/torch-profile.txt" | tee -a "$summary"
    if [[ $model == resnet50 ]]; then
      timeout 200 python3 scripts/torch_conv_layers.py --batch 64 > "$out/conv-layers.txt" 2>&1 ||
        fail "torch_conv_layers"
      cat "$out/conv-layers.txt" | tee -a "$summary"
    fi
    say "status $status"
    exit "$status"
    ;;
  *)
    echo "usage: $0 prepare|run|profile" >&2
    exit 2
    ;;
esac
