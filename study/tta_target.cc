#include "study/tta_target.h"

#include <cmath>
#include <cstdio>

#include "common/error.h"
#include "study/tta_text.h"

namespace dtsim::study {

sim::LossPoints Target::Points(const exec::LossCurve& c) const {
  sim::LossPoints p;
  for (std::size_t k = 0; k < c.loss.size(); ++k) {
    p.steps.push_back(static_cast<double>(c.steps[k]));
    p.loss.push_back(kind == Kind::kFraction ? c.loss[k] / c.loss[0]
                     : kind == Kind::kLoss   ? c.loss[k]
                                             : -c.accuracy[k]);
  }
  return p;
}

std::string Target::Describe() const {
  switch (kind) {
    case Kind::kLoss: return "a held-out loss of " + Shortest(value);
    case Kind::kAccuracy: return Shortest(100 * value) + "% held-out accuracy";
    default: {
      char s[48];
      std::snprintf(s, sizeof s, "%.0f%% of the initial loss", 100 * value);
      return s;
    }
  }
}

std::string Target::Condition() const {
  switch (kind) {
    case Kind::kLoss: return "loss<=" + Shortest(value);
    case Kind::kAccuracy: return "accuracy>=" + Shortest(value);
    default: return "relative_loss<=" + Shortest(value);
  }
}

std::string Target::Slug() const {
  switch (kind) {
    case Kind::kLoss: return "loss_" + Shortest(value);
    case Kind::kAccuracy: return "accuracy_" + Shortest(value);
    default: return "relative_loss_" + Shortest(value);
  }
}

Target TargetOf(const TtaOptions& o, const models::ModelGraph& g) {
  const int given = (o.target != 0) + (o.target_loss != 0) + (o.target_accuracy != 0);
  if (given > 1)
    throw UserError("give one target: --target, --target-loss or --target-accuracy",
                    "the updates are counted to one target per run");
  Target t;
  if (o.target_loss != 0) {
    if (!(o.target_loss > 0) || !std::isfinite(o.target_loss))
      throw UserError("--target-loss must be a finite loss > 0, got " + Shortest(o.target_loss));
    t.kind = Target::Kind::kLoss;
    t.value = o.target_loss;
  } else if (o.target_accuracy != 0) {
    if (!(o.target_accuracy > 0 && o.target_accuracy <= 1))
      throw UserError("--target-accuracy must be in (0, 1], got " + Shortest(o.target_accuracy));
    if (g.op(g.num_ops() - 1).kind != models::OpKind::kSoftmaxCrossEntropy)
      throw UserError("--target-accuracy needs a classifier (a softmax cross-entropy loss); " +
                          g.name() + "'s loss is not one",
                      "give --target or --target-loss");
    t.kind = Target::Kind::kAccuracy;
    t.value = o.target_accuracy;
  } else if (o.target != 0) {
    if (!(o.target > 0 && o.target <= 1))
      throw UserError("--target must be a fraction of the initial loss in (0, 1], got " +
                      Shortest(o.target));
    t.value = o.target;
  }
  return t;
}

}  // namespace dtsim::study
