#!/usr/bin/env bash
# Fuzzes dtsim's input loaders with libFuzzer (clang, ASan, UBSan) and
# replays their regression corpora. docs/fuzzing.md says what each target
# covers and how to read a finding.
#
#   scripts/fuzz.sh [MINUTES]      replay, then fuzz each target MINUTES
#                                  (default 10); exit status 1 on any finding
#   scripts/fuzz.sh 0              replay only (seeds and regressions)
#
# Environment: DTSIM_FUZZ_TARGETS (default "scenario model_file onnx fit_csv chakra
#   op_cost_table torch_trace"),
# DTSIM_FUZZ_RSS_LIMIT_MB (memory cap per fuzzing process, default 2048),
# DTSIM_FUZZ_TIMEOUT_S (seconds per input, default 10). Installs clang-16 and
# its runtime (libclang-rt-16-dev, which holds libFuzzer) when missing, and
# builds in build-fuzz/ (new inputs found go to build-fuzz/corpus/<target>,
# findings to build-fuzz/findings/<target>).
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=10
case "${1:-}" in
  "") ;;
  *[!0-9]*) echo "usage: $0 [MINUTES]" >&2; exit 2 ;;
  *) minutes=$1 ;;
esac
targets=(${DTSIM_FUZZ_TARGETS:-scenario model_file onnx fit_csv chakra op_cost_table torch_trace})
rss_limit_mb=${DTSIM_FUZZ_RSS_LIMIT_MB:-2048}
timeout_s=${DTSIM_FUZZ_TIMEOUT_S:-10}
build=build-fuzz
seeds_scenario=(scenarios)
seeds_model_file=(models/examples)
seeds_onnx=(fuzz/corpus/onnx/seeds)
seeds_fit_csv=(scenarios/fit)
seeds_chakra=(plan/testdata/chakra/generator plan/testdata/chakra/text)
seeds_op_cost_table=(results/local-measured results/local-llm)
seeds_torch_trace=(fuzz/corpus/torch_trace/seeds)

# --- install (idempotent, as scripts/setup.sh) -------------------------------
scripts/setup.sh
missing=()
# clang 16, not Debian's default 14: clang 14 cannot compile lambdas that
# capture structured bindings (C++20, P1091R3; plan/hybrid.cc has them).
for p in clang-16 libclang-rt-16-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "fuzz: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
fi

# --- build -------------------------------------------------------------------
jobs=$(nproc 2>/dev/null || echo 2)
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
mkdir -p "$build"
configure_log=$build/configure.log
# -O2 with line tables (no -DNDEBUG): fast enough to fuzz, reports name lines.
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++-16 -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -g1" -DDTSIM_FUZZ=ON -DDTSIM_BUILD_TESTS=OFF \
  -DDTSIM_BUILD_BENCH=OFF -DDTSIM_CUDA=OFF "${launcher[@]}" > "$configure_log" 2>&1 ||
  { cat "$configure_log"; echo "fuzz: configure failed" >&2; exit 1; }
cmake --build "$build" -j"$jobs" --target "${targets[@]/#/fuzz_}"

# Reports name functions and lines when a symbolizer is there (llvm-16's is
# not installed by clang-16; any recent llvm-symbolizer reads its output).
for sym in /usr/lib/llvm-16/bin/llvm-symbolizer /usr/bin/llvm-symbolizer; do
  if [ -x "$sym" ]; then export ASAN_SYMBOLIZER_PATH=$sym; break; fi
done

# Options every libFuzzer run gets: the memory cap (also the largest single
# allocation, -malloc_limit_mb's default) and the time per input.
limits=(-rss_limit_mb="$rss_limit_mb" -timeout="$timeout_s")
failed=()

# Runs each file once; libFuzzer exits non-zero on the first crash, hang,
# sanitizer report or memory over the cap.
replay() {  # target folder
  local target=$1 folder=$2
  [ -d "$folder" ] || return 0
  mapfile -t files < <(find "$folder" -type f | sort)
  [ ${#files[@]} -gt 0 ] || return 0
  echo "== replay $target: ${#files[@]} files of $folder"
  local out=$build/findings/$target
  mkdir -p "$out"
  if ! "$build/fuzz/fuzz_$target" "${limits[@]}" -artifact_prefix="$out/" "${files[@]}" \
      < /dev/null > "$build/replay-$target.log" 2>&1; then
    tail -40 "$build/replay-$target.log"
    failed+=("replay of $folder ($build/replay-$target.log)")
  fi
}

for t in "${targets[@]}"; do
  seeds_var="seeds_${t}[@]"
  for folder in "${!seeds_var}" "fuzz/corpus/$t/regressions"; do replay "$t" "$folder"; done
done

if [ "$minutes" -gt 0 ]; then
  for t in "${targets[@]}"; do
    corpus=$build/corpus/$t
    out=$build/findings/$t
    mkdir -p "$corpus" "$out"
    seeds_var="seeds_${t}[@]"
    log=$build/fuzz-$t.log
    echo "== fuzz $t for $minutes min (log: $log)"
    before=$(find "$out" -type f | wc -l)
    # -fork=1 runs the inputs in a child process, one at a time, and with the
    # -ignore_* flags keeps fuzzing after a finding (saved in $out), so one
    # run lists every finding rather than the first.
    status=0
    "$build/fuzz/fuzz_$t" "${limits[@]}" -max_total_time=$((minutes * 60)) -fork=1 \
      -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -print_final_stats=1 \
      -artifact_prefix="$out/" "$corpus" "${!seeds_var}" "fuzz/corpus/$t/regressions" \
      < /dev/null > "$log" 2>&1 || status=$?
    # The last progress line: "#RUNS: cov: .. exec/s: N .. oom/timeout/crash: a/b/c".
    grep -E '^#[0-9]+' "$log" | tail -1 || true
    after=$(find "$out" -type f | wc -l)
    if [ "$status" -ne 0 ] || [ "$after" -gt "$before" ]; then
      failed+=("fuzzing $t: exit status $status, $((after - before)) new findings in $out ($log)")
    fi
  done
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "FUZZING FOUND PROBLEMS:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  find "$build/findings" -type f -newer "$configure_log" | sort | sed 's/^/  finding: /' >&2
  exit 1
fi
echo "fuzz: no crash, hang, sanitizer report or memory over ${rss_limit_mb} MiB"
