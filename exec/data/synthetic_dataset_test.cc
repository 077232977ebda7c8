#include "exec/data/synthetic_dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "common/error.h"

namespace dtsim::exec {
namespace {

// Small versions of the three sets, so the tests run in milliseconds.
TeacherDatasetOptions SmallTeacher() {
  TeacherDatasetOptions o;
  o.shape = {4, 4};
  o.classes = 5;
  o.hidden = 8;
  o.size = 1'000'000;  // > every sample count below: no test sees a repeat
  o.seed = 7;
  return o;
}
ClassImageDatasetOptions SmallImages() {
  ClassImageDatasetOptions o;
  o.channels = 2;
  o.height = 8;
  o.width = 6;
  o.classes = 4;
  o.size = 1'000'000;  // > every sample count below: no test sees a repeat
  o.seed = 7;
  return o;
}
TokenDatasetOptions SmallTokens() {
  TokenDatasetOptions o;
  o.vocab = 50;
  o.seq_len = 12;
  o.size = 1'000'000;  // > every sample count below: no test sees a repeat
  o.seed = 7;
  return o;
}

struct Batch {
  std::vector<float> x, y;
};

Batch FillRange(const Dataset& ds, std::int64_t first, std::int64_t count) {
  Batch b;
  b.x.resize(static_cast<std::size_t>(count * SampleElements(ds.sample_shape())));
  b.y.resize(static_cast<std::size_t>(count * SampleElements(ds.label_shape())));
  ds.Fill(first, count, b.x.data(), b.y.data());
  return b;
}

// Bitwise equality: purity is about bits, not values (NaN-safe, -0 != +0).
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<std::unique_ptr<Dataset>> AllSmall(std::uint64_t seed) {
  auto t = SmallTeacher();
  auto i = SmallImages();
  auto k = SmallTokens();
  t.seed = i.seed = k.seed = seed;
  std::vector<std::unique_ptr<Dataset>> v;
  v.push_back(std::make_unique<TeacherDataset>(t));
  v.push_back(std::make_unique<ClassImageDataset>(i));
  v.push_back(std::make_unique<TokenDataset>(k));
  return v;
}

TEST(SyntheticDataset, SplitsIntoWorkersGiveTheSameBitsAsOneBatch) {
  // 4 workers x 16 samples must equal 1 worker x 64 samples, and one-sample
  // calls must equal both.
  for (const auto& ds : AllSmall(7)) {
    const Batch whole = FillRange(*ds, 100, 64);
    Batch split;
    for (int r = 0; r < 4; ++r) {
      Batch part = FillRange(*ds, 100 + 16 * r, 16);
      split.x.insert(split.x.end(), part.x.begin(), part.x.end());
      split.y.insert(split.y.end(), part.y.begin(), part.y.end());
    }
    EXPECT_TRUE(SameBits(whole.x, split.x));
    EXPECT_TRUE(SameBits(whole.y, split.y));
    Batch singles;
    for (int i = 63; i >= 0; --i) {  // reverse order: no hidden state may leak
      Batch one = FillRange(*ds, 100 + i, 1);
      singles.x.insert(singles.x.begin(), one.x.begin(), one.x.end());
      singles.y.insert(singles.y.begin(), one.y.begin(), one.y.end());
    }
    EXPECT_TRUE(SameBits(whole.x, singles.x));
    EXPECT_TRUE(SameBits(whole.y, singles.y));
  }
}

TEST(SyntheticDataset, SameOptionsSameBitsOtherSeedOtherBits) {
  auto a = AllSmall(7), b = AllSmall(7), c = AllSmall(8);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(SameBits(FillRange(*a[i], 5, 8).x, FillRange(*b[i], 5, 8).x));
    EXPECT_FALSE(SameBits(FillRange(*a[i], 5, 8).x, FillRange(*c[i], 5, 8).x));
  }
}

TEST(SyntheticDataset, IndicesWrapModuloSize) {
  // Sample size()+3 is sample 3, and a batch from size()-1 runs size()-1, 0.
  for (const auto& ds : AllSmall(7)) {
    const std::int64_t n = ds->size();
    EXPECT_TRUE(SameBits(FillRange(*ds, n + 3, 2).x, FillRange(*ds, 3, 2).x));
    Batch across = FillRange(*ds, n - 1, 2);
    Batch last = FillRange(*ds, n - 1, 1), first = FillRange(*ds, 0, 1);
    last.x.insert(last.x.end(), first.x.begin(), first.x.end());
    last.y.insert(last.y.end(), first.y.begin(), first.y.end());
    EXPECT_TRUE(SameBits(across.x, last.x));
    EXPECT_TRUE(SameBits(across.y, last.y));
  }
}

TEST(TeacherDataset, LabelsUseEveryClassWithoutADominantOne) {
  // The logit centring (b2 = -mean) should keep every class frequent. Over
  // 20000 samples a uniform split is 4000 per class (C = 5); we only ask
  // that each class gets at least 1/4 of that and none more than 2.5x.
  TeacherDataset ds(SmallTeacher());
  Batch b = FillRange(ds, 0, 20000);
  std::vector<int> counts(5, 0);
  for (float y : b.y) {
    ASSERT_EQ(y, std::floor(y));
    ASSERT_GE(y, 0);
    ASSERT_LT(y, 5);
    counts[static_cast<int>(y)]++;
  }
  for (int c : counts) {
    EXPECT_GE(c, 1000);
    EXPECT_LE(c, 10000);
  }
}

TEST(TeacherDataset, InputsFollowTheRequestedDistribution) {
  // N(0,1): mean 0, variance 1. U[-1,1): mean 0, variance 1/3, |x| <= 1.
  // 20000 * 16 draws: standard error of the mean ~ 1/sqrt(320000) ~ 0.002.
  auto o = SmallTeacher();
  TeacherDataset g(o);
  o.input = InputDistribution::kUniform;
  TeacherDataset u(o);
  for (auto [ds, var] : {std::pair{&g, 1.0}, std::pair{&u, 1.0 / 3.0}}) {
    Batch b = FillRange(*ds, 0, 20000);
    double s = 0, s2 = 0;
    for (float x : b.x) {
      s += x;
      s2 += static_cast<double>(x) * x;
      if (ds == &u) {
        ASSERT_TRUE(x >= -1 && x < 1);
      }
    }
    const double n = static_cast<double>(b.x.size());
    EXPECT_NEAR(s / n, 0.0, 0.01);
    EXPECT_NEAR(s2 / n - (s / n) * (s / n), var, 0.02 * var);
  }
}

TEST(ClassImageDataset, LabelsAreRoughlyUniform) {
  // Binomial(20000, 1/4): mean 5000, sd sqrt(20000 * 1/4 * 3/4) = 61; allow
  // 5 sd.
  ClassImageDataset ds(SmallImages());
  Batch b = FillRange(ds, 0, 20000);
  std::vector<int> counts(4, 0);
  for (float y : b.y) counts[static_cast<int>(y)]++;
  for (int c : counts) EXPECT_NEAR(c, 5000, 5 * 61);
}

TEST(ClassImageDataset, SamplesAreTemplatePlusNoiseAndNearestTemplateClassifies) {
  // x - template_label must be N(0, noise^2) (noise 0.5 by default); the
  // nearest template must be the label: the templates' distance is about
  // sqrt(2 * 96) (unit RMS, 96 pixels) ~ 14, i.e. ~14 noise sd apart.
  ClassImageDataset ds(SmallImages());
  const std::int64_t n = 2000, p = 2 * 8 * 6;
  Batch b = FillRange(ds, 0, n);
  double s = 0, s2 = 0;
  int correct = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float* x = b.x.data() + i * p;
    const auto label = static_cast<std::int64_t>(b.y[i]);
    auto t = ds.class_template(label);
    for (std::int64_t j = 0; j < p; ++j) {
      s += x[j] - t[j];
      s2 += static_cast<double>(x[j] - t[j]) * (x[j] - t[j]);
    }
    std::int64_t best = -1;
    double best_d = 0;
    for (std::int64_t k = 0; k < ds.classes(); ++k) {
      auto tk = ds.class_template(k);
      double d = 0;
      for (std::int64_t j = 0; j < p; ++j) d += (x[j] - tk[j]) * (x[j] - tk[j]);
      if (best < 0 || d < best_d) best = k, best_d = d;
    }
    correct += best == label;
  }
  const double m = static_cast<double>(n * p);
  EXPECT_NEAR(s / m, 0.0, 0.01);                  // se 0.5 / sqrt(192000) ~ 0.001
  EXPECT_NEAR(std::sqrt(s2 / m), 0.5, 0.01);      // the noise option
  EXPECT_GE(correct, n * 99 / 100);
}

TEST(ClassImageDataset, TemplatesHaveUnitRms) {
  ClassImageDataset ds(SmallImages());
  for (std::int64_t k = 0; k < ds.classes(); ++k) {
    double s2 = 0;
    for (float v : ds.class_template(k)) s2 += static_cast<double>(v) * v;
    EXPECT_NEAR(std::sqrt(s2 / 96.0), 1.0, 1e-5);  // 96 = 2 * 8 * 6 pixels
  }
}

TEST(TokenDataset, LabelsAreTheNextTokensAndFollowTheChain) {
  // A transition lands in succ[t] with probability >= 1 - noise, and at most
  // (1 - noise) + noise * successors / V = 0.95 + 0.05 * 4/50 = 0.954.
  // 2000 * 12 = 24000 transitions: sd sqrt(0.95 * 0.05 / 24000) ~ 0.0014.
  TokenDataset ds(SmallTokens());
  const std::int64_t n = 2000, s = 12;
  Batch b = FillRange(ds, 0, n);
  std::int64_t in_chain = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t k = 0; k < s; ++k) {
      const float cur = b.x[i * s + k], next = b.y[i * s + k];
      ASSERT_GE(cur, 0);
      ASSERT_LT(next, 50);
      ASSERT_EQ(next, std::floor(next));
      if (k + 1 < s) {
        ASSERT_EQ(next, b.x[i * s + k + 1]) << "labels must be x shifted by one";
      }
      auto succ = ds.successors_of(static_cast<std::int64_t>(cur));
      for (std::int64_t t : succ) {
        if (t == static_cast<std::int64_t>(next)) {
          ++in_chain;
          break;
        }
      }
    }
  }
  const double frac = static_cast<double>(in_chain) / static_cast<double>(n * s);
  EXPECT_GE(frac, 0.95 - 0.01);
  EXPECT_LE(frac, 0.954 + 0.01);
}

TEST(SyntheticDataset, InvalidOptionsAreUserErrors) {
  auto t = SmallTeacher();
  t.classes = 1;
  try {
    TeacherDataset ds(t);
    FAIL() << "classes = 1 accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("classes must be >= 2, got 1"), std::string::npos) << e.what();
  }
  auto i = SmallImages();
  i.noise = -1;
  EXPECT_THROW(ClassImageDataset{i}, UserError);
  auto k = SmallTokens();
  k.successors = 51;
  EXPECT_THROW(TokenDataset{k}, UserError);
}

}  // namespace
}  // namespace dtsim::exec
