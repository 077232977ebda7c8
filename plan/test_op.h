// An op for plan tests: `params` fp32 parameters and 2 FLOPs per parameter
// forward (a dense layer's multiply-add per weight, per sample).
#pragma once

#include <cstdint>

#include "models/graph.h"

namespace dtsim::plan {

inline models::Op TestOp(const char* name, models::OpKind kind, std::int64_t params) {
  models::Op op;
  op.name = name;
  op.kind = kind;
  op.params = params;
  op.fwd_flops = 2.0 * params;
  return op;
}

}  // namespace dtsim::plan
