// CUDA backend throughput: GEMM, convolution and attention in GFLOP/s
// (counter "flop/s"), the FLOPs counted as multiply-adds x 2. Each iteration
// ends with Synchronize, so the time is the GPU's. Reports an error (no
// crash) when no GPU is visible.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_check.h"

namespace dtsim::exec {
namespace {

// A backend and device buffers, freed at the end of the benchmark.
class Scratch {
 public:
  explicit Scratch(CudaBackend& b) : b_(b) {}
  ~Scratch() {
    for (float* p : buffers_) b_.Free(p);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // `count` floats, filled with `value` (the values do not change the time).
  float* Buffer(std::int64_t count, float value = 0.01f) {
    float* p = b_.Allocate(count);
    b_.Fill(p, count, value);
    buffers_.push_back(p);
    return p;
  }

 private:
  CudaBackend& b_;
  std::vector<float*> buffers_;
};

// The backend, or null after reporting the reason to `state`.
std::unique_ptr<CudaBackend> MakeBackend(benchmark::State& state) {
  std::string why;
  if (CudaBackend::VisibleDevices(&why) == 0) {
    state.SkipWithError(why.c_str());
    return nullptr;
  }
  return std::make_unique<CudaBackend>(0);
}

void SetFlops(benchmark::State& state, double flop_per_iteration) {
  state.counters["flop/s"] = benchmark::Counter(
      flop_per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// Square GEMM n x n x n.
void BM_Gemm(benchmark::State& state) {
  auto b = MakeBackend(state);
  if (!b) return;
  const std::int64_t n = state.range(0);
  Scratch s(*b);
  float *x = s.Buffer(n * n), *w = s.Buffer(n * n), *y = s.Buffer(n * n);
  for (auto _ : state) {
    b->Gemm(false, true, n, n, n, 1.0f, x, w, 0.0f, y);
    b->Synchronize();
  }
  SetFlops(state, 2.0 * n * n * n);
}
BENCHMARK(BM_Gemm)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// 3x3 convolution, stride 1, same padding: N=32, C=K=channels, H=W=size
// (ResNet-50 stage shapes). Forward, and forward + backward.
void BM_Conv3x3(benchmark::State& state) {
  auto b = MakeBackend(state);
  if (!b) return;
  Conv2dArgs a;
  a.n = 32, a.c = a.k = state.range(0), a.h = a.w = state.range(1);
  a.r = a.s = 3, a.pad_h = a.pad_w = 1;
  a.oh = a.h, a.ow = a.w;
  const bool backward = state.range(2) != 0;
  Scratch s(*b);
  float* x = s.Buffer(a.n * a.c * a.h * a.w);
  float* w = s.Buffer(a.k * a.c * 9);
  float* bias = s.Buffer(a.k);
  float* y = s.Buffer(a.n * a.k * a.oh * a.ow);
  float* dx = backward ? s.Buffer(a.n * a.c * a.h * a.w) : nullptr;
  float* dw = backward ? s.Buffer(a.k * a.c * 9) : nullptr;
  float* db = backward ? s.Buffer(a.k) : nullptr;
  for (auto _ : state) {
    b->Conv2dForward(a, x, w, bias, y);
    if (backward) b->Conv2dBackward(a, x, w, y, dx, dw, db);
    b->Synchronize();
  }
  const double forward = 2.0 * a.n * a.k * a.oh * a.ow * a.c * 9;
  SetFlops(state, backward ? 3 * forward : forward);  // backward: dx and dw GEMMs
}
BENCHMARK(BM_Conv3x3)
    ->Args({64, 56, 0})->Args({256, 14, 0})->Args({64, 56, 1})->Args({256, 14, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// ResNet-50's pointwise (1 x 1, stride 1) convolutions, batch 32: C -> K
// channels at H x H (the bottleneck's reduce and expand layers). Args: C, K,
// H, backward.
void BM_Conv1x1(benchmark::State& state) {
  auto b = MakeBackend(state);
  if (!b) return;
  Conv2dArgs a;
  a.n = 32, a.c = state.range(0), a.k = state.range(1), a.h = a.w = state.range(2);
  a.r = a.s = 1;
  a.oh = a.h, a.ow = a.w;
  const bool backward = state.range(3) != 0;
  Scratch s(*b);
  float* x = s.Buffer(a.n * a.c * a.h * a.w);
  float* w = s.Buffer(a.k * a.c);
  float* y = s.Buffer(a.n * a.k * a.oh * a.ow);
  float* dx = backward ? s.Buffer(a.n * a.c * a.h * a.w) : nullptr;
  float* dw = backward ? s.Buffer(a.k * a.c) : nullptr;
  for (auto _ : state) {
    b->Conv2dForward(a, x, w, nullptr, y);
    if (backward) b->Conv2dBackward(a, x, w, y, dx, dw, nullptr);
    b->Synchronize();
  }
  const double forward = 2.0 * a.n * a.k * a.oh * a.ow * a.c;
  SetFlops(state, backward ? 3 * forward : forward);
}
BENCHMARK(BM_Conv1x1)
    ->Args({256, 64, 56, 0})->Args({64, 256, 56, 0})->Args({1024, 256, 14, 0})
    ->Args({256, 64, 56, 1})->Args({1024, 256, 14, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// Causal self-attention core of GPT-2 small: batch 8, 12 heads, S = seq,
// D = 64: scores = Q K^T / sqrt(D), softmax, out = P V.
void BM_Attention(benchmark::State& state) {
  auto b = MakeBackend(state);
  if (!b) return;
  const std::int64_t batch = 8 * 12, seq = state.range(0), d = 64;
  Scratch s(*b);
  float *q = s.Buffer(batch * seq * d), *k = s.Buffer(batch * seq * d);
  float *v = s.Buffer(batch * seq * d), *out = s.Buffer(batch * seq * d);
  float *scores = s.Buffer(batch * seq * seq), *probs = s.Buffer(batch * seq * seq);
  for (auto _ : state) {
    b->GemmBatched(batch, false, true, seq, seq, d, 0.125f, q, seq * d, k, seq * d, 0.0f,
                   scores, seq * seq);
    b->SoftmaxForward(batch * seq, seq, true, scores, probs);
    b->GemmBatched(batch, false, false, seq, d, seq, 1.0f, probs, seq * seq, v, seq * d, 0.0f,
                   out, seq * d);
    b->Synchronize();
  }
  SetFlops(state, 2.0 * 2.0 * batch * seq * seq * d);
}
BENCHMARK(BM_Attention)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

// cuBLAS GEMM n x n x n per precision, outside the backend (which runs
// fp32 only): the card's matrix throughput, to set against its datasheet
// peak. Precision (range 0): 0 fp32 on the CUDA cores, 1 tf32 tensor cores
// (fp32 storage), 2 fp16 and 3 bf16 storage with fp32 accumulation, the
// mixed-precision training setting. Inputs are zero: the time of a GEMM does
// not depend on its values beyond power throttling, which zeros reduce (the
// H200's bf16 GEMM ran 788 TFLOP/s on random data and 894 on zeros, see
// /work/.library/device/KINDS.md), so these are upper bounds by a few %.
void BM_CublasGemm(benchmark::State& state) {
  std::string why;
  if (CudaBackend::VisibleDevices(&why) == 0) {
    state.SkipWithError(why.c_str());
    return;
  }
  static constexpr const char* kNames[] = {"fp32", "tf32", "fp16", "bf16"};
  const int precision = static_cast<int>(state.range(0));
  const std::int64_t n = state.range(1);
  const cudaDataType_t storage = precision == 2   ? CUDA_R_16F
                                 : precision == 3 ? CUDA_R_16BF
                                                  : CUDA_R_32F;
  const cublasComputeType_t compute =
      precision == 1 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const std::size_t element = storage == CUDA_R_32F ? 4 : 2;
  const auto bytes = static_cast<std::size_t>(n * n) * element;
  void* buffers[3] = {nullptr, nullptr, nullptr};
  for (void*& p : buffers) {
    DTSIM_CUDA_CHECK(cudaMalloc(&p, bytes));
    DTSIM_CUDA_CHECK(cudaMemset(p, 0, bytes));
  }
  cublasHandle_t handle = nullptr;
  DTSIM_CUBLAS_CHECK(cublasCreate(&handle));
  const float alpha = 1.0f, beta = 0.0f;
  const int dim = static_cast<int>(n);
  auto gemm = [&] {
    DTSIM_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &alpha,
                                    buffers[0], storage, dim, buffers[1], storage, dim, &beta,
                                    buffers[2], storage, dim, compute, CUBLAS_GEMM_DEFAULT));
  };
  gemm();  // heuristics and workspace outside the timed loop
  DTSIM_CUDA_CHECK(cudaDeviceSynchronize());
  for (auto _ : state) {
    gemm();
    DTSIM_CUDA_CHECK(cudaDeviceSynchronize());
  }
  SetFlops(state, 2.0 * static_cast<double>(n) * n * n);
  state.SetLabel(kNames[precision]);
  DTSIM_CUBLAS_CHECK(cublasDestroy(handle));
  for (void* p : buffers) DTSIM_CUDA_CHECK(cudaFree(p));
}
BENCHMARK(BM_CublasGemm)
    ->ArgsProduct({{0, 1, 2, 3}, {1024, 4096, 8192}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace dtsim::exec

BENCHMARK_MAIN();
