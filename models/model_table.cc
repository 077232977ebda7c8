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
  out += "forward GFLOP/sample:       " + Fixed(t.fwd_flops / kGiga, 3) + "\n";
  out += "fwd+bwd GFLOP/sample:       " + Fixed((t.fwd_flops + t.bwd_flops) / kGiga, 3) + "\n";
  out += "saved activations/sample:   " + FormatBytes(t.saved_elements * bytes) + "\n";
  return out;
}

}  // namespace dtsim::models
