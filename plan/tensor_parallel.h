// Which ops Megatron-LM's tensor parallelism splits over the t ranks of a
// tensor-parallel group, and where it puts its all-reduces (Shoeybi et al.
// 2019, "Megatron-LM", §3 and Fig. 3; Narayanan et al. 2021 §2.3).
//
// Within a transformer block of the zoo (ops "layerN.attn.*", "layerN.mlp.*"):
//
//   attn:  ln -> [qkv -> q/k/v slices, heads (-> q_rotary, k_rotary) ->
//                 (k_repeat, v_repeat ->) scores -> softmax -> probs_dropout ->
//                 context  (or: -> core, the fused attention)
//                 -> merge_heads -> proj] -> dropout -> residual
//   mlp:   ln -> [fc1 -> gelu -> fc2] -> dropout -> residual
//          ln -> [fc1 -> gate, up slices -> silu (or gelu) of gate -> mul -> fc2]
//                -> dropout -> residual                      (gated MLPs)
//
// The bracketed ops are split: qkv and fc1 by output columns (column
// parallel: q, k, v and gate, up, each rank holding its heads and columns
// of each, as Megatron-LM interleaves them), proj and fc2 by input rows (row
// parallel), everything between them by attention heads (query heads and
// key/value heads alike: each rank holds kv_heads / t of them) or MLP
// columns. Each rank holds 1/t of their
// parameters, FLOPs and saved activations. Layer norms, the dropouts after
// proj/fc2 and the residual adds work on the full hidden vector and are
// replicated on every rank.
//
// Mixture-of-experts blocks (models/transformer_moe.cc): the routed
// experts' MLP ("layerN.experts.*") and the shared experts' ("layerN.shared.*")
// are split as the dense MLP; the router, dispatch and combine
// ("layerN.mlp.*") are replicated.
//
// Outside the blocks: the token embedding ("embed.tokens") and the LM head
// ("lm_head", BERT's "mlm.decoder") are split over the vocabulary, and so is
// the cross-entropy that reads their logits ("loss", "mlm.loss" with S x V
// logits; Megatron's vocab-parallel cross entropy; a classifier's "loss" on
// per-sample logits is replicated). Position/token-type embeddings, the
// embedding's layer norm and dropout, final_ln, BERT's pooler, NSP head and
// MLM transform are replicated.
//
// Ops of other models (CNNs, model files) are replicated: tensor
// parallelism, as Megatron defines it, only splits transformer layers.
//
// The decision uses the op's name (the zoo's naming, see models/transformer_blocks.cc)
// and checks its kind, so a user's op that happens to be called "fc1" but is
// not a dense layer is not split.
#pragma once

#include "models/op.h"

namespace dtsim::plan {

// True when Megatron splits `op` over the tensor-parallel group (each rank
// holds 1/t of its parameters, FLOPs and saved activations).
bool IsTensorParallelSplit(const models::Op& op);

// The all-reduce Megatron inserts at an op, over the tensor-parallel group:
//   kAfterForward:       after the op's forward, of its output
//                        (row-parallel attn.proj and mlp.fc2: partial sums;
//                        the vocab-parallel token embedding: each rank looked
//                        up only its own part of the vocabulary);
//   kAfterBackwardInput: after the op's input gradient, of that gradient
//                        (column-parallel attn.qkv and mlp.fc1, and the
//                        vocab-parallel LM head: each rank has a partial
//                        gradient of the replicated input).
// Per transformer block that is 2 all-reduces in forward and 2 in backward,
// each of S x H elements per sample (Megatron-LM Fig. 4). The
// vocab-parallel cross entropy's all-reduces (a max, a sum and the target
// logits, S elements each) are small and not listed.
enum class TpCollective { kNone, kAfterForward, kAfterBackwardInput };
TpCollective TensorParallelCollective(const models::Op& op);

// Whether a split op's tensors are divided over the group too (memory):
//  - its output: not after the all-reduce of the row-parallel ops and the
//    token embedding (kAfterForward: every rank then holds the full sum);
//  - its saved activations: not for the column-parallel ops (qkv, fc1, the
//    LM head keep their replicated input X for dW = X^T dY) nor the token
//    embedding (it keeps the token ids). Per transformer layer this leaves
//    the two layer-norm inputs, the two dropout masks and the qkv/fc1
//    inputs replicated: Korthikanti et al. 2022, "Reducing Activation
//    Recomputation in Large Transformer Models", Eq. 2,
//    sbh (10 + 24/t + 5as/(ht)).
// Both false for replicated ops.
bool TensorParallelSplitsOutput(const models::Op& op);
bool TensorParallelSplitsSavedActivations(const models::Op& op);

// Megatron-LM's sequence parallelism (Korthikanti et al. 2022, §4.2.2):
// the ops tensor parallelism leaves replicated inside the transformer
// (every op of a block that IsTensorParallelSplit does not split: its layer
// norms, the dropouts after proj/fc2, the residual adds), the embeddings
// after the token lookup ("embed.*" but "embed.tokens") and "final_ln" work
// on s/t of the sequence on each of the t ranks. Their FLOPs, traffic and
// saved activations divide by t. Entering the region, the all-reduce
// after a row-parallel op becomes a reduce-scatter; leaving it, an
// all-gather runs before the consumer (a column-parallel op, or a replicated
// op outside, e.g. BERT's pooler); backward mirrors them. Graph inputs are
// outside.
bool InSequenceParallelRegion(const models::Op& op);

// Elements per sample of the all-reduce TensorParallelCollective(op) names:
// the op's output (kAfterForward) or its first input (kAfterBackwardInput);
// 0 for kNone.
double TensorParallelCollectiveElementsPerSample(const models::Op& op);

}  // namespace dtsim::plan
