#include "exec/runtime/held_out_eval.h"

#include <vector>

#include "common/error.h"

namespace dtsim::exec {

EvalSums EvaluateRange(ModelRuntime& runtime, const Dataset& data, std::int64_t first,
                       std::int64_t count) {
  DTSIM_CHECK(runtime.reads_data() && runtime.holds_loss(),
              "EvaluateRange needs a runtime of the whole model");
  const std::int64_t b = runtime.options().micro_batch;
  std::vector<float> x(static_cast<std::size_t>(b * runtime.input_elements()));
  std::vector<float> y(static_cast<std::size_t>(b * runtime.label_elements()));
  EvalSums sums;
  for (std::int64_t k = 0; k + b <= count; k += b) {
    data.Fill(first + k, b, x.data(), y.data());
    runtime.SetInput(0, x.data());
    runtime.SetLabels(0, y.data());
    runtime.ForwardAll(0);
    sums.loss += runtime.Loss(0) * static_cast<double>(b);
    sums.correct += static_cast<double>(runtime.Correct(0)) /
                    static_cast<double>(runtime.label_elements());
    sums.count += static_cast<double>(b);
  }
  return sums;
}

}  // namespace dtsim::exec
