// The target a time-to-accuracy study counts updates to.
#pragma once

#include <string>

#include "exec/replicas/replica_trainer.h"
#include "models/graph.h"
#include "sim/time_to_accuracy.h"
#include "study/tta_options.h"

namespace dtsim::study {

// A curve is read as values that fall to a threshold (StepsToTarget's "at
// or below"): the loss relative to the run's initial one, the loss itself,
// or minus the accuracy (so "at or above A" reads "at or below -A").
struct Target {
  enum class Kind { kFraction, kLoss, kAccuracy };
  Kind kind = Kind::kFraction;
  double value = 0.6;

  // "60% of the initial loss", "a held-out loss of 0.45", "85% held-out
  // accuracy": the page's and the summary's words.
  std::string Describe() const;
  // "relative_loss<=0.6", "loss<=0.45", "accuracy>=0.85": tta.csv's column.
  std::string Condition() const;
  // "relative_loss_0.6", ...: the TensorBoard tag's prefix.
  std::string Slug() const;
  double Threshold() const { return kind == Kind::kAccuracy ? -value : value; }
  // The curve's values as they fall to Threshold().
  sim::LossPoints Points(const exec::LossCurve& c) const;
};

// At most one of target, target_loss and target_accuracy (none: the
// fraction 0.6), each in its range; accuracy needs a classifier `g`.
// Throws UserError otherwise.
Target TargetOf(const TtaOptions& o, const models::ModelGraph& g);

}  // namespace dtsim::study
