#!/usr/bin/env bash
# Trains the same model, batch and ranks with `dtsim exec` (CPU backend) and
# with PyTorch (scripts/torch_reference.py: the same layers, plain SGD,
# synthetic data, DistributedDataParallel over gloo for 2+ ranks), one thread
# per rank in both, and prints both throughputs and their ratio.
#
#   scripts/compare_pytorch.sh [MODEL] [BATCH] [RANKS]
#       MODEL  cifar10-cnn (default) or mnist-mlp
#       BATCH  samples per rank and step (default 32)
#       RANKS  processes (default 1)
#   DTSIM=build/tools/dtsim, ITERATIONS=20 and PYTHON may be set; DTSIM_PORTABLE=1
#   runs dtsim's portable kernels instead of the fastest build this CPU runs.
#
# Skips with a message (exit 0) when PyTorch is not installed (Debian:
# python3-torch; install libopenblas0-pthread too, as PyTorch's own builds
# ship an optimised BLAS).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-cifar10-cnn}
batch=${2:-32}
ranks=${3:-1}
dtsim=${DTSIM:-build/tools/dtsim}
iterations=${ITERATIONS:-20}

case $model in cifar10-cnn|mnist-mlp) ;; *)
  echo "compare_pytorch: MODEL must be cifar10-cnn or mnist-mlp, got '$model'" >&2; exit 2;;
esac
[[ $batch =~ ^[1-9][0-9]*$ && $ranks =~ ^[1-9][0-9]*$ ]] ||
  { echo "compare_pytorch: BATCH and RANKS must be positive integers" >&2; exit 2; }
# The first Python that imports torch: $PYTHON, python3 on the PATH, then
# Debian's (a pyenv or venv python3 does not see python3-torch).
python=
for candidate in ${PYTHON:-} python3 /usr/bin/python3; do
  if "$candidate" -c 'import torch' 2> /dev/null; then python=$candidate; break; fi
done
if [[ -z $python ]]; then
  echo "compare_pytorch: PyTorch is not installed (python3-torch); skipped"
  exit 0
fi
[[ -x $dtsim ]] || { echo "compare_pytorch: no $dtsim: build dtsim first (scripts/run.sh)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/scenario.yaml" <<EOF
name: compare-pytorch
seed: 1
cluster:
  nodes: 1
  devices_per_node: $ranks
  device: cpu-host
  intra_node_link: pcie3-x16
workload:
  model: $model
  batch_per_device: $batch
  precision: fp32
  iterations: $iterations
parallelism:
  strategy: data
  algorithm: ring
  overlap: false
  optimizer: sgd
EOF
flags=()
[[ ${DTSIM_PORTABLE:-0} == 1 ]] && flags+=(--portable)
"$dtsim" exec "$work/scenario.yaml" --iterations "$iterations" -q -o "$work/out" "${flags[@]}" \
  > "$work/dtsim.log" 2>&1 || { cat "$work/dtsim.log" >&2; exit 1; }
ours=$(sed -n 's/.*step time [0-9.]* s, \([0-9.]*\) samples\/s.*/\1/p' "$work/dtsim.log")
input_wait=$(sed -n 's/.*input wait \([0-9.]*\) s.*/\1/p' "$work/dtsim.log")
kernels=$(sed -n 's/.* rank(s) on \([^,]*\),.*/\1/p' "$work/dtsim.log")
OMP_NUM_THREADS=1 "$python" scripts/torch_reference.py "$model" --batch "$batch" --ranks "$ranks" \
  --threads 1 --iterations "$iterations" > "$work/torch.log" 2>&1 ||
  { cat "$work/torch.log" >&2; exit 1; }
theirs=$(sed -n 's/^torch .* step [0-9.]* s, \([0-9.]*\) samples\/s$/\1/p' "$work/torch.log")
echo "$model, batch $batch per rank, $ranks rank(s), 1 thread each, $(nproc) cores"
echo "  dtsim exec ($kernels): $ours samples/s (of each step, ${input_wait} s drawing the" \
  "synthetic batch; PyTorch trains on one fixed batch)"
echo "  PyTorch ($(head -1 "$work/torch.log" | cut -d' ' -f2)): $theirs samples/s"
awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "  dtsim / PyTorch: %.2f\n", a / b }'
