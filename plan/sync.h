// How a plan's replicas stay in step: its strategy, its synchronisation
// (what is averaged, how often, over which groups, with which outer step,
// through which servers) and its gradient buckets. The builders fill these
// in (plan/data_parallel.h, plan/parameter_server.h, plan/hybrid.h) from the
// same options that shape the task graph, so a backend that runs the plan
// (exec/runtime/plan_executor.h) reads them from the plan and is not told
// them again.
#pragma once

#include <cstdint>
#include <vector>

namespace dtsim::models {
class ModelGraph;
}

namespace dtsim::plan {

// Which builder made the plan. The names (StrategyName) are the ones that
// plan listings and reports print.
enum class Strategy : std::uint8_t {
  kData,             // synchronous data parallelism ("data")
  kLocalSgd,         // local SGD, averaging period > 1 ("local_sgd")
  kParameterServer,  // parameter servers, one push per step ("parameter_server")
  kModel,            // pipeline without replicas or tensor parallelism ("model")
  kHybrid,           // pipeline and/or tensor parallelism with replicas ("hybrid")
  kChakra,           // imported execution trace ("chakra")
};
const char* StrategyName(Strategy s);

// What the replicas' averaging collectives (or server pushes) carry.
enum class Averaged : std::uint8_t {
  // Gradients, averaged before the update (synchronous data parallelism;
  // servers that apply the mean gradient).
  kGradients,
  // Parameters, averaged after each replica's own update (local SGD, model
  // averaging over servers).
  kParameters,
};
const char* AveragedName(Averaged a);

// A level of hierarchical averaging below the global average
// (config::AveragingLevel): every `period` steps, an average within each
// group of `group_size` consecutive ranks.
struct AveragingLevel {
  std::int32_t group_size = 1;  // ranks per group, >= 1, divides the rank count
  std::int32_t period = 1;      // steps between this level's averages, divides H
  bool operator==(const AveragingLevel&) const = default;
};

// Local SGD's outer optimizer (DiLoCo, Douillard et al. 2023): at each
// average over all ranks, delta = previous - average, m = momentum m +
// delta, parameters = previous - lr (delta + momentum m); previous starts
// as the initial parameters.
struct OuterOptimizer {
  bool nesterov = false;   // false: the average is taken as it is (default)
  float lr = 0.7f;         // outer learning rate (dimensionless), default 0.7
  float momentum = 0.9f;   // Nesterov momentum (dimensionless), default 0.9
};

// Parameter-server plans: where the servers are and how they aggregate
// (which variables each holds is Plan::server_params).
struct ServerSync {
  std::int32_t servers = 0;  // server ranks, after the workers; 0 = no servers (default)
  // true: each server on an extra node of its own; false: on the workers'
  // nodes, after their devices. Default true.
  bool dedicated = true;
  bool asynchronous = false;  // each push applied on its own; default false (synchronous)
  // Synchronous: pushes aggregated per step (k of n); 0 = all workers (default).
  std::int32_t replicas_to_aggregate = 0;
};

struct Sync {
  // H: steps between averages over all ranks (>= 1). 1 (default): every
  // step, synchronous; H > 1: local SGD, plan iteration i averages when
  // i % H == H - 1, and a run of many steps replays plan iteration i % H.
  std::int32_t averaging_period = 1;
  Averaged averaged = Averaged::kGradients;  // default: gradients
  // Post-local SGD (Lin et al. 2020): the first this many steps run the
  // averaging iteration (H - 1) with gradients averaged before the update,
  // local SGD follows. Steps; default 0 (none).
  std::int32_t post_local_steps = 0;
  OuterOptimizer outer;  // default: none
  // Hierarchical averaging, by increasing period; default empty (global
  // averages only).
  std::vector<AveragingLevel> levels;
  // Streaming DiLoCo: the buckets form this many fragments, each averaging
  // at its own offset (plan/data_parallel.h); default 1 (plain local SGD).
  std::int32_t streaming_fragments = 1;
  // ... and each fragment's average merges this many steps later; default 0.
  std::int32_t streaming_overlap = 0;
  ServerSync servers;  // parameter-server plans; default: none
};

// A data-parallel plan's gradient bucket: Collective::bucket indexes the
// plan's list of them. It holds the gradients of the ops with parameters in
// [first_op, end_op), which backward produces consecutively; their
// parameters are adjacent in the flat buffer (exec/runtime/model_runtime.h).
struct GradientBucket {
  std::int32_t first_op = 0;  // lowest model op index with a gradient in it
  std::int32_t end_op = 0;    // one past the highest
  double bytes = 0;           // gradient bytes (sum of the ops' ParamBytes)
  bool operator==(const GradientBucket&) const = default;
};

// Packs the gradients of `graph`'s ops with parameters, in backward order
// (highest op first), into buckets that close once they hold at least
// `bucket_bytes` bytes (PyTorch DDP's bucket_cap_mb); the last one holds
// what is left. Buckets are in the order backward fills them.
std::vector<GradientBucket> GradientBuckets(const models::ModelGraph& graph, double bucket_bytes);

}  // namespace dtsim::plan
