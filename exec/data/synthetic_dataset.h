// Synthetic datasets: no download, any size, learnable, and every sample a
// pure function of (options, index) so that data-parallel splits and resumed
// runs see the same bits (see dataset.h).
//
// Randomness: all draws are CounterUniform(seed', j) (exec/counter_rng.h).
// Each dataset derives one seed per stream from options.seed (teacher
// weights, inputs, labels, ...); sample i uses the per-sample seed
// CounterBits(stream_seed, i) and draws j = 0, 1, ... from it. Gaussians are
// Box-Muller on two uniforms: z = sqrt(-2 ln(1 - u1)) cos(2 pi u2).
//
// Generative models (D = prod(shape), C = classes):
//
//  TeacherDataset — a fixed random "teacher" network labels random inputs.
//    x ~ N(0, 1)^D (or U[-1, 1)^D)
//    h = tanh(W1 x + b1),  W1: (H, D) ~ N(0, 1/D), b1: (H) ~ N(0, 0.1^2)
//    label = argmax(W2 h + b2),  W2: (C, H) ~ N(0, 1/H)
//    b2 = -(mean of W2 h over 2048 calibration inputs), which centres the
//    logits so that the classes come out roughly balanced. A student with a
//    hidden layer of >= H tanh units can represent the labels exactly.
//
//  ClassImageDataset — class templates plus noise, (channels, height, width).
//    label ~ uniform in [0, C) (drawn from the sample index)
//    template_k[c, y, x] = sum over fy, fx in [0, F) of
//        a cos(2 pi (fy y / H + fx x / W)) + b sin(2 pi (fy y / H + fx x / W))
//      with a, b ~ N(0, 1) fixed per (k, c, fy, fx), scaled to unit RMS;
//      F = options.frequencies keeps the pattern smooth (low frequency).
//    x = template_label + noise * N(0, 1) per pixel.
//    A nearest-template classifier is close to perfect at the default noise,
//    so a small CNN learns it quickly.
//
//  TokenDataset — next-token prediction over a sparse random Markov chain.
//    Each token t has `successors` likely next tokens succ[t][j] ~ U[0, V)
//    with probabilities p[t][j] ~ Dirichlet(1, ..., 1).
//    t_0 ~ U[0, V); t_{k+1} = with probability `noise` a uniform token,
//    otherwise succ[t_k][j] with probability p[t_k][j].
//    x = t_0 .. t_{S-1}, labels = t_1 .. t_S (token ids stored as floats).
//    The best possible model reaches the chain's conditional entropy, at
//    most h(noise) + (1 - noise) ln(successors) + noise ln(V) nats per token
//    (h = binary entropy), far below the ln(V) of a uniform guess.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "exec/data/dataset.h"

namespace dtsim::exec {

enum class InputDistribution {
  kGaussian,  // N(0, 1) per element
  kUniform,   // U[-1, 1) per element
};

struct TeacherDatasetOptions {
  // Shape of one input; the teacher sees it flattened. Default {64}.
  SampleShape shape = {64};
  // Number of classes, >= 2. Default 10.
  std::int64_t classes = 10;
  // Teacher hidden units, >= 1. More units make a harder task. Default 32.
  std::int64_t hidden = 32;
  // Default kGaussian.
  InputDistribution input = InputDistribution::kGaussian;
  // Distinct samples (indices wrap after this), >= 1. Default 2^20.
  std::int64_t size = std::int64_t{1} << 20;
  // Selects the teacher and the samples. Default 1.
  std::uint64_t seed = 1;
};

class TeacherDataset final : public Dataset {
 public:
  // Builds the teacher (O(classes*hidden + hidden*D) floats, plus a
  // calibration pass of 2048 * hidden * D multiply-adds).
  // Throws UserError on invalid options.
  explicit TeacherDataset(TeacherDatasetOptions options);

  SampleShape sample_shape() const override { return options_.shape; }
  SampleShape label_shape() const override { return {}; }
  LabelKind label_kind() const override { return LabelKind::kClass; }
  std::int64_t classes() const override { return options_.classes; }
  std::int64_t size() const override { return options_.size; }

 private:
  void FillSample(std::int64_t index, float* x, float* label) const override;
  // Draws input `index` of the stream with seed stream_seed into x (D floats).
  void DrawInput(std::uint64_t stream_seed, std::int64_t index, float* x) const;
  // The teacher's label for input x (D floats).
  std::int64_t Teach(const float* x) const;

  TeacherDatasetOptions options_;
  std::int64_t dim_ = 0;     // D
  std::vector<float> w1_;    // (hidden, D)
  std::vector<float> b1_;    // (hidden)
  std::vector<float> w2_;    // (classes, hidden)
  std::vector<float> b2_;    // (classes)
  std::uint64_t input_seed_ = 0;
};

struct ClassImageDatasetOptions {
  // Image shape (C, H, W), each >= 1. Default 3 x 32 x 32 (CIFAR-10 sized).
  std::int64_t channels = 3;
  std::int64_t height = 32;
  std::int64_t width = 32;
  // Number of classes, >= 2. Default 10.
  std::int64_t classes = 10;
  // Spatial frequencies per direction in each template, >= 1; higher means
  // busier templates. Default 3.
  std::int64_t frequencies = 3;
  // Standard deviation of the per-pixel Gaussian noise, relative to the
  // unit-RMS template; >= 0. Higher is harder. Default 0.5.
  double noise = 0.5;
  // Distinct samples, >= 1. Default 2^20.
  std::int64_t size = std::int64_t{1} << 20;
  // Default 1.
  std::uint64_t seed = 1;
};

class ClassImageDataset final : public Dataset {
 public:
  // Builds classes * C * H * W template floats. Throws UserError on invalid
  // options.
  explicit ClassImageDataset(ClassImageDatasetOptions options);

  SampleShape sample_shape() const override {
    return {options_.channels, options_.height, options_.width};
  }
  SampleShape label_shape() const override { return {}; }
  LabelKind label_kind() const override { return LabelKind::kClass; }
  std::int64_t classes() const override { return options_.classes; }
  std::int64_t size() const override { return options_.size; }

  // The noise-free image of class k, (C, H, W). REQUIRES: 0 <= k < classes().
  // The span lives as long as this dataset.
  std::span<const float> class_template(std::int64_t k) const;

 private:
  void FillSample(std::int64_t index, float* x, float* label) const override;

  ClassImageDatasetOptions options_;
  std::int64_t pixels_ = 0;         // C * H * W
  std::vector<float> templates_;    // (classes, C, H, W)
  std::uint64_t label_seed_ = 0;
  std::uint64_t noise_seed_ = 0;
};

struct TokenDatasetOptions {
  // Vocabulary size V, 2 <= V <= 2^24 (ids stay exact in float). Default 256.
  std::int64_t vocab = 256;
  // Sequence length S per sample, >= 1. Default 64.
  std::int64_t seq_len = 64;
  // Likely successors per token, 1 <= successors <= V. Default 4.
  std::int64_t successors = 4;
  // Probability that the next token is uniform instead of a successor, in
  // [0, 1]. Default 0.05.
  double noise = 0.05;
  // Distinct sequences, >= 1. Default 2^20.
  std::int64_t size = std::int64_t{1} << 20;
  // Default 1.
  std::uint64_t seed = 1;
};

class TokenDataset final : public Dataset {
 public:
  // Builds the chain (V * successors entries). Throws UserError on invalid
  // options.
  explicit TokenDataset(TokenDatasetOptions options);

  SampleShape sample_shape() const override { return {options_.seq_len}; }
  SampleShape label_shape() const override { return {options_.seq_len}; }
  LabelKind label_kind() const override { return LabelKind::kTokenSequence; }
  std::int64_t classes() const override { return options_.vocab; }
  std::int64_t size() const override { return options_.size; }

  // The likely successors of token t (`successors` ids, possibly repeated).
  // REQUIRES: 0 <= t < vocab. The span lives as long as this dataset.
  std::span<const std::int64_t> successors_of(std::int64_t t) const;

 private:
  void FillSample(std::int64_t index, float* x, float* label) const override;

  TokenDatasetOptions options_;
  std::vector<std::int64_t> successors_;  // (V, successors) token ids
  std::vector<float> cumulative_;          // (V, successors) running sums of p, last = 1
  std::uint64_t sequence_seed_ = 0;
};

}  // namespace dtsim::exec
