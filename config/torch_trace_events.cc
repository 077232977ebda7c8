#include "config/torch_trace_events.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_input.h"

namespace dtsim::config::torch_trace {
namespace {

using Json = nlohmann::json;

constexpr double kSecondsPerMicrosecond = 1e-6;  // Chrome traces count in us
constexpr const char* kBackwardPrefix = "autograd::engine::evaluate_function: ";
constexpr const char* kShapesHint =
    "record it with torch.profiler.profile(record_shapes=True) and "
    "prof.export_chrome_trace(FILE), on a PyTorch built with Kineto "
    "(torch.autograd.kineto_available())";

// One complete ("ph": "X") event of the trace.
struct Event {
  std::string name, cat, thread;  // thread: "pid/tid"
  double ts = 0, dur = 0;         // us
  const Json* args = nullptr;     // null when absent
  int parent = -1;  // the innermost event of the same thread containing it
};

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// An op's event: aten and autograd ops, collectives' ops and other cpu_op
// events. Record-function spans (ProfilerStep#N, Optimizer.step#...) are
// not, even where older PyTorch files them, like ops, under "Operator".
bool IsCompute(const Event& e) {
  if (StartsWith(e.name, "aten::") || StartsWith(e.name, "autograd::") ||
      StartsWith(e.name, "c10d::"))
    return true;
  return e.cat == "cpu_op" && !StartsWith(e.name, "ProfilerStep#") &&
         !StartsWith(e.name, "Optimizer.");
}
// Device work: "kernel", "gpu_memcpy", "gpu_memset" (PyTorch 1.9 on) or
// "Kernel", "Memcpy", "Memset" (1.8).
bool IsKernel(const Event& e) {
  static const std::set<std::string> kCats = {"kernel", "gpu_memcpy", "gpu_memset",
                                              "Kernel", "Memcpy",     "Memset"};
  return kCats.count(e.cat) > 0;
}
bool IsCommunication(const std::string& name) {
  return StartsWith(name, "gloo:") || StartsWith(name, "nccl:") || StartsWith(name, "c10d::") ||
         name == "record_param_comms";
}

std::string IdString(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number()) return j.dump();
  return "";
}

const Json* Arg(const Event& e, const char* key) {
  if (e.args == nullptr) return nullptr;
  auto it = e.args->find(key);
  return it == e.args->end() ? nullptr : &*it;
}

std::int64_t IntArg(const Event& e, const char* key, std::int64_t absent) {
  const Json* j = Arg(e, key);
  return j != nullptr && j->is_number_integer() ? j->get<std::int64_t>() : absent;
}

// "External id" (PyTorch 1.9 on; "external id" on 1.8's device events).
std::int64_t ExternalId(const Event& e) {
  const std::int64_t id = IntArg(e, "External id", -1);
  return id >= 0 ? id : IntArg(e, "external id", -1);
}

// "Input Dims": one list per input; tensors' lists of sizes, [] for others.
std::vector<std::vector<std::int64_t>> Dims(const Event& e) {
  std::vector<std::vector<std::int64_t>> out;
  const Json* j = Arg(e, "Input Dims");
  if (j == nullptr || !j->is_array()) return out;
  for (const Json& input : *j) {
    std::vector<std::int64_t> shape;
    if (input.is_array() && std::all_of(input.begin(), input.end(),
                                        [](const Json& d) { return d.is_number_integer(); })) {
      for (const Json& d : input) shape.push_back(d.get<std::int64_t>());
    }
    out.push_back(std::move(shape));
  }
  return out;
}

// Bytes of a collective: "In msg nelems" x "dtype" (record_param_comms),
// else its first input's "Input Dims" x "Input type"; 0 when the trace does
// not say.
double CollectiveBytes(const Event& e) {
  static const std::map<std::string, int> kBytes = {
      {"float", 4}, {"Float", 4},         {"double", 8}, {"Double", 8},
      {"c10::Half", 2}, {"Half", 2},      {"c10::BFloat16", 2}, {"BFloat16", 2},
      {"int", 4},   {"Int", 4},           {"long int", 8}, {"Long", 8}};
  auto size_of = [&](const Json* type) {
    if (type == nullptr || !type->is_string()) return 0;
    auto it = kBytes.find(type->get<std::string>());
    return it == kBytes.end() ? 0 : it->second;
  };
  const std::int64_t nelems = IntArg(e, "In msg nelems", -1);
  if (nelems >= 0) return static_cast<double>(nelems) * size_of(Arg(e, "dtype"));
  const auto dims = Dims(e);
  const Json* types = Arg(e, "Input type");
  if (dims.empty() || dims[0].empty() || types == nullptr || !types->is_array() || types->empty())
    return 0;
  double n = 1;
  for (std::int64_t d : dims[0]) n *= static_cast<double>(d);
  return n * size_of(&(*types)[0]);
}

std::vector<Event> ReadEvents(const Json& events) {
  std::vector<Event> out;
  for (const Json& j : events) {
    if (!j.is_object() || j.value("ph", "") != "X") continue;
    auto name = j.find("name"), ts = j.find("ts"), dur = j.find("dur");
    if (name == j.end() || !name->is_string() || ts == j.end() || !ts->is_number() ||
        dur == j.end() || !dur->is_number())
      continue;
    Event e;
    e.name = name->get<std::string>();
    e.cat = j.value("cat", "");
    e.thread = IdString(j.value("pid", Json())) + "/" + IdString(j.value("tid", Json()));
    e.ts = ts->get<double>();
    e.dur = std::max(0.0, dur->get<double>());
    auto args = j.find("args");
    if (args != j.end() && args->is_object()) e.args = &*args;
    out.push_back(std::move(e));
  }
  return out;
}

// Sets each event's parent: the innermost event of its thread whose span
// holds its start (events of one thread nest, as a call stack).
void Nest(std::vector<Event>* events) {
  std::vector<int> order(events->size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  const auto& ev = *events;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (ev[a].thread != ev[b].thread) return ev[a].thread < ev[b].thread;
    if (ev[a].ts != ev[b].ts) return ev[a].ts < ev[b].ts;
    return ev[a].dur > ev[b].dur;  // the enclosing one first
  });
  std::vector<int> stack;
  for (int i : order) {
    Event& e = (*events)[i];
    while (!stack.empty() && (ev[stack.back()].thread != e.thread ||
                              e.ts >= ev[stack.back()].ts + ev[stack.back()].dur))
      stack.pop_back();
    if (!IsKernel(e)) {
      e.parent = stack.empty() ? -1 : stack.back();
      stack.push_back(i);
    }
  }
}

// The outermost compute event enclosing `i` (itself when it is outermost);
// -1 when `i` is in none.
int TopCompute(const std::vector<Event>& ev, int i) {
  int top = -1;
  for (int k = i; k >= 0; k = ev[k].parent) {
    if (IsCompute(ev[k])) top = k;
  }
  return top;
}

// The outermost collective enclosing `i` (itself when it is one and none
// encloses it); -1 when `i` is in none.
int OutermostCommunication(const std::vector<Event>& ev, int i) {
  int top = -1;
  for (int k = i; k >= 0; k = ev[k].parent) {
    if (IsCommunication(ev[k].name)) top = k;
  }
  return top;
}

bool Inside(const std::vector<Event>& ev, int i, const char* prefix) {
  for (int k = ev[i].parent; k >= 0; k = ev[k].parent) {
    if (StartsWith(ev[k].name, prefix)) return true;
  }
  return false;
}

void Refuse(const std::string& filename, const std::string& what, const std::string& hint) {
  throw UserError(SourceLocation{filename}, what, hint);
}

Json ParseTop(const std::string& json_text, const std::string& filename) {
  Json top;
  try {
    top = ParseJsonInput(json_text, filename, "not a torch.profiler trace");
  } catch (const UserError& e) {
    throw UserError(e.where(), e.message(), kShapesHint);
  }
  if (top.is_array() && !top.empty() && top[0].is_object() && top[0].contains("ph")) {
    Refuse(filename,
           "a Chrome trace without Kineto's \"traceEvents\": the export of a PyTorch profiler "
           "without Kineto, which writes no input shapes",
           kShapesHint);
  }
  if (!top.is_object() || !top.contains("traceEvents") || !top["traceEvents"].is_array()) {
    Refuse(filename, "not a torch.profiler trace: no \"traceEvents\" array", kShapesHint);
  }
  return top;
}

// The profiled steps: ProfilerStep#N spans in time order, else the whole
// trace as one.
class StepWindows {
 public:
  StepWindows(const std::vector<Event>& ev, Trace* trace) {
    std::vector<const Event*> spans;
    for (const Event& e : ev) {
      if (StartsWith(e.name, "ProfilerStep#")) spans.push_back(&e);
    }
    std::stable_sort(spans.begin(), spans.end(),
                     [](const Event* a, const Event* b) { return a->ts < b->ts; });
    for (const Event* s : spans) Add(s->name, s->ts, s->ts + s->dur, trace);
    if (spans.empty()) {
      double lo = 1e300, hi = -1e300;
      for (const Event& e : ev) {
        if (IsKernel(e)) continue;
        lo = std::min(lo, e.ts);
        hi = std::max(hi, e.ts + e.dur);
      }
      Add("whole trace", lo, hi, trace);
    }
  }
  // The step whose span holds `ts` (us), -1 when none does.
  int Of(double ts) const {
    for (std::size_t s = 0; s < spans_.size(); ++s) {
      if (ts >= spans_[s].first && ts < spans_[s].second) return static_cast<int>(s);
    }
    return -1;
  }

 private:
  void Add(const std::string& name, double lo, double hi, Trace* trace) {
    Step s;
    s.name = name;
    s.seconds = (hi - lo) * kSecondsPerMicrosecond;
    trace->steps.push_back(std::move(s));
    spans_.push_back({lo, hi});
  }
  std::vector<std::pair<double, double>> spans_;  // us
};

// GPU kernels summed per launching event, us: per top-level compute op, and
// per outermost collective (a collective's kernels are its own time).
struct KernelTimes {
  bool any = false;
  std::vector<double> op_us, comm_us;
  std::vector<bool> comm_has;
};

KernelTimes LinkKernels(const std::vector<Event>& ev) {
  const int n = static_cast<int>(ev.size());
  KernelTimes k{false, std::vector<double>(n, 0), std::vector<double>(n, 0),
                std::vector<bool>(n, false)};
  // A kernel names its launching op by "External id", or the runtime call
  // that launched it (cudaLaunchKernel, nested in the op) by "correlation".
  std::map<std::int64_t, int> by_external_id, by_correlation;
  for (int i = 0; i < n; ++i) {
    if (IsCompute(ev[i]) && !IsKernel(ev[i])) {
      const std::int64_t id = ExternalId(ev[i]);
      if (id >= 0) by_external_id.emplace(id, i);
    }
    if (ev[i].cat == "cuda_runtime" || ev[i].cat == "cuda_driver") {
      by_correlation.emplace(IntArg(ev[i], "correlation", -1), i);
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!IsKernel(ev[i])) continue;
    k.any = true;
    int launch = -1;
    if (auto it = by_external_id.find(ExternalId(ev[i]));
        it != by_external_id.end()) {
      launch = it->second;
    } else if (auto rt = by_correlation.find(IntArg(ev[i], "correlation", -1));
               rt != by_correlation.end()) {
      launch = rt->second;
    }
    if (launch < 0) continue;
    if (const int comm = OutermostCommunication(ev, launch); comm >= 0) {
      k.comm_us[comm] += ev[i].dur;
      k.comm_has[comm] = true;
    } else if (const int op = TopCompute(ev, launch); op >= 0) {
      k.op_us[op] += ev[i].dur;
    }
  }
  return k;
}

// "sgd" from "Optimizer.step#SGD.step".
std::string OptimizerName(const std::string& span) {
  const auto hash = span.find('#'), dot = span.find('.', hash);
  std::string name = span.substr(hash + 1, dot == std::string::npos ? dot : dot - hash - 1);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

}  // namespace

Trace ReadTrace(const std::string& json_text, const std::string& filename) {
  const Json top = ParseTop(json_text, filename);
  std::vector<Event> ev = ReadEvents(top["traceEvents"]);
  const bool any_aten = std::any_of(ev.begin(), ev.end(),
                                    [](const Event& e) { return StartsWith(e.name, "aten::"); });
  if (!any_aten) {
    Refuse(filename, "not a torch.profiler trace of PyTorch ops: no aten:: events", kShapesHint);
  }
  const bool shapes = std::any_of(ev.begin(), ev.end(), [](const Event& e) {
    return StartsWith(e.name, "aten::") && Arg(e, "Input Dims") != nullptr;
  });
  if (!shapes) {
    Refuse(filename, "the trace has no input shapes (no \"Input Dims\" on its aten ops)",
           kShapesHint);
  }
  Nest(&ev);
  const int n = static_cast<int>(ev.size());

  Trace trace;
  const StepWindows steps(ev, &trace);
  const KernelTimes kernels = LinkKernels(ev);
  trace.gpu_kernels = kernels.any;
  if (kernels.any) {
    const Json props = top.value("deviceProperties", Json::array());
    trace.device = props.is_array() && !props.empty() && props[0].is_object()
                       ? props[0].value("name", "gpu")
                       : "gpu";
  }
  // Collectives, and the CPU time they take inside compute ops.
  std::vector<double> comm_inside(n, 0);
  for (int i = 0; i < n; ++i) {
    if (OutermostCommunication(ev, i) != i) continue;
    const int s = steps.Of(ev[i].ts);
    if (s < 0) continue;
    const double us = kernels.comm_has[i] ? kernels.comm_us[i] : ev[i].dur;
    trace.steps[s].communication.push_back(
        {ev[i].name, CollectiveBytes(ev[i]), us * kSecondsPerMicrosecond});
    const int host = TopCompute(ev, ev[i].parent);
    if (host >= 0) comm_inside[host] += ev[i].dur;
  }

  // Optimizer spans, and the top-level compute ops outside them.
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    if (IsKernel(ev[i])) continue;
    const std::string& name = ev[i].name;
    const int s = steps.Of(ev[i].ts);
    if (s < 0) continue;
    if (StartsWith(name, "Optimizer.step#")) {
      trace.steps[s].optimizer_s += ev[i].dur * kSecondsPerMicrosecond;
      trace.optimizer = OptimizerName(name);
    } else if (StartsWith(name, "Optimizer.zero_grad")) {
      trace.steps[s].zero_grad_s += ev[i].dur * kSecondsPerMicrosecond;
    } else if (IsCompute(ev[i]) && TopCompute(ev, i) == i && !IsCommunication(name) &&
               !Inside(ev, i, "Optimizer.")) {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ev[a].ts < ev[b].ts; });
  // Forward: the ops before the step's first backward node.
  std::vector<double> first_backward(trace.steps.size(), 1e300);
  for (int i : order) {
    if (StartsWith(ev[i].name, kBackwardPrefix)) {
      double& f = first_backward[steps.Of(ev[i].ts)];
      f = std::min(f, ev[i].ts);
    }
  }
  for (int i : order) {
    const int s = steps.Of(ev[i].ts);
    const double us = kernels.any ? kernels.op_us[i] : ev[i].dur - comm_inside[i];
    const double seconds = std::max(0.0, us) * kSecondsPerMicrosecond;
    if (StartsWith(ev[i].name, kBackwardPrefix)) {
      trace.steps[s].backward.push_back({ev[i].name.substr(std::string(kBackwardPrefix).size()),
                                         IntArg(ev[i], "Sequence number", -1), seconds});
    } else {
      ForwardOp op{ev[i].name, Dims(ev[i]), IntArg(ev[i], "Sequence number", -1), seconds};
      (ev[i].ts < first_backward[s] ? trace.steps[s].forward : trace.steps[s].other)
          .push_back(std::move(op));
    }
  }
  return trace;
}

}  // namespace dtsim::config::torch_trace
