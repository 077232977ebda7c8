#include "exec/data/model_datasets.h"

#include <filesystem>

#include "common/error.h"
#include "exec/data/binary_dataset.h"
#include "exec/data/idx_dataset.h"
#include "exec/data/shuffled_dataset.h"
#include "exec/data/synthetic_dataset.h"
#include "models/graph.h"

namespace dtsim::exec {

// The synthetic dataset `dtsim exec` trains `g` on without a dataset file
// (exec/calibrate/host_benchmarks.h names): "tokens" for a model that
// embeds its input, "class_image" for (C, H, W) input, "teacher" otherwise.
std::string SyntheticKindOf(const models::ModelGraph& g) {
  for (models::OpId c : g.consumers(0))
    if (g.op(c).kind == models::OpKind::kEmbedding) return "tokens";
  return g.op(0).output_shape.size() == 3 ? "class_image" : "teacher";
}

namespace {

// Throws UserError naming `path` when `data` does not fit `g`.
void CheckFits(const Dataset& data, const models::ModelGraph& g, const std::string& path) {
  const models::Op& input = g.op(0);
  const std::int64_t classes = g.op(g.num_ops() - 1).attrs.vocab;
  if (data.sample_shape() != input.output_shape || data.classes() > classes)
    throw UserError(path + ": samples of shape " + models::ShapeToString(data.sample_shape()) +
                        " with " + std::to_string(data.classes()) + " classes do not fit " +
                        g.name() + " (input " + models::ShapeToString(input.output_shape) + ", " +
                        std::to_string(classes) + " classes)",
                    "convert the data to the model's input shape (docs/dataset_format.md)");
}

}  // namespace

std::unique_ptr<Dataset> MakeDataset(const models::ModelGraph& g, const std::string& path,
                                           std::uint64_t seed) {
  const models::Op& input = g.op(0);
  const models::Op& loss = g.op(g.num_ops() - 1);
  const std::int64_t classes = loss.attrs.vocab;
  const std::string kind = SyntheticKindOf(g);
  const bool tokens = kind == "tokens";
  if (!path.empty()) {
    // A folder: an IDX set of the MNIST family (exec/data/idx_dataset.h),
    // read in a new order every epoch.
    std::unique_ptr<Dataset> data;
    if (std::filesystem::is_directory(path))
      data = std::make_unique<ShuffledDataset>(
          std::make_unique<IdxDataset>(
              OpenIdxTrainingSet(path, classes, input.output_shape.size() == 1)),
          seed);
    else
      data = std::make_unique<BinaryDataset>(BinaryDataset::Open(path));
    CheckFits(*data, g, path);
    return data;
  }
  if (tokens)
    return std::make_unique<TokenDataset>(TokenDatasetOptions{
        .vocab = classes, .seq_len = input.output_shape[0], .seed = seed});
  if (kind == "class_image")
    return std::make_unique<ClassImageDataset>(ClassImageDatasetOptions{
        .channels = input.output_shape[0],
        .height = input.output_shape[1],
        .width = input.output_shape[2],
        .classes = classes,
        .seed = seed});
  return std::make_unique<TeacherDataset>(
      TeacherDatasetOptions{.shape = input.output_shape, .classes = classes, .seed = seed});
}

std::unique_ptr<Dataset> MakeEvalDataset(const models::ModelGraph& g,
                                               const std::string& path) {
  if (path.empty() || !std::filesystem::is_directory(path))
    throw UserError(path.empty() ? std::string("no --dataset") : path + ": not a folder",
                    "held-out evaluation needs a data set with a test split: an IDX folder "
                    "(train-* and t10k-* files, as MNIST and Fashion-MNIST ship them)");
  const bool flat = g.op(0).output_shape.size() == 1;
  const std::int64_t classes = g.op(g.num_ops() - 1).attrs.vocab;
  const IdxDataset train = OpenIdxTrainingSet(path, classes, flat);
  auto test = std::make_unique<IdxDataset>(OpenIdxTestSet(path, train, flat));
  CheckFits(*test, g, path);
  return test;
}

}  // namespace dtsim::exec
