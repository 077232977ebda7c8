// The parts of scenario.h that do not read YAML: enum names, the scenario's
// catalog and its model.
#include "config/scenario.h"

#include <string>

#include "common/error.h"

namespace dtsim::config {

SourceLocation Scenario::Where(const std::string& path) const {
  const auto it = key_locations.find(path);
  return it != key_locations.end() ? it->second : SourceLocation{source_path};
}

const char* TopologyName(Topology t) {
  switch (t) {
    case Topology::kSingleSwitch: return "single_switch";
    case Topology::kFatTree: return "fat_tree";
  }
  return "?";
}

const char* StrategyName(Strategy s) {
  switch (s) {
    case Strategy::kData: return "data";
    case Strategy::kParameterServer: return "parameter_server";
    case Strategy::kLocalSgd: return "local_sgd";
    case Strategy::kHybrid: return "hybrid";
    case Strategy::kModel: return "model";
  }
  return "?";
}

const char* OptimizerKindName(OptimizerKind o) {
  switch (o) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kMomentum: return "momentum";
    case OptimizerKind::kAdam: return "adam";
  }
  return "?";
}

const char* SyncModeName(SyncMode s) {
  switch (s) {
    case SyncMode::kSynchronous: return "synchronous";
    case SyncMode::kAsynchronous: return "asynchronous";
  }
  return "?";
}

const NodeGroup* ClusterConfig::GroupOfNode(int node) const {
  for (const NodeGroup& g : node_groups) {
    if (node >= 0 && node < g.nodes) return &g;
    node -= g.nodes;
  }
  return nullptr;
}

int ClusterConfig::NicsOfNode(int node) const {
  const NodeGroup* g = GroupOfNode(node);
  return g != nullptr ? g->nics_per_node : network.nics_per_node;
}

const char* BatchBalanceName(BatchBalance b) {
  return b == BatchBalance::kBySpeed ? "by_speed" : "even";
}

const char* ServerPlacementName(ServerPlacement p) {
  return p == ServerPlacement::kDedicated ? "dedicated" : "colocated";
}

const char* PsPayloadName(PsPayload p) {
  return p == PsPayload::kGradients ? "gradients" : "parameters";
}

const char* AveragingCompressionName(AveragingCompression c) {
  switch (c) {
    case AveragingCompression::kNone: return "none";
    case AveragingCompression::kFp16: return "fp16";
    case AveragingCompression::kInt8: return "int8";
    case AveragingCompression::kInt4: return "int4";
  }
  return "?";
}

const char* AveragingTransportName(AveragingTransport t) {
  return t == AveragingTransport::kAllReduce ? "all_reduce" : "parameter_server";
}

const char* NoiseDistributionName(NoiseDistribution d) {
  switch (d) {
    case NoiseDistribution::kNone: return "none";
    case NoiseDistribution::kLognormal: return "lognormal";
    case NoiseDistribution::kExponential: return "exponential";
    case NoiseDistribution::kStall: return "stall";
  }
  return "?";
}

const char* FailureScopeName(FailureScope s) {
  return s == FailureScope::kDevice ? "device" : "node";
}

namespace {
std::string RankProblem(const char* where, int rank, int num_ranks) {
  return std::string("stragglers.") + where + ": rank " + std::to_string(rank) +
         " is not in the cluster (ranks 0-" + std::to_string(num_ranks - 1) + ")";
}

}  // namespace

std::string StragglerRanksProblem(const config::StragglerConfig& config, int num_ranks) {
  std::vector<bool> seen(static_cast<std::size_t>(std::max(num_ranks, 0)), false);
  for (const config::SlowDevices& slow : config.slow_devices) {
    for (int rank : slow.ranks) {
      if (rank < 0 || rank >= num_ranks) return RankProblem("slow_devices", rank, num_ranks);
      if (seen[static_cast<std::size_t>(rank)]) {
        return "stragglers.slow_devices: rank " + std::to_string(rank) + " is listed twice";
      }
      seen[static_cast<std::size_t>(rank)] = true;
    }
  }
  for (int rank : config.interference_ranks) {
    if (rank < 0 || rank >= num_ranks) return RankProblem("interference.ranks", rank, num_ranks);
  }
  return "";
}

hw::HardwareCatalog ScenarioCatalog(const Scenario& s) {
  hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
  for (const hw::DeviceSpec& d : s.cluster.custom_devices) catalog.AddDevice(d);
  for (const hw::LinkSpec& l : s.cluster.custom_links) catalog.AddLink(l);
  return catalog;
}

models::ModelGraph BuildWorkloadModel(const Scenario& s) {
  if (!s.jobs.empty())
    throw UserError(s.Where("jobs"),
                    "this scenario lists jobs, each with its own model: only `dtsim run` (and "
                    "sweeps of it) simulate jobs together",
                    "run it with dtsim run, or copy one job's workload and parallelism into a "
                    "scenario of its own");
  const ModelRef& ref = s.workload.model;
  models::ModelGraph graph = ref.transformer ? models::BuildTransformer(*ref.transformer)
                             : !ref.file.empty() ? models::LoadModelFile(ref.file)
                                                 : models::BuildZooModel(ref.zoo_name);
  graph.SetDType(StorageDType(s.workload.precision));
  return graph;
}

models::DType StorageDType(hw::Precision p) {
  switch (p) {
    case hw::Precision::kFp16: return models::DType::kFp16;
    case hw::Precision::kBf16:
    // fp8 keeps tensors in bf16 between ops: only a linear layer's GEMM
    // inputs are cast to FP8 (sim/cost/op_kernels.h).
    case hw::Precision::kFp8: return models::DType::kBf16;
    case hw::Precision::kFp32:
    case hw::Precision::kTf32: return models::DType::kFp32;
  }
  DTSIM_CHECK(false, "unknown Precision value " + std::to_string(static_cast<int>(p)));
}

int AveragingPeriod(const Scenario& s) {
  return s.parallelism.strategy == Strategy::kLocalSgd ? s.parallelism.averaging_period : 1;
}

bool IsPipelined(const Scenario& s) {
  return s.parallelism.strategy == Strategy::kHybrid || s.parallelism.strategy == Strategy::kModel;
}

bool UsesServers(const Scenario& s) {
  const ParallelismConfig& p = s.parallelism;
  return p.strategy == Strategy::kParameterServer ||
         (p.strategy == Strategy::kLocalSgd && p.averaging == AveragingTransport::kParameterServer);
}

bool UsesKernelModel(const WorkloadConfig& w) {
  if (w.cost_model && *w.cost_model != CostModelKind::kMeasured)
    return *w.cost_model == CostModelKind::kKernels;
  return w.compute_efficiency.empty() && w.dense_efficiency_by_rows.empty() &&
         w.conv_efficiency_by_flops.empty() && !w.memory_efficiency && !w.kernel_launch_s;
}

}  // namespace dtsim::config
