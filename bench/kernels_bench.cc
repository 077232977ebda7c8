// FLOP/s of the CPU backend's kernels on one core, against the core's
// measured peak. A multiply-add counts as 2 FLOPs; the "FLOP/s" counter is a
// rate (Google Benchmark prints e.g. 21.3G/s).
//
//   Gemm/<isa>/<n>        square n x n x n GEMM; isa 0 = the portable
//                         kernels, 1 = the AVX2+FMA build, 2 = the AVX-512
//                         build (cpu_isa.h)
//   CifarGemm/<layer>     the CIFAR-10 tutorial CNN's fully connected layers
//                         at batch 32 (2304->384, 384->192, 192->10)
//   Conv2dForward/<layer>/<isa> its convolutions at batch 32: conv1 3->64 on
//                         24x24, conv2 64->64 on 12x12, both 5x5 with padding 2
//   Attention*            one GPT-2-small layer's causal attention, S = 256,
//                         D = 64, 12 heads: Q K^T, softmax, P V
//   PeakFma               independent multiply-add chains in the kernels'
//                         ISA (baseline x86-64: SSE mul + add), the roof
//                         the GEMM is measured against
//   PeakFmaAvx2           the same with 256-bit FMA instructions, the AVX2
//                         build's roof (skipped without AVX2/FMA)
//   PeakFmaAvx512         with 512-bit FMA instructions, the AVX-512 build's
//                         roof (skipped without AVX-512)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "exec/kernels/cpu_backend.h"
#include "exec/kernels/cpu_isa.h"

namespace dtsim::exec {
namespace {

// A backend buffer of `count` floats filled with a small constant.
class Buffer {
 public:
  Buffer(Backend& backend, std::int64_t count) : backend_(backend) {
    p_ = backend.Allocate(count);
    backend.Fill(p_, count, 0.01f);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { backend_.Free(p_); }
  float* get() { return p_; }

 private:
  Backend& backend_;
  float* p_;
};

void SetFlopRate(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOP/s"] = benchmark::Counter(
      flops_per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// The backend of kernel build `isa` (0 portable, 1 AVX2+FMA, 2 AVX-512), or
// null after marking the benchmark skipped.
std::unique_ptr<Backend> BackendFor(benchmark::State& state, std::int64_t isa) {
  const CpuIsa which = isa == 0 ? CpuIsa::kPortable : isa == 1 ? CpuIsa::kAvx2Fma : CpuIsa::kAvx512;
  if (!CpuIsaAvailable(which)) {
    state.SkipWithError("this build of the kernels is not in the binary or not run by this CPU");
    return nullptr;
  }
  state.SetLabel(CpuIsaName(which));
  return MakeCpuBackend(which);
}

void RunGemm(benchmark::State& state, std::int64_t m, std::int64_t n, std::int64_t k,
             std::int64_t isa = 0) {
  const std::unique_ptr<Backend> owned = BackendFor(state, isa);
  if (!owned) return;
  Backend& backend = *owned;
  Buffer a(backend, m * k), b(backend, k * n), c(backend, m * n);
  for (auto _ : state) {
    backend.Gemm(false, false, m, n, k, 1.0f, a.get(), b.get(), 0.0f, c.get());
    benchmark::DoNotOptimize(c.get());
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 2.0 * static_cast<double>(m * n * k));
}

void BM_Gemm(benchmark::State& state) {
  const std::int64_t n = state.range(1);
  RunGemm(state, n, n, n, state.range(0));
}
BENCHMARK(BM_Gemm)
    ->ArgsProduct({{0, 1, 2}, {256, 512, 1024, 2048}})
    ->Unit(benchmark::kMillisecond);

// Batch 32 x (in -> out): activations (32 x in) times weights (in x out).
void BM_CifarGemm(benchmark::State& state) {
  RunGemm(state, 32, state.range(1), state.range(0));
}
BENCHMARK(BM_CifarGemm)
    ->ArgNames({"in", "out"})
    ->Args({2304, 384})
    ->Args({384, 192})
    ->Args({192, 10})
    ->Unit(benchmark::kMicrosecond);

// Batch 32, square input of side `hw`, 5x5 kernel, padding 2, stride 1.
void BM_Conv2dForward(benchmark::State& state) {
  Conv2dArgs a;
  a.n = 32, a.c = state.range(0), a.h = state.range(2), a.w = state.range(2);
  a.k = state.range(1), a.r = 5, a.s = 5, a.pad_h = 2, a.pad_w = 2;
  a.oh = a.h, a.ow = a.w;
  const std::unique_ptr<Backend> owned = BackendFor(state, state.range(3));
  if (!owned) return;
  Backend& backend = *owned;
  Buffer x(backend, a.n * a.c * a.h * a.w), w(backend, a.k * a.c * a.r * a.s),
      bias(backend, a.k), y(backend, a.n * a.k * a.oh * a.ow);
  for (auto _ : state) {
    backend.Conv2dForward(a, x.get(), w.get(), bias.get(), y.get());
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 2.0 * static_cast<double>(a.n * a.k * a.oh * a.ow * a.c * a.r * a.s));
}
BENCHMARK(BM_Conv2dForward)
    ->ArgNames({"c", "k", "hw", "isa"})
    ->Args({3, 64, 24, 0})   // conv1
    ->Args({64, 64, 12, 0})  // conv2
    ->Args({3, 64, 24, 1})
    ->Args({64, 64, 12, 1})
    ->Args({3, 64, 24, 2})
    ->Args({64, 64, 12, 2})
    ->Unit(benchmark::kMillisecond);

// One sample's attention: q, k, v (heads, S, D), scores/probs (heads, S, S).
struct AttentionBuffers {
  static constexpr std::int64_t kHeads = 12, kSeq = 256, kDim = 64;
  explicit AttentionBuffers(Backend& backend)
      : q(backend, kHeads * kSeq * kDim),
        k(backend, kHeads * kSeq * kDim),
        v(backend, kHeads * kSeq * kDim),
        scores(backend, kHeads * kSeq * kSeq),
        probs(backend, kHeads * kSeq * kSeq),
        out(backend, kHeads * kSeq * kDim) {}
  Buffer q, k, v, scores, probs, out;
};
constexpr std::int64_t kH = AttentionBuffers::kHeads, kS = AttentionBuffers::kSeq,
                       kD = AttentionBuffers::kDim;
// Q K^T and P V each: heads * S * S * D multiply-adds.
constexpr double kAttentionGemmFlops = 2.0 * kH * kS * kS * kD;

void Scores(Backend& backend, AttentionBuffers& t) {
  backend.GemmBatched(kH, false, true, kS, kS, kD, 0.125f, t.q.get(), kS * kD, t.k.get(),
                      kS * kD, 0.0f, t.scores.get(), kS * kS);
}
void Values(Backend& backend, AttentionBuffers& t) {
  backend.GemmBatched(kH, false, false, kS, kD, kS, 1.0f, t.probs.get(), kS * kS, t.v.get(),
                      kS * kD, 0.0f, t.out.get(), kS * kD);
}

void BM_AttentionScores(benchmark::State& state) {
  CpuBackend backend;
  AttentionBuffers t(backend);
  for (auto _ : state) {
    Scores(backend, t);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, kAttentionGemmFlops);
}
BENCHMARK(BM_AttentionScores)->Unit(benchmark::kMillisecond);

// Causal softmax over (heads * S) rows of S: reported in rows/s, no FLOPs.
void BM_AttentionSoftmax(benchmark::State& state) {
  CpuBackend backend;
  AttentionBuffers t(backend);
  for (auto _ : state) {
    backend.SoftmaxForward(kH * kS, kS, true, t.scores.get(), t.probs.get());
    benchmark::ClobberMemory();
  }
  state.counters["rows/s"] = benchmark::Counter(
      static_cast<double>(kH * kS) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AttentionSoftmax)->Unit(benchmark::kMillisecond);

void BM_AttentionValues(benchmark::State& state) {
  CpuBackend backend;
  AttentionBuffers t(backend);
  for (auto _ : state) {
    Values(backend, t);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, kAttentionGemmFlops);
}
BENCHMARK(BM_AttentionValues)->Unit(benchmark::kMillisecond);

// The three together; FLOPs are the two GEMMs' (the softmax's few per
// element are not counted), and the GEMMs compute the masked half too.
void BM_AttentionForward(benchmark::State& state) {
  CpuBackend backend;
  AttentionBuffers t(backend);
  for (auto _ : state) {
    Scores(backend, t);
    backend.SoftmaxForward(kH * kS, kS, true, t.scores.get(), t.probs.get());
    Values(backend, t);
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 2 * kAttentionGemmFlops);
}
BENCHMARK(BM_AttentionForward)->Unit(benchmark::kMillisecond);

// 48 independent chains acc = acc * a + b (12 SSE registers of 4 lanes):
// enough in flight to cover the mul + add latency, few enough to stay in
// registers. Compiled with the kernels' flags, so this is the peak the
// GEMM can reach with the same instructions. 2 FLOPs per update.
void BM_PeakFma(benchmark::State& state) {
  constexpr int kChains = 48, kSteps = 4096;
  float acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = static_cast<float>(i);
  float a = 0.999f, b = 0.001f;
  benchmark::DoNotOptimize(a);
  benchmark::DoNotOptimize(b);
  for (auto _ : state) {
    for (int step = 0; step < kSteps; ++step) {
      for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * a + b;
    }
    benchmark::DoNotOptimize(acc);
  }
  SetFlopRate(state, 2.0 * kChains * kSteps);
}
BENCHMARK(BM_PeakFma);

#if defined(__x86_64__)
// 12 independent chains of 256-bit fused multiply-adds (96 lanes).
__attribute__((target("avx2,fma"))) void FmaChainsAvx2(int steps, float* out) {
  constexpr int kRegs = 12;
  __m256 acc[kRegs];
  for (int r = 0; r < kRegs; ++r) acc[r] = _mm256_set1_ps(static_cast<float>(r));
  const __m256 a = _mm256_set1_ps(out[0]), b = _mm256_set1_ps(out[1]);
  for (int step = 0; step < steps; ++step) {
    for (int r = 0; r < kRegs; ++r) acc[r] = _mm256_fmadd_ps(acc[r], a, b);
  }
  __m256 sum = acc[0];
  for (int r = 1; r < kRegs; ++r) sum = _mm256_add_ps(sum, acc[r]);
  _mm256_storeu_ps(out, sum);
}

void BM_PeakFmaAvx2(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    state.SkipWithError("no AVX2/FMA on this CPU");
    return;
  }
  constexpr int kSteps = 4096;
  float io[8] = {0.999f, 0.001f};
  for (auto _ : state) {
    FmaChainsAvx2(kSteps, io);
    io[0] = 0.999f, io[1] = 0.001f;
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 2.0 * 12 * 8 * kSteps);
}
BENCHMARK(BM_PeakFmaAvx2);

// 12 independent chains of 512-bit fused multiply-adds (192 lanes): as many
// as the AVX2 roof uses, which covers 2 FMA pipes of 4-cycle latency and
// stays in registers (24 chains measured half the rate: GCC kept them in
// memory).
__attribute__((target("avx512f,fma"))) void FmaChainsAvx512(int steps, float* out) {
  constexpr int kRegs = 12;
  __m512 acc[kRegs];
  for (int r = 0; r < kRegs; ++r) acc[r] = _mm512_set1_ps(static_cast<float>(r));
  const __m512 a = _mm512_set1_ps(out[0]), b = _mm512_set1_ps(out[1]);
  for (int step = 0; step < steps; ++step) {
    for (int r = 0; r < kRegs; ++r) acc[r] = _mm512_fmadd_ps(acc[r], a, b);
  }
  __m512 sum = acc[0];
  for (int r = 1; r < kRegs; ++r) sum = _mm512_add_ps(sum, acc[r]);
  _mm512_storeu_ps(out, sum);
}

void BM_PeakFmaAvx512(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("fma")) {
    state.SkipWithError("no AVX-512 on this CPU");
    return;
  }
  constexpr int kSteps = 4096;
  float io[16] = {0.999f, 0.001f};
  for (auto _ : state) {
    FmaChainsAvx512(kSteps, io);
    io[0] = 0.999f, io[1] = 0.001f;
    benchmark::ClobberMemory();
  }
  SetFlopRate(state, 2.0 * 12 * 16 * kSteps);
}
BENCHMARK(BM_PeakFmaAvx512);
#endif

}  // namespace
}  // namespace dtsim::exec

BENCHMARK_MAIN();
