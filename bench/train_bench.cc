// Training throughput of the real-execution path on one core: examples/s
// of a full step (forward, backward, SGD update) of zoo models on the CPU
// backend, with the model's FLOPs (models::Op, what the simulator prices)
// turned into an achieved FLOP/s rate.
//
//   TrainStep/cifar10-cnn/<batch>   the TensorFlow CIFAR-10 tutorial CNN
//   TrainStep/mnist-mlp/<batch>     the 784-500-10 MLP
//   SyntheticDraw/<kind>            one core drawing the synthetic samples
//                                   dtsim exec trains on (per sample)
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "exec/data/synthetic_dataset.h"
#include "exec/kernels/cpu_isa.h"
#include "exec/runtime/model_runtime.h"
#include "exec/runtime/optimizer.h"
#include "models/zoo.h"

namespace dtsim::exec {
namespace {

void TrainStep(benchmark::State& state, const std::string& model) {
  const models::ModelGraph g = models::BuildZooModel(model);
  const std::int64_t batch = state.range(0);
  // range(1): 0 the portable kernels, 1 the AVX2+FMA build, 2 the AVX-512
  // build (cpu_isa.h).
  const CpuIsa isa = state.range(1) == 0   ? CpuIsa::kPortable
                     : state.range(1) == 1 ? CpuIsa::kAvx2Fma
                                           : CpuIsa::kAvx512;
  if (!CpuIsaAvailable(isa)) {
    state.SkipWithError("this build of the kernels is not in the binary or not run by this CPU");
    return;
  }
  const std::unique_ptr<Backend> backend = MakeCpuBackend(isa);
  Backend& cpu = *backend;
  state.SetLabel(CpuIsaName(isa));
  ModelRuntime rt(g, cpu, {.micro_batch = batch, .seed = 1});
  Optimizer opt(cpu, rt.num_params(), {});
  const models::Shape& in = g.op(0).output_shape;
  std::vector<float> x(static_cast<std::size_t>(batch * rt.input_elements()));
  std::vector<float> y(static_cast<std::size_t>(batch));
  if (in.size() == 3) {
    ClassImageDataset data({.channels = in[0], .height = in[1], .width = in[2], .seed = 1});
    data.Fill(0, batch, x.data(), y.data());
  } else {
    TeacherDataset data({.shape = in, .classes = 10, .seed = 1});
    data.Fill(0, batch, x.data(), y.data());
  }
  rt.SetInput(0, x.data());
  rt.SetLabels(0, y.data());
  for (auto _ : state) {
    rt.ZeroGrads();
    rt.ForwardAll(0);
    rt.BackwardAll(0);
    opt.Step(rt.params(), rt.grads());
  }
  const double flops = rt.ForwardFlops() + rt.BackwardFlops();
  state.counters["examples/s"] = benchmark::Counter(
      static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["FLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(TrainStep, cifar10-cnn, std::string("cifar10-cnn"))
    ->ArgsProduct({{32, 128}, {0, 1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(TrainStep, mnist-mlp, std::string("mnist-mlp"))
    ->ArgsProduct({{32, 128}, {0, 1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();

// Drawing synthetic samples, one core: 0 a ResNet-50 image (3 x 224 x 224,
// ClassImageDataset), 1 a CIFAR-10 image (3 x 24 x 24), 2 an MNIST-shaped
// teacher sample (784 Gaussian inputs and the teacher MLP's label).
void SyntheticDraw(benchmark::State& state) {
  std::unique_ptr<Dataset> data;
  if (state.range(0) == 0)
    data = std::make_unique<ClassImageDataset>(
        ClassImageDatasetOptions{.channels = 3, .height = 224, .width = 224, .seed = 1});
  else if (state.range(0) == 1)
    data = std::make_unique<ClassImageDataset>(
        ClassImageDatasetOptions{.channels = 3, .height = 24, .width = 24, .seed = 1});
  else
    data = std::make_unique<TeacherDataset>(
        TeacherDatasetOptions{.shape = {1, 28, 28}, .classes = 10, .seed = 1});
  std::vector<float> x(static_cast<std::size_t>(SampleElements(data->sample_shape())));
  float label = 0;
  std::int64_t index = 0;
  for (auto _ : state) {
    data->Fill(index++, 1, x.data(), &label);
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["samples/s"] =
      benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["values/s"] = benchmark::Counter(static_cast<double>(x.size()),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(SyntheticDraw)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace dtsim::exec

BENCHMARK_MAIN();
