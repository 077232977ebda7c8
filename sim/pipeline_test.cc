// Pipeline and tensor parallelism: bubble fractions and Megatron's
// communication volume, on plans built by plan::BuildHybridPlan.
#include <gtest/gtest.h>

#include "models/zoo.h"
#include "plan/hybrid.h"
#include "plan/layers.h"
#include "plan/partition.h"
#include "sim/cost/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/metrics.h"
#include "sim/cost/plan_costs.h"
#include "sim/simulator.h"

namespace dtsim::sim {
namespace {

using models::ModelGraph;
using models::Op;
using models::OpKind;

// `layers` identical units "layerN", one dense op each (1M FLOPs forward
// per sample), so every stage of an even split costs the same.
ModelGraph Uniform(int layers) {
  ModelGraph g("uniform");
  // A free view rather than a graph input, so that the first layer computes
  // its input gradient like every other layer.
  Op in;
  in.name = "layer0.in";
  in.kind = OpKind::kReshape;
  in.output_shape = {1024};
  models::OpId prev = g.AddOp(in, {});
  for (int i = 0; i < layers; ++i) {
    Op fc;
    fc.name = "layer" + std::to_string(i) + ".fc";
    fc.kind = OpKind::kDense;
    fc.output_shape = {1024};
    fc.fwd_flops = 1e6;
    fc.bwd_input_flops = 1e6;
    fc.bwd_weight_flops = 1e6;
    fc.params = 1000;
    prev = g.AddOp(fc, {prev});
  }
  return g;
}

hw::DeviceSpec Device() {
  hw::DeviceSpec d;
  d.name = "test";
  d.fp32_flop_per_s = 1e12;
  d.memory_bytes = 1e10;
  d.memory_bw_bytes_per_s = 1e15;  // compute-bound
  return d;
}

// Free communication: the pipeline's idle time is all bubble.
NetworkSpec FreeNetwork(int devices) {
  NetworkSpec n;
  n.nodes = 1;
  n.devices_per_node = devices;
  n.intra_bw_bytes_per_s = 1e30;
  return n;
}

// Prices `plan` on the test device (dense layers at peak, no launch or
// optimizer cost) with free communication over `devices` and runs it.
EngineResult RunOnFreeNetwork(const plan::Plan& plan, const ModelGraph& g, int devices) {
  CostModelOptions co;
  co.kernel_launch_s = 0;
  co.optimizer_bytes_per_param = 0;
  co.compute_efficiency[OpKind::kDense] = 1.0;
  const std::vector<CostModel> cms{CostModel(Device(), hw::Precision::kFp32, co)};
  Network net(FreeNetwork(devices));
  const TaskCosts costs =
      PriceTasks(plan, g, cms, std::vector<int>(static_cast<std::size_t>(devices), 0), net);
  return RunEngine(plan, costs);
}

// Runs a p-stage pipeline of m micro-batches; returns the step time and the
// busy (compute) time of one stage.
std::pair<double, double> RunPipeline(plan::PipelineSchedule schedule, int p, int m, int v) {
  const ModelGraph g = Uniform(p * v * 2);
  plan::HybridOptions o;
  o.pipeline = p;
  o.micro_batches = m;
  o.schedule = schedule;
  o.virtual_stages = v;
  o.chunks = plan::ChunksFromCounts(plan::LayerUnits(g), std::vector<int>(static_cast<std::size_t>(p * v), 2));
  const plan::Plan plan = plan::BuildHybridPlan(g, {1, p}, o);
  const EngineResult r = RunOnFreeNetwork(plan, g, p);
  const RunMetrics metrics = ComputeMetrics(plan, r, {0, 0});
  return {metrics.step_time_s, metrics.per_rank[0].compute_s};
}

TEST(Pipeline, BubbleFractionGpipeAnd1F1B) {
  // Uniform stages, free communication: a step lasts (m + p - 1) stage
  // slots of one micro-batch's forward + backward, the stage is busy for m
  // of them, so the bubble fraction is (p - 1) / (m + p - 1) (GPipe paper,
  // Huang et al. 2019; the same for 1F1B, Narayanan et al. 2021).
  for (auto schedule : {plan::PipelineSchedule::kGpipe, plan::PipelineSchedule::kOneFOneB}) {
    for (auto [p, m] : {std::pair{2, 4}, {4, 8}, {4, 4}, {8, 32}}) {
      const auto [step, busy] = RunPipeline(schedule, p, m, 1);
      const double bubble = (step - busy) / step;
      EXPECT_NEAR(bubble, (p - 1.0) / (m + p - 1.0), 1e-6) << "p=" << p << " m=" << m;
    }
  }
}

// Issue 13, item 4: PipeDream-2BW never flushes, so after the first
// iteration's warm-up a stage runs one forward and one backward per slot
// without a bubble: with uniform stages and free communication an
// iteration in the steady state lasts exactly the m slots its stage is busy
// (Narayanan et al. 2021, PipeDream-2BW, §3: "no pipeline flushes"),
// against (m + p - 1) slots for 1F1B with its flush. The update of each
// iteration runs once per stage; the gradients it applies are one version
// stale.
TEST(Pipeline, PipeDream2BWHasNoBubbleInTheSteadyState) {
  for (auto [p, m] : {std::pair{2, 4}, {4, 8}, {4, 2}}) {
    const ModelGraph g = Uniform(p * 2);
    plan::HybridOptions o;
    o.pipeline = p;
    o.micro_batches = m;
    o.schedule = plan::PipelineSchedule::kPipeDream2BW;
    o.iterations = 12;
    o.chunks = plan::ChunksFromCounts(plan::LayerUnits(g), std::vector<int>(static_cast<std::size_t>(p), 2));
    const plan::Plan plan = plan::BuildHybridPlan(g, {1, p}, o);
    int updates = 0;
    for (const plan::Task& t : plan.tasks()) updates += t.kind == plan::TaskKind::kOptimizer;
    EXPECT_EQ(updates, p * o.iterations);
    const EngineResult r = RunOnFreeNetwork(plan, g, p);
    // Clear of the fill and the drain, each ceil((p - 1) / m) iterations.
    const int edge = (p - 1 + m - 1) / m;
    const RunMetrics steady = ComputeMetrics(plan, r, {edge + 1, o.iterations - 2 - edge});
    EXPECT_NEAR(steady.per_rank[0].compute_s, steady.step_time_s, 1e-9 * steady.step_time_s)
        << "p=" << p << " m=" << m;
    const auto [flush_step, flush_busy] = RunPipeline(plan::PipelineSchedule::kOneFOneB, p, m, 1);
    EXPECT_NEAR(steady.step_time_s, flush_busy, 1e-6 * flush_busy);
    EXPECT_NEAR(flush_step / steady.step_time_s, (m + p - 1.0) / m, 1e-6);
  }
  // Weights shared across stages (a tied LM head) are refused, not mispriced.
  models::TransformerConfig c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.sequence = 16;
  c.vocab = 1000;
  const ModelGraph tied = models::BuildTransformer(c, "tiny-tied");
  plan::HybridOptions o;
  o.pipeline = 2;
  o.micro_batches = 2;
  o.schedule = plan::PipelineSchedule::kPipeDream2BW;
  o.chunks = plan::EvenLayerChunks(plan::LayerUnits(tied), 2);
  EXPECT_THROW(plan::BuildHybridPlan(tied, {1, 2}, o), UserError);
}

// Issue 13, item 4: PipeDream (Narayanan et al. 2019). Units of forward u
// and backward 2u (three equal passes of the dense ops); free
// communication, free updates. Steady state, clear of the fill and drain:
//  - a straight pipeline of p one-unit stages runs one minibatch per 3u
//    slot on every stage, no bubble (§3.2: "the pipeline is full");
//  - stages [3 units on 3 replicas, 1 unit on 1] balance (3 x 3u / 3 =
//    3u per minibatch each), so an iteration of lcm(3, 1) = 3 minibatches
//    lasts 9u although stage 0's replicas wait for each other's backward
//    before every update;
//  - one stage on 4 replicas is data parallelism: 4 minibatches per 3u.
// The planner's figure (the slowest stage's time per minibatch) is only a
// bound: with stages [2 on 2 replicas, 1, 1] the replicas of stage 0 get
// their gradients back one slot apart and wait for each other before every
// update, so an iteration of 2 minibatches takes longer than 2 slots.
TEST(Pipeline, PipeDreamRunsAtItsSlowestStage) {
  struct Case {
    std::vector<int> units, replicas;
    double slots_per_iteration;  // of 3u
    bool exact = true;           // else a lower bound
  };
  for (const Case& c : {Case{{1, 1, 1, 1}, {1, 1, 1, 1}, 1}, Case{{3, 1}, {3, 1}, 3},
                        Case{{4}, {4}, 4}, Case{{2, 1, 1}, {2, 1, 1}, 2, false}}) {
    int layers = 0, devices = 0;
    for (int u : c.units) layers += u;
    for (int r : c.replicas) devices += r;
    const ModelGraph g = Uniform(layers);
    plan::HybridOptions o;
    o.schedule = plan::PipelineSchedule::kPipeDream;
    o.pipeline = static_cast<int>(c.units.size());
    o.stage_replicas = c.replicas;
    o.iterations = 24;
    o.chunks = plan::ChunksFromCounts(plan::LayerUnits(g), c.units);
    const plan::Plan plan = plan::BuildHybridPlan(g, {1, devices}, o);
    const EngineResult r = RunOnFreeNetwork(plan, g, devices);
    const RunMetrics steady = ComputeMetrics(plan, r, {8, 15});
    // One unit's forward and backward for one sample: 3 x 1e6 FLOPs at 1e12/s.
    const double slot = 3 * 1e6 / 1e12;
    if (c.exact) {
      EXPECT_NEAR(steady.step_time_s, c.slots_per_iteration * slot, 1e-9) << c.units.size();
    } else {
      EXPECT_GT(steady.step_time_s, c.slots_per_iteration * slot * (1 + 1e-6));
    }
  }
}

TEST(Pipeline, InterleavingShrinksTheBubbleByTheVirtualStages) {
  // Interleaved 1F1B with v chunks per device: the bubble time becomes
  // (p - 1) / v slots of one device's forward + backward (Narayanan et al.
  // 2021, section 2.2.2). The device's work per micro-batch is the same, so
  // bubble(v) = bubble(1) / v.
  const int p = 4, m = 8;
  const auto [step1, busy1] = RunPipeline(plan::PipelineSchedule::kOneFOneB, p, m, 1);
  for (int v : {2, 4}) {
    const auto [step_v, busy_v] = RunPipeline(plan::PipelineSchedule::kInterleaved, p, m, v);
    const double bubble1 = (step1 - busy1) / busy1, bubble_v = (step_v - busy_v) / busy_v;
    EXPECT_NEAR(bubble_v, bubble1 / v, 0.02 * bubble1) << "v=" << v;
  }
}

TEST(Pipeline, SchedulesRunEveryMicroBatchOnce) {
  for (auto schedule : {plan::PipelineSchedule::kGpipe, plan::PipelineSchedule::kOneFOneB,
                        plan::PipelineSchedule::kInterleaved}) {
    const int p = 4, m = 8, v = schedule == plan::PipelineSchedule::kInterleaved ? 2 : 1;
    for (int s = 0; s < p; ++s) {
      const auto steps = plan::StageSchedule(schedule, s, p, m, v);
      ASSERT_EQ(steps.size(), static_cast<std::size_t>(2 * m * v));
      std::vector<int> fwd(static_cast<std::size_t>(m * v), 0), bwd = fwd;
      for (const auto& st : steps)
        ++(st.forward ? fwd : bwd)[static_cast<std::size_t>(st.micro_batch * v + st.local_chunk)];
      for (std::size_t i = 0; i < fwd.size(); ++i) {
        EXPECT_EQ(fwd[i], 1);
        EXPECT_EQ(bwd[i], 1);
      }
    }
  }
}

TEST(TensorParallel, MegatronCommunicationVolumePerLayer) {
  // Megatron-LM (Shoeybi et al. 2019, section 3): per transformer layer and
  // micro-batch, two all-reduces of b x s x h in forward (after the
  // attention output projection and after the second MLP matmul) and two in
  // backward (input gradients of the QKV and first MLP matmuls).
  models::TransformerConfig c;
  c.layers = 2;
  c.hidden = 256;
  c.heads = 8;
  c.sequence = 128;
  c.vocab = 1000;
  ModelGraph g = models::BuildTransformer(c, "tiny");
  g.SetDType(models::DType::kFp16);
  const int t = 4, b = 2, m = 3;
  const ModelGraph shard = plan::TensorParallelShard(g, t);
  plan::HybridOptions o;
  o.tensor = t;
  o.micro_batch = b;
  o.micro_batches = m;
  o.chunks = {{0, shard.num_ops()}};
  const plan::Plan plan = plan::BuildHybridPlan(shard, {1, t}, o);
  const double bsh = static_cast<double>(b) * c.sequence * c.hidden * 2;  // fp16
  int tp_collectives = 0;
  for (const plan::Collective& col : plan.collectives()) {
    if (plan.groups()[static_cast<std::size_t>(col.group)].size() != static_cast<std::size_t>(t)) continue;
    ++tp_collectives;
    EXPECT_DOUBLE_EQ(col.bytes, bsh);
  }
  // Plus Megatron's all-reduce of the vocabulary-parallel embedding's output
  // and of the LM head's input gradient, once per micro-batch each.
  EXPECT_EQ(tp_collectives, 4 * c.layers * m + 2 * m);
  // The split ops carry 1/t of the parameters.
  EXPECT_LT(shard.Totals().params, g.Totals().params / 2);

  // Full recomputation re-runs each forward before its backward, with its
  // all-reduces (Korthikanti et al. 2022, section 5: recomputation repeats
  // the forward's tensor-parallel communication): 2 more per layer and
  // micro-batch, plus the embedding's, 6 L m + 3 m in all, each b x s x h.
  o.recompute = true;
  const plan::Plan re = plan::BuildHybridPlan(shard, {1, t}, o);
  int re_collectives = 0;
  for (const plan::Collective& col : re.collectives()) {
    if (re.groups()[static_cast<std::size_t>(col.group)].size() != static_cast<std::size_t>(t)) continue;
    ++re_collectives;
    EXPECT_DOUBLE_EQ(col.bytes, bsh);
  }
  EXPECT_EQ(re_collectives, 6 * c.layers * m + 3 * m);
}

// Issue 13, item 3: Megatron's sequence parallelism (Korthikanti et al.
// 2022, §4.2.2, Fig. 5). Each forward all-reduce after a row-parallel op
// (attention's proj, fc2, the vocabulary-parallel embedding) becomes a
// reduce-scatter, and an all-gather runs before each column-parallel op
// (qkv, fc1, the LM head); backward mirrors them, and re-gathers each
// column-parallel op's sequence-sharded input for its weight gradient.
// Per micro-batch, with L layers:
//   reduce-scatters: forward 2L + 1, backward 2L + 1       = 4L + 2
//   all-gathers:     forward 2L + 1, backward 2L + 1,
//                    re-gathers 2L + 1                     = 6L + 3
//   all-reduces:     none
// each of b x s x h (the full tensor; ring reduce-scatter and all-gather
// each move half a ring all-reduce's bytes, so without the re-gathers the
// traffic equals tensor parallelism's 4L + 2 all-reduces: "the same
// communication volume", §4.2.2).
TEST(TensorParallel, SequenceParallelismSwapsAllReducesForReduceScatterAndAllGather) {
  models::TransformerConfig c;
  c.layers = 2;
  c.hidden = 256;
  c.heads = 8;
  c.sequence = 128;
  c.vocab = 1000;
  ModelGraph g = models::BuildTransformer(c, "tiny");
  g.SetDType(models::DType::kFp16);
  const int t = 4, b = 2, m = 3;
  plan::HybridOptions o;
  o.tensor = t;
  o.micro_batch = b;
  o.micro_batches = m;
  o.sequence_parallel = true;
  const ModelGraph shard = plan::TensorParallelShard(g, t, true);
  o.chunks = {{0, shard.num_ops()}};
  const plan::Plan plan = plan::BuildHybridPlan(shard, {1, t}, o);
  const double bsh = static_cast<double>(b) * c.sequence * c.hidden * 2;  // fp16
  int rs = 0, ag = 0, ar = 0;
  for (const plan::Collective& col : plan.collectives()) {
    EXPECT_DOUBLE_EQ(col.bytes, bsh);
    rs += col.op == plan::CollectiveOp::kReduceScatter;
    ag += col.op == plan::CollectiveOp::kAllGather;
    ar += col.op == plan::CollectiveOp::kAllReduce;
  }
  const int l = c.layers;
  EXPECT_EQ(rs, (4 * l + 2) * m);
  EXPECT_EQ(ag, (6 * l + 3) * m);
  EXPECT_EQ(ar, 0);
  // The replicated ops of the layers (layer norms, dropouts, residuals)
  // work on s / t of the sequence: 1/t of their FLOPs.
  const ModelGraph plain = plan::TensorParallelShard(g, t, false);
  const models::OpId ln = g.Find("layer0.attn.ln");
  EXPECT_DOUBLE_EQ(shard.op(ln).fwd_flops, plain.op(ln).fwd_flops / t);
  EXPECT_DOUBLE_EQ(shard.op(g.Find("layer0.attn.qkv")).fwd_flops,
                   plain.op(g.Find("layer0.attn.qkv")).fwd_flops);
}

TEST(Pipeline, TiedEmbeddingGradientIsAllReducedBetweenFirstAndLastStage) {
  // Issue 10 item 12. A GPT whose LM head shares the token table, split in
  // 2 stages: the table sits in stage 0, the head in stage 1, which holds a
  // copy. Megatron-LM sums the two stages' gradients of it every step (the
  // embedding group, _allreduce_embedding_grads), after the data-parallel
  // all-reduce and before the optimizer: one all-reduce of V x H x (bytes
  // per element) between the first and last stage of each pipeline.
  models::TransformerConfig c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.sequence = 16;
  c.vocab = 1000;
  ModelGraph g = models::BuildTransformer(c, "tiny-tied");
  g.SetDType(models::DType::kFp16);
  const double table_bytes = 1000.0 * 64 * 2;  // V x H x 2 bytes (fp16)
  plan::HybridOptions o;
  o.pipeline = 2;
  o.micro_batches = 2;
  o.chunks = plan::EvenLayerChunks(plan::LayerUnits(g), 2);
  o.symmetric = false;
  for (int replicas : {1, 2}) {
    const plan::Plan plan = plan::BuildHybridPlan(g, {1, 2 * replicas}, o);
    int shared = 0;
    std::size_t embedding_collective = 0;
    for (std::size_t i = 0; i < plan.collectives().size(); ++i) {
      const plan::Collective& col = plan.collectives()[i];
      if (col.shared_op < 0) {
        // The last stage's data-parallel all-reduce carries the copy too.
        continue;
      }
      ++shared;
      embedding_collective = i;
      EXPECT_EQ(g.op(static_cast<models::OpId>(col.shared_op)).kind, OpKind::kEmbedding);
      EXPECT_DOUBLE_EQ(col.bytes, table_bytes);
      const auto& members = plan.groups()[static_cast<std::size_t>(col.group)];
      ASSERT_EQ(members.size(), 2u);
      EXPECT_EQ(members[1] - members[0], 1);  // ranks r = replica x 2 + stage
      // It follows the member's last backward (and data-parallel
      // all-reduce), and the optimizer follows it.
      for (plan::TaskId t : col.tasks) {
        bool before_optimizer = false;
        for (plan::TaskId u = t + 1; u < static_cast<plan::TaskId>(plan.num_tasks()); ++u)
          for (plan::TaskId d : plan.deps(u))
            if (d == t && plan.task(u).kind == plan::TaskKind::kOptimizer) before_optimizer = true;
        EXPECT_TRUE(before_optimizer);
      }
    }
    EXPECT_EQ(shared, replicas);  // one per pipeline
    if (replicas == 2) {
      for (const plan::Collective& col : plan.collectives()) {
        if (col.shared_op >= 0) continue;
        const auto& members = plan.groups()[static_cast<std::size_t>(col.group)];
        double stage_bytes = 0;
        const auto& [b, e] = o.chunks[static_cast<std::size_t>(members[0] % 2)];
        for (models::OpId x = b; x < e; ++x) stage_bytes += g.op(x).ParamBytes();
        EXPECT_DOUBLE_EQ(col.bytes, stage_bytes + (members[0] % 2 == 1 ? table_bytes : 0.0));
      }
      continue;
    }
    // Priced as a ring all-reduce over 2 devices: 2 (N - 1) / N x bytes /
    // bandwidth = bytes / bandwidth (no latency here); it lies on the step's
    // critical path, so the step is longer by exactly that.
    NetworkSpec spec = FreeNetwork(2);
    spec.intra_bw_bytes_per_s = 1e9;
    Network net(spec);
    CostModelOptions co;
    const std::vector<CostModel> cms{CostModel(Device(), hw::Precision::kFp32, co)};
    const TaskCosts costs = PriceTasks(plan, g, cms, {0, 0}, net);
    EXPECT_EQ(costs.collective_ns[embedding_collective], SecondsToNs(table_bytes / 1e9));
    TaskCosts free = costs;
    free.collective_ns[embedding_collective] = 0;
    EXPECT_EQ(RunEngine(plan, costs).makespan - RunEngine(plan, free).makespan,
              costs.collective_ns[embedding_collective]);
  }
}

// The last stage's copy of a tied table costs it the table's parameters,
// gradients and optimizer state (Megatron keeps a real copy there). GPT-2
// (V = 50257, H = 768, tied) in 2 stages, fp32 with Adam: 16 bytes per
// parameter (4 weight + 4 gradient + 8 for the two moments), so stage 1
// holds 16 x (its own parameters + V x H).
TEST(Pipeline, LastStageMemoryCountsTheTiedTableCopy) {
  config::Scenario s;
  s.cluster.devices_per_node = 2;
  s.workload.model.zoo_name = "gpt2";
  s.workload.iterations = 2;
  s.parallelism.strategy = config::Strategy::kHybrid;
  s.parallelism.hybrid.pipeline_parallel = 2;
  const Prediction p = Simulate(s);
  ASSERT_EQ(p.memory.stages.size(), 2u);
  const models::ModelGraph& g = p.graph;
  double own = 0;  // stage 1's own parameters
  for (std::int32_t id : p.plan.ops_on_rank[1]) {
    const models::Op& op = g.op(static_cast<models::OpId>(id));
    // The copy, should the plan list it among the rank's ops, counts once.
    if (op.kind != OpKind::kEmbedding || op.params != 50257 * 768) own += static_cast<double>(op.params);
  }
  EXPECT_DOUBLE_EQ(p.memory.stages[1].StaticBytes(), 16 * (own + 50257.0 * 768));
}

// The pipelines' fast path (SimulateOptions::fast): simulated with 2p and
// 3p micro-batches and extrapolated to M, it gives the full simulation's
// figures, for each schedule, with tensor parallelism and a data-parallel
// all-reduce after the last backward, and memory for M (GPipe holds every
// micro-batch). GPT-2 on 2 nodes of 8 V100s over 25 GbE.
TEST(Pipeline, FastPathMatchesTheFullSimulation) {
  struct Case {
    int t, p, micro_batches;
    config::PipelineSchedule schedule;
  };
  for (const Case c : {Case{1, 4, 16, config::PipelineSchedule::kOneFOneB},
                       Case{1, 4, 24, config::PipelineSchedule::kGpipe},
                       Case{2, 4, 20, config::PipelineSchedule::kInterleaved},
                       Case{2, 2, 32, config::PipelineSchedule::kOneFOneB}}) {
    config::Scenario s;
    s.cluster.nodes = 2;
    s.cluster.devices_per_node = 8;
    s.cluster.network.link = "25GbE";
    s.workload.model.zoo_name = "gpt2";
    s.workload.precision = hw::Precision::kFp16;
    s.workload.iterations = 1;
    s.parallelism.strategy = config::Strategy::kHybrid;
    auto& h = s.parallelism.hybrid;
    h.tensor_parallel = c.t;
    h.pipeline_parallel = c.p;
    h.schedule = c.schedule;
    h.virtual_stages = c.schedule == config::PipelineSchedule::kInterleaved ? 2 : 1;
    h.micro_batch_size = 2;
    const int d = 16 / (c.t * c.p);
    h.global_batch = d * 2 * c.micro_batches;
    const Prediction full = Simulate(s);
    const Prediction fast = Simulate(s, {.fast = true});
    const std::string what = std::string(config::PipelineScheduleName(c.schedule)) +
                             " t=" + std::to_string(c.t) + " p=" + std::to_string(c.p);
    ASSERT_EQ(fast.layout.extrapolated_from, std::make_pair(2 * c.p, 3 * c.p)) << what;
    EXPECT_EQ(full.layout.extrapolated_from, std::make_pair(0, 0)) << what;
    const double step = full.metrics.step_time_s;
    EXPECT_NEAR(fast.metrics.step_time_s, step, 1e-6 * step) << what;
    EXPECT_NEAR(fast.metrics.throughput_samples_per_s, full.metrics.throughput_samples_per_s,
                1e-6 * full.metrics.throughput_samples_per_s)
        << what;
    EXPECT_NEAR(fast.metrics.breakdown.compute_s, full.metrics.breakdown.compute_s, 1e-6 * step)
        << what;
    EXPECT_NEAR(fast.metrics.breakdown.exposed_comm_s, full.metrics.breakdown.exposed_comm_s,
                1e-6 * step)
        << what;
    EXPECT_NEAR(fast.comm.network_bytes_per_sample, full.comm.network_bytes_per_sample,
                1e-6 * full.comm.network_bytes_per_sample)
        << what;
    EXPECT_NEAR(fast.scaling.efficiency, full.scaling.efficiency, 1e-6) << what;
    ASSERT_EQ(fast.memory.stages.size(), full.memory.stages.size()) << what;
    for (std::size_t st = 0; st < full.memory.stages.size(); ++st)
      EXPECT_DOUBLE_EQ(fast.memory.stages[st].Total(), full.memory.stages[st].Total()) << what;
  }
}

// GPipe with full recomputation keeps every micro-batch's stage inputs:
// memory can bind for M micro-batches and not for the 2p the fast path
// simulates, and the balanced partition then differs. A Llama-2-7B-like
// transformer (32 layers, hidden 4096, FFN 16512, 32 heads, sequence 4096,
// vocabulary 32000, bf16) on 32 H100 (4 nodes of 8, 8 NDR NICs each),
// p = 32, micro-batches of 4, global batch 512 (M = 128 = 4p): the fast
// path partitions for M, so it gives the full simulation's step, memory
// and a breakdown that adds up.
TEST(Pipeline, FastPathPartitionsForTheMicroBatchesOfTheStep) {
  config::Scenario s;
  s.cluster.nodes = 4;
  s.cluster.devices_per_node = 8;
  s.cluster.device = "H100-SXM";
  s.cluster.intra_node_link = "nvswitch-h100";
  s.cluster.network.link = "ib-ndr";
  s.cluster.network.nics_per_node = 8;
  models::TransformerConfig t;
  t.layers = 32;
  t.hidden = 4096;
  t.ffn_hidden = 16512;
  t.heads = 32;
  t.sequence = 4096;
  t.vocab = 32000;
  s.workload.model.transformer = t;
  s.workload.precision = hw::Precision::kBf16;
  s.workload.iterations = 1;
  s.parallelism.strategy = config::Strategy::kHybrid;
  s.parallelism.recompute = true;
  auto& h = s.parallelism.hybrid;
  h.pipeline_parallel = 32;
  h.micro_batch_size = 4;
  h.global_batch = 512;
  h.schedule = config::PipelineSchedule::kGpipe;
  const Prediction full = Simulate(s);
  const Prediction fast = Simulate(s, {.fast = true});
  ASSERT_EQ(fast.layout.extrapolated_from, std::make_pair(64, 96));
  EXPECT_EQ(fast.layout.hybrid.chunks, full.layout.hybrid.chunks);
  EXPECT_EQ(fast.plan.samples_per_iteration, 512);
  const double step = full.metrics.step_time_s;
  EXPECT_NEAR(fast.metrics.step_time_s, step, 1e-6 * step);
  EXPECT_NEAR(fast.metrics.breakdown.compute_s, full.metrics.breakdown.compute_s, 1e-6 * step);
  EXPECT_GE(fast.metrics.breakdown.idle_s, 0);
  ASSERT_EQ(fast.memory.stages.size(), full.memory.stages.size());
  for (std::size_t st = 0; st < full.memory.stages.size(); ++st)
    EXPECT_DOUBLE_EQ(fast.memory.stages[st].Total(), full.memory.stages[st].Total());
}

}  // namespace
}  // namespace dtsim::sim
