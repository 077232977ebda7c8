// A model graph on a backend as a TrainingProblem (replica_trainer.h): the
// gradient of a batch of a dataset's samples and the loss on a fixed
// evaluation set, computed by one ModelRuntime whose parameters are swapped
// in for each call.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/backend.h"
#include "exec/data/dataset.h"
#include "exec/runtime/model_runtime.h"
#include "exec/runtime/replica_trainer.h"
#include "models/graph.h"

namespace dtsim::exec {

struct ModelProblemOptions {
  std::int64_t batch = 32;          // samples per Gradient call (the replica's batch)
  std::int64_t eval_samples = 256;  // the evaluation set: samples [eval_first, + eval_samples)
  std::int64_t eval_first = 0;      // rounded up to whole batches
  std::uint64_t seed = 1;           // parameter initialisation (ModelRuntime)
};

class ModelProblem final : public TrainingProblem {
 public:
  // `graph`, `data` and `backend` must outlive the problem. Throws
  // UserError when the dataset does not fit the model.
  ModelProblem(const models::ModelGraph& graph, const Dataset& data, Backend& backend,
               const ModelProblemOptions& options);

  std::int64_t num_params() const override { return runtime_.num_params(); }
  std::vector<float> InitialParams() const override { return initial_; }
  // REQUIRES: count == options.batch.
  double Gradient(const float* params, std::int64_t first, std::int64_t count,
                  float* grad) override;
  double EvalLoss(const float* params) override;

 private:
  double ForwardLoss(std::int64_t first);  // loads samples [first, + batch), runs forward

  const Dataset& data_;
  Backend& backend_;
  ModelProblemOptions options_;
  ModelRuntime runtime_;
  std::vector<float> initial_;
  std::vector<float> x_, labels_, host_params_;
};

}  // namespace dtsim::exec
