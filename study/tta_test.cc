// Time to accuracy's pieces that need no training: the target's words and
// refusals, the families' names, the rate scaling and the settings chosen
// for measurement.
#include "study/tta.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "models/zoo.h"

namespace dtsim::study {
namespace {

TEST(TtaTarget, NamesItsKindInEachPlace) {
  Target fraction;  // the default: 60% of the initial loss
  EXPECT_EQ(fraction.Describe(), "60% of the initial loss");
  EXPECT_EQ(fraction.Condition(), "relative_loss<=0.6");
  EXPECT_EQ(fraction.Slug(), "relative_loss_0.6");
  EXPECT_EQ(fraction.Threshold(), 0.6);
  const Target loss{Target::Kind::kLoss, 0.45};
  EXPECT_EQ(loss.Describe(), "a held-out loss of 0.45");
  EXPECT_EQ(loss.Condition(), "loss<=0.45");
  const Target accuracy{Target::Kind::kAccuracy, 0.85};
  EXPECT_EQ(accuracy.Describe(), "85% held-out accuracy");
  EXPECT_EQ(accuracy.Condition(), "accuracy>=0.85");
  // Accuracy rises to its target: read as minus the accuracy falling.
  EXPECT_EQ(accuracy.Threshold(), -0.85);
}

TEST(TtaTarget, PointsAreRelativeToTheFirstLossOrMinusTheAccuracy) {
  exec::LossCurve c;
  c.steps = {0, 10};
  c.loss = {2.0, 0.5};
  c.accuracy = {0.1, 0.9};
  const sim::LossPoints f = Target{}.Points(c);
  EXPECT_EQ(f.loss, (std::vector<double>{1.0, 0.25}));  // 2/2, 0.5/2
  EXPECT_EQ(f.steps, (std::vector<double>{0, 10}));
  const Target accuracy{Target::Kind::kAccuracy, 0.5};
  EXPECT_EQ(accuracy.Points(c).loss, (std::vector<double>{-0.1, -0.9}));
}

TEST(TtaTarget, RefusesTwoTargetsAndAccuracyWithoutAClassifier) {
  const models::ModelGraph mlp = models::BuildZooModel("mnist-mlp");
  TtaOptions o;
  EXPECT_EQ(TargetOf(o, mlp).kind, Target::Kind::kFraction);
  o.target = 0.5;
  o.target_loss = 1;
  EXPECT_THROW(TargetOf(o, mlp), UserError);
  o = {};
  o.target_loss = -1;
  EXPECT_THROW(TargetOf(o, mlp), UserError);
  o = {};
  o.target_accuracy = 0.9;
  EXPECT_EQ(TargetOf(o, mlp).kind, Target::Kind::kAccuracy);  // mnist-mlp ends in softmax_xent
}

TEST(TtaSetting, FamiliesNameTheirSynchronisation) {
  EXPECT_EQ(Family{}.Name(), "synchronous");
  EXPECT_EQ((Family{exec::SyncMode::kLocalSgd, 8, 0, 0}).Name(), "local_sgd H=8");
  EXPECT_EQ((Family{exec::SyncMode::kAsynchronous, 1, 3, 0}).Name(), "asynchronous staleness=3");
  EXPECT_EQ((Family{exec::SyncMode::kBackup, 1, 0, 0.25}).Name(), "backup 25% dropped");
}

TEST(TtaSetting, RatesScaleWithTheSamplesPerUpdate) {
  // Synchronous, 4 workers of batch 8: 32 samples per update, 4 times one
  // worker's batch.
  const exec::ReplicaSetting s = SettingOf(Family{}, 4, 0.1, 8, {});
  EXPECT_EQ(s.workers, 4);
  EXPECT_EQ(s.batch, 8);
  EXPECT_DOUBLE_EQ(LrScale("linear", s), 4);
  EXPECT_DOUBLE_EQ(LrScale("sqrt", s), 2);
  EXPECT_DOUBLE_EQ(LrScale("none", s), 1);
  // Backups: a quarter of 4 workers dropped is 1 backup.
  EXPECT_EQ(SettingOf(Family{exec::SyncMode::kBackup, 1, 0, 0.25}, 4, 0.1, 8, {}).backups, 1);
}

TEST(TtaProxy, MeasuresEachFamilyAtItsOwnOrTheGivenWorkerCounts) {
  const Family h4{exec::SyncMode::kLocalSgd, 4, 0, 0};
  std::vector<TtaPoint> points(4);
  points[0].workers = 4;
  points[1].workers = 2;
  points[2].family = h4;
  points[2].workers = 8;
  points[3].workers = 16;
  points[3].infeasible = "does not fit";  // not measured
  const auto own = MeasuredSettings(points, {});
  ASSERT_EQ(own.size(), 2u);
  EXPECT_EQ(own.at(Family{}), (std::vector<int>{2, 4}));  // sorted
  EXPECT_EQ(own.at(h4), (std::vector<int>{8}));
  const auto given = MeasuredSettings(points, {3, 1, 3});
  EXPECT_EQ(given.at(Family{}), (std::vector<int>{1, 3}));  // sorted, unique
  EXPECT_EQ(given.at(h4), (std::vector<int>{1, 3}));
}

}  // namespace
}  // namespace dtsim::study
