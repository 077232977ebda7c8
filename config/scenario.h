// A scenario: the cluster, the workload, how it is parallelized and what to
// write. Loaded from a YAML file in scenarios/ (format and every default:
// docs/scenario.md) or built in code with the same vocabulary (tests do).
//
// Every field below has the default written next to it; a scenario file only
// needs the fields it changes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "hw/catalog.h"
#include "config/framework.h"
#include "config/op_cost_table.h"
#include "config/transport.h"
#include "models/op.h"
#include "models/zoo.h"
#include "plan/hybrid.h"
#include "plan/plan.h"

namespace YAML {
class Node;
}

namespace dtsim::config {

enum class Topology {
  kSingleSwitch,  // every node's NIC on one non-blocking switch
  kFatTree,       // two levels: leaf switches of `nodes_per_leaf` nodes, spine above,
                  // leaf uplinks = nodes_per_leaf x NIC bandwidth / oversubscription
};
const char* TopologyName(Topology t);  // "single_switch", "fat_tree"

struct NetworkConfig {
  std::string link = "100GbE";      // catalog link of each NIC
  Topology topology = Topology::kSingleSwitch;
  int nics_per_node = 1;            // NICs per node; their bandwidth adds up
  int nodes_per_leaf = 16;          // fat_tree only
  double oversubscription = 1.0;    // fat_tree only: leaf down/up bandwidth ratio, >= 1
  double spine_latency_s = 1e-6;    // fat_tree only: extra latency of a leaf-spine-leaf path
  // Fixed cost of every collective call on top of its transfers: NCCL's own
  // model puts it at 8.4 us for ring all-reduce with the Simple protocol
  // (src/graph/tuning.cc, baseLat, Ring/Simple).
  double collective_latency_s = 8.4e-6;
  // How collectives are priced (sim/cost/nccl_protocols.h): "ideal" (the default:
  // collective_latency_s, the links' latency per step and their full
  // bandwidth) or "nccl" (NCCL's three protocols, LL, LL128 and Simple, each
  // with its own latencies and share of the bandwidth; the fastest wins).
  std::string protocols = "ideal";
  // How messages travel on top of the links (config/transport.h): between
  // nodes and between the devices of a node. "native" (the default) is the
  // link as the catalog gives it.
  TransportProfile transport;
  TransportProfile intra_node_transport;
};

// One group of identical nodes in a mixed cluster (cluster.node_groups).
// The loader fills the fields a group leaves out from the cluster's keys:
// devices_per_node, device, intra_node_link, network.nics_per_node and
// network.link.
struct NodeGroup {
  std::string name;                 // unique in the cluster
  int nodes = 1;                    // >= 1
  int devices_per_node = 1;         // >= 1
  std::string device;               // catalog device of its ranks
  std::string intra_node_link;      // catalog link between devices of one of its nodes
  int nics_per_node = 1;            // NICs per node; their bandwidth adds up
  std::string link;                 // catalog link of each NIC
  SourceLocation where;             // of the group in the scenario file
};

struct ClusterConfig {
  int nodes = 1;                    // >= 1
  int devices_per_node = 1;         // >= 1
  std::string device = "V100-SXM2-32GB";  // catalog device of every rank
  std::string intra_node_link = "nvlink2";  // catalog link between devices of a node
  // Catalog link between each device and its host's memory (PCIe), for
  // parallelism.aggregation: host.
  std::string host_link = "pcie3-x16";
  NetworkConfig network;
  // Devices and links defined by the scenario, added to the catalog (same
  // name replaces the built-in entry).
  std::vector<hw::DeviceSpec> custom_devices;
  std::vector<hw::LinkSpec> custom_links;
  // Path of the device profile (config/device_profile.h) the loader applied,
  // resolved against the scenario file's folder; "" = none. Informational:
  // its numbers are already in custom_devices, custom_links and workload
  // (ApplyDeviceProfile); setting it in code applies nothing.
  std::string device_profile;
  // Mixed hardware (sim/node_groups.h): the nodes in groups, ranks numbered
  // group by group, node by node. When non-empty the loader sets `nodes` to
  // the groups' total, and `devices_per_node`, `device` and
  // `intra_node_link` to the first group's; `network` stays the cluster's
  // (the links of dedicated parameter-server nodes). Empty = every node
  // alike.
  std::vector<NodeGroup> node_groups;
  // Coefficient of variation of the GPUs' sustained speed across the fleet
  // (sim/cost/slowest_gpu.h): a synchronous step waits for the slowest of
  // its GPUs. Unset = the device generation's default.
  std::optional<double> gpu_speed_spread;

  int num_devices() const { return nodes * devices_per_node; }
  // The group node `node` is in; nullptr without groups or past them.
  const NodeGroup* GroupOfNode(int node) const;
  // NICs of node `node`: its group's, else network.nics_per_node.
  int NicsOfNode(int node) const;
};

// Which model to train: a zoo name, a parametric transformer or a file.
struct ModelRef {
  std::string zoo_name = "resnet50";  // used when neither of the below is set
  std::optional<models::TransformerConfig> transformer;
  std::string file;                   // path of a model YAML file, resolved
                                      // against the scenario file's folder
};

// How compute tasks are priced (sim/cost/cost_model.h).
enum class CostModelKind {
  kKernels,   // each op's kernels from their structure (sim/cost/gpu_kernel_model.h)
  kRoofline,  // flops / (peak x efficiency per op kind), bytes / bandwidth
  kMeasured,  // an op-cost table's times (sim/cost/measured_costs.h); the kernel
              // or roofline model, chosen as when unset, for the rest
};

struct WorkloadConfig {
  ModelRef model;
  int batch_per_device = 32;          // samples per device per iteration (>= 1)
  hw::Precision precision = hw::Precision::kFp32;
  int iterations = 5;                 // simulated iterations (>= 1); the report averages
                                      // the iterations after the first (warm-up)
  // Fraction of peak flop/s reached per op kind (0 < e <= 1). Unlisted kinds
  // take sim's defaults (sim/cost/cost_model.h).
  std::map<models::OpKind, double> compute_efficiency;
  // Dense layers' efficiency by the rows of their GEMM (a device profile's
  // dense_efficiency_by_rows); empty = compute_efficiency's dense value.
  std::map<std::int64_t, double> dense_efficiency_by_rows;
  // Convolutions' efficiency by their forward FLOPs per sample (a device
  // profile's conv_efficiency_by_flops); empty = compute_efficiency's conv2d
  // value.
  std::map<std::int64_t, double> conv_efficiency_by_flops;
  std::optional<double> memory_efficiency;  // fraction of peak memory bandwidth
  std::optional<double> kernel_launch_s;    // fixed overhead per kernel
  std::optional<double> optimizer_bytes_per_param;  // optimizer memory traffic per
                                                    // parameter; default 20 (sim/cost/cost_model.h)
  // workload.cost_model; unset: kernels where the device's microarchitecture
  // is known and no roofline key (compute_efficiency, memory_efficiency,
  // kernel_launch, a device profile) is set, else roofline.
  std::optional<CostModelKind> cost_model;
  SourceLocation cost_model_where;
  // workload.cost_table (with cost_model: measured): the op-cost table's
  // path, resolved against the scenario's folder, and the table when the
  // file is one; a torch.profiler trace (config/torch_trace.h) is kept as
  // its path and imported against the model's graph when simulated.
  std::string cost_table;
  std::shared_ptr<const OpCostTable> cost_table_data;
  SourceLocation cost_table_where;
  // workload.framework: host and framework costs (config/framework.h);
  // default "none", the devices alone.
  FrameworkProfile framework = BuiltInFrameworks().front();
  // workload.input: the input pipeline; default synthetic data (free).
  InputPipeline input;
};

enum class Strategy {
  kData,             // synchronous data parallelism with all-reduce
  kParameterServer,  // workers pull parameters from and push updates to server tasks
  kLocalSgd,         // workers train alone and average parameters every H minibatches
  kHybrid,           // data x tensor x pipeline parallelism (Megatron-LM 3D)
  kModel,            // model parallelism by layer placement: consecutive layers on
                     // consecutive devices, every batch visits every device
};
// "data", "parameter_server", "local_sgd", "hybrid", "model"
const char* StrategyName(Strategy s);

enum class SyncMode {
  kSynchronous,   // a step ends when the (k of n) updates of all workers are in
  kAsynchronous,  // parameter_server only: each worker runs at its own pace
};
const char* SyncModeName(SyncMode s);  // "synchronous", "asynchronous"

// All-reduce algorithms are the plan's (plan/plan.h): ring, tree (NCCL's
// double binary tree), hierarchical (in node, across nodes, in node).
using plan::CollectiveAlgorithm;
using plan::CollectiveAlgorithmName;  // "ring", "tree", "hierarchical"

enum class ServerPlacement {
  kDedicated,  // S extra nodes, one server task each, on the same network
  kColocated,  // server s runs on worker node s (sharing its NIC), as TF's ps tasks often did
};
const char* ServerPlacementName(ServerPlacement p);  // "dedicated", "colocated"

enum class PsPayload {
  kGradients,   // update-based: workers push gradients, servers apply them
  kParameters,  // parameter averaging: workers push parameters, servers average them
};
const char* PsPayloadName(PsPayload p);  // "gradients", "parameters"

struct ParameterServerConfig {
  int servers = 1;  // S >= 1
  ServerPlacement placement = ServerPlacement::kDedicated;
  // Which server holds which variables (plan/ps_placement.h): key
  // variable_placement; unset = the framework profile's
  // (FrameworkProfile::ps_placement).
  std::optional<plan::PsPlacementSpec> variable_placement;
  // Where the variables live and are updated: a catalog device. "cpu-host"
  // is a two-socket server CPU (TensorFlow's default for ps tasks); a GPU
  // name keeps them on a GPU.
  std::string device = "cpu-host";
  // Synchronous only: the step completes once this many workers' updates
  // have arrived; the rest are dropped (backup workers, TensorFlow's
  // SyncReplicasOptimizer replicas_to_aggregate). 0 = all workers.
  int replicas_to_aggregate = 0;
  PsPayload payload = PsPayload::kGradients;
  // Hierarchical parameter servers: the devices of a machine first sum
  // their gradients among themselves (a reduce-scatter over the machine's
  // devices, NVLink/PCIe), each device pushes its 1/g slice of the
  // machine's sum, pulls its slice back and the machine all-gathers it:
  // one push and one pull of the model per machine instead of per device
  // (TensorFlow's distributed_replicated variable update, MXNet's
  // dist_device_sync kvstore, BytePS's intra-machine reduce). Synchronous
  // only, with every worker aggregated.
  bool aggregate_in_machine = false;
  // With aggregate_in_machine: the machine's host sums (its devices copy
  // their gradients over cluster.host_link, the CPU sums, the pulled
  // parameters are copied back) instead of its devices (BytePS's CPU
  // summation; MXNet's dist_sync kvstore on CPU).
  bool aggregate_on_host = false;
};

enum class AveragingTransport { kAllReduce, kParameterServer };
const char* AveragingTransportName(AveragingTransport t);  // "all_reduce", "parameter_server"

// Pipeline schedules are the plan's (plan/hybrid.h): gpipe, 1f1b, interleaved.
using plan::PipelineSchedule;
using plan::PipelineScheduleName;

enum class OptimizerKind { kSgd, kMomentum, kAdam };
const char* OptimizerKindName(OptimizerKind o);  // "sgd", "momentum", "adam"

// Tensor, pipeline and data parallelism together (strategy hybrid), and the
// memory-related choices of every strategy.
struct HybridConfig {
  int tensor_parallel = 1;     // t: Megatron-style split of attention heads and MLP columns/rows
  int pipeline_parallel = 1;   // p: stages of consecutive layers
  // Data parallelism d = devices / (t x p). Ranks are laid out tensor
  // group first (inside a node), then pipeline stages, then data replicas.
  int micro_batch_size = 1;    // samples per micro-batch
  // Samples per iteration over all replicas; 0 = d x micro_batch_size x
  // (number of micro-batches = p). Must be a multiple of d x micro_batch_size.
  int global_batch = 0;
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int virtual_stages = 1;      // interleaved only: model chunks per device (v)
  // Layer units per pipeline chunk, given by hand (they add up to the
  // model's units: `dtsim plan` lists them); empty = `partition`.
  std::vector<int> stage_layers;
  // balanced: contiguous chunks minimizing the slowest chunk's time (exact
  // dynamic program). even_layers: Megatron-LM's split, the same number of
  // transformer layers per chunk, embeddings first, head last.
  bool even_layers = false;
  // Megatron-LM's sequence parallelism (Korthikanti et al. 2022, §4.2.2;
  // --sequence-parallel): with t > 1, the ops tensor parallelism replicates
  // inside the transformer layers (layer norms, dropouts, residuals) split
  // the sequence over the t ranks; each tensor-parallel all-reduce becomes
  // a reduce-scatter and an all-gather, and activations divide by t.
  bool sequence_parallel = false;
  // Tensor-parallel communication pipelined with the GEMM beside it
  // (Transformer Engine's userbuffers, Megatron-LM --tp-comm-overlap;
  // PyTorch's AsyncTP): plan::HybridOptions::tp_comm_overlap.
  bool tp_comm_overlap = false;
  // Data-parallel gradient reduction overlapped with the last micro-batch's
  // backward (and, with the distributed optimizer, the parameter all-gather
  // with the next step's first forward): Megatron-LM --overlap-grad-reduce
  // --overlap-param-gather. plan::HybridOptions::dp_overlap.
  bool dp_overlap = false;
  // Context parallelism (plan/context_parallel.h): c ranks share each
  // sequence, S / c each, between the tensor and the pipeline ranks; data
  // parallelism is then devices / (t x p x c). ring (default): ring
  // attention, K/V blocks passed round the group; ulysses: all-to-alls of
  // q, k, v and the output around attention (heads divisible by c).
  int context_parallel = 1;
  plan::ContextParallelKind context_parallel_kind = plan::ContextParallelKind::kRing;
  // Expert parallelism (ep, plan/expert_parallel.h): the routed experts of
  // a mixture-of-experts model sharded over groups of ep data-parallel
  // replicas, with two all-to-alls per MoE layer in forward and two in
  // backward; ep divides d and the experts. 1 = none.
  int expert_parallel = 1;
  // schedule pipedream: devices per stage (p entries adding up to the
  // devices); empty = devices / p each. `plan_replicas` (stage_replicas:
  // auto): PipeDream's planner chooses the stages, their layers and their
  // replicas (plan::PlanPipeDream).
  std::vector<int> stage_replicas;
  bool plan_replicas = false;
};

// One level of hierarchical model averaging (PyTorch's
// torch.distributed.algorithms.model_averaging.HierarchicalModelAverager,
// period_group_size_dict): every `period` steps, each group of
// `group_size` consecutive ranks averages its parameters.
struct AveragingLevel {
  int group_size = 1;
  int period = 1;
};

// Local SGD's outer optimizer (DiLoCo, Douillard et al. 2023, Algorithm 1):
// at each global average, the averaged change of the parameters since the
// last one, delta = previous - average, is an outer gradient; momentum m =
// mu m + delta and the parameters become previous - lr (delta + mu m)
// (Nesterov, as PyTorch's SGD(nesterov=True)). lr 1 and momentum 0 is plain
// averaging. Each rank keeps the previous parameters and m: 8 more bytes
// per parameter (fp32).
struct OuterOptimizer {
  bool enabled = false;
  double lr = 0.7;        // DiLoCo's outer learning rate (§3, Table 1 setup)
  double momentum = 0.9;  // DiLoCo's Nesterov momentum
};

// The format parameters travel in when local SGD averages them: the bytes on
// the wire per element and the cost of converting there and back.
enum class AveragingCompression { kNone, kFp16, kInt8, kInt4 };
const char* AveragingCompressionName(AveragingCompression c);  // "none", "fp16", "int8", "int4"

// How a mixed cluster's data-parallel workers share the global batch.
enum class BatchBalance {
  kEven,     // batch_per_device samples on every device
  kBySpeed,  // in proportion to each device's speed alone (sim/node_groups.h)
};
const char* BatchBalanceName(BatchBalance b);  // "even", "by_speed"

struct ParallelismConfig {
  Strategy strategy = Strategy::kData;
  SyncMode sync = SyncMode::kSynchronous;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  double bucket_bytes = 25.0 * 1024 * 1024;  // gradient bucket, PyTorch DDP's bucket_cap_mb=25
  bool overlap = true;  // all-reduce buckets during backward (false: after backward)
  // local_sgd: average parameters every H >= 1 minibatches (H = 1 is
  // synchronous data parallelism), through all-reduce or the servers.
  int averaging_period = 10;
  AveragingTransport averaging = AveragingTransport::kAllReduce;
  // local_sgd, hierarchical averaging: levels below the global average of
  // every `averaging_period` steps, by increasing period, each period
  // dividing the next and averaging_period, each group size dividing the
  // next and the ranks. At step k (1-based) the level with the largest
  // period dividing k averages (the global one when averaging_period does).
  std::vector<AveragingLevel> averaging_groups;
  // local_sgd: post-local SGD (Lin et al. 2020, "Don't Use Large
  // Mini-Batches, Use Local SGD", §3; PyTorch's PostLocalSGDOptimizer):
  // the first this many steps are synchronous data parallelism (gradients
  // all-reduced every step), local SGD after. 0 = local from the start.
  int post_local_steps = 0;
  // Where data parallelism's gradients (local SGD's parameters) are summed:
  // false = on the devices (NCCL-style collectives over the links); true =
  // on the host: each device copies its buffer to host memory over
  // cluster.host_link, the host CPU sums its devices' copies, the hosts
  // all-reduce over the network, and the result is copied back (the seeds'
  // TensorFlow towers averaged on the CPU, Horovod on CPU tensors, MPI
  // without GPU-aware transport).
  bool aggregate_on_host = false;
  OuterOptimizer outer_optimizer;  // local_sgd: DiLoCo's outer Nesterov step
  // local_sgd: Streaming DiLoCo (Douillard et al. 2025): the parameters in
  // `streaming_fragments` groups of gradient buckets, fragment f averaged at
  // the steps k with (k - f H / F) mod H = 0 and merged `streaming_overlap`
  // steps later, its all-reduce running under their compute. 1 = off.
  int streaming_fragments = 1;
  int streaming_overlap = 0;
  AveragingCompression averaging_compression = AveragingCompression::kNone;  // local_sgd
  ParameterServerConfig parameter_server;  // parameter_server, and local_sgd over servers
  HybridConfig hybrid;                     // hybrid and model
  // Memory: activation recomputation (keep only each layer's input, redo
  // its forward during backward), the optimizer (its state per parameter)
  // and ZeRO's sharding of optimizer state (1), gradients (2) and parameters
  // (3) over the data-parallel replicas.
  bool recompute = false;
  // Megatron-LM's selective activation recomputation (Korthikanti et al.
  // 2022, §5; --recompute-granularity selective): only attention's core
  // (QK^T, softmax, its dropout, attention over V) is recomputed; its
  // s x s activations are not kept. `recompute: selective` in YAML;
  // exclusive with `recompute` (full).
  bool recompute_selective = false;
  OptimizerKind optimizer = OptimizerKind::kAdam;
  int zero_stage = 0;
  // balance_batch (data, local_sgd over all-reduce, cluster.node_groups):
  // by_speed keeps the global batch (batch_per_device x devices) and gives
  // each device a share in proportion to its speed.
  BatchBalance balance_batch = BatchBalance::kEven;
};

// Slow and noisy devices. Ranks are worker indices (0-based, node-major).
struct SlowDevices {
  std::vector<int> ranks;  // which workers
  double factor = 1.0;     // compute takes factor x as long (>= 1), e.g. an older GPU
};

enum class NoiseDistribution {
  kNone,
  kLognormal,    // every compute task of a worker's step is x exp(N(0, sigma^2))
  kExponential,  // each worker step is delayed by an Exp(mean) extra time
  kStall,        // with probability p a worker step stalls for `delay`
};
const char* NoiseDistributionName(NoiseDistribution d);  // "none", "lognormal", "exponential", "stall"

struct StragglerConfig {
  std::vector<SlowDevices> slow_devices;
  NoiseDistribution noise = NoiseDistribution::kNone;
  double sigma = 0;              // lognormal
  double mean_s = 0;             // exponential
  double probability = 0;        // stall, in [0, 1]
  double delay_s = 0;            // stall
  // Periodic interference: during `duration_s` of every `period_s`
  // (starting at t = 0) compute on the listed ranks (all when empty) runs
  // `slowdown` times slower. period_s = 0: no interference.
  double interference_period_s = 0;
  double interference_duration_s = 0;
  double interference_slowdown = 1.0;
  std::vector<int> interference_ranks;

  bool Empty() const {
    return slow_devices.empty() && noise == NoiseDistribution::kNone &&
           interference_period_s == 0;
  }
};

// "" when every rank `config` names is in [0, num_ranks) and no rank is
// listed twice in slow_devices, else what is wrong
// ("stragglers.slow_devices: rank 9 is not in the cluster (ranks 0-7)").
std::string StragglerRanksProblem(const StragglerConfig& config, int num_ranks);

enum class FailureScope { kDevice, kNode };
const char* FailureScopeName(FailureScope s);  // "device", "node"

// Failures over a long training run: each device (or node) fails after an
// exponentially distributed time with mean `mtbf_s`; training restarts from
// the last checkpoint. mtbf_s = 0: no failures.
struct FailureConfig {
  double mtbf_s = 0;
  FailureScope scope = FailureScope::kDevice;
  double checkpoint_interval_s = 3600;  // time between checkpoints (training time)
  double checkpoint_cost_s = 60;        // time to write one checkpoint
  double restart_cost_s = 300;          // detect, replace, reload after a failure
  double horizon_s = 7 * 24 * 3600.0;   // wall time of training simulated

  bool Enabled() const { return mtbf_s > 0; }
};

// What traffic through a link that is down (bandwidth 0) does.
enum class LinkDownPolicy {
  kWait,     // stalls until the link is repaired (the event's duration)
  kReroute,  // a node's NIC: moves to the node's other NICs (nics_per_node - 1 of them)
};
const char* LinkDownPolicyName(LinkDownPolicy p);  // "wait", "reroute"

// A link whose bandwidth drops, or that goes down, for a while during the
// run (`link_events:`, docs/scenario.md). The link is a node's NICs (node
// alone), one device's port into its node's switch (node and device), or a
// fat-tree leaf's uplinks to the spine (leaf), both directions.
struct LinkEvent {
  double at_s = 0;        // simulated time it starts (>= 0)
  double duration_s = 0;  // how long it lasts; 0 = until the end of the run
  int node = -1;
  int device = -1;        // with node: that device's port; -1 = the node's NICs
  int leaf = -1;          // instead of node: a leaf's uplinks (fat_tree)
  double bandwidth = 0;   // fraction of the nominal bandwidth while it lasts, in [0, 1)
  LinkDownPolicy when_down = LinkDownPolicy::kWait;  // bandwidth 0 only
  SourceLocation where;   // of the event in the scenario file
};

struct OutputConfig {
  std::string dir;        // default: results/<scenario name>
  bool json = true;       // report.json
  bool csv = true;        // summary.csv (one row)
  bool trace = true;      // trace.json (Chrome trace / Perfetto)
  int trace_max_ranks = 16;  // trace only the first N ranks (keeps files small)
  // > 0: per-link traffic in the report and the step log (per link class
  // and the N busiest links) and the N busiest links' bandwidth as trace
  // counters (sim/link_traffic.h); 0 = none.
  int link_traffic = 0;
};

// Settings of the SimGrid engine (engine: simgrid).
struct SimgridConfig {
  // SimGrid configuration items ("name:value"), applied after dtsim's own
  // (network/model:CM02, network/crosstraffic:0) and before the platform is
  // built, e.g. "network/model:LV08" for SimGrid's default TCP model.
  std::vector<std::string> config;
  int max_step_repeats = 64;            // collective steps repeated more often: coarse mode
  std::string log_threshold = "critical";  // SimGrid's log level for all categories
};

struct Job;  // below: a job of a scenario that lists several

struct Scenario {
  std::string name = "scenario";  // default: file name without extension
  std::string source_path;        // file it was loaded from ("" when built in code)
  std::uint64_t seed = 1;
  std::string engine = "analytic";  // discrete-event engine with analytic network
  // A plan whose peak memory is within the memory model's margin of the
  // capacity (sim/memory.h, kMemoryModelMargin) is "tight": false (`dtsim run
  // --memory-check warn`, the default) predicts it with a warning that names
  // the margin; true (`refuse`) refuses it as not fitting.
  bool refuse_tight_memory = false;
  ClusterConfig cluster;
  WorkloadConfig workload;
  ParallelismConfig parallelism;
  StragglerConfig stragglers;
  FailureConfig failures;
  std::vector<LinkEvent> link_events;  // in the order given
  SimgridConfig simgrid;
  OutputConfig outputs;
  // Several jobs sharing the cluster (`jobs:`, config/jobs_loader.h); empty:
  // one job, the workload and parallelism above.
  std::vector<Job> jobs;
  // Where the file gave each key of its top level, workload and parallelism
  // sections, at the key's value ("parallelism.tensor_parallel" ->
  // file:line:column), for errors found after loading (sim/hybrid_setup.cc).
  // Empty for scenarios built in code.
  std::map<std::string, SourceLocation> key_locations;

  // key_locations[path], or the file itself (source_path) when the key was
  // not given.
  SourceLocation Where(const std::string& path) const;
};

// One of several jobs sharing a scenario's cluster (`jobs:`).
struct Job {
  std::string name;
  double start_s = 0;      // when its work begins (seconds after the run starts)
  std::vector<int> nodes;  // the cluster's nodes it runs on; its rank r sits on
                           // nodes[r / devices_per_node]
  // The job alone: the shared cluster cut to its nodes (cluster.nodes =
  // nodes.size()), its own workload and parallelism, the scenario's engine,
  // seed and simgrid settings; named after the job.
  Scenario scenario;
  SourceLocation where;    // of the job in the scenario file
};

// Loads and validates a scenario file. Throws UserError with file:line:column
// and what was expected on: malformed YAML, unknown keys, wrong types, values
// without units where units are needed, negative or zero sizes and
// bandwidths, unknown device/link/model names.
//
// `check_plan_shape` false: the parallelism's split need not divide the
// cluster and the global batch (no InfeasiblePlan for it), for tools that
// replace the split (dtsim search).
Scenario LoadScenario(const std::string& path, bool check_plan_shape = true);
// Same from text; `filename` names the source in messages and is the base
// for relative model file paths.
Scenario ParseScenario(const std::string& yaml_text, const std::string& filename,
                       bool check_plan_shape = true);
// A key the scenario gives that its strategy or engine does not use
// (config/strategy_keys.h).
struct UnusedKey {
  std::string path;       // "parallelism.pipeline_parallel"
  SourceLocation where;   // of the key
  std::string reason;     // "strategy 'data' does not use ... (...)"
};

// Same from a document already parsed (e.g. by ParseYamlDocument, then edited
// as study/sweep.cc does for each point of a sweep). Errors name the positions
// the nodes carry (their YAML::Mark), in `filename`. A key the strategy does
// not use is a UserError at the key; with `unused` (a sweep's point), such
// keys are appended there instead and the scenario loads.
Scenario ParseScenarioNode(const YAML::Node& root, const std::string& filename,
                           std::vector<UnusedKey>* unused = nullptr, bool check_plan_shape = true);

// The catalog of the scenario: built-in entries plus the scenario's own.
hw::HardwareCatalog ScenarioCatalog(const Scenario& s);
// Builds the model graph the workload names, in the workload's precision.
// Throws UserError for a scenario with jobs (each job has its own model:
// build the graph of a job's scenario).
models::ModelGraph BuildWorkloadModel(const Scenario& s);
// How tensors are stored when training at `p`: mixed precision keeps
// weights, activations and gradients in 16 bits; fp32 and tf32 (a
// tensor-core math mode over fp32 storage) keep 32.
models::DType StorageDType(hw::Precision p);
// Steps between parameter averages: the scenario's averaging_period with
// local SGD, else 1 (every step synchronises). The one place this rule is
// written; the simulator, the plan's size and exec all ask here.
int AveragingPeriod(const Scenario& s);
// Strategy hybrid or model: the model is cut into pipeline stages. Written
// once here; the loader, the simulator, the plan's size and the CLI ask.
bool IsPipelined(const Scenario& s);
// Parameter servers hold the state: strategy parameter_server, or local
// SGD averaging through servers. Written once here.
bool UsesServers(const Scenario& s);
// Whether compute is priced by the kernel model (else the roofline) for the
// ops no op-cost table prices: cost_model kernels, or unset with no roofline
// key (compute_efficiency, dense/conv efficiency tables, memory_efficiency,
// kernel_launch) set. The kernel model also needs a GPU whose
// microarchitecture the catalog knows (sim::CostModel falls back to the
// roofline otherwise). The one place this choice is written.
bool UsesKernelModel(const WorkloadConfig& w);

}  // namespace dtsim::config
