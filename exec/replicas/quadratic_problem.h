// For tests: linear regression with Gaussian design, a TrainingProblem
// whose expected loss under SGD has a closed form (replica_trainer_test.cc,
// tests/tta_test.cc): x ~ N(0, I_d), y = w* . x + sigma eps, eps ~ N(0, 1),
// per-sample loss (w . x - y)^2 / 2, so the expected loss is
// f(w) = (|w - w*|^2 + sigma^2) / 2, which Evaluate returns (with no
// accuracy: NaN). Sample i is a
// pure function of (seed, i): an endless stream of independent samples.
// w* = (1, 1.25, 1.5, 1.75, 1, ...), w0 = 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "exec/counter_rng.h"
#include "exec/replicas/replica_trainer.h"

namespace dtsim::exec {

class QuadraticProblem final : public TrainingProblem {
 public:
  QuadraticProblem(int d, double sigma, std::uint64_t seed) : d_(d), sigma_(sigma), seed_(seed) {
    for (int k = 0; k < d; ++k) target_.push_back(1.0f + 0.25f * static_cast<float>(k % 4));
  }
  std::int64_t num_params() const override { return d_; }
  std::vector<float> InitialParams() const override { return std::vector<float>(d_, 0.0f); }
  double Gradient(const float* w, std::int64_t first, std::int64_t count, float* grad) override {
    std::fill(grad, grad + d_, 0.0f);
    std::vector<double> x(static_cast<std::size_t>(d_));
    double loss = 0;
    for (std::int64_t i = first; i < first + count; ++i) {
      double residual = 0;  // (w - w*) . x - sigma eps
      for (int k = 0; k <= d_; ++k) {
        const double z = Gaussian(static_cast<std::uint64_t>(i) * (d_ + 1) + k);
        if (k < d_) {
          x[k] = z;
          residual += (w[k] - target_[k]) * z;
        } else {
          residual -= sigma_ * z;
        }
      }
      loss += residual * residual / 2;
      for (int k = 0; k < d_; ++k) grad[k] += static_cast<float>(residual * x[k] / count);
    }
    return loss / static_cast<double>(count);
  }
  Evaluation Evaluate(const float* w) override {
    double e = 0;
    for (int k = 0; k < d_; ++k) e += (w[k] - target_[k]) * (w[k] - target_[k]);
    return {.loss = (e + sigma_ * sigma_) / 2};
  }
  // |w0 - w*|^2.
  double InitialError() const {
    double e = 0;
    for (float t : target_) e += t * t;
    return e;
  }

 private:
  double Gaussian(std::uint64_t j) const {  // Box-Muller on two counter uniforms
    constexpr double kPi = 3.14159265358979323846;
    const double u1 = CounterUniform(seed_, 2 * j), u2 = CounterUniform(seed_, 2 * j + 1);
    return std::sqrt(-2 * std::log(1 - u1)) * std::cos(2 * kPi * u2);
  }
  int d_;
  double sigma_;
  std::uint64_t seed_;
  std::vector<float> target_;
};

// The expected loss of the replicas' average after each step of local SGD
// on QuadraticProblem (W replicas, batch b, rate eta, averaging every H
// steps; steps + 1 values, step 0 first), from the second moments of the
// errors e_r = w_r - w*: m = E|e_r|^2, c = E[e_r . e_q] (r != q), starting
// at m = c = e0 = |w0 - w*|^2. A local step is e' = (I - eta A) e + eta
// sigma (1/b) sum x_i eps_i with A = (1/b) sum x_i x_i^T, E[A] = I and
// E[A^2] = (1 + (d + 1)/b) I (Gaussian fourth moments, E[(x x^T)^2] = (d + 2)
// I), so
//   m' = ((1 - eta)^2 + eta^2 (d + 1)/b) m + eta^2 sigma^2 d / b,
//   c' = (1 - eta)^2 c   (independent batches).
// The average's error is E|mean e|^2 = m / W + (W - 1) c / W, and an
// averaging step sets m = c = that. Expected loss (E|mean e|^2 + sigma^2)/2.
// Synchronous data parallelism is W = 1 with batch W b.
inline std::vector<double> ExpectedLocalSgd(double e0, int d, double sigma, int workers,
                                            double b, double eta, int h, int steps) {
  double m = e0, c = e0;
  std::vector<double> loss{(e0 + sigma * sigma) / 2};
  for (int t = 1; t <= steps; ++t) {
    m = ((1 - eta) * (1 - eta) + eta * eta * (d + 1) / b) * m + eta * eta * sigma * sigma * d / b;
    c = (1 - eta) * (1 - eta) * c;
    const double avg = m / workers + (workers - 1) * c / workers;
    if (t % h == 0) m = c = avg;
    loss.push_back((avg + sigma * sigma) / 2);
  }
  return loss;
}

}  // namespace dtsim::exec
