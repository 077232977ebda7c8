#include "exec/runtime/model_problem.h"

#include "common/error.h"

namespace dtsim::exec {
namespace {

RuntimeOptions Runtime(const ModelProblemOptions& o) {
  RuntimeOptions r;
  r.micro_batch = o.batch;
  r.samples_per_step = o.batch;  // the gradient of the batch's mean loss
  r.seed = o.seed;
  return r;
}

}  // namespace

ModelProblem::ModelProblem(const models::ModelGraph& graph, const Dataset& data,
                           Backend& backend, const ModelProblemOptions& options)
    : data_(data), backend_(backend), options_(options), runtime_(graph, backend, Runtime(options)) {
  if (options.batch < 1 || options.eval_samples < 1) {
    throw UserError("the batch and the evaluation set need at least one sample");
  }
  if (SampleElements(data.sample_shape()) != runtime_.input_elements() ||
      SampleElements(data.label_shape()) != runtime_.label_elements()) {
    throw UserError("the dataset's samples do not fit model '" + graph.name() + "'");
  }
  initial_ = runtime_.DownloadParams();
  x_.resize(static_cast<std::size_t>(options.batch * runtime_.input_elements()));
  labels_.resize(static_cast<std::size_t>(options.batch * runtime_.label_elements()));
  host_params_.resize(initial_.size());
}

double ModelProblem::ForwardLoss(std::int64_t first) {
  data_.Fill(first, options_.batch, x_.data(), labels_.data());
  runtime_.SetInput(0, x_.data());
  runtime_.SetLabels(0, labels_.data());
  runtime_.ForwardAll(0);
  return runtime_.Loss(0);
}

double ModelProblem::Gradient(const float* params, std::int64_t first, std::int64_t count,
                              float* grad) {
  DTSIM_CHECK(count == options_.batch, "a gradient of one batch");
  host_params_.assign(params, params + initial_.size());
  runtime_.UploadParams(host_params_);
  runtime_.ZeroGrads();
  const double loss = ForwardLoss(first);
  runtime_.BackwardAll(0);
  backend_.Download(grad, runtime_.grads(), runtime_.num_params());
  return loss;
}

double ModelProblem::EvalLoss(const float* params) {
  host_params_.assign(params, params + initial_.size());
  runtime_.UploadParams(host_params_);
  const std::int64_t batches = (options_.eval_samples + options_.batch - 1) / options_.batch;
  double sum = 0;
  for (std::int64_t k = 0; k < batches; ++k) {
    sum += ForwardLoss(options_.eval_first + k * options_.batch);
  }
  return sum / static_cast<double>(batches);
}

}  // namespace dtsim::exec
