// What a training framework adds to the GPU's work, and the input pipeline
// that feeds it: the scenario keys workload.framework and
// workload.input (docs/scenario.md, "Frameworks and input pipelines").
//
// A framework profile prices the host thread of each rank: the CPU time it
// spends to issue every op and kernel (Python, the dispatcher, autograd, the
// launch itself), the optimizer's loop over parameter tensors, a fixed cost
// per step, and where it blocks until the device catches up. It also names
// the element-wise ops it fuses into the kernel before them (one kernel
// launched, the intermediate tensor neither written nor read back) and, for
// Horovod, its tensor-fusion buffer and cycle time. sim/cost/host_costs.h turns a
// profile into per-task host time; sim/engine/engine.h runs the host ahead of the
// device.
//
// The built-in profiles (BuiltInFrameworks) cite where each constant comes
// from; a scenario picks one by name and may override any key, or names a
// profile file (`dtsim fit` writes one).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/yaml_reader.h"
#include "models/op.h"
#include "plan/ps_placement.h"

namespace dtsim::config {

enum class OptimizerLoop {
  kPerTensor,    // a loop over parameter tensors, a few kernels each (torch.optim, foreach=False)
  kMultiTensor,  // batched launches over many tensors (apex multi_tensor_apply, foreach=True)
};
const char* OptimizerLoopName(OptimizerLoop l);  // "per_tensor", "multi_tensor"

struct FrameworkProfile {
  std::string name = "none";  // "none": no host costs at all (the device alone)
  std::string source;         // where the profile came from (built in, a file)
  // Host CPU time to issue one op of a forward or backward pass (framework
  // dispatch, Python, autograd bookkeeping), per op and pass.
  double per_op_s = 0;
  // Host CPU time per kernel launched (the driver's launch call).
  double per_kernel_s = 0;
  // Host CPU time to issue one collective or point-to-point transfer.
  double per_collective_s = 0;
  // Fixed host time per training step (data loader handoff, zero_grad,
  // learning-rate schedule, logging).
  double per_step_s = 0;
  OptimizerLoop optimizer_loop = OptimizerLoop::kMultiTensor;
  // kPerTensor: kernels per parameter tensor (each also pays per_op_s).
  int optimizer_kernels_per_tensor = 1;
  // kMultiTensor: tensors one launch covers.
  int optimizer_tensors_per_launch = 1;
  // The step is captured as a CUDA graph (or compiled into one program):
  // one launch per step replaces per-op and per-kernel dispatch.
  bool cuda_graphs = false;
  double graph_launch_s = 0;  // host time to launch the captured step
  // The host blocks at the end of every step until the device is done (a
  // loss or overflow flag read back).
  bool sync_each_step = true;
  // The host blocks after every pipeline transfer until it completes
  // (Megatron-LM's torch.cuda.synchronize() after its p2p operations).
  bool sync_on_p2p = false;
  // Element-wise op kinds fused into the kernel that produces their input.
  std::set<models::OpKind> fused;
  // Horovod: gradients are fused into buffers of this many bytes (replaces
  // parallelism.bucket_size) and each fused all-reduce waits for the
  // background thread's next cycle (half a cycle on average). 0 = no Horovod.
  double fusion_buffer_bytes = 0;
  double cycle_time_s = 0;
  // Parameter servers: how the framework places variables on them
  // (plan/ps_placement.h), unless parallelism.parameter_server.
  // variable_placement says otherwise. Frameworks without parameter
  // servers keep dtsim's even cut.
  plan::PsPlacementSpec ps_placement;
  // The fused attention kernel `attention: flash` runs under this framework
  // (kDefault: the GPU generation's FlashAttention release).
  models::AttentionKernel attention = models::AttentionKernel::kDefault;
  // The share of the speed the GPU sustains in training (sim/cost/
  // gpu_kernel_model.h, SustainedFraction) that this stack's loop keeps:
  // kernel-model times are divided by both. 1 in every built-in profile;
  // `dtsim fit` fits it to a user's runs, in (0.05, 2].
  double kernel_efficiency = 1.0;
  // Gradients kept in fp32 whatever the parameters' dtype (4 bytes per
  // parameter), unsharded by ZeRO stage 1 (the distributed optimizer):
  // Megatron-LM's main_grad buffers, forced on with bf16
  // (--accumulate-allreduce-grads-in-fp32), whose memory its documentation
  // puts at 6 + 12/d bytes per parameter with the distributed optimizer
  // (Megatron-LM documentation, "Distributed Optimizer": "bf16 param,
  // fp32 grads").
  // Memory only: the gradients' reduction is priced in the parameters'
  // dtype.
  bool fp32_grads = false;

  bool HasHostCosts() const {
    return per_op_s > 0 || per_kernel_s > 0 || per_collective_s > 0 || per_step_s > 0 ||
           graph_launch_s > 0 || sync_on_p2p;
  }
};

// The input pipeline of each node: `cores` CPU cores read, decode and
// augment samples at `per_sample_s` core-seconds each, up to `prefetch`
// batches ahead of the devices. Synthetic data costs nothing.
struct InputPipeline {
  std::string dataset = "synthetic";
  double per_sample_s = 0;  // CPU seconds per sample on one core
  int cores = 1;            // cores per node given to the pipeline
  int prefetch = 2;         // batches prepared ahead; 0: each step loads its own batch
  bool Costs() const { return per_sample_s > 0; }
};

// The built-in profiles, in a fixed order: none, pytorch-eager,
// pytorch-cuda-graphs, megatron-lm, tensorflow-1, tensorflow-xla, mxnet,
// horovod-pytorch, byteps-pytorch.
const std::vector<FrameworkProfile>& BuiltInFrameworks();
// By name (case-insensitive); nullptr when unknown.
const FrameworkProfile* FindFramework(const std::string& name);

// Built-in datasets' per-sample cost (docs/scenario.md): synthetic,
// cifar10, imagenet-224.
const std::vector<InputPipeline>& BuiltInDatasets();

// workload.framework: a built-in name, a profile file (a path ending in
// .yaml or .yml, relative to `base`'s folder), or a mapping {base: NAME or
// FILE, KEY: VALUE...} overriding keys. Throws UserError at the value.
FrameworkProfile ReadFramework(const YamlValue& v, const std::string& base);
// The keys of ReadFramework's mapping form (`base` and each profile field).
const std::vector<std::string>& FrameworkProfileKeys();
// workload.input: a dataset name or {dataset, per_sample, cores, prefetch}.
InputPipeline ReadInputPipeline(const YamlValue& v);

// A profile file's text (the keys of ReadFramework's mapping form, `base`
// included): what `dtsim fit` writes.
std::string FrameworkProfileYaml(const FrameworkProfile& p, const std::string& comment);

}  // namespace dtsim::config
