// dtsim exec's ModelRuntime against PyTorch on a Llama-style decoder and on
// recurrent language models (RNN, LSTM, GRU): the same weights and tokens,
// a few steps of plain SGD, the same losses.
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
#include "models/graph_builder.h"
#include "models/zoo.h"

namespace dtsim::exec {
namespace {

nlohmann::json Load(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

// Places `params` (op name -> PyTorch's values) into the runtime, trains
// on `steps` with SGD at `lr` and checks each step's loss within
// `tolerance`. Returns the steps run.
int TrainLikePytorch(const models::ModelGraph& g, int batch, double lr, const nlohmann::json& params,
                     const nlohmann::json& steps, double tolerance) {
  CpuBackend cpu;
  ModelRuntime rt(g, cpu, {.micro_batch = batch, .seed = 1});
  std::vector<float> values(static_cast<std::size_t>(rt.num_params()), 0.0f);
  int placed = 0;
  for (models::OpId v = 0; v < g.num_ops(); ++v) {
    if (g.op(v).params == 0) continue;
    const std::vector<float> w = params.at(g.op(v).name).get<std::vector<float>>();
    const ParamRange r = rt.OpParams(v);
    EXPECT_EQ(static_cast<std::int64_t>(w.size()), r.count) << g.op(v).name;
    if (static_cast<std::int64_t>(w.size()) != r.count) return 0;
    std::copy(w.begin(), w.end(), values.begin() + r.offset);
    ++placed;
  }
  EXPECT_EQ(placed, static_cast<int>(params.size()));
  rt.UploadParams(values);
  Optimizer sgd(cpu, rt.num_params(), {.algorithm = OptimizerAlgorithm::kSgd, .lr = {.initial_lr = lr}});
  int step = 0;
  for (const nlohmann::json& s : steps) {
    const std::vector<float> tokens = s.at("tokens").get<std::vector<float>>();
    const std::vector<float> labels = s.at("labels").get<std::vector<float>>();
    rt.ZeroGrads();
    rt.SetInput(0, tokens.data());
    rt.SetLabels(0, labels.data());
    rt.ForwardAll(0);
    rt.BackwardAll(0);
    EXPECT_NEAR(rt.Loss(0), s.at("loss").get<double>(), tolerance) << g.name() << " step " << step;
    sgd.Step(rt.params(), rt.grads());
    ++step;
  }
  return step;
}

TEST(TorchReference, LlamaSgdLossesMatchPytorchs) {
  const nlohmann::json doc = Load("exec/runtime/testdata/torch_llama_sgd.json");
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

  EXPECT_EQ(TrainLikePytorch(g, doc.at("batch"), doc.at("lr"), doc.at("params"), doc.at("steps"), 2e-5),
            8);
}

// Embedding, one recurrent layer (nn.RNN with tanh, nn.LSTM, nn.GRU), a
// linear head with bias; PyTorch's default initialisation. Tolerance as
// above.
TEST(TorchReference, RecurrentSgdLossesMatchPytorchs) {
  const nlohmann::json doc = Load("exec/runtime/testdata/torch_rnn_sgd.json");
  const nlohmann::json& m = doc.at("model");
  const std::int64_t seq = m.at("sequence"), vocab = m.at("vocab");
  for (const nlohmann::json& run : doc.at("runs")) {
    const std::string cell = run.at("cell");
    models::GraphBuilder b("rnn-" + cell);
    const models::Tensor x = b.Embedding("embed", b.Input("tokens", {seq}), vocab, m.at("embed"));
    const models::RnnCell kind = cell == "lstm"  ? models::RnnCell::kLstm
                                 : cell == "gru" ? models::RnnCell::kGru
                                                 : models::RnnCell::kTanh;
    const models::Tensor h = b.Recurrent("rnn", x, {.cell = kind, .hidden = m.at("hidden")});
    const models::Tensor logits = b.Dense("head", h, {.out_features = vocab});
    b.SoftmaxCrossEntropy("loss", logits, vocab);
    const models::ModelGraph g = b.Finish("embedding, one " + cell + " layer, linear head");
    EXPECT_EQ(TrainLikePytorch(g, doc.at("batch"), doc.at("lr"), run.at("params"), run.at("steps"), 2e-5),
              6)
        << cell;
  }
}

}  // namespace
}  // namespace dtsim::exec
