#include "validation/fit_constants.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/error.h"
#include "common/units.h"
#include "common/yaml_reader.h"

namespace dtsim::validation {
namespace {

// The field a name stands for.
double* Field(const std::string& name, config::Scenario* s) {
  config::FrameworkProfile& f = s->workload.framework;
  if (name == "per_op") return &f.per_op_s;
  if (name == "per_kernel") return &f.per_kernel_s;
  if (name == "per_collective") return &f.per_collective_s;
  if (name == "per_step") return &f.per_step_s;
  if (name == "graph_launch") return &f.graph_launch_s;
  if (name == "cycle_time") return &f.cycle_time_s;
  if (name == "input.per_sample") return &s->workload.input.per_sample_s;
  config::NetworkConfig& n = s->cluster.network;
  if (name == "transport.per_message") return &n.transport.per_message_s;
  if (name == "transport.efficiency") return &n.transport.efficiency;
  if (name == "intra_node_transport.per_message") return &n.intra_node_transport.per_message_s;
  if (name == "intra_node_transport.efficiency") return &n.intra_node_transport.efficiency;
  return nullptr;
}

std::string Canonical(std::string name) {
  if (name.starts_with("framework.")) name = name.substr(10);
  if (name.starts_with("network.")) name = name.substr(8);
  return name;
}

bool IsEfficiency(const std::string& name) { return name.ends_with(".efficiency"); }

}  // namespace

const std::vector<std::string>& FittableConstants() {
  static const std::vector<std::string> kNames = {"per_op",     "per_kernel",   "per_collective",
                                                  "per_step",   "graph_launch", "cycle_time",
                                                  "input.per_sample",
                                                  "transport.per_message",
                                                  "transport.efficiency",
                                                  "intra_node_transport.per_message",
                                                  "intra_node_transport.efficiency"};
  return kNames;
}

std::vector<FitConstant> ParseFitConstants(const std::string& names, const config::Scenario& base) {
  std::vector<FitConstant> out;
  std::stringstream in(names);
  config::Scenario copy = base;
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    const std::string name = Canonical(item);
    double* field = Field(name, &copy);
    if (field == nullptr)
      throw UserError("cannot fit '" + item + "'",
                      UnknownNameHint(item, FittableConstants(), "constants"));
    for (const FitConstant& c : out)
      if (c.name == name) throw UserError("constant '" + item + "' named twice");
    if (IsEfficiency(name))
      out.push_back({name, std::clamp(*field, 0.05, 1.0), 0.05, 1.0, false});
    else
      out.push_back({name, *field > 0 ? *field : 1e-6, 1e-9, 1.0});
  }
  if (out.empty()) throw UserError("name at least one constant to fit",
                                   UnknownNameHint("", FittableConstants(), "constants"));
  return out;
}

void ApplyFitConstants(const std::vector<FitConstant>& constants, const std::vector<double>& values,
                       config::Scenario* s) {
  DTSIM_CHECK(constants.size() == values.size(), "one value per constant");
  for (std::size_t i = 0; i < constants.size(); ++i) {
    double* field = Field(constants[i].name, s);
    DTSIM_CHECK(field != nullptr, "fittable constant");
    *field = values[i];
  }
  // A fitted input cost turns a synthetic pipeline into a real one.
  if (s->workload.input.per_sample_s > 0 && s->workload.input.dataset == "synthetic")
    s->workload.input.dataset = "fitted";
}

std::string FormatFitValue(const FitConstant& c, double value) {
  if (c.seconds) return FormatSeconds(value);
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

nlohmann::ordered_json FitConstantJson(const FitConstant& c, double fitted) {
  if (c.seconds) return {{"name", c.name}, {"initial_s", c.initial}, {"fitted_s", fitted}};
  return {{"name", c.name}, {"initial", c.initial}, {"fitted", fitted}};
}

}  // namespace dtsim::validation
