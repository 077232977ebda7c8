// FormatModelTable: the per-layer table of `dtsim model NAME`.
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "common/units.h"
#include "models/zoo.h"

namespace dtsim::models {
namespace {

constexpr double kGiga = 1e9;
constexpr double kKilo = 1e3;

// 25557032 -> "25,557,032".
std::string WithThousands(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string Fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

constexpr std::size_t kColumns = 6;
using Row = std::array<std::string, kColumns>;
// Text columns are left-aligned, numbers right-aligned.
constexpr std::array<bool, kColumns> kRightAligned = {false, false, false, true, true, true};

std::string FormatRow(const Row& row, const std::array<std::size_t, kColumns>& widths) {
  std::string line;
  for (std::size_t c = 0; c < kColumns; ++c) {
    const std::string pad(widths[c] - row[c].size(), ' ');
    line += kRightAligned[c] ? pad + row[c] : row[c] + pad;
    if (c + 1 < kColumns) line += "  ";
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

// What a transformer's attention is, read from the graph: per layer the
// query heads view "<prefix>attn.q" (A, S, D) and key heads view
// "<prefix>attn.k" (G, S, D) of the zoo's blocks, and whether a fused
// attention op computes it.
struct AttentionSummary {
  std::int64_t layers = 0;
  std::int64_t heads = 0, kv_heads = 0, seq = 0, width = 0;  // of the first layer; width A * D
  double width_seq_sum = 0;  // sum over layers of S * A * D
  bool fused = false;
};

AttentionSummary SummarizeAttention(const ModelGraph& graph) {
  AttentionSummary a;
  for (OpId id = 0; id < graph.num_ops(); ++id) {
    const Op& op = graph.op(id);
    if (op.kind == OpKind::kAttention) a.fused = true;
    if (op.kind != OpKind::kReshape || op.output_shape.size() != 3) continue;
    if (op.name.ends_with("attn.q")) {
      const std::int64_t width = op.output_shape[0] * op.output_shape[2];
      if (a.layers++ == 0) {
        a.heads = op.output_shape[0];
        a.seq = op.output_shape[1];
        a.width = width;
      }
      a.width_seq_sum += static_cast<double>(width) * static_cast<double>(op.output_shape[1]);
    } else if (op.name.ends_with("attn.k") && a.kv_heads == 0) {
      a.kv_heads = op.output_shape[0];
    }
  }
  return a;
}

// Parameters that multiply a token's activations: all but embedding tables
// and the routed experts the token is not sent to, plus a table that a tied
// LM head multiplies by.
std::int64_t MatmulParams(const ModelGraph& graph) {
  std::int64_t n = 0;
  for (OpId id = 0; id < graph.num_ops(); ++id) {
    const Op& op = graph.op(id);
    if (op.kind != OpKind::kEmbedding) n += op.ActiveParams();
    if (op.kind == OpKind::kDense && op.attrs.tied_to >= 0)
      n += graph.op(static_cast<OpId>(op.attrs.tied_to)).params;
  }
  return n;
}

}  // namespace

std::string FormatModelTable(const ModelGraph& graph) {
  std::vector<Row> rows = {
      {"layer", "kind", "output", "params", "fwd GFLOP/sample", "saved KB/sample"}};
  for (OpId id : graph.TopologicalOrder()) {
    const Op& op = graph.op(id);
    rows.push_back({op.name, OpKindName(op.kind), ShapeToString(op.output_shape),
                    WithThousands(op.params), Fixed(op.fwd_flops / kGiga, 4),
                    Fixed(op.saved_elements_per_sample * DTypeBytes(op.dtype) / kKilo, 1)});
  }
  std::array<std::size_t, kColumns> widths{};
  for (const Row& r : rows)
    for (std::size_t c = 0; c < kColumns; ++c) widths[c] = std::max(widths[c], r[c].size());

  std::string out = "model " + graph.name();
  if (!graph.description().empty()) out += ": " + graph.description();
  out += "\n\n";
  for (const Row& r : rows) out += FormatRow(r, widths);

  const GraphTotals t = graph.Totals();
  const int bytes = graph.num_ops() > 0 ? DTypeBytes(graph.op(0).dtype) : 4;
  out += "\n";
  out += "ops:                        " + std::to_string(t.num_ops) + "\n";
  out += "params:                     " + WithThousands(t.params) + " (" +
         FormatCount(static_cast<double>(t.params)) + ")\n";
  if (t.active_params != t.params)
    out += "active params (per token):  " + WithThousands(t.active_params) + " (" +
           FormatCount(static_cast<double>(t.active_params)) + ")\n";
  out += "forward GFLOP/sample:       " + Fixed(t.fwd_flops / kGiga, 3) + "\n";
  out += "fwd+bwd GFLOP/sample:       " + Fixed((t.fwd_flops + t.bwd_flops) / kGiga, 3) + "\n";
  out += "saved activations/sample:   " + FormatBytes(t.saved_elements * bytes) + "\n";
  const AttentionSummary a = SummarizeAttention(graph);
  if (a.layers == 0) return out;
  // Training FLOPs per token as Kaplan et al. 2020 (Table 1: C = 6N +
  // 6 * 2 n_layer n_ctx d_attn), Megatron-LM (Narayanan et al. 2021, §5.1:
  // 72 B s l h^2 (1 + s / 6h + V / 12hl) = 6N + 12 L H S per token) and
  // PaLM (Chowdhery et al. 2022, Appendix B: 6N + 12 L H Q T) count them:
  // N = the parameters that multiply activations (the LM head, not the
  // lookup tables), attention 12 L H S with H = heads x head size, the
  // causal mask not halving it. The graph's own count is below it: a fused
  // causal kernel computes half the score matrix, and the graph counts
  // norms and activations too.
  const double n = static_cast<double>(MatmulParams(graph));
  const double per_token = 6 * n + 12 * a.width_seq_sum;
  out += "attention:                  " + std::string(a.fused ? "flash (fused)" : "eager") + ", " +
         std::to_string(a.heads) + " heads, " + std::to_string(a.kv_heads) + " kv heads\n";
  out += "GFLOP/token 6N + 12LHS:     " + Fixed(per_token / kGiga, 3) + " (N " +
         FormatCount(n) + " without lookup tables, L " + std::to_string(a.layers) + ", H " +
         std::to_string(a.width) + ", S " + std::to_string(a.seq) + ")\n";
  out += "GFLOP/token, this graph:    " +
         Fixed((t.fwd_flops + t.bwd_flops) / static_cast<double>(a.seq) / kGiga, 3) + "\n";
  return out;
}

}  // namespace dtsim::models
