#include "validation/vtrain.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>

#include "common/error.h"

namespace dtsim::validation {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kBom = "\xEF\xBB\xBF";  // UTF-8 byte-order mark
constexpr const char* kSingleFile = "ground_truth_single.csv";
constexpr const char* kMultiFile = "ground_truth_multi.csv";

// The columns, by header name. kParams is only in the multi-node file.
enum Column {
  kParams, kGpus, kGlobalBatch, kMicroBatch, kHidden, kHeads, kLayers, kSequence,
  kTensor, kData, kPipeline, kTime, kColumns
};
constexpr std::array<const char*, kColumns> kHeaders = {
    "Parameters (billion)", "# GPUs", "global batch", "micro batch", "hidden size",
    "attention heads", "# layers", "sequence length", "tensor parallelism",
    "data parallelism", "pipeline parallelism", "iteration time (ms)"};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (std::size_t start = 0;;) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(Trim(line.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

class RowReader {
 public:
  RowReader(const std::string& filename, int line) : where_{filename, line, 0} {}

  int PositiveInt(std::string_view field, const char* column) const {
    int v = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (ec != std::errc() || end != field.data() + field.size() || v <= 0) {
      throw UserError(where_, "column '" + std::string(column) + "': expected a whole number > 0, got '" +
                                  std::string(field) + "'");
    }
    return v;
  }

  double PositiveNumber(std::string_view field, const char* column) const {
    double v = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (ec != std::errc() || end != field.data() + field.size() || !(v > 0)) {
      throw UserError(where_, "column '" + std::string(column) + "': expected a number > 0, got '" +
                                  std::string(field) + "'");
    }
    return v;
  }

  [[noreturn]] void Fail(const std::string& message, const std::string& hint = "") const {
    throw UserError(where_, message, hint);
  }

 private:
  SourceLocation where_;
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw UserError(SourceLocation{path.string(), 0, 0}, "cannot read the vTrain data file",
                    "give the folder holding " + std::string(kSingleFile) + " and " +
                        kMultiFile + " with --data (default ../shared/validation/vtrain)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

const char* VtrainGroupName(VtrainGroup g) {
  switch (g) {
    case VtrainGroup::kSingleNode: return "single-node";
    case VtrainGroup::kMultiNode: return "multi-node";
  }
  return "?";
}

std::string VtrainRow::Where() const { return file + ":" + std::to_string(line); }

std::vector<VtrainRow> ParseVtrainCsv(const std::string& text, const std::string& filename,
                                      VtrainGroup group) {
  std::string_view rest = text;
  if (rest.starts_with(kBom)) rest.remove_prefix(kBom.size());

  std::vector<VtrainRow> rows;
  std::array<std::optional<std::size_t>, kColumns> index;  // field of each column
  std::size_t header_fields = 0;
  bool have_header = false;
  for (int line = 1; !rest.empty(); ++line) {
    const std::size_t nl = rest.find('\n');
    const std::string_view raw = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (Trim(raw).empty()) continue;
    const std::vector<std::string_view> fields = SplitFields(raw);
    const RowReader reader(filename, line);

    if (!have_header) {
      have_header = true;
      header_fields = fields.size();
      for (std::size_t f = 0; f < fields.size(); ++f) {
        for (std::size_t c = 0; c < kColumns; ++c) {
          if (fields[f] == kHeaders[c]) index[c] = f;
        }
      }
      for (std::size_t c = kGpus; c < kColumns; ++c) {
        if (!index[c]) {
          reader.Fail(std::string("the header has no column '") + kHeaders[c] + "'",
                      "expected vTrain's ground-truth columns: # GPUs, global batch, micro "
                      "batch, hidden size, attention heads, # layers, sequence length, tensor "
                      "parallelism, data parallelism, pipeline parallelism, iteration time (ms)");
        }
      }
      continue;
    }

    if (fields.size() != header_fields) {
      reader.Fail("expected " + std::to_string(header_fields) + " fields as in the header, got " +
                  std::to_string(fields.size()));
    }
    auto field = [&](Column c) { return fields[*index[c]]; };
    auto count = [&](Column c) { return reader.PositiveInt(field(c), kHeaders[c]); };
    VtrainRow r;
    r.group = group;
    r.file = fs::path(filename).filename().string();
    r.line = line;
    if (index[kParams]) r.params_billion = reader.PositiveNumber(field(kParams), kHeaders[kParams]);
    r.gpus = count(kGpus);
    r.global_batch = count(kGlobalBatch);
    r.micro_batch = count(kMicroBatch);
    r.hidden = count(kHidden);
    r.heads = count(kHeads);
    r.layers = count(kLayers);
    r.sequence = count(kSequence);
    r.tensor_parallel = count(kTensor);
    r.data_parallel = count(kData);
    r.pipeline_parallel = count(kPipeline);
    r.measured_ms = reader.PositiveNumber(field(kTime), kHeaders[kTime]);
    if (static_cast<long long>(r.tensor_parallel) * r.data_parallel * r.pipeline_parallel !=
        r.gpus) {
      reader.Fail("tensor x data x pipeline parallelism (" + std::to_string(r.tensor_parallel) +
                  " x " + std::to_string(r.data_parallel) + " x " +
                  std::to_string(r.pipeline_parallel) + ") is not the number of GPUs (" +
                  std::to_string(r.gpus) + ")");
    }
    rows.push_back(std::move(r));
  }
  if (!have_header) {
    throw UserError(SourceLocation{filename, 0, 0}, "the file is empty",
                    "expected a header line and one line per measured run");
  }
  return rows;
}

std::vector<VtrainRow> LoadVtrainData(const std::string& dir, int limit) {
  std::vector<VtrainRow> all;
  for (const auto& [name, group] : {std::pair{kSingleFile, VtrainGroup::kSingleNode},
                                    std::pair{kMultiFile, VtrainGroup::kMultiNode}}) {
    const fs::path path = fs::path(dir) / name;
    std::vector<VtrainRow> rows = ParseVtrainCsv(ReadFile(path), path.string(), group);
    if (limit > 0 && rows.size() > static_cast<std::size_t>(limit)) {
      rows.resize(static_cast<std::size_t>(limit));
    }
    all.insert(all.end(), rows.begin(), rows.end());
  }
  return all;
}

config::Scenario VtrainScenario(const VtrainRow& row, const VtrainSetup& setup) {
  config::Scenario s;
  s.name = "vtrain/" + row.Where();

  config::ClusterConfig& c = s.cluster;
  c.devices_per_node = std::min(row.gpus, setup.devices_per_node);
  c.nodes = (row.gpus + setup.devices_per_node - 1) / setup.devices_per_node;
  c.device = setup.device;
  if (setup.intra_node_link.empty()) {
    const hw::HardwareCatalog catalog = hw::HardwareCatalog::BuiltIn();
    const hw::LinkSpec* nvswitch = catalog.FindLink("nvswitch-a100");
    DTSIM_CHECK(nvswitch != nullptr, "the catalog has nvswitch-a100");
    c.custom_links.push_back({kVtrainNvlink, setup.intra_node_bw_bytes_per_s,
                              nvswitch->latency_s,
                              "vTrain's validation setup: intra-node bandwidth 150 GB/s (NVLink); "
                              "latency of nvswitch-a100"});
    c.intra_node_link = kVtrainNvlink;
  } else {
    c.intra_node_link = setup.intra_node_link;
  }
  c.network.link = setup.network_link;
  c.network.nics_per_node = setup.nics_per_node;
  c.network.protocols = setup.protocols;
  c.network.transport = setup.transport;
  c.network.intra_node_transport = setup.intra_node_transport;

  config::WorkloadConfig& w = s.workload;
  models::TransformerConfig t;
  t.layers = row.layers;
  t.hidden = row.hidden;
  t.heads = row.heads;
  t.sequence = row.sequence;
  t.vocab = setup.vocab;
  w.model.transformer = t;
  w.precision = setup.precision;
  w.iterations = setup.iterations;
  // Each device of a replica sees all of the replica's samples.
  w.batch_per_device = std::max(1, row.global_batch / row.data_parallel);
  if (setup.kernel_launch_s > 0) w.kernel_launch_s = setup.kernel_launch_s;
  w.cost_model = setup.cost_model;
  w.framework = setup.framework;

  config::ParallelismConfig& p = s.parallelism;
  p.strategy = config::Strategy::kHybrid;
  p.hybrid.tensor_parallel = row.tensor_parallel;
  p.hybrid.pipeline_parallel = row.pipeline_parallel;
  p.hybrid.micro_batch_size = row.micro_batch;
  p.hybrid.global_batch = row.global_batch;
  p.hybrid.schedule = setup.schedule;
  p.recompute = setup.recompute;
  p.overlap = setup.overlap;
  p.bucket_bytes = setup.bucket_bytes;

  s.outputs.json = false;
  s.outputs.csv = false;
  s.outputs.trace = false;
  return s;
}

}  // namespace dtsim::validation
