#include "exec/data/synthetic_dataset.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "common/error.h"
#include "exec/counter_rng.h"

namespace dtsim::exec {
namespace {

// Stream tags: each kind of draw gets its own seed CounterBits(seed, tag).
enum Stream : std::uint64_t {
  kTeacherWeights = 1,
  kTeacherCalibration = 2,
  kInputs = 3,
  kLabels = 4,
  kTemplates = 5,
  kNoise = 6,
  kChain = 7,
  kSequences = 8,
};

std::uint64_t StreamSeed(std::uint64_t seed, Stream stream) { return CounterBits(seed, stream); }

// Seed of the draws belonging to item `index` of a stream.
std::uint64_t ItemSeed(std::uint64_t stream_seed, std::int64_t index) {
  return CounterBits(stream_seed, static_cast<std::uint64_t>(index));
}

// Standard normal from uniforms 2k and 2k+1 (Box-Muller, cosine branch).
// 1 - u1 lies in (0, 1], so the log is finite.
float Gaussian(std::uint64_t seed, std::uint64_t k) {
  double u1 = CounterUniform(seed, 2 * k);
  double u2 = CounterUniform(seed, 2 * k + 1);
  return static_cast<float>(std::sqrt(-2.0 * std::log(1.0 - u1)) *
                            std::cos(2.0 * std::numbers::pi * u2));
}

// Standard normals 0 .. n-1 of stream `seed`, handed to f(i, value): pair j
// (uniforms 2j and 2j + 1) gives value 2j (cosine branch) and 2j + 1 (sine
// branch) by Box-Muller, in float. Per value that is half the uniforms and
// logarithms of Gaussian() and single-precision functions: a ResNet-50
// image (150,528 values) drew in 4.6 ms of CPU time with Gaussian() per
// value, too slow for four input threads to keep an H100 fed
// (bench/train_bench.cc, SyntheticDraw). 1 - u1 lies in (0, 1].
template <class F>
void ForGaussians(std::uint64_t seed, std::int64_t n, F f) {
  constexpr float kTwoPi = static_cast<float>(2.0 * std::numbers::pi);
  for (std::int64_t i = 0; i < n; i += 2) {
    const auto k = static_cast<std::uint64_t>(i);
    const float u1 = CounterUniform(seed, k), u2 = CounterUniform(seed, k + 1);
    const float r = std::sqrt(-2.0f * std::log(1.0f - u1)), theta = kTwoPi * u2;
    f(i, r * std::cos(theta));
    if (i + 1 < n) f(i + 1, r * std::sin(theta));
  }
}

// Integer in [0, n) from uniform j.
std::int64_t UniformInt(std::uint64_t seed, std::uint64_t j, std::int64_t n) {
  auto v = static_cast<std::int64_t>(static_cast<double>(CounterUniform(seed, j)) * static_cast<double>(n));
  return std::min(v, n - 1);
}

// Throws UserError("<dataset>: <what>, got <value>") unless ok.
template <class T>
void Require(bool ok, const char* dataset, const char* what, T value) {
  if (ok) return;
  std::ostringstream msg;
  msg << dataset << ": " << what << ", got " << value;
  throw UserError(msg.str(), "fix the dataset options");
}

}  // namespace

// ---------------------------------------------------------------- teacher

TeacherDataset::TeacherDataset(TeacherDatasetOptions options) : options_(std::move(options)) {
  const char* name = "TeacherDataset";
  Require(!options_.shape.empty(), name, "shape needs at least one dimension", options_.shape.size());
  for (std::int64_t d : options_.shape) Require(d >= 1, name, "every shape dimension must be >= 1", d);
  Require(options_.classes >= 2, name, "classes must be >= 2", options_.classes);
  Require(options_.hidden >= 1, name, "hidden must be >= 1", options_.hidden);
  Require(options_.size >= 1, name, "size must be >= 1", options_.size);
  dim_ = SampleElements(options_.shape);
  const std::int64_t h = options_.hidden;
  const std::int64_t c = options_.classes;

  const std::uint64_t wseed = StreamSeed(options_.seed, kTeacherWeights);
  std::uint64_t k = 0;  // running Gaussian index within the weight stream
  const float s1 = 1.0f / std::sqrt(static_cast<float>(dim_));
  const float s2 = 1.0f / std::sqrt(static_cast<float>(h));
  w1_.resize(static_cast<std::size_t>(h * dim_));
  for (float& w : w1_) w = s1 * Gaussian(wseed, k++);
  b1_.resize(static_cast<std::size_t>(h));
  for (float& b : b1_) b = 0.1f * Gaussian(wseed, k++);
  w2_.resize(static_cast<std::size_t>(c * h));
  for (float& w : w2_) w = s2 * Gaussian(wseed, k++);

  // Centre the logits: b2 = -mean(W2 h) over calibration inputs drawn from
  // their own stream, so no class dominates by an offset.
  b2_.assign(static_cast<std::size_t>(c), 0.0f);
  constexpr std::int64_t kCalibration = 2048;
  const std::uint64_t cseed = StreamSeed(options_.seed, kTeacherCalibration);
  std::vector<double> mean(static_cast<std::size_t>(c), 0.0);
  std::vector<float> x(static_cast<std::size_t>(dim_));
  std::vector<float> hid(static_cast<std::size_t>(h));
  for (std::int64_t n = 0; n < kCalibration; ++n) {
    DrawInput(cseed, n, x.data());
    for (std::int64_t j = 0; j < h; ++j) {
      float a = b1_[j];
      for (std::int64_t i = 0; i < dim_; ++i) a += w1_[j * dim_ + i] * x[i];
      hid[j] = std::tanh(a);
    }
    for (std::int64_t o = 0; o < c; ++o) {
      float a = 0;
      for (std::int64_t j = 0; j < h; ++j) a += w2_[o * h + j] * hid[j];
      mean[o] += a;
    }
  }
  for (std::int64_t o = 0; o < c; ++o) b2_[o] = static_cast<float>(-mean[o] / kCalibration);
  input_seed_ = StreamSeed(options_.seed, kInputs);
}

void TeacherDataset::DrawInput(std::uint64_t stream_seed, std::int64_t index, float* x) const {
  const std::uint64_t s = ItemSeed(stream_seed, index);
  if (options_.input == InputDistribution::kGaussian) {
    ForGaussians(s, dim_, [x](std::int64_t i, float z) { x[i] = z; });
    return;
  }
  for (std::int64_t i = 0; i < dim_; ++i)
    x[i] = 2.0f * CounterUniform(s, static_cast<std::uint64_t>(i)) - 1.0f;
}

std::int64_t TeacherDataset::Teach(const float* x) const {
  const std::int64_t h = options_.hidden;
  std::vector<float> hid(static_cast<std::size_t>(h));
  for (std::int64_t j = 0; j < h; ++j) {
    float a = b1_[j];
    for (std::int64_t i = 0; i < dim_; ++i) a += w1_[j * dim_ + i] * x[i];
    hid[j] = std::tanh(a);
  }
  std::int64_t best = 0;
  float best_logit = 0;
  for (std::int64_t o = 0; o < options_.classes; ++o) {
    float a = b2_[o];
    for (std::int64_t j = 0; j < h; ++j) a += w2_[o * h + j] * hid[j];
    if (o == 0 || a > best_logit) {  // ties go to the lowest class id
      best = o;
      best_logit = a;
    }
  }
  return best;
}

void TeacherDataset::FillSample(std::int64_t index, float* x, float* label) const {
  DrawInput(input_seed_, index, x);
  label[0] = static_cast<float>(Teach(x));
}

// ---------------------------------------------------------------- images

ClassImageDataset::ClassImageDataset(ClassImageDatasetOptions options) : options_(options) {
  const char* name = "ClassImageDataset";
  Require(options_.channels >= 1, name, "channels must be >= 1", options_.channels);
  Require(options_.height >= 1, name, "height must be >= 1", options_.height);
  Require(options_.width >= 1, name, "width must be >= 1", options_.width);
  Require(options_.classes >= 2, name, "classes must be >= 2", options_.classes);
  Require(options_.frequencies >= 1, name, "frequencies must be >= 1", options_.frequencies);
  Require(options_.noise >= 0 && std::isfinite(options_.noise), name,
          "noise must be a finite number >= 0", options_.noise);
  Require(options_.size >= 1, name, "size must be >= 1", options_.size);

  const std::int64_t ch = options_.channels, hh = options_.height, ww = options_.width;
  const std::int64_t f = options_.frequencies;
  pixels_ = ch * hh * ww;
  templates_.assign(static_cast<std::size_t>(options_.classes * pixels_), 0.0f);
  const std::uint64_t tseed = StreamSeed(options_.seed, kTemplates);
  for (std::int64_t k = 0; k < options_.classes; ++k) {
    float* t = templates_.data() + k * pixels_;
    const std::uint64_t s = ItemSeed(tseed, k);
    std::uint64_t g = 0;  // Gaussian index within this class's stream
    for (std::int64_t c = 0; c < ch; ++c) {
      for (std::int64_t fy = 0; fy < f; ++fy) {
        for (std::int64_t fx = 0; fx < f; ++fx) {
          const double a = Gaussian(s, g++);
          const double b = Gaussian(s, g++);
          for (std::int64_t y = 0; y < hh; ++y) {
            for (std::int64_t x = 0; x < ww; ++x) {
              const double phase = 2.0 * std::numbers::pi *
                                   (static_cast<double>(fy * y) / static_cast<double>(hh) +
                                    static_cast<double>(fx * x) / static_cast<double>(ww));
              t[(c * hh + y) * ww + x] += static_cast<float>(a * std::cos(phase) + b * std::sin(phase));
            }
          }
        }
      }
    }
    double sum_sq = 0;
    for (std::int64_t i = 0; i < pixels_; ++i) sum_sq += static_cast<double>(t[i]) * t[i];
    const double rms = std::sqrt(sum_sq / static_cast<double>(pixels_));
    DTSIM_CHECK(rms > 0, "a class template came out all zero");
    for (std::int64_t i = 0; i < pixels_; ++i) t[i] = static_cast<float>(t[i] / rms);
  }
  label_seed_ = StreamSeed(options_.seed, kLabels);
  noise_seed_ = StreamSeed(options_.seed, kNoise);
}

std::span<const float> ClassImageDataset::class_template(std::int64_t k) const {
  DTSIM_CHECK(k >= 0 && k < options_.classes, "class_template: class out of range");
  return {templates_.data() + k * pixels_, static_cast<std::size_t>(pixels_)};
}

void ClassImageDataset::FillSample(std::int64_t index, float* x, float* label) const {
  const std::int64_t k = UniformInt(label_seed_, static_cast<std::uint64_t>(index), options_.classes);
  const float* t = templates_.data() + k * pixels_;
  const std::uint64_t s = ItemSeed(noise_seed_, index);
  const auto noise = static_cast<float>(options_.noise);
  ForGaussians(s, pixels_, [x, t, noise](std::int64_t i, float z) { x[i] = t[i] + noise * z; });
  label[0] = static_cast<float>(k);
}

// ---------------------------------------------------------------- tokens

TokenDataset::TokenDataset(TokenDatasetOptions options) : options_(options) {
  const char* name = "TokenDataset";
  Require(options_.vocab >= 2 && options_.vocab <= (std::int64_t{1} << 24), name,
          "vocab must be in [2, 2^24] (token ids are stored exactly as float)", options_.vocab);
  Require(options_.seq_len >= 1, name, "seq_len must be >= 1", options_.seq_len);
  Require(options_.successors >= 1 && options_.successors <= options_.vocab, name,
          "successors must be in [1, vocab]", options_.successors);
  Require(options_.noise >= 0 && options_.noise <= 1, name, "noise must be in [0, 1]", options_.noise);
  Require(options_.size >= 1, name, "size must be >= 1", options_.size);

  const std::int64_t v = options_.vocab, m = options_.successors;
  successors_.resize(static_cast<std::size_t>(v * m));
  cumulative_.resize(static_cast<std::size_t>(v * m));
  const std::uint64_t cseed = StreamSeed(options_.seed, kChain);
  std::vector<double> w(static_cast<std::size_t>(m));
  for (std::int64_t t = 0; t < v; ++t) {
    const std::uint64_t s = ItemSeed(cseed, t);
    // Uniforms 0..m-1 pick the successors, m..2m-1 their Dirichlet(1)
    // weights (normalised exponentials).
    double total = 0;
    for (std::int64_t j = 0; j < m; ++j) {
      successors_[t * m + j] = UniformInt(s, static_cast<std::uint64_t>(j), v);
      w[j] = -std::log(1.0 - static_cast<double>(CounterUniform(s, static_cast<std::uint64_t>(m + j))));
      total += w[j];
    }
    if (total <= 0) {  // every uniform was 0: fall back to equal weights
      std::fill(w.begin(), w.end(), 1.0);
      total = static_cast<double>(m);
    }
    double run = 0;
    for (std::int64_t j = 0; j < m; ++j) {
      run += w[j] / total;
      cumulative_[t * m + j] = static_cast<float>(run);
    }
    cumulative_[t * m + m - 1] = 1.0f;  // rounding must not leave a gap
  }
  sequence_seed_ = StreamSeed(options_.seed, kSequences);
}

std::span<const std::int64_t> TokenDataset::successors_of(std::int64_t t) const {
  DTSIM_CHECK(t >= 0 && t < options_.vocab, "successors_of: token out of range");
  return {successors_.data() + t * options_.successors, static_cast<std::size_t>(options_.successors)};
}

void TokenDataset::FillSample(std::int64_t index, float* x, float* label) const {
  const std::uint64_t s = ItemSeed(sequence_seed_, index);
  const std::int64_t v = options_.vocab, m = options_.successors;
  std::int64_t t = UniformInt(s, 0, v);
  // Step k (1-based) draws uniforms 2k (noise or not) and 2k+1 (which token).
  for (std::int64_t k = 1; k <= options_.seq_len; ++k) {
    x[k - 1] = static_cast<float>(t);
    const auto uk = static_cast<std::uint64_t>(k);
    std::int64_t next;
    if (CounterUniform(s, 2 * uk) < options_.noise) {
      next = UniformInt(s, 2 * uk + 1, v);
    } else {
      const float u = CounterUniform(s, 2 * uk + 1);
      const float* cum = cumulative_.data() + t * m;
      std::int64_t j = 0;
      while (j < m - 1 && u >= cum[j]) ++j;
      next = successors_[t * m + j];
    }
    label[k - 1] = static_cast<float>(next);
    t = next;
  }
}

}  // namespace dtsim::exec
