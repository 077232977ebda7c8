#include "exec/replicas/model_problem.h"

#include "common/error.h"
#include "exec/runtime/held_out_eval.h"

namespace dtsim::exec {
namespace {

RuntimeOptions Runtime(const ModelProblemOptions& o) {
  RuntimeOptions r;
  r.micro_batch = o.batch;
  r.samples_per_step = o.batch;  // the gradient of the batch's mean loss
  r.seed = o.seed;
  return r;
}

void CheckFits(const Dataset& data, const ModelRuntime& runtime, const models::ModelGraph& g) {
  if (SampleElements(data.sample_shape()) != runtime.input_elements() ||
      SampleElements(data.label_shape()) != runtime.label_elements()) {
    throw UserError("the dataset's samples do not fit model '" + g.name() + "'");
  }
}

}  // namespace

ModelProblem::ModelProblem(const models::ModelGraph& graph, const Dataset& data,
                           Backend& backend, const ModelProblemOptions& options,
                           const Dataset* eval_data)
    : data_(data), eval_data_(eval_data), backend_(backend), options_(options),
      runtime_(graph, backend, Runtime(options)) {
  if (options.batch < 1 || options.eval_samples < 1 || options.eval_shards < 1) {
    throw UserError("the batch, the evaluation set and its shards need at least one sample");
  }
  CheckFits(data, runtime_, graph);
  if (eval_data != nullptr) {
    CheckFits(*eval_data, runtime_, graph);
    if (options.eval_samples / options.eval_shards < options.batch) {
      throw UserError("evaluation samples " + std::to_string(options.eval_samples) +
                          " leave no whole batch of " + std::to_string(options.batch) + " in each of " +
                          std::to_string(options.eval_shards) + " shard(s)",
                      "evaluate at least shards x batch samples");
    }
  }
  initial_ = runtime_.DownloadParams();
  x_.resize(static_cast<std::size_t>(options.batch * runtime_.input_elements()));
  labels_.resize(static_cast<std::size_t>(options.batch * runtime_.label_elements()));
  host_params_.resize(initial_.size());
}

double ModelProblem::Gradient(const float* params, std::int64_t first, std::int64_t count,
                              float* grad) {
  DTSIM_CHECK(count == options_.batch, "a gradient of one batch");
  host_params_.assign(params, params + initial_.size());
  runtime_.UploadParams(host_params_);
  runtime_.ZeroGrads();
  data_.Fill(first, options_.batch, x_.data(), labels_.data());
  runtime_.SetInput(0, x_.data());
  runtime_.SetLabels(0, labels_.data());
  runtime_.ForwardAll(0);
  const double loss = runtime_.Loss(0);
  runtime_.BackwardAll(0);
  backend_.Download(grad, runtime_.grads(), runtime_.num_params());
  return loss;
}

Evaluation ModelProblem::Evaluate(const float* params) {
  host_params_.assign(params, params + initial_.size());
  runtime_.UploadParams(host_params_);
  EvalSums sums;
  if (eval_data_ == nullptr) {
    const std::int64_t b = options_.batch;
    sums = EvaluateRange(runtime_, data_, options_.eval_first,
                         (options_.eval_samples + b - 1) / b * b);
  } else {
    const std::int64_t share = options_.eval_samples / options_.eval_shards;
    for (int k = 0; k < options_.eval_shards; ++k) {
      const EvalSums part =
          EvaluateRange(runtime_, *eval_data_, options_.eval_first + k * share, share);
      sums.loss += part.loss;
      sums.correct += part.correct;
      sums.count += part.count;
    }
  }
  return {.loss = sums.loss / sums.count, .accuracy = sums.correct / sums.count};
}

}  // namespace dtsim::exec
