// A model for plan tests: an input view and `layers` dense units
// "layerN.fc" (plan/layers.h sees one unit each) of 256 outputs, 1e6 FLOPs
// per pass and sample, and 1,000 fp32 parameters (4,000 bytes) each.
#pragma once

#include <string>

#include "models/graph.h"

namespace dtsim::plan {

inline models::ModelGraph ChainTestGraph(int layers) {
  models::ModelGraph g("chain");
  models::Op in;
  in.name = "layer0.in";
  in.kind = models::OpKind::kReshape;
  in.output_shape = {256};
  models::OpId prev = g.AddOp(in, {});
  for (int i = 0; i < layers; ++i) {
    models::Op fc;
    fc.name = "layer" + std::to_string(i) + ".fc";
    fc.kind = models::OpKind::kDense;
    fc.output_shape = {256};
    fc.fwd_flops = fc.bwd_input_flops = fc.bwd_weight_flops = 1e6;
    fc.params = 1000;
    prev = g.AddOp(fc, {prev});
  }
  return g;
}

}  // namespace dtsim::plan
