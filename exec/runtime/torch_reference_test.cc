// dtsim exec's ModelRuntime against PyTorch on a Llama-style decoder: the
// same weights and tokens, eight steps of plain SGD, the same losses.
// exec/runtime/testdata/torch_llama_sgd.json is written by
// scripts/torch_llama_reference.py (PyTorch 1.13, Debian's python3-torch,
// float32): the model as Meta's and Hugging Face's Llama code writes it,
// every weight under dtsim's op name. Tolerance: 2e-5 on each step's mean
// cross entropy (about 3.0): float32 sums in different orders, which differ
// by 2e-8 at the first step and 2.8e-6 at the eighth (measured, CPU
// backend, portable or AVX-512 build).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exec/kernels/cpu_backend.h"
#include "exec/runtime/model_runtime.h"
#include "exec/runtime/optimizer.h"
#include "models/zoo.h"

namespace dtsim::exec {
namespace {

TEST(TorchReference, LlamaSgdLossesMatchPytorchs) {
  std::ifstream f("exec/runtime/testdata/torch_llama_sgd.json");
  const nlohmann::json doc = nlohmann::json::parse(f);
  const nlohmann::json& m = doc.at("model");
  models::TransformerConfig c;
  c.layers = m.at("layers");
  c.hidden = m.at("hidden");
  c.heads = m.at("heads");
  c.kv_heads = m.at("kv_heads");
  c.ffn_hidden = m.at("ffn_hidden");
  c.sequence = m.at("sequence");
  c.vocab = m.at("vocab");
  c.mlp = models::MlpKind::kSwiglu;
  c.norm = models::NormKind::kRmsNorm;
  c.positions = models::PositionKind::kRotary;
  c.bias = false;
  c.dropout = false;
  c.tied_embeddings = false;
  const models::ModelGraph g = models::BuildTransformer(c);

  CpuBackend cpu;
  const int batch = doc.at("batch");
  ModelRuntime rt(g, cpu, {.micro_batch = batch, .seed = 1});
  // PyTorch's weights, op by op.
  std::vector<float> params(static_cast<std::size_t>(rt.num_params()), 0.0f);
  int placed = 0;
  for (models::OpId v = 0; v < g.num_ops(); ++v) {
    if (g.op(v).params == 0) continue;
    const std::vector<float> w = doc.at("params").at(g.op(v).name).get<std::vector<float>>();
    const ParamRange r = rt.OpParams(v);
    ASSERT_EQ(static_cast<std::int64_t>(w.size()), r.count) << g.op(v).name;
    std::copy(w.begin(), w.end(), params.begin() + r.offset);
    ++placed;
  }
  EXPECT_EQ(placed, static_cast<int>(doc.at("params").size()));
  rt.UploadParams(params);

  Optimizer sgd(cpu, rt.num_params(),
                {.algorithm = OptimizerAlgorithm::kSgd, .lr = {.initial_lr = doc.at("lr")}});
  int step = 0;
  for (const nlohmann::json& s : doc.at("steps")) {
    const std::vector<float> tokens = s.at("tokens").get<std::vector<float>>();
    const std::vector<float> labels = s.at("labels").get<std::vector<float>>();
    rt.ZeroGrads();
    rt.SetInput(0, tokens.data());
    rt.SetLabels(0, labels.data());
    rt.ForwardAll(0);
    rt.BackwardAll(0);
    EXPECT_NEAR(rt.Loss(0), s.at("loss").get<double>(), 2e-5) << "step " << step;
    sgd.Step(rt.params(), rt.grads());
    ++step;
  }
  EXPECT_EQ(step, 8);
}

}  // namespace
}  // namespace dtsim::exec
