// Parameter-server plans (plan/parameter_server.h) run for real: the server
// side, and the protocol workers (plan_executor.cc) speak with it.
//
// Sharding: server s (the s-th server rank) holds the spans of the model's
// flat parameter buffer (ModelRuntime's layout: op by op in graph order,
// weights then bias) that the plan gives it (plan::Plan::server_params,
// placed by plan/ps_placement.h), concatenated in buffer order; its pulls
// and pushes carry exactly those elements, so the bytes per server are the
// ones the simulator prices.
//
// Messages (one per kSend task of the plan), tags below kMaxUserTag and
// above the pipeline's TransferTag range [1, 30000]:
//   pull  server -> worker, kPsPullTag: [version, shard parameters...]
//   push  worker -> server, kPsPushTag: [version, shard gradients...] (or the
//         worker's updated shard parameters when the plan averages parameters,
//         plan::Sync::averaged)
// version = updates the server had applied when it sent the shard (a float
// holding an exact integer, < 2^24); a push echoes the version of the pull
// its computation started from. Each worker alternates pull, push, pull,
// push... with every server; MPI keeps one sender's messages of one tag in
// order, so no step number is needed in the tag, and a server can take
// "the next push, from anyone" with a single RecvAny.
//
// A server sends a worker its next pull only once that worker's previous
// push has arrived (the worker is "ready"; a pull released earlier is
// owed and goes out with that push's arrival). So the server never waits
// for a worker except in receives: when it reuses a worker's pull buffer,
// the worker has already received the previous pull. Every server blocks
// only in RecvAny, which takes whichever push comes, so no cycle of waits
// can form between servers and workers (every push is eventually received,
// every released pull eventually sent).
//
// Synchronous server (one kOptimizer task per step, contributions = k):
// it walks its tasks in id order: a pull task releases that worker's pull;
// the optimizer task receives pushes in arrival order until k of them echo
// the current version, averages those k and applies them (optimizer step
// on the mean gradient, or the mean parameters). Pushes that echo an older
// version come from the n - k late workers of an earlier k-of-n step: they
// are received and dropped. A late worker gets the newest shard on its next
// pull (as TensorFlow's SyncReplicasOptimizer's stragglers do), so it can
// contribute again. After the last step the server receives (and drops)
// the pushes still owed, sending the pulls still owed, until every worker
// has pushed all its steps.
//
// Asynchronous server (several kOptimizer tasks per step, one per push):
// each optimizer task applies the next push of anyone on its own, then
// sends that worker its next pull at once (pull tasks after the first
// iteration are therefore served by the applies, not by the walk).
// Staleness of a push = the server's version when applying it minus the
// version it echoes: the updates applied since its worker's pull.
#pragma once

#include <cstdint>

#include "exec/backend.h"
#include "exec/comm/communicator.h"
#include "exec/runtime/model_runtime.h"
#include "exec/runtime/plan_executor.h"
#include "models/graph.h"
#include "plan/plan.h"

namespace dtsim::exec {

inline constexpr int kPsPullTag = 31001;
inline constexpr int kPsPushTag = 31002;
// Floats before the shard in every pull and push payload (the version).
inline constexpr std::int64_t kPsHeader = 1;

// The spans `server` (a server rank of `plan`) holds, in buffer order;
// empty when the placement gave it nothing. Throws InternalError when the
// plan records no placement for it.
const std::vector<plan::ParamSpan>& ServerSpans(const plan::Plan& plan, plan::RankId server);
// Elements in `spans`.
std::int64_t SpanElements(const std::vector<plan::ParamSpan>& spans);

// Runs this process's rank, a server of `plan`, to the end (the same
// contract as ExecutePlan; every worker must run ExecutePlan with the same
// plan and options). Returns the shard as final_params.
ExecResult RunParameterServer(const plan::Plan& plan, const models::ModelGraph& graph,
                              Communicator& comm, Backend& backend, const ExecOptions& options);

}  // namespace dtsim::exec
