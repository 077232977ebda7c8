// The mixture-of-experts MLP of a transformer block (Shazeer et al. 2017;
// GShard, Lepikhin et al. 2021; Mixtral, Jiang et al. 2024; DeepSeekMoE,
// Dai et al. 2024). On x (S, H), the output of the MLP's norm, with
// E = experts, k = top_k, F_e = expert width, R = routed rows per sample:
//
//   mlp.router          Dense H -> E, no bias                    (S, E)
//   mlp.router_softmax  softmax over the E experts; the top-k
//                       selection is folded into it (E log k compares
//                       a token, small beside the experts)         (S, E)
//   mlp.dispatch        each token copied to its k experts' rows   (R, H)
//   experts.fc1 ...     the expert MLP (as Mlp, of width F_e) on the
//   experts.fc2         rows: params of all E experts, FLOPs of the R
//                       rows (k experts per token)                 (R, H)
//   mlp.combine         the rows weighted by the router's
//                       probabilities and summed per token         (S, H)
//   shared.fc1 ...      shared experts: one MLP of width
//   shared.fc2          shared_experts x F_e every token visits    (S, H)
//   mlp.shared_add      combine + shared                           (S, H)
//
// R = ceil(capacity_factor x k x S). Expert parallelism (plan/
// expert_parallel.h) exchanges the dispatch and combine rows between the
// ranks of an expert group: the all-to-alls sit after mlp.dispatch and
// after experts.fc2 in the forward (and mirrored in the backward).
#include <cmath>

#include "common/error.h"
#include "models/transformer_blocks.h"

namespace dtsim::models::transformer {
namespace {

// The expert MLP on the routed rows (R, H), as Mlp but every dense layer
// stands for the E experts.
Tensor ExpertMlp(GraphBuilder& b, const std::string& prefix, const Tensor& rows, const Dims& d) {
  const auto dense = [&](const std::string& name, const Tensor& x, std::int64_t out) {
    return b.Dense(prefix + name, x,
                   {.out_features = out,
                    .bias = d.bias,
                    .experts = static_cast<int>(d.experts),
                    .top_k = static_cast<int>(d.top_k),
                    .expert_load_skew = d.expert_load_skew});
  };
  const std::int64_t f = d.expert_ffn;
  if (d.mlp == MlpKind::kGelu) return dense("fc2", b.Gelu(prefix + "gelu", dense("fc1", rows, f)), d.hidden);
  const Tensor fc1 = dense("fc1", rows, 2 * f);
  const Tensor gate = b.Slice(prefix + "gate", fc1, 1, 0, f);
  const Tensor up = b.Slice(prefix + "up", fc1, 1, f, f);
  const Tensor act = d.mlp == MlpKind::kSwiglu ? b.Silu(prefix + "silu", gate)
                                                : b.Gelu(prefix + "gelu", gate);
  return dense("fc2", b.Mul(prefix + "mul", act, up), d.hidden);
}

}  // namespace

void ResolveExperts(const TransformerConfig& c, Dims* d) {
  const auto fail = [](const std::string& what, const std::string& hint = "") {
    throw UserError("transformer " + what, hint);
  };
  if (c.experts < 1) fail("experts must be >= 0 (0 = a dense MLP), got " + std::to_string(c.experts));
  if (c.top_k < 1 || c.top_k > c.experts)
    fail("top_k (" + std::to_string(c.top_k) + ") must be between 1 and experts (" +
         std::to_string(c.experts) + ")");
  if (c.expert_ffn_hidden < 0 || c.shared_experts < 0)
    fail("expert_ffn_hidden and shared_experts must be >= 0");
  if (c.dense_layers < 0 || c.dense_layers >= c.layers)
    fail("dense_layers (" + std::to_string(c.dense_layers) + ") must be between 0 and layers - 1 (" +
             std::to_string(c.layers - 1) + ")",
         "with experts, at least one layer has them");
  if (!(c.capacity_factor > 0) || c.capacity_factor > 64)
    fail("capacity_factor must be in (0, 64], got " + std::to_string(c.capacity_factor));
  const double max_skew = static_cast<double>(c.experts) / c.top_k;
  if (!(c.expert_load_skew >= 1) || c.expert_load_skew > max_skew)
    fail("expert_load_skew must be between 1 (balanced) and experts / top_k = " +
             std::to_string(max_skew) + ", got " + std::to_string(c.expert_load_skew),
         "it is the busiest expert's share of the routed tokens over the mean; an expert gets "
         "each token at most once");
  d->experts = c.experts;
  d->top_k = c.top_k;
  d->expert_ffn = c.expert_ffn_hidden > 0 ? c.expert_ffn_hidden : d->ffn;
  d->shared_experts = c.shared_experts;
  d->dense_layers = c.dense_layers;
  d->routed_rows = static_cast<std::int64_t>(
      std::ceil(c.capacity_factor * static_cast<double>(c.top_k) * static_cast<double>(d->seq)));
  d->expert_load_skew = c.expert_load_skew;
}

Tensor MoeMlp(GraphBuilder& b, const std::string& layer, const Tensor& x, const Dims& d) {
  const Tensor logits =
      b.Dense(layer + "mlp.router", x, {.out_features = d.experts, .bias = false});
  const Tensor probs = b.Softmax(layer + "mlp.router_softmax", logits);
  const RoutingSpec routing{.experts = static_cast<int>(d.experts),
                            .top_k = static_cast<int>(d.top_k),
                            .rows = d.routed_rows,
                            .expert_load_skew = d.expert_load_skew};
  const Tensor rows = b.Dispatch(layer + "mlp.dispatch", x, probs, routing);
  const Tensor y = ExpertMlp(b, layer + "experts.", rows, d);
  const Tensor out = b.Combine(layer + "mlp.combine", y, probs, routing);
  if (d.shared_experts == 0) return out;
  const Tensor shared = Mlp(b, layer + "shared.", x, d, d.shared_experts * d.expert_ffn);
  return b.Add(layer + "mlp.shared_add", out, shared);
}

}  // namespace dtsim::models::transformer
