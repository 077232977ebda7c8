// CpuBackend (float): memory methods, agreement with the double-precision
// templates, the "backward adds into gradients" contract, null gradients
// and run-to-run determinism.
#include "exec/kernels/cpu_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "exec/kernels/cpu_kernels.h"
#include "exec/kernels/kernel_test_util.h"

namespace dtsim::exec {
namespace {

using testing::RandomVector;
using Vec = std::vector<double>;

// A backend buffer holding a copy of `host` (rounded to float), freed on
// destruction.
class Buffer {
 public:
  Buffer(Backend& backend, const Vec& host) : backend_(backend), size_(host.size()) {
    p_ = backend.Allocate(static_cast<std::int64_t>(size_));
    const std::vector<float> f = testing::ToFloat(host);
    backend.Upload(p_, f.data(), static_cast<std::int64_t>(size_));
  }
  Buffer(Backend& backend, std::int64_t size)
      : Buffer(backend, Vec(static_cast<std::size_t>(size), 0.0)) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { backend_.Free(p_); }

  float* get() { return p_; }
  std::vector<float> ToHost() const {
    std::vector<float> host(size_);
    backend_.Download(host.data(), p_, static_cast<std::int64_t>(size_));
    return host;
  }

 private:
  Backend& backend_;
  std::size_t size_;
  float* p_;
};

// |got - ref| <= atol + rtol |ref| elementwise (float against double).
void ExpectClose(const char* what, const std::vector<float>& got, const Vec& ref,
                 double atol = 2e-5, double rtol = 2e-5) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::abs(got[i] - ref[i]) > atol + rtol * std::abs(ref[i]) && ++bad <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: float " << got[i] << ", double " << ref[i];
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

TEST(CpuBackend, MemoryMethods) {
  CpuBackend backend;
  EXPECT_EQ(backend.Name(), "cpu");
  for (std::int64_t count : {0, 1, 17, 1000}) {
    float* p = backend.Allocate(count);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u) << count;
    backend.Free(p);
  }
  Buffer a(backend, Vec{1, 2, 3}), b(backend, 3);
  backend.Copy(b.get(), a.get(), 3);
  EXPECT_EQ(b.ToHost(), (std::vector<float>{1, 2, 3}));
  backend.Fill(b.get(), 3, 0.5f);
  backend.Synchronize();
  EXPECT_EQ(b.ToHost(), (std::vector<float>{0.5f, 0.5f, 0.5f}));
}

Conv2dArgs CnnConv() {
  // A CIFAR-10-like conv, small: 2 x 3 x 9 x 9 -> 4 channels, 5x5, pad 2.
  Conv2dArgs a;
  a.n = 2, a.c = 3, a.h = 9, a.w = 9, a.k = 4, a.r = 5, a.s = 5, a.pad_h = 2, a.pad_w = 2;
  a.oh = 9, a.ow = 9;
  return a;
}

TEST(CpuBackend, FloatMatchesDoubleConvAndGemm) {
  CpuBackend backend;
  const Conv2dArgs a = CnnConv();
  const Vec x = RandomVector(a.n * a.c * a.h * a.w, 1), w = RandomVector(a.k * a.c * 25, 2);
  const Vec bias = RandomVector(a.k, 3), dy = RandomVector(a.n * a.k * a.oh * a.ow, 4);
  Vec y(dy.size()), dx(x.size(), 0.0), dw(w.size(), 0.0), db(a.k, 0.0);
  cpu::Conv2dForward(a, x.data(), w.data(), bias.data(), y.data());
  cpu::Conv2dBackward(a, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  Buffer fx(backend, x), fw(backend, w), fb(backend, bias), fdy(backend, dy);
  Buffer fy(backend, y.size()), fdx(backend, x.size()), fdw(backend, w.size()),
      fdb(backend, bias.size());
  backend.Conv2dForward(a, fx.get(), fw.get(), fb.get(), fy.get());
  backend.Conv2dBackward(a, fx.get(), fw.get(), fdy.get(), fdx.get(), fdw.get(), fdb.get());
  ExpectClose("conv y", fy.ToHost(), y);
  ExpectClose("conv dx", fdx.ToHost(), dx);
  ExpectClose("conv dw", fdw.ToHost(), dw, 1e-4);
  ExpectClose("conv dbias", fdb.ToHost(), db, 1e-4);

  // k = 600 > the 256-deep GEMM blocks: several accumulation passes.
  const std::int64_t m = 70, n = 90, k = 600;
  const Vec ga = RandomVector(m * k, 5), gb = RandomVector(n * k, 6);
  Vec gc(m * n);
  cpu::Gemm<double>(false, true, m, n, k, 1.0, ga.data(), gb.data(), 0.0, gc.data());
  Buffer fa(backend, ga), fgb(backend, gb), fc(backend, gc.size());
  backend.Gemm(false, true, m, n, k, 1.0f, fa.get(), fgb.get(), 0.0f, fc.get());
  ExpectClose("gemm", fc.ToHost(), gc, 1e-4);
}

TEST(CpuBackend, FloatMatchesDoubleNormalisationAndLoss) {
  CpuBackend backend;
  const std::int64_t rows = 6, cols = 33;
  const Vec x = RandomVector(rows * cols, 10, -3, 3), dy = RandomVector(rows * cols, 11);
  const Vec gamma = RandomVector(cols, 12, 0.5, 1.5), beta = RandomVector(cols, 13);
  Buffer fx(backend, x), fdy(backend, dy), fg(backend, gamma), fbeta(backend, beta);

  // Layer norm forward and backward.
  Vec y(x.size()), mean(rows), rstd(rows), dx(x.size(), 0.0), dg(cols, 0.0), dbt(cols, 0.0);
  cpu::LayerNormForward(rows, cols, 1e-5, x.data(), gamma.data(), beta.data(), y.data(),
                        mean.data(), rstd.data());
  cpu::LayerNormBackward(rows, cols, x.data(), gamma.data(), mean.data(), rstd.data(),
                         dy.data(), dx.data(), dg.data(), dbt.data());
  Buffer fy(backend, y.size()), fm(backend, rows), fr(backend, rows), fdx(backend, x.size()),
      fdg(backend, cols), fdbt(backend, cols);
  backend.LayerNormForward(rows, cols, 1e-5f, fx.get(), fg.get(), fbeta.get(), fy.get(),
                           fm.get(), fr.get());
  backend.LayerNormBackward(rows, cols, fx.get(), fg.get(), fm.get(), fr.get(), fdy.get(),
                            fdx.get(), fdg.get(), fdbt.get());
  ExpectClose("layernorm y", fy.ToHost(), y);
  ExpectClose("layernorm dx", fdx.ToHost(), dx, 1e-4);
  ExpectClose("layernorm dgamma", fdg.ToHost(), dg, 1e-4);

  // Causal softmax: 6 query rows of 33 keys, row i sees columns 0..i.
  Vec p(x.size());
  cpu::SoftmaxForward(rows, cols, true, x.data(), p.data());
  Buffer fp(backend, p.size());
  backend.SoftmaxForward(rows, cols, true, fx.get(), fp.get());
  ExpectClose("softmax", fp.ToHost(), p);

  // Cross-entropy with 33 classes.
  const Vec labels = {0, 32, 5, 5, 17, 1};
  Vec probs(x.size()), loss(rows), dl(x.size(), 0.0);
  cpu::SoftmaxCrossEntropyForward(rows, cols, x.data(), labels.data(), probs.data(),
                                  loss.data());
  cpu::SoftmaxCrossEntropyBackward(rows, cols, probs.data(), labels.data(), 1.0 / rows,
                                   dl.data());
  Buffer flab(backend, labels), fprobs(backend, probs.size()), floss(backend, rows),
      fdl(backend, x.size());
  backend.SoftmaxCrossEntropyForward(rows, cols, fx.get(), flab.get(), fprobs.get(),
                                     floss.get());
  backend.SoftmaxCrossEntropyBackward(rows, cols, fprobs.get(), flab.get(), 1.0f / rows,
                                      fdl.get());
  ExpectClose("ce loss", floss.ToHost(), loss);
  ExpectClose("ce dlogits", fdl.ToHost(), dl);

  // LRN with the CIFAR-10 defaults, x read as (N 1, C 6, H 1, W 33).
  LrnArgs la;
  la.c = rows, la.w = cols;
  Vec ly(x.size()), ldx(x.size(), 0.0);
  cpu::LrnForward(la, x.data(), ly.data());
  cpu::LrnBackward(la, x.data(), ly.data(), dy.data(), ldx.data());
  Buffer fly(backend, ly.size()), fldx(backend, x.size());
  backend.LrnForward(la, fx.get(), fly.get());
  backend.LrnBackward(la, fx.get(), fly.get(), fdy.get(), fldx.get());
  ExpectClose("lrn y", fly.ToHost(), ly);
  ExpectClose("lrn dx", fldx.ToHost(), ldx);

  // GELU.
  Vec gy(x.size()), gdx(x.size(), 0.0);
  cpu::GeluForward<double>(rows * cols, x.data(), gy.data());
  cpu::GeluBackward<double>(rows * cols, x.data(), dy.data(), gdx.data());
  Buffer fgy(backend, gy.size()), fgdx(backend, x.size());
  backend.GeluForward(rows * cols, fx.get(), fgy.get());
  backend.GeluBackward(rows * cols, fx.get(), fdy.get(), fgdx.get());
  ExpectClose("gelu y", fgy.ToHost(), gy);
  ExpectClose("gelu dx", fgdx.ToHost(), gdx);

  // Adam, three steps.
  Vec pm(cols, 0.0), pv(cols, 0.0), pp = beta;
  Buffer fpm(backend, cols), fpv(backend, cols), fpp(backend, beta);
  for (std::int64_t t = 1; t <= 3; ++t) {
    cpu::AdamStep<double>(cols, 1e-2, 0.9, 0.999, 1e-8, t, gamma.data(), pm.data(), pv.data(),
                          pp.data());
    backend.AdamStep(cols, 1e-2f, 0.9f, 0.999f, 1e-8f, t, fg.get(), fpm.get(), fpv.get(),
                     fpp.get());
  }
  ExpectClose("adam p", fpp.ToHost(), pp);
}

// Runs `backward` once and twice on zeroed gradients of the given sizes and
// checks that the second call added the same amount again: g2 = 2 g1.
void ExpectAccumulates(const char* what, Backend& backend, std::vector<std::int64_t> sizes,
                       const std::function<void(std::vector<float*>&)>& backward) {
  std::vector<std::vector<float>> once;
  for (int calls = 1; calls <= 2; ++calls) {
    std::vector<std::unique_ptr<Buffer>> grads;
    std::vector<float*> ptrs;
    for (std::int64_t size : sizes) {
      grads.push_back(std::make_unique<Buffer>(backend, size));
      ptrs.push_back(grads.back()->get());
    }
    for (int i = 0; i < calls; ++i) backward(ptrs);
    for (std::size_t g = 0; g < grads.size(); ++g) {
      const std::vector<float> host = grads[g]->ToHost();
      if (calls == 1) {
        once.push_back(host);
        continue;
      }
      Vec twice_once(host.size());
      for (std::size_t i = 0; i < host.size(); ++i) twice_once[i] = 2.0 * once[g][i];
      ExpectClose(what, host, twice_once, 1e-6, 1e-5);
    }
  }
}

TEST(CpuBackend, BackwardAddsIntoGradients) {
  CpuBackend backend;
  const Conv2dArgs a = CnnConv();
  Buffer x(backend, RandomVector(a.n * a.c * a.h * a.w, 20)),
      w(backend, RandomVector(a.k * a.c * 25, 21)),
      dy(backend, RandomVector(a.n * a.k * a.oh * a.ow, 22));
  const std::int64_t xs = a.n * a.c * a.h * a.w;
  ExpectAccumulates("conv", backend, {xs, a.k * a.c * 25, a.k}, [&](auto& g) {
    backend.Conv2dBackward(a, x.get(), w.get(), dy.get(), g[0], g[1], g[2]);
  });

  Pool2dArgs pa;
  pa.n = a.n, pa.c = a.c, pa.h = a.h, pa.w = a.w, pa.r = 3, pa.s = 3;
  pa.stride_h = 2, pa.stride_w = 2, pa.pad_h = 1, pa.pad_w = 1, pa.oh = 5, pa.ow = 5;
  Buffer pdy(backend, RandomVector(a.n * a.c * 25, 23));
  ExpectAccumulates("maxpool", backend, {xs}, [&](auto& g) {
    backend.MaxPoolBackward(pa, x.get(), pdy.get(), g[0]);
  });
  ExpectAccumulates("avgpool", backend, {xs},
                    [&](auto& g) { backend.AvgPoolBackward(pa, pdy.get(), g[0]); });

  const std::int64_t rows = 5, cols = 8, count = rows * cols;
  Buffer v(backend, RandomVector(count, 24)), dv(backend, RandomVector(count, 25)),
      gamma(backend, RandomVector(cols, 26)), stats1(backend, rows), stats2(backend, rows),
      out(backend, count);
  ExpectAccumulates("relu", backend, {count},
                    [&](auto& g) { backend.ReluBackward(count, v.get(), dv.get(), g[0]); });
  ExpectAccumulates("gelu", backend, {count},
                    [&](auto& g) { backend.GeluBackward(count, v.get(), dv.get(), g[0]); });
  ExpectAccumulates("tanh", backend, {count},
                    [&](auto& g) { backend.TanhBackward(count, v.get(), dv.get(), g[0]); });
  ExpectAccumulates("dropout", backend, {count},
                    [&](auto& g) { backend.DropoutBackward(count, v.get(), dv.get(), g[0]); });
  backend.SoftmaxForward(rows, cols, false, v.get(), out.get());
  ExpectAccumulates("softmax", backend, {count}, [&](auto& g) {
    backend.SoftmaxBackward(rows, cols, out.get(), dv.get(), g[0]);
  });
  backend.LayerNormForward(rows, cols, 1e-5f, v.get(), gamma.get(), gamma.get(), out.get(),
                           stats1.get(), stats2.get());
  ExpectAccumulates("layernorm", backend, {count, cols, cols}, [&](auto& g) {
    backend.LayerNormBackward(rows, cols, v.get(), gamma.get(), stats1.get(), stats2.get(),
                              dv.get(), g[0], g[1], g[2]);
  });
  // Batch norm as (n = 5, c = 8, spatial = 1): per-channel statistics.
  Buffer cstats1(backend, cols), cstats2(backend, cols);
  backend.BatchNormForward(rows, cols, 1, 1e-5f, v.get(), gamma.get(), gamma.get(), out.get(),
                           cstats1.get(), cstats2.get());
  ExpectAccumulates("batchnorm", backend, {count, cols, cols}, [&](auto& g) {
    backend.BatchNormBackward(rows, cols, 1, v.get(), gamma.get(), cstats1.get(), cstats2.get(),
                              dv.get(), g[0], g[1], g[2]);
  });
  LrnArgs la;
  la.c = cols, la.h = rows;
  backend.LrnForward(la, v.get(), out.get());
  ExpectAccumulates("lrn", backend, {count}, [&](auto& g) {
    backend.LrnBackward(la, v.get(), out.get(), dv.get(), g[0]);
  });
  Buffer labels(backend, Vec{1, 0, 7, 3, 3});
  backend.SoftmaxCrossEntropyForward(rows, cols, v.get(), labels.get(), out.get(),
                                     stats1.get());
  ExpectAccumulates("cross-entropy", backend, {count}, [&](auto& g) {
    backend.SoftmaxCrossEntropyBackward(rows, cols, out.get(), labels.get(), 0.2f, g[0]);
  });
  // The labels double as token ids below 8: an 8-row table of `cols`.
  ExpectAccumulates("embedding", backend, {8 * cols}, [&](auto& g) {
    backend.EmbeddingBackward(rows, cols, labels.get(), dv.get(), g[0]);
  });
  ExpectAccumulates("bias", backend, {cols},
                    [&](auto& g) { backend.BiasGrad(dv.get(), rows, cols, g[0]); });
  ExpectAccumulates("merge heads", backend, {count}, [&](auto& g) {
    backend.MergeHeads(1, 5, 2, 4, dv.get(), g[0], true);
  });
  ExpectAccumulates("copy2d", backend, {count}, [&](auto& g) {
    backend.Copy2D(rows, cols, dv.get(), cols, g[0], cols, true);
  });
}

TEST(CpuBackend, NullGradientsAreSkipped) {
  // Conv without dx and bias: dw must equal the full call's dw.
  CpuBackend backend;
  const Conv2dArgs a = CnnConv();
  Buffer x(backend, RandomVector(a.n * a.c * a.h * a.w, 30)),
      w(backend, RandomVector(a.k * a.c * 25, 31)),
      dy(backend, RandomVector(a.n * a.k * a.oh * a.ow, 32));
  Buffer dx(backend, a.n * a.c * a.h * a.w), dw_full(backend, a.k * a.c * 25),
      dw_only(backend, a.k * a.c * 25), db(backend, a.k);
  backend.Conv2dBackward(a, x.get(), w.get(), dy.get(), dx.get(), dw_full.get(), db.get());
  backend.Conv2dBackward(a, x.get(), w.get(), dy.get(), nullptr, dw_only.get(), nullptr);
  EXPECT_EQ(dw_only.ToHost(), dw_full.ToHost());
}

TEST(CpuBackend, RunsAreBitIdentical) {
  // Same inputs, same bits: a 300 x 200 x 500 GEMM twice.
  CpuBackend backend;
  const std::int64_t m = 300, n = 200, k = 500;
  Buffer a(backend, RandomVector(m * k, 40)), b(backend, RandomVector(k * n, 41));
  Buffer c1(backend, m * n), c2(backend, m * n);
  backend.Gemm(false, false, m, n, k, 1.0f, a.get(), b.get(), 0.0f, c1.get());
  backend.Gemm(false, false, m, n, k, 1.0f, a.get(), b.get(), 0.0f, c2.get());
  EXPECT_EQ(c1.ToHost(), c2.ToHost());
}

}  // namespace
}  // namespace dtsim::exec
