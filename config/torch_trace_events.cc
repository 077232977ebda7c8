#include "config/torch_trace_events.h"

#include <algorithm>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/error.h"

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

bool IsCompute(const Event& e) {
  return e.cat == "cpu_op" || e.cat == "Operator" || StartsWith(e.name, "aten::") ||
         StartsWith(e.name, "autograd::");
}
bool IsKernel(const Event& e) {
  return e.cat == "kernel" || e.cat == "gpu_memcpy" || e.cat == "gpu_memset";
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
  Json top = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (top.is_discarded()) {
    Refuse(filename, "not a torch.profiler trace: the file is not JSON", kShapesHint);
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

}  // namespace

Trace ReadTrace(const std::string& json_text, const std::string& filename) {
  const Json top = ParseTop(json_text, filename);
  std::vector<Event> ev = ReadEvents(top["traceEvents"]);
  const bool any_aten = std::any_of(ev.begin(), ev.end(),
                                    [](const Event& e) { return StartsWith(e.name, "aten::"); });
  if (!any_aten) Refuse(filename, "not a torch.profiler trace of PyTorch ops: no aten:: events",
                        kShapesHint);
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
  // Steps: the ProfilerStep#N spans, else the whole trace.
  auto new_step = [&](const std::string& name, double us) {
    Step s;
    s.name = name;
    s.seconds = us * kSecondsPerMicrosecond;
    trace.steps.push_back(std::move(s));
  };
  std::vector<std::pair<double, double>> window;  // us
  std::vector<const Event*> spans;
  for (const Event& e : ev) {
    if (StartsWith(e.name, "ProfilerStep#")) spans.push_back(&e);
  }
  if (spans.empty()) {
    double lo = ev.empty() ? 0 : ev[0].ts, hi = lo;
    for (const Event& e : ev) {
      if (IsKernel(e)) continue;
      lo = std::min(lo, e.ts);
      hi = std::max(hi, e.ts + e.dur);
    }
    new_step("whole trace", hi - lo);
    window.push_back({lo, hi});
  } else {
    std::stable_sort(spans.begin(), spans.end(),
                     [](const Event* a, const Event* b) { return a->ts < b->ts; });
    for (const Event* s : spans) {
      new_step(s->name, s->dur);
      window.push_back({s->ts, s->ts + s->dur});
    }
  }
  auto step_of = [&](double ts) -> int {
    for (std::size_t s = 0; s < window.size(); ++s) {
      if (ts >= window[s].first && ts < window[s].second) return static_cast<int>(s);
    }
    return -1;
  };

  // Per top-level compute event: communication nested in it, kernels it launched.
  std::vector<double> comm_inside(n, 0), kernel_us(n, 0);
  std::map<std::int64_t, int> by_external_id;
  for (int i = 0; i < n; ++i) {
    if (IsCompute(ev[i]) && !IsKernel(ev[i])) {
      const std::int64_t id = IntArg(ev[i], "External id", -1);
      if (id >= 0) by_external_id.emplace(id, i);
    }
  }
  // A kernel names its launching op by "External id", or the runtime call
  // that launched it (cudaLaunchKernel, nested in the op) by "correlation".
  std::map<std::int64_t, int> launch_by_correlation;
  for (int i = 0; i < n; ++i) {
    if (ev[i].cat == "cuda_runtime" || ev[i].cat == "cuda_driver") {
      launch_by_correlation.emplace(IntArg(ev[i], "correlation", -1), i);
    }
  }
  // On a GPU a collective's time is its kernels' (it runs on its own
  // stream), never its op's: kernels launched under a collective go to it.
  std::vector<double> comm_kernel_us(n, 0);
  std::vector<bool> comm_has_kernels(n, false);
  for (int i = 0; i < n; ++i) {
    if (!IsKernel(ev[i])) continue;
    trace.gpu_kernels = true;
    int launch = -1;
    if (auto it = by_external_id.find(IntArg(ev[i], "External id", -1));
        it != by_external_id.end()) {
      launch = it->second;
    } else if (auto rt = launch_by_correlation.find(IntArg(ev[i], "correlation", -1));
               rt != launch_by_correlation.end()) {
      launch = rt->second;
    }
    if (launch < 0) continue;
    if (const int comm = OutermostCommunication(ev, launch); comm >= 0) {
      comm_kernel_us[comm] += ev[i].dur;
      comm_has_kernels[comm] = true;
    } else if (const int op = TopCompute(ev, launch); op >= 0) {
      kernel_us[op] += ev[i].dur;
    }
  }
  if (trace.gpu_kernels) {
    const Json& props = top.value("deviceProperties", Json::array());
    trace.device = props.is_array() && !props.empty() && props[0].is_object()
                       ? props[0].value("name", "gpu")
                       : "gpu";
  }
  for (int i = 0; i < n; ++i) {
    if (OutermostCommunication(ev, i) != i) continue;
    const int s = step_of(ev[i].ts);
    if (s < 0) continue;
    const double us = comm_has_kernels[i] ? comm_kernel_us[i] : ev[i].dur;
    trace.steps[s].communication.push_back(
        {ev[i].name, CollectiveBytes(ev[i]), us * kSecondsPerMicrosecond});
    const int host = TopCompute(ev, ev[i].parent);
    if (host >= 0) comm_inside[host] += ev[i].dur;
  }

  // Top-level work of each step, in time order.
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    if (IsKernel(ev[i])) continue;
    const std::string& name = ev[i].name;
    const int s = step_of(ev[i].ts);
    if (s < 0) continue;
    if (StartsWith(name, "Optimizer.step#")) {
      trace.steps[s].optimizer_s += ev[i].dur * kSecondsPerMicrosecond;
      const auto hash = name.find('#'), dot = name.find('.', hash);
      std::string opt = name.substr(hash + 1, dot == std::string::npos ? dot : dot - hash - 1);
      std::transform(opt.begin(), opt.end(), opt.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      trace.optimizer = opt;
    } else if (StartsWith(name, "Optimizer.zero_grad")) {
      trace.steps[s].zero_grad_s += ev[i].dur * kSecondsPerMicrosecond;
    } else if (IsCompute(ev[i]) && TopCompute(ev, i) == i && !IsCommunication(name) &&
               !Inside(ev, i, "Optimizer.")) {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ev[a].ts < ev[b].ts; });
  std::vector<double> first_backward(trace.steps.size(), 1e300);
  for (int i : order) {
    if (StartsWith(ev[i].name, kBackwardPrefix)) {
      double& f = first_backward[step_of(ev[i].ts)];
      f = std::min(f, ev[i].ts);
    }
  }
  for (int i : order) {
    const int s = step_of(ev[i].ts);
    const double us = trace.gpu_kernels ? kernel_us[i] : ev[i].dur - comm_inside[i];
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
