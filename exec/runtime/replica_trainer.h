// Statistical efficiency, measured for real and small: W replicas of a model
// trained in one process, one after another, with the synchronisation of a
// distributed plan, recording the loss against the samples processed. Only
// the loss per sample matters here, not the wall time, so replicas need no
// ranks or cores of their own (`dtsim tta`, sim/time_to_accuracy.h).
//
// Modes (plain SGD, learning rate lr at every step):
//   kSynchronous   data parallelism: each step every replica computes the
//                  gradient of its own batch at the shared parameters, the
//                  gradients are averaged and one update is applied.
//   kLocalSgd      each replica updates alone on its own batches; every H
//                  steps the replicas' parameters are averaged (Lin et al.
//                  2020). With H = 1 this is data parallelism (mean_r(p - lr
//                  g_r) = p - lr mean_r(g_r)), up to float rounding.
//   kAsynchronous  a parameter server applying each worker's gradient as
//                  it arrives: update t uses the gradient computed on the
//                  parameters of update t - staleness (workers take turns;
//                  the batch of update t is worker t mod W's next one).
//   kBackup        synchronous k of n (Chen et al. 2016, backup workers):
//                  each step the first k of the W gradients are averaged
//                  and the others dropped; which W - k are late rotates with
//                  the step.
//
// Data: replica r's s-th batch is samples [(s W + r) b, (s W + r + 1) b) of
// the problem (b = batch per replica), a pure function of (s, r): the same
// samples whatever the mode. The loss recorded every eval_every steps is
// the problem's evaluation loss of the replicas' average (their common
// parameters in synchronous modes; the server's in kAsynchronous).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::exec {

// A model to train: parameters, minibatch gradients, an evaluation loss.
class TrainingProblem {
 public:
  virtual ~TrainingProblem() = default;
  virtual std::int64_t num_params() const = 0;
  // The initial parameters (the same for every replica).
  virtual std::vector<float> InitialParams() const = 0;
  // Writes the gradient of the mean loss over samples [first, first +
  // count) at `params` into `grad` (num_params() floats); returns that loss.
  virtual double Gradient(const float* params, std::int64_t first, std::int64_t count,
                          float* grad) = 0;
  // The loss that decides convergence (a fixed evaluation set, or the
  // expected loss where it has a closed form).
  virtual double EvalLoss(const float* params) = 0;
};

enum class SyncMode { kSynchronous, kLocalSgd, kAsynchronous, kBackup };
const char* SyncModeName(SyncMode mode);  // "synchronous", "local_sgd", ...

struct ReplicaSetting {
  SyncMode mode = SyncMode::kSynchronous;
  int workers = 1;           // W replicas, >= 1
  int averaging_period = 1;  // H (kLocalSgd), >= 1
  int staleness = 0;         // kAsynchronous: updates between read and write, >= 0
  int backups = 0;           // kBackup: W - k gradients dropped per step, < W
  std::int64_t batch = 32;   // samples per replica per step, >= 1
  double lr = 0.1;           // SGD learning rate (after any scaling rule)
};

struct ReplicaRunOptions {
  std::int64_t steps = 100;  // synchronous steps (kAsynchronous: updates), >= 1
  int eval_every = 10;       // steps between loss evaluations, >= 1
  // Stop once the evaluation loss is at or below this fraction of the
  // initial one (after recording it); <= 0 = run all steps.
  double stop_at_fraction = 0;
  // A loss that is not finite (the rate diverges) ends the run as a result
  // (LossCurve::diverged_at) instead of a UserError.
  bool divergence_is_result = false;
};

// The evaluation loss after `samples[i]` samples of the updates (step x the
// samples one step's update uses: W b synchronous and local SGD, k b with
// backups, b asynchronous); point 0 is the initial parameters.
struct LossCurve {
  std::vector<std::int64_t> steps;
  std::vector<std::int64_t> samples;
  std::vector<double> loss;
  // The step whose evaluation was not finite (not recorded), with
  // divergence_is_result; -1 = none.
  std::int64_t diverged_at = -1;
};

// Samples one update consumes in `setting` (see LossCurve).
std::int64_t SamplesPerUpdate(const ReplicaSetting& setting);

// Trains `setting` on `problem` and records its curve. Throws UserError for
// settings outside their ranges and, unless divergence_is_result, when the
// loss stops being finite (the learning rate diverges), naming the step.
LossCurve TrainReplicas(TrainingProblem& problem, const ReplicaSetting& setting,
                        const ReplicaRunOptions& options);

}  // namespace dtsim::exec
