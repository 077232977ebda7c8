// Expert parallelism for the mixture-of-experts layers of the zoo's
// transformers (models/transformer_moe.cc), as Megatron-LM's MoE layers run
// it (--expert-model-parallel-size, the "alltoall" token dispatcher; GShard,
// Lepikhin et al. 2021, §2.2):
//
//   - the E routed experts of every layer are sharded over the `ep` ranks of
//     an expert group, E / ep each; attention, router, norms and shared
//     experts stay data-parallel (replicated on every rank);
//   - in each MoE layer the forward runs an all-to-all over the expert group
//     after mlp.dispatch (each rank sends each routed row to the rank holding
//     its expert) and one after experts.fc2 (the rows come back before
//     mlp.combine); the backward runs the mirror two, of the rows' gradients.
//     Bytes per rank: the routed rows of its micro-batch, R x H x dtype bytes
//     (R = top_k x tokens x capacity factor) x ExpertLoadFactor;
//   - the expert parameters' gradients are all-reduced over the d / ep ranks
//     holding the same experts (the expert-data-parallel group), the rest over
//     all d replicas.
//
// The expert group sits inside the data-parallel dimension: ep divides d.
#pragma once

#include "models/graph.h"

namespace dtsim::plan {

// An op of the routed experts' MLP (ops "layerN.experts.*"): it works on the
// routed rows, so expert parallelism's load imbalance scales it.
bool IsRoutedExpertOp(const models::Op& op);

// The routed experts of one mixture-of-experts layer, found by its dispatch
// op; 0 when the graph has none (a dense model).
int ModelExperts(const models::ModelGraph& graph);

// The work of the busiest rank of an expert group over the mean, when the
// busiest of E experts gets `skew` x the mean share of the routed rows and
// the other experts split the rest evenly. Rank holding it holds E / ep
// experts:
//   factor = (skew + (E/ep - 1) (E - skew) / (E - 1)) / (E/ep)
// = 1 at ep = 1 (one rank holds all the rows whatever their spread) and =
// skew at ep = E (the rank holds the busiest expert alone).
// REQUIRES: ep divides E, 1 <= skew <= E.
double ExpertLoadFactor(double skew, int experts, int ep);

// ExpertLoadFactor of the layer holding op `v` when it IsRoutedExpertOp
// (E and the skew from its layer's combine op), else 1.
double RoutedLoadFactor(const models::ModelGraph& graph, models::OpId v, int ep);

// One rank's share of `graph` with its E routed experts sharded over `ep`
// ranks: each expert dense layer holds the parameters of E / ep experts
// (OpAttrs::expert_split = ep); the routed-expert ops' FLOPs, memory traffic
// and saved activations are those of the rank holding the busiest expert
// (x ExpertLoadFactor: every rank is priced as the one that sets the pace).
// ep = 1 returns the graph unchanged. REQUIRES: ep divides every layer's E.
models::ModelGraph ExpertParallelShard(const models::ModelGraph& graph, int ep);

// The all-to-all over the expert group after op `op`'s forward (and before
// its backward), in bytes per sample of the rank: the routed rows leaving
// mlp.dispatch or experts.fc2, x ExpertLoadFactor for `ep`; 0 for other ops
// and for ep = 1 (every expert is local).
double ExpertAllToAllBytesPerSample(const models::ModelGraph& graph, models::OpId op, int ep);

// True for a dense layer of routed experts: its parameters' gradients are
// reduced over the expert-data-parallel group.
bool HoldsExpertParams(const models::Op& op);

}  // namespace dtsim::plan
