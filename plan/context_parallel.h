// Context (sequence) parallelism: the c ranks of a context-parallel group
// each hold S / c of every sequence, for every op of a decoder transformer.
//
//   ring     Ring attention (Liu et al. 2023; Megatron-LM's context
//            parallelism, Transformer Engine's AttnFuncWithCPAndKVP2P). Each
//            rank keeps its queries; the key/value blocks go round the group
//            in c - 1 point-to-point steps, each overlapped with the
//            blockwise attention of the block in hand. With causal masking
//            each rank holds chunks i and 2c - 1 - i of the 2c chunks of the
//            sequence (load balancing), so every step is the same work: half
//            of an (S/c) x (S/c) block, exactly a causal attention over S / c
//            tokens. Backward passes the key/value blocks and their
//            gradients: step j sends the block for step j + 1 and the dK/dV
//            summed so far of the block of step j - 1, and after the last
//            step the dK/dV of that block returns to its owner.
//
//   ulysses  DeepSpeed-Ulysses (Jacobs et al. 2023): an all-to-all of q, k,
//            v over the group before attention turns (heads, S/c) into
//            (heads/c, S) on each rank, and an all-to-all of the output
//            after turns it back; backward mirrors both. Heads and key/value
//            heads must divide by c.
//
// Everything outside attention's core works on S / c tokens: its FLOPs,
// memory traffic and saved activations divide by c. Parameters are
// replicated over the group, so gradients are all-reduced (and ZeRO shards
// the state) over data x context ranks. The rank layout puts the group
// between tensor and pipeline ranks (plan/hybrid.h).
#pragma once

#include <cstdint>
#include <vector>

#include "models/graph.h"
#include "plan/plan.h"

namespace dtsim::plan {

enum class ContextParallelKind : std::uint8_t { kRing, kUlysses };
const char* ContextParallelKindName(ContextParallelKind kind);  // "ring", "ulysses"

struct ContextParallel {
  int degree = 1;  // c: ranks sharing each sequence; 1 = none
  ContextParallelKind kind = ContextParallelKind::kRing;
};

// "" when `graph` can be split c ways by `cp`, else why not (a sentence
// for a UserError): the graph must start with a sequence of S token ids and
// carry the sequence in every tensor (a decoder transformer of the zoo;
// encoders with a first-token pooler do not), S must divide by c (by 2c for
// causal ring attention: its load-balanced chunks), ring attention needs
// the fused kernel (attention: flash), Ulysses heads and key/value heads
// divisible by c. Always "" for c = 1.
std::string ContextParallelProblem(const models::ModelGraph& graph, const ContextParallel& cp);

// The sequence length S of a language model: its first op is an input of S
// token ids; 0 for any other graph.
std::int64_t SequenceLength(const models::ModelGraph& graph);

// One context rank's share of `graph` (REQUIRES: ContextParallelProblem is
// ""): every shape's sequence dimension is S / c and every op's FLOPs,
// traffic and saved activations divide by c, except attention's core:
//   ring:    the fused op is ONE ring step, causal (or not) over S / c
//            tokens: its FLOPs divide by c^2, its traffic and saved
//            activations (this rank's q, k, v and output) by c. A plan runs
//            it c times per forward and per backward.
//   ulysses: the core ops work on heads / c over the whole sequence (their
//            shapes' leading dimension divides by c): FLOPs, traffic and
//            saved activations divide by c.
// c = 1 returns `graph` unchanged.
models::ModelGraph ContextParallelShard(const models::ModelGraph& graph, const ContextParallel& cp);

// Bytes per sample a ring step passes: the key and value block (inputs 1
// and 2) of `core`, a fused attention op of the shard, on one tensor rank
// (divided by the op's tensor split).
double RingBlockBytes(const models::Op& core);

// Bytes per sample of Ulysses' all-to-alls around attention core
// [begin, end) of the shard, each rank's buffer (q, k, v before; the
// output after), on one tensor rank.
struct UlyssesBytes {
  double before = 0;  // q, k and v: (A + 2 G) (S / c) D elements
  double after = 0;   // the output: A (S / c) Dv elements
};
UlyssesBytes UlyssesAllToAllBytes(const models::ModelGraph& shard, models::OpId begin,
                                  models::OpId end);

// Where one attention core of a hybrid plan runs, for EmitContextAttention.
struct AttentionSite {
  RankId rank = 0;         // the materialized member of the context group
  RankId next = 0;         // its successor in the ring
  std::int32_t group = -1; // the context group (Ulysses' all-to-alls)
  models::OpId begin = 0;  // the core's ops [begin, end) in the shard
  models::OpId end = 0;
  std::int32_t iteration = 0;
  std::int32_t micro_batch = 0;
  std::int32_t batch = 1;  // samples per micro-batch
  std::int32_t copies = 1; // identical groups this one stands for (symmetric plans)
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
};

// Adds the tasks of attention's core on `site.rank` for one micro-batch,
// forward (TaskKind::kForward) or backward (kBackward), after `dep` (-1:
// none), and returns the task whose end makes the core's result available.
//   ring forward:   c step tasks of the core op; the K/V block send of step
//                   j (j < c - 1) starts when the block arrived (the send of
//                   step j - 1) and step j + 1 waits for it.
//   ring backward:  c step tasks; step j sends the next block (j < c - 1)
//                   and the dK/dV of step j - 1 (j >= 1) after step j - 1,
//                   and a last send returns the dK/dV of step c - 1.
//   ulysses:        all-to-all, the core's ops as one task, all-to-all.
// The sends go to `site.next`, standing for every member's successor
// (symmetric plans: the block a member receives from its predecessor
// arrives when its own send to its successor does; the caller picks the
// ring's slowest hop).
TaskId EmitContextAttention(Plan& plan, const models::ModelGraph& shard, const ContextParallel& cp,
                            const AttentionSite& site, TaskKind kind, TaskId dep);

// EmitContextAttention for a materialized context group: `sites` are its
// c members in ring order (site q sends to site q + 1 mod c; its `next` is
// ignored), `deps[q]` member q's dependency (-1: none). Returns per member
// the task whose end makes its core's result available.
//   ring:    member q's step j + 1 and its send of that block wait for the
//            block to arrive, i.e. for its predecessor's send of step j
//            (and for its own step j and send j); backward, member q's
//            dK/dV comes back with its predecessor's last send.
//   ulysses: one all-to-all over the group with a member task per site.
// With identical members this is the timing EmitContextAttention gives one
// member standing for the group.
std::vector<TaskId> EmitContextAttentionGroup(Plan& plan, const models::ModelGraph& shard,
                                              const ContextParallel& cp,
                                              const std::vector<AttentionSite>& sites,
                                              TaskKind kind, const std::vector<TaskId>& deps);

}  // namespace dtsim::plan
