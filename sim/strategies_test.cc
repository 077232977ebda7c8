// Parameter servers, asynchronous training, local SGD, stragglers: the
// properties issue 3 asks the simulator to hold.
#include <gtest/gtest.h>

#include <cmath>

#include "plan/pipedream.h"
#include "sim/simulator.h"
#include "sim/statistics.h"

namespace dtsim::sim {
namespace {

using config::Scenario;

Scenario Cluster(int nodes, int per_node, const char* link = "10GbE") {
  Scenario s;
  s.name = "test";
  s.cluster.nodes = nodes;
  s.cluster.devices_per_node = per_node;
  s.cluster.device = "V100-SXM2-32GB";
  s.cluster.intra_node_link = "nvlink2";
  s.cluster.network.link = link;
  s.workload.model.zoo_name = "resnet50";
  s.workload.batch_per_device = 32;
  s.workload.iterations = 4;
  return s;
}

Scenario Ps(int workers, int k = 0, bool async = false) {
  Scenario s = Cluster(workers, 1);
  s.parallelism.strategy = config::Strategy::kParameterServer;
  s.parallelism.sync = async ? config::SyncMode::kAsynchronous : config::SyncMode::kSynchronous;
  s.parallelism.parameter_server.replicas_to_aggregate = k;
  return s;
}

Scenario WithStalls(Scenario s, std::uint64_t seed) {
  // Heavy tail: 20% of worker steps stall for 400 ms.
  s.stragglers.noise = config::NoiseDistribution::kStall;
  s.stragglers.probability = 0.2;
  s.stragglers.delay_s = 0.4;
  s.seed = seed;
  s.workload.iterations = 12;
  return s;
}

TEST(ParameterServer, SyncStepIsBoundedByTheBusiestServerLink) {
  // One dedicated server on 10 GbE: every step n workers each push the whole
  // model (M bytes of fp32 gradients) into the server's link, so a step
  // takes at least n M / B however the rest overlaps.
  for (int n : {2, 4, 8}) {
    const Prediction p = Simulate(Ps(n));
    const double m = p.graph.Totals().params * 4.0;
    const double b = 10e9 / 8;
    EXPECT_GE(p.metrics.step_time_s, n * m / b) << n;
    // Pull and push are both n M over the server's link, one after the
    // other, plus compute: the bound is tight within a factor of 3.
    EXPECT_LE(p.metrics.step_time_s, 3 * (2 * n * m / b)) << n;
  }
}

// Issue 13, item 2: hierarchical parameter servers (TensorFlow's
// distributed_replicated, MXNet's dist_device_sync, BytePS). 4 machines of
// 4 GPUs and one dedicated server on 10 GbE. Flat, each of the n = 16
// workers pushes and pulls the whole model (M bytes): 2 n M through the
// server's link per step, so a step takes at least n M / B. Aggregated in
// the machine (reduce-scatter over NVLink, each device pushing its quarter
// of the machine's sum), the server link carries 2 x 4 M: the bound is
// 4 M / B, and the point-to-point traffic falls by the 4 devices per
// machine.
TEST(ParameterServer, AggregatingInTheMachineSendsOneModelPerMachine) {
  Scenario flat = Cluster(4, 4, "10GbE");
  flat.parallelism.strategy = config::Strategy::kParameterServer;
  Scenario agg = flat;
  agg.parallelism.parameter_server.aggregate_in_machine = true;
  const Prediction pf = Simulate(flat), pa = Simulate(agg);
  const double m = pf.graph.Totals().params * 4.0, b = 10e9 / 8;
  auto p2p_bytes = [](const Prediction& p) {
    double bytes = 0;
    for (const plan::Task& t : p.plan.tasks())
      if (t.kind == plan::TaskKind::kSend && t.iteration == 1) bytes += t.bytes * t.copies;
    return bytes;
  };
  EXPECT_NEAR(p2p_bytes(pf), 2 * 16 * m, 1e-6 * m);
  EXPECT_NEAR(p2p_bytes(pa), 2 * 4 * m, 1e-6 * m);
  EXPECT_GE(pf.metrics.step_time_s, 16 * m / b);
  EXPECT_GE(pa.metrics.step_time_s, 4 * m / b);
  EXPECT_LE(pa.metrics.step_time_s, 3 * (2 * 4 * m / b));
  EXPECT_LT(pa.metrics.step_time_s, pf.metrics.step_time_s / 2);
  // Each machine's reduce-scatter and all-gather run over its 4 devices.
  int node_collectives = 0;
  for (const plan::Collective& c : pa.plan.collectives())
    node_collectives += c.iteration == 1 &&
                        pa.plan.groups()[static_cast<std::size_t>(c.group)].size() == 4;
  EXPECT_EQ(node_collectives, 2 * 4);
  // Summed by each machine's host instead (BytePS's CPU summation): the same
  // pushes and pulls; in the machine, copies over PCIe and the CPU's sum
  // (HostCollectiveSeconds: copy + sum before the pushes, copy after the
  // pulls) instead of NVLink collectives.
  agg.parallelism.parameter_server.aggregate_on_host = true;
  const Prediction ph = Simulate(agg);
  EXPECT_NEAR(p2p_bytes(ph), 2 * 4 * m, 1e-6 * m);
  int host_collectives = 0;
  for (const plan::Collective& c : ph.plan.collectives()) host_collectives += c.via_host;
  EXPECT_EQ(host_collectives, static_cast<int>(ph.plan.collectives().size()));
  EXPECT_GT(ph.metrics.step_time_s, pa.metrics.step_time_s);  // PCIe is slower than NVLink
  EXPECT_LT(ph.metrics.step_time_s, pf.metrics.step_time_s);
}

TEST(ParameterServer, IncastGrowsWithWorkers) {
  // Workers share the server's link: on 10 GbE it is the bottleneck, and
  // each extra worker adds one model (M bytes) to pull and one to push
  // through it per step. The server answers every worker at once and the
  // answers share its uplink (Network::ReserveTransferGroup, as TCP flows
  // share a link), so every pull ends together and no push overlaps a
  // pull: a step is 2 n M / B plus compute, and t8 - t2 = 12 M / B.
  const Prediction p2 = Simulate(Ps(2));
  const Prediction p8 = Simulate(Ps(8));
  const double m = p2.graph.Totals().params * 4.0, b = 10e9 / 8;
  EXPECT_NEAR(p8.metrics.step_time_s - p2.metrics.step_time_s, 12 * m / b, 0.05 * 12 * m / b);
}

TEST(ParameterServer, BackupWorkersNeverHurtAndHelpUnderHeavyTails) {
  // k = n - 2 of n = 8: the two slowest updates are dropped each step.
  double total_all = 0, total_backup = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    Scenario s = WithStalls(Ps(8, 0), seed);
    s.cluster.network.link = "100GbE";
    const double all = Simulate(s).metrics.step_time_s;
    s.parallelism.parameter_server.replicas_to_aggregate = 6;
    const double backup = Simulate(s).metrics.step_time_s;
    EXPECT_LE(backup, all * (1 + 1e-9)) << "seed " << seed;
    total_all += all;
    total_backup += backup;
  }
  EXPECT_LT(total_backup, 0.9 * total_all);
}

TEST(ParameterServer, AsyncIsAtLeastAsFastAsSyncUnderStragglers) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    Scenario sync = WithStalls(Ps(4), seed);
    sync.cluster.network.link = "100GbE";
    Scenario async = sync;
    async.parallelism.sync = config::SyncMode::kAsynchronous;
    const Prediction ps = Simulate(sync), pa = Simulate(async);
    EXPECT_GE(pa.metrics.throughput_samples_per_s, ps.metrics.throughput_samples_per_s)
        << "seed " << seed;
    ASSERT_TRUE(pa.async.has_value());
    EXPECT_GT(pa.async->staleness.max, 0) << "several workers must interleave";
  }
}

// Issue 13, item 5: asynchronous workers do not share steps, so the
// distribution pools each worker's own. One worker stalling for d with
// probability 0.2 per step: its steps last base or base + d, so p50 = base
// and p95 = base + d (0.2 > 0.05); four workers: 4 x 100 steps, and the
// 20% that stall put p95 at least d above the median.
TEST(ParameterServer, AsyncStepTimesArePerWorker) {
  Scenario one = Ps(1, 0, true);
  one.workload.iterations = 101;
  const double base = Simulate(one).metrics.step_times.p50;
  Scenario stalls = WithStalls(one, 1);
  stalls.workload.iterations = 101;
  const double d = stalls.stragglers.delay_s;
  const Summary st = Simulate(stalls).metrics.step_times;
  EXPECT_EQ(st.n, 100);
  EXPECT_NEAR(st.p50, base, 0.01 * d);
  EXPECT_NEAR(st.p95, base + d, 0.01 * d);
  Scenario four = WithStalls(Ps(4, 0, true), 1);
  four.workload.iterations = 101;
  const Summary st4 = Simulate(four).metrics.step_times;
  EXPECT_EQ(st4.n, 400);
  EXPECT_GT(st4.p95, st4.p50 + 0.9 * d);
}

TEST(ParameterServer, OneAsyncWorkerHasNoStaleness) {
  const Prediction p = Simulate(Ps(1, 0, true));
  ASSERT_TRUE(p.async.has_value());
  EXPECT_EQ(p.async->staleness.max, 0);
  EXPECT_GT(p.async->staleness.n, 0);
  EXPECT_GT(p.async->global_steps_per_s, 0);
}

Scenario LocalSgd(int h) {
  Scenario s = Cluster(4, 2, "25GbE");
  s.parallelism.strategy = config::Strategy::kLocalSgd;
  s.parallelism.averaging_period = h;
  return s;
}

TEST(LocalSgd, PeriodOneIsDataParallelism) {
  const Prediction data = Simulate(Cluster(4, 2, "25GbE"));
  const Prediction h1 = Simulate(LocalSgd(1));
  EXPECT_DOUBLE_EQ(h1.metrics.step_time_s, data.metrics.step_time_s);
}

TEST(LocalSgd, ThroughputRisesWithPeriodAndIsBoundedByCompute) {
  double last = 0;
  for (int h : {1, 2, 5, 10, 20, 50}) {
    const Prediction p = Simulate(LocalSgd(h), {.fast = true});
    const double bound = 8 * p.scaling.single_device_throughput_samples_per_s;
    EXPECT_GT(p.metrics.throughput_samples_per_s, last) << "H=" << h;
    EXPECT_LE(p.metrics.throughput_samples_per_s, bound * (1 + 1e-9)) << "H=" << h;
    last = p.metrics.throughput_samples_per_s;
  }
  // Averaging every 50 steps hides almost all communication.
  EXPECT_GT(last, 0.95 * 8 * Simulate(LocalSgd(50)).scaling.single_device_throughput_samples_per_s);
}

TEST(LocalSgd, NetworkBytesPerSampleFallAsOneOverH) {
  // Ring all-reduce of M bytes moves 2 (N - 1) M bytes in all; averaging
  // every H steps of N x batch samples: 2 (N - 1) M / (H N batch) per sample.
  for (int h : {1, 10}) {
    const Prediction p = Simulate(LocalSgd(h));
    const double m = p.graph.Totals().params * 4.0;
    const double expected = 2.0 * 7 * m / (h * 8.0 * 32);
    EXPECT_NEAR(p.comm.network_bytes_per_sample, expected, 1e-9 * expected) << "H=" << h;
  }
}

// Issue 13, item 6: hierarchical averaging (PyTorch's
// HierarchicalModelAverager). N = 8 ranks on 4 nodes of 2; groups of g = 2
// (a node) average every p = 2 steps, everyone every H = 4. Per round of H
// steps: one global ring all-reduce, 2 (N - 1) M bytes in all, and
// H/p - H/H = 1 group step, N/g groups x 2 (g - 1) M = 2 (N - N/g) M. Per
// sample: (14 + 8) M / (H N batch). Averaging inside nodes every other step
// is cheaper than averaging everyone that often (H = 2), and costlier than
// not averaging in between (H = 4).
TEST(LocalSgd, HierarchicalAveragingFollowsItsLevels) {
  Scenario s = LocalSgd(4);
  s.parallelism.averaging_groups = {{2, 2}};
  s.workload.iterations = 9;
  const Prediction p = Simulate(s);
  const double m = p.graph.Totals().params * 4.0;
  const double expected = (2.0 * 7 + 2.0 * (8 - 4)) * m / (4 * 8 * 32.0);
  EXPECT_NEAR(p.comm.network_bytes_per_sample, expected, 1e-9 * expected);
  // First bucket's collectives, counted with the groups each stands for.
  int global = 0, grouped = 0;
  for (const plan::Collective& c : p.plan.collectives()) {
    if (c.bucket != 0) continue;
    const std::size_t members = p.plan.groups()[static_cast<std::size_t>(c.group)].size();
    (members == 8 ? global : grouped) += c.copies;
  }
  EXPECT_EQ(global, 2);       // steps 4 and 8 of 9 iterations
  EXPECT_EQ(grouped, 2 * 4);  // steps 2 and 6, 4 node groups each
  // One materialized rank standing for all: the same figures.
  Scenario one = s;
  one.outputs.trace_max_ranks = 1;
  const Prediction q = Simulate(one);
  EXPECT_EQ(q.layout.materialized_workers, 1);
  EXPECT_NEAR(q.comm.network_bytes_per_sample, expected, 1e-9 * expected);
  EXPECT_NEAR(q.metrics.step_time_s, p.metrics.step_time_s, 1e-9);
  Scenario every2 = LocalSgd(2);
  every2.workload.iterations = 9;
  Scenario every4 = LocalSgd(4);
  every4.workload.iterations = 9;
  EXPECT_LT(p.metrics.step_time_s, Simulate(every2).metrics.step_time_s);
  EXPECT_GT(p.metrics.step_time_s, Simulate(every4).metrics.step_time_s);
}

// Post-local SGD (Lin et al. 2020): the synchronous phase is data
// parallelism on the same cluster, so its step is data parallelism's; the
// phase lasts steps x that step; the rest of the prediction is local SGD's.
TEST(LocalSgd, PostLocalReportsItsSynchronousPhase) {
  Scenario s = LocalSgd(8);
  s.parallelism.post_local_steps = 500;
  const Prediction p = Simulate(s);
  ASSERT_TRUE(p.post_local.has_value());
  const Prediction data = Simulate(Cluster(4, 2, "25GbE"));
  EXPECT_DOUBLE_EQ(p.post_local->synchronous_step_s, data.metrics.step_time_s);
  EXPECT_DOUBLE_EQ(p.post_local->synchronous_phase_s, 500 * data.metrics.step_time_s);
  EXPECT_DOUBLE_EQ(p.metrics.step_time_s, Simulate(LocalSgd(8)).metrics.step_time_s);
  EXPECT_LT(p.metrics.step_time_s, data.metrics.step_time_s);
}

// Compressed averaging and DiLoCo's outer optimizer: the all-reduces carry
// the wire format's bytes (int8: 1 byte and a 4-byte scale per 256
// elements, against fp32's 4: (1 + 4/256) / 4 of the traffic), the
// averaging step pays the conversions, and the outer optimizer keeps 8 more
// bytes (fp32 previous parameters and momentum) per parameter.
TEST(LocalSgd, CompressionAndOuterOptimizer) {
  const Prediction plain = Simulate(LocalSgd(4));
  Scenario s = LocalSgd(4);
  s.parallelism.averaging_compression = config::AveragingCompression::kInt8;
  const Prediction int8 = Simulate(s);
  EXPECT_NEAR(int8.comm.network_bytes_per_sample, plain.comm.network_bytes_per_sample * (1 + 4.0 / 256) / 4,
              1e-9 * plain.comm.network_bytes_per_sample);
  EXPECT_GT(int8.metrics.breakdown.compute_s, plain.metrics.breakdown.compute_s);
  s.parallelism.averaging_compression = config::AveragingCompression::kNone;
  s.parallelism.outer_optimizer.enabled = true;
  const Prediction outer = Simulate(s);
  const double params = static_cast<double>(plain.graph.Totals().params);
  EXPECT_DOUBLE_EQ(outer.memory.stages.at(0).optimizer_bytes - plain.memory.stages.at(0).optimizer_bytes,
                   8 * params);
  EXPECT_GT(outer.metrics.step_time_s, plain.metrics.step_time_s);
  EXPECT_DOUBLE_EQ(outer.comm.network_bytes_per_sample, plain.comm.network_bytes_per_sample);
}

// Issue 13, item 1: data parallelism summed on the hosts. On 4 nodes of 2
// GPUs, only the hosts' ring (4 nodes) crosses links: 2 (4 - 1) M bytes per
// step, against 2 (8 - 1) M for the ring over all 8 GPUs. Through PCIe and
// host memory the step is slower than NCCL-style over NVLink, and each
// all-reduce costs what HostCollectiveSeconds says.
TEST(DataParallel, AggregationOnTheHost) {
  Scenario s = Cluster(4, 2, "25GbE");
  const Prediction device = Simulate(s);
  s.parallelism.aggregate_on_host = true;
  const Prediction host = Simulate(s);
  const double m = device.graph.Totals().params * 4.0;
  EXPECT_NEAR(host.comm.network_bytes_per_sample, 2.0 * 3 * m / (8 * 32), 1e-9 * m);
  EXPECT_NEAR(device.comm.network_bytes_per_sample, 2.0 * 7 * m / (8 * 32), 1e-9 * m);
  EXPECT_GT(host.metrics.step_time_s, device.metrics.step_time_s);
  ASSERT_FALSE(host.plan.collectives().empty());
  for (const plan::Collective& c : host.plan.collectives()) EXPECT_TRUE(c.via_host);
  // The SimGrid engine refuses what it does not simulate.
  s.engine = "simgrid";
  EXPECT_THROW(Simulate(s), UserError);
}

// Issue 13, item 6: Streaming DiLoCo. 8 V100s over 10 GbE, ResNet-50 in
// fp32, H = 8, 4 MiB buckets. With F = 4 fragments each bucket still
// averages once per round, so the bytes per sample are plain local SGD's;
// a step carries a quarter of the average, so the slowest step shrinks; and
// merged one step later (tau = 1) a fragment's all-reduce runs under the
// next step's compute: no step waits for it (every step as long as the
// median, which is a step without averaging).
TEST(LocalSgd, StreamingFragmentsSpreadAndHideTheAverage) {
  Scenario s = Cluster(8, 1, "10GbE");
  s.workload.precision = hw::Precision::kFp32;
  s.workload.iterations = 17;
  s.parallelism.strategy = config::Strategy::kLocalSgd;
  s.parallelism.averaging_period = 8;
  s.parallelism.bucket_bytes = 4.0 * 1024 * 1024;
  const Prediction plain = Simulate(s);
  s.parallelism.streaming_fragments = 4;
  const Prediction streamed = Simulate(s);
  s.parallelism.streaming_overlap = 1;
  const Prediction hidden = Simulate(s);
  EXPECT_NEAR(streamed.comm.network_bytes_per_sample, plain.comm.network_bytes_per_sample,
              1e-9 * plain.comm.network_bytes_per_sample);
  EXPECT_LT(streamed.metrics.step_times.max, plain.metrics.step_times.max);
  EXPECT_LE(streamed.metrics.step_time_s, plain.metrics.step_time_s * (1 + 1e-9));
  EXPECT_NEAR(hidden.metrics.step_times.max, hidden.metrics.step_times.p50,
              0.01 * hidden.metrics.step_times.p50);
  EXPECT_LT(hidden.metrics.step_time_s, plain.metrics.step_time_s);
  // Each bucket once per round of 8 steps: the same number of all-reduces.
  EXPECT_EQ(streamed.plan.collectives().size(), plain.plan.collectives().size());
  // An outer optimizer updates each fragment when it averages: over a round
  // its traffic (24 bytes per parameter) is paid once, as without fragments.
  s.parallelism.outer_optimizer.enabled = true;
  s.parallelism.streaming_overlap = 0;
  const Prediction outer = Simulate(s);
  double per_round = 0;
  for (const plan::Task& t : outer.plan.tasks())
    if (t.kind == plan::TaskKind::kOptimizer && t.rank == 0 && t.iteration >= 1 && t.iteration <= 8)
      per_round += t.extra_bytes_per_param;
  EXPECT_NEAR(per_round, 24.0, 1e-4);
}

TEST(FastPath, MatchesTheFullSimulation) {
  // The composed one-worker simulation gives the full simulation's figures.
  for (Scenario s : {Cluster(2, 4, "25GbE"), LocalSgd(1), LocalSgd(4), LocalSgd(7)}) {
    const Prediction full = Simulate(s);
    const Prediction fast = Simulate(s, {.fast = true});
    EXPECT_NEAR(fast.metrics.step_time_s, full.metrics.step_time_s, 1e-9)
        << config::StrategyName(s.parallelism.strategy) << " H=" << s.parallelism.averaging_period;
    EXPECT_NEAR(fast.metrics.breakdown.exposed_comm_s, full.metrics.breakdown.exposed_comm_s, 1e-9);
    EXPECT_NEAR(fast.comm.network_bytes_per_sample, full.comm.network_bytes_per_sample,
                1e-9 * full.comm.network_bytes_per_sample);
    // The distribution of step times too (issue 13, item 5): the fast path
    // stands for the same measured steps.
    EXPECT_EQ(fast.metrics.step_times.n, full.metrics.step_times.n);
    EXPECT_NEAR(fast.metrics.step_times.p50, full.metrics.step_times.p50, 1e-9);
    EXPECT_NEAR(fast.metrics.step_times.p95, full.metrics.step_times.p95, 1e-9);
    EXPECT_NEAR(fast.metrics.step_times.p99, full.metrics.step_times.p99, 1e-9);
    EXPECT_NEAR(fast.metrics.step_times.max, full.metrics.step_times.max, 1e-9);
  }
}

// Issue 13, item 5: p50/p95/p99 of the step time under stall noise. Each of
// N = 4 synchronous workers stalls for d = 50 ms in a step with probability
// q = 0.1, independently, and the step waits for the slowest, so a step
// lasts base + d with probability 1 - (1 - q)^4 = 0.3439 and base otherwise
// (base: the same scenario without noise). With that mix, the median is
// base and p95 and p99 are base + d (0.3439 > 0.05); the share of long steps
// over n = 400 steps is within 4 binomial standard deviations of 0.3439.
TEST(Stragglers, StepTimePercentilesFollowTheStallProbability) {
  Scenario s = Cluster(1, 4, "25GbE");
  s.workload.model.zoo_name = "mnist-mlp";
  s.workload.iterations = 401;
  const Prediction calm = Simulate(s);
  const double base = calm.metrics.step_time_s;
  EXPECT_EQ(calm.metrics.step_times.n, 400);
  EXPECT_NEAR(calm.metrics.step_times.p99, base, 1e-9 * base);  // no noise: one value
  const double d = 0.05, q = 0.1;
  s.stragglers.noise = config::NoiseDistribution::kStall;
  s.stragglers.probability = q;
  s.stragglers.delay_s = d;
  const Prediction noisy = Simulate(s);
  const Summary& st = noisy.metrics.step_times;
  ASSERT_EQ(st.n, 400);
  EXPECT_NEAR(st.p50, base, 0.01 * d);
  EXPECT_NEAR(st.p95, base + d, 0.01 * d);
  EXPECT_NEAR(st.p99, base + d, 0.01 * d);
  int long_steps = 0;
  double prev = noisy.metrics.iteration_end_s[0];
  for (std::size_t i = 1; i < noisy.metrics.iteration_end_s.size(); ++i) {
    long_steps += noisy.metrics.iteration_end_s[i] - prev > base + d / 2;
    prev = noisy.metrics.iteration_end_s[i];
  }
  const double share = 1 - std::pow(1 - q, 4);
  EXPECT_NEAR(long_steps, 400 * share, 4 * std::sqrt(400 * share * (1 - share)));
  // The mean is what step_time_s reports.
  EXPECT_NEAR(st.mean, noisy.metrics.step_time_s, 1e-9);
}

TEST(Stragglers, SlowDeviceSetsThePaceOfSynchronousTraining) {
  // The bucket effect: one worker 1.5x slower makes the whole step about
  // 1.5x longer in compute.
  Scenario s = Cluster(1, 4, "25GbE");
  const double base = Simulate(s).metrics.step_time_s;
  s.stragglers.slow_devices.push_back({{2}, 1.5});
  const Prediction slow = Simulate(s);
  EXPECT_GT(slow.metrics.step_time_s, 1.4 * base);
  EXPECT_LE(slow.metrics.step_time_s, 1.5 * base * (1 + 1e-6));
}

TEST(Stragglers, ConfidenceIntervalShrinksWithRepeats) {
  auto ci = [](int repeats) {
    std::vector<double> steps;
    for (int i = 0; i < repeats; ++i) {
      Scenario s = Cluster(1, 4, "100GbE");
      s.workload.model.zoo_name = "cifar10-cnn";
      s.stragglers.noise = config::NoiseDistribution::kLognormal;
      s.stragglers.sigma = 0.3;
      s.seed = static_cast<std::uint64_t>(i + 1);
      steps.push_back(Simulate(s).metrics.step_time_s);
    }
    return Summarize(steps).ci95_half_width;
  };
  EXPECT_LT(ci(32), ci(4));
}

}  // namespace
}  // namespace dtsim::sim

namespace dtsim::sim {
namespace {

// Issue 13, item 4: PipeDream on VGG-16 over 4 V100 behind 10 GbE, the
// planner choosing stages and replicas. Memory follows weight stashing:
// stage s holds PipeDreamInFlight(s) versions of its fp32 weights
// (Narayanan et al. 2019, §3.3), the figures the report prints.
TEST(PipeDream, PlannedStagesUseEveryDeviceAndStashAVersionPerMinibatchInFlight) {
  Scenario s = Cluster(4, 1);
  s.workload.model.zoo_name = "vgg16";
  s.workload.precision = hw::Precision::kFp32;
  s.workload.iterations = 12;
  s.parallelism.strategy = config::Strategy::kHybrid;
  s.parallelism.hybrid.schedule = config::PipelineSchedule::kPipeDream;
  s.parallelism.hybrid.plan_replicas = true;
  s.parallelism.hybrid.micro_batch_size = 32;
  const Prediction p = Simulate(s);
  ASSERT_GE(p.layout.stage_replicas.size(), 2u);  // the dense layers' weights make data parallelism slow
  int devices = 0;
  for (int r : p.layout.stage_replicas) devices += r;
  EXPECT_EQ(devices, 4);
  ASSERT_EQ(p.memory.stages.size(), p.layout.stage_replicas.size());
  for (std::size_t st = 0; st < p.memory.stages.size(); ++st) {
    double params = 0;
    for (std::int32_t op : p.plan.ops_on_rank[static_cast<std::size_t>(p.memory.stage_rank[st])])
      params += p.graph.op(static_cast<models::OpId>(op)).ParamBytes();
    EXPECT_DOUBLE_EQ(p.memory.stages[st].params_bytes,
                     plan::PipeDreamInFlight(p.layout.stage_replicas, static_cast<int>(st)) * params)
        << st;
  }
  EXPECT_GT(p.metrics.throughput_samples_per_s, 0);
  // Data parallelism on the same cluster, for the direction of the paper's
  // result (§5.2: PipeDream beats it on VGG-16 over slow links).
  Scenario dp = Cluster(4, 1);
  dp.workload.model.zoo_name = "vgg16";
  dp.workload.precision = hw::Precision::kFp32;
  dp.workload.batch_per_device = 32;
  EXPECT_GT(p.metrics.throughput_samples_per_s, Simulate(dp).metrics.throughput_samples_per_s);
}

}  // namespace
}  // namespace dtsim::sim
