// GraphBuilder: builds a ModelGraph op by op from shapes and layer
// hyper-parameters. Every number an Op carries (output shape, FLOPs, params,
// elements read/written/saved) is derived here; model definitions never type
// one in. The formulas are documented beside each method in graph_builder.cc.
//
// Conventions (see models/op.h): shapes exclude the batch dimension, images
// are (C, H, W), sequences (S, H); quantities are per sample; a multiply-add
// is 2 FLOPs; elementwise ops count every arithmetic operation and every
// transcendental (exp, tanh, rsqrt) as 1 FLOP.
//
// Saved activations are counted once per tensor: when two ops keep the same
// tensor for backward (a ReLU keeps its output, the next conv keeps that same
// tensor as its input), the first op to keep it owns it and the second adds
// nothing. Views (Reshape, Flatten) share their input's storage.
//
// Errors: a shape that does not fit the layer (dense on the wrong width,
// channels not divisible by groups, a window larger than its input, a
// duplicate op name) throws UserError without a location; the model-file
// parser adds file:line:column.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/graph.h"

namespace dtsim::models {

// A handle to the output of an op being built.
struct Tensor {
  OpId op = 0;  // the op producing this tensor
  Shape shape;  // per sample, without batch
};

// 2-D convolution, PyTorch Conv2d semantics (dilation 1).
struct ConvSpec {
  std::int64_t out_channels = 0;
  int kernel_h = 1;
  int kernel_w = 1;
  int stride_h = 1;
  int stride_w = 1;
  int pad_h = 0;      // zero rows added above AND below
  int pad_w = 0;      // zero columns added left AND right
  bool bias = true;   // a per-output-channel bias
  int groups = 1;     // in and out channels must both be divisible by it

  // Square kernel, equal strides and padding, with bias.
  static ConvSpec Square(std::int64_t out_channels, int kernel, int stride = 1, int pad = 0);
  // kernel_h x kernel_w kernel, stride 1, with bias (Inception's 1x7 / 7x1).
  static ConvSpec Rect(std::int64_t out_channels, int kernel_h, int kernel_w, int pad_h,
                       int pad_w);
  // This spec without its bias (convs followed by batch norm).
  ConvSpec NoBias() const;
};

// Max or average pooling, PyTorch MaxPool2d/AvgPool2d semantics.
struct PoolSpec {
  int kernel_h = 1;
  int kernel_w = 1;
  int stride_h = 1;
  int stride_w = 1;
  int pad_h = 0;
  int pad_w = 0;
  // Round the output size up instead of down (PyTorch ceil_mode; also gives
  // TensorFlow's 'SAME' output size for stride 2 windows of 3).
  bool ceil_mode = false;

  static PoolSpec Square(int kernel, int stride, int pad = 0);
  PoolSpec WithCeilMode() const;
};

// Fully connected layer on the last dimension.
struct DenseSpec {
  std::int64_t out_features = 0;
  bool bias = true;
  // The weight is shared with an embedding table (tied LM head): its params
  // are counted by the embedding, not here. FLOPs and the weight gradient
  // are still counted here, where they are computed.
  bool tied_weight = false;
  // > 0: the routed experts of a mixture-of-experts layer, `experts` dense
  // layers of this shape of which each row (a routed token) visits one: the
  // params count all of them, the FLOPs and traffic the rows given.
  int experts = 0;
  int top_k = 0;                  // with `experts`: experts per token
  double expert_load_skew = 1.0;  // with `experts`: OpAttrs::expert_load_skew
};

// A mixture-of-experts layer's routing (models/transformer_moe.cc).
struct RoutingSpec {
  int experts = 0;                // E
  int top_k = 0;                  // k, experts per token
  std::int64_t rows = 0;          // R, routed rows per sample (k x S x capacity factor)
  double expert_load_skew = 1.0;  // OpAttrs::expert_load_skew
};

// Softmax options.
struct SoftmaxSpec {
  // Causal (decoder) attention: input (A, S, S) scores, query i sees keys <= i.
  bool causal = false;
  // Multiplies the input first (attention's 1/sqrt(D)).
  double scale = 1.0;
};

// Batched matrix product of two activations.
struct MatMulSpec {
  // b is stored (..., N, K) and used transposed (attention scores Q K^T).
  bool transpose_b = false;
};

// Layer norm options.
struct LayerNormSpec {
  bool bias = true;  // a learned shift besides the scale (PyTorch LayerNorm(bias=...))
};

// Fused scaled-dot-product attention options.
struct AttentionSpec {
  bool causal = false;  // query i sees keys <= i
  double scale = 1.0;   // scores multiplied by this before the softmax
  AttentionKernel kernel = AttentionKernel::kDefault;  // Attention only: which fused kernel
};

// A recurrent layer over a sequence (PyTorch nn.RNN/LSTM/GRU, one layer, one
// direction, batch_first, with both bias vectors).
struct RecurrentSpec {
  RnnCell cell = RnnCell::kLstm;
  std::int64_t hidden = 0;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string model_name);

  // A data source of the given per-sample shape (image, token ids).
  Tensor Input(const std::string& name, Shape shape);

  // x: (C, H, W) -> (out_channels, OH, OW).
  Tensor Conv2d(const std::string& name, const Tensor& x, const ConvSpec& spec);
  // x: (..., in) -> (..., out_features).
  Tensor Dense(const std::string& name, const Tensor& x, const DenseSpec& spec);
  // a: (..., M, K), b: (..., K, N) (or (..., N, K) with transpose_b) with the
  // same leading dimensions -> (..., M, N).
  Tensor MatMul(const std::string& name, const Tensor& a, const Tensor& b,
                const MatMulSpec& spec = {});

  // x: (C, H, W) -> (C, OH, OW).
  Tensor MaxPool(const std::string& name, const Tensor& x, const PoolSpec& spec);
  Tensor AvgPool(const std::string& name, const Tensor& x, const PoolSpec& spec);
  // Average over the whole H x W plane: (C, H, W) -> (C, 1, 1).
  Tensor GlobalAvgPool(const std::string& name, const Tensor& x);

  // Elementwise activations; the shape is unchanged.
  Tensor Relu(const std::string& name, const Tensor& x);
  Tensor Gelu(const std::string& name, const Tensor& x);
  Tensor Tanh(const std::string& name, const Tensor& x);
  Tensor Dropout(const std::string& name, const Tensor& x);
  Tensor Sigmoid(const std::string& name, const Tensor& x);
  // x * sigmoid(x) (SiLU, Swish).
  Tensor Silu(const std::string& name, const Tensor& x);
  // a * b elementwise; b has a's rank and each of its dimensions equals a's
  // or is 1 (broadcast: squeeze-excitation's (C, 1, 1) channel scales).
  Tensor Mul(const std::string& name, const Tensor& a, const Tensor& b);
  // Rotary position embedding of x (A, S, D), D even: each pair of features
  // rotated by its position's angle (Su et al. 2021). No parameters.
  Tensor Rotary(const std::string& name, const Tensor& x);

  // Batch norm over dimension 0 (channels of (C, H, W), features of (C)).
  Tensor BatchNorm(const std::string& name, const Tensor& x);
  // Layer norm over the last dimension.
  Tensor LayerNorm(const std::string& name, const Tensor& x, const LayerNormSpec& spec);
  Tensor LayerNorm(const std::string& name, const Tensor& x) { return LayerNorm(name, x, {}); }
  // RMS norm over the last dimension with a learned scale (Zhang & Sennrich
  // 2019; Llama's RMSNorm): no mean, no bias.
  Tensor RmsNorm(const std::string& name, const Tensor& x);
  // Local response normalisation across channels of (C, H, W), TensorFlow
  // tf.nn.local_response_normalization: window of 2 * depth_radius + 1.
  Tensor LocalResponseNorm(const std::string& name, const Tensor& x, int depth_radius);
  // Softmax over the last dimension.
  Tensor Softmax(const std::string& name, const Tensor& x, const SoftmaxSpec& spec);
  Tensor Softmax(const std::string& name, const Tensor& x) { return Softmax(name, x, {}); }
  // The loss: softmax over the last dimension of `logits` (which must be
  // `classes`) and cross entropy, averaged to one scalar per sample.
  Tensor SoftmaxCrossEntropy(const std::string& name, const Tensor& logits,
                             std::int64_t classes);

  // ids: any shape of integer ids -> ids.shape + (hidden). A table of
  // vocab x hidden. Position and token-type tables read the token ids only
  // for their shape (their ids are 0..S-1 and the segment ids).
  // `rows` says which table rows are read: the ids, positions 0..S-1, or 0.
  Tensor Embedding(const std::string& name, const Tensor& ids, std::int64_t vocab,
                   std::int64_t hidden, EmbeddingIds rows = EmbeddingIds::kTokens);

  // a + b, same shapes (no broadcasting).
  Tensor Add(const std::string& name, const Tensor& a, const Tensor& b);
  // Joins `parts` along `axis` (0 = channels of an image); other dimensions
  // must be equal. REQUIRES: at least two parts.
  Tensor Concat(const std::string& name, const std::vector<Tensor>& parts, int axis = 0);

  // Fused attention (FlashAttention: Dao et al. 2022, 2023): q (A, S, D),
  // k (G, S, D), v (G, S, Dv) with A divisible by G (grouped-query attention:
  // each key/value head serves A / G query heads) -> (A, S, Dv). No S x S
  // tensor is stored or kept.
  Tensor Attention(const std::string& name, const Tensor& q, const Tensor& k, const Tensor& v,
                   const AttentionSpec& spec);
  // x (S, I) -> (S, hidden), the hidden state at every step.
  Tensor Recurrent(const std::string& name, const Tensor& x, const RecurrentSpec& spec);
  // (G, S, D) -> (G * repeats, S, D), each head repeated `repeats` times in
  // place (grouped-query attention's key/value heads for unfused kernels,
  // as Hugging Face's repeat_kv): a copy.
  Tensor RepeatHeads(const std::string& name, const Tensor& x, std::int64_t repeats);
  // Mixture of experts. Dispatch: x (S, H) and the router's probabilities
  // probs (S, E) -> (R, H), each token copied to the rows of the experts it
  // is routed to: a copy, no FLOPs; backward sums each token's R / S row
  // gradients (R H adds). Keeps nothing but the routing (indices, small).
  Tensor Dispatch(const std::string& name, const Tensor& x, const Tensor& probs,
                  const RoutingSpec& spec);
  // Combine: the experts' rows y (R, H) and probs (S, E) -> (S, H), each
  // token's rows weighted by its probabilities and summed: 2 R H FLOPs;
  // backward 3 R H (the rows' gradients, and the probabilities' as dot
  // products). Keeps y and probs.
  Tensor Combine(const std::string& name, const Tensor& y, const Tensor& probs,
                 const RoutingSpec& spec);

  // Views (free, share storage): same number of elements in another shape.
  Tensor Reshape(const std::string& name, const Tensor& x, Shape shape);
  // Attention heads: (S, A*D) -> (A, S, D) and back (views of a transpose).
  Tensor SplitHeads(const std::string& name, const Tensor& x, std::int64_t heads);
  Tensor MergeHeads(const std::string& name, const Tensor& x);
  // (C, H, W) -> (C*H*W).
  Tensor Flatten(const std::string& name, const Tensor& x);
  // Elements [begin, begin + size) of dimension `axis` (a strided view, as
  // PyTorch's split/narrow; BERT's first-token select).
  Tensor Slice(const std::string& name, const Tensor& x, int axis, std::int64_t begin,
               std::int64_t size);

  const ModelGraph& graph() const { return graph_; }
  // Validates the graph and hands it over; the builder is empty afterwards.
  // Throws UserError when the last op is not a loss (backward starts there).
  ModelGraph Finish(std::string description);

 private:
  // Which tensors an op keeps for its backward pass.
  struct Saves {
    std::vector<std::size_t> inputs = {};  // indices into the op's inputs
    bool output = false;              // its own output
    double extra_elements = 0;        // new storage: masks, statistics
  };

  Tensor Emit(Op op, const std::vector<Tensor>& inputs, const Saves& saves);
  Tensor Elementwise(const std::string& name, OpKind kind, const Tensor& x,
                     double fwd_per_element, double bwd_per_element, const Saves& saves);
  Tensor Pool(const std::string& name, OpKind kind, const Tensor& x, const PoolSpec& spec);
  Tensor View(const std::string& name, OpKind kind, const Tensor& x, Shape shape,
              bool shares_storage, const OpAttrs& attrs);
  // Elements of `t` not yet kept by an earlier op; marks them kept.
  double Keep(const Tensor& t);

  ModelGraph graph_;
  std::int64_t params_ = 0;       // parameters of the ops so far (<= kMaxModelCount)
  std::vector<OpId> storage_of_;  // per op: the op whose output holds its data
  std::vector<bool> kept_;        // per op: its output is already saved
};

}  // namespace dtsim::models
