#include "config/framework.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "common/error.h"
#include "common/yaml_document.h"

namespace dtsim::config {
namespace {

namespace fs = std::filesystem;
using models::OpKind;

// Sources of the built-in constants (docs/scenario.md, "Frameworks"):
//
// [launch]  Holistic Trace Analysis documentation (facebookresearch/
//           HolisticTraceAnalysis, "CUDA kernel launch statistics"):
//           "Usually, the launch time on the CPU side is between 5-20
//           microseconds." We take the low end, 5 us per kernel.
// [host-op] scripts/torch_host_overhead.py (results/host-costs/
//           torch_host_overhead.json, docs/stated_facts.md): PyTorch eager's
//           host time per op and pass, everything included (nn.Module
//           calls, dispatch, autograd, recomputation under
//           torch.utils.checkpoint), measured on tensors too small to
//           compute: median of 9 runs of 60 steps, 46 us on a GPT layer
//           with Megatron's fusions, 40 us on a plain GPT layer, 28 us on
//           ResNet basic blocks (python3-torch 1.13, one thread, process CPU
//           time, a 2-core AMD EPYC VM). Per op as dtsim's host model
//           counts them (sim/cost/host_costs.h: reshapes are free, fused ops ride
//           with their producer).
// [pytorch] PyTorch, benchmarks/overrides_benchmark/README.md: the overhead
//           of a torch function call on a plain tensor is "on the order of
//           2 us" (Python binding and dispatch, autograd not included).
//           PyTorch blog, "Accelerating PyTorch with CUDA Graphs" (2021): a
//           graph replay "skips all layers of argument setup and kernel
//           dispatch, including Python, C++, and CUDA driver overheads".
//           Optimizers: foreach (multi-tensor) is the default since PyTorch
//           2.0 (pytorch/pytorch PR #95415).
// [multi]   apex csrc/multi_tensor_apply.cuh (PyTorch's foreach kernels use
//           the same limits): depth_to_max_tensors = {110, 64, 48, 36, ...}
//           tensors per launch for 1, 2, 3, 4 ... tensor lists; SGD with
//           momentum reads 3 lists (48), Adam 4 (36).
// [horovod] Horovod v0.21.0 release notes (PR #2468): "Changed default cycle
//           time from 5ms to 1ms and fusion threshold from 64MB to 128MB"
//           (docs/tensor-fusion.rst still says 64 MB).
// [megatron] Megatron-LM: fused scale-mask-softmax and layer-norm CUDA
//           kernels (megatron/fused_kernels), bias_gelu and
//           bias_dropout_add_fused_train (@torch.jit.script), apex's
//           FusedAdam; megatron/p2p_communication.py synchronises the
//           device after every pipeline send/receive "To protect against
//           race condition when using batch_isend_irecv()" (newer
//           megatron/core only with batch_p2p_sync).
// [xla]     TensorFlow XLA documentation: tf.reduce_sum(x + y * z) runs as
//           3 kernels without XLA and 1 with it: element-wise ops fuse into
//           their consumers.
// [tf-ps]   TensorFlow 1.x, python/training/device_setter.py:
//           replica_device_setter's default ps_strategy is
//           _RoundRobinStrategy: "only Variable ops are placed on ps tasks,
//           and the placement strategy is round-robin over all ps tasks".
// [mx-ps]   MXNet, src/kvstore/kvstore_dist.h: bigarray_bound_ =
//           dmlc::GetEnv("MXNET_KVSTORE_BIGARRAY_BOUND", 1000 * 1000); an
//           array of at least that many elements is divided evenly over all
//           servers, a smaller one goes whole to server (key * 9973) mod S.
//           dtsim approximates that by pieces of at most 1e6 fp32 elements
//           = 4,000,000 bytes dealt round-robin (docs/parameter_server.md).
// [te]      Transformer Engine (NVIDIA/TransformerEngine): LayerNormLinear
//           and LayerNormMLP fuse the norm into the GEMM's input, bias-GeLU
//           and bias-dropout-add are fused kernels under Megatron-Core.
// [te-attn] NeMo documentation, memory_optimizations.rst (NVIDIA/NeMo PR
//           #9188): "when both implementations are applicable, Transformer
//           Engine prefers cuDNN flash attention on Hopper+ architectures".
// [bps]     BytePS, byteps/common/global.cc: _partition_bytes = 4096000
//           (BYTEPS_PARTITION_BYTES); the pieces are spread over the servers
//           by a hash of their keys (BYTEPS_KEY_HASH_FN, djb2 by default),
//           which dtsim replaces by round-robin.
// [tf-cifar] TensorFlow's CIFAR-10 tutorial, cifar10_input.py: random 24x24
//           crop, flip, brightness, contrast, per-image whitening,
//           num_preprocess_threads = 16.
//
// No published per-op figure was found for the TensorFlow 1.x executor or
// MXNet's engine; their per-op costs and every per-step cost below are
// first-principles estimates, marked so. `dtsim fit` replaces any of them
// with values fitted to a user's own runs.

constexpr double kUs = 1e-6;

FrameworkProfile None() {
  FrameworkProfile p;
  p.name = "none";
  p.source = "built in: no host, framework or synchronisation costs (the devices alone)";
  p.sync_each_step = false;
  return p;
}

// PyTorch eager with DDP: Python and the dispatcher per op [pytorch], one
// driver launch per kernel [launch], torch.optim's per-tensor loop
// (foreach=False was the default before 2.0), loss.item() every step.
FrameworkProfile PytorchEager() {
  FrameworkProfile p;
  p.name = "pytorch-eager";
  p.source = "built in: PyTorch eager + DDP (per op measured by scripts/torch_host_overhead.py; HTA "
             "launch statistics)";
  // [host-op]: the mean of the plain GPT layer's 40 us and the ResNet
  // blocks' 28 us. [pytorch]'s 2 us per torch call is the binding and the
  // dispatcher alone.
  p.per_op_s = 34 * kUs;
  p.per_kernel_s = 5 * kUs;     // [launch]: 5-20 us, the low end
  p.per_collective_s = 2 * kUs + 5 * kUs;  // a torch call that enqueues one NCCL kernel
  p.per_step_s = 100 * kUs;     // zero_grad, loader handoff, scheduler: ~10 calls (first principles)
  p.optimizer_loop = OptimizerLoop::kMultiTensor;  // [pytorch]: foreach by default
  p.optimizer_tensors_per_launch = 48;             // [multi]: SGD with momentum, 3 lists
  p.sync_each_step = true;      // loss.item() each step
  return p;
}

// The same step captured as a CUDA graph (torch.cuda.graphs, or
// torch.compile mode="reduce-overhead"): one launch per step [pytorch].
FrameworkProfile PytorchCudaGraphs() {
  FrameworkProfile p = PytorchEager();
  p.name = "pytorch-cuda-graphs";
  p.source = "built in: PyTorch with CUDA graphs (PyTorch blog 2021; NVIDIA CUDA Graphs 2019)";
  p.cuda_graphs = true;
  p.graph_launch_s = 5 * kUs;  // [launch]: a graph launches for about one kernel's cost
  p.per_step_s = 100 * kUs;
  p.optimizer_loop = OptimizerLoop::kMultiTensor;
  // torch.compile's Inductor fuses point-wise ops into their producers, as
  // XLA does [xla].
  p.fused = {OpKind::kGelu, OpKind::kDropout, OpKind::kAdd, OpKind::kRelu};
  return p;
}

// Megatron-LM [megatron]: PyTorch eager dispatch, fused element-wise
// kernels, apex's multi-tensor Adam, synchronising pipeline transfers.
FrameworkProfile MegatronLm() {
  FrameworkProfile p = PytorchEager();
  p.name = "megatron-lm";
  p.source = "built in: Megatron-LM (fused kernels, apex multi-tensor Adam, synchronous p2p)";
  p.optimizer_loop = OptimizerLoop::kMultiTensor;
  p.optimizer_tensors_per_launch = 36;  // [multi]: Adam, 4 lists
  p.per_op_s = 46 * kUs;  // [host-op]: a GPT layer with Megatron's fusions, recomputed
  // Gradient norm, found-inf check and loss reduction read back each step
  // (first principles: ~5 small collectives and host syncs of ~100 us).
  p.per_step_s = 500 * kUs;
  p.sync_on_p2p = true;
  // bias-dropout-add: the residual add runs in the dropout's kernel. Its
  // bias-GeLU and scale-mask-softmax are one kernel each, as dtsim's ops
  // already count them (the GEMM takes the bias, the softmax its mask).
  p.fused = {OpKind::kAdd};
  return p;
}

// Megatron-Core with Transformer Engine (NeMo, Megatron-LM since 2024):
// Megatron-LM's host behaviour, with TE's fused kernels: LayerNorm fused into
// the following GEMM's input cast, bias-GeLU and bias-dropout-add in one
// kernel each [te]; attention through TE, which prefers cuDNN's fused
// attention on Hopper [te-attn]. Its kernel efficiency stays 1: what a GPU
// sustains through training is the device's (sim/cost/gpu_kernel_model.h,
// SustainedFraction), and the residual fitted on top of it on the llm-h100
// development set is 1 within its error (docs/validation.md).
FrameworkProfile MegatronCore() {
  FrameworkProfile p = MegatronLm();
  p.name = "megatron-core";
  p.source = "built in: Megatron-Core with Transformer Engine (fused LayerNorm-GEMM, "
             "bias-GeLU, bias-dropout-add; cuDNN fused attention on Hopper)";
  p.fused = {OpKind::kAdd, OpKind::kGelu, OpKind::kDropout};
  p.attention = models::AttentionKernel::kCudnn;
  p.fp32_grads = true;
  return p;
}

// PyTorch-native FSDP stacks (torchtitan-style FSDP2 with torch.compile;
// LLM Foundry-style FSDP1 in eager): PyTorch's host costs, FlashAttention-2
// through SDPA (fsdp2) or the flash-attn package (fsdp1). No FSDP run is in
// the development set to fit a kernel efficiency of their own: 1, the
// device's sustained fraction applies as to every stack.
FrameworkProfile PytorchFsdp2() {
  FrameworkProfile p = PytorchEager();
  p.name = "pytorch-fsdp2";
  p.source = "built in: PyTorch FSDP2 with torch.compile (torchtitan-style): Inductor fuses "
             "element-wise ops, SDPA's FlashAttention-2";
  p.fused = {OpKind::kGelu, OpKind::kDropout, OpKind::kAdd, OpKind::kRelu};  // Inductor [xla]
  p.attention = models::AttentionKernel::kSdpa;
  return p;
}

FrameworkProfile PytorchFsdp1() {
  FrameworkProfile p = PytorchEager();
  p.name = "pytorch-fsdp1";
  p.source = "built in: PyTorch FSDP1 in eager mode (LLM Foundry-style), flash-attn's "
             "FlashAttention-2";
  p.attention = models::AttentionKernel::kFa2;
  return p;
}

// TensorFlow 1.x graph executor: no Python per op, a C++ executor.
FrameworkProfile Tensorflow1() {
  FrameworkProfile p;
  p.name = "tensorflow-1";
  p.source = "built in: TensorFlow 1.x graph executor (first-principles per-op cost)";
  // Executor bookkeeping per node, C++ only (first principles: as the
  // binding and dispatch of one torch call [pytorch], no Python per op).
  p.per_op_s = 2 * kUs;
  p.per_kernel_s = 5 * kUs;  // [launch]
  p.per_collective_s = 7 * kUs;
  p.per_step_s = 500 * kUs;  // Session.run: feed, fetch, graph pruning cache lookup (first principles)
  p.optimizer_loop = OptimizerLoop::kPerTensor;  // one ApplyGradient op per variable
  p.optimizer_kernels_per_tensor = 1;
  p.sync_each_step = true;  // Session.run returns the fetched loss
  p.ps_placement = {plan::PsPlacementPolicy::kRoundRobin, 0};  // [tf-ps]
  return p;
}

// TensorFlow 2 with XLA [xla]: compiled clusters, element-wise ops fused.
FrameworkProfile TensorflowXla() {
  FrameworkProfile p = Tensorflow1();
  p.name = "tensorflow-xla";
  p.source = "built in: TensorFlow 2 with XLA (tf.function(jit_compile=True))";
  p.per_op_s = 0;  // one compiled cluster per step: no executor per op
  p.per_kernel_s = 5 * kUs;  // [launch]
  p.per_step_s = 200 * kUs;  // first principles
  p.optimizer_loop = OptimizerLoop::kMultiTensor;
  p.optimizer_tensors_per_launch = 110;  // fused into the compiled step (first principles)
  p.fused = {OpKind::kRelu, OpKind::kGelu, OpKind::kTanh, OpKind::kDropout, OpKind::kAdd,
             OpKind::kBatchNorm};
  return p;
}

// MXNet: an asynchronous C++ dependency engine, Python per op in the
// imperative (Gluon) API.
FrameworkProfile Mxnet() {
  FrameworkProfile p;
  p.name = "mxnet";
  p.source = "built in: MXNet Gluon, hybridized (first-principles per-op cost)";
  p.per_op_s = 2 * kUs;  // engine push per op (first principles, as TF's executor)
  p.per_kernel_s = 5 * kUs;  // [launch]
  p.per_collective_s = 7 * kUs;
  p.per_step_s = 200 * kUs;  // first principles
  p.optimizer_loop = OptimizerLoop::kMultiTensor;  // multi_sgd_update / multi_mp_sgd_update
  p.optimizer_tensors_per_launch = 48;  // [multi]
  p.sync_each_step = true;
  // [mx-ps]: MXNET_KVSTORE_BIGARRAY_BOUND = 1e6 elements x 4 bytes (fp32).
  p.ps_placement = {plan::PsPlacementPolicy::kPartitioned, 1e6 * 4};
  return p;
}

// Horovod over PyTorch eager [horovod].
FrameworkProfile HorovodPytorch() {
  FrameworkProfile p = PytorchEager();
  p.name = "horovod-pytorch";
  p.source = "built in: Horovod on PyTorch eager (Horovod v0.21 defaults)";
  p.fusion_buffer_bytes = 128.0 * 1024 * 1024;  // HOROVOD_FUSION_THRESHOLD default since v0.21
  p.cycle_time_s = 1e-3;                         // HOROVOD_CYCLE_TIME default since v0.21
  return p;
}

// BytePS over PyTorch eager: PyTorch's host costs, tensors cut into
// 4,096,000-byte pieces spread over the servers [bps].
FrameworkProfile BytePs() {
  FrameworkProfile p = PytorchEager();
  p.name = "byteps-pytorch";
  p.source = "built in: BytePS on PyTorch eager (BYTEPS_PARTITION_BYTES default)";
  p.ps_placement = {plan::PsPlacementPolicy::kPartitioned, 4096000};  // [bps]
  return p;
}

const std::vector<std::string> kProfileKeys = {
    "base", "per_op", "per_kernel", "per_collective", "per_step", "optimizer_loop",
    "optimizer_kernels_per_tensor", "optimizer_tensors_per_launch", "cuda_graphs",
    "graph_launch", "sync_each_step", "sync_on_p2p", "fused", "fusion_buffer", "cycle_time",
    "attention", "kernel_efficiency", "fp32_grads"};

bool LooksLikeFile(const std::string& s) {
  return s.ends_with(".yaml") || s.ends_with(".yml") || s.find('/') != std::string::npos;
}

std::vector<std::string> BuiltInNames() {
  std::vector<std::string> names;
  for (const FrameworkProfile& p : BuiltInFrameworks()) names.push_back(p.name);
  return names;
}

FrameworkProfile ReadProfileMap(const YamlValue& v, const std::string& base, int depth);

FrameworkProfile LoadProfileFile(const YamlValue& at, const std::string& path_text,
                                 const std::string& base, int depth) {
  fs::path file = path_text;
  if (file.is_relative()) file = fs::path(base).parent_path() / file;
  const std::string path = file.lexically_normal().string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    at.Fail("framework profile '" + path + "' not found",
            "a relative path is resolved against the scenario file's folder; `dtsim fit` "
            "writes profiles");
  if (depth > 8) at.Fail("framework profiles name each other more than 8 deep (a cycle?)");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const YAML::Node root = ParseYamlDocument(text.str(), path);
  FrameworkProfile p = ReadProfileMap(YamlValue::Root(root, path), path, depth + 1);
  p.source = "file " + path + " (" + p.source + ")";
  return p;
}

FrameworkProfile ResolveBase(const YamlValue& v, const std::string& base, int depth) {
  const std::string name = v.AsString();
  if (const FrameworkProfile* p = FindFramework(name)) return *p;
  if (LooksLikeFile(name)) return LoadProfileFile(v, name, base, depth);
  v.Fail("unknown framework '" + name + "'",
         UnknownNameHint(name, BuiltInNames(), "frameworks (or a profile file, *.yaml)"));
}

double ReadTime(const YamlValue& v) { return v.AsQuantity(Dimension::kTime, 10.0); }

FrameworkProfile ReadProfileMap(const YamlValue& v, const std::string& base, int depth) {
  const YamlMap m = v.AsMap(kProfileKeys);
  FrameworkProfile p = ResolveBase(m.Require("base", "a built-in framework or a profile file"),
                                   base, depth);
  bool overridden = false;
  auto time_key = [&](const char* key, double* out) {
    if (auto x = m.Get(key)) {
      *out = ReadTime(*x);
      overridden = true;
    }
  };
  time_key("per_op", &p.per_op_s);
  time_key("per_kernel", &p.per_kernel_s);
  time_key("per_collective", &p.per_collective_s);
  time_key("per_step", &p.per_step_s);
  time_key("graph_launch", &p.graph_launch_s);
  time_key("cycle_time", &p.cycle_time_s);
  if (auto x = m.Get("optimizer_loop")) {
    p.optimizer_loop = x->AsChoice({"per_tensor", "multi_tensor"}, "optimizer loop") == 0
                           ? OptimizerLoop::kPerTensor
                           : OptimizerLoop::kMultiTensor;
    overridden = true;
  }
  if (auto x = m.Get("optimizer_kernels_per_tensor")) {
    p.optimizer_kernels_per_tensor = static_cast<int>(x->AsInt64(0, 1000));
    overridden = true;
  }
  if (auto x = m.Get("optimizer_tensors_per_launch")) {
    p.optimizer_tensors_per_launch = static_cast<int>(x->AsInt64(1, 1'000'000));
    overridden = true;
  }
  if (auto x = m.Get("cuda_graphs")) { p.cuda_graphs = x->AsBool(); overridden = true; }
  if (auto x = m.Get("sync_each_step")) { p.sync_each_step = x->AsBool(); overridden = true; }
  if (auto x = m.Get("sync_on_p2p")) { p.sync_on_p2p = x->AsBool(); overridden = true; }
  if (auto x = m.Get("fusion_buffer")) {
    p.fusion_buffer_bytes = x->AsQuantity(Dimension::kBytes);
    overridden = true;
  }
  if (auto x = m.Get("fused")) {
    p.fused.clear();
    std::vector<std::string> kinds;
    for (OpKind k : models::AllOpKinds()) kinds.emplace_back(models::OpKindName(k));
    for (const YamlValue& item : x->AsSequence())
      p.fused.insert(models::AllOpKinds()[item.AsChoice(kinds, "op kind")]);
    overridden = true;
  }
  if (auto x = m.Get("attention")) {
    p.attention = static_cast<models::AttentionKernel>(
        x->AsChoice({"flash", "fa2", "fa3", "cudnn", "sdpa"}, "attention kernel"));
    overridden = true;
  }
  if (auto x = m.Get("kernel_efficiency")) {
    p.kernel_efficiency = x->AsNumber();
    if (!(p.kernel_efficiency >= 0.05 && p.kernel_efficiency <= 2.0))
      x->Fail("kernel_efficiency must be in [0.05, 2]: the stack's share of the speed the GPU "
              "sustains (above 1: faster than the GPU's sustained fraction assumes)");
    overridden = true;
  }
  if (auto x = m.Get("fp32_grads")) {
    p.fp32_grads = x->AsBool();
    overridden = true;
  }
  if (overridden) p.source += ", keys overridden";
  return p;
}

std::string FormatSeconds(double s) {
  std::ostringstream o;
  o << std::setprecision(6) << s * 1e6 << "us";
  return o.str();
}

}  // namespace

const char* OptimizerLoopName(OptimizerLoop l) {
  return l == OptimizerLoop::kPerTensor ? "per_tensor" : "multi_tensor";
}

const std::vector<FrameworkProfile>& BuiltInFrameworks() {
  static const std::vector<FrameworkProfile> kAll = {
      None(), PytorchEager(), PytorchCudaGraphs(), MegatronLm(), MegatronCore(), PytorchFsdp2(),
      PytorchFsdp1(), Tensorflow1(), TensorflowXla(), Mxnet(), HorovodPytorch(), BytePs()};
  return kAll;
}

const FrameworkProfile* FindFramework(const std::string& name) {
  for (const FrameworkProfile& p : BuiltInFrameworks())
    if (EqualsIgnoreCase(p.name, name)) return &p;
  return nullptr;
}

const std::vector<InputPipeline>& BuiltInDatasets() {
  static const std::vector<InputPipeline> kAll = [] {
    InputPipeline synthetic;
    // CIFAR-10 as TensorFlow's tutorial prepares it (cifar10_input.py):
    // random 24x24 crop, flip, brightness, contrast, per-image
    // standardisation, each an op of its own on one image. The arithmetic
    // is a few passes over 1,728 values (~2 us); the ops' dispatch is the
    // cost: 178 us per image with the same ops in PyTorch eager on one
    // core (scripts/input_pipeline_costs.py, median of 5 x 2,000 images;
    // results/host-costs/input_pipeline_costs.json).
    InputPipeline cifar{.dataset = "cifar10", .per_sample_s = 180e-6, .cores = 1, .prefetch = 2};
    // ImageNet JPEG at 224 (PIL/libjpeg-turbo decode of a ~110 KB JPEG,
    // RandomResizedCrop, flip, to tensor): about 5 ms per image on one core
    // (first principles: libjpeg-turbo decodes ~100 Mpixel/s; a 500x375
    // image plus resize and conversion ~5 ms in torchvision). Measured:
    // 4.9 ms (scripts/input_pipeline_costs.py, torchvision 0.14's reference
    // pipeline on a 94 KB 500x375 JPEG, one core of the 2-core EPYC VM).
    InputPipeline imagenet{.dataset = "imagenet-224", .per_sample_s = 5e-3, .cores = 1,
                           .prefetch = 2};
    return std::vector<InputPipeline>{synthetic, cifar, imagenet};
  }();
  return kAll;
}

FrameworkProfile ReadFramework(const YamlValue& v, const std::string& base) {
  if (v.IsScalar()) return ResolveBase(v, base, 0);
  if (!v.IsMap())
    v.Fail("expected a framework name, a profile file or a mapping with 'base', got " +
           v.Describe());
  return ReadProfileMap(v, base, 0);
}

InputPipeline ReadInputPipeline(const YamlValue& v) {
  std::vector<std::string> names;
  for (const InputPipeline& d : BuiltInDatasets()) names.push_back(d.dataset);
  if (v.IsScalar()) return BuiltInDatasets()[v.AsChoice(names, "dataset")];
  const YamlMap m = v.AsMap({"dataset", "per_sample", "cores", "prefetch"});
  InputPipeline p;
  if (auto x = m.Get("dataset")) {
    const std::string name = x->AsString();
    bool known = false;
    for (const InputPipeline& d : BuiltInDatasets())
      if (EqualsIgnoreCase(d.dataset, name)) {
        p = d;
        known = true;
      }
    if (!known) {
      if (!m.Get("per_sample"))
        x->Fail("unknown dataset '" + name + "'",
                UnknownNameHint(name, names, "datasets (or give per_sample for your own)"));
      p.dataset = name;
    }
  }
  if (auto x = m.Get("per_sample")) p.per_sample_s = x->AsQuantity(Dimension::kTime, 10.0);
  if (auto x = m.Get("cores")) p.cores = static_cast<int>(x->AsInt64(1, 4096));
  if (auto x = m.Get("prefetch")) p.prefetch = static_cast<int>(x->AsInt64(0, 1024));
  return p;
}

std::string FrameworkProfileYaml(const FrameworkProfile& p, const std::string& comment) {
  std::ostringstream o;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) o << "# " << line << "\n";
  o << "base: " << p.name << "\n";
  o << "per_op: " << FormatSeconds(p.per_op_s) << "\n";
  o << "per_kernel: " << FormatSeconds(p.per_kernel_s) << "\n";
  o << "per_collective: " << FormatSeconds(p.per_collective_s) << "\n";
  o << "per_step: " << FormatSeconds(p.per_step_s) << "\n";
  o << "graph_launch: " << FormatSeconds(p.graph_launch_s) << "\n";
  o << "kernel_efficiency: " << std::setprecision(6) << p.kernel_efficiency << "\n";
  o << "fp32_grads: " << (p.fp32_grads ? "true" : "false") << "\n";
  return o.str();
}

const std::vector<std::string>& FrameworkProfileKeys() { return kProfileKeys; }

}  // namespace dtsim::config
