// The data a model graph trains on and is evaluated with, for `dtsim exec`
// and `dtsim tta`: a file or IDX folder when given, else a synthetic set.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "exec/data/dataset.h"

namespace dtsim::models {
class ModelGraph;
}  // namespace dtsim::models

namespace dtsim::exec {

// The synthetic data set `dtsim exec` trains `g` on without a dataset file
// (exec/calibrate/host_benchmarks.h names): "tokens" for a model that
// embeds its input, "class_image" for (C, H, W) input, "teacher" otherwise.
std::string SyntheticKindOf(const models::ModelGraph& g);

// The data `dtsim exec` trains `g` on: the dataset file at `path` (dtsim's
// binary format) or the training split of the IDX folder at `path`, read in
// a new order every epoch drawn from `seed` (exec/data/shuffled_dataset.h),
// when given, else a synthetic set that fits the model
// (tokens, class images or a teacher network; exec/data/synthetic_dataset.h)
// drawn from `seed`. Throws UserError when the file does not fit the model.
std::unique_ptr<Dataset> MakeDataset(const models::ModelGraph& g, const std::string& path,
                                           std::uint64_t seed);
// The held-out data `g` is evaluated on: the test split of the IDX folder at
// `path`, normalised as its training split, in file order. Throws UserError
// when `path` is not an IDX folder or its data does not fit the model.
std::unique_ptr<Dataset> MakeEvalDataset(const models::ModelGraph& g,
                                               const std::string& path);

}  // namespace dtsim::exec
