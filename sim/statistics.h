// Summary statistics of repeated runs (`--repeat N`): mean, sample standard
// deviation, a 95% confidence interval of the mean and percentiles.
//
// The confidence interval assumes independent, roughly normal samples (the
// means of repeated simulations with different seeds are): half-width =
// t(0.975, n - 1) x s / sqrt(n).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dtsim::sim {

// Arithmetic mean. REQUIRES: samples non-empty.
double Mean(std::span<const double> samples);

// Sample standard deviation, with Bessel's correction (divides by n - 1).
// 0 for a single sample. REQUIRES: samples non-empty.
double SampleStdDev(std::span<const double> samples);

// The two-sided 95% quantile of Student's t with `dof` degrees of freedom,
// t(0.975, dof). dof 1-30 from the table of the NIST/SEMATECH e-Handbook of
// Statistical Methods, section 1.3.6.7.2 ("Critical values of the Student's t
// distribution"), to 3 decimals; above 30 the Cornish-Fisher expansion of
// Abramowitz & Stegun 26.7.5 around the normal quantile 1.959964 (error < 1e-4
// there; it tends to 1.96 as dof grows). REQUIRES: dof >= 1.
double StudentT975(int dof);

// Half-width of the 95% confidence interval of the mean:
// StudentT975(n - 1) x SampleStdDev / sqrt(n). 0 for a single sample (no
// spread can be estimated; callers report n alongside). REQUIRES: non-empty.
double ConfidenceHalfWidth95(std::span<const double> samples);

// The p-th percentile (p in [0, 100]) by linear interpolation between the
// closest ranks: with the samples sorted as x[0] <= ... <= x[n-1] and
// h = (n - 1) p / 100, it is x[floor h] + (h - floor h)(x[floor h + 1] -
// x[floor h]). This is Hyndman & Fan's definition 7, the default of NumPy
// and R. p = 0 gives the minimum, 100 the maximum. REQUIRES: non-empty.
double Percentile(std::span<const double> samples, double p);

struct Summary {
  int n = 0;
  double mean = 0;
  double stddev = 0;           // sample standard deviation
  double ci95_half_width = 0;  // the mean's 95% interval is mean +- this
  double min = 0;
  double p50 = 0;              // Percentile(50): the median
  double p95 = 0;              // Percentile(95)
  double p99 = 0;              // Percentile(99)
  double max = 0;
};

// All of the above at once. REQUIRES: samples non-empty.
Summary Summarize(std::span<const double> samples);

// Summarize() of the samples in which values[i] occurs counts[i] times,
// without writing them out (e.g. the H steps of an averaging round: H - 1
// alike and one longer, for any H). REQUIRES: equal sizes, counts >= 0,
// some count > 0.
Summary SummarizeCounted(std::span<const double> values, std::span<const std::int64_t> counts);

}  // namespace dtsim::sim
