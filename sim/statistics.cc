#include "sim/statistics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "common/error.h"

namespace dtsim::sim {
namespace {

// t(0.975, dof) for dof = 1..30: NIST/SEMATECH e-Handbook of Statistical
// Methods, 1.3.6.7.2, column "0.975" (upper-tail probability 0.025).
constexpr std::array<double, 30> kT975 = {
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};

constexpr double kZ975 = 1.959963984540054;  // the normal distribution's 0.975 quantile

std::vector<double> Sorted(std::span<const double> samples) {
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  return v;
}

// Percentile of already sorted samples.
double SortedPercentile(const std::vector<double>& x, double p) {
  DTSIM_CHECK(p >= 0 && p <= 100, "percentile must be in [0, 100]");
  const double h = static_cast<double>(x.size() - 1) * p / 100;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= x.size()) return x.back();
  return x[lo] + (h - static_cast<double>(lo)) * (x[lo + 1] - x[lo]);
}

}  // namespace

double Mean(std::span<const double> samples) {
  DTSIM_CHECK(!samples.empty(), "the mean of no samples");
  double sum = 0;
  for (double x : samples) sum += x;
  return sum / static_cast<double>(samples.size());
}

double SampleStdDev(std::span<const double> samples) {
  DTSIM_CHECK(!samples.empty(), "the standard deviation of no samples");
  if (samples.size() == 1) return 0;
  const double mean = Mean(samples);
  double squares = 0;  // two passes: no cancellation as in sum(x^2) - n mean^2
  for (double x : samples) squares += (x - mean) * (x - mean);
  return std::sqrt(squares / static_cast<double>(samples.size() - 1));
}

double StudentT975(int dof) {
  DTSIM_CHECK(dof >= 1, "Student's t needs dof >= 1");
  if (dof <= static_cast<int>(kT975.size())) return kT975[static_cast<std::size_t>(dof - 1)];
  // Abramowitz & Stegun 26.7.5: t = x + g1(x)/v + g2(x)/v^2 + g3(x)/v^3.
  const double x = kZ975, v = dof;
  const double x2 = x * x;
  const double g1 = (x2 + 1) * x / 4;
  const double g2 = ((5 * x2 + 16) * x2 + 3) * x / 96;
  const double g3 = (((3 * x2 + 19) * x2 + 17) * x2 - 15) * x / 384;
  return x + g1 / v + g2 / (v * v) + g3 / (v * v * v);
}

double ConfidenceHalfWidth95(std::span<const double> samples) {
  DTSIM_CHECK(!samples.empty(), "a confidence interval of no samples");
  if (samples.size() == 1) return 0;
  const auto n = static_cast<double>(samples.size());
  return StudentT975(static_cast<int>(samples.size()) - 1) * SampleStdDev(samples) / std::sqrt(n);
}

double Percentile(std::span<const double> samples, double p) {
  DTSIM_CHECK(!samples.empty(), "a percentile of no samples");
  return SortedPercentile(Sorted(samples), p);
}

Summary Summarize(std::span<const double> samples) {
  DTSIM_CHECK(!samples.empty(), "a summary of no samples");
  const std::vector<double> sorted = Sorted(samples);
  Summary s;
  s.n = static_cast<int>(samples.size());
  s.mean = Mean(samples);
  s.stddev = SampleStdDev(samples);
  s.ci95_half_width = ConfidenceHalfWidth95(samples);
  s.min = sorted.front();
  s.p50 = SortedPercentile(sorted, 50);
  s.p95 = SortedPercentile(sorted, 95);
  s.p99 = SortedPercentile(sorted, 99);
  s.max = sorted.back();
  return s;
}

Summary SummarizeCounted(std::span<const double> values, std::span<const std::int64_t> counts) {
  DTSIM_CHECK(values.size() == counts.size(), "one count per value");
  std::vector<std::pair<double, std::int64_t>> x;
  std::int64_t n = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    DTSIM_CHECK(counts[i] >= 0, "counts must not be negative");
    if (counts[i] == 0) continue;
    x.emplace_back(values[i], counts[i]);
    n += counts[i];
  }
  DTSIM_CHECK(n > 0, "a summary of no samples");
  std::sort(x.begin(), x.end());
  // The k-th smallest sample (0-based) of the expanded list.
  auto at = [&](std::int64_t k) {
    for (const auto& [v, c] : x) {
      if (k < c) return v;
      k -= c;
    }
    return x.back().first;
  };
  auto percentile = [&](double p) {
    const double h = static_cast<double>(n - 1) * p / 100;
    const auto lo = static_cast<std::int64_t>(std::floor(h));
    if (lo + 1 >= n) return x.back().first;
    const double a = at(lo), b = at(lo + 1);
    return a + (h - static_cast<double>(lo)) * (b - a);
  };
  Summary s;
  s.n = static_cast<int>(std::min<std::int64_t>(n, std::numeric_limits<int>::max()));
  double sum = 0;
  for (const auto& [v, c] : x) sum += v * static_cast<double>(c);
  s.mean = sum / static_cast<double>(n);
  if (n > 1) {
    double squares = 0;
    for (const auto& [v, c] : x) squares += (v - s.mean) * (v - s.mean) * static_cast<double>(c);
    s.stddev = std::sqrt(squares / static_cast<double>(n - 1));
    s.ci95_half_width = StudentT975(static_cast<int>(std::min<std::int64_t>(n - 1, 1 << 30))) *
                        s.stddev / std::sqrt(static_cast<double>(n));
  }
  s.min = x.front().first;
  s.p50 = percentile(50);
  s.p95 = percentile(95);
  s.p99 = percentile(99);
  s.max = x.back().first;
  return s;
}

}  // namespace dtsim::sim
