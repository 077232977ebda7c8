// The instruction-set builds of the CPU kernels (cpu_isa.h): the AVX2+FMA
// and AVX-512 builds compute what the portable build computes, to float
// rounding (FMA rounds once where the portable build rounds twice, and
// Eigen's wider GEMM kernels accumulate in another order), and give the same
// bits run after run.
#include "exec/kernels/cpu_isa.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace dtsim::exec {
namespace {

using Inputs = std::vector<std::vector<float>>;
// Runs `op` on `backend` with device copies of `inputs`; returns them all
// afterwards (outputs are among the inputs, as zero-filled buffers).
using Op = std::function<void(Backend&, std::vector<float*>&)>;

Inputs RunOn(Backend& b, const Inputs& inputs, const Op& op) {
  std::vector<float*> p;
  for (const auto& v : inputs) {
    p.push_back(b.Allocate(static_cast<std::int64_t>(v.size())));
    b.Upload(p.back(), v.data(), static_cast<std::int64_t>(v.size()));
  }
  op(b, p);
  Inputs out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    out.emplace_back(inputs[i].size());
    b.Download(out.back().data(), p[i], static_cast<std::int64_t>(inputs[i].size()));
    b.Free(p[i]);
  }
  return out;
}

std::vector<float> Random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Second moments for Adam: >= 0.
std::vector<float> Positive(std::size_t n, unsigned seed) {
  std::vector<float> v = Random(n, seed);
  for (float& x : v) x = std::abs(x);
  return v;
}

class CpuIsaTest : public testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!CpuIsaAvailable(GetParam()))
      GTEST_SKIP() << CpuIsaName(GetParam()) << ": not in this binary or not run by this CPU";
    fast_ = MakeCpuBackend(GetParam());
    portable_ = MakeCpuBackend(CpuIsa::kPortable);
  }
  // The build against the portable one: |a - p| <= tol (1 + |p|), the
  // tolerance scaled to the sums' lengths by each case; and the build twice
  // bit-identical.
  void Check(const std::string& what, const Inputs& inputs, const Op& op, double tol) {
    const Inputs a = RunOn(*fast_, inputs, op), p = RunOn(*portable_, inputs, op);
    EXPECT_EQ(RunOn(*fast_, inputs, op), a) << what << ": build not deterministic";
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t j = 0; j < a[i].size(); ++j)
        ASSERT_NEAR(a[i][j], p[i][j], tol * (1 + std::abs(p[i][j])))
            << what << ": buffer " << i << " element " << j;
  }
  std::unique_ptr<Backend> fast_, portable_;
};

TEST(CpuIsa, PortableIsAlwaysThereAndBestIsAvailable) {
  EXPECT_TRUE(CpuIsaAvailable(CpuIsa::kPortable));
  EXPECT_TRUE(CpuIsaAvailable(BestCpuIsa()));
  EXPECT_EQ(MakeCpuBackend(CpuIsa::kPortable)->Name(), "cpu");
  EXPECT_STREQ(CpuIsaName(CpuIsa::kAvx2Fma), "avx2+fma");
}

TEST_P(CpuIsaTest, NamesItsBuild) {
  EXPECT_EQ(fast_->Name(), GetParam() == CpuIsa::kAvx2Fma ? "cpu-avx2" : "cpu-avx512");
}

// The executor hands host-memory buffers to MPI directly and runs their
// collectives on a comm thread (exec/runtime/plan_executor.h); it once
// recognised the CPU backend by the portable build's name alone, so the
// faster builds staged every all-reduce through copies.
TEST_P(CpuIsaTest, EveryBuildHoldsHostMemory) {
  EXPECT_TRUE(fast_->HostMemory());
  EXPECT_TRUE(portable_->HostMemory());
}

// Sums of k products of values in [-1, 1]: float rounding of each partial
// sum grows like sqrt(k) x 2^-24 x |terms|; 1e-5 covers k up to ~1,000.
TEST_P(CpuIsaTest, GemmInEveryLayout) {
  const std::int64_t m = 37, n = 300, k = 259;  // not multiples of any vector width
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      Check("gemm", {Random(m * k, 1), Random(k * n, 2), Random(m * n, 3)},
            [&](Backend& b, auto& p) { b.Gemm(ta, tb, m, n, k, 0.5f, p[0], p[1], 1.0f, p[2]); },
            1e-5);
}

TEST_P(CpuIsaTest, ConvolutionForwardAndBackward) {
  Conv2dArgs a;
  a.n = 3, a.c = 5, a.h = a.w = 11, a.k = 7, a.r = a.s = 3, a.pad_h = a.pad_w = 1;
  a.stride_h = a.stride_w = 2;
  a.oh = a.ow = 6;
  const std::size_t x = 3 * 5 * 11 * 11, w = 7 * 5 * 9, y = 3 * 7 * 36;
  Check("conv forward", {Random(x, 4), Random(w, 5), Random(7, 6), std::vector<float>(y)},
        [&](Backend& b, auto& p) { b.Conv2dForward(a, p[0], p[1], p[2], p[3]); }, 1e-5);
  Check("conv backward",
        {Random(x, 4), Random(w, 5), Random(y, 7), std::vector<float>(x), std::vector<float>(w),
         std::vector<float>(7)},
        [&](Backend& b, auto& p) { b.Conv2dBackward(a, p[0], p[1], p[2], p[3], p[4], p[5]); },
        1e-5);
}

TEST_P(CpuIsaTest, RowReductionsAndTheOptimizer) {
  const std::int64_t rows = 9, cols = 301;
  const std::size_t n = rows * cols;
  Check("softmax", {Random(n, 8), std::vector<float>(n)},
        [&](Backend& b, auto& p) { b.SoftmaxForward(rows, cols, false, p[0], p[1]); }, 1e-6);
  Check("layer norm",
        {Random(n, 9), Random(cols, 10), Random(cols, 11), std::vector<float>(n),
         std::vector<float>(rows), std::vector<float>(rows)},
        [&](Backend& b, auto& p) {
          b.LayerNormForward(rows, cols, 1e-5f, p[0], p[1], p[2], p[3], p[4], p[5]);
        },
        1e-5);
  Check("adam", {Random(n, 12), Random(n, 13), Positive(n, 14), Random(n, 15)},
        [&](Backend& b, auto& p) {
          for (std::int64_t t = 1; t <= 3; ++t)
            b.AdamStep(static_cast<std::int64_t>(n), 1e-3f, 0.9f, 0.999f, 1e-8f, t, p[0], p[1],
                       p[2], p[3]);
        },
        1e-6);
}

INSTANTIATE_TEST_SUITE_P(Builds, CpuIsaTest,
                         testing::Values(CpuIsa::kAvx2Fma, CpuIsa::kAvx512),
                         [](const testing::TestParamInfo<CpuIsa>& param) {
                           return std::string(param.param == CpuIsa::kAvx2Fma ? "Avx2" : "Avx512");
                         });

}  // namespace
}  // namespace dtsim::exec
