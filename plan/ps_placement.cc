#include "plan/ps_placement.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/error.h"

namespace dtsim::plan {
namespace {

using models::Op;
using models::OpKind;

// More pieces than this is a max_shard_bytes typed in the wrong unit.
constexpr double kMaxPieces = 10e6;

// Elements of `op`'s bias (0 without one): conv output channels (the
// first dimension of its per-sample output), dense output features (the
// last). A tied head's weight is its table's, so all its parameters are
// its bias (exec/runtime/model_runtime.cc lays them out the same way).
std::int64_t BiasElements(const Op& op) {
  if (!op.attrs.bias || op.output_shape.empty()) return 0;
  if (op.kind == OpKind::kConv2d) return std::min(op.params, op.output_shape.front());
  if (op.kind == OpKind::kDense)
    return op.attrs.tied_to >= 0 ? op.params : std::min(op.params, op.output_shape.back());
  return 0;
}

void Add(PsServerShare* share, const PsVariable& v, std::int32_t index, std::int64_t offset,
         std::int64_t count) {
  share->pieces.push_back({index, offset, count});
  share->params += count;
  share->bytes += static_cast<double>(count) * v.bytes_per_element;
}

// kEven: ceil(P / S) elements per server, cut where the range ends,
// whatever variable it falls in.
void PlaceEven(const std::vector<PsVariable>& vars, std::vector<PsServerShare>* out) {
  const auto s = static_cast<std::int64_t>(out->size());
  std::int64_t total = 0;
  for (const PsVariable& v : vars) total += v.count;
  const std::int64_t per = (total + s - 1) / s;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const PsVariable& v = vars[i];
    for (std::int64_t at = v.offset; at < v.offset + v.count;) {
      const std::int64_t server = per == 0 ? 0 : at / per;
      const std::int64_t end = std::min(v.offset + v.count, (server + 1) * per);
      Add(&(*out)[static_cast<std::size_t>(server)], v, static_cast<std::int32_t>(i), at, end - at);
      at = end;
    }
  }
}

}  // namespace

const char* PsPlacementPolicyName(PsPlacementPolicy p) {
  switch (p) {
    case PsPlacementPolicy::kEven: return "even";
    case PsPlacementPolicy::kRoundRobin: return "round_robin";
    case PsPlacementPolicy::kGreedy: return "greedy";
    case PsPlacementPolicy::kPartitioned: return "partitioned";
  }
  return "?";
}

std::string PsPlacementSpec::Describe() const {
  if (policy != PsPlacementPolicy::kPartitioned) return PsPlacementPolicyName(policy);
  std::ostringstream o;
  o << "partitioned (pieces of at most " << max_shard_bytes << " B)";
  return o.str();
}

std::vector<PsVariable> ModelVariables(const models::ModelGraph& graph) {
  std::vector<PsVariable> vars;
  std::int64_t offset = 0;
  const auto add = [&](models::OpId v, const std::string& suffix, std::int64_t count) {
    if (count <= 0) return;
    const Op& op = graph.op(v);
    vars.push_back({v, op.name + "." + suffix, offset, count, models::DTypeBytes(op.dtype)});
    offset += count;
  };
  for (models::OpId v = 0; v < graph.num_ops(); ++v) {
    const Op& op = graph.op(v);
    if (op.params <= 0) continue;
    if (op.kind == OpKind::kBatchNorm || op.kind == OpKind::kLayerNorm) {
      add(v, "gamma", op.params / 2);
      add(v, "beta", op.params - op.params / 2);
      continue;
    }
    const std::int64_t bias = BiasElements(op);
    add(v, "weight", op.params - bias);
    add(v, "bias", bias);
  }
  return vars;
}

PsPlacement PlaceVariables(std::vector<PsVariable> variables, int servers,
                           const PsPlacementSpec& spec) {
  DTSIM_CHECK(servers >= 1, "placement over no servers");
  PsPlacement p;
  p.variables = std::move(variables);
  p.servers.resize(static_cast<std::size_t>(servers));
  const auto& vars = p.variables;
  std::int64_t next = vars.empty() ? 0 : vars.front().offset;
  for (const PsVariable& v : vars) {
    DTSIM_CHECK(v.count >= 1 && v.offset == next, "variables must tile the buffer in order");
    next += v.count;
  }
  const auto at = [&](std::size_t s) -> PsServerShare& { return p.servers[s]; };
  const auto n = static_cast<std::size_t>(servers);
  switch (spec.policy) {
    case PsPlacementPolicy::kEven: PlaceEven(vars, &p.servers); break;
    case PsPlacementPolicy::kRoundRobin:
      for (std::size_t i = 0; i < vars.size(); ++i)
        Add(&at(i % n), vars[i], static_cast<std::int32_t>(i), vars[i].offset, vars[i].count);
      break;
    case PsPlacementPolicy::kGreedy:
      for (std::size_t i = 0; i < vars.size(); ++i) {
        std::size_t least = 0;  // strict <: ties go to the lowest index
        for (std::size_t s = 1; s < n; ++s)
          if (at(s).bytes < at(least).bytes) least = s;
        Add(&at(least), vars[i], static_cast<std::int32_t>(i), vars[i].offset, vars[i].count);
      }
      break;
    case PsPlacementPolicy::kPartitioned: {
      DTSIM_CHECK(spec.max_shard_bytes > 0, "partitioned placement needs max_shard_bytes > 0");
      const auto pieces_of = [&](const PsVariable& v) {
        return static_cast<std::int64_t>(std::min<double>(
            static_cast<double>(v.count), std::ceil(v.Bytes() / spec.max_shard_bytes)));
      };
      double total_pieces = 0;
      for (const PsVariable& v : vars) total_pieces += static_cast<double>(pieces_of(v));
      if (total_pieces > kMaxPieces)
        throw UserError("a partitioned placement of " + std::to_string(total_pieces) +
                            " pieces (more than 10 million)",
                        "raise max_shard_bytes");
      std::size_t cursor = 0;
      for (std::size_t i = 0; i < vars.size(); ++i) {
        const PsVariable& v = vars[i];
        const std::int64_t k = pieces_of(v), base = v.count / k, extra = v.count % k;
        for (std::int64_t j = 0; j < k; ++j) {
          // The first count % k pieces take one element more.
          const std::int64_t begin = j * base + std::min(j, extra);
          const std::int64_t size = base + (j < extra ? 1 : 0);
          Add(&at(cursor++ % n), v, static_cast<std::int32_t>(i), v.offset + begin, size);
        }
      }
      break;
    }
  }
  return p;
}

}  // namespace dtsim::plan
