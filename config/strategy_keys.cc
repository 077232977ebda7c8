#include "config/strategy_keys.h"

#include <string>

namespace dtsim::config {
namespace {

// What each strategy builds (sim/simulator.cc MakePlan, sim/hybrid_setup.cc):
//   data, local_sgd (all_reduce): plan::BuildDataParallelPlan, buckets of
//     gradients (or parameter changes) all-reduced with `algorithm`;
//   parameter_server, local_sgd (parameter_server):
//     plan::BuildParameterServerPlan, no all-reduce; the servers hold the
//     optimizer state, so ZeRO has nothing to shard;
//   hybrid, model: plan::BuildHybridPlan, replicas all-reduce with
//     `algorithm`, no buckets; micro-batches of micro_batch_size (hybrid) or
//     one batch of batch_per_device (model).

bool BucketedAllReduce(const Scenario& s) { return !IsPipelined(s) && !UsesServers(s); }

std::string StrategyText(const Scenario& s) {
  std::string text = "strategy '" + std::string(StrategyName(s.parallelism.strategy)) + "'";
  if (s.parallelism.strategy == Strategy::kLocalSgd) {
    text += " with averaging '" + std::string(AveragingTransportName(s.parallelism.averaging)) +
            "'";
  }
  return text;
}

std::string Unused(const Scenario& s, std::string_view path, const std::string& why) {
  return StrategyText(s) + " does not use " + std::string(path) + " (" + why + ")";
}

}  // namespace

std::string UnusedKeyReason(const Scenario& s, std::string_view path) {
  const ParallelismConfig& p = s.parallelism;
  const Strategy st = p.strategy;
  if (path == "simgrid" && s.engine != "simgrid") {
    return "engine '" + s.engine + "' does not use the simgrid section (it configures "
           "engine: simgrid)";
  }
  if (path == "workload.batch_per_device" && st == Strategy::kHybrid) {
    return Unused(s, path,
                  "its batch is parallelism.global_batch, run as micro-batches of "
                  "micro_batch_size");
  }
  // Parameter servers: gradient pushes start as their shard is ready.
  if (path == "parallelism.overlap" && st == Strategy::kParameterServer &&
      p.parameter_server.payload == PsPayload::kGradients)
    return "";
  // PipeDream's replicated stages all-reduce in buckets as DDP does.
  if (path == "parallelism.bucket_size" && st == Strategy::kHybrid &&
      p.hybrid.schedule == PipelineSchedule::kPipeDream)
    return "";
  if ((path == "parallelism.bucket_size" || path == "parallelism.overlap") &&
      !BucketedAllReduce(s)) {
    return Unused(s, path,
                  "gradient buckets belong to the all-reduce of strategies data and "
                  "local_sgd with averaging all_reduce");
  }
  if (path == "parallelism.algorithm" && UsesServers(s)) {
    return Unused(s, path, "parameters move through the servers, not an all-reduce");
  }
  if (path == "parallelism.zero_stage" && UsesServers(s)) {
    return Unused(s, path,
                  "the servers hold the optimizer state; ZeRO shards it over all-reduce "
                  "replicas");
  }
  if ((path == "parallelism.averaging_period" || path == "parallelism.averaging" ||
       path == "parallelism.averaging_groups" || path == "parallelism.post_local_steps" ||
       path == "parallelism.outer_optimizer" || path == "parallelism.averaging_compression" ||
       path == "parallelism.streaming") &&
      st != Strategy::kLocalSgd) {
    return Unused(s, path, "only local_sgd averages parameters periodically");
  }
  if (path == "parallelism.parameter_server" && !UsesServers(s)) {
    return Unused(s, path,
                  "only parameter_server, and local_sgd with averaging parameter_server, have "
                  "servers");
  }
  if ((path == "parallelism.tensor_parallel" || path == "parallelism.micro_batch_size" ||
       path == "parallelism.global_batch" || path == "parallelism.schedule") &&
      st != Strategy::kHybrid) {
    const std::string why =
        st == Strategy::kModel
            ? "model parallelism runs workload.batch_per_device as one batch through a GPipe "
              "pipeline, without tensor split; use strategy hybrid for these"
            : "it belongs to strategy hybrid";
    return Unused(s, path, why);
  }
  if ((path == "parallelism.pipeline_parallel" || path == "parallelism.stage_layers" ||
       path == "parallelism.partition") &&
      !IsPipelined(s)) {
    return Unused(s, path, "only hybrid and model pipelines have stages");
  }
  if (path == "parallelism.virtual_stages" &&
      !(st == Strategy::kHybrid && p.hybrid.schedule == PipelineSchedule::kInterleaved)) {
    return Unused(s, path, "only the interleaved schedule of strategy hybrid has virtual stages");
  }
  if (path == "parallelism.stage_replicas" &&
      !(st == Strategy::kHybrid && p.hybrid.schedule == PipelineSchedule::kPipeDream)) {
    return Unused(s, path, "only schedule pipedream replicates stages a different number of times");
  }
  if (path == "parallelism.aggregation" &&
      !(st == Strategy::kData ||
        (st == Strategy::kLocalSgd && p.averaging == AveragingTransport::kAllReduce))) {
    return Unused(s, path, "only the all-reduces of strategy data and local_sgd are summed on "
                           "devices or hosts; parameter servers sum on their own device");
  }
  if (path == "parallelism.sequence_parallel" &&
      (st != Strategy::kHybrid || p.hybrid.tensor_parallel == 1)) {
    return Unused(s, path, "sequence parallelism splits over the tensor-parallel group what "
                           "tensor parallelism replicates: it needs strategy hybrid with "
                           "tensor_parallel > 1");
  }
  if (path == "parallelism.tp_comm_overlap" &&
      (st != Strategy::kHybrid || p.hybrid.tensor_parallel == 1)) {
    return Unused(s, path, "it overlaps tensor-parallel communication: it needs strategy hybrid "
                           "with tensor_parallel > 1");
  }
  if ((path == "parallelism.tp_comm_overlap" || path == "parallelism.dp_overlap") &&
      s.engine == "simgrid") {
    return Unused(s, path, "the SimGrid engine moves every byte of a collective as flows; the "
                           "overlap of collectives with compute is priced by the analytic engine");
  }
  if (path == "parallelism.dp_overlap" && st != Strategy::kHybrid) {
    return Unused(s, path, "it overlaps strategy hybrid's data-parallel gradient reduction; "
                           "strategy data overlaps its buckets with `overlap`");
  }
  if ((path == "parallelism.context_parallel" || path == "parallelism.context_parallel_kind") &&
      st != Strategy::kHybrid) {
    return Unused(s, path, "context parallelism splits the sequences of strategy hybrid's "
                           "transformer layers");
  }
  if (path == "parallelism.context_parallel_kind" && p.hybrid.context_parallel == 1) {
    return Unused(s, path, "it chooses how context_parallel > 1 passes keys and values");
  }
  if (path == "parallelism.expert_parallel" && st != Strategy::kHybrid) {
    return Unused(s, path, "expert parallelism shards the experts over data-parallel replicas of "
                           "strategy hybrid");
  }
  if (path == "parallelism.balance_batch" && !BucketedAllReduce(s)) {
    return Unused(s, path, "it shares the batch of the data-parallel workers of strategies data "
                           "and local_sgd with averaging all_reduce");
  }
  if (path == "parallelism.balance_batch" && s.cluster.node_groups.empty()) {
    return "parallelism.balance_batch has no effect without cluster.node_groups (every device "
           "is alike)";
  }
  // Keys that other keys make moot.
  const NetworkConfig& net = s.cluster.network;
  if ((path == "cluster.network.nodes_per_leaf" || path == "cluster.network.oversubscription" ||
       path == "cluster.network.spine_latency") &&
      net.topology != Topology::kFatTree) {
    return std::string(path) + " has no effect without cluster.network.topology: fat_tree (a "
                               "single switch has no leaves or spine)";
  }
  if ((path == "cluster.network.collective_latency" || path == "cluster.network.protocols") &&
      UsesServers(s)) {
    return Unused(s, path, "it prices collectives, and parameters move through the servers");
  }
  const FrameworkProfile& fw = s.workload.framework;
  if (path == "workload.framework.optimizer_kernels_per_tensor" &&
      fw.optimizer_loop != OptimizerLoop::kPerTensor) {
    return "workload.framework.optimizer_kernels_per_tensor has no effect: the optimizer loop is "
           "multi_tensor (optimizer_tensors_per_launch sets it)";
  }
  if (path == "workload.framework.optimizer_tensors_per_launch" &&
      fw.optimizer_loop != OptimizerLoop::kMultiTensor) {
    return "workload.framework.optimizer_tensors_per_launch has no effect: the optimizer loop is "
           "per_tensor (optimizer_kernels_per_tensor sets it)";
  }
  if (path == "workload.framework.graph_launch" && !fw.cuda_graphs) {
    return "workload.framework.graph_launch has no effect without cuda_graphs: true";
  }
  if (path == "workload.framework.sync_each_step" && UsesServers(s)) {
    return Unused(s, path, "a parameter-server worker's host waits for the servers' reply every "
                           "step anyway");
  }
  if (path == "workload.framework.sync_on_p2p" && !IsPipelined(s)) {
    return Unused(s, path, "only the pipelines of hybrid and model transfer between stages");
  }
  if ((path == "workload.framework.fusion_buffer" || path == "workload.framework.cycle_time") &&
      !BucketedAllReduce(s)) {
    return Unused(s, path,
                  "Horovod's fusion buffer and cycle belong to the gradient all-reduce of "
                  "strategies data and local_sgd with averaging all_reduce");
  }
  if (path == "parallelism.bucket_size" && BucketedAllReduce(s) && fw.fusion_buffer_bytes > 0) {
    return "parallelism.bucket_size has no effect: workload.framework's fusion_buffer sets the "
           "gradient buckets (Horovod)";
  }
  if (path == "parallelism.partition" && !p.hybrid.stage_layers.empty()) {
    return "parallelism.partition has no effect when parallelism.stage_layers gives the chunks "
           "by hand";
  }
  return "";
}

}  // namespace dtsim::config
