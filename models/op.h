// One operator of a model graph, with everything the planner, the simulator's
// cost model and (later) exec's kernels need to know about it.
//
// All per-sample quantities are for ONE sample (batch = 1); they scale
// linearly with the batch. Shapes exclude the batch dimension:
//   images: (C, H, W); sequences: (S, H) with S = sequence length.
// FLOPs count a multiply-add as 2 FLOPs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::models {

enum class OpKind {
  kInput,          // data source; no compute
  kConv2d,
  kDense,          // fully connected / linear
  kMatMul,         // activation x activation (attention scores, context)
  kMaxPool,
  kAvgPool,
  kRelu,
  kGelu,
  kTanh,
  kBatchNorm,
  kLayerNorm,
  kLocalResponseNorm,
  kSoftmax,
  kSoftmaxCrossEntropy,  // loss
  kEmbedding,
  kAdd,            // residual add
  kConcat,
  kDropout,
  kReshape,        // view change; free (or a copy: ViewKind::kRepeatHeads)
  kSigmoid,
  kSilu,           // x * sigmoid(x) (Swish)
  kMul,            // a * b, b broadcast over a (gates, squeeze-excitation)
  kRmsNorm,        // root-mean-square norm over the last dimension
  kRotary,         // rotary position embedding of (A, S, D) queries or keys
  kAttention,      // fused scaled-dot-product attention (FlashAttention)
  kRecurrent,      // an RNN, LSTM or GRU layer over a sequence
};

// Short lower-case name ("conv2d"); also the key used for per-kind
// efficiencies in scenario files.
const char* OpKindName(OpKind kind);
// All kinds, in declaration order.
const std::vector<OpKind>& AllOpKinds();

enum class DType { kFp32, kFp16, kBf16 };
const char* DTypeName(DType dtype);
int DTypeBytes(DType dtype);

using Shape = std::vector<std::int64_t>;
// The product of the dimensions. REQUIRES: it fits in int64 (GraphBuilder
// keeps every shape of a graph within kMaxModelCount).
std::int64_t NumElements(const Shape& shape);

// Bounds on a model's sizes, so that its arithmetic holds: the elements of
// every tensor (per sample), the parameters of every op and of the whole
// model are at most 2^53 (about 9.0e15), the largest integer a double holds
// exactly (FLOPs and bytes are doubles, parameter counts int64: a sum of
// counts this size cannot wrap). GraphBuilder refuses larger models with a
// UserError naming the layer.
constexpr std::int64_t kMaxModelCount = std::int64_t{1} << 53;
// The most ops a model may have (GPT-3 175B has about 2,400).
constexpr std::size_t kMaxModelOps = 1'000'000;
std::string ShapeToString(const Shape& shape);  // "64x56x56"

// What a kReshape op does with its input's elements.
enum class ViewKind : std::uint8_t {
  kView,        // same elements, other shape (reshape, flatten)
  kSlice,       // elements [begin, begin + size) of dimension `axis`
  kSplitHeads,  // (S, A*D) -> (A, S, D): attention heads to the front
  kMergeHeads,  // (A, S, D) -> (S, A*D): the inverse
  // (G, S, D) -> (G*R, S, D): each of G key/value heads repeated R times for
  // the query heads that share it (grouped-query attention without a fused
  // kernel); a copy, not a view.
  kRepeatHeads,
  // Mixture of experts (models/transformer_moe.cc): (S, H) -> (R, H), each
  // token copied to the rows of the experts its router chose (R = its
  // routed rows, top_k x S x the capacity factor); a copy.
  kDispatch,
  // The inverse: (R, H) -> (S, H), each token's expert outputs weighted by
  // its router probabilities and summed; a copy with FLOPs.
  kCombine,
};
// True for the views that copy their elements (kRepeatHeads, kDispatch,
// kCombine): they take time, unlike the views that share storage or read a
// part of it in place.
bool IsCopyView(ViewKind view);

// The cell of a kRecurrent layer (PyTorch nn.RNN, nn.LSTM, nn.GRU).
enum class RnnCell : std::uint8_t {
  kTanh,  // h' = tanh(W x + U h + b): 1 gate
  kLstm,  // input, forget, cell and output gates: 4
  kGru,   // reset, update and new gates: 3
};
const char* RnnCellName(RnnCell cell);
// Gates of the cell: 1, 4 or 3. Inline so that the exec kernels, which do
// not link the model library, read the same rule.
constexpr int RnnGates(RnnCell cell) {
  return cell == RnnCell::kLstm ? 4 : cell == RnnCell::kGru ? 3 : 1;
}

// Which fused attention kernel a kAttention op runs (a transformer's
// `attention:`): kDefault lets the framework profile choose, else the
// FlashAttention release of the GPU generation (sim/cost/flash_attention_table.h).
enum class AttentionKernel : std::uint8_t {
  kDefault,  // `flash`
  kFa2,      // FlashAttention-2 (Dao 2023)
  kFa3,      // FlashAttention-3 (Shah et al. 2024), Hopper only
  kCudnn,    // cuDNN's fused attention (Transformer Engine's FusedAttention)
  kSdpa,     // PyTorch's scaled_dot_product_attention (its flash backend: FlashAttention-2)
};
// "flash", "fa2", "fa3", "cudnn", "sdpa"
const char* AttentionKernelName(AttentionKernel kernel);

// Where an embedding's row indices come from.
enum class EmbeddingIds : std::uint8_t {
  kTokens,     // the input token ids
  kPositions,  // 0 .. S-1 (learned position table)
  kZeros,      // all 0 (a single-segment token-type table)
};

// The hyper-parameters exec/ needs to run an op for real; GraphBuilder sets
// them beside the shapes. Fields that do not apply to an op's kind keep
// their defaults.
struct OpAttrs {
  // kConv2d, kMaxPool, kAvgPool: the window, PyTorch semantics.
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int groups = 1;          // kConv2d
  bool ceil_mode = false;  // pools
  // kConv2d, kDense: a bias vector follows the weight in the op's params.
  bool bias = false;
  // kDense: the weight is the table of the kEmbedding op with this index
  // (a tied LM head); -1 = own weight.
  std::int64_t tied_to = -1;
  bool transpose_b = false;  // kMatMul: b stored (..., N, K)
  bool causal = false;       // kSoftmax, kAttention: mask future positions
  AttentionKernel attention_kernel = AttentionKernel::kDefault;  // kAttention
  double scale = 1.0;        // kSoftmax, kAttention: scores multiplied by this first
  int lrn_radius = 0;        // kLocalResponseNorm: depth radius
  ViewKind view = ViewKind::kView;  // kReshape
  int axis = 0;              // kSlice and kConcat: the dimension
  std::int64_t begin = 0;    // kSlice: first index kept
  EmbeddingIds ids = EmbeddingIds::kTokens;  // kEmbedding
  std::int64_t vocab = 0;    // kEmbedding: table rows; kSoftmaxCrossEntropy: classes
  RnnCell cell = RnnCell::kLstm;  // kRecurrent
  // Set by tensor-parallel sharding (plan::TensorParallelShard), which keeps
  // the shapes whole: this rank computes 1 / tensor_split of the op. A dense
  // layer's split is of its output features (column-parallel) or, when
  // tensor_split_input, of its input features (row-parallel); a matmul's is
  // of its heads (the leading dimension).
  int tensor_split = 1;
  bool tensor_split_input = false;
  // Mixture of experts: on a kDense of the routed experts, the number of
  // experts E it stands for (its params are E experts' weights; its rows
  // are the routed tokens, so its FLOPs are those of the k experts each
  // token visits); on a kReshape kDispatch/kCombine, the E of the layer.
  // 0 = not an expert op.
  int experts = 0;
  int top_k = 0;  // experts each token is routed to (with `experts`)
  // The busiest expert's share of the routed tokens over the mean (>= 1;
  // 1 = balanced), as measured; with expert parallelism the rank holding
  // it sets the pace (plan/expert_parallel.h).
  double expert_load_skew = 1.0;
  // Set by expert-parallel sharding (plan::ExpertParallelShard): this rank
  // holds experts / expert_split of the experts.
  int expert_split = 1;
};

struct Op {
  std::string name;     // unique in its graph, e.g. "layer1.0.conv1"
  OpKind kind = OpKind::kInput;
  std::vector<Shape> input_shapes;  // per sample
  Shape output_shape;               // per sample
  DType dtype = DType::kFp32;
  OpAttrs attrs;

  // Compute, per sample. Backward is split as frameworks split it: the
  // gradient with respect to the op's input (needed unless the op is first)
  // and with respect to its weights (only ops with parameters).
  double fwd_flops = 0;
  double bwd_input_flops = 0;
  double bwd_weight_flops = 0;

  // Trainable parameters (not scaled by batch).
  std::int64_t params = 0;

  // Memory traffic of the forward pass, in elements: activations read and
  // written per sample (weights are counted from `params`).
  double read_elements_per_sample = 0;
  double written_elements_per_sample = 0;
  // Elements kept from forward to backward, per sample (what activation
  // memory is made of).
  double saved_elements_per_sample = 0;

  // Bytes helpers using `dtype`.
  double ParamBytes() const { return static_cast<double>(params) * DTypeBytes(dtype); }
  double FwdBytes(double batch) const {
    return ParamBytes() +
           batch * (read_elements_per_sample + written_elements_per_sample) * DTypeBytes(dtype);
  }
  // Backward reads the saved activations and the output gradient, writes the
  // input gradient, and reads/writes weights and their gradients.
  double BwdBytes(double batch) const {
    return 2 * ParamBytes() +
           batch * (read_elements_per_sample + 2 * written_elements_per_sample) *
               DTypeBytes(dtype);
  }
  double ActivationBytes(double batch) const {
    return batch * saved_elements_per_sample * DTypeBytes(dtype);
  }
  bool HasParams() const { return params > 0; }
  // Parameters one token's activations meet: a routed-expert dense op's
  // top_k of the experts it holds (experts / expert_split), else all.
  std::int64_t ActiveParams() const {
    return attrs.experts > 0 && kind == OpKind::kDense
               ? params * attrs.expert_split / attrs.experts * attrs.top_k
               : params;
  }
};

}  // namespace dtsim::models
