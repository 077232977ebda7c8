// Optimizer: updates a flat parameter buffer from its gradient on a Backend
// (SGD, momentum, Adam), with its state in buffers of the same layout, and
// the learning rate from an LrSchedule.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "exec/backend.h"
#include "exec/train/lr_schedule.h"

namespace dtsim::exec {

enum class OptimizerAlgorithm { kSgd, kMomentum, kAdam };
const char* OptimizerAlgorithmName(OptimizerAlgorithm a);  // "sgd", "momentum", "adam"

struct OptimizerOptions {
  OptimizerAlgorithm algorithm = OptimizerAlgorithm::kSgd;
  LrScheduleOptions lr;             // learning rate by step (default constant 0.1)
  double momentum = 0.9;            // kMomentum
  double beta1 = 0.9;               // kAdam (Kingma & Ba 2015 defaults)
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0.0;        // kSgd: L2 added to the gradient
};

class Optimizer {
 public:
  // State for `count` parameters, zeroed. `backend` must outlive this.
  Optimizer(Backend& backend, std::int64_t count, const OptimizerOptions& options);
  ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of params from grads with the learning rate of the current
  // step, then advances the step. REQUIRES: buffers of `count` floats.
  void Step(float* params, const float* grads);
  std::int64_t steps() const { return steps_; }
  double CurrentLearningRate() const { return schedule_.At(steps_); }

  // State as named host arrays (checkpoints): "momentum", or "adam.m" and
  // "adam.v"; SetState restores them and the step count.
  std::map<std::string, std::vector<float>> State() const;
  void SetState(const std::map<std::string, std::vector<float>>& state, std::int64_t steps);

 private:
  Backend& backend_;
  std::int64_t count_;
  OptimizerOptions options_;
  LrSchedule schedule_;
  std::int64_t steps_ = 0;
  float* m_ = nullptr;  // momentum buffer or Adam's first moment
  float* v_ = nullptr;  // Adam's second moment
};

}  // namespace dtsim::exec
