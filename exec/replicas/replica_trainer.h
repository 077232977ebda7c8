// Statistical efficiency, measured for real and small: W replicas of a model
// trained in one process, one after another, with the synchronisation of a
// distributed plan, recording the loss against the samples processed. Only
// the loss per sample matters here, not the wall time, so replicas need no
// ranks or cores of their own (`dtsim tta`, sim/time_to_accuracy.h).
//
// Modes (each update applied by exec/runtime/optimizer.h's Optimizer, the
// rule `dtsim exec` applies: SGD, momentum or Adam, the learning rate of
// update t from an LrSchedule; plain SGD at a constant rate by default):
//   kSynchronous   data parallelism: each step every replica computes the
//                  gradient of its own batch at the shared parameters, the
//                  gradients are averaged and one optimizer (one state, one
//                  step counter) applies the mean, as exec's ranks do after
//                  their all-reduce.
//   kLocalSgd      each replica updates alone on its own batches with its
//                  own optimizer state (momentum or Adam moments stay local)
//                  and its own step counter (= the iteration); after every
//                  H-th update (iterations H - 1, 2H - 1, ... counted from
//                  0) the replicas' parameters, and only those, are
//                  averaged (Lin et al. 2020; exec/runtime/plan_executor.cc
//                  averages after the optimizer task of the plan's last
//                  iteration of the H). With H = 1 and SGD or momentum this
//                  is data parallelism (mean_r(p - lr v_r) = p - lr
//                  mean_r(v_r), and mean_r(v_r) follows the synchronous
//                  momentum recursion), up to float rounding.
//   kAsynchronous  a parameter server applying each worker's gradient as
//                  it arrives, one optimizer step per applied push
//                  (exec/runtime/ps_runner.cc): update t uses the gradient
//                  computed on the parameters of update t - staleness
//                  (workers take turns; the batch of update t is worker t
//                  mod W's next one).
//   kBackup        synchronous k of n (Chen et al. 2016, backup workers):
//                  each step the first k of the W gradients are averaged
//                  and the others dropped; which W - k are late rotates with
//                  the step. One optimizer, as kSynchronous.
//
// Data: replica r's s-th batch is samples [(s W + r) b, (s W + r + 1) b) of
// the problem (b = batch per replica), a pure function of (s, r): the same
// samples whatever the mode, and the samples `dtsim exec` gives rank r at
// iteration s (plan_executor.cc's FirstSample, one micro-batch per step).
// The evaluation recorded every eval_every steps (loss and, where the
// problem has classes, top-1 accuracy) is the problem's of the replicas'
// average (their common parameters in synchronous modes; the server's in
// kAsynchronous).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "exec/backend.h"
#include "exec/runtime/optimizer.h"

namespace dtsim::exec {

// A held-out evaluation of parameters.
struct Evaluation {
  double loss = 0;  // mean loss per sample
  // Top-1 accuracy in [0, 1]; NaN where the problem has no classes.
  double accuracy = std::numeric_limits<double>::quiet_NaN();
};

// A model to train: parameters, minibatch gradients, an evaluation.
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
  // The loss (and accuracy) that decide convergence: a fixed evaluation
  // set, or the expected loss where it has a closed form.
  virtual Evaluation Evaluate(const float* params) = 0;
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
  // The learning rate at step 0 of the schedule (after any scaling rule or
  // grid choice): replaces optimizer.lr.initial_lr. Default 0.1.
  double lr = 0.1;
  // The update rule every replica (or the server) applies: algorithm,
  // momentum, Adam's betas, warm-up and decay of the rate by step. Default
  // plain SGD at a constant rate.
  OptimizerOptions optimizer = {};
};

struct ReplicaRunOptions {
  std::int64_t steps = 100;  // synchronous steps (kAsynchronous: updates), >= 1
  int eval_every = 10;       // steps between loss evaluations, >= 1
  // Stop after recording an evaluation whose loss is at or below this
  // fraction of the initial one (stop_at_fraction), at or below this loss
  // (stop_at_loss), or whose accuracy is at or above this (stop_at_accuracy);
  // each <= 0 = not a reason to stop.
  double stop_at_fraction = 0;
  double stop_at_loss = 0;
  double stop_at_accuracy = 0;
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
  std::vector<double> accuracy;  // top-1, NaN where the problem has none
  // The step whose evaluation was not finite (not recorded), with
  // divergence_is_result; -1 = none.
  std::int64_t diverged_at = -1;
};

// Samples one update consumes in `setting` (see LossCurve).
std::int64_t SamplesPerUpdate(const ReplicaSetting& setting);

// Trains `setting` on `problem` and records its curve. The optimizers'
// state lives on `host` (a CPU backend: its buffers are host memory, where
// the problem's parameters are). Throws UserError for settings outside
// their ranges and, unless divergence_is_result, when the loss stops being
// finite (the learning rate diverges), naming the step.
// REQUIRES: host.HostMemory().
LossCurve TrainReplicas(TrainingProblem& problem, Backend& host, const ReplicaSetting& setting,
                        const ReplicaRunOptions& options);

}  // namespace dtsim::exec
