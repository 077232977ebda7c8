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

// Sources of the built-in constants (see docs/scenario.md, "Frameworks"):
//
// [launch]  NVIDIA, CUDA C++ Best Practices Guide, "Kernel launch
//           overhead": a launch costs the host a few microseconds; CUDA
//           Graphs blog (NVIDIA, 2019, "Getting Started with CUDA Graphs"):
//           about 2-3 us of host time per launch on a modern CPU, a graph
//           of many kernels launched for about the cost of one.
// [pytorch] Paszke et al., "PyTorch: An Imperative Style, High-Performance
//           Deep Learning Library", NeurIPS 2019, section 6.1: the host
//           runs ahead of the GPU through the CUDA stream, and the
//           per-operator overhead of the Python/C++ dispatch is on the order
//           of ten microseconds. PyTorch blog, "Accelerating PyTorch with
//           CUDA Graphs" (2021): launch overheads of eager mode removed by
//           capturing the step.
// [horovod] Horovod documentation, "Tensor Fusion": HOROVOD_FUSION_THRESHOLD
//           defaults to 64 MiB; HOROVOD_CYCLE_TIME defaults to 1 ms... the
//           background thread checks for ready tensors once per cycle.
// [megatron] Megatron-LM (NVIDIA/Megatron-LM, megatron/core/fusions and
//           p2p_communication.py): fused scale-mask-softmax, bias-GeLU and
//           bias-dropout-add kernels, fused layer norm, apex's multi-tensor
//           Adam; torch.cuda.synchronize() after every pipeline
//           send/receive ("To protect against race condition when using
//           batch_isend_irecv()").
// [apex]    NVIDIA apex, csrc/multi_tensor_apply.cuh: up to 110 tensors
//           (depth 1) per launch, fewer for Adam's 4 lists (36); we take 36.
// [tf]      Abadi et al., "TensorFlow: A system for large-scale machine
//           learning", OSDI 2016, and the TF performance guide: the graph
//           executor dispatches ops from C++ (no Python per op) with an
//           inter-op thread pool; its per-op cost is a few microseconds.
// [xla]     TensorFlow XLA documentation, "XLA: Optimizing Compiler for
//           Machine Learning": fuses element-wise ops into their producers
//           and launches a compiled cluster as a few kernels.
// [mxnet]   Chen et al., "MXNet: A Flexible and Efficient Machine Learning
//           Library for Heterogeneous Distributed Systems", 2015: a
//           dependency engine in C++ pushes each op asynchronously.
//
// Constants marked "first principles" are estimates from the structure
// above (how many calls the host makes per op), not measurements; `dtsim
// fit` replaces them with values fitted to a user's own runs.

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
  p.source = "built in: PyTorch eager + DDP (Paszke et al. 2019; CUDA launch cost)";
  p.per_op_s = 10 * kUs;        // [pytorch]: "on the order of ten microseconds"
  p.per_kernel_s = 3 * kUs;     // [launch]
  p.per_collective_s = 10 * kUs;  // one op call into ProcessGroupNCCL (first principles: as an op)
  p.per_step_s = 100 * kUs;     // zero_grad, loader handoff, scheduler (first principles: ~10 ops)
  p.optimizer_loop = OptimizerLoop::kPerTensor;
  p.optimizer_kernels_per_tensor = 3;  // SGD momentum: mul_, add_, add_ (torch.optim.sgd)
  p.sync_each_step = true;
  return p;
}

// The same step captured as a CUDA graph (torch.cuda.graphs, or
// torch.compile mode="reduce-overhead"): one launch per step [pytorch].
FrameworkProfile PytorchCudaGraphs() {
  FrameworkProfile p = PytorchEager();
  p.name = "pytorch-cuda-graphs";
  p.source = "built in: PyTorch with CUDA graphs (PyTorch blog 2021; NVIDIA CUDA Graphs 2019)";
  p.cuda_graphs = true;
  p.graph_launch_s = 10 * kUs;  // [launch]: a graph launches for about one kernel's cost
  p.per_step_s = 100 * kUs;
  p.optimizer_loop = OptimizerLoop::kMultiTensor;
  p.optimizer_tensors_per_launch = 36;  // captured with the fused optimizer [apex]
  p.fused = {OpKind::kGelu, OpKind::kDropout, OpKind::kAdd};  // torch.compile's Inductor fuses point-wise ops
  return p;
}

// Megatron-LM [megatron]: PyTorch eager dispatch, fused element-wise
// kernels, apex's multi-tensor Adam, synchronising pipeline transfers.
FrameworkProfile MegatronLm() {
  FrameworkProfile p = PytorchEager();
  p.name = "megatron-lm";
  p.source = "built in: Megatron-LM (fused kernels, apex multi-tensor Adam, synchronous p2p)";
  p.optimizer_loop = OptimizerLoop::kMultiTensor;
  p.optimizer_tensors_per_launch = 36;  // [apex]
  p.per_step_s = 500 * kUs;  // grad-norm, found-inf and loss reductions read back (first principles: ~5 small collectives + syncs)
  p.sync_on_p2p = true;
  // bias-dropout-add: the residual add runs in the dropout's kernel. Its
  // bias-GeLU and scale-mask-softmax are one kernel each, as dtsim's ops
  // already count them (the GEMM takes the bias, the softmax its mask).
  p.fused = {OpKind::kAdd};
  return p;
}

// TensorFlow 1.x graph executor [tf]: no Python per op, C++ executor.
FrameworkProfile Tensorflow1() {
  FrameworkProfile p;
  p.name = "tensorflow-1";
  p.source = "built in: TensorFlow 1.x graph executor (Abadi et al. 2016)";
  p.per_op_s = 5 * kUs;      // [tf]: executor bookkeeping per node (first principles)
  p.per_kernel_s = 3 * kUs;  // [launch]
  p.per_collective_s = 10 * kUs;
  p.per_step_s = 500 * kUs;  // Session.run: feed, fetch, graph pruning cache lookup (first principles)
  p.optimizer_loop = OptimizerLoop::kPerTensor;  // one ApplyGradient op per variable
  p.optimizer_kernels_per_tensor = 1;
  p.sync_each_step = true;  // Session.run returns the fetched loss
  return p;
}

// TensorFlow 2 with XLA [xla]: compiled clusters, element-wise ops fused.
FrameworkProfile TensorflowXla() {
  FrameworkProfile p = Tensorflow1();
  p.name = "tensorflow-xla";
  p.source = "built in: TensorFlow 2 with XLA (tf.function(jit_compile=True))";
  p.per_op_s = 0;  // one compiled cluster per step: no executor per op
  p.per_kernel_s = 3 * kUs;
  p.per_step_s = 200 * kUs;
  p.optimizer_loop = OptimizerLoop::kMultiTensor;
  p.optimizer_tensors_per_launch = 36;  // fused into the compiled step (first principles)
  p.fused = {OpKind::kRelu, OpKind::kGelu, OpKind::kTanh, OpKind::kDropout, OpKind::kAdd,
             OpKind::kBatchNorm};
  return p;
}

// MXNet [mxnet]: asynchronous C++ dependency engine, Python per op in the
// imperative (Gluon) API.
FrameworkProfile Mxnet() {
  FrameworkProfile p;
  p.name = "mxnet";
  p.source = "built in: MXNet Gluon, hybridized (Chen et al. 2015)";
  p.per_op_s = 5 * kUs;  // engine push per op (first principles, as TF's executor)
  p.per_kernel_s = 3 * kUs;
  p.per_collective_s = 10 * kUs;
  p.per_step_s = 200 * kUs;
  p.optimizer_loop = OptimizerLoop::kMultiTensor;  // multi_sgd_update / multi_mp_sgd_update
  p.optimizer_tensors_per_launch = 36;
  p.sync_each_step = true;
  return p;
}

// Horovod over PyTorch eager [horovod].
FrameworkProfile HorovodPytorch() {
  FrameworkProfile p = PytorchEager();
  p.name = "horovod-pytorch";
  p.source = "built in: Horovod on PyTorch eager (Horovod docs: tensor fusion)";
  p.fusion_buffer_bytes = 128.0 * 1024 * 1024;  // HOROVOD_FUSION_THRESHOLD default since v0.21
  p.cycle_time_s = 1e-3;                         // HOROVOD_CYCLE_TIME default since v0.21
  return p;
}

const std::vector<std::string> kProfileKeys = {
    "base", "per_op", "per_kernel", "per_collective", "per_step", "optimizer_loop",
    "optimizer_kernels_per_tensor", "optimizer_tensors_per_launch", "cuda_graphs",
    "graph_launch", "sync_each_step", "sync_on_p2p", "fused", "fusion_buffer", "cycle_time"};

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
      None(), PytorchEager(), PytorchCudaGraphs(), MegatronLm(), Tensorflow1(), TensorflowXla(),
      Mxnet(), HorovodPytorch()};
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
    // decode a 3 KB record, random 24x24 crop, flip, brightness, contrast,
    // per-image standardisation: a few passes over 1,728 values, about
    // 20 us on one core (first principles: ~10 element-wise passes at
    // ~1 ns per value, plus the queue runner's per-sample op dispatch).
    InputPipeline cifar{.dataset = "cifar10", .per_sample_s = 20e-6, .cores = 1, .prefetch = 2};
    // ImageNet JPEG at 224 (PIL/libjpeg-turbo decode of a ~110 KB JPEG,
    // RandomResizedCrop, flip, to tensor): about 5 ms per image on one core
    // (first principles: libjpeg-turbo decodes ~100 Mpixel/s; a 500x375
    // image plus resize and conversion ~5 ms in torchvision).
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
  if (auto x = m.Get("prefetch")) p.prefetch = static_cast<int>(x->AsInt64(1, 1024));
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
  return o.str();
}

}  // namespace dtsim::config
