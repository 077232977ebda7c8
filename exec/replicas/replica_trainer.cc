#include "exec/replicas/replica_trainer.h"

#include <cmath>
#include <deque>
#include <memory>

#include "common/error.h"

namespace dtsim::exec {
namespace {

void Check(bool ok, const std::string& what) {
  if (!ok) throw UserError("replica training: " + what);
}

// The optimizer of one replica (or of the server): the setting's rule with
// its learning rate at step 0.
std::unique_ptr<Optimizer> MakeOptimizer(Backend& host, std::size_t n, const ReplicaSetting& s) {
  OptimizerOptions o = s.optimizer;
  o.lr.initial_lr = s.lr;
  return std::make_unique<Optimizer>(host, static_cast<std::int64_t>(n), o);
}

class Recorder {
 public:
  Recorder(TrainingProblem& problem, const ReplicaSetting& s, const ReplicaRunOptions& o)
      : problem_(problem), setting_(s), options_(o) {}

  // Records the loss at `step` when it is due; true when training should stop.
  bool Record(std::int64_t step, const std::vector<float>& params) {
    if (step % options_.eval_every != 0 && step != options_.steps) return false;
    const Evaluation eval = problem_.Evaluate(params.data());
    const double loss = eval.loss;
    if (!std::isfinite(loss) && options_.divergence_is_result) {
      curve_.diverged_at = step;
      return true;
    }
    if (!std::isfinite(loss)) {
      throw UserError("replica training diverged: the loss is " + std::to_string(loss) +
                          " after step " + std::to_string(step) + " (" +
                          SyncModeName(setting_.mode) + ", " + std::to_string(setting_.workers) +
                          " workers, learning rate " + std::to_string(setting_.lr) + ")",
                      "lower the learning rate");
    }
    curve_.steps.push_back(step);
    curve_.samples.push_back(step * SamplesPerUpdate(setting_));
    curve_.loss.push_back(loss);
    curve_.accuracy.push_back(eval.accuracy);
    return (options_.stop_at_fraction > 0 && loss <= options_.stop_at_fraction * curve_.loss[0]) ||
           (options_.stop_at_loss > 0 && loss <= options_.stop_at_loss) ||
           (options_.stop_at_accuracy > 0 && eval.accuracy >= options_.stop_at_accuracy);
  }
  LossCurve Take() { return std::move(curve_); }

 private:
  TrainingProblem& problem_;
  const ReplicaSetting& setting_;
  const ReplicaRunOptions& options_;
  LossCurve curve_;
};

}  // namespace

const char* SyncModeName(SyncMode mode) {
  switch (mode) {
    case SyncMode::kSynchronous: return "synchronous";
    case SyncMode::kLocalSgd: return "local_sgd";
    case SyncMode::kAsynchronous: return "asynchronous";
    case SyncMode::kBackup: return "backup";
  }
  return "?";
}

std::int64_t SamplesPerUpdate(const ReplicaSetting& s) {
  switch (s.mode) {
    case SyncMode::kAsynchronous: return s.batch;
    case SyncMode::kBackup: return static_cast<std::int64_t>(s.workers - s.backups) * s.batch;
    default: return static_cast<std::int64_t>(s.workers) * s.batch;
  }
}

LossCurve TrainReplicas(TrainingProblem& problem, Backend& host, const ReplicaSetting& s,
                        const ReplicaRunOptions& o) {
  DTSIM_CHECK(host.HostMemory(), "TrainReplicas keeps the optimizers' state in host memory");
  Check(s.workers >= 1, "workers must be at least 1");
  Check(s.averaging_period >= 1, "the averaging period must be at least 1");
  Check(s.staleness >= 0, "staleness must be at least 0");
  Check(s.backups >= 0 && s.backups < s.workers, "backups must be in [0, workers)");
  Check(s.batch >= 1, "the batch must be at least 1");
  Check(std::isfinite(s.lr) && s.lr > 0, "the learning rate must be positive");
  Check(o.steps >= 1 && o.eval_every >= 1, "steps and eval_every must be at least 1");
  const auto n = static_cast<std::size_t>(problem.num_params());
  const auto workers = static_cast<std::size_t>(s.workers);
  // Replica r's s-th batch (see the header).
  auto first_sample = [&](std::int64_t step, std::size_t r) {
    return (step * s.workers + static_cast<std::int64_t>(r)) * s.batch;
  };
  Recorder recorder(problem, s, o);
  std::vector<float> grad(n), sum(n);

  if (s.mode == SyncMode::kLocalSgd) {
    std::vector<std::vector<float>> replicas(workers, problem.InitialParams());
    std::vector<std::unique_ptr<Optimizer>> optimizers;
    for (std::size_t r = 0; r < workers; ++r) optimizers.push_back(MakeOptimizer(host, n, s));
    std::vector<float> average = replicas[0];
    auto mean = [&] {
      std::fill(average.begin(), average.end(), 0.0f);
      for (const auto& p : replicas) {
        for (std::size_t i = 0; i < n; ++i) average[i] += p[i];
      }
      const float inv = 1.0f / static_cast<float>(workers);
      for (float& v : average) v *= inv;
    };
    if (recorder.Record(0, average)) return recorder.Take();
    for (std::int64_t step = 0; step < o.steps; ++step) {
      for (std::size_t r = 0; r < workers; ++r) {
        problem.Gradient(replicas[r].data(), first_sample(step, r), s.batch, grad.data());
        optimizers[r]->Step(replicas[r].data(), grad.data());
      }
      const bool averaging = (step + 1) % s.averaging_period == 0;
      const bool due = (step + 1) % o.eval_every == 0 || step + 1 == o.steps;
      if (averaging || due) mean();
      if (averaging) {
        for (auto& p : replicas) p = average;
      }
      if (recorder.Record(step + 1, average)) break;
    }
    return recorder.Take();
  }

  std::vector<float> params = problem.InitialParams();
  const std::unique_ptr<Optimizer> optimizer = MakeOptimizer(host, n, s);
  if (recorder.Record(0, params)) return recorder.Take();
  if (s.mode == SyncMode::kAsynchronous) {
    // The parameters of the last staleness + 1 updates, newest last.
    std::deque<std::vector<float>> versions{params};
    for (std::int64_t t = 0; t < o.steps; ++t) {
      const std::size_t worker = static_cast<std::size_t>(t) % workers;
      const std::int64_t round = t / s.workers;
      problem.Gradient(versions.front().data(), first_sample(round, worker), s.batch,
                       grad.data());
      optimizer->Step(params.data(), grad.data());
      versions.push_back(params);
      while (versions.size() > static_cast<std::size_t>(s.staleness) + 1) versions.pop_front();
      if (recorder.Record(t + 1, params)) break;
    }
    return recorder.Take();
  }
  // Synchronous, with or without backups: the mean of the gradients used.
  const std::size_t used = workers - static_cast<std::size_t>(s.backups);
  for (std::int64_t step = 0; step < o.steps; ++step) {
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (std::size_t k = 0; k < used; ++k) {
      // The late W - k rotate: step t drops replicas t, t + 1, ... (mod W).
      const std::size_t r = (static_cast<std::size_t>(step) + s.backups + k) % workers;
      problem.Gradient(params.data(), first_sample(step, r), s.batch, grad.data());
      for (std::size_t i = 0; i < n; ++i) sum[i] += grad[i];
    }
    const float inv = 1.0f / static_cast<float>(used);
    for (float& v : sum) v *= inv;
    optimizer->Step(params.data(), sum.data());
    if (recorder.Record(step + 1, params)) break;
  }
  return recorder.Take();
}

}  // namespace dtsim::exec
