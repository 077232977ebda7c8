#include "sim/cost/op_kernels.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "sim/cost/rnn_kernels.h"

namespace dtsim::sim {
namespace {

std::int64_t Product(const models::Shape& s, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

// batch x count as a GEMM dimension; refused beyond 2^53 (models/op.h's
// bound on sizes) instead of wrapping.
std::int64_t Rows(int batch, std::int64_t count, const models::Op& op) {
  const double rows = static_cast<double>(batch) * static_cast<double>(count);
  if (rows > static_cast<double>(models::kMaxModelCount))
    throw UserError("op " + op.name + ": a batch of " + std::to_string(batch) + " makes " +
                        std::to_string(rows) + " rows, more than dtsim prices (2^53)",
                    "use a smaller batch");
  return static_cast<std::int64_t>(rows);
}

}  // namespace

KernelCall GemmCall(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, bool a_t,
                bool b_t, std::int64_t batch, hw::Precision precision) {
  KernelCall c;
  c.type = KernelCall::Type::kGemm;
  c.name = std::move(name);
  c.gemm.m = m;
  c.gemm.n = n;
  c.gemm.k = k;
  c.gemm.a_t = a_t;
  c.gemm.b_t = b_t;
  c.gemm.batch = batch;
  c.gemm.precision = precision;
  return c;
}

KernelCall StreamCall(std::string name, double bytes) {
  KernelCall c;
  c.type = KernelCall::Type::kStream;
  c.name = std::move(name);
  c.bytes = bytes;
  return c;
}

std::vector<KernelCall> OpKernels(const models::Op& op, plan::TaskKind kind, int batch,
                                  hw::Precision precision) {
  DTSIM_CHECK(kind == plan::TaskKind::kForward || kind == plan::TaskKind::kBackwardInput ||
                  kind == plan::TaskKind::kBackwardWeight,
              "not a compute task kind");
  const bool fwd = kind == plan::TaskKind::kForward;
  const bool dgrad = kind == plan::TaskKind::kBackwardInput;
  const double elem = models::DTypeBytes(op.dtype);
  // fp8 casts only linear layers' GEMMs; every other kernel runs in bf16.
  const bool fp8 = precision == hw::Precision::kFp8;
  if (fp8) precision = hw::Precision::kBf16;
  std::vector<KernelCall> out;
  const bool has_input = !op.input_shapes.empty() && !op.input_shapes[0].empty();
  switch (op.kind) {
    case models::OpKind::kDense:
      if (has_input && !op.output_shape.empty()) {
        const models::Shape& in = op.input_shapes[0];
        const int t = std::max(1, op.attrs.tensor_split);  // this rank's part of the layer
        const std::int64_t in_f = op.attrs.tensor_split_input ? in.back() / t : in.back();
        const std::int64_t out_f =
            op.attrs.tensor_split_input ? op.output_shape.back() : op.output_shape.back() / t;
        const std::int64_t rows = Rows(batch, Product(in, 0, in.size() - 1), op);
        const hw::Precision gemm = fp8 ? hw::Precision::kFp8 : precision;
        // Each cast reads the bf16 tensor and writes its FP8 copy and the
        // FP8 transpose (Transformer Engine's fused cast-transpose, with the
        // amax of the tensor reduced on the way): 2 + 1 + 1 bytes a value.
        if (fwd) {
          if (fp8) out.push_back(StreamCall(kFp8CastPrefix + std::string("input"),
                                        4.0 * static_cast<double>(rows) * static_cast<double>(in_f)));
          out.push_back(GemmCall("fwd gemm", out_f, rows, in_f, true, false, 1, gemm));
        } else if (dgrad) {
          if (fp8) out.push_back(StreamCall(kFp8CastPrefix + std::string("grad"),
                                        4.0 * static_cast<double>(rows) * static_cast<double>(out_f)));
          out.push_back(GemmCall("dgrad gemm", in_f, rows, out_f, false, false, 1, gemm));
        } else {
          out.push_back(GemmCall("wgrad gemm", in_f, out_f, rows, false, true, 1, gemm));
          if (op.attrs.bias)
            out.push_back(StreamCall("bias grad", static_cast<double>(rows * out_f) * elem));
        }
        return out;
      }
      break;
    case models::OpKind::kConv2d:
      if (has_input && op.input_shapes[0].size() == 3 && op.output_shape.size() == 3) {
        KernelCall c;
        c.type = KernelCall::Type::kConv;
        c.conv.n = batch;
        c.conv.c = op.input_shapes[0][0];
        c.conv.h = op.input_shapes[0][1];
        c.conv.w = op.input_shapes[0][2];
        c.conv.k = op.output_shape[0];
        c.conv.r = op.attrs.kernel_h;
        c.conv.s = op.attrs.kernel_w;
        c.conv.stride_h = op.attrs.stride_h;
        c.conv.stride_w = op.attrs.stride_w;
        c.conv.pad_h = op.attrs.pad_h;
        c.conv.pad_w = op.attrs.pad_w;
        c.conv.groups = op.attrs.groups;
        c.conv.precision = precision;
        c.pass = fwd     ? ConvPass::kForward
                 : dgrad ? ConvPass::kBackwardData
                         : ConvPass::kBackwardFilter;
        c.name = std::string(ConvPassName(c.pass)) + " conv";
        out.push_back(c);
        const double out_bytes = static_cast<double>(batch) *
                                 static_cast<double>(models::NumElements(op.output_shape)) * elem;
        if (op.attrs.bias && fwd) out.push_back(StreamCall("bias add", 2 * out_bytes));
        if (op.attrs.bias && !fwd && !dgrad) out.push_back(StreamCall("bias grad", out_bytes));
        return out;
      }
      break;
    case models::OpKind::kMatMul:
      if (op.input_shapes.size() == 2 && op.input_shapes[0].size() >= 2 &&
          op.output_shape.size() >= 2) {
        const models::Shape& a = op.input_shapes[0];
        const std::int64_t m = a[a.size() - 2], k = a.back(), n = op.output_shape.back();
        const std::int64_t b =
            Rows(batch, Product(a, 0, a.size() - 2), op) / std::max(1, op.attrs.tensor_split);
        // Row-major C (m x n) = A (m x k) B (k x n) is column-major
        // C^T = B^T A^T: cuBLAS m = n, n = m.
        if (fwd) {
          out.push_back(GemmCall("fwd bmm", n, m, k, op.attrs.transpose_b, false, b, precision));
        } else if (dgrad) {
          out.push_back(GemmCall("grad a bmm", k, m, n, !op.attrs.transpose_b, false, b, precision));
          out.push_back(GemmCall("grad b bmm", n, k, m, false, true, b, precision));
        }
        return out;
      }
      break;
    case models::OpKind::kAttention:
      if (op.input_shapes.size() == 3 && op.input_shapes[0].size() == 3) {
        const models::Shape& q = op.input_shapes[0];
        if (!fwd && !dgrad) return out;  // no weights
        KernelCall c;
        c.type = KernelCall::Type::kAttention;
        c.name = fwd ? "fwd attention" : "dgrad attention";
        c.attention.heads = Rows(batch, q[0], op) / std::max(1, op.attrs.tensor_split);
        c.attention.seq = q[1];
        c.attention.head_dim = q[2];
        c.attention.causal = op.attrs.causal;
        c.attention.backward = dgrad;
        c.attention.kernel = op.attrs.attention_kernel;
        c.attention.precision = precision;
        out.push_back(c);
        return out;
      }
      break;
    case models::OpKind::kRecurrent:
      if (has_input && op.input_shapes[0].size() == 2) {
        // cuDNN's standard algorithm with a linear input (PyTorch's
        // nn.RNN/LSTM/GRU): sim/cost/rnn_kernels.h.
        RnnProblem r;
        r.cell = op.attrs.cell;
        r.steps = op.input_shapes[0][0];
        r.input = op.input_shapes[0][1];
        r.hidden = op.output_shape.back();
        r.batch = batch;
        Rows(batch, r.steps, op);  // refuses T N beyond 2^53
        r.input_mode = RnnInput::kLinear;
        r.precision = precision;
        return RnnKernels(r, kind);
      }
      break;
    case models::OpKind::kReshape:
      if (models::IsCopyView(op.attrs.view)) break;  // a copy
      return out;
    case models::OpKind::kInput:
      return out;
    default:
      break;
  }
  // Memory-bound: the bytes the op moves (the roofline's memory term).
  double bytes = 0;
  if (fwd && op.kind == models::OpKind::kEmbedding) {
    // A lookup gathers the rows it needs, not the whole table.
    bytes = op.FwdBytes(batch) - op.ParamBytes();
  } else if (fwd) {
    bytes = op.FwdBytes(batch);
  } else if (dgrad) {
    bytes = op.BwdBytes(batch) - op.ParamBytes();
  } else {
    bytes = op.BwdBytes(batch);
  }
  if (bytes > 0) out.push_back(StreamCall(fwd ? "fwd" : dgrad ? "dgrad" : "wgrad", bytes));
  return out;
}

std::vector<KernelCall> Fp8WeightCastKernels(const models::Op& op, hw::Precision precision) {
  std::vector<KernelCall> out;
  if (precision != hw::Precision::kFp8 || op.kind != models::OpKind::kDense ||
      op.input_shapes.empty() || op.input_shapes[0].empty() || op.output_shape.empty())
    return out;
  const int t = std::max(1, op.attrs.tensor_split);
  const double in_f = static_cast<double>(op.input_shapes[0].back());
  const double out_f = static_cast<double>(op.output_shape.back());
  // This rank's weight (in_f x out_f / t): read in bf16, written in FP8 and
  // transposed in FP8.
  out.push_back(StreamCall(kFp8CastPrefix + std::string("weight"), 4.0 * in_f * out_f / t));
  return out;
}

KernelCall Fp8ScaleUpdateKernel(int fp8_tensors) {
  // Each tensor's amax history (kFp8AmaxHistory fp32 values) is read and
  // written back rolled, and its scale and inverse scale are written.
  return StreamCall(kFp8CastPrefix + std::string("scale update"),
                std::max(0, fp8_tensors) * (2.0 * 4 * kFp8AmaxHistory + 8));
}

bool IsFp8Kernel(const KernelCall& k, bool* cast) {
  const bool is_cast = k.type == KernelCall::Type::kStream && k.name.starts_with(kFp8CastPrefix);
  if (cast != nullptr) *cast = is_cast;
  return is_cast || (k.type == KernelCall::Type::kGemm && k.gemm.precision == hw::Precision::kFp8);
}

double KernelSeconds(const GpuKernelModel& model, const KernelCall& k) {
  const double times = static_cast<double>(k.repeat);
  switch (k.type) {
    case KernelCall::Type::kGemm:
      if (k.step != KernelCall::Step::kNone)
        return times * model.RecurrentStepGemm(k.gemm, k.step == KernelCall::Step::kBackward).seconds;
      return times * model.Gemm(k.gemm).seconds;
    case KernelCall::Type::kConv:
      return times * model.Conv(k.conv, k.pass).seconds;
    case KernelCall::Type::kStream:
      return times * model.StreamSeconds(k.bytes);
    case KernelCall::Type::kAttention:
      return times * model.AttentionSeconds(k.attention);
  }
  return 0;
}

std::string DescribeKernel(const GpuKernelModel& model, const KernelCall& k) {
  char buf[200];
  switch (k.type) {
    case KernelCall::Type::kGemm: {
      const GemmEstimate e =
          k.step != KernelCall::Step::kNone
              ? model.RecurrentStepGemm(k.gemm, k.step == KernelCall::Step::kBackward)
              : model.Gemm(k.gemm);
      std::snprintf(buf, sizeof buf,
                    "m=%lld n=%lld k=%lld batch=%lld %s %dx%d split=%d waves=%lld%s%s",
                    static_cast<long long>(k.gemm.m), static_cast<long long>(k.gemm.n),
                    static_cast<long long>(k.gemm.k), static_cast<long long>(k.gemm.batch),
                    MathUnitName(e.unit), e.tile_m, e.tile_n, e.split_k,
                    static_cast<long long>(e.waves), e.memory_bound ? " memory-bound" : "",
                    k.repeat > 1 ? (" x" + std::to_string(k.repeat) + " steps").c_str() : "");
      return buf;
    }
    case KernelCall::Type::kConv: {
      const ConvEstimate e = model.Conv(k.conv, k.pass);
      std::snprintf(buf, sizeof buf, "N=%lld C=%lld %lldx%lld K=%lld %dx%d/%d %s, %s %dx%d%s",
                    static_cast<long long>(k.conv.n), static_cast<long long>(k.conv.c),
                    static_cast<long long>(k.conv.h), static_cast<long long>(k.conv.w),
                    static_cast<long long>(k.conv.k), k.conv.r, k.conv.s, k.conv.stride_h,
                    ConvAlgorithmName(e.algorithm), MathUnitName(e.gemm.unit), e.gemm.tile_m,
                    e.gemm.tile_n, e.gemm.memory_bound ? " memory-bound" : "");
      return buf;
    }
    case KernelCall::Type::kStream:
      std::snprintf(buf, sizeof buf, "%.3g MB through memory%s", k.bytes / 1e6,
                    k.repeat > 1 ? (" x" + std::to_string(k.repeat) + " steps").c_str() : "");
      return buf;
    case KernelCall::Type::kAttention:
      std::snprintf(buf, sizeof buf, "flash heads=%lld S=%lld D=%lld%s%s",
                    static_cast<long long>(k.attention.heads),
                    static_cast<long long>(k.attention.seq),
                    static_cast<long long>(k.attention.head_dim),
                    k.attention.causal ? " causal" : "", k.attention.backward ? " backward" : "");
      return buf;
  }
  return "";
}

}  // namespace dtsim::sim
