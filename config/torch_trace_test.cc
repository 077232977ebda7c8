// torch.profiler trace import on the traces Debian's python3-torch wrote
// (config/testdata/torch, scripts/torch_traces.py) and on small hand-written
// traces whose every number is derived below.
#include "config/torch_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "models/graph_builder.h"
#include "models/onnx_import.h"
#include "models/zoo.h"

namespace dtsim::config {
namespace {

using models::ModelGraph;
using models::OpKind;

constexpr const char* kDir = "config/testdata/torch/";

// The entry of `graph`'s op `name` in `t`, or null.
const OpCostEntry* EntryOf(const OpCostTable& t, const ModelGraph& graph,
                           const std::string& name) {
  const std::string sig = OpSignature(graph.op(graph.Find(name)));
  for (const auto& e : t.entries) {
    if (e.signature == sig) return &e;
  }
  return nullptr;
}

// Every op of `kinds` in `graph` has a forward and a backward time.
void ExpectMeasured(const OpCostTable& t, const ModelGraph& graph,
                    std::initializer_list<OpKind> kinds) {
  for (std::size_t id = 0; id < graph.num_ops(); ++id) {
    const auto& op = graph.op(id);
    if (std::find(kinds.begin(), kinds.end(), op.kind) == kinds.end()) continue;
    const OpCostEntry* e = EntryOf(t, graph, op.name);
    ASSERT_NE(e, nullptr) << op.name;
    EXPECT_TRUE(e->forward.has_value()) << op.name;
    EXPECT_TRUE(e->backward.has_value()) << op.name;
  }
}

// The step's top-level compute events: what the import attributed or set
// apart (collectives excluded: they may overlap, on other threads).
double Accounted(const TorchTraceStep& s) {
  return s.forward_s + s.backward_s + s.optimizer_s + s.zero_grad_s + s.unattributed_s;
}

// A hand-written step of a tiny model, batch 2:
//   image 2x4x4 -conv 1x1 2-> -norm_a lrn(1)-> -norm_b lrn(1)-> -flatten-> 32
//   -fc 32->3-> -loss
// Two ProfilerStep spans 1000 us apart; the second's conv forward takes
// `conv2_us` instead of 100. Times in us.
ModelGraph TinyModel() {
  models::GraphBuilder b("tiny");
  models::Tensor x = b.Input("image", {2, 4, 4});
  x = b.Conv2d("conv", x, models::ConvSpec::Square(2, 1));
  x = b.LocalResponseNorm("norm_a", x, 1);
  x = b.LocalResponseNorm("norm_b", x, 1);
  x = b.Flatten("flatten", x);
  b.SoftmaxCrossEntropy("loss", b.Dense("fc", x, {.out_features = 3}), 3);
  return b.Finish("test");
}

nlohmann::json X(const std::string& name, double ts, double dur, nlohmann::json args = {},
                 const std::string& cat = "cpu_op") {
  return {{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 7}, {"tid", 7},
          {"ts", ts}, {"dur", dur}, {"args", args.is_null() ? nlohmann::json::object() : args}};
}
nlohmann::json Aten(const std::string& name, double ts, double dur, nlohmann::json dims,
                    int seq) {
  return X(name, ts, dur, {{"Input Dims", dims}, {"Sequence number", seq}});
}
nlohmann::json Node(const std::string& name, double ts, double dur, int seq) {
  nlohmann::json args = nlohmann::json::object();
  if (seq >= 0) args["Sequence number"] = seq;
  return X("autograd::engine::evaluate_function: " + name, ts, dur, args);
}

std::string TinyTrace(double conv2_us) {
  nlohmann::json ev = nlohmann::json::array();
  for (int step = 0; step < 2; ++step) {
    const double o = 1000.0 * step;
    const int q = 100 * step;  // sequence numbers grow across steps
    ev.push_back(X("ProfilerStep#" + std::to_string(step), o, 1000, {}, "user_annotation"));
    ev.push_back(X("Optimizer.zero_grad#SGD.zero_grad", o + 1, 4, {}, "user_annotation"));
    ev.push_back(Aten("aten::zeros", o + 2, 1, {{}}, -1));  // inside zero_grad
    ev.push_back(Aten("aten::conv2d", o + 10, step ? conv2_us : 100,
                      {{2, 2, 4, 4}, {2, 2, 1, 1}, {2}, {}, {}, {}, {}}, q + 10));
    ev.push_back(Aten("aten::convolution", o + 12, 60, {{2, 2, 4, 4}, {2, 2, 1, 1}, {2}}, q + 10));
    // The two LRNs' composite: 60 us between the conv and flatten anchors.
    ev.push_back(Aten("aten::mul", o + 420, 20, {{2, 2, 4, 4}, {2, 2, 4, 4}}, q + 11));
    ev.push_back(Aten("aten::avg_pool3d", o + 450, 30, {{2, 1, 4, 4, 4}}, q + 12));
    ev.push_back(Aten("aten::div", o + 490, 10, {{2, 2, 4, 4}, {2, 2, 4, 4}}, q + 13));
    ev.push_back(Aten("aten::flatten", o + 510, 5, {{2, 2, 4, 4}, {}, {}}, q + 14));
    ev.push_back(Aten("aten::linear", o + 520, 40, {{2, 32}, {3, 32}, {3}}, q + 15));
    ev.push_back(Aten("aten::cross_entropy_loss", o + 570, 10, {{2, 3}, {2}}, q + 17));
    ev.push_back(Aten("aten::ones_like", o + 590, 3, {{}}, -1));
    ev.push_back(Node("NllLossBackward0", o + 600, 5, q + 18));
    ev.push_back(Node("LogSoftmaxBackward0", o + 606, 5, q + 17));
    ev.push_back(Node("AddmmBackward0", o + 612, 50, q + 16));
    ev.push_back(Node("torch::autograd::AccumulateGrad", o + 663, 2, -1));
    ev.push_back(Node("TBackward0", o + 666, 1, q + 15));
    ev.push_back(Node("ViewBackward0", o + 668, 1, q + 14));
    ev.push_back(Node("DivBackward0", o + 670, 20, q + 13));
    ev.push_back(Node("AvgPool3DBackward0", o + 691, 30, q + 12));
    ev.push_back(Node("MulBackward0", o + 722, 10, q + 11));
    ev.push_back(Node("ConvolutionBackward0", o + 733, 200, q + 10));
    // A collective inside the conv's backward (a DDP hook), 4 floats.
    ev.push_back(X("gloo:all_reduce", o + 800, 50,
                   {{"Input Dims", {{4}}}, {"Input type", {"float"}}}, "user_annotation"));
    ev.push_back(Node("torch::autograd::AccumulateGrad", o + 940, 4, -1));
    ev.push_back(X("Optimizer.step#SGD.step", o + 950, 40, {}, "user_annotation"));
    ev.push_back(Aten("aten::add_", o + 955, 10, {{2, 2, 1, 1}, {2, 2, 1, 1}}, -1));
  }
  return nlohmann::json{{"schemaVersion", 1}, {"traceEvents", ev}}.dump();
}

constexpr double kUs = 1e-6;  // s

TEST(TorchTraceTest, HandWrittenStepIsAttributedAsDerived) {
  const ModelGraph g = TinyModel();
  TorchTraceReport r;
  const OpCostTable t = ImportTorchTrace(TinyTrace(300), "tiny.json", g, &r);
  EXPECT_EQ(r.batch, 2);
  ASSERT_EQ(r.steps.size(), 2u);
  const TorchTraceStep& s = r.steps[0];
  EXPECT_NEAR(s.step_s, 1000 * kUs, 1e-12);
  // Forward: conv 100 (its nested aten::convolution not again) + LRNs 20 +
  // 30 + 10 + flatten 5 + fc 40 + loss 10 and the aten::ones_like after it
  // (after the last anchor: to it) 3 = 218.
  EXPECT_NEAR(s.forward_s, 218 * kUs, 1e-12);
  // Backward: loss 5 + 5, fc 50 + 2 (AccumulateGrad after AddmmBackward0)
  // + 1, flatten 1, LRNs 20 + 30 + 10, conv 200 - 50 (the collective) + 4.
  EXPECT_NEAR(s.backward_s, (10 + 53 + 1 + 60 + 154) * kUs, 1e-12);
  EXPECT_NEAR(s.optimizer_s, 40 * kUs, 1e-12);
  EXPECT_NEAR(s.zero_grad_s, 4 * kUs, 1e-12);
  EXPECT_NEAR(s.communication_s, 50 * kUs, 1e-12);
  EXPECT_EQ(s.unattributed_s, 0);
  EXPECT_TRUE(r.unattributed.empty());
  EXPECT_NEAR(EntryOf(t, g, "loss")->forward->median_s, 13 * kUs, 1e-12);  // 10 + 3

  const OpCostEntry* conv = EntryOf(t, g, "conv");
  ASSERT_NE(conv, nullptr);
  // Forward 100 us then 300 us: median of two is their mean.
  EXPECT_NEAR(conv->forward->median_s, 200 * kUs, 1e-12);
  EXPECT_NEAR(conv->forward->min_s, 100 * kUs, 1e-12);
  EXPECT_NEAR(conv->forward->max_s, 300 * kUs, 1e-12);
  EXPECT_EQ(conv->forward->runs, 2);
  EXPECT_NEAR(conv->backward->median_s, 154 * kUs, 1e-12);
  EXPECT_FALSE(conv->backward_input);  // reads only the image
  EXPECT_EQ(conv->batch, 2);
  EXPECT_DOUBLE_EQ(conv->forward_flops, 2 * g.op(g.Find("conv")).fwd_flops);
  // The two LRNs have the same bytes, so each gets half of the composite:
  // forward 60 / 2, backward 60 / 2; one entry for both (same signature).
  const OpCostEntry* norm = EntryOf(t, g, "norm_a");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->occurrences, 2);
  EXPECT_EQ(norm->forward->runs, 4);  // 2 ops x 2 steps
  EXPECT_NEAR(norm->forward->median_s, 30 * kUs, 1e-12);
  EXPECT_NEAR(norm->backward->median_s, 30 * kUs, 1e-12);
  EXPECT_NEAR(EntryOf(t, g, "fc")->backward->median_s, 53 * kUs, 1e-12);
  EXPECT_NEAR(EntryOf(t, g, "loss")->backward->median_s, 10 * kUs, 1e-12);

  ASSERT_TRUE(t.optimizer.has_value());
  EXPECT_EQ(t.optimizer->name, "sgd");
  EXPECT_NEAR(t.optimizer->seconds.median_s, 40 * kUs, 1e-12);
  ASSERT_EQ(t.communication.size(), 1u);
  EXPECT_EQ(t.communication[0].name, "gloo:all_reduce");
  EXPECT_DOUBLE_EQ(t.communication[0].bytes, 16);  // 4 floats
  EXPECT_EQ(t.communication[0].seconds.runs, 2);
  EXPECT_TRUE(r.unmeasured.empty());
  EXPECT_EQ(OpCostTableProblem(t), "");
  // The table survives the file format.
  const OpCostTable back = ParseOpCostTable(OpCostTableJson(t), "tiny.json");
  EXPECT_EQ(back.entries.size(), t.entries.size());
}

// SYNTHETIC, not recorded on a GPU: the shape of a Kineto GPU trace, where
// an op's time is its kernels' (linked by "External id", or through the
// launching cudaLaunchKernel's "correlation"), not its CPU time.
TEST(TorchTraceTest, GpuTraceTimesOpsByTheirKernels) {
  const ModelGraph g = TinyModel();
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back(X("ProfilerStep#0", 0, 1000, {}, "user_annotation"));
  nlohmann::json conv = Aten("aten::conv2d", 10, 100, {{2, 2, 4, 4}, {2, 2, 1, 1}, {2}}, 10);
  conv["args"]["External id"] = 3;
  ev.push_back(conv);
  nlohmann::json fc = Aten("aten::linear", 200, 50, {{2, 32}, {3, 32}, {3}}, 15);
  fc["args"]["External id"] = 4;
  ev.push_back(fc);
  ev.push_back(X("cudaLaunchKernel", 210, 5, {{"correlation", 99}}, "cuda_runtime"));
  ev.push_back(Node("ConvolutionBackward0", 400, 80, 10));
  ev.back()["args"]["External id"] = 5;
  // A DDP all-reduce of 100 floats launched from the conv's backward.
  ev.push_back(X("record_param_comms", 420, 10,
                 {{"External id", 6}, {"In msg nelems", 100}, {"dtype", "Float"}}));
  // Kernels run later on the GPU's own timeline (pid 0, stream 7).
  auto kernel = [](double ts, double dur, nlohmann::json args) {
    nlohmann::json k = X("some_kernel", ts, dur, args, "kernel");
    k["pid"] = 0;
    k["tid"] = "stream 7";
    return k;
  };
  ev.push_back(kernel(50, 7, {{"External id", 3}}));   // conv forward
  ev.push_back(kernel(60, 2, {{"External id", 3}}));   // conv forward, a second kernel
  ev.push_back(kernel(300, 4, {{"correlation", 99}}));  // fc: via its launch
  ev.push_back(kernel(500, 11, {{"External id", 5}}));  // conv backward
  ev.push_back(kernel(520, 30, {{"External id", 6}}));  // the all-reduce's NCCL kernel
  const std::string text =
      nlohmann::json{{"deviceProperties", {{{"name", "NVIDIA H100"}}}}, {"traceEvents", ev}}
          .dump();
  TorchTraceReport r;
  const OpCostTable t = ImportTorchTrace(text, "gpu.json", g, &r);
  EXPECT_TRUE(r.gpu_kernels);
  EXPECT_EQ(t.device, "NVIDIA H100");
  EXPECT_NEAR(EntryOf(t, g, "conv")->forward->median_s, 9 * kUs, 1e-12);  // 7 + 2
  EXPECT_NEAR(EntryOf(t, g, "conv")->backward->median_s, 11 * kUs, 1e-12);
  EXPECT_NEAR(EntryOf(t, g, "fc")->forward->median_s, 4 * kUs, 1e-12);
  // The collective's kernel is communication, not the conv's backward.
  ASSERT_EQ(t.communication.size(), 1u);
  EXPECT_NEAR(t.communication[0].seconds.median_s, 30 * kUs, 1e-12);
  EXPECT_DOUBLE_EQ(t.communication[0].bytes, 400);  // 100 x 4-byte floats
}

TEST(TorchTraceTest, ReadsPyTorch18Categories) {
  // PyTorch 1.8 files record-function spans and ops alike under "Operator",
  // device work under "Kernel" and "Memcpy" with "external id", and gives
  // thread ids as strings. A step of the tiny model's conv and fc only.
  const ModelGraph g = TinyModel();
  auto op = [](nlohmann::json e) {
    e["cat"] = "Operator";
    e["tid"] = "123";
    return e;
  };
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back(op(X("ProfilerStep#1", 0, 500)));
  ev.push_back(op(Aten("aten::conv2d", 10, 100, {{2, 2, 4, 4}, {2, 2, 1, 1}, {2}}, 10)));
  ev.back()["args"]["External id"] = 2;
  ev.push_back(op(Aten("aten::linear", 200, 50, {{2, 32}, {3, 32}, {3}}, 15)));
  ev.push_back(op(X("Optimizer.step#SGD.step", 400, 20)));
  nlohmann::json copy = X("Memcpy HtoD", 30, 6, {{"external id", 2}}, "Memcpy");
  ev.push_back(copy);
  nlohmann::json kernel = X("implicit_gemm", 40, 8, {{"external id", 2}}, "Kernel");
  ev.push_back(kernel);
  TorchTraceReport r;
  const OpCostTable t = ImportTorchTrace(nlohmann::json{{"traceEvents", ev}}.dump(), "old.json",
                                         g, &r);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_TRUE(r.gpu_kernels);
  EXPECT_NEAR(EntryOf(t, g, "conv")->forward->median_s, 14 * kUs, 1e-12);  // 6 + 8
  // The linear launched nothing: no GPU time, left to the kernel model.
  EXPECT_EQ(EntryOf(t, g, "fc"), nullptr);
  EXPECT_NEAR(r.steps[0].optimizer_s, 20 * kUs, 1e-12);
}

// Issue 44 item 5, the reproducer (generated): 200,000 events that compute
// no graph op between two aligned ops made the alignment's table 200,000 x
// ops (150 s, gigabytes). They are skipped before it (config/
// sequence_alignment.h): the import gives the anchors' figures unchanged.
TEST(TorchTraceTest, ExtraEventsBetweenAlignedOpsDoNotChangeTheAnchors) {
  const ModelGraph g = TinyModel();
  const OpCostTable plain = ImportTorchTrace(TinyTrace(300), "t.json", g, nullptr);
  nlohmann::json doc = nlohmann::json::parse(TinyTrace(300));
  auto& ev = doc["traceEvents"];
  nlohmann::json extra = nlohmann::json::array();
  for (int k = 0; k < 200000; ++k)
    extra.push_back(Aten("aten::empty_strided", 100 + k * 1e-3, 1e-4, {{7, 7}}, -1));
  // After step 0's convolution (its events start at ts 10).
  std::size_t at = 0;
  while (at < ev.size() && ev[at]["name"] != "aten::convolution") ++at;
  ASSERT_LT(at, ev.size());
  ev.insert(ev.begin() + static_cast<long>(at + 1), extra.begin(), extra.end());
  const OpCostTable busy = ImportTorchTrace(doc.dump(), "busy.json", g, nullptr);
  EXPECT_EQ(EntryOf(busy, g, "conv")->forward->median_s, EntryOf(plain, g, "conv")->forward->median_s);
  EXPECT_EQ(EntryOf(busy, g, "fc")->forward->median_s, EntryOf(plain, g, "fc")->forward->median_s);
}

TEST(TorchTraceTest, DamagedTracesAreImportedOrRefusedNeverCrash) {
  // The hand-written trace with events dropped or their fields corrupted
  // (seeded): each import gives a valid table or a UserError, nothing else.
  const nlohmann::json base = nlohmann::json::parse(TinyTrace(300));
  std::mt19937 rng(7);
  int imported = 0, refused = 0;
  for (int round = 0; round < 200; ++round) {
    nlohmann::json doc = base;
    auto& ev = doc["traceEvents"];
    for (std::size_t i = 0; i < ev.size(); ++i) {
      switch (rng() % 8) {
        case 0: ev[i]["dur"] = -5; break;
        case 1: ev[i]["args"]["Input Dims"] = "bad"; break;
        case 2: ev[i]["args"]["Sequence number"] = "x"; break;
        case 3: ev[i]["ts"] = nlohmann::json(); break;
        case 4: ev[i]["args"]["Input Dims"] = {{0, 3}, {-1}}; break;
        case 5: ev[i]["args"]["Input Dims"] = {{2, 1LL << 40, 1LL << 40}, {1LL << 62, 4}}; break;
        default: break;
      }
    }
    if (rng() % 2) ev.erase(ev.begin() + static_cast<long>(rng() % ev.size()));
    try {
      const OpCostTable t = ImportTorchTrace(doc.dump(), "damaged.json", TinyModel(), nullptr);
      EXPECT_EQ(OpCostTableProblem(t), "") << "round " << round;
      ++imported;
    } catch (const UserError&) {
      ++refused;
    }
  }
  // Both outcomes occur, so the test covers both.
  EXPECT_GT(imported, 0);
  EXPECT_GT(refused, 0);
}

// Traces of Debian's torch 1.13 (scripts/torch_traces.py; batches from the
// file names, as config/testdata/torch/manifest.json records them).
struct Fixture {
  const char* file;
  const char* model;  // zoo name or ONNX file
  std::int64_t batch;
};
const Fixture kFixtures[] = {
    {"cifar10-cnn_b16.trace.json.gz", "cifar10-cnn", 16},
    {"cifar10-cnn_b32.trace.json.gz", "cifar10-cnn", 32},
    {"resnet18_b8.trace.json.gz", "models/testdata/onnx/resnet18_train_op17.onnx", 8},
    {"resnet18_b16.trace.json.gz", "models/testdata/onnx/resnet18_train_op17.onnx", 16},
};

ModelGraph GraphOf(const Fixture& f) {
  const std::string m = f.model;
  return m.find(".onnx") != std::string::npos ? models::LoadOnnxModel(m)
                                              : models::BuildZooModel(m);
}

TEST(TorchTraceTest, RealTracesMeasureEveryLayerForwardAndBackward) {
  for (const Fixture& f : kFixtures) {
    SCOPED_TRACE(f.file);
    const ModelGraph g = GraphOf(f);
    TorchTraceReport r;
    const OpCostTable t = LoadTorchTrace(std::string(kDir) + f.file, g, &r);
    EXPECT_EQ(r.batch, f.batch);
    EXPECT_FALSE(r.gpu_kernels);  // CPU-only traces
    ASSERT_EQ(r.steps.size(), 2u);  // torch_traces.py profiles two steps
    ExpectMeasured(t, g, {OpKind::kConv2d, OpKind::kDense, OpKind::kBatchNorm,
                          OpKind::kLocalResponseNorm, OpKind::kMaxPool,
                          OpKind::kSoftmaxCrossEntropy});
    // Every layer got time: nothing is left to the kernel model.
    EXPECT_TRUE(r.unmeasured.empty()) << r.unmeasured.front();
    EXPECT_EQ(OpCostTableProblem(t), "");
    for (const auto& e : t.entries) {
      EXPECT_EQ(e.batch, f.batch);
      // Two profiled steps: each op with its signature once per step.
      if (e.forward) {
        EXPECT_EQ(e.forward->runs, 2 * e.occurrences) << e.name;
      }
    }
    ASSERT_TRUE(t.optimizer.has_value());
    EXPECT_EQ(t.optimizer->name, "sgd");  // "Optimizer.step#SGD.step"
    EXPECT_EQ(t.optimizer->params, g.Totals().params);
    EXPECT_TRUE(t.communication.empty());  // one process
  }
}

TEST(TorchTraceTest, RealTracesAttributeTheStepTime) {
  for (const Fixture& f : kFixtures) {
    SCOPED_TRACE(f.file);
    const ModelGraph g = GraphOf(f);
    TorchTraceReport r;
    LoadTorchTrace(std::string(kDir) + f.file, g, &r);
    for (const auto& s : r.steps) {
      // What is neither attributed nor set apart is the time between
      // top-level events (Python, the profiler): a few % of the step.
      const double attributed = s.forward_s + s.backward_s + s.optimizer_s;
      EXPECT_GT(attributed, 0.95 * s.step_s) << s.name;
      EXPECT_LE(Accounted(s), s.step_s) << s.name;
      // Unattributed: the profiler's and BatchNorm's bookkeeping
      // (num_batches_tracked += 1), aten::ones_like (the loss's gradient).
      EXPECT_LT(s.unattributed_s, 0.01 * s.step_s) << s.name;
    }
  }
}

TEST(TorchTraceTest, DdpTraceKeepsCollectivesApartFromCompute) {
  // Rank 0 of 2 under DDP with gloo: DDP's reducer calls c10d::allreduce_
  // from the backward pass (on the training thread) and gloo runs
  // gloo:all_reduce on its own threads; the CNN's parameters fill 2 buckets.
  const ModelGraph g = models::BuildZooModel("cifar10-cnn");
  TorchTraceReport r;
  const OpCostTable t =
      LoadTorchTrace(std::string(kDir) + "cifar10-cnn_b16_ddp2_rank0.trace.json.gz", g, &r);
  EXPECT_EQ(r.batch, 16);
  ExpectMeasured(t, g, {OpKind::kConv2d, OpKind::kDense, OpKind::kLocalResponseNorm});
  int enqueued = 0, transferred = 0;
  for (const auto& c : t.communication) {
    if (c.name == "c10d::allreduce_") enqueued += c.seconds.runs;
    if (c.name == "gloo:all_reduce") transferred += c.seconds.runs;
  }
  EXPECT_EQ(enqueued, 2 * 2);  // 2 buckets x 2 profiled steps
  EXPECT_EQ(transferred, 2 * 2);
  for (const auto& s : r.steps) {
    EXPECT_GT(s.communication_s, 0) << s.name;
    // Compute and the optimizer still hold most of the step.
    EXPECT_GT(s.forward_s + s.backward_s + s.optimizer_s, 0.8 * s.step_s) << s.name;
  }
}

TEST(TorchTraceTest, Gpt2TraceMeasuresEveryTransformerOp) {
  // GPT-2 small on 128 tokens, batch 2 (scripts/torch_traces.py
  // --only-gpt2), against its ONNX export: attention as aten::matmul,
  // softmax with its scale and causal mask (aten::mul, aten::masked_fill),
  // a tied LM head, position table broadcast over the batch.
  const ModelGraph g = models::LoadOnnxModel("models/testdata/onnx/gpt2_small_train_op17.onnx");
  TorchTraceReport r;
  const OpCostTable t =
      LoadTorchTrace(std::string(kDir) + "gpt2-small_s128_b2.trace.json.gz", g, &r);
  EXPECT_EQ(r.batch, 2);
  ExpectMeasured(t, g, {OpKind::kDense, OpKind::kLayerNorm, OpKind::kMatMul, OpKind::kSoftmax,
                        OpKind::kGelu, OpKind::kEmbedding, OpKind::kDropout, OpKind::kAdd,
                        OpKind::kSoftmaxCrossEntropy});
  EXPECT_TRUE(r.unmeasured.empty()) << r.unmeasured.front();
  ASSERT_EQ(r.steps.size(), 1u);
  const TorchTraceStep& s = r.steps[0];
  EXPECT_GT(s.forward_s + s.backward_s + s.optimizer_s, 0.95 * s.step_s);
  EXPECT_LT(s.unattributed_s, 0.01 * s.step_s);
  // The softmax's scale and causal mask are its own: 12 layers, one each.
  const auto softmax = std::find_if(r.measured.begin(), r.measured.end(), [](const auto& m) {
    return m.rfind("/h.0/attn/Softmax <-", 0) == 0;
  });
  ASSERT_NE(softmax, r.measured.end());
  EXPECT_NE(softmax->find("aten::masked_fill"), std::string::npos) << *softmax;
}

TEST(TorchTraceTest, LocalResponseNormIsTheCompositeBetweenItsNeighbours) {
  // nn.LocalResponseNorm has no aten op: its mul, pad, avg_pool3d, pow and
  // div sit between pool1 and conv2, where norm1 is the only graph op left.
  const ModelGraph g = models::BuildZooModel("cifar10-cnn");
  TorchTraceReport r;
  LoadTorchTrace(std::string(kDir) + "cifar10-cnn_b16.trace.json.gz", g, &r);
  const auto it = std::find_if(r.measured.begin(), r.measured.end(),
                               [](const std::string& m) { return m.rfind("norm1 <-", 0) == 0; });
  ASSERT_NE(it, r.measured.end());
  EXPECT_NE(it->find("aten::avg_pool3d"), std::string::npos) << *it;
  EXPECT_NE(it->find("aten::pow"), std::string::npos) << *it;
  EXPECT_EQ(std::count(r.measured.begin(), r.measured.end(), "conv2 <- aten::conv2d"), 1);
}

// Whether `f` throws a UserError whose message and hint hold `want`.
void ExpectRefused(const std::function<void()>& f, const std::string& want) {
  try {
    f();
    ADD_FAILURE() << "accepted; expected an error with: " << want;
  } catch (const UserError& e) {
    const std::string all = e.message() + " | " + e.hint();
    EXPECT_NE(all.find(want), std::string::npos) << all;
    EXPECT_FALSE(e.where().file.empty());
  }
}

TEST(TorchTraceTest, RefusesTracesWithoutShapes) {
  const ModelGraph g = models::BuildZooModel("cifar10-cnn");
  // Recorded with record_shapes=False.
  const std::string noshapes = std::string(kDir) + "cifar10-cnn_b4.noshapes.trace.json.gz";
  ExpectRefused([&] { LoadTorchTrace(noshapes, g, nullptr); }, "record_shapes=True");
  // Debian torch's own export_chrome_trace (no Kineto): a bare list, args {}.
  ExpectRefused([&] { LoadTorchTrace(std::string(kDir) + "cifar10-cnn_b4.legacy.json", g,
                                     nullptr); },
                "without Kineto");
  ExpectRefused([&] { LoadTorchTrace(std::string(kDir) + "cifar10-cnn_b4.legacy.json", g,
                                     nullptr); },
                "record_shapes=True");
}

TEST(TorchTraceTest, RefusesWhatIsNotATorchTrace) {
  const ModelGraph g = models::BuildZooModel("cifar10-cnn");
  ExpectRefused([&] { ImportTorchTrace("{\"ops\": []}", "t.json", g, nullptr); },
                "no \"traceEvents\"");
  ExpectRefused([&] { ImportTorchTrace("[1, 2", "t.json", g, nullptr); }, "not JSON");
  ExpectRefused([&] {
    ImportTorchTrace(R"({"traceEvents": [{"ph": "X", "name": "foo", "ts": 0, "dur": 1}]})",
                     "t.json", g, nullptr);
  }, "no aten::");
  ExpectRefused([&] { LoadTorchTrace("config/testdata/torch/absent.json", g, nullptr); },
                "cannot read");
  // A trace of another model: no layer of mnist-mlp (784-500-10) is in it.
  ExpectRefused([&] {
    LoadTorchTrace(std::string(kDir) + "cifar10-cnn_b16.trace.json.gz",
                   models::BuildZooModel("mnist-mlp"), nullptr);
  }, "matches 0 of the 2 layers with parameters of model 'mnist-mlp'");
}

}  // namespace
}  // namespace dtsim::config
