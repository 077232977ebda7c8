// ModelRuntime: runs a contiguous range of a model graph's ops (a pipeline
// stage, or the whole model) for real on a Backend: parameters, gradients,
// activations per micro-batch slot, forward and backward op by op. It reads
// the same models::ModelGraph the planner partitions and the simulator
// prices; every op's FLOPs stay those of models::Op.
//
// Layout:
//   - Parameters of the stage are one flat buffer, op by op in graph order,
//     each op's weight first, then its bias (norms: gamma, then beta). The
//     same layout holds for gradients and optimizer state, so collectives
//     and checkpoints address parameters as ranges of one buffer.
//   - Parameter j of the WHOLE model (global flat index) is initialised from
//     CounterUniform(seed, j), so a stage holds exactly the values the
//     unsplit model holds: pipeline and data-parallel runs start from the
//     same parameters as one worker.
//   - Activations live per slot (a micro-batch in flight) and op, batch
//     first: (micro_batch, op.output_shape...).
//
// Shared weights: a tied LM head whose embedding table is in another stage
// reads a copy of the table held after the stage's own parameters
// (own_params() .. num_params()), initialised like the table; the plan's
// all-reduce of the table's gradient between the stages (Megatron-LM's
// embedding group) keeps the copies equal.
//
// Boundaries: ops outside the range whose outputs the range reads (other
// than graph inputs) are its boundary inputs; the caller supplies their
// activations (SetBoundaryInputs) and takes their gradients back
// (GetBoundaryInputGrads). Ops in the range read by later ops are its
// boundary outputs (GetBoundaryOutputs / SetBoundaryOutputGrads). Both are
// packed, op by op, in graph order.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "exec/backend.h"
#include "models/graph.h"

namespace dtsim::exec {

struct RuntimeOptions {
  // Samples per forward pass (one micro-batch). >= 1.
  std::int64_t micro_batch = 32;
  // Micro-batches whose activations are kept at once (pipeline schedules
  // keep several in flight). >= 1.
  int slots = 1;
  // The ops this runtime holds: [begin, end); end = 0 means all ops.
  models::OpId begin = 0;
  models::OpId end = 0;
  // Parameter initialisation and dropout masks.
  std::uint64_t seed = 1;
  // Dropout probability of every kDropout op (the zoo records none; 0 keeps
  // runs exactly reproducible across parallelisations).
  float dropout = 0.0f;
  // The loss gradient is divided by this many samples: the samples that
  // contribute to one optimizer step on this replica (micro_batch x
  // micro-batches). 0 = micro_batch.
  std::int64_t samples_per_step = 0;
  // Layer and batch norm epsilon.
  float norm_eps = 1e-5f;
};

// [offset, offset + count) of the stage's flat parameter buffer.
struct ParamRange {
  std::int64_t offset = 0;
  std::int64_t count = 0;
};

class ModelRuntime {
 public:
  // Throws UserError when an op in the range cannot run for real (a tied
  // head without a table, a boundary input that is not a whole tensor).
  // `graph` and `backend` must outlive the runtime.
  ModelRuntime(const models::ModelGraph& graph, Backend& backend, const RuntimeOptions& options);
  ~ModelRuntime();
  ModelRuntime(const ModelRuntime&) = delete;
  // Floats a runtime for `graph` and `options` allocates on its backend
  // (parameters with copies of shared tables, gradients, every slot's
  // activations, their gradients and the ops' scratch, labels), computed
  // without allocating: what a run needs before it starts.
  static std::int64_t BufferFloats(const models::ModelGraph& graph, const RuntimeOptions& options);
  // "" when every op of `graph` has kernels here; otherwise which op (the
  // first) has none and what to do instead. The constructor throws it.
  static std::string UnsupportedOps(const models::ModelGraph& graph);
  ModelRuntime& operator=(const ModelRuntime&) = delete;

  const RuntimeOptions& options() const { return options_; }
  const models::ModelGraph& graph() const { return graph_; }
  Backend& backend() { return backend_; }
  models::OpId begin() const { return options_.begin; }
  models::OpId end() const { return options_.end; }
  bool Holds(models::OpId op) const { return op >= begin() && op < end(); }

  // ---- parameters
  // The stage's parameters, copies of shared tables included.
  std::int64_t num_params() const { return num_params_; }
  // The parameters of the ops in the range: the first own_params() of the
  // buffer.
  std::int64_t own_params() const { return own_params_; }
  // Tables of other stages this stage holds copies of, ascending.
  const std::vector<models::OpId>& weight_copies() const { return weight_copies_; }
  // The stage's parameters, gradients (backend buffers, num_params() each).
  float* params() { return params_; }
  float* grads() { return grads_; }
  ParamRange OpParams(models::OpId op) const;
  // An op's parameters in the buffer: a held op's, or a copied table's.
  ParamRange WeightParams(models::OpId op) const;
  // Zeroes every parameter gradient.
  void ZeroGrads();
  // Host copies.
  std::vector<float> DownloadParams() const;
  void UploadParams(const std::vector<float>& host);

  // ---- data (host buffers)
  // The graph's input op(s) this stage reads, in graph order (token ids or
  // images); SetInput fills the first one, whose per-sample size is
  // input_elements(). Stages without data inputs ignore it.
  std::int64_t input_elements() const;
  bool reads_data() const;
  void SetInput(int slot, const float* host);
  // Labels of the loss (classes or next tokens): label_elements() floats
  // per sample. Only the stage holding the loss needs them.
  std::int64_t label_elements() const;
  bool holds_loss() const;
  void SetLabels(int slot, const float* host);

  // ---- pipeline boundaries (per micro-batch, packed in graph order)
  const std::vector<models::OpId>& boundary_inputs() const { return boundary_inputs_; }
  const std::vector<models::OpId>& boundary_outputs() const { return boundary_outputs_; }
  std::int64_t boundary_input_elements() const;
  std::int64_t boundary_output_elements() const;
  void SetBoundaryInputs(int slot, const float* host);
  void GetBoundaryOutputs(int slot, float* host);
  void SetBoundaryOutputGrads(int slot, const float* host);
  void GetBoundaryInputGrads(int slot, float* host);

  // ---- compute
  // The step number feeds dropout masks (set once per iteration).
  void SetStep(std::int64_t step) { step_ = step; }
  // REQUIRES: Holds(op); its inputs in this slot are set or computed.
  void Forward(models::OpId op, int slot);
  // Adds op's gradients (input and parameter) for this slot. Calling it
  // twice for the same forward is a no-op the second time (plans split an
  // op's backward into input and weight tasks; both map here).
  void Backward(models::OpId op, int slot);
  void ForwardAll(int slot);
  void BackwardAll(int slot);
  // Mean loss over the slot's micro-batch (per sample; token losses are
  // averaged over the sequence too). REQUIRES: holds_loss().
  double Loss(int slot);
  // Rows of the slot's micro-batch (samples; tokens of token losses) whose
  // largest predicted probability is at their label, after a forward:
  // top-1 accuracy = Correct / (micro_batch x label_elements()). Ties go to
  // the lowest class. REQUIRES: holds_loss().
  std::int64_t Correct(int slot);

  // Per micro-batch FLOPs of the stage's forward and backward, from
  // models::Op (what the simulator prices).
  double ForwardFlops() const;
  double BackwardFlops() const;

 private:
  // Buffers of one op: per slot its output and output gradient, plus what
  // its backward needs.
  struct OpState {
    ParamRange params;               // in the stage's buffer
    std::int64_t global_offset = 0;  // of its first parameter in the whole model
    std::int64_t out = 0;            // output elements per sample
    std::vector<float*> act, grad;   // per slot; grad null for graph inputs
    // Norms: mean, rstd; dropout: mask; softmax: scratch; loss: probs, loss
    // per row; position/zero embeddings: row indices (aux1).
    std::vector<float*> aux1, aux2;
    std::vector<bool> backward_done;
    bool weight_copy = false;        // only the parameters of another stage's table
  };
  void Allocate();
  void InitParams();
  float* Act(models::OpId op, int slot);
  float* Grad(models::OpId op, int slot);
  const float* InputAct(models::OpId op, std::size_t i, int slot);
  float* InputGrad(models::OpId op, std::size_t i, int slot);
  // kRecurrent's passes (model_runtime_recurrent.cc).
  void RecurrentForward(models::OpId op, int slot);
  void RecurrentBackward(models::OpId op, int slot);

  const models::ModelGraph& graph_;
  Backend& backend_;
  RuntimeOptions options_;
  std::int64_t num_params_ = 0;
  std::int64_t own_params_ = 0;
  std::vector<models::OpId> weight_copies_;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  std::vector<std::unique_ptr<OpState>> ops_;  // per graph op (null when unused)
  std::vector<models::OpId> boundary_inputs_;
  std::vector<models::OpId> boundary_outputs_;
  std::vector<models::OpId> data_inputs_;
  std::vector<float*> labels_;  // per slot, when the stage holds the loss
  float* boundary_scratch_ = nullptr;  // received output gradients, allocated on first use
  models::OpId loss_op_ = 0;
  bool has_loss_ = false;
  std::int64_t step_ = 0;
};

}  // namespace dtsim::exec
