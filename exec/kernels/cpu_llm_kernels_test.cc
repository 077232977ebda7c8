// The CPU backend's kernels for today's transformer ops against PyTorch:
// exec/kernels/testdata/llm_kernels.json, written by
// scripts/exec_kernel_fixtures.py (PyTorch 1.13, Debian's python3-torch;
// the reference in float64 from float32 inputs). Tolerance: |got - ref| <=
// 1e-5 + 1e-5 |ref| elementwise, float32 arithmetic against float64.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exec/kernels/cpu_backend.h"

namespace dtsim::exec {
namespace {

using Floats = std::vector<float>;

struct Case {
  std::vector<Floats> inputs;
  std::vector<std::vector<std::int64_t>> input_shapes;
  Floats dy, y;
  std::vector<Floats> grads;
  nlohmann::json raw;
};

std::map<std::string, Case> LoadCases() {
  std::ifstream f("exec/kernels/testdata/llm_kernels.json");
  const nlohmann::json doc = nlohmann::json::parse(f);
  std::map<std::string, Case> cases;
  for (const nlohmann::json& c : doc.at("cases")) {
    Case k;
    for (const auto& x : c.at("inputs")) k.inputs.push_back(x.get<Floats>());
    for (const auto& s : c.at("input_shapes")) k.input_shapes.push_back(s.get<std::vector<std::int64_t>>());
    k.dy = c.at("dy").get<Floats>();
    k.y = c.at("y").get<Floats>();
    for (const auto& g : c.at("grads")) k.grads.push_back(g.get<Floats>());
    k.raw = c;
    cases[c.at("name").get<std::string>()] = k;
  }
  return cases;
}

void ExpectClose(const std::string& what, const Floats& got, const Floats& ref) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::abs(got[i] - ref[i]) > 1e-5 + 1e-5 * std::abs(ref[i]) && ++bad <= 5)
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << ", PyTorch " << ref[i];
  EXPECT_EQ(bad, 0) << what;
}

class LlmKernels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cases_ = new std::map<std::string, Case>(LoadCases()); }
  static void TearDownTestSuite() { delete cases_; }
  const Case& Get(const std::string& name) { return cases_->at(name); }
  CpuBackend backend_;
  static std::map<std::string, Case>* cases_;
};
std::map<std::string, Case>* LlmKernels::cases_ = nullptr;

TEST_F(LlmKernels, SigmoidAndSiluMatchTorch) {
  for (const char* name : {"sigmoid", "silu"}) {
    const Case& c = Get(name);
    const std::int64_t n = static_cast<std::int64_t>(c.y.size());
    Floats y(c.y.size()), dx(c.y.size(), 0.0f);
    if (std::string(name) == "sigmoid") {
      backend_.SigmoidForward(n, c.inputs[0].data(), y.data());
      backend_.SigmoidBackward(n, y.data(), c.dy.data(), dx.data());
    } else {
      backend_.SiluForward(n, c.inputs[0].data(), y.data());
      backend_.SiluBackward(n, c.inputs[0].data(), c.dy.data(), dx.data());
    }
    ExpectClose(std::string(name) + " y", y, c.y);
    ExpectClose(std::string(name) + " dx", dx, c.grads[0]);
  }
}

TEST_F(LlmKernels, RmsNormMatchesLlamas) {
  const Case& c = Get("rms_norm");
  const std::int64_t rows = c.input_shapes[0][0], cols = c.input_shapes[0][1];
  Floats y(c.y.size()), rstd(static_cast<std::size_t>(rows)), dx(c.y.size(), 0.0f),
      dgamma(static_cast<std::size_t>(cols), 0.0f);
  const float eps = c.raw.at("eps").get<float>();
  backend_.RmsNormForward(rows, cols, eps, c.inputs[0].data(), c.inputs[1].data(), y.data(),
                          rstd.data());
  backend_.RmsNormBackward(rows, cols, c.inputs[0].data(), c.inputs[1].data(), rstd.data(),
                           c.dy.data(), dx.data(), dgamma.data());
  ExpectClose("y", y, c.y);
  ExpectClose("dx", dx, c.grads[0]);
  ExpectClose("dgamma", dgamma, c.grads[1]);
}

TEST_F(LlmKernels, RotaryMatchesHuggingFacesLlama) {
  const Case& c = Get("rotary");
  const auto& s = c.input_shapes[0];
  Floats y(c.y.size()), dx(c.y.size(), 0.0f);
  backend_.RotaryForward(s[0], s[1], s[2], c.inputs[0].data(), y.data());
  backend_.RotaryBackward(s[0], s[1], s[2], c.dy.data(), dx.data());
  ExpectClose("y", y, c.y);
  ExpectClose("dx", dx, c.grads[0]);
}

TEST_F(LlmKernels, MulMatchesTorchsBroadcast) {
  const std::map<std::string, MulBroadcast> modes = {{"mul", MulBroadcast::kNone},
                                                     {"mul_per_row", MulBroadcast::kPerRow},
                                                     {"mul_per_column", MulBroadcast::kPerColumn}};
  for (const auto& [name, mode] : modes) {
    const Case& c = Get(name);
    const std::int64_t rows = c.input_shapes[0][0], cols = c.input_shapes[0][1];
    Floats y(c.y.size()), da(c.y.size(), 0.0f), db(c.inputs[1].size(), 0.0f);
    backend_.MulForward(mode, rows, cols, c.inputs[0].data(), c.inputs[1].data(), y.data());
    backend_.MulBackward(mode, rows, cols, c.inputs[0].data(), c.inputs[1].data(), c.dy.data(),
                         da.data(), db.data());
    ExpectClose(name + " y", y, c.y);
    ExpectClose(name + " da", da, c.grads[0]);
    ExpectClose(name + " db", db, c.grads[1]);
  }
}

// The flash algorithm (online softmax, no s x s matrix) against softmax
// attention written out, with grouped-query heads, causal and not.
TEST_F(LlmKernels, FusedAttentionMatchesSoftmaxAttention) {
  for (const char* name : {"attention_gqa_causal", "attention_full"}) {
    const Case& c = Get(name);
    AttentionArgs a;
    a.n = c.input_shapes[0][0];
    a.heads = c.input_shapes[0][1];
    a.kv_heads = c.input_shapes[1][1];
    a.s = c.input_shapes[0][2];
    a.d = c.input_shapes[0][3];
    a.dv = c.input_shapes[2][3];
    a.causal = c.raw.at("causal").get<bool>();
    a.scale = 1.0f / std::sqrt(static_cast<float>(a.d));
    Floats o(c.y.size()), lse(static_cast<std::size_t>(a.n * a.heads * a.s));
    Floats dq(c.inputs[0].size(), 0.0f), dk(c.inputs[1].size(), 0.0f), dv(c.inputs[2].size(), 0.0f);
    backend_.AttentionForward(a, c.inputs[0].data(), c.inputs[1].data(), c.inputs[2].data(),
                              o.data(), lse.data());
    backend_.AttentionBackward(a, c.inputs[0].data(), c.inputs[1].data(), c.inputs[2].data(),
                               o.data(), lse.data(), c.dy.data(), dq.data(), dk.data(), dv.data());
    ExpectClose(std::string(name) + " o", o, c.y);
    ExpectClose(std::string(name) + " dq", dq, c.grads[0]);
    ExpectClose(std::string(name) + " dk", dk, c.grads[1]);
    ExpectClose(std::string(name) + " dv", dv, c.grads[2]);
  }
}

}  // namespace
}  // namespace dtsim::exec
