#include "validation/deepbench.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "common/error.h"
#include "report/sweep_page.h"

namespace dtsim::validation {
namespace {

namespace fs = std::filesystem;

std::int64_t RoundUp(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

// A CSV file by header name: rows as name -> field.
class CsvTable {
 public:
  CsvTable(const std::string& text, std::string filename) : filename_(std::move(filename)) {
    std::istringstream in(text);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      std::vector<std::string> fields = report::SplitCsvLine(line);
      if (header_.empty()) {
        header_ = std::move(fields);
        continue;
      }
      if (fields.size() != header_.size())
        Fail(number, "expected " + std::to_string(header_.size()) +
                         " fields as in the header, got " + std::to_string(fields.size()));
      rows_.push_back({number, std::move(fields)});
    }
    if (header_.empty())
      throw UserError(SourceLocation{filename_, 0, 0}, "the file is empty", "expected a header");
  }

  std::size_t Column(const std::string& name) const {
    for (std::size_t i = 0; i < header_.size(); ++i)
      if (header_[i] == name) return i;
    throw UserError(SourceLocation{filename_, 1, 0}, "the header has no column '" + name + "'",
                    "expected the layout of shared/validation/deepbench/README.md");
  }

  struct Row {
    int line;
    std::vector<std::string> fields;
  };
  const std::vector<Row>& rows() const { return rows_; }

  [[noreturn]] void Fail(int line, const std::string& what) const {
    throw UserError(SourceLocation{filename_, line, 0}, what, "");
  }
  // A number, or nullopt for an empty cell.
  std::optional<double> Number(const Row& row, std::size_t column, bool optional) const {
    const std::string& f = row.fields[column];
    if (f.empty()) {
      if (optional) return std::nullopt;
      Fail(row.line, "column '" + header_[column] + "' is empty");
    }
    double v = 0;
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || end != f.data() + f.size() || !std::isfinite(v) || v < 0)
      Fail(row.line, "column '" + header_[column] + "': '" + f + "' is not a number >= 0");
    return v;
  }
  std::int64_t Count(const Row& row, std::size_t column) const {
    const double v = *Number(row, column, false);
    if (v != std::floor(v) || v > 1e12)
      Fail(row.line, "column '" + header_[column] + "' is not a count");
    return static_cast<std::int64_t>(v);
  }
  std::int64_t Positive(const Row& row, std::size_t column) const {
    const std::int64_t v = Count(row, column);
    if (v <= 0) Fail(row.line, "column '" + header_[column] + "' must be > 0");
    return v;
  }

 private:
  std::string filename_;
  std::vector<std::string> header_;
  std::vector<Row> rows_;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UserError("cannot read " + path.string(),
                    "pass the folder of DeepBench's CSV files (shared/validation/deepbench)");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Base(const std::string& filename) { return fs::path(filename).filename().string(); }

}  // namespace

const char* DeepbenchKernelName(DeepbenchKernel kind) {
  switch (kind) {
    case DeepbenchKernel::kGemm:
      return "gemm";
    case DeepbenchKernel::kConvForward:
      return "conv_fwd";
    case DeepbenchKernel::kConvBackwardData:
      return "conv_bwd_data";
    case DeepbenchKernel::kConvBackwardFilter:
      return "conv_bwd_filter";
    case DeepbenchKernel::kRnnForward:
      return "rnn_fwd";
    case DeepbenchKernel::kRnnBackwardData:
      return "rnn_bwd_data";
    case DeepbenchKernel::kRnnBackwardWeights:
      return "rnn_bwd_weights";
  }
  return "?";
}

const char* DeepbenchKernelGroup(DeepbenchKernel kind) {
  switch (kind) {
    case DeepbenchKernel::kGemm:
      return "gemm";
    case DeepbenchKernel::kConvForward:
    case DeepbenchKernel::kConvBackwardData:
    case DeepbenchKernel::kConvBackwardFilter:
      return "conv";
    default:
      return "rnn";
  }
}

std::string DeepbenchMeasurement::Where() const {
  std::string s = file + ":" + std::to_string(line);
  if (kind != DeepbenchKernel::kGemm) s += std::string(" ") + DeepbenchKernelName(kind);
  return s;
}

std::string DeepbenchMeasurement::Shape() const {
  char buf[160];
  if (std::string(DeepbenchKernelGroup(kind)) == "rnn") {
    std::snprintf(buf, sizeof buf, "%s H=%lld N=%lld T=%lld",
                  rnn.cell == models::RnnCell::kTanh ? "vanilla" : models::RnnCellName(rnn.cell),
                  static_cast<long long>(rnn.hidden), static_cast<long long>(rnn.batch),
                  static_cast<long long>(rnn.steps));
  } else if (kind == DeepbenchKernel::kGemm) {
    std::snprintf(buf, sizeof buf, "m=%lld n=%lld k=%lld %c%c", static_cast<long long>(gemm.m),
                  static_cast<long long>(gemm.n), static_cast<long long>(gemm.k),
                  gemm.a_t ? 'T' : 'N', gemm.b_t ? 'T' : 'N');
  } else {
    std::snprintf(buf, sizeof buf, "W=%lld H=%lld C=%lld N=%lld K=%lld %dx%d s%d p%d",
                  static_cast<long long>(conv.w), static_cast<long long>(conv.h),
                  static_cast<long long>(conv.c), static_cast<long long>(conv.n),
                  static_cast<long long>(conv.k), conv.r, conv.s, conv.stride_h, conv.pad_h);
  }
  return buf;
}

std::string DeepbenchDevice(const std::string& gpu) {
  // specs.csv and the README of the data: V100 and T4 in a DGX-1 (SXM2
  // V100); P100, 1080Ti and TitanXp in an ASUS X99-E WS workstation (PCIe
  // boards); M40, TitanX (Maxwell, CUDA 7.5) and TitanX_Pascal in Tyan
  // servers.
  static constexpr struct {
    const char* sheet;
    const char* device;
  } kMap[] = {{"1080Ti", "GTX-1080Ti"},      {"M40", "M40"},
              {"P100", "P100-PCIe-16GB"},    {"T4", "T4"},
              {"TitanX", "TITAN-X-Maxwell"}, {"TitanX_Pascal", "TITAN-X-Pascal"},
              {"TitanXp", "TITAN-Xp"},       {"V100", "V100-SXM2-16GB"},
              // Not DeepBench's: this project's H100 SXM measurements in its
              // format (scenarios/fit/h100-kernels, CUDA 13).
              {"H100", "H100-SXM"}};
  for (const auto& e : kMap)
    if (gpu == e.sheet) return e.device;
  throw UserError("unknown DeepBench GPU '" + gpu + "'",
                  "known: 1080Ti M40 P100 T4 TitanX TitanX_Pascal TitanXp V100 H100");
}

int DeepbenchCudaVersion(const std::string& gpu) {
  if (gpu == "M40" || gpu == "TitanX") return 7;
  if (gpu == "V100" || gpu == "T4") return 10;
  if (gpu == "H100") return 13;
  DeepbenchDevice(gpu);  // throws for an unknown name
  return 8;
}

sim::GpuKernelModel DeepbenchModel(const hw::HardwareCatalog& catalog, const std::string& gpu,
                                   sim::GpuKernelParams params) {
  const std::string name = DeepbenchDevice(gpu);
  const hw::DeviceSpec* d = catalog.FindDevice(name);
  if (d == nullptr || !d->HasMicroarchitecture())
    throw UserError("the catalog has no GPU '" + name + "' with its microarchitecture", "");
  params.cuda_version = DeepbenchCudaVersion(gpu);
  return sim::GpuKernelModel(*d, std::move(params));
}

hw::Precision DeepbenchPrecision(const std::string& label) {
  if (label == "fp32") return hw::Precision::kFp32;
  if (label == "fp16-mixed" || label == "fp16-pseudo") return hw::Precision::kFp16;
  throw UserError("unknown DeepBench precision '" + label + "'",
                  "known: fp32, fp16-mixed, fp16-pseudo");
}

std::vector<DeepbenchMeasurement> ParseDeepbenchGemm(const std::string& text,
                                                     const std::string& filename) {
  const CsvTable t(text, filename);
  const std::size_t gpu = t.Column("gpu"), precision = t.Column("precision"), m = t.Column("m"),
                    n = t.Column("n"), k = t.Column("k"), at = t.Column("a_transpose"),
                    bt = t.Column("b_transpose"), time = t.Column("time_ms");
  std::vector<DeepbenchMeasurement> out;
  for (const CsvTable::Row& row : t.rows()) {
    const std::optional<double> ms = t.Number(row, time, true);
    if (!ms || *ms <= 0) continue;
    DeepbenchMeasurement d;
    d.gpu = row.fields[gpu];
    d.precision = row.fields[precision];
    d.file = Base(filename);
    d.line = row.line;
    d.kind = DeepbenchKernel::kGemm;
    d.gemm.m = t.Positive(row, m);
    d.gemm.n = t.Positive(row, n);
    d.gemm.k = t.Positive(row, k);
    for (std::size_t c : {at, bt})
      if (row.fields[c] != "N" && row.fields[c] != "T") t.Fail(row.line, "a transpose is N or T");
    d.gemm.a_t = row.fields[at] == "T";
    d.gemm.b_t = row.fields[bt] == "T";
    d.gemm.precision = DeepbenchPrecision(d.precision);
    d.gemm.accumulate = true;  // DeepBench calls cublasGemmEx with beta = 1
    if (d.precision == "fp16-mixed") {
      // gemm_bench.cu (commit 30c5115 on) pads for tensor cores as cuBLAS's
      // "tensorop restrictions" ask: m and k for NN and TN, m and n for NT.
      d.gemm.m = RoundUp(d.gemm.m, 8);
      if (!d.gemm.a_t && d.gemm.b_t)
        d.gemm.n = RoundUp(d.gemm.n, 8);
      else
        d.gemm.k = RoundUp(d.gemm.k, 8);
    }
    d.measured_s = *ms / 1000.0;
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<DeepbenchMeasurement> ParseDeepbenchConv(const std::string& text,
                                                     const std::string& filename) {
  const CsvTable t(text, filename);
  const std::size_t gpu = t.Column("gpu"), precision = t.Column("precision"), w = t.Column("w"),
                    h = t.Column("h"), c = t.Column("c"), n = t.Column("n"), k = t.Column("k"),
                    s = t.Column("s"), r = t.Column("r"), pw = t.Column("pad_w"),
                    ph = t.Column("pad_h"), sw = t.Column("stride_w"), sh = t.Column("stride_h"),
                    fwd = t.Column("fwd_ms"), bwd_in = t.Column("bwd_input_ms"),
                    bwd_par = t.Column("bwd_params_ms"), algo = t.Column("fwd_algorithm");
  std::vector<DeepbenchMeasurement> out;
  for (const CsvTable::Row& row : t.rows()) {
    sim::ConvProblem p;
    p.w = t.Positive(row, w);
    p.h = t.Positive(row, h);
    p.c = t.Positive(row, c);
    p.n = t.Positive(row, n);
    p.k = t.Positive(row, k);
    p.s = static_cast<int>(t.Positive(row, s));
    p.r = static_cast<int>(t.Positive(row, r));
    p.pad_w = static_cast<int>(t.Count(row, pw));
    p.pad_h = static_cast<int>(t.Count(row, ph));
    p.stride_w = static_cast<int>(t.Positive(row, sw));
    p.stride_h = static_cast<int>(t.Positive(row, sh));
    p.precision = DeepbenchPrecision(row.fields[precision]);
    // conv_bench.cu pads the input channels to a multiple of 8 when it is
    // built for tensor cores (the fp16-mixed sheets of V100 and T4).
    if (row.fields[precision] == "fp16-mixed") p.c = RoundUp(p.c, 8);
    if (p.p() <= 0 || p.q() <= 0) t.Fail(row.line, "the filter is larger than the padded input");
    const struct {
      std::size_t column;
      DeepbenchKernel kind;
    } passes[] = {{fwd, DeepbenchKernel::kConvForward},
                  {bwd_in, DeepbenchKernel::kConvBackwardData},
                  {bwd_par, DeepbenchKernel::kConvBackwardFilter}};
    for (const auto& pass : passes) {
      const std::optional<double> ms = t.Number(row, pass.column, true);
      if (!ms || *ms <= 0) continue;
      DeepbenchMeasurement d;
      d.gpu = row.fields[gpu];
      d.precision = row.fields[precision];
      d.file = Base(filename);
      d.line = row.line;
      d.kind = pass.kind;
      d.conv = p;
      d.measured_s = *ms / 1000.0;
      d.sheet_algorithm = row.fields[algo];
      out.push_back(std::move(d));
    }
  }
  return out;
}

std::vector<DeepbenchMeasurement> ParseDeepbenchRnn(const std::string& text,
                                                    const std::string& filename) {
  const CsvTable t(text, filename);
  const std::size_t gpu = t.Column("gpu"), precision = t.Column("precision"),
                    cell = t.Column("cell"), hidden = t.Column("hidden"), n = t.Column("n"),
                    steps = t.Column("timesteps"), fwd = t.Column("fwd_ms"),
                    bwd_in = t.Column("bwd_input_ms"), bwd_par = t.Column("bwd_params_ms"),
                    bwd = t.Column("bwd_ms");
  std::vector<DeepbenchMeasurement> out;
  for (const CsvTable::Row& row : t.rows()) {
    sim::RnnProblem p;
    const std::string& c = row.fields[cell];
    // rnn_bench.cu's "vanilla" is CUDNN_RNN_RELU: one gate, as tanh's.
    if (c == "vanilla") {
      p.cell = models::RnnCell::kTanh;
    } else if (c == "lstm") {
      p.cell = models::RnnCell::kLstm;
    } else if (c == "gru") {
      p.cell = models::RnnCell::kGru;
    } else {
      t.Fail(row.line, "unknown cell '" + c + "' (known: vanilla, lstm, gru)");
    }
    p.hidden = t.Positive(row, hidden);
    p.input = p.hidden;
    p.batch = t.Positive(row, n);
    p.steps = t.Positive(row, steps);
    p.input_mode = sim::RnnInput::kSkip;
    p.precision = DeepbenchPrecision(row.fields[precision]);
    const struct {
      std::size_t column;
      DeepbenchKernel kind;
    } passes[] = {{fwd, DeepbenchKernel::kRnnForward},
                  {bwd_in, DeepbenchKernel::kRnnBackwardData},
                  {bwd, DeepbenchKernel::kRnnBackwardData},
                  {bwd_par, DeepbenchKernel::kRnnBackwardWeights}};
    for (const auto& pass : passes) {
      const std::optional<double> ms = t.Number(row, pass.column, true);
      if (!ms || *ms <= 0) continue;
      DeepbenchMeasurement d;
      d.gpu = row.fields[gpu];
      d.precision = row.fields[precision];
      d.file = Base(filename);
      d.line = row.line;
      d.kind = pass.kind;
      d.rnn = p;
      d.measured_s = *ms / 1000.0;
      out.push_back(std::move(d));
    }
  }
  return out;
}

std::vector<DeepbenchMeasurement> LoadDeepbench(const std::string& dir) {
  const fs::path gemm = fs::path(dir) / "gemm.csv", conv = fs::path(dir) / "conv.csv",
                 rnn = fs::path(dir) / "rnn.csv";
  std::vector<DeepbenchMeasurement> all = ParseDeepbenchGemm(ReadFile(gemm), gemm.string());
  std::vector<DeepbenchMeasurement> c = ParseDeepbenchConv(ReadFile(conv), conv.string());
  all.insert(all.end(), c.begin(), c.end());
  if (fs::exists(rnn)) {
    std::vector<DeepbenchMeasurement> r = ParseDeepbenchRnn(ReadFile(rnn), rnn.string());
    all.insert(all.end(), r.begin(), r.end());
  }
  return all;
}

DeepbenchPrediction PredictDeepbench(const sim::GpuKernelModel& model,
                                     const DeepbenchMeasurement& m) {
  DeepbenchPrediction p;
  sim::GemmEstimate g;
  if (std::string(DeepbenchKernelGroup(m.kind)) == "rnn") {
    const plan::TaskKind kind = m.kind == DeepbenchKernel::kRnnForward ? plan::TaskKind::kForward
                                : m.kind == DeepbenchKernel::kRnnBackwardData
                                    ? plan::TaskKind::kBackwardInput
                                    : plan::TaskKind::kBackwardWeight;
    // The kernels the simulator prices for a recurrent op (sim/cost/rnn_kernels.h).
    for (const sim::KernelCall& k : sim::RnnKernels(m.rnn, kind)) {
      p.predicted_s += sim::KernelSeconds(model, k);
      // The tile of the per-step GEMM (wgrad: of its one GEMM).
      if (k.type == sim::KernelCall::Type::kGemm && k.step != sim::KernelCall::Step::kNone)
        g = model.RecurrentStepGemm(k.gemm, k.step == sim::KernelCall::Step::kBackward);
      else if (k.type == sim::KernelCall::Type::kGemm && kind == plan::TaskKind::kBackwardWeight)
        g = model.Gemm(k.gemm);
    }
    p.algorithm = "standard";
  } else if (m.kind == DeepbenchKernel::kGemm) {
    g = model.Gemm(m.gemm);
    p.predicted_s = g.seconds;
    p.algorithm = "gemm";
  } else {
    const sim::ConvPass pass = m.kind == DeepbenchKernel::kConvForward ? sim::ConvPass::kForward
                               : m.kind == DeepbenchKernel::kConvBackwardData
                                   ? sim::ConvPass::kBackwardData
                                   : sim::ConvPass::kBackwardFilter;
    const sim::ConvEstimate c = model.Conv(m.conv, pass);
    g = c.gemm;
    p.predicted_s = c.seconds;
    p.algorithm = sim::ConvAlgorithmName(c.algorithm);
  }
  p.unit = sim::MathUnitName(g.unit);
  p.tile_m = g.tile_m;
  p.tile_n = g.tile_n;
  p.split_k = g.split_k;
  return p;
}

double RooflineDeepbench(const hw::DeviceSpec& device, const DeepbenchMeasurement& m) {
  // sim/cost/cost_model.h's defaults before the kernel model.
  constexpr double kDense = 0.75, kConv = 0.55, kMemory = 0.7, kLaunch = 5e-6;
  double flops = 0, bytes = 0, efficiency = 0;
  hw::Precision precision;
  if (std::string(DeepbenchKernelGroup(m.kind)) == "rnn") {
    // The layer's GEMM work for the pass (skip input: only the recurrent
    // weights, G H x H, against T N rows) at the cost model's default
    // efficiency for ops other than dense, conv and matmul (0.5); bytes: the
    // weights and the T N x (G H + 2 H) activations; one launch.
    const sim::RnnProblem& r = m.rnn;
    precision = r.precision;
    const double e = precision == hw::Precision::kFp16 ? 2 : 4;
    const double gh = static_cast<double>(models::RnnGates(r.cell) * r.hidden);
    const double h = static_cast<double>(r.hidden);
    const double rows = static_cast<double>(r.steps) * static_cast<double>(r.batch);
    flops = 2 * gh * h * rows;
    bytes = (gh * h + rows * (gh + 2 * h)) * e;
    efficiency = 0.5;
  } else if (m.kind == DeepbenchKernel::kGemm) {
    const double mm = m.gemm.m, n = m.gemm.n, k = m.gemm.k;
    precision = m.gemm.precision;
    const double e = precision == hw::Precision::kFp16 ? 2 : 4;
    flops = 2 * mm * n * k;
    bytes = (mm * k + k * n + mm * n) * e;
    efficiency = kDense;
  } else {
    const sim::ConvProblem& c = m.conv;
    precision = c.precision;
    const double e = precision == hw::Precision::kFp16 ? 2 : 4;
    flops = 2.0 * c.n * c.p() * c.q() * c.k * (c.c / c.groups) * c.r * c.s;
    bytes = (static_cast<double>(c.n) * c.c * c.h * c.w +
             static_cast<double>(c.n) * c.k * c.p() * c.q() +
             static_cast<double>(c.k) * c.c * c.r * c.s) *
            e;
    efficiency = kConv;
  }
  return std::max(flops / (device.PeakFlopRate(precision) * efficiency),
                  bytes / (device.memory_bw_bytes_per_s * kMemory)) +
         kLaunch;
}

}  // namespace dtsim::validation
