#include "exec/runtime/model_runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "exec/data/synthetic_dataset.h"
#include "exec/kernels/cpu_backend.h"
#include "exec/runtime/optimizer.h"
#include "models/graph_builder.h"
#include "models/zoo.h"

namespace dtsim::exec {
namespace {

using models::ModelGraph;

// A small GPT: 2 layers, H = 32, A = 4, S = 8, V = 32 (tied head).
ModelGraph TinyGpt() {
  models::TransformerConfig c;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.sequence = 8;
  c.vocab = 32;
  return models::BuildTransformer(c);
}

// A small Llama: the same sizes with RMS norm, SwiGLU (F = 64), rotary
// positions, grouped-query attention (2 key/value heads for 4 query heads),
// no biases, no dropout, an untied head.
ModelGraph TinyLlama(models::AttentionKind attention = models::AttentionKind::kEager) {
  models::TransformerConfig c;
  c.attention = attention;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.kv_heads = 2;
  c.sequence = 8;
  c.vocab = 32;
  c.ffn_hidden = 64;
  c.mlp = models::MlpKind::kSwiglu;
  c.norm = models::NormKind::kRmsNorm;
  c.positions = models::PositionKind::kRotary;
  c.bias = false;
  c.dropout = false;
  c.tied_embeddings = false;
  return models::BuildTransformer(c);
}

// One forward and backward of `batch` samples starting at `first`.
void Pass(ModelRuntime& rt, const Dataset& data, std::int64_t first) {
  const std::int64_t b = rt.options().micro_batch;
  std::vector<float> x(static_cast<std::size_t>(b * rt.input_elements()));
  std::vector<float> y(static_cast<std::size_t>(b * rt.label_elements()));
  data.Fill(first, b, x.data(), y.data());
  rt.SetInput(0, x.data());
  rt.SetLabels(0, y.data());
  rt.ForwardAll(0);
  rt.BackwardAll(0);
}

std::vector<float> Grads(ModelRuntime& rt) {
  std::vector<float> g(static_cast<std::size_t>(rt.num_params()));
  rt.backend().Download(g.data(), rt.grads(), rt.num_params());
  return g;
}

// Trains with SGD and returns the mean loss of the last `window` steps.
double Train(ModelRuntime& rt, const Dataset& data, int steps, const OptimizerOptions& opt,
             double* first_loss) {
  Optimizer optimizer(rt.backend(), rt.num_params(), opt);
  const std::int64_t b = rt.options().micro_batch;
  double tail = 0;
  const int window = 10;
  for (int s = 0; s < steps; ++s) {
    rt.ZeroGrads();
    Pass(rt, data, s * b);
    const double loss = rt.Loss(0);
    if (s == 0) *first_loss = loss;
    if (s >= steps - window) tail += loss / window;
    optimizer.Step(rt.params(), rt.grads());
  }
  return tail;
}

// Central differences of the mean loss in float with step 1e-2 on about
// 100 parameters spread over all of `g`'s (every kind: embeddings, qkv,
// norms, MLPs): the analytic gradient within 5% + 2e-4 (float's rounding
// of the loss difference over 2e-2). Returns the analytic gradient.
std::vector<float> ExpectGradientMatchesFiniteDifferences(const ModelGraph& g) {
  CpuBackend cpu;
  ModelRuntime rt(g, cpu, {.micro_batch = 2, .seed = 3});
  const TokenDataset data({.vocab = 32, .seq_len = 8, .seed = 9});
  Pass(rt, data, 0);
  const std::vector<float> analytic = Grads(rt);
  std::vector<float> p = rt.DownloadParams();
  auto loss_at = [&](std::size_t i, float value) {
    std::vector<float> q = p;
    q[i] = value;
    rt.UploadParams(q);
    Pass(rt, data, 0);
    return rt.Loss(0);
  };
  int checked = 0;
  for (std::size_t i = 0; i < p.size(); i += p.size() / 97 + 1) {
    const float h = 1e-2f;
    const double numeric = (loss_at(i, p[i] + h) - loss_at(i, p[i] - h)) / (2.0 * h);
    EXPECT_NEAR(analytic[i], numeric, 0.05 * std::abs(numeric) + 2e-4) << "parameter " << i;
    ++checked;
  }
  EXPECT_GT(checked, 90);
  return analytic;
}

TEST(ModelRuntime, MlpLearnsTheTeacher) {
  // mnist-mlp (784-500-10) on labels of a random teacher network. Chance
  // level is log(10) = 2.30; 300 Adam steps of 32 fresh samples must get
  // to about half of it, 1.2 (a broken backward stays near chance).
  const ModelGraph g = models::BuildZooModel("mnist-mlp");
  CpuBackend cpu;
  ModelRuntime rt(g, cpu, {.micro_batch = 32, .seed = 3});
  const TeacherDataset data({.shape = {784}, .classes = 10, .seed = 5});
  double first = 0;
  const double last = Train(
      rt, data, 300,
      {.algorithm = OptimizerAlgorithm::kAdam, .lr = {.initial_lr = 1e-3}}, &first);
  EXPECT_NEAR(first, std::log(10.0), 0.3);
  EXPECT_LT(last, 1.2) << "first loss " << first;
}

TEST(ModelRuntime, CorrectCountsTheArgmaxAtTheLabel) {
  // Dense 3 -> 3 with identity weights and zero bias: the logits are the
  // input, so the predicted class is the input's largest element.
  models::GraphBuilder b("argmax");
  b.SoftmaxCrossEntropy("loss", b.Dense("fc", b.Input("x", {3}), {.out_features = 3}), 3);
  const ModelGraph g = b.Finish("test");
  CpuBackend cpu;
  ModelRuntime rt(g, cpu, {.micro_batch = 4, .seed = 1});
  // Dense weight (out, in) row-major, then bias (ModelRuntime's layout).
  rt.UploadParams({1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0});
  // Rows' argmax: 0, 2, 1, 0 (a tie of 0 and 1 goes to the lower class).
  const std::vector<float> x = {5, 1, 1, 0, 1, 9, 1, 3, 2, 4, 4, 0};
  const std::vector<float> labels = {0, 2, 0, 1};  // right, right, wrong, wrong
  rt.SetInput(0, x.data());
  rt.SetLabels(0, labels.data());
  rt.ForwardAll(0);
  EXPECT_EQ(rt.Correct(0), 2);
}

TEST(ModelRuntime, CifarCnnLearnsClassImages) {
  // The TensorFlow CIFAR-10 CNN on class-conditional 24x24 images: from
  // chance (log 10 = 2.30) to under 1.0 in 60 steps of 16 with momentum.
  const ModelGraph g = models::BuildZooModel("cifar10-cnn");
  CpuBackend cpu;
  ModelRuntime rt(g, cpu, {.micro_batch = 16, .seed = 3});
  const ClassImageDataset data({.channels = 3, .height = 24, .width = 24, .seed = 7});
  double first = 0;
  const double last = Train(
      rt, data, 60,
      {.algorithm = OptimizerAlgorithm::kMomentum, .lr = {.initial_lr = 0.01}}, &first);
  EXPECT_NEAR(first, std::log(10.0), 0.3);
  EXPECT_LT(last, 1.0) << "first loss " << first;
}

// Next-token prediction on a sparse Markov chain over 32 tokens: chance is
// log(32) = 3.47; a chain with 4 likely successors has entropy near
// log(4) = 1.39, so below 2.2 after 300 Adam steps means `g` learned
// transitions.
void ExpectLearnsTheMarkovChain(const ModelGraph& g) {
  CpuBackend cpu;
  ModelRuntime rt(g, cpu, {.micro_batch = 16, .seed = 3});
  const TokenDataset data({.vocab = 32, .seq_len = 8, .seed = 9});
  double first = 0;
  const double last = Train(
      rt, data, 300, {.algorithm = OptimizerAlgorithm::kAdam, .lr = {.initial_lr = 3e-3}},
      &first);
  EXPECT_NEAR(first, std::log(32.0), 0.3);
  EXPECT_LT(last, 2.2) << "first loss " << first;
}

TEST(ModelRuntime, TinyGptLearnsTheMarkovChain) { ExpectLearnsTheMarkovChain(TinyGpt()); }
TEST(ModelRuntime, TinyLlamaLearnsTheMarkovChain) { ExpectLearnsTheMarkovChain(TinyLlama()); }

// Central differences of the mean loss, as for the GPT below, on every
// kind of parameter of the Llama block: RMS norm gains, the fused qkv
// (rotated q and k, repeated k and v heads), SwiGLU's gate and up.
TEST(ModelRuntime, LlamaGradientMatchesFiniteDifferences) {
  const ModelGraph g = TinyLlama();
  const std::vector<float> analytic = ExpectGradientMatchesFiniteDifferences(g);
  CpuBackend cpu;
  const ModelRuntime rt(g, cpu, {.micro_batch = 2, .seed = 3});
  // Every RMS norm's gain gets a gradient (the sampled parameters may miss
  // the gains, a few dozen of the model's).
  for (models::OpId v = 0; v < g.num_ops(); ++v)
    if (g.op(v).kind == models::OpKind::kRmsNorm) {
      const ParamRange r = rt.OpParams(v);
      double norm = 0;
      for (std::int64_t j = 0; j < r.count; ++j) norm += std::abs(analytic[static_cast<std::size_t>(r.offset + j)]);
      EXPECT_GT(norm, 0) << g.op(v).name;
    }
}

// The fused attention kernel (flash algorithm, no repeated heads) gives the
// eager block's loss and gradients: the same parameters (the attention
// core has none), the same math up to the order of float sums.
TEST(ModelRuntime, FlashAttentionEqualsEagerAttention) {
  const ModelGraph eager = TinyLlama();
  const ModelGraph flash = TinyLlama(models::AttentionKind::kFlash);
  CpuBackend cpu;
  ModelRuntime a(eager, cpu, {.micro_batch = 2, .seed = 3});
  ModelRuntime b(flash, cpu, {.micro_batch = 2, .seed = 3});
  ASSERT_EQ(a.num_params(), b.num_params());
  EXPECT_EQ(a.DownloadParams(), b.DownloadParams());
  const TokenDataset data({.vocab = 32, .seq_len = 8, .seed = 9});
  Pass(a, data, 0);
  Pass(b, data, 0);
  EXPECT_NEAR(a.Loss(0), b.Loss(0), 1e-5);
  const std::vector<float> ga = Grads(a), gb = Grads(b);
  for (std::size_t i = 0; i < ga.size(); ++i)
    ASSERT_NEAR(ga[i], gb[i], 1e-5 + 1e-4 * std::abs(ga[i])) << "parameter " << i;
}

TEST(ModelRuntime, GptGradientMatchesFiniteDifferences) {
  // The runtime's wiring of attention (head split, causal scaled softmax,
  // tied head).
  ExpectGradientMatchesFiniteDifferences(TinyGpt());
}

TEST(ModelRuntime, PipelineStagesGiveTheWholeModelsGradients) {
  // Splitting the CNN after pool1 into two stages, passing the boundary
  // activation forward and its gradient back, must reproduce the unsplit
  // model's gradients bit for bit: the same kernels run on the same data.
  const ModelGraph g = models::BuildZooModel("cifar10-cnn");
  CpuBackend cpu;
  const ClassImageDataset data({.channels = 3, .height = 24, .width = 24, .seed = 7});
  ModelRuntime whole(g, cpu, {.micro_batch = 4, .seed = 3});
  Pass(whole, data, 0);
  const models::OpId cut = g.Find("pool1") + 1;
  ModelRuntime first(g, cpu, {.micro_batch = 4, .end = cut, .seed = 3});
  ModelRuntime second(g, cpu, {.micro_batch = 4, .begin = cut, .seed = 3});
  ASSERT_EQ(first.boundary_outputs().size(), 1u);
  ASSERT_EQ(second.boundary_inputs(), first.boundary_outputs());
  std::vector<float> x(static_cast<std::size_t>(4 * first.input_elements()));
  std::vector<float> y(4);
  data.Fill(0, 4, x.data(), y.data());
  first.SetInput(0, x.data());
  first.ForwardAll(0);
  std::vector<float> act(static_cast<std::size_t>(first.boundary_output_elements()));
  first.GetBoundaryOutputs(0, act.data());
  second.SetBoundaryInputs(0, act.data());
  second.SetLabels(0, y.data());
  second.ForwardAll(0);
  second.BackwardAll(0);
  second.GetBoundaryInputGrads(0, act.data());
  first.SetBoundaryOutputGrads(0, act.data());
  first.BackwardAll(0);
  std::vector<float> split = Grads(first);
  const std::vector<float> tail = Grads(second);
  split.insert(split.end(), tail.begin(), tail.end());
  EXPECT_EQ(first.num_params() + second.num_params(), whole.num_params());
  EXPECT_EQ(split, Grads(whole));
  EXPECT_DOUBLE_EQ(second.Loss(0), whole.Loss(0));
}

TEST(ModelRuntime, HalfBatchesSumToTheWholeBatchsGradient) {
  // Data parallelism's identity: with the loss averaged over the step's 16
  // samples, the gradients of samples 0-7 and 8-15 add up to those of 0-15
  // (float summation order differs: tolerance 1e-5 relative + 1e-7).
  const ModelGraph g = models::BuildZooModel("cifar10-cnn");
  CpuBackend cpu;
  const ClassImageDataset data({.channels = 3, .height = 24, .width = 24, .seed = 7});
  ModelRuntime whole(g, cpu, {.micro_batch = 16, .seed = 3});
  Pass(whole, data, 0);
  ModelRuntime half(g, cpu, {.micro_batch = 8, .seed = 3, .samples_per_step = 16});
  Pass(half, data, 0);
  Pass(half, data, 8);  // accumulates
  const std::vector<float> a = Grads(whole), b = Grads(half);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-5 * std::abs(a[i]) + 1e-7) << "parameter " << i;
}

}  // namespace
}  // namespace dtsim::exec
