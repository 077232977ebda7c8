// Where a parameter-server job keeps its variables: which server holds
// which elements of the model's flat parameter buffer (exec/runtime/
// model_runtime.h's layout: op by op in graph order, each op's weight, then
// its bias; norms gamma, then beta).
//
// Policies, as frameworks place variables:
//   kEven        the flat buffer cut into S contiguous ranges of ceil(P / S)
//                elements, the last one shorter (dtsim's own cut, blind to
//                variable boundaries).
//   kRoundRobin  whole variables, in creation order, to servers 0, 1, ...,
//                S-1, 0, ... : TensorFlow's tf.train.replica_device_setter
//                with its default ps_strategy, _RoundRobinStrategy
//                (tensorflow/python/training/device_setter.py: "the
//                placement strategy is round-robin over all ps tasks").
//   kGreedy      whole variables, in creation order, each to the server
//                holding the fewest bytes so far, ties to the lowest index:
//                tf.contrib.training.GreedyLoadBalancingStrategy with its
//                default load_fn, byte_size_load_fn.
//   kPartitioned variables of more than max_shard_bytes split into
//                k = ceil(bytes / max_shard_bytes) pieces of near-equal
//                elements (n / k each, the first n mod k one more),
//                then the pieces and the small variables, in creation
//                order, round-robin over the servers (one cursor for all).
//                The split is BytePS's (byteps/common/global.cc:
//                _partition_bytes = 4096000, "BYTEPS_PARTITION_BYTES")
//                and, in effect, MXNet's kvstore's (see docs/
//                parameter_server.md for how each framework's own
//                placement of the pieces differs from round-robin).
//
// REQUIRES everywhere: servers >= 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/graph.h"

namespace dtsim::plan {

enum class PsPlacementPolicy { kEven, kRoundRobin, kGreedy, kPartitioned };
// "even", "round_robin", "greedy", "partitioned".
const char* PsPlacementPolicyName(PsPlacementPolicy p);

struct PsPlacementSpec {
  PsPlacementPolicy policy = PsPlacementPolicy::kEven;
  // kPartitioned only: the largest piece, in bytes (> 0).
  double max_shard_bytes = 0;
  // "even", "round_robin", "greedy" or "partitioned (max 4096000 B)".
  std::string Describe() const;
  bool operator==(const PsPlacementSpec&) const = default;
};

// One trainable tensor (a TensorFlow variable, an MXNet kvstore key).
struct PsVariable {
  models::OpId op = 0;
  std::string name;             // "<op>.weight", "<op>.bias", "<op>.gamma", ...
  std::int64_t offset = 0;      // first element in the flat parameter buffer
  std::int64_t count = 0;       // elements, >= 1
  int bytes_per_element = 4;    // the op's dtype
  double Bytes() const { return static_cast<double>(count) * bytes_per_element; }
};

// The model's variables in creation (graph) order: each op with parameters
// gives its weight then its bias (kConv2d, kDense with attrs.bias: the bias
// has output channels / features elements), gamma then beta (kBatchNorm,
// kLayerNorm: half each), or one variable of all its parameters. Their
// ranges tile [0, total parameters) in order.
std::vector<PsVariable> ModelVariables(const models::ModelGraph& graph);

// A contiguous run of one variable's elements held by one server.
struct PsPiece {
  std::int32_t variable = 0;  // index into PsPlacement::variables
  std::int64_t offset = 0;    // in the flat parameter buffer
  std::int64_t count = 0;     // >= 1
};

struct PsServerShare {
  std::vector<PsPiece> pieces;  // in flat-buffer order
  std::int64_t params = 0;      // elements held
  double bytes = 0;             // bytes held: each push and each pull of one worker
};

struct PsPlacement {
  std::vector<PsVariable> variables;
  std::vector<PsServerShare> servers;  // S entries; a server may hold nothing
};

// Places `variables` (ModelVariables' contract: tiling the flat buffer in
// order) on `servers` servers. Every element of every variable lands on
// exactly one server. Throws UserError when kPartitioned would cut more
// than 10 million pieces.
PsPlacement PlaceVariables(std::vector<PsVariable> variables, int servers,
                           const PsPlacementSpec& spec);

}  // namespace dtsim::plan
