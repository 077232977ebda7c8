// Time to accuracy: how long a setting takes to train to a target loss, not
// only how many samples per second it processes. Two halves, multiplied:
//
//   updates to the target   measured for real on a small proxy
//                           (exec/replicas/replica_trainer.h): the first
//                           update at which the evaluation loss reaches the
//                           target, linearly interpolated between the two
//                           evaluations around the crossing, per seed;
//   seconds per update      simulated on the target cluster (a sweep point):
//                           the step time of synchronous plans, the step
//                           time / workers of asynchronous ones.
//
// The band is the seeds': mean +- Student's t (95%) x standard deviation /
// sqrt(seeds) (StepsEstimate). Worker counts that were not measured are
// fitted across the measured ones for the same mode and H: log updates = a +
// b log workers by least squares, the band widened to the fit's 95%
// prediction interval (WorkersFit); outside the measured range the estimate
// says it is extrapolated. A setting some seed never brings to the target
// within its steps has no estimate (never a number that could be read as
// one).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dtsim::sim {

// One seed's evaluation loss against updates (steps[0] = 0).
struct LossPoints {
  std::vector<double> steps;
  std::vector<double> loss;
};

// The updates at which `curve` first reaches `target` (loss <= target),
// interpolated linearly between the evaluations around the crossing; unset
// when it never does.
std::optional<double> StepsToTarget(const LossPoints& curve, double target);

struct StepsEstimate {
  int seeds = 0;        // curves measured
  int reached = 0;      // of which reached the target
  double mean = 0;      // updates to the target (when every seed reached it)
  double low = 0;       // 95% band
  double high = 0;
  bool extrapolated = false;  // from a fit beyond the measured worker counts
  bool fitted = false;        // from a fit (not measured at this worker count)
  bool valid() const { return seeds > 0 && reached == seeds; }
};

// The seeds' estimate: mean and 95% band (Student's t); with one seed the
// band is the value itself.
StepsEstimate EstimateSteps(const std::vector<LossPoints>& seeds, double target);

// log(updates) = a + b log(workers) over measured (workers, estimate)
// pairs of one mode and H.
class WorkersFit {
 public:
  // REQUIRES: estimates valid, workers distinct and >= 1.
  WorkersFit(const std::vector<int>& workers, const std::vector<StepsEstimate>& estimates);
  // The measured estimate at a measured count; else the fit, with a 95%
  // prediction band (t with points - 2 degrees of freedom; one or two
  // points: no band beyond the measured ones' own, marked as such).
  StepsEstimate At(int workers) const;
  double slope() const { return b_; }

 private:
  std::vector<int> workers_;
  std::vector<StepsEstimate> estimates_;
  double a_ = 0, b_ = 0, residual_sd_ = 0, mean_log_w_ = 0, sxx_ = 0;
};

}  // namespace dtsim::sim
