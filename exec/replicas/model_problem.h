// A model graph on a backend as a TrainingProblem (replica_trainer.h): the
// gradient of a batch of a dataset's samples and the loss and top-1
// accuracy on a fixed evaluation set, computed by one ModelRuntime whose
// parameters are swapped in for each call.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/backend.h"
#include "exec/data/dataset.h"
#include "exec/runtime/model_runtime.h"
#include "exec/replicas/replica_trainer.h"
#include "models/graph.h"

namespace dtsim::exec {

// The evaluation set:
//   without an evaluation dataset: the training dataset's samples
//     [eval_first, eval_first + eval_samples), rounded up to whole batches;
//   with one (a test split): eval_shards ranges of it, range k =
//     [eval_first + k s, + s) with s = eval_samples / eval_shards (integer
//     division), each rounded down to whole batches, which is how `dtsim
//     exec` splits --eval-samples over its replicas (plan_executor.cc's
//     EvaluateOrKeep; one range on a parameter server's worker 0). The loss
//     and accuracy are means over every sample evaluated.
struct ModelProblemOptions {
  std::int64_t batch = 32;          // samples per Gradient call (the replica's batch)
  std::int64_t eval_samples = 256;  // samples of the evaluation set, >= 1
  std::int64_t eval_first = 0;      // its first sample
  int eval_shards = 1;              // ranges of a separate evaluation dataset, >= 1
  std::uint64_t seed = 1;           // parameter initialisation (ModelRuntime)
};

class ModelProblem final : public TrainingProblem {
 public:
  // `graph`, `data`, `backend` and `eval_data` (when given) must outlive
  // the problem. Throws UserError when a dataset does not fit the model or
  // the evaluation set holds no whole batch.
  ModelProblem(const models::ModelGraph& graph, const Dataset& data, Backend& backend,
               const ModelProblemOptions& options, const Dataset* eval_data = nullptr);

  std::int64_t num_params() const override { return runtime_.num_params(); }
  std::vector<float> InitialParams() const override { return initial_; }
  // REQUIRES: count == options.batch.
  double Gradient(const float* params, std::int64_t first, std::int64_t count,
                  float* grad) override;
  // Loss and top-1 accuracy (ModelRuntime::Correct) on the evaluation set.
  Evaluation Evaluate(const float* params) override;

 private:
  const Dataset& data_;
  const Dataset* eval_data_;
  Backend& backend_;
  ModelProblemOptions options_;
  ModelRuntime runtime_;
  std::vector<float> initial_;
  std::vector<float> x_, labels_, host_params_;
};

}  // namespace dtsim::exec
