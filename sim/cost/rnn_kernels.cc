#include "sim/cost/rnn_kernels.h"

#include "common/error.h"

namespace dtsim::sim {
namespace {

// GemmCall and StreamCall (sim/cost/op_kernels.h) launched `repeat` times.
KernelCall Gemm(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, bool a_t,
                bool b_t, hw::Precision precision, std::int64_t repeat) {
  KernelCall c = GemmCall(std::move(name), m, n, k, a_t, b_t, 1, precision);
  c.repeat = repeat;
  return c;
}

KernelCall Stream(std::string name, double bytes, std::int64_t repeat) {
  KernelCall c = StreamCall(std::move(name), bytes);
  c.repeat = repeat;
  return c;
}

}  // namespace

std::vector<KernelCall> RnnKernels(const RnnProblem& p, plan::TaskKind kind) {
  DTSIM_CHECK(p.steps > 0 && p.batch > 0 && p.input > 0 && p.hidden > 0,
              "recurrent layer sizes must be positive");
  DTSIM_CHECK(p.input_mode == RnnInput::kLinear || p.input == p.hidden,
              "skip input needs as many input features as hidden units");
  DTSIM_CHECK(kind == plan::TaskKind::kForward || kind == plan::TaskKind::kBackwardInput ||
                  kind == plan::TaskKind::kBackwardWeight,
              "not a compute task kind");
  const std::int64_t t = p.steps, n = p.batch, in = p.input, h = p.hidden;
  const std::int64_t gh = models::RnnGates(p.cell) * h;
  const std::int64_t rows = t * n;
  const bool linear = p.input_mode == RnnInput::kLinear;
  const double elem = p.precision == hw::Precision::kFp32 || p.precision == hw::Precision::kTf32
                          ? 4
                          : 2;
  // The forward cell reads the G H pre-activations and the previous state
  // (h; an LSTM's c too), writes the new state and keeps the gates for
  // backward: counted as 2 G H + 3 H values per sequence; with skip input it
  // reads x_t too. Backward reads the kept gates and the incoming
  // gradients and writes the gates' gradients: twice the forward's bytes.
  const double cell_bytes =
      static_cast<double>(n) * static_cast<double>(2 * gh + 3 * h + (linear ? 0 : h)) * elem;
  const hw::Precision pr = p.precision;
  std::vector<KernelCall> out;
  // GEMMs in cuBLAS's column-major terms, as sim/cost/op_kernels.h: m = the
  // output features, n = the rows (sequences), k = the reduced features.
  switch (kind) {
    case plan::TaskKind::kForward:
      if (linear) out.push_back(Gemm("fwd input gemm", gh, rows, in, true, false, pr, 1));
      out.push_back(Gemm("fwd step gemm", gh, n, h, true, false, pr, t));
      out.back().step = KernelCall::Step::kForward;
      out.push_back(Stream("fwd step cell", cell_bytes, t));
      break;
    case plan::TaskKind::kBackwardInput:
      out.push_back(Stream("dgrad step cell", 2 * cell_bytes, t));
      out.push_back(Gemm("dgrad step gemm", h, n, gh, false, false, pr, t));
      out.back().step = KernelCall::Step::kBackward;
      if (linear) out.push_back(Gemm("dgrad input gemm", in, rows, gh, false, false, pr, 1));
      break;
    default:
      if (linear) out.push_back(Gemm("wgrad input gemm", in, gh, rows, false, true, pr, 1));
      out.push_back(Gemm("wgrad hidden gemm", h, gh, rows, false, true, pr, 1));
      out.push_back(
          Stream("wgrad bias", static_cast<double>(rows) * static_cast<double>(gh) * elem, 1));
      break;
  }
  return out;
}

double RnnSeconds(const GpuKernelModel& model, const RnnProblem& p, plan::TaskKind kind) {
  double seconds = 0;
  for (const KernelCall& k : RnnKernels(p, kind)) seconds += KernelSeconds(model, k);
  return seconds;
}

}  // namespace dtsim::sim
