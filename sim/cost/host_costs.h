// The host side of a plan: what a framework profile and an input
// pipeline (config/framework.h) add to the device work the cost model prices.
//
// Host time of a task on a worker rank, from its framework profile:
//   compute task  sum over its ops of per_op + kernels(op) x per_kernel,
//                 where kernels(op) is what sim/cost/op_kernels.h launches for
//                 the pass; an op the profile fuses into its producer costs
//                 nothing (it is part of the producer's kernel);
//   optimizer     per_tensor:   tensors x (per_op + kernels_per_tensor x per_kernel)
//                 multi_tensor: ceil(tensors / tensors_per_launch) x (per_op + per_kernel)
//   collective, send   per_collective
//   first task of each iteration   + per_step
// The device may start a task once the host has issued its first op (and,
// on the first task of an iteration, spent per_step): host_lead_ns.
// With CUDA graphs the per-op, per-kernel and optimizer terms are replaced by
// one graph_launch on the first task of the iteration. Sync points: the
// last task of each iteration of a rank (sync_each_step) and every pipeline
// send (sync_on_p2p). Server ranks have no host costs.
//
// Input pipeline: a node's `cores` prepare the batches of the ranks that
// read input (those holding the model's first op) on that node, so rank r
// takes samples(r) x per_sample / (cores / input ranks on its node) per
// iteration.
//
// The host's CPU is one resource per node: when collectives are summed on
// the hosts (plan::Collective::via_host) and an input pipeline is priced,
// the node's cores sum first (the training loop waits on the sum) and the
// input pipeline prepares batches in what is left, so each input rank's
// batch time grows by the node's summing time per iteration
// (HostSumSecondsPerNode, averaged over the plan's iterations).
#pragma once

#include <set>

#include "config/framework.h"
#include "hw/catalog.h"
#include "models/graph.h"
#include "plan/plan.h"
#include "sim/cost/task_costs.h"
#include "sim/network/network.h"

namespace dtsim::sim {

// True when op `v` is fused into the kernel of the op producing its first
// input (its kind is in `fused` and that producer launches kernels).
bool IsFusedOp(const models::ModelGraph& graph, models::OpId v,
               const std::set<models::OpKind>& fused);
// `op` as priced when fused: its first input is neither written by the
// producer nor read back (2 x its elements less memory traffic per sample,
// never below what the op itself writes).
models::Op FusedOp(const models::Op& op);

// Kernels op `v` launches for a compute task of `kind` (kForward,
// kBackwardInput, kBackwardWeight, or kBackward for both gradients).
int KernelsOf(const models::ModelGraph& graph, models::OpId v, plan::TaskKind kind,
              hw::Precision precision);

// Fills costs->host_ns and host_sync when `framework` has host costs (and
// adds Horovod's half cycle to gradient collectives), and costs->input_ns
// when `input` costs anything. Leaves them empty otherwise.
void AddHostCosts(const plan::Plan& plan, const models::ModelGraph& graph,
                  const config::FrameworkProfile& framework, const config::InputPipeline& input,
                  hw::Precision precision, TaskCosts* costs);

// Adds each node's host summing time per iteration to the input time of
// the input ranks on that node (see the top of this file). No-op without
// input costs or collectives on the hosts.
void ShareHostCpuWithInput(const plan::Plan& plan, const Network& network, TaskCosts* costs);

}  // namespace dtsim::sim
