#include "exec/runtime/model_runtime.h"
#include "exec/runtime/runtime_util.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"
#include "exec/counter_rng.h"

namespace dtsim::exec {

using models::Op;
using models::OpId;
using models::OpKind;
using models::Shape;
using models::ViewKind;

namespace {

using runtime_util::Elements;
constexpr auto Prod = runtime_util::Product;

// Seeds of the parameter stream and the dropout stream.
constexpr std::uint64_t kParamStream = 0x7061'7261'6d73ULL;    // "params"
constexpr std::uint64_t kDropoutStream = 0x6472'6f70'6f75ULL;  // "dropou"

// Floats of one op's buffers for one slot of `b` samples (Allocate): its
// output and output gradient, and what its backward keeps (held ops only).
struct SlotBuffers {
  std::int64_t act = 0, grad = 0, aux1 = 0, aux2 = 0;
};

SlotBuffers SlotBufferSizes(const Op& op, std::int64_t b, bool held) {
  SlotBuffers s;
  const std::int64_t out = Elements(op.output_shape);
  s.act = b * out;
  if (op.kind != OpKind::kInput) s.grad = b * out;
  if (!held) return s;
  const Shape& in = op.input_shapes.empty() ? op.output_shape : op.input_shapes[0];
  switch (op.kind) {
    case OpKind::kLayerNorm: s.aux1 = s.aux2 = b * Elements(in) / in.back(); break;  // mean, rstd
    case OpKind::kRmsNorm: s.aux1 = b * Elements(in) / in.back(); break;             // rstd
    case OpKind::kAttention: s.aux1 = b * in[0] * in[1]; break;  // log-sum-exp per query row
    case OpKind::kRecurrent: {
      const runtime_util::RecurrentBuffers r(op, b);
      s.aux1 = r.saved();
      s.aux2 = r.scratch();
      break;
    }
    case OpKind::kBatchNorm: s.aux1 = s.aux2 = in[0]; break;
    case OpKind::kDropout: s.aux1 = b * out; break;  // mask
    case OpKind::kSoftmaxCrossEntropy:
      s.aux1 = b * Elements(in);                // probabilities
      s.aux2 = b * Elements(in) / in.back();    // loss per row
      break;
    case OpKind::kSoftmax: s.aux1 = b * out; break;  // scratch
    case OpKind::kEmbedding:
      // Row indices for position and zero tables.
      if (op.attrs.ids != models::EmbeddingIds::kTokens) s.aux1 = b * Elements(in);
      break;
    default: break;
  }
  return s;
}

}  // namespace

std::int64_t ModelRuntime::BufferFloats(const models::ModelGraph& graph,
                                        const RuntimeOptions& options) {
  const OpId begin = options.begin, end = options.end == 0 ? graph.num_ops() : options.end;
  std::vector<bool> used(graph.num_ops(), false);
  std::vector<bool> copies(graph.num_ops(), false);
  for (OpId v = begin; v < end; ++v) {
    used[v] = true;
    for (OpId in : graph.inputs(v)) used[in] = true;
    const Op& op = graph.op(v);
    if (op.kind == OpKind::kDense && op.attrs.tied_to >= 0) {
      const auto table = static_cast<OpId>(op.attrs.tied_to);
      if (table < begin || table >= end) copies[table] = true;
    }
  }
  std::int64_t floats = 0;
  for (OpId v = 0; v < graph.num_ops(); ++v) {
    const Op& op = graph.op(v);
    const bool held = v >= begin && v < end;
    if (held || copies[v]) floats += 2 * op.params;  // parameters and gradients
    if (!used[v]) continue;
    const SlotBuffers s = SlotBufferSizes(op, options.micro_batch, held);
    floats += options.slots * (s.act + s.grad + s.aux1 + s.aux2);
    if (held && op.kind == OpKind::kSoftmaxCrossEntropy)
      floats += options.slots * options.micro_batch * Elements(op.input_shapes[0]) /
                op.input_shapes[0].back();  // labels
  }
  return floats;
}

std::string ModelRuntime::UnsupportedOps(const models::ModelGraph& graph) {
  for (OpId v = 0; v < graph.num_ops(); ++v) {
    const Op& op = graph.op(v);
    // Routing copies (experts' dispatch and combine) have no kernel yet.
    const bool routing = op.kind == OpKind::kReshape && models::IsCopyView(op.attrs.view) &&
                         op.attrs.view != models::ViewKind::kRepeatHeads;
    const bool mul = op.kind == OpKind::kMul;
    const bool runs = !routing && op.attrs.experts == 0 &&
                      (!mul || runtime_util::MulLayoutOf(op).has_value());
    if (!runs) {
      return "op '" + op.name + "' (" + models::OpKindName(op.kind) +
             (op.attrs.experts > 0 || routing ? ", mixture of experts"
              : mul                           ? ", a broadcast other than per row or per column"
                                              : "") +
             ") has no kernel in dtsim exec yet; dtsim run and dtsim search price it";
    }
  }
  return "";
}

ModelRuntime::ModelRuntime(const models::ModelGraph& graph, Backend& backend,
                           const RuntimeOptions& options)
    : graph_(graph), backend_(backend), options_(options) {
  if (const std::string why = UnsupportedOps(graph); !why.empty())
    throw UserError(why, "dtsim exec runs dense models: CNNs, transformers (GPT, BERT, "
                         "Llama-style) and recurrent layers");
  if (options_.end == 0) options_.end = graph.num_ops();
  DTSIM_CHECK(options_.micro_batch >= 1 && options_.slots >= 1, "bad runtime options");
  DTSIM_CHECK(options_.begin < options_.end && options_.end <= graph.num_ops(), "bad op range");
  if (options_.samples_per_step == 0) options_.samples_per_step = options_.micro_batch;
  ops_.resize(graph.num_ops());
  // Which ops this stage touches, and its boundaries.
  std::vector<bool> used(graph.num_ops(), false);
  for (OpId v = begin(); v < end(); ++v) {
    used[v] = true;
    const Op& op = graph.op(v);
    if (op.kind == OpKind::kInput) data_inputs_.push_back(v);
    for (OpId in : graph.inputs(v)) {
      if (Holds(in) || used[in]) continue;
      used[in] = true;
      if (graph.op(in).kind == OpKind::kInput)
        data_inputs_.push_back(in);
      else
        boundary_inputs_.push_back(in);
    }
    for (OpId c : graph.consumers(v))
      if (c >= end()) {
        boundary_outputs_.push_back(v);
        break;
      }
    if (op.kind == OpKind::kSoftmaxCrossEntropy) {
      loss_op_ = v;
      has_loss_ = true;
    }
    if (op.kind == OpKind::kDense && op.attrs.tied_to >= 0 &&
        !Holds(static_cast<OpId>(op.attrs.tied_to))) {
      // A tied head whose table is in another stage uses a copy of it here
      // (kept equal by the plan's all-reduce of its gradient, Megatron-LM's
      // embedding group).
      const auto table = static_cast<OpId>(op.attrs.tied_to);
      if (std::find(weight_copies_.begin(), weight_copies_.end(), table) == weight_copies_.end())
        weight_copies_.push_back(table);
    }
    if (op.kind == OpKind::kDense && op.attrs.tied_to < 0 && op.params == 0)
      throw UserError("op '" + op.name + "' has a tied weight without an embedding to share");
  }
  std::sort(data_inputs_.begin(), data_inputs_.end());
  std::sort(boundary_inputs_.begin(), boundary_inputs_.end());
  std::sort(weight_copies_.begin(), weight_copies_.end());
  std::int64_t global = 0;
  std::vector<std::int64_t> global_offset(graph.num_ops(), 0);
  for (OpId v = 0; v < graph.num_ops(); ++v) {
    const Op& op = graph.op(v);
    global_offset[v] = global;
    if (used[v]) {
      ops_[v] = std::make_unique<OpState>();
      ops_[v]->out = Elements(op.output_shape);
      ops_[v]->global_offset = global;
      if (Holds(v)) {
        ops_[v]->params = {num_params_, op.params};
        num_params_ += op.params;
      }
    }
    global += op.params;
  }
  own_params_ = num_params_;
  // Copies of shared tables follow the stage's own parameters.
  for (OpId table : weight_copies_) {
    DTSIM_CHECK(!used[table], "a shared table that the stage also reads");
    ops_[table] = std::make_unique<OpState>();
    ops_[table]->weight_copy = true;
    ops_[table]->global_offset = global_offset[table];
    ops_[table]->params = {num_params_, graph.op(table).params};
    num_params_ += graph.op(table).params;
  }
  Allocate();
  InitParams();
}

ModelRuntime::~ModelRuntime() {
  for (auto& s : ops_) {
    if (!s) continue;
    for (auto* list : {&s->act, &s->grad, &s->aux1, &s->aux2})
      for (float* p : *list) backend_.Free(p);
  }
  for (float* p : labels_) backend_.Free(p);
  backend_.Free(boundary_scratch_);
  backend_.Free(params_);
  backend_.Free(grads_);
}

void ModelRuntime::Allocate() {
  const std::int64_t b = options_.micro_batch;
  params_ = backend_.Allocate(num_params_);
  grads_ = backend_.Allocate(num_params_);
  backend_.Fill(grads_, num_params_, 0.0f);
  for (OpId v = 0; v < graph_.num_ops(); ++v) {
    OpState* s = ops_[v].get();
    if (!s || s->weight_copy) continue;
    const Op& op = graph_.op(v);
    const int slots = options_.slots;
    s->act.assign(slots, nullptr);
    s->grad.assign(slots, nullptr);
    s->aux1.assign(slots, nullptr);
    s->aux2.assign(slots, nullptr);
    s->backward_done.assign(slots, false);
    const SlotBuffers sizes = SlotBufferSizes(op, b, Holds(v));
    for (int k = 0; k < slots; ++k) {
      s->act[k] = backend_.Allocate(sizes.act);
      if (sizes.grad > 0) s->grad[k] = backend_.Allocate(sizes.grad);
      if (sizes.aux1 > 0) s->aux1[k] = backend_.Allocate(sizes.aux1);
      if (sizes.aux2 > 0) s->aux2[k] = backend_.Allocate(sizes.aux2);
    }
    if (v == loss_op_ && has_loss_) {
      labels_.assign(static_cast<std::size_t>(slots), nullptr);
      for (auto& p : labels_) p = backend_.Allocate(b * label_elements());
    }
    if (Holds(v) && op.kind == OpKind::kEmbedding &&
        op.attrs.ids != models::EmbeddingIds::kTokens) {
      const std::int64_t per = Elements(op.input_shapes[0]);
      std::vector<float> ids(static_cast<std::size_t>(b * per), 0.0f);
      if (op.attrs.ids == models::EmbeddingIds::kPositions)
        for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<float>(i % per);
      for (int k = 0; k < slots; ++k) backend_.Upload(s->aux1[k], ids.data(), b * per);
    }
  }
}

// Weights: uniform in +-1/sqrt(fan_in) (PyTorch's default bound for Linear
// and Conv2d, kaiming_uniform with a = sqrt(5)); embeddings: uniform with
// standard deviation 0.02 (GPT-2's initializer range); biases and norm
// shifts 0, norm gains 1.
void ModelRuntime::InitParams() {
  std::vector<float> host(static_cast<std::size_t>(num_params_), 0.0f);
  std::vector<OpId> held;
  for (OpId v = begin(); v < end(); ++v) held.push_back(v);
  // A copy starts from the values its table starts from in its own stage.
  held.insert(held.end(), weight_copies_.begin(), weight_copies_.end());
  for (OpId v : held) {
    const Op& op = graph_.op(v);
    if (op.params == 0) continue;
    const OpState& s = *ops_[v];
    float* p = host.data() + s.params.offset;
    std::int64_t weights = op.params;
    double bound = 0;
    const Shape& in = op.input_shapes[0];
    switch (op.kind) {
      case OpKind::kConv2d: {
        weights = op.params - (op.attrs.bias ? op.output_shape[0] : 0);
        const double fan_in = static_cast<double>(in[0] / op.attrs.groups) *
                              op.attrs.kernel_h * op.attrs.kernel_w;
        bound = 1.0 / std::sqrt(fan_in);
        break;
      }
      case OpKind::kDense:
        weights = op.attrs.tied_to >= 0 ? 0 : op.params - (op.attrs.bias ? op.output_shape.back() : 0);
        bound = 1.0 / std::sqrt(static_cast<double>(in.back()));
        break;
      case OpKind::kEmbedding: bound = 0.02 * std::sqrt(3.0); break;
      case OpKind::kLayerNorm:
      case OpKind::kBatchNorm:
        std::fill(p, p + op.params / 2, 1.0f);
        continue;
      case OpKind::kRmsNorm:  // a gain and no bias
        std::fill(p, p + op.params, 1.0f);
        continue;
      case OpKind::kRecurrent:  // every weight and bias, as PyTorch's RNNs
        weights = op.params;
        bound = 1.0 / std::sqrt(static_cast<double>(op.output_shape[1]));
        break;
      default: DTSIM_CHECK(false, "op kind with parameters: " + op.name);
    }
    for (std::int64_t i = 0; i < weights; ++i) {
      const float u = CounterUniform(options_.seed ^ kParamStream,
                                     static_cast<std::uint64_t>(s.global_offset + i));
      p[i] = static_cast<float>((2.0 * u - 1.0) * bound);
    }
  }
  backend_.Upload(params_, host.data(), num_params_);
}

ParamRange ModelRuntime::OpParams(OpId op) const {
  DTSIM_CHECK(Holds(op), "op outside the stage");
  return ops_[op]->params;
}

ParamRange ModelRuntime::WeightParams(OpId op) const {
  DTSIM_CHECK(Holds(op) || std::binary_search(weight_copies_.begin(), weight_copies_.end(), op),
              "op neither in the stage nor a copy it holds");
  return ops_[op]->params;
}

void ModelRuntime::ZeroGrads() { backend_.Fill(grads_, num_params_, 0.0f); }

std::vector<float> ModelRuntime::DownloadParams() const {
  std::vector<float> host(static_cast<std::size_t>(num_params_));
  backend_.Download(host.data(), params_, num_params_);
  return host;
}

void ModelRuntime::UploadParams(const std::vector<float>& host) {
  DTSIM_CHECK(static_cast<std::int64_t>(host.size()) == num_params_, "parameter count");
  backend_.Upload(params_, host.data(), num_params_);
}

float* ModelRuntime::Act(OpId op, int slot) { return ops_[op]->act[static_cast<std::size_t>(slot)]; }
float* ModelRuntime::Grad(OpId op, int slot) { return ops_[op]->grad[static_cast<std::size_t>(slot)]; }

const float* ModelRuntime::InputAct(OpId op, std::size_t i, int slot) {
  return Act(graph_.inputs(op)[i], slot);
}

// Null for graph inputs (data has no gradient).
float* ModelRuntime::InputGrad(OpId op, std::size_t i, int slot) {
  return Grad(graph_.inputs(op)[i], slot);
}

std::int64_t ModelRuntime::input_elements() const {
  return data_inputs_.empty() ? 0 : ops_[data_inputs_[0]]->out;
}
bool ModelRuntime::reads_data() const { return !data_inputs_.empty(); }

void ModelRuntime::SetInput(int slot, const float* host) {
  if (data_inputs_.empty()) return;
  const OpId in = data_inputs_[0];
  backend_.Upload(Act(in, slot), host, options_.micro_batch * ops_[in]->out);
}

std::int64_t ModelRuntime::label_elements() const {
  if (!has_loss_) return 0;
  const Shape& logits = graph_.op(loss_op_).input_shapes[0];
  return Elements(logits) / logits.back();
}
bool ModelRuntime::holds_loss() const { return has_loss_; }

void ModelRuntime::SetLabels(int slot, const float* host) {
  if (!has_loss_) return;
  backend_.Upload(labels_[static_cast<std::size_t>(slot)], host,
                  options_.micro_batch * label_elements());
}

std::int64_t ModelRuntime::boundary_input_elements() const {
  std::int64_t n = 0;
  for (OpId v : boundary_inputs_) n += ops_[v]->out;
  return n * options_.micro_batch;
}

std::int64_t ModelRuntime::boundary_output_elements() const {
  std::int64_t n = 0;
  for (OpId v : boundary_outputs_) n += ops_[v]->out;
  return n * options_.micro_batch;
}

void ModelRuntime::SetBoundaryInputs(int slot, const float* host) {
  for (OpId v : boundary_inputs_) {
    const std::int64_t n = ops_[v]->out * options_.micro_batch;
    backend_.Upload(Act(v, slot), host, n);
    backend_.Fill(Grad(v, slot), n, 0.0f);
    host += n;
  }
}

void ModelRuntime::GetBoundaryOutputs(int slot, float* host) {
  for (OpId v : boundary_outputs_) {
    const std::int64_t n = ops_[v]->out * options_.micro_batch;
    backend_.Download(host, Act(v, slot), n);
    host += n;
  }
}

void ModelRuntime::SetBoundaryOutputGrads(int slot, const float* host) {
  // Added to what the stage's own consumers contribute (an output read both
  // inside and after the stage), through one upload of the whole message.
  if (boundary_outputs_.empty()) return;
  if (!boundary_scratch_) boundary_scratch_ = backend_.Allocate(boundary_output_elements());
  backend_.Upload(boundary_scratch_, host, boundary_output_elements());
  const float* from = boundary_scratch_;
  for (OpId v : boundary_outputs_) {
    const std::int64_t n = ops_[v]->out * options_.micro_batch;
    backend_.Axpy(n, 1.0f, from, Grad(v, slot));
    from += n;
  }
}

void ModelRuntime::GetBoundaryInputGrads(int slot, float* host) {
  for (OpId v : boundary_inputs_) {
    const std::int64_t n = ops_[v]->out * options_.micro_batch;
    backend_.Download(host, Grad(v, slot), n);
    host += n;
  }
}

void ModelRuntime::ForwardAll(int slot) {
  for (OpId v = begin(); v < end(); ++v) Forward(v, slot);
}

void ModelRuntime::BackwardAll(int slot) {
  for (OpId v = end(); v-- > begin();) Backward(v, slot);
}

double ModelRuntime::Loss(int slot) {
  DTSIM_CHECK(has_loss_, "Loss() on a stage without the loss");
  const std::int64_t rows = options_.micro_batch * label_elements();
  std::vector<float> losses(static_cast<std::size_t>(rows));
  backend_.Download(losses.data(), ops_[loss_op_]->aux2[static_cast<std::size_t>(slot)], rows);
  double sum = 0;
  for (float l : losses) sum += l;
  return sum / static_cast<double>(rows);
}

std::int64_t ModelRuntime::Correct(int slot) {
  DTSIM_CHECK(has_loss_, "Correct() on a stage without the loss");
  const std::int64_t rows = options_.micro_batch * label_elements();
  const std::int64_t classes = graph_.op(loss_op_).input_shapes[0].back();
  std::vector<float> probs(static_cast<std::size_t>(rows * classes));
  std::vector<float> labels(static_cast<std::size_t>(rows));
  const auto k = static_cast<std::size_t>(slot);
  backend_.Download(probs.data(), ops_[loss_op_]->aux1[k], rows * classes);
  backend_.Download(labels.data(), labels_[k], rows);
  std::int64_t correct = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* p = probs.data() + r * classes;
    const auto best = std::max_element(p, p + classes) - p;
    if (best == static_cast<std::int64_t>(labels[static_cast<std::size_t>(r)])) ++correct;
  }
  return correct;
}

double ModelRuntime::ForwardFlops() const {
  double f = 0;
  for (OpId v = begin(); v < end(); ++v) f += graph_.op(v).fwd_flops;
  return f * static_cast<double>(options_.micro_batch);
}

double ModelRuntime::BackwardFlops() const {
  double f = 0;
  for (OpId v = begin(); v < end(); ++v)
    f += graph_.op(v).bwd_input_flops + graph_.op(v).bwd_weight_flops;
  return f * static_cast<double>(options_.micro_batch);
}

}  // namespace dtsim::exec
