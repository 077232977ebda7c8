// Helpers shared by the kernel tests: seeded random tensors, the scalar
// objective L = sum(y * r), and a central finite-difference gradient check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace dtsim::exec::testing {

// `count` values uniform in [lo, hi), the same for the same seed.
inline std::vector<double> RandomVector(std::int64_t count, std::uint64_t seed, double lo = -1.0,
                                        double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(count));
  for (double& x : v) x = uniform(rng);
  return v;
}

// Values with |x| in [0.05, 1) and a random sign: away from the kink of
// ReLU, so that a finite difference never straddles it.
inline std::vector<double> AwayFromZero(std::int64_t count, std::uint64_t seed) {
  std::vector<double> v = RandomVector(count, seed, 0.05, 1.0);
  const std::vector<double> sign = RandomVector(count, seed + 1);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = sign[i] < 0 ? -v[i] : v[i];
  return v;
}

inline double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

inline std::vector<float> ToFloat(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// Checks `analytic` (the gradient of objective() with respect to x, as the
// backward kernel produced it) against central differences
//   (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)
// for every element of x, within atol + rtol * |analytic|. x is perturbed in
// place and restored. Reports the first few mismatches by index.
inline void ExpectGradient(const std::string& what, std::vector<double>& x,
                           const std::function<double()>& objective,
                           const std::vector<double>& analytic, double eps = 1e-6,
                           double rtol = 1e-6, double atol = 1e-7) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  int mismatches = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + eps;
    const double plus = objective();
    x[i] = saved - eps;
    const double minus = objective();
    x[i] = saved;
    const double numeric = (plus - minus) / (2 * eps);
    const double tol = atol + rtol * std::abs(analytic[i]);
    if (std::abs(numeric - analytic[i]) > tol && ++mismatches <= 5) {
      ADD_FAILURE() << "d/d" << what << "[" << i << "]: analytic " << analytic[i]
                    << ", finite difference " << numeric;
    }
  }
  EXPECT_EQ(mismatches, 0) << what << ": gradient mismatches";
}

}  // namespace dtsim::exec::testing
