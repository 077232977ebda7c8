// Held-out evaluation of a training run: the loss and top-1 accuracy of the
// model's current parameters on a fixed evaluation set, recorded against
// the updates and the training time spent to reach them (what time-to-
// accuracy studies plot: MLPerf Training's quality targets, Goyal et al.
// 2017's validation error curves).
#pragma once

#include <cstdint>

#include "exec/data/dataset.h"
#include "exec/runtime/model_runtime.h"

namespace dtsim::exec {

// One evaluation of the run.
struct EvalPoint {
  std::int64_t updates = 0;   // optimizer updates applied to the evaluated parameters
  std::int64_t samples = 0;   // training samples those updates consumed
  double train_seconds = 0;   // training time before it (evaluations excluded)
  double loss = 0;            // mean held-out loss per sample
  double accuracy = 0;        // held-out top-1 accuracy in [0, 1]
};

// Sums over a range of the evaluation set.
struct EvalSums {
  double loss = 0;     // sum of per-sample losses
  double correct = 0;  // samples whose top-1 class is their label
  double count = 0;    // samples evaluated
};

// Runs forward passes of `runtime`'s whole model (its current parameters)
// over samples [first, first + count) of `data`, one micro-batch at a time
// in slot 0 (overwriting that slot's activations), and sums their losses
// and correct predictions. `count` is rounded down to whole micro-batches.
// REQUIRES: runtime holds every op of its graph (no pipeline stage).
EvalSums EvaluateRange(ModelRuntime& runtime, const Dataset& data, std::int64_t first,
                       std::int64_t count);

}  // namespace dtsim::exec
