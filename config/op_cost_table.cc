#include "config/op_cost_table.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/input_file.h"
#include "common/json_input.h"

namespace dtsim::config {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr const char* kFormat = "dtsim-op-costs";

void Attr(std::string* s, const char* key, const std::string& value) {
  *s += ' ';
  *s += key;
  *s += '=';
  *s += value;
}
std::string Pair(int a, int b) { return std::to_string(a) + "x" + std::to_string(b); }

// Where in the file a value sits, for errors: "ops[3].forward.median_s".
class Place {
 public:
  Place(std::string file, std::string path) : file_(std::move(file)), path_(std::move(path)) {}
  Place Key(const std::string& k) const { return {file_, path_.empty() ? k : path_ + "." + k}; }
  Place Index(std::size_t i) const { return {file_, path_ + "[" + std::to_string(i) + "]"}; }
  [[noreturn]] void Fail(const std::string& what) const {
    throw UserError(SourceLocation{file_},
                    "op-cost table: " + (path_.empty() ? std::string() : path_ + ": ") + what,
                    "write tables with `dtsim profile` (docs/measured_costs.md)");
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::string path_;
};

// An object's members, each read once; unknown keys are errors.
class Object {
 public:
  Object(const Json& j, Place place, std::set<std::string> known)
      : j_(j), place_(std::move(place)) {
    if (!j.is_object()) place_.Fail("expected an object");
    for (const auto& [k, v] : j.items()) {
      if (!known.count(k)) place_.Key(k).Fail("unknown key");
    }
  }
  const Json* Get(const std::string& k) const {
    auto it = j_.find(k);
    return it == j_.end() ? nullptr : &*it;
  }
  const Json& Require(const std::string& k) const {
    const Json* v = Get(k);
    if (v == nullptr) place_.Fail("missing key '" + k + "'");
    return *v;
  }
  std::string String(const std::string& k, bool required = true) const {
    const Json* v = required ? &Require(k) : Get(k);
    if (v == nullptr) return "";
    if (!v->is_string()) place_.Key(k).Fail("expected a string");
    return v->get<std::string>();
  }
  double Number(const std::string& k, bool required = true) const {
    const Json* v = required ? &Require(k) : Get(k);
    if (v == nullptr) return 0;
    if (!v->is_number()) place_.Key(k).Fail("expected a number");
    const double x = v->get<double>();
    if (!std::isfinite(x)) place_.Key(k).Fail("expected a finite number");
    return x;
  }
  std::int64_t Integer(const std::string& k, std::int64_t min, bool required = true,
                       std::int64_t fallback = 0) const {
    const Json* v = required ? &Require(k) : Get(k);
    if (v == nullptr) return fallback;
    if (!v->is_number_integer()) place_.Key(k).Fail("expected an integer");
    const std::int64_t x = v->get<std::int64_t>();
    if (x < min) place_.Key(k).Fail("expected an integer >= " + std::to_string(min));
    return x;
  }
  bool Bool(const std::string& k, bool fallback) const {
    const Json* v = Get(k);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) place_.Key(k).Fail("expected true or false");
    return v->get<bool>();
  }
  const Place& place() const { return place_; }

 private:
  const Json& j_;
  Place place_;
};

std::string TimingProblem(const OpTiming& t) {
  if (!(t.min_s > 0 && std::isfinite(t.max_s))) return "times must be finite and > 0";
  if (!(t.min_s <= t.median_s && t.median_s <= t.max_s))
    return "times must satisfy min_s <= median_s <= max_s";
  if (t.runs < 1) return "runs must be >= 1";
  if (t.mean_s != 0 && !(t.min_s <= t.mean_s && t.mean_s <= t.max_s))
    return "times must satisfy min_s <= mean_s <= max_s";
  return "";
}

Json TimingJson(const OpTiming& t) {
  Json j{{"median_s", t.median_s}};
  if (t.mean_s > 0) j["mean_s"] = t.mean_s;
  j["min_s"] = t.min_s;
  j["max_s"] = t.max_s;
  j["runs"] = t.runs;
  return j;
}

OpTiming ReadTiming(const Json& j, const Place& place) {
  const Object o(j, place, {"median_s", "mean_s", "min_s", "max_s", "runs"});
  OpTiming t;
  t.median_s = o.Number("median_s");
  t.mean_s = o.Number("mean_s", false);
  t.min_s = o.Number("min_s");
  t.max_s = o.Number("max_s");
  t.runs = static_cast<int>(o.Integer("runs", 1));
  if (const std::string p = TimingProblem(t); !p.empty()) place.Fail(p);
  return t;
}

models::OpKind ReadKind(const std::string& name, const Place& place) {
  for (models::OpKind k : models::AllOpKinds())
    if (name == models::OpKindName(k)) return k;
  place.Fail("unknown op kind '" + name + "'");
}

double NonNegative(const Object& o, const std::string& k) {
  const double x = o.Number(k, false);
  if (x < 0) o.place().Key(k).Fail("expected a number >= 0");
  return x;
}

}  // namespace

std::string OpSignature(const models::Op& op) {
  std::string s = models::OpKindName(op.kind);
  std::string in;
  for (std::size_t i = 0; i < op.input_shapes.size(); ++i) {
    if (i) in += ',';
    in += models::ShapeToString(op.input_shapes[i]);
  }
  Attr(&s, "in", in.empty() ? "-" : in);
  Attr(&s, "out", models::ShapeToString(op.output_shape));
  Attr(&s, "params", std::to_string(op.params));
  if (op.dtype != models::DType::kFp32) Attr(&s, "dtype", models::DTypeName(op.dtype));
  const models::OpAttrs& a = op.attrs;
  switch (op.kind) {
    case models::OpKind::kConv2d:
    case models::OpKind::kMaxPool:
    case models::OpKind::kAvgPool:
      Attr(&s, "k", Pair(a.kernel_h, a.kernel_w));
      Attr(&s, "s", Pair(a.stride_h, a.stride_w));
      Attr(&s, "p", Pair(a.pad_h, a.pad_w));
      if (op.kind == models::OpKind::kConv2d) Attr(&s, "g", std::to_string(a.groups));
      if (a.ceil_mode) Attr(&s, "ceil", "1");
      break;
    case models::OpKind::kMatMul:
      if (a.transpose_b) Attr(&s, "bT", "1");
      break;
    case models::OpKind::kSoftmax:
    case models::OpKind::kAttention:
      if (a.causal) Attr(&s, "causal", "1");
      break;
    case models::OpKind::kLocalResponseNorm: Attr(&s, "r", std::to_string(a.lrn_radius)); break;
    case models::OpKind::kReshape: Attr(&s, "view", std::to_string(static_cast<int>(a.view))); break;
    case models::OpKind::kEmbedding:
      Attr(&s, "ids", std::to_string(static_cast<int>(a.ids)));
      break;
    case models::OpKind::kRecurrent: Attr(&s, "cell", models::RnnCellName(a.cell)); break;
    default: break;
  }
  if (a.bias) Attr(&s, "bias", "1");
  if (a.tied_to >= 0) Attr(&s, "tied", "1");
  if (a.tensor_split > 1)
    Attr(&s, "tp", std::to_string(a.tensor_split) + (a.tensor_split_input ? "r" : "c"));
  if (a.experts > 0)
    Attr(&s, "experts", std::to_string(a.experts / a.expert_split) + "/" + std::to_string(a.experts));
  return s;
}

OpTiming TimingOf(std::vector<double> seconds) {
  DTSIM_CHECK(!seconds.empty(), "no timings");
  std::sort(seconds.begin(), seconds.end());
  DTSIM_CHECK(seconds.front() > 0, "timings must be > 0");
  OpTiming t;
  const std::size_t n = seconds.size();
  t.median_s = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  t.min_s = seconds.front();
  t.max_s = seconds.back();
  t.runs = static_cast<int>(n);
  double sum = 0;
  for (double x : seconds) sum += x;
  // Rounding may put the mean of equal values a hair outside them.
  t.mean_s = std::clamp(sum / static_cast<double>(n), t.min_s, t.max_s);
  return t;
}

std::string OpCostTableProblem(const OpCostTable& t) {
  if (t.threads < 1) return "threads must be >= 1";
  if (t.concurrent < 1) return "concurrent must be >= 1";
  std::set<std::pair<std::string, std::int64_t>> seen;
  for (std::size_t i = 0; i < t.entries.size(); ++i) {
    const OpCostEntry& e = t.entries[i];
    const std::string at = "ops[" + std::to_string(i) + "]: ";
    if (e.signature.empty()) return at + "no signature";
    if (e.batch < 1) return at + "batch must be >= 1";
    if (e.occurrences < 1) return at + "occurrences must be >= 1";
    if (!e.forward && !e.backward) return at + "neither forward nor backward measured";
    for (const std::optional<OpTiming>* timing : {&e.forward, &e.backward}) {
      if (*timing) {
        if (const std::string p = TimingProblem(**timing); !p.empty()) return at + p;
      }
    }
    for (double w : {e.forward_flops, e.backward_flops, e.forward_bytes, e.backward_bytes}) {
      if (!(w >= 0 && std::isfinite(w))) return at + "work must be finite and >= 0";
    }
    if (!seen.insert({e.signature, e.batch}).second)
      return at + "a second entry for '" + e.signature + "' at batch " + std::to_string(e.batch);
  }
  if (t.optimizer) {
    if (t.optimizer->params < 1) return "optimizer: params must be >= 1";
    if (const std::string p = TimingProblem(t.optimizer->seconds); !p.empty())
      return "optimizer: " + p;
  }
  for (const CommunicationCost& c : t.communication) {
    if (!(c.bytes >= 0 && std::isfinite(c.bytes))) return "communication: bytes must be >= 0";
    if (const std::string p = TimingProblem(c.seconds); !p.empty()) return "communication: " + p;
  }
  return "";
}

std::string OpCostTableJson(const OpCostTable& t) {
  const std::string problem = OpCostTableProblem(t);
  DTSIM_CHECK(problem.empty(), "op-cost table: " + problem);
  Json j;
  j["format"] = kFormat;
  j["version"] = kOpCostTableVersion;
  j["source"] = t.source;
  j["device"] = t.device;
  j["backend"] = t.backend;
  j["threads"] = t.threads;
  j["concurrent"] = t.concurrent;
  j["precision"] = t.precision;
  j["host"] = t.host;
  j["date"] = t.date;
  j["dtsim_version"] = t.dtsim_version;
  j["libraries"] = Json::object();
  for (const auto& [k, v] : t.libraries) j["libraries"][k] = v;
  j["scenario"] = t.scenario;
  Json ops = Json::array();
  for (const OpCostEntry& e : t.entries) {
    Json o;
    o["signature"] = e.signature;
    o["kind"] = models::OpKindName(e.kind);
    o["batch"] = e.batch;
    o["name"] = e.name;
    o["occurrences"] = e.occurrences;
    o["backward_input"] = e.backward_input;
    o["forward_flops"] = e.forward_flops;
    o["backward_flops"] = e.backward_flops;
    o["forward_bytes"] = e.forward_bytes;
    o["backward_bytes"] = e.backward_bytes;
    if (e.forward) o["forward"] = TimingJson(*e.forward);
    if (e.backward) o["backward"] = TimingJson(*e.backward);
    ops.push_back(std::move(o));
  }
  j["ops"] = std::move(ops);
  if (t.optimizer) {
    j["optimizer"] = Json{{"name", t.optimizer->name},
                          {"params", t.optimizer->params},
                          {"seconds", TimingJson(t.optimizer->seconds)}};
  }
  Json comm = Json::array();
  for (const CommunicationCost& c : t.communication)
    comm.push_back(Json{{"name", c.name}, {"bytes", c.bytes}, {"seconds", TimingJson(c.seconds)}});
  j["communication"] = std::move(comm);
  // nlohmann writes doubles with 17 significant digits: exact round trips.
  return j.dump(1) + "\n";
}

OpCostTable ParseOpCostTable(const std::string& json_text, const std::string& filename) {
  Json j;
  try {
    j = ParseJsonInput(json_text, filename, "op-cost table");
  } catch (const UserError& e) {
    throw UserError(e.where(), e.message(),
                    "write tables with `dtsim profile` (docs/measured_costs.md)");
  }
  const Place root(filename, "");
  if (j.is_object() && j.contains("traceEvents")) {
    root.Fail("this is a Chrome trace, not an op-cost table");
  }
  const Object o(j, root,
                 {"format", "version", "source", "device", "backend", "threads", "concurrent", "precision",
                  "host", "date", "dtsim_version", "libraries", "scenario", "ops", "optimizer",
                  "communication"});
  if (o.String("format") != kFormat)
    root.Key("format").Fail(std::string("expected \"") + kFormat + "\"");
  if (o.Integer("version", 1) != kOpCostTableVersion)
    root.Key("version").Fail("this build reads version " + std::to_string(kOpCostTableVersion));
  OpCostTable t;
  t.source = o.String("source", false);
  t.device = o.String("device", false);
  t.backend = o.String("backend", false);
  t.threads = static_cast<int>(o.Integer("threads", 1, false, 1));
  t.concurrent = static_cast<int>(o.Integer("concurrent", 1, false, 1));
  t.precision = o.String("precision");
  t.host = o.String("host", false);
  t.date = o.String("date", false);
  t.dtsim_version = o.String("dtsim_version", false);
  t.scenario = o.String("scenario", false);
  if (const Json* libs = o.Get("libraries")) {
    if (!libs->is_object()) root.Key("libraries").Fail("expected an object");
    for (const auto& [k, v] : libs->items()) {
      if (!v.is_string()) root.Key("libraries").Key(k).Fail("expected a string");
      t.libraries[k] = v.get<std::string>();
    }
  }
  const Json& ops = o.Require("ops");
  if (!ops.is_array()) root.Key("ops").Fail("expected an array");
  std::set<std::pair<std::string, std::int64_t>> seen;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Place at = root.Key("ops").Index(i);
    const Object e(ops[i], at,
                   {"signature", "kind", "batch", "name", "occurrences", "backward_input",
                    "forward_flops", "backward_flops", "forward_bytes", "backward_bytes",
                    "forward", "backward"});
    OpCostEntry x;
    x.signature = e.String("signature");
    if (x.signature.empty()) at.Key("signature").Fail("empty signature");
    x.kind = ReadKind(e.String("kind"), at.Key("kind"));
    x.batch = e.Integer("batch", 1);
    x.name = e.String("name", false);
    x.occurrences = static_cast<int>(e.Integer("occurrences", 1, false, 1));
    x.backward_input = e.Bool("backward_input", true);
    x.forward_flops = NonNegative(e, "forward_flops");
    x.backward_flops = NonNegative(e, "backward_flops");
    x.forward_bytes = NonNegative(e, "forward_bytes");
    x.backward_bytes = NonNegative(e, "backward_bytes");
    if (const Json* f = e.Get("forward")) x.forward = ReadTiming(*f, at.Key("forward"));
    if (const Json* b = e.Get("backward")) x.backward = ReadTiming(*b, at.Key("backward"));
    if (!x.forward && !x.backward) at.Fail("neither forward nor backward measured");
    if (!seen.insert({x.signature, x.batch}).second)
      at.Fail("a second entry for the same signature and batch");
    t.entries.push_back(std::move(x));
  }
  if (const Json* opt = o.Get("optimizer")) {
    const Place at = root.Key("optimizer");
    const Object e(*opt, at, {"name", "params", "seconds"});
    OptimizerCost c;
    c.name = e.String("name", false);
    c.params = e.Integer("params", 1);
    c.seconds = ReadTiming(e.Require("seconds"), at.Key("seconds"));
    t.optimizer = std::move(c);
  }
  if (const Json* comm = o.Get("communication")) {
    if (!comm->is_array()) root.Key("communication").Fail("expected an array");
    for (std::size_t i = 0; i < comm->size(); ++i) {
      const Place at = root.Key("communication").Index(i);
      const Object e((*comm)[i], at, {"name", "bytes", "seconds"});
      CommunicationCost c;
      c.name = e.String("name", false);
      c.bytes = NonNegative(e, "bytes");
      c.seconds = ReadTiming(e.Require("seconds"), at.Key("seconds"));
      t.communication.push_back(std::move(c));
    }
  }
  return t;
}

std::string ReadCostFile(const std::string& path) {
  return ReadRegularFile(path, "op-cost table");
}

OpCostTable LoadOpCostTable(const std::string& path) {
  return ParseOpCostTable(ReadCostFile(path), path);
}

void ScaleOpCostTable(double factor, OpCostTable* t) {
  DTSIM_CHECK(factor > 0 && std::isfinite(factor), "scale factor must be finite and > 0");
  auto scale = [factor](OpTiming& x) {
    x.median_s *= factor;
    x.mean_s *= factor;
    x.min_s *= factor;
    x.max_s *= factor;
  };
  for (OpCostEntry& e : t->entries) {
    if (e.forward) scale(*e.forward);
    if (e.backward) scale(*e.backward);
  }
  if (t->optimizer) scale(t->optimizer->seconds);
  for (CommunicationCost& c : t->communication) scale(c.seconds);
}

bool IsChromeTrace(const std::string& json_text) {
  // Too deep for either reader: the table's parser says so.
  if (ScanJsonDepth(json_text, kMaxJsonDepth).depth > kMaxJsonDepth) return false;
  const Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("traceEvents");
}

bool IsTraceFile(const std::string& path) {
  const std::string text = ReadCostFile(path);
  return path.ends_with(".gz") || IsChromeTrace(text);
}

}  // namespace dtsim::config
